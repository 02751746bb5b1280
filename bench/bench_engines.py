#!/usr/bin/env python3
"""Issue #22, "the engine is chosen by measurement": SQLite FTS5 (and tantivy, where installed) against
samctl's own search engine, on the same rows.

    SAMCTL_CACHE_DIR=DIR samctl --root PATH index --update     # samctl's index, built once
    python bench/bench_engines.py --tree PATH --cache DIR [--limit-rows N] [--rounds 3]

The rows are the alive rows of samctl's index in DIR (``open_index(open_store(PATH))``; each segment's
``seg.text(i)`` where ``seg.alive[i]``), so every engine indexes exactly what samctl indexes.  Printed:

- the rows and their text in UTF-8 bytes (and the time to read them out of samctl's index);
- FTS5 (standard library ``sqlite3``, ``tokenize='porter unicode61 remove_diacritics 2'``, a temporary
  file, journal and sync off): build rate (inserts, then ``optimize``), and the database size against the
  text;
- tantivy, if ``import tantivy`` works (never a samctl dependency; install it into a venv by hand): the
  same, with a tokenizer like FTS5's (simple words, lowercase, ASCII folding, English stemmer), positions
  kept for phrases; otherwise one line saying it is not installed;
- per query of bench_search.py's fixed QUERIES, translated where the engine has an equivalent (plain
  words -> OR, ``+w`` -> AND, ``-w`` -> NOT, ``"a phrase"``, ``prefix*``; a query with a field filter is
  skipped and counted): the top 10 by BM25 (FTS5: ``SELECT rowid, bm25(t) FROM t WHERE t MATCH ? ORDER BY
  bm25(t) LIMIT 10``), timed against samctl's in-process search of the same text (``dispatch.search`` as
  bench_search.py calls it, ``-n 10``), in turns (samctl, FTS5, tantivy, query by query) so machine noise
  hits every engine alike; medians of ``--rounds`` runs after a warm-up run; p50/p95 and the ratio
  to samctl per category.

With ``--limit-rows N`` only the first N rows go into FTS5 and tantivy while samctl still searches its
whole index: a quick check that the script works, not a comparison.  Nothing passes or fails.
"""

from __future__ import annotations

import argparse
import os
import re
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from bench.bench_search import QUERIES, du, ms, pct, searcher  # noqa: E402

FILTER = re.compile(r"^[+-]?(role|in|title|store):", re.I)
TOKEN = re.compile(r'([+-]?)("([^"]*)"|\S+)')
FTS5_SCHEMA = "CREATE VIRTUAL TABLE t USING fts5(body, tokenize='porter unicode61 remove_diacritics 2')"
FTS5_QUERY = "SELECT rowid, bm25(t) FROM t WHERE t MATCH ? ORDER BY bm25(t) LIMIT 10"


# ---------------------------------------------------------------------------------------------
# The query language, as far as both engines share it (pure; tests/test_bench_engines.py)


def split_query(q: str) -> dict | None:
    """``{"should", "must", "not"}``: lists of (kind, text), kind ``word``/``phrase``/``prefix``; or None
    when the query has no equivalent (a field filter, nothing positive to match)."""
    parts = {"should": [], "must": [], "not": []}
    for m in TOKEN.finditer(q):
        sign, whole, phrase = m.group(1), m.group(2), m.group(3)
        if FILTER.match(whole):
            return None
        if phrase is not None:
            item = ("phrase", phrase)
        elif whole.endswith("*") and len(whole) > 1:
            item = ("prefix", whole.rstrip("*"))
        else:
            item = ("word", whole)
        if not item[1].strip():
            continue
        parts["must" if sign == "+" else "not" if sign == "-" else "should"].append(item)
    if not parts["should"] and not parts["must"]:
        return None
    return parts


def _fts5_item(kind: str, text: str) -> str:
    # always a quoted string: FTS5 tokenizes it as the column is tokenized (src/main.rs -> a phrase),
    # and nothing in it is read as FTS5 syntax
    s = '"' + text.replace('"', '""') + '"'
    return s + "*" if kind == "prefix" else s


def to_fts5(parts: dict) -> str:
    """The FTS5 MATCH expression of ``split_query``'s parts.  FTS5 has no optional clause beside a required
    one, so ``+a b`` becomes ``a AND (a OR b)``: the rows of ``a``, with ``b`` weighing in bm25()."""
    must = [_fts5_item(*x) for x in parts["must"]]
    should = [_fts5_item(*x) for x in parts["should"]]
    if must:
        expr = " AND ".join(must)
        if should:
            expr += " AND (" + " OR ".join(must + should) + ")"
    else:
        expr = " OR ".join(should)
    for x in parts["not"]:
        expr = f"({expr}) NOT {_fts5_item(*x)}"
    return expr


def to_tantivy(parts: dict, index, schema):
    """The tantivy Query of ``split_query``'s parts: Must / Should / MustNot clauses, words and phrases
    through tantivy's own parser (tokenized like the field), a prefix as a term regex (constant score)."""
    import tantivy  # (lazy: optional, only when installed)

    def one(kind: str, text: str):
        if kind == "prefix":
            return tantivy.Query.regex_query(schema, "body", re.escape(text.lower()) + ".*")
        return index.parse_query('"' + text.replace('"', " ") + '"', ["body"])

    occur = {"must": tantivy.Occur.Must, "should": tantivy.Occur.Should, "not": tantivy.Occur.MustNot}
    return tantivy.Query.boolean_query([(occur[k], one(*x)) for k in ("must", "should", "not") for x in parts[k]])


# ---------------------------------------------------------------------------------------------
# Rows, builds


def read_rows(tree: str, limit: int | None) -> list[str]:
    """The text of every alive row of samctl's index of ``tree``, in index order (the first ``limit``)."""
    from samctl.search.index import open_index
    from samctl.stores import open_store

    idx = open_index(open_store(tree))
    out: list[str] = []
    for seg in idx.segments:
        for i in seg.alive.nonzero()[0].tolist():
            out.append(seg.text(i))
            if limit and len(out) >= limit:
                return out
    return out


def build_fts5(path: Path, texts: list[str]) -> tuple[sqlite3.Connection, float, float]:
    """(connection, seconds inserting, seconds of the final ``optimize``)."""
    con = sqlite3.connect(path)
    con.execute("PRAGMA journal_mode=OFF")
    con.execute("PRAGMA synchronous=OFF")
    con.execute(FTS5_SCHEMA)
    t = time.perf_counter()
    step = 20_000
    for a in range(0, len(texts), step):
        con.executemany(
            "INSERT INTO t(rowid, body) VALUES (?, ?)", ((a + i, s) for i, s in enumerate(texts[a : a + step]))
        )
        con.commit()
    ins = time.perf_counter() - t
    t = time.perf_counter()
    con.execute("INSERT INTO t(t) VALUES ('optimize')")
    con.commit()
    return con, ins, time.perf_counter() - t


def build_tantivy(path: Path, texts: list[str], threads: int):
    """(index, schema, seconds) or None when tantivy is not installed."""
    try:
        import tantivy  # (lazy: optional, only when installed)
    except ImportError:
        return None
    sb = tantivy.SchemaBuilder()
    sb.add_text_field("body", stored=False, tokenizer_name="fold_stem", index_option="position")
    schema = sb.build()
    index = tantivy.Index(schema, path=str(path))
    index.register_tokenizer(
        "fold_stem",
        tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.simple())
        .filter(tantivy.Filter.lowercase())
        .filter(tantivy.Filter.ascii_fold())
        .filter(tantivy.Filter.stemmer("english"))
        .build(),
    )
    t = time.perf_counter()
    w = index.writer(heap_size=256_000_000, num_threads=threads)
    for s in texts:
        w.add_document(tantivy.Document(body=s))
    w.commit()
    w.wait_merging_threads()
    index.reload()
    return index, schema, time.perf_counter() - t


# ---------------------------------------------------------------------------------------------


def rate(rows: int, s: float) -> str:
    return f"{rows / s:,.0f} rows/s" if s > 0 else "-"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tree", required=True, help="the store's --root")
    ap.add_argument("--cache", required=True, help="SAMCTL_CACHE_DIR holding samctl's up-to-date index")
    ap.add_argument("--limit-rows", type=int, default=None, help="index only the first N rows (a quick check)")
    ap.add_argument("--rounds", type=int, default=3, help="timed runs per query and engine (median)")
    ap.add_argument("--tantivy-threads", type=int, default=2)
    ap.add_argument("--tmp", default=None, help="where the FTS5 and tantivy files go (default: the system's)")
    a = ap.parse_args(argv)
    # samctl uses the index as it is: no re-stat of every source file within 600 s
    os.environ.update(SAMCTL_CACHE_DIR=a.cache, SAMCTL_INDEX_RECHECK="600", SAMCTL_ASSUME_SAM_RUNNING="0")
    t_all = time.perf_counter()

    t = time.perf_counter()
    texts = read_rows(a.tree, a.limit_rows)
    nbytes = sum(len(s.encode("utf-8", "surrogatepass")) for s in texts)
    print(
        f"rows: {len(texts):,} ({nbytes / 2**20:,.1f} MiB of UTF-8 text), read out of samctl's index "
        f"in {time.perf_counter() - t:.1f} s"
    )
    if a.limit_rows:
        print(
            f"  NOTE --limit-rows {a.limit_rows:,}: FTS5/tantivy index these rows only, samctl searches its "
            "whole index; the query times are not comparable"
        )
    print(f"sqlite {sqlite3.sqlite_version}")

    with tempfile.TemporaryDirectory(prefix="bench-engines-", dir=a.tmp) as tmp:
        con, ins, opt = build_fts5(Path(tmp) / "fts5.db", texts)
        size = os.path.getsize(Path(tmp) / "fts5.db")
        print(
            f"FTS5 build: {ins + opt:.1f} s, {rate(len(texts), ins + opt)} (inserts {ins:.1f} s = "
            f"{rate(len(texts), ins)}, optimize {opt:.1f} s); database {size / 2**20:,.1f} MiB = "
            f"{size / max(nbytes, 1):.2f}x the text"
        )

        os.mkdir(Path(tmp) / "tantivy")
        tv = build_tantivy(Path(tmp) / "tantivy", texts, a.tantivy_threads)
        if tv:
            import tantivy  # (lazy: optional, only when installed)

            tsize = du(Path(tmp) / "tantivy")
            print(
                f"tantivy {getattr(tantivy, '__version__', '?').replace('tantivy ', '')}, build ({a.tantivy_threads} threads): "
                f"{tv[2]:.1f} s, {rate(len(texts), tv[2])}; index {tsize / 2**20:,.1f} MiB = "
                f"{tsize / max(nbytes, 1):.2f}x the text"
            )
            tsearcher = tv[0].searcher()
        else:
            print("tantivy: not installed (`pip install tantivy` into this venv to measure it); skipped")
        del texts

        # the queries each engine can run; a filter query is counted, never timed
        plan, skipped = [], []
        for cat, q in QUERIES:
            parts = split_query(q)
            if parts is None:
                skipped.append(q)
                continue
            fq = to_fts5(parts)
            tq = to_tantivy(parts, tv[0], tv[1]) if tv else None
            plan.append(
                (
                    cat,
                    q,
                    searcher(Path(a.tree), q, limit=10),
                    lambda fq=fq: con.execute(FTS5_QUERY, (fq,)).fetchall(),
                    (lambda tq=tq: tsearcher.search(tq, 10).hits) if tv else None,
                )
            )
        print(
            f"queries: {len(plan)} of {len(QUERIES)} timed; {len(skipped)} skipped (field filters: no FTS5 equivalent)"
        )

        engines = ["samctl", "fts5"] + (["tantivy"] if tv else [])
        times = {e: {q: [] for _, q, *_ in plan} for e in engines}
        errors: dict = {}
        for r in range(a.rounds + 1):  # round 0 warms up (page cache, samctl's imports) and is not kept
            print(
                f"[bench_engines] query round {r} of {a.rounds} ({time.perf_counter() - t_all:.0f} s so far)",
                file=sys.stderr,
                flush=True,
            )
            for cat, q, *fns in plan:
                for e, fn in zip(engines, fns):
                    if (e, q) in errors:
                        continue
                    t = time.perf_counter()
                    try:
                        fn()
                    except Exception as exc:  # noqa: BLE001 - an engine rejecting a query is a result
                        errors[(e, q)] = f"{type(exc).__name__}: {str(exc)[:100]}"
                        continue
                    if r:
                        times[e][q].append(time.perf_counter() - t)
        med = {e: {q: statistics.median(ts) for q, ts in times[e].items() if ts} for e in engines}
        # how many rows each query matches (FTS5 ranks every one of them); untimed.  FTS5's and tantivy's
        # counts differ where their tokenizers do (Porter vs Snowball stems, a prefix over stems)
        counts = {e: {} for e in engines[1:]}
        for cat, q, *_ in plan:
            try:
                counts["fts5"][q] = con.execute(
                    "SELECT count(*) FROM t WHERE t MATCH ?", (to_fts5(split_query(q)),)
                ).fetchone()[0]
                if tv:
                    counts["tantivy"][q] = tsearcher.search(
                        to_tantivy(split_query(q), tv[0], tv[1]), 1, count=True
                    ).count
            except Exception:  # noqa: BLE001 - already reported as failed
                pass
        con.close()

    print(f"warm query, top 10, median of {a.rounds} (in turns):")
    for e in engines:
        xs = list(med[e].values())
        if xs:
            print(
                f"  {e:<8} p50 {ms(pct(xs, 50)):>10}  p95 {ms(pct(xs, 95)):>10}  max {ms(max(xs)):>10}  "
                f"({len(xs)} queries)"
            )
    head = f"  {'category':<12} {'n':>3}  " + "  ".join(f"{e + ' p50':>12} {e + ' p95':>12}" for e in engines)
    print(head + "  " + "  ".join(f"{'samctl/' + e:>14}" for e in engines[1:]))
    for cat in dict.fromkeys(c for c, *_ in plan):
        qs = [q for c, q, *_ in plan if c == cat]
        cols, ratios = [], []
        for e in engines:
            xs = [med[e][q] for q in qs if q in med[e]]
            cols.append(f"{ms(pct(xs, 50)):>12} {ms(pct(xs, 95)):>12}" if xs else f"{'-':>12} {'-':>12}")
        for e in engines[1:]:
            rs = [med["samctl"][q] / med[e][q] for q in qs if q in med["samctl"] and med[e].get(q)]
            ratios.append(f"{statistics.median(rs):>13,.1f}x" if rs else f"{'-':>14}")
        print(f"  {cat:<12} {len(qs):>3}  " + "  ".join(cols) + "  " + "  ".join(ratios))
    print("  (samctl/ENGINE: median over the category's queries of samctl's time / the engine's; > 1: samctl slower)")
    for e in engines:
        slow = sorted(med[e], key=med[e].get, reverse=True)[:4]
        print(f"  slowest {e}: " + "; ".join(f"{q!r} {ms(med[e][q])}" for q in slow))
    for e, cs in counts.items():
        print(
            f"  rows matched, {e}: "
            + ", ".join(
                f"{cat} median {statistics.median(xs):,.0f}"
                for cat in dict.fromkeys(c for c, *_ in plan)
                if (xs := [cs[q] for c, q, *_ in plan if c == cat and q in cs])
            )
        )
    if tv:
        same = sum(counts["fts5"].get(q) == counts["tantivy"].get(q) for _, q, *_ in plan)
        print(f"  FTS5 and tantivy match the same number of rows for {same} of {len(plan)} queries")
    if errors:
        print(f"  {len(errors)} failed (not timed):")
        for (e, q), why in errors.items():
            print(f"    {e} {q!r}: {why}")
    print(f"skipped (filters): {', '.join(repr(q) for q in skipped)}")
    print(f"total {time.perf_counter() - t_all:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
