#!/usr/bin/env python3
"""Benchmark `samctl search` against baselines measured in the same run.

    python bench/bench_search.py [--conversations 10000] [--memories 100] [--repeat 5]
                                 [--baseline-repeat 1] [--baseline-sample 1.0] [--out bench/out]

On a synthetic SAM tree (gen_archive.py; generated once into --out and reused; 10,000 x 100 =
1,000,000 memories is about 5 GB and 90 s) it prints:

- the index build: a full rebuild, rows per second, the most memory it held, size on disk;
- warm search (``samctl search QUERY --format jsonl`` in-process, index up to date, page cache
  warm; everything a search does except starting Python), median of --repeat, against
  (a) the baseline that does what SAM does: open each memory.db, decode each row's embedding blob,
      score row by row in Python (cosine of the stored vectors + the docs/formats/sam.md §7.7 keyword boost), keep
      score >= 0.3, sort, top 10 -- median of --baseline-repeat runs (it takes minutes at full
      size; --baseline-sample F times a deterministic fraction F of the databases and scales the
      time up, and says so);
  (b) the floor: one numpy float32 matrix-vector product over the same matrix (the index's
      vectors, copied into one array in RAM) plus a top-k with argpartition;
- the incremental refresh after touching (mtime) 1% of the memory.db files, median of --repeat
  rounds with a different 1% each round, and a warm search afterwards;
- warm search and floor are timed in turns (A B A B ...), so a machine shared with other work slows
  both alike;
- a few other query shapes, for information.

The goals of issue 4 are printed next to the ratios; nothing passes or fails.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import random
import shutil
import sqlite3
import statistics
import struct
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from timing import PeakAnonymousMemory, medians  # noqa: E402 - bench/ is on the path just above


def generate(out: Path, conversations: int, memories: int) -> Path:
    dest = out / f"sam-{conversations}x{memories}"
    marker = dest / ".complete"
    if not marker.exists():
        if dest.exists():
            shutil.rmtree(dest)
        print(f"generating {conversations} conversations x {memories} memories into {dest} ...", file=sys.stderr,
              flush=True)
        subprocess.run([sys.executable, str(HERE / "gen_archive.py"), "sam", str(dest), "--conversations",
                        str(conversations), "--memories-per-conversation", str(memories), "--quiet"], check=True)
        marker.write_text("")
    return dest / "SAM"


def median_time(fn, repeat: int, warm: bool = True) -> float:
    return medians(fn, repeat, warm)[0]


def interleaved(fns: list, repeat: int) -> list[float]:
    """Median time of each function, measured in turns (A B A B ...) after one warm-up each, so that
    a machine shared with other work slows them alike and their ratio stays honest."""
    for fn in fns:
        fn()
    times: list[list[float]] = [[] for _ in fns]
    for _ in range(repeat):
        for fn, ts in zip(fns, times):
            t = time.perf_counter()
            fn()
            ts.append(time.perf_counter() - t)
    return [statistics.median(ts) for ts in times]


def run_samctl(args: list[str]) -> str:
    from samctl.cli import cli

    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        try:
            cli.main(args, prog_name="samctl", standalone_mode=False)
        except SystemExit:
            pass
    return buf.getvalue()


# --- (a) what SAM does ---------------------------------------------------------------------------


def memory_dbs(base: Path) -> list[str]:
    conv = base / "conversations"
    out = []
    for e in sorted(os.scandir(conv), key=lambda e: e.name):
        p = os.path.join(e.path, "memory.db")
        if e.is_dir() and os.path.exists(p):
            out.append(p)
    return out


def query_vector(dbs: list[str]) -> list[float]:
    """SAM embeds the query with Apple NL (512-d); off a Mac the stand-in is a stored 512-d vector."""
    for p in dbs:
        con = sqlite3.connect(f"file:{p}?mode=ro", uri=True)
        try:
            for (blob,) in con.execute("SELECT embedding FROM conversation_memories WHERE length(embedding) = 4096"):
                return list(struct.unpack("<512d", blob))
        finally:
            con.close()
    raise SystemExit("no 4096-byte embedding in the tree")


def sam_baseline(dbs: list[str], qvec: list[float], query: str, threshold: float = 0.3, limit: int = 10):
    """retrieveRelevantMemories over every memory.db, row by row, in Python (docs/formats/sam.md §7.7)."""
    from samctl.search.scoring import cosine, keyword_boost, tokens

    qtok = tokens(query)
    found = []
    for p in dbs:
        con = sqlite3.connect(f"file:{p}?mode=ro", uri=True)
        try:
            for mid, content, blob, imp in con.execute(
                    "SELECT id, content, embedding, importance FROM conversation_memories"):
                vec = struct.unpack("<%dd" % (len(blob) // 8), blob) if blob else ()
                score = cosine(qvec, vec) + keyword_boost(qtok, tokens(content))
                if score >= threshold:
                    found.append((score, mid))
        finally:
            con.close()
    found.sort(reverse=True)
    return found[:limit]


# --- (b) the floor ---------------------------------------------------------------------------------


def floor_fn(store, query: str, limit: int = 10):
    import numpy as np

    from samctl.search import index as ix
    from samctl.search import scoring

    idx = ix.open_index(store)
    mat = np.ascontiguousarray(np.concatenate([s.vectors for s in idx.segments]))
    q = np.array(scoring.embed(query), dtype=np.float32)

    def floor():
        s = mat @ q
        top = np.argpartition(s, len(s) - limit)[len(s) - limit:]
        return top[np.argsort(-s[top])]

    return floor, mat.shape


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--conversations", type=int, default=10_000)
    ap.add_argument("--memories", type=int, default=100, help="memories per conversation")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--baseline-repeat", type=int, default=1)
    ap.add_argument("--baseline-sample", type=float, default=1.0, metavar="F",
                    help="time the SAM baseline on this fraction of the databases and scale up (default 1: all)")
    ap.add_argument("--query", default="portland budget")
    ap.add_argument("--out", type=Path, default=HERE / "out")
    ap.add_argument("--keep-index", action="store_true", help="reuse an existing index instead of timing a rebuild")
    a = ap.parse_args(argv)
    a.out.mkdir(parents=True, exist_ok=True)
    base = generate(a.out, a.conversations, a.memories)
    cache = a.out / f"cache-sam-{a.conversations}x{a.memories}"
    os.environ["SAMCTL_CACHE_DIR"] = str(cache)

    from samctl.search import index as ix
    from samctl.stores import open_store

    store = open_store(str(base))
    dbs = memory_dbs(base)
    jobs = os.environ.get("SAMCTL_INDEX_JOBS") or str(min(os.cpu_count() or 1, 4))
    print(f"samctl search benchmark: {a.conversations:,} conversations x {a.memories} memories "
          f"({len(dbs):,} memory.db files), load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")

    # index build -------------------------------------------------------------------------------
    built = False
    if a.keep_index:
        try:
            ix.open_index(store)
            built = True
        except ix.BadIndex:
            pass
    if not built:
        t = time.perf_counter()
        with PeakAnonymousMemory() as peak:
            idx = ix.refresh(store, [], rebuild=True)
        dt = time.perf_counter() - t
        print(f"index build (full, up to {jobs} worker processes): {idx.rows:,} rows in {dt:.1f} s = "
              f"{idx.rows / dt:,.0f} rows/s" + (f"; {peak.mib:,.0f} MiB of memory at most (this process)"
                                                if peak.mib is not None else ""))
    st = ix.state(store, verify=False)
    print(f"  index: {sum(st['rows'].values()):,} rows ({st['rows']['memory']:,} memories, "
          f"{st['rows']['message']:,} messages), {st['size'] / 2**30:.2f} GiB on disk, {st['segments']} segment(s)")

    # warm search ---------------------------------------------------------------------------------
    args = ["--root", str(base), "search", a.query, "--format", "jsonl"]
    out = run_samctl(args)
    assert out.strip(), "the search found nothing"
    floor, shape = floor_fn(store, a.query)
    warm, floor_t = interleaved([lambda: run_samctl(args), floor], a.repeat)
    print(f'warm search "{a.query}" (median of {a.repeat}, interleaved with the floor): {warm:.3f} s')
    print(f"  floor, float32 {shape[0]:,} x {shape[1]} mat-vec + argpartition (median of {a.repeat}): "
          f"{floor_t:.3f} s -> samctl is {warm / floor_t:.2f}x the floor (goal <= 5x)")

    # (a) SAM's way ---------------------------------------------------------------------------------
    qvec = query_vector(dbs)
    sample = dbs
    if a.baseline_sample < 1.0:
        rng = random.Random(0)
        sample = sorted(rng.sample(dbs, max(1, round(len(dbs) * a.baseline_sample))))
    base_t = median_time(lambda: sam_baseline(sample, qvec, a.query), a.baseline_repeat, warm=False)
    scaled = base_t * len(dbs) / len(sample)
    how = "" if sample is dbs else f", timed on {len(sample):,} of {len(dbs):,} databases and scaled up"
    print(f"  SAM-like baseline, row by row in Python (median of {a.baseline_repeat}{how}): {scaled:.1f} s "
          f"-> samctl is {scaled / warm:,.0f}x faster (goal >= 100x)")

    # incremental refresh -------------------------------------------------------------------------
    rng = random.Random(1)
    k = max(1, len(dbs) // 100)
    times, reads = [], []
    for _ in range(a.repeat):
        t0 = time.time() - 10  # older than the 2 s racy window: trusted after the refresh
        for p in rng.sample(dbs, k):
            os.utime(p, (t0, t0))
        t = time.perf_counter()
        idx = ix.refresh(store, [])
        times.append(time.perf_counter() - t)
        reads.append(len(idx.read))
    print(f"incremental refresh after touching 1% of the memory.db files ({k:,} files, about {k * a.memories:,} "
          f"rows; median of {a.repeat}): {statistics.median(times):.2f} s "
          f"(files read again per round: {sorted(set(reads))}; {len(idx.segments)} segments now)")
    warm2, floor2 = interleaved([lambda: run_samctl(args), floor], a.repeat)
    print(f"  warm search afterwards (median of {a.repeat}): {warm2:.3f} s = {warm2 / floor2:.2f}x the floor "
          f"({floor2:.3f} s)")

    # other shapes, for information ---------------------------------------------------------------
    conv = next(p.name for p in sorted((base / "conversations").iterdir()) if (p / "conversation.json").exists())
    for label, extra in (("rare words", ["zanzibar quokka"]), ("exact substring", ["--exact", "zanzibar"]),
                         ("one conversation", [a.query, "--conversation", conv]),
                         ("messages only", [a.query, "--in", "messages"]),
                         ("--min-importance 0.85", [a.query, "--min-importance", "0.85"])):
        cmd = ["--root", str(base), "search", *extra, "--format", "jsonl"]
        print(f"  {label:<22} {median_time(lambda: run_samctl(cmd), a.repeat):.3f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
