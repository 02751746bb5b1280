#!/usr/bin/env python3
"""Benchmark `samctl search` across every store of a machine (issue #23) against each store searched alone.

    python bench/bench_cross_search.py [--sam N] [--mermaid N] [--claude-code N] [--codex N]
                                       [--rounds R] [--repeat R] [--out DIR] [--cache DIR] [--no-cli]

The machine is bench_cross_ls.py's synthetic home (built once into --out by its ``build``, reused when
there).  The stores are found as `samctl search` without --root finds them (``core.scope.Scope``).
Each store's index is brought up to date once (a child process per store: its time and peak memory are
printed, never counted as a query).  Then issue #22's measures, over the union and each store alone:

- warm query in-process over bench_search.py's fixed 100 QUERIES (its ``searcher``: the stores found,
  or opened, and ``dispatch.search`` each time, as a search does): p50/p95/max of the per-query medians,
  per category; per query (median over queries) the union's time / the biggest store's (the one that
  takes longest alone) and / the sum of the single stores'.  In each round the union's 100 queries run,
  then each store's (``--order target``, the default: a process searches one set of stores again and
  again, as ``browse`` does, and keeps the arrays of the last two it searched); ``--order query`` runs
  each query over the union and then over each store before the next query, so a busy machine slows
  them all alike, but every search then finds the arrays of another set of stores;
- the whole `samctl search` process (no --root) for every tenth query: median wall and peak RSS, beside a
  bare `python -c pass` (bench_search's ``launch``).

A query that errors is printed, never a crash.  Nothing passes or fails: a benchmark, not a test.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from bench import bench_cross_ls as bx  # noqa: E402
from bench import bench_search as bs  # noqa: E402

# What would point samctl elsewhere than the synthetic home (bench_cross_ls's list).
SCRUB = ("SAMCTL_ROOT", "XDG_CONFIG_HOME", "CLAUDE_CONFIG_DIR", "CODEX_HOME", "LLM_USER_PATH")

REFRESH = (
    "import json, resource, sys, time\n"
    "from samctl.stores import open_store\n"
    "from samctl.search import index as ix\n"
    "t = time.perf_counter()\n"
    "idx = ix.refresh(open_store(sys.argv[1]), [])\n"
    "print(json.dumps({'seconds': time.perf_counter() - t, 'rows': getattr(idx, 'rows', None)}))\n"
)


def find_stores():
    """The stores `samctl search` without --root covers, found by the CLI's own ``Scope``."""
    from samctl.core.scope import READ, Scope
    from samctl.stores.base import Caps

    return Scope(caps=Caps()).declare("search", READ).stores()


def union_opener(text: str):
    """A function returning the stores a `samctl search TEXT` searches: every store found, narrowed to
    the query's store:NAME as the CLI does (cli/search.py) before ``dispatch.search``."""
    from samctl.search.query import parse
    from samctl.stores import STORES

    try:
        names = parse(text, stores=tuple(STORES)).stores
    except Exception:  # noqa: BLE001 - a malformed query: the search itself fails and is counted
        names = None
    return lambda: [s for s in find_stores() if not names or s.name in names]


def build(roots: dict, env: dict) -> None:
    """Each store's index brought up to date, in a child process (untimed as a query)."""
    import json

    for name, root in roots.items():
        r = bs.launch([sys.executable, "-c", REFRESH, root], env, keep_stdout=True, sample=True)
        if r["exit"] != 0:
            print(f"  {name:>12}: index refresh FAILED (exit {r['exit']}): {r['stdout'][-300:]}")
            continue
        res = json.loads(r["stdout"].splitlines()[-1])
        rows = f"{res['rows']:,} rows" if res.get("rows") is not None else "rows n/a"
        print(
            f"  {name:>12}: index brought up to date in {res['seconds']:,.1f} s ({rows}); peak RSS of the "
            f"process and its workers {r['rss']:,.0f} MiB"
        )


def measure_queries(roots: dict, rounds: int, order: str = "target") -> dict:
    """{target: {query: median seconds}} for "union" and each store's name; errors printed.  ``order``:
    "target" (each target's queries together, in each round) or "query" (each query over every target)."""
    targets = {"union": None, **roots}
    fns = {}
    for _, q in bs.QUERIES:
        for t, root in targets.items():
            fns[t, q] = bs.searcher(union_opener(q) if root is None else Path(root), q, limit=10)
    errors, ok = {}, []
    t0 = time.perf_counter()
    for key, fn in fns.items():  # warm-up pass: indexes checked, page cache warm, syntax checked
        why = bs.try_once(fn)
        if why:
            errors[key] = why
        else:
            ok.append(key)
    times = {key: [] for key in ok}
    if order == "target":
        ok.sort(key=lambda key: list(targets).index(key[0]))  # (stable: the queries stay in their order)
    for i in range(rounds):
        bs.progress(f"query pass {i + 1} of {rounds + 1} ({time.perf_counter() - t0:.0f} s so far)")
        for key in ok:
            t = time.perf_counter()
            fns[key]()
            times[key].append(time.perf_counter() - t)
    med = {t: {} for t in targets}
    for (t, q), ts in times.items():
        med[t][q] = statistics.median(ts)
    cats = list(dict.fromkeys(c for c, _ in bs.QUERIES))
    how = "each target in turn" if order == "target" else "each query over every target"
    print(
        f"\nwarm query in-process ({how}), median of {rounds} rounds each (goals of issue #22: p50 <= "
        f"{bs.ms(bs.GOALS['p50'])}, p95 <= {bs.ms(bs.GOALS['p95'])})"
    )
    print(f"  {'':<12} {'n':>4} {'p50':>11} {'p95':>11} {'max':>11}")
    for t, m in med.items():
        if m:
            xs = list(m.values())
            print(
                f"  {t:<12} {len(xs):>4} {bs.ms(bs.pct(xs, 50)):>11} {bs.ms(bs.pct(xs, 95)):>11} {bs.ms(max(xs)):>11}"
            )
    print("  per category, p50 (max):")
    print("  " + f"{'':<12}" + "".join(f"{t:>22}" for t in targets))
    for c in cats:
        row = []
        for t in targets:
            xs = [med[t][q] for c_, q in bs.QUERIES if c_ == c and q in med[t]]
            row.append(f"{bs.ms(bs.pct(xs, 50))} ({bs.ms(max(xs))})" if xs else "n/a")
        print("  " + f"{c:<12}" + "".join(f"{x:>22}" for x in row))
    both = [q for _, q in bs.QUERIES if q in med["union"] and all(q in med[t] for t in roots)]
    if both and roots:
        biggest = max(roots, key=lambda t: sum(med[t][q] for q in both))
        r_big = [med["union"][q] / med[biggest][q] for q in both]
        r_sum = [med["union"][q] / sum(med[t][q] for t in roots) for q in both]
        print(
            f"  union / {biggest} alone (the slowest store), per query: median {statistics.median(r_big):.2f}x "
            f"(min {min(r_big):.2f}, max {max(r_big):.2f}); union / sum of the {len(roots)} stores: median "
            f"{statistics.median(r_sum):.2f}x (min {min(r_sum):.2f}, max {max(r_sum):.2f}); {len(both)} queries"
        )
        slow = sorted(both, key=med["union"].get, reverse=True)[:3]
        print("  slowest over the union: " + "; ".join(f"{q!r} {bs.ms(med['union'][q])}" for q in slow))
    if errors:
        print(f"  {len(errors)} searches failed (not timed):")
        for (t, q), why in errors.items():
            print(f"    {t}: {q!r}: {why}")
    return med


def measure_cli(env: dict, cwd: str, med: dict, repeat: int) -> None:
    """The whole `samctl search` process over the union (no --root) for bench_search's CLI_SAMPLE."""
    old = os.getcwd()
    os.chdir(cwd)  # (launch starts its child here: no ./.mermaid of ours is found)
    try:
        walls, peaks, codes, py = bs.cli_runs(bs.samctl_argv() + ["search"], env, repeat, sample=True)
    finally:
        os.chdir(old)
    inproc = [med["union"][q] for _, q in bs.CLI_SAMPLE if q in med.get("union", {})]
    print()
    bs.print_cli(" over every store (no --root)", walls, peaks, codes, py, inproc, "")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sam", type=int, default=2000)
    ap.add_argument("--mermaid", type=int, default=20000)
    ap.add_argument("--claude-code", type=int, default=5000)
    ap.add_argument("--codex", type=int, default=5000)
    ap.add_argument("--rounds", type=int, default=3, help="timed passes over the 100 queries (default 3)")
    ap.add_argument(
        "--order",
        choices=("target", "query"),
        default="target",
        help="each target's queries together (default), or each query over every target in turn",
    )
    ap.add_argument("--repeat", type=int, default=3, help="runs of each whole-process query (default 3)")
    ap.add_argument("--out", type=Path, default=Path("/tmp/samctl-bench-cross"), help="the machine (bench_cross_ls's)")
    ap.add_argument(
        "--cache",
        type=Path,
        default=None,
        help="SAMCTL_CACHE_DIR, where the indexes go (default: OUT/cache, bench_cross_ls's)",
    )
    ap.add_argument("--no-cli", action="store_true", help="skip the whole-process timings")
    a = ap.parse_args(argv)
    out = a.out.resolve()
    home = bx.build(out, a.sam, a.mermaid, a.claude_code, a.codex)
    for k in SCRUB:
        os.environ.pop(k, None)
    os.environ.update(
        HOME=str(home), SAMCTL_CACHE_DIR=str((a.cache or out / "cache").resolve()), SAMCTL_ASSUME_SAM_RUNNING="0"
    )
    env = dict(os.environ)
    os.chdir(out)  # (as bench_cross_ls: the ./.mermaid a search also looks for is not the caller's)
    t0 = time.perf_counter()
    stores = find_stores()
    roots = {
        s.name if [x.name for x in stores].count(s.name) == 1 else f"{s.name}:{i}": os.path.abspath(s.conv_dir)
        for i, s in enumerate(stores)
    }
    print(
        f"samctl search across stores (issue #23): {os.cpu_count()} CPUs, load average "
        f"{' '.join(f'{x:.1f}' for x in os.getloadavg())}; {len(stores)} stores found under HOME={home}: "
        + ", ".join(roots)
    )
    print("indexes (once; not a query):")
    build(roots, env)
    med = measure_queries(roots, a.rounds, a.order)
    if not a.no_cli:
        measure_cli(env, str(out), med, a.repeat)
    print(
        f"\n(whole run {time.perf_counter() - t0:,.0f} s; load average now "
        f"{' '.join(f'{x:.1f}' for x in os.getloadavg())})"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
