"""torch's dispatch-level mode, which :mod:`attention_lab._memory` counts allocations with.

``TorchDispatchMode`` sees every operator call below autograd, so it sees each tensor an operator
creates, also inside a composite operation (SDPA's math path); the public ``TorchFunctionMode``
sees only the calls the Python code makes. It lives in ``torch.utils._python_dispatch``, a private
module. Tested with torch 2.13 (CPU); accepts ``>=2.2,<3``.
"""

from __future__ import annotations

from . import require

ACCEPTS = ("2.2", "3")
VERSION = require("torch", *ACCEPTS)

from torch.utils._python_dispatch import TorchDispatchMode  # noqa: E402  (after the check)

__all__ = ["TorchDispatchMode", "VERSION"]
