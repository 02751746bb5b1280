#!/usr/bin/env python3
"""Benchmark `samctl ls` against baselines measured in the same run.

    python bench/bench_ls.py [--mermaid N] [--sam N] [--messages-mean M] [--repeat R] [--out bench/out]

mermaid (default 100,000 conversations of 40 messages on average, a coding
session's length; `--messages-mean 12` gives short chats): `ls --format jsonl`,
warm (samctl's listing cache filled) and cold (cache deleted before each run), against
  - the raw-read floor: list the folder and os.read every .meta, nothing else;
  - the naive lister: parse every snapshot .json with orjson;
and the warm table (plain `ls`) against the warm jsonl: what laying out the table costs.
SAM (default 10,000 conversations): `ls --format jsonl` with a warm meta cache
against the cold run (cache deleted before each run).

Prints medians over R repeats (after one warm-up run that fills the page
cache) and the ratios; archives are generated once into --out and reused.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import orjson

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from timing import medians, paired_ratios, timed  # noqa: E402 - bench/ is on the path just above


def generate(kind: str, n: int, out: Path, messages_mean: float | None = None) -> Path:
    dest = out / (f"{kind}-{n}" if messages_mean is None else f"{kind}-{n}-m{messages_mean:g}")
    marker = dest / ".complete"
    if not marker.exists():
        if dest.exists():
            shutil.rmtree(dest)
        extra = ["--memories-per-conversation", "1"] if kind == "sam" else []
        if messages_mean is not None:
            extra += ["--messages-mean", str(messages_mean)]
        subprocess.run(
            [
                sys.executable,
                str(HERE / "gen_archive.py"),
                kind,
                str(dest),
                "--conversations",
                str(n),
                "--quiet",
                *extra,
            ],
            check=True,
        )
        marker.write_text("")
    return dest


def run_samctl(args: list[str]) -> None:
    from samctl.cli import cli

    with open(os.devnull, "w") as devnull, contextlib.redirect_stdout(devnull):
        try:
            cli.main(args, prog_name="samctl", standalone_mode=False)
        except SystemExit:
            pass


def floor_read_metas(conv: str) -> None:
    for name in os.listdir(conv):
        if name.endswith(".meta"):
            fd = os.open(os.path.join(conv, name), os.O_RDONLY)
            os.read(fd, 1 << 20)
            os.close(fd)


def naive_parse_snapshots(conv: str) -> None:
    rows = []
    for name in os.listdir(conv):
        if name.endswith(".json"):
            with open(os.path.join(conv, name), "rb") as f:
                doc = orjson.loads(f.read())
            rows.append((doc["updated_at"], doc["id"], doc["title"], len(doc["messages"])))
    rows.sort(reverse=True)


def bench_mermaid(n: int, repeat: int, out: Path, messages_mean: float) -> None:
    root = generate("mermaid", n, out, messages_mean)
    conv = str(root / ".mermaid" / "conversations")
    sizes = [os.stat(os.path.join(conv, f)).st_size for f in os.listdir(conv) if f.endswith(".json")]
    # Generated files are brand new; samctl trusts neither files nor a folder changed in the last 2 s.
    time.sleep(2.1)
    cache = Path(tempfile.mkdtemp(prefix="samctl-bench-cache-"))
    os.environ["SAMCTL_CACHE_DIR"] = str(cache)
    args = ["--root", str(root), "ls", "--format", "jsonl"]

    def cold():
        shutil.rmtree(cache, ignore_errors=True)
        run_samctl(args)

    cpu = {}
    floor, cpu["floor"] = medians(lambda: floor_read_metas(conv), repeat)
    cold_t, cpu["cold"] = medians(cold, repeat)
    run_samctl(args)
    warm_t, cpu["warm"] = medians(lambda: run_samctl(args), repeat)
    table_t = medians(lambda: run_samctl(args[:-2]), repeat)[0]  # the default table, same listing
    naive, cpu["naive"] = medians(lambda: naive_parse_snapshots(conv), repeat)
    shutil.rmtree(cache, ignore_errors=True)
    print(
        f"mermaid ls --format jsonl, {n} conversations, {messages_mean:g} messages on average, "
        f"snapshots {statistics.mean(sizes) / 1024:.1f} KiB on average (median of {repeat}):"
    )
    print(f"  raw-read floor (os.read every .meta): {floor:.3f} s")
    print(f"  samctl ls, warm listing cache:        {warm_t:.3f} s   ratio to floor {warm_t / floor:.2f}x (goal <= 2x)")
    print(f"  samctl ls, cold (cache deleted):      {cold_t:.3f} s   ratio to floor {cold_t / floor:.2f}x")
    print(
        f"  samctl ls as a table, warm:           {table_t:.3f} s   ratio to jsonl {table_t / warm_t:.2f}x "
        "(the cost of laying out the table)"
    )
    print(
        f"  naive (parse every snapshot):         {naive:.3f} s   samctl warm is {naive / warm_t:.1f}x faster, "
        f"cold {naive / cold_t:.1f}x (goal >= 10x)"
    )
    print(
        f"  CPU time (user+sys, not slowed by other work): floor {cpu['floor']:.3f} s, warm {cpu['warm']:.3f} s "
        f"({cpu['warm'] / cpu['floor']:.2f}x), cold {cpu['cold']:.3f} s ({cpu['cold'] / cpu['floor']:.2f}x), "
        f"naive {cpu['naive']:.3f} s ({cpu['naive'] / cpu['warm']:.1f}x warm)"
    )


def bench_sam(n: int, repeat: int, out: Path) -> None:
    root = generate("sam", n, out)
    base = next(p for p in root.rglob("conversations") if p.is_dir()).parent
    cache = Path(tempfile.mkdtemp(prefix="samctl-bench-cache-"))
    os.environ["SAMCTL_CACHE_DIR"] = str(cache)
    # Generated files are brand new; samctl never caches files touched in the last 2 s.
    time.sleep(2.1)
    args = ["--root", str(base), "ls", "--format", "jsonl"]

    def cold():
        shutil.rmtree(cache, ignore_errors=True)
        run_samctl(args)

    cold_t = medians(cold, repeat)[0]
    run_samctl(args)
    # warm and floor in turn: the ratio is the median of pairs run moments apart
    got = paired_ratios(
        timed(lambda: run_samctl(args)), timed(lambda: floor_sam_warm(str(base / "conversations"), cache)), repeat
    )
    warm_t = got["wall"]
    print(f"SAM ls --format jsonl, {n} conversations (median of {repeat}):")
    print(
        f"  floor (stat every conversation.json, read the cache): {got['floor_wall']:.3f} s, {got['floor_cpu']:.3f} s CPU"
    )
    print(f"  cold (no cache):  {cold_t:.3f} s")
    print(f"  warm (cache):     {warm_t:.3f} s   warm is {cold_t / warm_t:.1f}x faster than cold")
    print(
        f"  warm / floor:     {got['wall_ratio']:.2f}x wall, {got['cpu_ratio']:.2f}x CPU, median of the pairs "
        "(goal <= 1.5x)"
    )
    shutil.rmtree(cache, ignore_errors=True)


def floor_sam_warm(conv: str, cache: Path) -> int:
    """What a warm SAM listing cannot do without, in one process: lstat every conversation.json and
    read and parse samctl's listing cache for the store."""
    n = 0
    for name in os.listdir(conv):
        try:
            os.lstat(os.path.join(conv, name, "conversation.json"))
            n += 1
        except OSError:
            pass
    for p in cache.glob("sam-meta-*.json"):
        with open(p, "rb") as f:
            orjson.loads(f.read())
    return n


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mermaid", type=int, default=100_000)
    ap.add_argument("--sam", type=int, default=10_000)
    ap.add_argument(
        "--messages-mean",
        type=float,
        default=40,
        help="mean messages per mermaid conversation (default 40: a coding session)",
    )
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--out", type=Path, default=HERE / "out")
    a = ap.parse_args()
    a.out.mkdir(parents=True, exist_ok=True)
    if a.mermaid:
        bench_mermaid(a.mermaid, a.repeat, a.out, a.messages_mean)
    if a.sam:
        bench_sam(a.sam, a.repeat, a.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
