#!/usr/bin/env python3
"""Benchmark `samctl check` on mermaid trees against the floor measured in the same run.

    python bench/bench_check.py --mermaid 3000 --mermaid 10000 [--messages-mean 40] [--repeat 3]

floor: one process, page cache warm: read every file of the conversations folder and parse it
with orjson (snapshot, ``.meta``, every line of each ``.jsonl``), nothing else.
samctl: the whole ``samctl check`` process (exit 0 expected: the generated tree is clean).
Prints medians (wall and CPU of the children for samctl) and the ratio to the floor, and the cost
per session, so that two sizes show whether it grows with the archive.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import orjson

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from bench_ls import generate  # noqa: E402 - bench/ is on the path just above
from timing import medians  # noqa: E402


def floor(conv: str) -> int:
    """Read and orjson-parse every file of the folder; the number of JSON values parsed."""
    n = 0
    for name in os.listdir(conv):
        with open(os.path.join(conv, name), "rb") as f:
            data = f.read()
        if name.endswith(".jsonl"):
            for line in data.split(b"\n"):
                if line:
                    orjson.loads(line)
                    n += 1
        else:
            orjson.loads(data)
            n += 1
    return n


def samctl_check(root: Path, repeat: int) -> tuple[float, float]:
    """(median wall, median CPU of the child and its workers) of the whole `samctl check` process."""
    exe = str(Path(sys.executable).with_name("samctl"))
    wall, cpu = [], []
    for i in range(repeat + 1):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t = time.perf_counter()
        r = subprocess.run([exe, "--root", str(root), "check"], capture_output=True, text=True)
        w = time.perf_counter() - t
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if r.returncode != 0:
            sys.exit(f"samctl check exited {r.returncode}: {r.stdout[-2000:]}{r.stderr[-2000:]}")
        if i:  # the first run warms the page cache and samctl's caches
            wall.append(w)
            cpu.append(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
    return statistics.median(wall), statistics.median(cpu)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mermaid", type=int, action="append", help="sessions in a tree (repeatable)")
    ap.add_argument("--messages-mean", type=float, default=40)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--out", type=Path, default=HERE / "out")
    a = ap.parse_args()
    os.environ.setdefault("SAMCTL_CACHE_DIR", tempfile.mkdtemp(prefix="samctl-bench-cache-"))
    rows = []
    for n in a.mermaid or [3000]:
        root = generate("mermaid", n, a.out, a.messages_mean)
        conv = str(root / ".mermaid" / "conversations")
        f, fc = medians(lambda: floor(conv), a.repeat)
        s, sc = samctl_check(root, a.repeat)
        rows.append((n, f, fc, s, sc))
        print(f"mermaid {n} x {a.messages_mean:g}, median of {a.repeat}:")
        print(f"  floor (read + orjson every file, 1 process): {f:.3f} s wall, {fc:.3f} s CPU")
        print(
            f"  samctl check (whole process):                {s:.3f} s wall, {sc:.3f} s CPU; "
            f"ratio {s / f:.2f}x wall (goal <= 2x), {sc / fc:.2f}x CPU; {s / n * 1000:.2f} ms/session"
        )
    if len(rows) > 1:
        (n0, f0, _, s0, _), (n1, f1, _, s1, _) = rows[0], rows[-1]
        print(f"per-session cost {n1} vs {n0}: samctl {s1 / n1 / (s0 / n0):.2f}x, floor {f1 / n1 / (f0 / n0):.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
