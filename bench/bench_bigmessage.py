#!/usr/bin/env python3
"""One huge message, and --exact on a conversation of many messages (issue #20, finding 8).

    python bench/bench_bigmessage.py [--mib 60] [--messages 150000] [--repeat 5] [--out DIR]

Part 1, memory: a SAM conversation.json and a mermaid snapshot each holding one message of
``--mib`` MiB (word-list text), beside the demo trees.  samctl runs as a child process
(``search zzzz`` with the index built cold, then warm, and with ``--no-index``; then ``search portland``,
which finds the huge message and scores it exactly); its peak RSS
(``wait4``'s ``ru_maxrss``) is printed against the floor -- a child that reads the same file and
``orjson.loads`` it, nothing else -- and as a multiple of max(file, 64 MiB part).  The README's bound:
samctl's peak stays under about 4x the larger of the file and a part, plus ~40 MiB of interpreter
and libraries.

Part 2, --exact: a SAM conversation of ``--messages`` messages (a common word, ``portland``, in
about 60% of them), index warm.  ``samctl search --exact portland`` (a child process, and the
search alone in this process) against ``rg -F -i portland FILE`` over the conversation.json
(ripgrep must be on PATH; the ratio is skipped without it).  Goal: within 3x of rg.

Medians over ``--repeat`` runs after one warm-up; ratios are of medians in the same run.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(REPO))

_spec = importlib.util.spec_from_file_location("make_fixtures", REPO / "fixtures" / "make_fixtures.py")
mf = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(mf)

WORDS = (
    "budget deadline portland weekend invoice meeting project review draft plan the and of to a in report "
    "customer travel hotel flight zurich café schedule quarter numbers"
).split()
BIG = "E0000000-0000-4000-8000-0000000000E0"
MANY = "E0000000-0000-4000-8000-0000000000E1"
TS = "2026-01-02T03:04:05Z"
MIB = 1 << 20


def words(nbytes: int, seed: int) -> str:
    r = random.Random(seed)
    out, n = [], 0
    while n < nbytes:
        w = r.choice(WORDS)
        out.append(w)
        n += len(w) + 1
    return " ".join(out)


def make_trees(out: Path, mib: float, messages: int) -> dict:
    trees = {}
    sam = out / f"sam-big-{mib:g}"
    if not sam.exists():
        mf.build_demo_sam(sam)
        doc = mf.sam_doc(
            BIG,
            "one huge message",
            [mf.sam_message("A0000000-0000-4000-8000-000000000001", "user", words(int(mib * MIB), 1), TS)],
            TS,
            TS,
        )
        mf._write(sam / "conversations" / BIG / "conversation.json", mf.sam_dumps(doc))
    trees["SAM"] = (sam, sam / "conversations" / BIG / "conversation.json")
    mer = out / f"mermaid-big-{mib:g}"
    if not mer.exists():
        mf.build_demo_mermaid(mer)
        cid = "20260102_030405_006"
        # (mermaid keeps a user message in input_history too: the file is twice the message)
        doc = mf.mermaid_doc(
            cid, "one huge message", [mf.mermaid_message("User", words(int(mib * MIB) // 2, 2), TS)], TS
        )
        mf.write_mermaid(mer / ".mermaid" / "conversations", doc, log=False)
    trees["mermaid"] = (mer, mer / ".mermaid" / "conversations" / "20260102_030405_006.json")
    many = out / f"sam-{messages}"
    if not many.exists():
        mf.build_demo_sam(many)
        r = random.Random(3)
        msgs = [
            mf.sam_message(
                f"A{i:07X}-0000-4000-8000-000000000001",
                "user" if i % 2 == 0 else "assistant",
                " ".join(r.choice(WORDS) for _ in range(12)),
                f"2026-01-{1 + i // 6000:02d}T03:04:05Z",
            )
            for i in range(messages)
        ]
        mf._write(
            many / "conversations" / MANY / "conversation.json",
            mf.sam_dumps(mf.sam_doc(MANY, "many messages", msgs, TS, TS)),
        )
    trees["many"] = (many, many / "conversations" / MANY / "conversation.json")
    return trees


# A child's ru_maxrss starts at its parent's (Linux carries the high-water mark across fork and
# exec), and this process holds the generated text: a small launcher runs each command instead.
LAUNCH = (
    "import os, subprocess, sys, time\n"
    "t = time.perf_counter()\n"
    "p = subprocess.Popen(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)\n"
    "_, status, usage = os.wait4(p.pid, 0)\n"
    "print(os.waitstatus_to_exitcode(status), usage.ru_maxrss, time.perf_counter() - t)\n"
)


def child(argv: list, env: dict) -> tuple[float, float]:
    """(wall seconds, peak RSS in MiB) of a child process (timed by the launcher, from its start to its end)."""
    out = subprocess.run(
        [sys.executable, "-c", LAUNCH] + argv, env=env, capture_output=True, text=True, check=True
    ).stdout.split()
    if int(out[0]) not in (0, 1, 3):  # (rg -c exits 1 when nothing matches)
        raise SystemExit(f"{argv} exited {out[0]}")
    return float(out[2]), int(out[1]) / 1024


def runs(argv, env, repeat, before=None):
    walls, peaks = [], []
    for i in range(repeat + 1):
        if before:
            before()
        w, m = child(argv, env)
        if i:  # (the first is the warm-up)
            walls.append(w)
            peaks.append(m)
    return statistics.median(walls), max(peaks)


FLOOR = "import sys, orjson\nd = orjson.loads(open(sys.argv[1], 'rb').read())\n"


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mib", type=float, default=60)
    ap.add_argument("--messages", type=int, default=150_000)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--out", type=Path, default=HERE / "out" / "bigmessage")
    a = ap.parse_args()
    a.out.mkdir(parents=True, exist_ok=True)
    trees = make_trees(a.out, a.mib, a.messages)
    samctl = [sys.executable, "-c", "import sys; from samctl.cli import main; sys.argv[0] = 'samctl'; sys.exit(main())"]
    cache = Path(tempfile.mkdtemp(prefix="bench-bigmessage-cache-"))
    env = dict(os.environ, SAMCTL_CACHE_DIR=str(cache), SAMCTL_ASSUME_SAM_RUNNING="0")
    caps = ["--max-file-size", "1G"]
    try:
        print(f"part 1: one message of {a.mib:g} MiB; peak RSS (max over runs), wall (median of {a.repeat})")
        for name in ("SAM", "mermaid"):
            root, f = trees[name]
            size = f.stat().st_size / MIB
            fw, fm = runs([sys.executable, "-c", FLOOR, str(f)], env, a.repeat)
            print(f"  {name}: file {size:.1f} MiB; floor (read + orjson.loads): {fm:.0f} MiB, {fw:.2f} s")
            base = samctl + caps + ["--root", str(root), "search", "zzzz"]
            hit = base[:-1] + ["portland"]  # (found in the huge message: scored exactly, with a snippet)
            for label, argv, before in (
                ("index built", base, lambda: shutil.rmtree(cache, ignore_errors=True)),
                ("index warm", base, None),
                ("--no-index", base + ["--no-index"], None),
                ("hit, warm", hit, None),
                ("hit, --no-index", hit + ["--no-index"], None),
            ):
                w, m = runs(argv, env, a.repeat, before)
                print(
                    f"    {label:15s} {m:6.0f} MiB = {m / fm:4.2f}x floor = {m / max(size, 64):4.2f}x max(file, part);"
                    f" {w:6.2f} s = {w / fw:5.1f}x floor"
                )
        root, f = trees["many"]
        size = f.stat().st_size / MIB
        print(f"part 2: --exact portland over {a.messages:,} messages ({size:.0f} MiB), index warm")
        child(samctl + caps + ["--root", str(root), "search", "portland"], env)  # builds the index
        rg = shutil.which("rg")
        rw = None
        if rg:
            rw, _ = runs([rg, "-F", "-i", "-c", "portland", str(f)], env, a.repeat)
            print(f"  rg -F -i:            {rw:6.3f} s")
        else:
            print("  rg not found: no ratio (apt-get install ripgrep)")
        for label, extra in (("search --exact", []), ("search --exact -c", ["-c", MANY]), ("search (scored)", None)):
            argv = (
                samctl
                + caps
                + ["--root", str(root), "search"]
                + (["--exact"] if extra is not None else [])
                + (extra or [])
                + ["portland"]
            )
            w, m = runs(argv, env, a.repeat)
            print(f"  {label:20s} {w:6.3f} s" + (f" = {w / rw:4.1f}x rg" if rw else "") + f"; {m:.0f} MiB")
        # the search alone, in this process (no interpreter start-up, no imports)
        os.environ.update(SAMCTL_CACHE_DIR=str(cache))
        from samctl.search import dispatch as sx
        from samctl.stores import base as fbase
        from samctl.stores import open_store

        store = open_store(str(root), fbase.Caps.uniform(1 << 30))
        q = sx.SearchQuery(text="portland", exact=True)
        ts = []
        for i in range(a.repeat + 1):
            t = time.perf_counter()
            sx.search(store, q, [])
            if i:
                ts.append(time.perf_counter() - t)
        w = statistics.median(ts)
        print(f"  in-process --exact   {w:6.3f} s" + (f" = {w / rw:4.1f}x rg" if rw else ""))
    finally:
        shutil.rmtree(cache, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
