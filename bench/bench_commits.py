"""Two commits of samctl on the same archives, alternating: did a change move the everyday commands?

usage: python bench/bench_commits.py OLD NEW [--mermaid N] [--sam N] [--repeat 5] [--work DIR]

Each commit is checked out (``git worktree``) into its own venv under ``--work``; the archives are
generated once (``gen_archive``). Then, for each command, OLD and NEW run alternately ``--repeat``
times each (warm: one unmeasured run first), and the medians and NEW/OLD ratios are printed.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

COMMANDS = [
    ("mermaid", ["ls"]),
    ("mermaid", ["ls", "--title", "budget", "--format", "json"]),
    ("mermaid", ["search", "budget"]),
    ("mermaid", ["search", "--exact", "portland"]),
    ("mermaid", ["check"]),
    ("mermaid", ["stats"]),
    ("sam", ["ls"]),
    ("sam", ["search", "weekend trip", "--in", "memories"]),
    ("sam", ["check"]),
]


def checkout(commit: str, work: Path) -> Path:
    dest = work / commit
    if not dest.exists():
        subprocess.run(
            ["git", "-C", str(REPO), "worktree", "add", "--detach", str(dest), commit],
            check=True,
            stdout=subprocess.DEVNULL,
        )
        subprocess.run([sys.executable, "-m", "venv", str(dest / ".venv")], check=True)
        subprocess.run([str(dest / ".venv/bin/pip"), "install", "--quiet", "-e", str(dest)], check=True)
    return dest / ".venv/bin/samctl"


def timed(exe: Path, root: Path, args: list, cache: Path) -> float:
    env = dict(os.environ, SAMCTL_CACHE_DIR=str(cache), SAMCTL_ASSUME_SAM_RUNNING="0")
    t = time.perf_counter()
    subprocess.run(
        [str(exe), "--root", str(root), *args], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    return time.perf_counter() - t


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("old")
    ap.add_argument("new")
    ap.add_argument("--mermaid", type=int, default=5000)
    ap.add_argument("--sam", type=int, default=500)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--work", default="/tmp/samctl-bench-commits")
    a = ap.parse_args()
    work = Path(a.work)
    work.mkdir(parents=True, exist_ok=True)
    from bench.gen_archive import make_mermaid, make_sam

    roots = {"mermaid": work / f"m{a.mermaid}", "sam": work / f"s{a.sam}"}
    if not roots["mermaid"].exists():
        make_mermaid(roots["mermaid"], a.mermaid, progress=False)
    if not roots["sam"].exists():
        make_sam(roots["sam"], a.sam, memories_per_conversation=20, progress=False)
    exes = {c: checkout(c, work) for c in (a.old, a.new)}
    caches = {c: work / f"cache-{c}" for c in exes}
    print(f"{'command':48} {'old (s)':>9} {'new (s)':>9} {'new/old':>8}")
    ratios = []
    for store, args in COMMANDS:
        root = roots[store]
        got: dict = {c: [] for c in exes}
        for c in exes:  # warm: caches and index built, files in the page cache
            timed(exes[c], root, args, caches[c])
        for _ in range(a.repeat):
            for c in exes:
                got[c].append(timed(exes[c], root, args, caches[c]))
        old, new = statistics.median(got[a.old]), statistics.median(got[a.new])
        ratios.append(new / old)
        print(f"{store + ' ' + ' '.join(args):48} {old:9.3f} {new:9.3f} {new / old:8.2f}")
    print(f"median ratio new/old: {statistics.median(ratios):.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
