"""Elementwise work over every row of a corpus, in two halves at once.

numpy releases the GIL in its loops over large arrays, and one core leaves much of the memory
bandwidth unused, so two threads each doing half of a pass finish it in about half the time (see
bench/README.md, "search speed").  Only work where each element is computed alone is split: the
result is the same, bit for bit, as one pass.  A forked child makes its own thread (a pool's
thread does not survive a fork).
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor

MIN_ROWS = 1 << 18  # below this many rows a pass is too short to be worth a hand-off
_POOL: list = [None, None]  # (executor of one thread, the pid that made it)


def run(n: int, fn) -> None:
    """``fn(lo, hi)`` for the halves of ``range(n)``, the second in another thread; both are done when
    this returns (an exception of either is raised)."""
    if n < MIN_ROWS or (os.cpu_count() or 1) < 2:
        fn(0, n)
        return
    half = n // 2
    other = _executor().submit(fn, half, n)
    try:
        fn(0, half)
    finally:
        other.result()


def _executor() -> ThreadPoolExecutor:
    pool, pid = _POOL
    if pool is None or pid != os.getpid():
        pool = ThreadPoolExecutor(1, thread_name_prefix="samctl-halves")
        _POOL[:] = [pool, os.getpid()]
    return pool
