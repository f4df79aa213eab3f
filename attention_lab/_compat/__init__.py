"""Adapters: the only modules that use a dependency's private names.

Each module here wraps one dependency (``ipympl``, ``matplotlib``, ``voila``, ``jupyter_server``,
``jupyter_client``, ``zmq``, ``tornado``, ``torch``), says which versions it was
tested with and checks them when it is imported (:func:`require`). Everywhere else the package
uses public APIs only (``tests/test_compat.py`` reads the package and the benchmarks for private
names of dependencies).

Upgrading a dependency: run its adapter's tests against the new version, then widen the adapter's
``ACCEPTS`` (and ``pyproject.toml``'s range, which the tests hold equal to it).
"""

from __future__ import annotations

import os
import re
from importlib import metadata

#: set to 1 to import an adapter on a version it was not tested with (at your own risk)
ALLOW_UNTESTED = "ATTENTION_LAB_ALLOW_UNTESTED"


class UntestedVersion(ImportError):
    """A dependency's installed version lies outside what its adapter was tested with."""


def version_tuple(version: str) -> tuple[int, ...]:
    """The leading numbers of a version string: ``"2.13.0+cpu"`` -> ``(2, 13, 0)``."""
    numbers = re.match(r"\d+(?:\.\d+)*", version)
    if numbers is None:
        raise ValueError(f"not a version number: {version!r}")
    return tuple(int(n) for n in numbers.group(0).split("."))


def accepts(lower: str, upper: str, version: str) -> bool:
    """Whether ``lower <= version < upper`` (numbers compared left to right, local tags ignored)."""
    return version_tuple(lower) <= version_tuple(version) < version_tuple(upper)


def require(distribution: str, lower: str, upper: str, *, version: str | None = None) -> str | None:
    """The installed version of ``distribution``, checked to lie in ``[lower, upper)``; None when
    it is not installed (importing it then fails where it is used, as without the adapter).

    Raises :class:`UntestedVersion` naming the dependency, its version, the tested range and what
    to do, unless the environment variable ``ATTENTION_LAB_ALLOW_UNTESTED=1`` is set.
    """
    if version is None:
        try:
            version = metadata.version(distribution)
        except metadata.PackageNotFoundError:
            return None
    installed = version
    if accepts(lower, upper, installed) or os.environ.get(ALLOW_UNTESTED) == "1":
        return installed
    raise UntestedVersion(
        f"attention_lab was tested with {distribution} >={lower},<{upper}, and this environment "
        f"has {distribution} {installed}. Install a tested version "
        f"(pip install '{distribution}>={lower},<{upper}', or pip install -r requirements.txt), "
        f"or set {ALLOW_UNTESTED}=1 to try this one anyway.")
