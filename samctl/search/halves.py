"""Elementwise work over every row of a corpus, in two halves at once, each a block at a time.

numpy releases the GIL in its loops over large arrays, and one core leaves much of the memory
bandwidth unused, so two threads each doing half of a pass finish it in about half the time (see
bench/README.md, "search speed").  Each thread takes its half a block of rows at a time, every step of
the pass on one block before the next: the block's slices stay in the core's cache from one step to the
next, where a step over the whole half would read them back from memory.  Only work where each
element is computed alone is split: the result is the same, bit for bit, as one pass.  A forked child
makes its own thread (a pool's thread does not survive a fork).
"""

from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager

MIN_ROWS = 1 << 18  # below this many rows a pass is too short to be worth a hand-off
BLOCK = 1 << 15  # rows: a block of each of a pass's few arrays fits in a core's cache (L2: 1-4 MiB)
_POOL: list = [None, None]  # (executor of one thread, the pid that made it)
_LOCAL = threading.local()  # .alone: this thread's passes are not split (``one_thread``)


def run(n: int, fn, blocks: bool = True) -> list:
    """``fn(lo, hi)`` for consecutive blocks of ``range(n)`` (``BLOCK`` rows; with ``blocks`` false, a half
    at once), the second half's in another thread; their results in the order of the rows, once both
    are done (an exception of either is raised)."""
    step = BLOCK if blocks else None
    if n < MIN_ROWS or (os.cpu_count() or 1) < 2 or getattr(_LOCAL, "alone", False):
        return _blocks(fn, 0, n, step)
    half = n // 2
    other = _executor().submit(_blocks, fn, half, n, step)
    try:
        mine = _blocks(fn, 0, half, step)
    finally:
        theirs = other.result()
    return mine + theirs


@contextmanager
def one_thread(alone: bool = True):
    """Within, when ``alone``: this thread's passes are not split.  For a search whose other core is
    taken by a child process it waits for (``checked.Recent``): a second thread would only share a
    core with it, and the search would wait longer for the child."""
    before = getattr(_LOCAL, "alone", False)
    _LOCAL.alone = before or alone
    try:
        yield
    finally:
        _LOCAL.alone = before


def _blocks(fn, lo: int, hi: int, step: int | None) -> list:
    step = step or max(hi - lo, 1)
    return [fn(a, min(a + step, hi)) for a in range(lo, hi, step)]


def _executor() -> ThreadPoolExecutor:
    pool, pid = _POOL
    if pool is None or pid != os.getpid():
        pool = ThreadPoolExecutor(1, thread_name_prefix="samctl-halves")
        _POOL[:] = [pool, os.getpid()]
    return pool
