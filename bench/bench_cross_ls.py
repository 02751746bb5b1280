#!/usr/bin/env python3
"""Benchmark `samctl ls` across every store of a machine (issue #23) against each store listed alone.

    python bench/bench_cross_ls.py [--sam N] [--mermaid N] [--claude-code N] [--codex N] [--repeat R] [--out DIR]

Builds a synthetic home once into --out (SAM and mermaid by gen_archive.py; Claude Code and Codex
sessions as copies of the demo fixture's, each under a new id; the mermaid project named in samctl's
config file), then times warm `ls --format jsonl` (listing caches filled) with one `--root` per store,
and without `--root` (every store found).  Prints medians, the ratio of the cross-store run to the sum
of the single-store runs (the issue's measure: at most 2) and to the biggest single store.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
CC_ID = "0b7c9d2e-3f41-4a6b-8c9d-0e1f2a3b4c5d"
CC_FILE = REPO / "fixtures/demo/claude_code/projects/-home-ana-api" / f"{CC_ID}.jsonl"
CX_ID = "019c4a2e-7b1d-7c3e-9f20-1a2b3c4d5e6f"
CX_FILE = REPO / "fixtures/demo/codex/sessions/2026/02/10" / f"rollout-2026-02-10T08-30-01-{CX_ID}.jsonl"


def build(out: Path, sam: int, mermaid: int, cc: int, cx: int) -> Path:
    home = out / "home"
    base = home / "Library" / "Application Support"
    if not (base / "SAM").exists():
        subprocess.run(
            [
                sys.executable,
                str(HERE / "gen_archive.py"),
                "sam",
                str(out / "sam-gen"),
                "--conversations",
                str(sam),
                "--memories-per-conversation",
                "5",
                "--quiet",
            ],
            check=True,
        )
        base.mkdir(parents=True, exist_ok=True)
        os.rename(out / "sam-gen" / "SAM", base / "SAM")
    if not (out / "proj").exists():
        subprocess.run(
            [
                sys.executable,
                str(HERE / "gen_archive.py"),
                "mermaid",
                str(out / "proj"),
                "--conversations",
                str(mermaid),
                "--quiet",
            ],
            check=True,
        )
    text = CC_FILE.read_text()
    for i in range(cc):
        new = f"00000000-0000-4000-8000-{i + 1:012x}"
        p = home / ".claude" / "projects" / f"-home-bench-p{i % 50}" / f"{new}.jsonl"
        if not p.exists():
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_text(text.replace(CC_ID, new))
    text = CX_FILE.read_text()
    for i in range(cx):
        new = f"019c4a2e-{i >> 16 & 0xFFFF:04x}-7c3e-9f20-{i:012x}"
        p = (
            home
            / ".codex"
            / "sessions"
            / "2026"
            / "02"
            / f"{i % 28 + 1:02d}"
            / f"rollout-2026-02-10T08-30-01-{new}.jsonl"
        )
        if not p.exists():
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_text(text.replace(CX_ID, new))
    (home / ".config" / "samctl").mkdir(parents=True, exist_ok=True)
    (home / ".config" / "samctl" / "config.toml").write_text(f'roots = ["{out / "proj"}"]\n')
    return home


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sam", type=int, default=2000)
    ap.add_argument("--mermaid", type=int, default=20000)
    ap.add_argument("--claude-code", type=int, default=5000)
    ap.add_argument("--codex", type=int, default=5000)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--out", type=Path, default=Path("/tmp/samctl-bench-cross"))
    a = ap.parse_args()
    home = build(a.out, a.sam, a.mermaid, a.claude_code, a.codex)
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("SAMCTL_ROOT", "XDG_CONFIG_HOME", "CLAUDE_CONFIG_DIR", "CODEX_HOME", "LLM_USER_PATH")
    }
    env.update(HOME=str(home), SAMCTL_CACHE_DIR=str(a.out / "cache"))
    samctl = [sys.executable, "-m", "samctl"]

    def timed(args):
        def once():
            return subprocess.run([*samctl, *args, "ls", "--format", "jsonl"], env=env, cwd=a.out, capture_output=True)

        once()  # warm: page cache and samctl's listing caches
        times, r = [], None
        for _ in range(a.repeat):
            t = time.perf_counter()
            r = once()
            times.append(time.perf_counter() - t)
        return statistics.median(times), r.stdout.count(b"\n"), r.returncode

    roots = {
        "sam": home / "Library/Application Support/SAM",
        "mermaid": a.out / "proj",
        "claude-code": home / ".claude",
        "codex": home / ".codex",
    }
    singles = {name: timed(["--root", str(root)]) for name, root in roots.items()}
    for name, (t, n, rc) in singles.items():
        print(f"{name:>12}: {t:6.2f} s  {n:7,} rows  exit {rc}")
    t, n, rc = timed([])
    total = sum(x[0] for x in singles.values())
    print(f"{'all stores':>12}: {t:6.2f} s  {n:7,} rows  exit {rc}")
    print(
        f"ratio to the sum of the single stores: {t / total:.2f}; to the biggest alone: "
        f"{t / max(x[0] for x in singles.values()):.2f}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
