"""How every benchmark here times a piece of work."""

from __future__ import annotations

import statistics
import time


def medians(fn, repeat: int, warm: bool = True) -> tuple[float, float]:
    """(median wall time, median CPU time) of ``repeat`` calls of ``fn``, after one warm-up call
    (page cache, imports) unless ``warm`` is False.  CPU time (user + system) is not slowed by
    other work on a shared machine, so benchmarks print ratios of both."""
    if warm:
        fn()
    wall, cpu = [], []
    for _ in range(repeat):
        t, c = time.perf_counter(), time.process_time()
        fn()
        wall.append(time.perf_counter() - t)
        cpu.append(time.process_time() - c)
    return statistics.median(wall), statistics.median(cpu)
