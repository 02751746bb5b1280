#!/usr/bin/env python3
"""Benchmark the other cron commands (`stats`, `compact --dry-run`, `export --all --to jsonl`), each
against its own floor measured in the same run, on the bench generator's trees (issue #32).

    python bench/bench_cron.py --mermaid 3000 [--sam 3000] [--messages-mean 40] [--repeat 3] [--only compact]

Each samctl figure is the whole process (start-up included), page cache and samctl's listing
cache warm (the first run of each is not counted).  Floors, one Python process each:
  stats:            lstat every file under the store (its byte count walks them all) and parse
                    each mermaid ``.meta`` / count the rows of each SAM ``memory.db``;
  compact --dry-run: lstat every file under the store, read the last byte of every event log and
                    the free-page count of every SAM database (opened read-only);
  export jsonl:     read and orjson-parse every snapshot (mermaid ``.json``, SAM ``conversation.json``)
                    and write one orjson line per message to /dev/null.
"""

from __future__ import annotations

import argparse
import os
import resource
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import orjson

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from bench_check import tightened  # noqa: E402 - bench/ is on the path just above
from bench_ls import generate  # noqa: E402
from timing import paired_ratios, timed  # noqa: E402


def walk_lstat(root: str) -> list[str]:
    """lstat every entry under ``root`` (symlinks not followed); the regular files' paths."""
    files, stack = [], [root]
    while stack:
        d = stack.pop()
        for e in os.scandir(d):
            st = e.stat(follow_symlinks=False)
            if e.is_dir(follow_symlinks=False):
                stack.append(e.path)
            elif st.st_mode & 0o100000:
                files.append(e.path)
    return files


def floor_stats(root: str) -> int:
    n = 0
    for p in walk_lstat(root):
        if p.endswith(".meta"):
            with open(p, "rb") as f:
                orjson.loads(f.read())
            n += 1
        elif p.endswith(os.sep + "memory.db"):
            conn = sqlite3.connect(f"file:{p}?mode=ro", uri=True)
            try:
                n += conn.execute('SELECT count(*) FROM "conversation_memories"').fetchone()[0]
            finally:
                conn.close()
    return n


def floor_compact(root: str) -> int:
    n = 0
    for p in walk_lstat(root):
        if p.endswith((os.sep + "memory.db", os.sep + "context_archive.db")):
            conn = sqlite3.connect(f"file:{p}?mode=ro", uri=True)
            try:
                n += conn.execute("PRAGMA freelist_count").fetchone()[0]
            finally:
                conn.close()
        elif p.endswith(".jsonl"):
            fd = os.open(p, os.O_RDONLY)
            try:
                size = os.fstat(fd).st_size
                n += size > 0 and os.pread(fd, 1, size - 1) == b"\n"
            finally:
                os.close(fd)
    return n


def floor_export(conv: str, sam: bool) -> int:
    n = 0
    with open(os.devnull, "wb") as out:
        for name in os.listdir(conv):
            p = os.path.join(conv, name, "conversation.json") if sam else os.path.join(conv, name)
            if not sam and not name.endswith(".json"):
                continue
            try:
                with open(p, "rb") as f:
                    doc = orjson.loads(f.read())
            except (FileNotFoundError, NotADirectoryError):
                continue
            for m in doc.get("messages") or ():
                out.write(orjson.dumps(m) + b"\n")
                n += 1
    return n


def samctl_once(args: list[str]) -> tuple[float, float]:
    """(wall, CPU of the child and its workers) of one whole samctl process, stdout to /dev/null."""
    exe = str(Path(sys.executable).with_name("samctl"))
    # as installed: samctl's modules from their compiled bytecode (written by the first run), not
    # compiled from source by every process as they are when PYTHONDONTWRITEBYTECODE is set
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    r = subprocess.run([exe, *args], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)
    w = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if r.returncode != 0:
        sys.exit(f"samctl {' '.join(args)} exited {r.returncode}: {r.stderr[-2000:]}")
    return w, after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime


def bench(what: str, root: Path, store_dir: str, conv: str, sam: bool, repeat: int, only: list | None) -> None:
    print(f"{what}, median of {repeat} pairs (wall / CPU; goal: each <= 2x its floor):")
    cases = [
        ("stats", ["stats"], lambda: floor_stats(store_dir)),
        ("compact --dry-run", ["compact", "--dry-run"], lambda: floor_compact(store_dir)),
        ("export --all --to jsonl", ["export", "--all", "--to", "jsonl"], lambda: floor_export(conv, sam)),
    ]
    for name, args, floor_fn in cases:
        if only and args[0] not in only:
            continue
        argv = ["--root", str(root), *args]
        got = paired_ratios(lambda: samctl_once(argv), timed(floor_fn), repeat)
        print(
            f"  {name:24s} floor {got['floor_wall']:7.3f} s / {got['floor_cpu']:7.3f} s   samctl {got['wall']:7.3f} s / "
            f"{got['cpu']:7.3f} s   ratio {got['wall_ratio']:5.2f}x wall, {got['cpu_ratio']:5.2f}x CPU"
        )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mermaid", type=int, action="append", help="sessions in a tree (repeatable)")
    ap.add_argument("--sam", type=int, action="append", help="SAM conversations in a tree (repeatable)")
    ap.add_argument("--messages-mean", type=float, default=40)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--out", type=Path, default=HERE / "out")
    ap.add_argument("--only", action="append", choices=["stats", "compact", "export"], help="these cases (repeatable)")
    a = ap.parse_args()
    os.environ.setdefault("SAMCTL_CACHE_DIR", tempfile.mkdtemp(prefix="samctl-bench-cache-"))
    for n in a.mermaid or ([] if a.sam else [3000]):
        root = generate("mermaid", n, a.out, a.messages_mean)
        store_dir = str(root / ".mermaid")
        bench(
            f"mermaid {n} x {a.messages_mean:g}", root, store_dir, store_dir + "/conversations", False, a.repeat, a.only
        )
    for n in a.sam or []:
        root = generate("sam", n, a.out)
        base = tightened(next(p for p in root.rglob("conversations") if p.is_dir()).parent)
        bench(f"SAM {n}", base, str(base), str(base / "conversations"), True, a.repeat, a.only)
    return 0


if __name__ == "__main__":
    sys.exit(main())
