"""Python callbacks that a sampler calls from threads Python did not start.

nutpie runs its chains in its own (Rust) threads and enters Python, through PyO3, for every
evaluation of a density given as a Python function (:func:`bayesfair._nutpie.nutpie_model`).
On a thread that holds no Python thread state, ``PyGILState_Ensure`` creates one and the
matching ``PyGILState_Release`` destroys it, so every one of the tens of thousands of calls
of a fit builds and frees a thread state, the first frame's 16 KB stack chunk included,
which CPython maps and unmaps from the operating system: page faults and system calls that
cost more than the density itself.

:func:`keep_thread_state` takes one more ``PyGILState_Ensure`` the first time a thread calls
the function and never releases it, so the thread keeps one state for all its calls; the
GIL is still released between calls (``PyGILState_Release`` saves the thread state instead
of deleting it while its counter is above zero). A sampler thread's state then outlives the
thread (its frame stack included, about 16 KB per thread, and nutpie starts new threads for
every fit), until the interpreter exits and frees it, as it does the state of any thread
that ended without deleting it. The values a sampler computes are the same: only where the
thread state lives changes.
"""

from __future__ import annotations

import ctypes
import functools
import sys
import threading
from collections.abc import Callable
from typing import TypeVar

__all__ = ["keep_thread_state"]

F = TypeVar("F", bound=Callable)

#: marks the thread states kept (a threading.local's values live in the thread state), so a
#: thread takes the extra PyGILState_Ensure once, whichever wrapped function it calls first
_KEPT = threading.local()


def keep_thread_state(fn: F) -> F:
    """``fn``, keeping the calling thread's Python thread state from its first call on.

    Only on CPython (the C API it calls is CPython's); elsewhere ``fn`` is returned as is.
    A thread state is found again by :class:`threading.local`, whose values live in it: a
    thread whose state was kept finds its mark; a new thread, or one whose state was created
    for this call only, does not, and keeps it.
    """
    if sys.implementation.name != "cpython":
        return fn

    @functools.wraps(fn)
    def kept(*args, **kwargs):
        if not getattr(_KEPT, "kept", False):
            _ensure()  # never released: the state stays with the thread
            _KEPT.kept = True
        return fn(*args, **kwargs)

    return kept  # type: ignore[return-value]


def _ensure() -> None:
    ensure = ctypes.pythonapi.PyGILState_Ensure
    ensure.restype = ctypes.c_int
    ensure()
