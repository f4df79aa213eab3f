"""Peak memory of the tensors a torch computation allocates, measured inside the process.

``with tensor_memory() as mem: fn()`` records every tensor that a torch operator creates inside
the block (through a ``TorchDispatchMode``), keeps a running total of the bytes of storages that
are still alive (a finaliser on each storage subtracts it when it is freed), and reports

* ``peak_bytes``: the largest total of live storages created inside the block (the block's extra
  memory on top of its inputs), and
* ``largest_numel`` / ``largest_bytes``: the largest single storage (a T x S score matrix shows up
  here: that is how "materialised or not" is measured).

It sees what torch operators return, not scratch space inside a fused kernel (e.g. SDPA's
workspace) nor allocator overhead; the benchmark (``benchmarks/bench_streaming.py``) measures the
process's resident memory for that. Deterministic, so it can be printed in a notebook.
"""

from __future__ import annotations

import contextlib
import weakref
from dataclasses import dataclass


@dataclass
class TensorMemory:
    peak_bytes: int = 0
    current_bytes: int = 0
    largest_bytes: int = 0
    largest_numel: int = 0
    allocations: int = 0


@contextlib.contextmanager
def tensor_memory():
    """Context manager yielding a :class:`TensorMemory` that fills in while the block runs."""
    import torch
    from ._compat.torch import TorchDispatchMode

    stats = TensorMemory()
    live: set[int] = set()

    def release(key: int, nbytes: int):
        if key in live:
            live.discard(key)
            stats.current_bytes -= nbytes

    def tensors(obj):
        if isinstance(obj, torch.Tensor):
            yield obj
        elif isinstance(obj, (list, tuple, dict)):
            for o in obj.values() if isinstance(obj, dict) else obj:
                yield from tensors(o)

    class Mode(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            seen = {t.untyped_storage().data_ptr() for t in tensors((args, kwargs))
                    if t.layout == torch.strided}
            out = func(*args, **kwargs)
            for t in tensors(out):
                if t.layout != torch.strided:
                    continue
                st = t.untyped_storage()
                key = st.data_ptr()
                if key in seen or key in live or st.nbytes() == 0:
                    continue  # a view of an input, an in-place result, or already counted
                nbytes = st.nbytes()
                live.add(key)
                stats.allocations += 1
                stats.current_bytes += nbytes
                stats.peak_bytes = max(stats.peak_bytes, stats.current_bytes)
                if nbytes > stats.largest_bytes:
                    stats.largest_bytes = nbytes
                    stats.largest_numel = nbytes // max(1, t.element_size())
                weakref.finalize(st, release, key, nbytes)
            return out

    with Mode():
        yield stats
