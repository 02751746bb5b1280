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


def timed(fn):
    """``fn`` as a run for ``paired_ratios``: called here, its (wall, CPU of this process)."""

    def run() -> tuple[float, float]:
        t, c = time.perf_counter(), time.process_time()
        fn()
        return time.perf_counter() - t, time.process_time() - c

    return run


def paired_ratios(run, floor_run, repeat: int) -> dict:
    """``run`` and ``floor_run`` (each returns its (wall, CPU): ``timed``, or a child's own) called in turn
    ``repeat`` times (who goes first alternates), after one warm-up call of each: the median wall and CPU
    time of each, and the median of the pairs' ratios.  A pair runs within seconds, so a slow minute of a
    shared machine slows both sides of it alike; medians of two separate series can each catch a different
    minute."""
    run(), floor_run()
    got: dict = {"wall": [], "cpu": [], "floor_wall": [], "floor_cpu": []}
    for i in range(repeat):
        for side in ("", "floor_") if i % 2 == 0 else ("floor_", ""):
            wall, cpu = (floor_run if side else run)()
            got[side + "wall"].append(wall)
            got[side + "cpu"].append(cpu)
    out = {k: statistics.median(v) for k, v in got.items()}
    out["wall_ratio"] = statistics.median(a / b for a, b in zip(got["wall"], got["floor_wall"]))
    out["cpu_ratio"] = statistics.median(a / b for a, b in zip(got["cpu"], got["floor_cpu"]))
    return out


class PeakAnonymousMemory:
    """``with PeakAnonymousMemory() as peak: ...``; then ``peak.mib``: the most anonymous memory
    (``RssAnon`` of /proc/self/status, Linux) this process held during the block, sampled every
    50 ms, or None where there is no /proc.  Unlike ``ru_maxrss`` it leaves out the pages of
    mapped files (an index's segments), which the kernel can drop at will; worker processes
    are not counted."""

    def __init__(self, interval: float = 0.05):
        self.interval = interval
        self.mib = None

    @staticmethod
    def _now() -> int | None:
        try:
            with open("/proc/self/status") as f:
                for line in f:
                    if line.startswith("RssAnon:"):
                        return int(line.split()[1])  # kB
        except OSError:
            pass
        return None

    def __enter__(self):
        import threading

        self._kb = self._now()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        if self._kb is not None:
            self._thread.start()
        return self

    def _sample(self) -> None:
        while not self._stop.wait(self.interval):
            self._kb = max(self._kb, self._now() or 0)

    def __exit__(self, *exc) -> None:
        self._stop.set()
        if self._kb is not None:
            self._thread.join()
            self.mib = max(self._kb, self._now() or 0) / 1024
