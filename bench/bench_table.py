#!/usr/bin/env python3
"""Time samctl's own table layout against tabulate, which it replaced (docs/ARCHITECTURE.md).

    pip install tabulate   # into your venv only; samctl does not depend on it
    python bench/bench_table.py [--rows 20000] [--repeat 5]

Both lay out the same ``ls``-like rows (a UUID, a date, a message count, a title):
``tabulate.tabulate(rows, headers, disable_numparse=True)`` (its default "simple" format) and
``samctl.cli.common.table(rows, headers)``.  Prints medians over the repeats and the ratio.
"""

from __future__ import annotations

import argparse
import random
import sys
import uuid
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from timing import medians  # noqa: E402 - bench/ is on the path just above

from samctl.cli.common import table  # noqa: E402

WORDS = "plan the release fix a bug in the parser write docs about search memory attic store".split()


def make_rows(n: int) -> list[list]:
    """``n`` rows shaped like ``samctl ls``: id, updated, messages, title (seeded, so runs agree)."""
    rnd = random.Random(1)
    return [
        [
            str(uuid.UUID(int=rnd.getrandbits(128))),
            f"2026-{rnd.randint(1, 12):02d}-{rnd.randint(1, 28):02d} {rnd.randint(0, 23):02d}:{rnd.randint(0, 59):02d}",
            rnd.randint(1, 500),
            " ".join(rnd.choices(WORDS, k=rnd.randint(2, 8))),
        ]
        for _ in range(n)
    ]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=20000)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    try:
        import tabulate
    except ImportError:
        sys.exit("bench_table: pip install tabulate first (into your venv; samctl does not need it)")
    rows, headers = make_rows(args.rows), ["ID", "UPDATED", "MESSAGES", "TITLE"]
    ours_wall, ours_cpu = medians(lambda: table(rows, headers), args.repeat)
    tab_wall, tab_cpu = medians(lambda: tabulate.tabulate(rows, headers, disable_numparse=True), args.repeat)
    print(f"{args.rows} rows, medians of {args.repeat}, tabulate {tabulate.__version__}")
    print(f"samctl table:  wall {ours_wall:.3f}s  cpu {ours_cpu:.3f}s")
    print(f"tabulate:      wall {tab_wall:.3f}s  cpu {tab_cpu:.3f}s")
    print(f"ratio tabulate/samctl: wall {tab_wall / ours_wall:.1f}x  cpu {tab_cpu / ours_cpu:.1f}x")


if __name__ == "__main__":
    main()
