"""How a training process keeps freed memory: glibc's malloc tuned once per process.

A training step allocates and frees the same tensors every step. With glibc's defaults, freed
memory at the top of the heap beyond a small trim threshold goes back to the kernel and the next
step faults it in again, page by page, and zeroed; an ensemble's tensors are K times larger and
cross those thresholds where a single model's stay below them. Measured on the 2-core CI machine
(``claim 7``'s attention cell, 8 members): 236k page faults and 19 ms a step with the defaults,
51k and 14-15 ms with the settings below. :func:`keep_freed_memory` sets them: blocks up to
``MMAP_THRESHOLD`` come from the heap, and up to ``TRIM_THRESHOLD`` of free heap is kept for the
next step. The cost is that a process holds up to that much freed memory. It is called by the
training loop, so every process that trains (``train``, sweep workers, a notebook calling
``expressivity.run``) gets it; elsewhere than glibc it does nothing.
"""

from __future__ import annotations

import ctypes
import sys

MMAP_THRESHOLD = 32 * 2**20   # glibc's largest allowed value on 64-bit machines
TRIM_THRESHOLD = 64 * 2**20
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3   # mallopt parameters (malloc.h)
_state: dict = {}


def keep_freed_memory() -> bool:
    """Set glibc's mmap and trim thresholds for this process (once); whether they are set."""
    if "set" not in _state:
        _state["set"] = _mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD) and _mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD)
    return _state["set"]


def _mallopt(param: int, value: int) -> bool:
    if not sys.platform.startswith("linux"):
        return False
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    return mallopt(param, value) == 1   # 1 on success; musl's is a no-op returning 0
