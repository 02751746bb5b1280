#!/usr/bin/env python3
"""Benchmark the fold of a big mermaid event log against the raw floor.

    python bench/bench_fold.py [--bytes 134217728] [--repeat 5]

floor: read the file and orjson.loads each line (kept, GC paused), nothing else.
samctl: eventlog.read_log_file (caps, validation, prefix semantics) + fold.
Prints medians over the repeats and the ratio (goal: within 2x).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import orjson

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from timing import medians  # noqa: E402 - bench/ is on the path just above


def floor(path: Path) -> int:
    """Read the file and orjson.loads each line, keeping the events (a fold needs them),
    with the garbage collector paused as samctl's reader pauses it."""
    import gc

    gc.disable()
    try:
        with open(path, "rb") as f:
            data = f.read()
        events = [orjson.loads(line) for line in data.split(b"\n") if line]
        return len(events)
    finally:
        gc.enable()


def ours(path: Path) -> int:
    from samctl.stores.mermaid import eventlog

    read = eventlog.read_log_file(path)
    doc = eventlog.fold(read.events)
    return len(doc["messages"]) if doc else -1


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--bytes", type=int, default=128 * 1024 * 1024 - 4096)
    ap.add_argument("--repeat", type=int, default=5)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "20260810_140307_512.jsonl"
        # Generated in a child process: the generator's leftover heap would otherwise slow
        # every allocation measured here (floor and samctl alike, samctl more).
        info = json.loads(
            subprocess.run(
                [
                    sys.executable,
                    "-c",
                    "import json, sys; sys.path.insert(0, sys.argv[1]); "
                    "from gen_archive import make_mermaid_log; "
                    "print(json.dumps(make_mermaid_log(sys.argv[2], int(sys.argv[3]), seed=1)))",
                    str(HERE),
                    str(path),
                    str(a.bytes),
                ],
                check=True,
                capture_output=True,
                text=True,
            ).stdout
        )
        size = path.stat().st_size
        f, fc = medians(lambda: floor(path), a.repeat)
        o, oc = medians(lambda: ours(path), a.repeat)
        print(f"fold of a {size / 2**20:.1f} MiB log ({info.get('lines')} lines), median of {a.repeat}:")
        print(f"  floor (read + orjson.loads per line): {f:.3f} s  ({size / 2**20 / f:.0f} MiB/s), CPU {fc:.3f} s")
        print(
            f"  samctl read_log_file + fold:          {o:.3f} s  ratio {o / f:.2f}x (goal <= 2x), "
            f"CPU {oc:.3f} s, ratio {oc / fc:.2f}x"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
