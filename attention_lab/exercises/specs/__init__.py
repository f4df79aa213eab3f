"""The checks of the computational exercises, one module per exercise notebook, in exercise order:
:mod:`.level1` ... :mod:`.level4`. Each module's ``SPECS`` maps check ids to their
:class:`.base.Spec`; :data:`SPECS` holds them all."""

from __future__ import annotations

from . import level1, level2, level3, level4

SPECS = {**level1.SPECS, **level2.SPECS, **level3.SPECS, **level4.SPECS}

__all__ = ["SPECS"]
