"""Run small torch computations on one thread.

The lab's interactive computations (the toy model, the small streaming comparison) are made of many
tiny operations. On a shared machine a second OpenMP thread that gets descheduled stalls every
one of them for milliseconds, so one thread is many times faster, and its float results do not
depend on the machine's core count.
"""

from __future__ import annotations

import contextlib


@contextlib.contextmanager
def single_thread():
    """Run torch on one thread inside the block (the previous count is restored after)."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def one_thread(fn):
    """Decorator form of :func:`single_thread` (a ``contextmanager`` is a ``ContextDecorator``)."""
    return single_thread()(fn)
