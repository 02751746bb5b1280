#!/usr/bin/env python3
"""Benchmark `samctl check` on mermaid and SAM trees against the floor measured in the same run.

    python bench/bench_check.py --mermaid 3000 --mermaid 10000 [--messages-mean 40] [--sam 3000] [--repeat 3]

floor, mermaid: one process, page cache warm: read every file of the conversations folder and parse
it with orjson (snapshot, ``.meta``, every line of each ``.jsonl``), nothing else.
floor, SAM: one process: read and orjson-parse every ``conversation.json``, and open each
``memory.db`` read-only and read all its rows.
samctl: the whole ``samctl check`` process (exit 0 expected: the generated tree is clean).
Runs the two in turn and prints their medians (wall and CPU of the children for samctl), the median
of the pairs' ratios, and the cost per session, so that two sizes show whether it grows with the archive.
"""

from __future__ import annotations

import argparse
import os
import resource
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
from timing import paired_ratios, timed  # noqa: E402


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


def sam_floor(conv: str) -> int:
    """Read and orjson-parse every conversation.json, read every row of every memory.db; rows read."""
    import sqlite3

    n = 0
    for name in os.listdir(conv):
        folder = os.path.join(conv, name)
        try:
            with open(os.path.join(folder, "conversation.json"), "rb") as f:
                orjson.loads(f.read())
                n += 1
        except (FileNotFoundError, NotADirectoryError):
            pass
        db = os.path.join(folder, "memory.db")
        if os.path.exists(db):
            conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
            try:
                n += len(conn.execute('SELECT * FROM "conversation_memories"').fetchall())
            finally:
                conn.close()
    return n


def tightened(base: Path) -> Path:
    """``base`` after one ``samctl check --fix``: the generator writes SAM trees with mode 0644, a
    warning per file that check would print on every run (and exit 3)."""
    exe = str(Path(sys.executable).with_name("samctl"))
    subprocess.run([exe, "--root", str(base), "check", "--fix", "-q"], capture_output=True)
    return base


def check_once(root: Path) -> tuple[float, float]:
    """(wall, CPU of the child and its workers) of one whole `samctl check` process."""
    exe = str(Path(sys.executable).with_name("samctl"))
    # as installed: samctl's modules from their compiled bytecode (written by the first run), not
    # compiled from source by every process as they are when PYTHONDONTWRITEBYTECODE is set
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    r = subprocess.run([exe, "--root", str(root), "check"], capture_output=True, text=True, env=env)
    w = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if r.returncode != 0:
        sys.exit(f"samctl check exited {r.returncode}: {r.stdout[-2000:]}{r.stderr[-2000:]}")
    return w, after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime


def _measure(what: str, n: int, floor_fn, root: Path, repeat: int) -> tuple:
    """samctl's check and the floor in turn, ``repeat`` pairs after a warm-up of each (page cache,
    samctl's caches); the ratio is the median of the pairs' (``timing.paired_ratios``)."""
    got = paired_ratios(lambda: check_once(root), timed(floor_fn), repeat)
    f, fc, s, sc = got["floor_wall"], got["floor_cpu"], got["wall"], got["cpu"]
    print(f"{what}, median of {repeat} pairs:")
    print(f"  floor (read + parse every file, 1 process): {f:.3f} s wall, {fc:.3f} s CPU")
    print(
        f"  samctl check (whole process):               {s:.3f} s wall, {sc:.3f} s CPU; "
        f"ratio {got['wall_ratio']:.2f}x wall (goal <= 2x), {got['cpu_ratio']:.2f}x CPU; {s / n * 1000:.2f} ms/session"
    )
    return n, f, fc, s, sc


def _per_session(rows: list) -> None:
    if len(rows) > 1:
        (n0, f0, _, s0, _), (n1, f1, _, s1, _) = rows[0], rows[-1]
        print(f"per-session cost {n1} vs {n0}: samctl {s1 / n1 / (s0 / n0):.2f}x, floor {f1 / n1 / (f0 / n0):.2f}x")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mermaid", type=int, action="append", help="sessions in a tree (repeatable)")
    ap.add_argument("--sam", type=int, action="append", help="SAM conversations in a tree (repeatable)")
    ap.add_argument("--messages-mean", type=float, default=40)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--out", type=Path, default=HERE / "out")
    a = ap.parse_args()
    os.environ.setdefault("SAMCTL_CACHE_DIR", tempfile.mkdtemp(prefix="samctl-bench-cache-"))
    rows = []
    for n in a.mermaid or ([] if a.sam else [3000]):
        root = generate("mermaid", n, a.out, a.messages_mean)
        conv = str(root / ".mermaid" / "conversations")
        rows.append(_measure(f"mermaid {n} x {a.messages_mean:g}", n, lambda c=conv: floor(c), root, a.repeat))
    _per_session(rows)
    rows = []
    for n in a.sam or []:
        root = generate("sam", n, a.out)
        base = tightened(next(p for p in root.rglob("conversations") if p.is_dir()).parent)
        conv = str(base / "conversations")
        rows.append(_measure(f"SAM {n}", n, lambda c=conv: sam_floor(c), base, a.repeat))
    _per_session(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
