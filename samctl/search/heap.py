"""Keeping the memory a search frees for its next arrays, rather than handing it back to the system.

A ranked search makes and drops a few dozen arrays of a value per row (8 MiB each for a million rows).
glibc's malloc serves such a block by mmap, or, once one has been freed, from its heap, which it shrinks
again as soon as the free space at its top passes a threshold; either way the pages of each new array
are faulted in and zeroed by the kernel again, a cost paid per array rather than per row.  So freed blocks
are kept for reuse (figures: docs/search-index.md, "Memory between arrays").  The peak is the same: only
the shrinking and growing between arrays stops, and the memory goes back when the process ends.

Elsewhere than on glibc (macOS, musl) this does nothing.
"""

from __future__ import annotations

import os

M_TRIM_THRESHOLD = -1  # glibc's mallopt parameters (malloc.h)
M_MMAP_THRESHOLD = -3
MMAP_THRESHOLD = 32 << 20  # the most glibc accepts; it also stops the threshold moving by itself
TRIM_THRESHOLD = 1 << 30

_done: list = []


def keep_freed_memory() -> bool:
    """Ask glibc's malloc to keep freed blocks under 32 MiB for reuse (once per process); whether it took."""
    if _done:
        return _done[0]
    ok = False
    try:
        if (os.confstr("CS_GNU_LIBC_VERSION") or "").startswith("glibc"):
            import ctypes  # (lazy: already loaded by numpy where this is used)

            mallopt = ctypes.CDLL(None).mallopt
            ok = bool(mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD)) and bool(mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD))
    except (ValueError, OSError, AttributeError):
        ok = False
    _done.append(ok)
    return ok
