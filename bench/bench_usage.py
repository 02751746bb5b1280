"""samctl usage against ccusage 17.2.1 on the same Claude Code tree, whole process each (issue #36).

    .venv/bin/python bench/bench_usage.py --sessions 10000 [--ccusage PATH] [--out /tmp/bench-usage]

Builds ``--out``/claude (``gen_archive.py claude-code``) once, then times, with TZ=UTC:
1. ccusage ``daily --json --offline`` (CLAUDE_CONFIG_DIR = the tree), warm: after one run, median of ``--repeat``;
2. ``samctl --root TREE usage --format json``, warm (its cache filled by the run before), median of ``--repeat``;
3. after appending one response to 1% of the sessions: samctl's first report (it reads only those files),
   and ccusage's (it reads everything again).
Checks that both say the same tokens per day, and prints the ratios.  ``--ccusage``: the ccusage program
(default: ``ccusage`` on PATH, else ``npx --yes ccusage@17.2.1``).  samctl's cache is a fresh folder in --out.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent


def timed(cmd, env) -> tuple[float, bytes]:
    t = time.perf_counter()
    out = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, check=True).stdout
    return time.perf_counter() - t, out


def days(doc: dict, cc: bool) -> dict:
    if cc:
        return {
            d["date"]: (d["inputTokens"], d["outputTokens"], d["cacheCreationTokens"], d["cacheReadTokens"])
            for d in doc["daily"]
        }
    return {
        d["day"]: (d["input_tokens"], d["output_tokens"], d["cache_creation_tokens"], d["cache_read_tokens"])
        for d in doc["rows"]
    }


def change(tree: Path, share: float) -> int:
    """Append one response to ``share`` of the session files (every 1/share-th by name); how many."""
    files = sorted(tree.glob("projects/*/*.jsonl"))
    step = max(1, round(1 / share))
    for n, f in enumerate(files[::step]):
        line = {
            "type": "assistant",
            "timestamp": "2026-03-20T12:00:00.000Z",
            "cwd": "/home/bench/changed",
            "sessionId": f.stem,
            "requestId": f"req_bench{n}",
            "message": {
                "id": f"msg_bench{n}",
                "type": "message",
                "role": "assistant",
                "model": "claude-sonnet-4-5-20250929",
                "content": [{"type": "text", "text": "more"}],
                "usage": {"input_tokens": 10, "output_tokens": 20, "cache_read_input_tokens": 1000},
            },
        }
        with open(f, "a") as out:
            out.write(json.dumps(line) + "\n")
    return len(files[::step])


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--sessions", type=int, default=10000)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--out", default="/tmp/bench-usage")
    p.add_argument("--ccusage", default=None)
    a = p.parse_args()
    out = Path(a.out)
    tree = out / f"claude-{a.sessions}"
    if not tree.exists():
        subprocess.run(
            [
                sys.executable,
                str(HERE / "gen_archive.py"),
                "claude-code",
                str(tree),
                "--conversations",
                str(a.sessions),
                "--quiet",
            ],
            check=True,
        )
    work = out / "work"
    if work.exists():
        shutil.rmtree(work)
    shutil.copytree(tree, work / "claude")  # (the 1% change is made to a copy; the generated tree stays)
    root = work / "claude"
    old = time.time() - 3600  # a history's files are not being written right now
    for f in root.rglob("*.jsonl"):
        os.utime(f, (old, old))
    size = sum(f.stat().st_size for f in root.rglob("*.jsonl"))
    cc = (
        [a.ccusage]
        if a.ccusage
        else ([shutil.which("ccusage")] if shutil.which("ccusage") else ["npx", "--yes", "ccusage@17.2.1"])
    )
    env = dict(os.environ, TZ="UTC", CLAUDE_CONFIG_DIR=str(root), SAMCTL_CACHE_DIR=str(work / "cache"))
    cc_cmd = cc + ["daily", "--json", "--offline"]
    sm_cmd = [str(REPO / ".venv" / "bin" / "samctl"), "--root", str(root), "usage", "--format", "json"]
    print(f"tree: {a.sessions} sessions, {size / 2**20:.0f} MiB of .jsonl; ccusage: {' '.join(cc_cmd)}")

    timed(cc_cmd, env)  # warm-up: page cache, node's compile cache
    cc_runs = [timed(cc_cmd, env) for _ in range(a.repeat)]
    cold, sm_out = timed(sm_cmd, env)  # fills samctl's cache
    sm_runs = [timed(sm_cmd, env) for _ in range(a.repeat)]
    same = days(json.loads(cc_runs[-1][1]), True) == days(json.loads(sm_runs[-1][1]), False)
    cc_w, sm_w = statistics.median(t for t, _ in cc_runs), statistics.median(t for t, _ in sm_runs)
    print(
        f"warm:  ccusage {cc_w:.2f} s, samctl {sm_w:.3f} s (first samctl run, cache empty: {cold:.2f} s): "
        f"{cc_w / sm_w:.1f}x; tokens per day equal: {same}"
    )

    n = change(root, 0.01)
    sm_changed, sm_out = timed(sm_cmd, env)
    cc_changed, cc_out = timed(cc_cmd, env)
    same = days(json.loads(cc_out), True) == days(json.loads(sm_out), False)
    print(
        f"1% changed ({n} sessions): ccusage {cc_changed:.2f} s, samctl {sm_changed:.3f} s: "
        f"{cc_changed / sm_changed:.1f}x; tokens per day equal: {same}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
