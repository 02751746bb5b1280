#!/usr/bin/env python3
"""Issue #22's speed and size measures of `samctl search`, with baselines measured in the same run.

    python bench/bench_search.py [--conversations 100000] [--profile 12] [--profile 40] [--sam]
                                 [--rounds 3] [--repeat 3] [--out bench/out]

Trees are generated once into --out by gen_archive.py and reused: mermaid ``--conversations`` sessions of
``--profile`` messages on average (default 100,000 x 12, about 1.2 M messages; ``--profile 40`` about
4 M), and with ``--sam`` a SAM tree of ``--sam-conversations`` conversations x ``--memories`` memories
(default 10,000 x 100 = 1 M memories).  For each tree it prints:

- corpus: rows (what search indexes, read through the Store's ``search_sources``/``source_rows``) and
  their text in UTF-8 bytes; the same pass builds the floor below (cached beside the tree);
- full build: ``samctl.search.index.refresh(store, [], rebuild=True)`` in a child process; messages/s
  (goal >= 25,000), then a second build for the peak memory of the child and all its workers (sampled
  from /proc every 20 ms, which slows the build it samples, so it is not the timed one:
  RSS summed, and PSS summed, which counts a page shared by several processes once; plus the largest
  single process's ``ru_maxrss``; goal <= 500 MiB), index size on disk against the text (goal <= 2x);
  baseline: the read floor, every snapshot read and ``orjson.loads``-ed in one process;
- warm query in-process (``open_store`` + ``dispatch.search``, index up to date, page cache warm) over
  the fixed list of 100 QUERIES below: p50 and p95 of the per-query medians (goals 50 ms / 250 ms), by
  category, against the floor: a plain numpy BM25 (lowercase ``\\w+``, k1 1.2, b 0.75) over postings
  of the query terms built in this run, timed in turns with samctl.  A query the engine rejects is
  counted and printed as an error, never a crash;
- the whole ``samctl search`` process (start-up included) for every tenth query: median wall and peak
  RSS, beside the in-process time of the same queries and a bare ``python -c pass``;
- ``--exact`` (whole process) against ``rg -F -i -c`` over the same snapshots (``*.json``), warm and,
  where /proc/sys/vm/drop_caches is writable, cold;
- refresh after editing 1% of the conversations (a word inserted in the first message, mtime set 10 s
  back; a different 1% each round; the files are put back byte for byte at the end): median time against
  the full build (goal <= 5%) and against the floor of stat-ing every file;
- with ``--refreshed N``: the warm queries again over the index refreshed N times, a different 1% of the
  conversations edited before each (dead rows and small segments, as a long-used index has them).

Only stable entry points are used (``open_store``, ``dispatch.search``, ``SearchQuery``, ``index.refresh``,
the CLI); a field or function the engine lacks is skipped and said.  Nothing passes or fails.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import multiprocessing
import os
import pickle
import random
import re
import shutil
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

# ---------------------------------------------------------------------------------------------
# The fixed list of 100 queries (category, text).  The words come from gen_archive.py's word list:
# budget, deadline, portland ... are common; zanzibar, quokka, xylophone, marzipan, obsidian are rare.

QUERIES = (
    [
        ("common", w)
        for w in (
            "budget",
            "deadline",
            "portland",
            "weekend",
            "invoice",
            "meeting",
            "project",
            "schedule",
            "hotel",
            "flight",
            "python",
            "database",
            "review",
            "tests",
            "summary",
        )
    ]
    + [
        ("rare", w)
        for w in (
            "zanzibar",
            "quokka",
            "xylophone",
            "marzipan",
            "obsidian",
            "café",
            "zürich",
            "münchen",
            "nonexistentword",
            "src/main.rs",
        )
    ]
    + [("stop words", w) for w in ("the", "of the", "what is")]
    + [
        ("2-3 words", w)
        for w in (
            "portland budget",
            "deadline invoice",
            "hotel flight",
            "python sqlite",
            "rust compiler",
            "weekend trip portland",
            "quarterly revenue forecast",
            "kubernetes docker deploy",
            "zanzibar budget",
            "quokka marzipan",
            "family dinner tomorrow",
            "git rebase branch",
            "api timeout retry",
            "café münchen",
            "latency benchmark cache",
        )
    ]
    + [
        ("phrase", w)
        for w in (
            '"budget deadline"',
            '"weekend trip"',
            '"the budget"',
            '"São Paulo"',
            '"src/main.rs"',
            '"quarterly revenue"',
            '"portland budget"',
            '"pull request"',
            '"e.g."',
            '"zanzibar quokka"',
            '"family dinner"',
            '"call hiking"',
        )
    ]
    + [
        ("question", w)
        for w in (
            "what was the budget for the portland trip",
            "when is the deadline for the quarterly invoice",
            "which hotel did we book near the airport",
            "how do I fix the timeout error in the api",
            "what did we decide about the kubernetes deployment",
            "where should we have dinner this weekend in portland",
            "why is the benchmark latency so high today",
            "who approved the proposal for the new client",
            "did the database migration finish before the release",
            "what is the maximum budget for the flights",
            "how many tests failed in the parser fixtures",
            "can you summarize the meeting notes from monday",
            "what restaurant did we pick for the birthday party",
            "is the sprint backlog ready for the review",
            "which python dependency broke the build pipeline",
        )
    ]
    + [
        ("+/-/prefix*", w)
        for w in (
            "+budget portland",
            "+portland +deadline",
            "budget -portland",
            "portland -budget -deadline",
            "+zanzibar -quokka",
            "budg*",
            "port* weekend",
            "dead* invoic*",
            "zanz*",
            '+"weekend trip" -hotel',
            '"budget deadline" +portland',
            "kube* deploy*",
            "-portland budget hotel",
            "+budget",
            "invoice -payment",
        )
    ]
    + [
        ("filters", w)
        for w in (
            "role:user budget",
            "role:assistant deadline",
            "role:tool error",
            'role:user "weekend trip"',
            "in:messages budget",
            "in:memories budget",
            "title:portland",
            "title:budget hotel",
            "store:mermaid budget",
            "role:user +portland -budget",
            "title:deadline role:assistant",
            "in:messages role:user zanzibar",
            "role:assistant budg*",
            "title:weekend trip",
            "store:sam budget",
        )
    ]
)
assert len(QUERIES) == 100, len(QUERIES)
CLI_SAMPLE = QUERIES[::10]  # the whole process is timed for these ten
EXACT_NEEDLES = ("portland", "zanzibar", "src/main.rs")
GOALS = {"build": 25_000, "rss": 500, "size": 2.0, "p50": 0.050, "p95": 0.250, "refresh": 0.05}

# ---------------------------------------------------------------------------------------------
# Trees


def generate(out: Path, kind: str, n: int, mean: float, memories: int = 0) -> Path:
    """The tree's --root (generated once into ``out``; bench_ls.py's names for the same trees)."""
    dest = out / (f"mermaid-{n}-m{mean:g}" if kind == "mermaid" else f"sam-{n}x{memories}-m{mean:g}")
    if not (dest / ".complete").exists():
        if dest.exists():
            shutil.rmtree(dest)
        print(f"generating {dest.name} ...", file=sys.stderr, flush=True)
        extra = ["--memories-per-conversation", str(memories)] if kind == "sam" else []
        subprocess.run(
            [
                sys.executable,
                str(HERE / "gen_archive.py"),
                kind,
                str(dest),
                "--conversations",
                str(n),
                "--messages-mean",
                str(mean),
                "--quiet",
                *extra,
            ],
            check=True,
        )
        (dest / ".complete").write_text("")
    return dest if kind == "mermaid" else dest / "SAM"


def conversation_files(root: Path, kind: str) -> list[str]:
    """The file of each conversation that holds its messages (the one a refresh round edits)."""
    if kind == "mermaid":
        d = root / ".mermaid" / "conversations"
        return sorted(str(d / n) for n in os.listdir(d) if n.endswith(".json"))
    d = root / "conversations"
    return sorted(str(d / n / "conversation.json") for n in os.listdir(d) if (d / n / "conversation.json").exists())


# ---------------------------------------------------------------------------------------------
# Child processes: wall time, ru_maxrss, and the whole process tree's memory sampled from /proc

# A child's ru_maxrss starts at its parent's high-water mark (Linux carries it across fork and exec),
# and this process may hold the floor's postings: a small launcher starts every measured command.
LAUNCH = (
    "import os, subprocess, sys, time\n"
    "t = time.perf_counter()\n"
    "p = subprocess.Popen(sys.argv[2:], stdout=None if sys.argv[1] == 'pass' else subprocess.DEVNULL,\n"
    "                     stderr=subprocess.DEVNULL)\n"
    "_, status, usage = os.wait4(p.pid, 0)\n"
    "print('LAUNCH', os.waitstatus_to_exitcode(status), usage.ru_maxrss, time.perf_counter() - t, flush=True)\n"
)


def _descendants(pid: int) -> list[int]:
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        try:
            for tid in os.listdir(f"/proc/{p}/task"):
                with open(f"/proc/{p}/task/{tid}/children") as f:
                    kids = [int(x) for x in f.read().split()]
                out += kids
                todo += kids
        except OSError:
            pass
    return out


def _mem_kib(pid: int) -> tuple[int, int]:
    """(RSS, PSS) of one process in KiB; (0, 0) once it is gone."""
    rss = pss = 0
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            for line in f:
                if line.startswith("Rss:"):
                    rss = int(line.split()[1])
                elif line.startswith("Pss:"):
                    pss = int(line.split()[1])
    except OSError:
        pass
    return rss, pss


def launch(argv: list, env: dict, keep_stdout: bool = False, sample: bool = False) -> dict:
    """Run ``argv`` under the launcher: {exit, wall, maxrss (MiB, its largest process), rss, pss (MiB,
    peak sums over its process tree, when ``sample``), procs (most processes seen at once), stdout}."""
    p = subprocess.Popen(
        [sys.executable, "-c", LAUNCH, "pass" if keep_stdout else "quiet", *argv],
        env=env,
        stdout=subprocess.PIPE,
        text=True,
    )
    peak = [0, 0, 0]
    stop = threading.Event()

    def sampler():
        while not stop.wait(0.02):
            tree = [_mem_kib(q) for q in _descendants(p.pid)]
            peak[0] = max(peak[0], sum(r for r, _ in tree))
            peak[1] = max(peak[1], sum(s for _, s in tree))
            peak[2] = max(peak[2], sum(1 for r, _ in tree if r))

    th = threading.Thread(target=sampler, daemon=True)
    if sample:
        th.start()
    out, _ = p.communicate()
    stop.set()
    if sample:
        th.join()
    lines = out.splitlines()
    _, code, maxrss, wall = lines[-1].split()
    return {
        "exit": int(code),
        "wall": float(wall),
        "maxrss": int(maxrss) / 1024,
        "rss": peak[0] / 1024 if sample else None,
        "pss": peak[1] / 1024 if sample else None,
        "procs": peak[2],
        "stdout": "\n".join(lines[:-1]),
    }


def samctl_argv() -> list[str]:
    exe = Path(sys.executable).parent / "samctl"
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "samctl"]


def drop_caches() -> bool:
    try:
        os.sync()
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write("3\n")
        return True
    except OSError:
        return False


# ---------------------------------------------------------------------------------------------
# The corpus pass: rows, text bytes, and the floor's postings (plain BM25 over the query terms)

K1, B = 1.2, 0.75
_WORD = re.compile(r"\w+")
_FIELD = re.compile(r"^[+-]?(role|in|title|store):")


def floor_terms(q: str) -> tuple[list[str], list[str]]:
    """(words, prefixes) the floor scores for a query: every word not excluded, field filters left out,
    quotes and + dropped (a phrase is scored as its words)."""
    words, prefixes = [], []
    for part in re.findall(r'[+-]?"[^"]*"|\S+', q):
        if part.startswith("-") or _FIELD.match(part):
            continue
        part = part.lstrip("+").strip('"').lower()
        if part.endswith("*") and _WORD.fullmatch(part[:-1]):
            prefixes.append(part[:-1])
        else:
            words += _WORD.findall(part)
    return words, prefixes


def _floor_wanted() -> tuple[set, tuple]:
    words, prefixes = set(), set()
    for _, q in QUERIES:
        w, p = floor_terms(q)
        words.update(w)
        prefixes.update(p)
    return words, tuple(sorted(prefixes))


_W = None  # a worker's (store, wanted words, prefixes, decision cache)


def _corpus_init(root: str, cache_dir: str) -> None:
    global _W
    os.environ["SAMCTL_CACHE_DIR"] = cache_dir
    from samctl.stores import open_store

    words, prefixes = _floor_wanted()
    _W = (open_store(root), words, prefixes, {})


def _corpus_chunk(sources: list):
    """(rows, text bytes, doc lengths, {term: (rows, tfs)}) of some sources, rows numbered from 0."""
    from array import array
    from collections import Counter

    store, words, prefixes, keep = _W
    lens, post, nbytes = array("i"), {}, 0
    for src in sources:
        for r in store.source_rows(src, [], []):
            text = r.text
            nbytes += len(text.encode("utf-8", "surrogatepass"))
            toks = _WORD.findall(text.lower())
            row = len(lens)
            lens.append(len(toks))
            for t, tf in Counter(toks).items():
                k = keep.get(t)
                if k is None:
                    k = keep[t] = t in words or t.startswith(prefixes)
                if k:
                    rows_tfs = post.get(t)
                    if rows_tfs is None:
                        rows_tfs = post[t] = (array("i"), array("i"))
                    rows_tfs[0].append(row)
                    rows_tfs[1].append(tf)
    return len(lens), nbytes, lens, post


def corpus(root: Path, name: str, cache_dir: Path, jobs: int) -> dict:
    """Rows, text bytes and the floor's postings ({term: (rows int32, BM25 weights float32)}), cached beside
    the tree (the refresh rounds put the tree back as it was)."""
    import numpy as np

    words, prefixes = _floor_wanted()
    tag = hashlib.sha256(repr((sorted(words), prefixes, K1, B)).encode()).hexdigest()[:12]
    path = cache_dir.parent / f".bench-corpus-{name}-{tag}.pickle"
    if path.exists():
        with open(path, "rb") as f:
            return pickle.load(f)
    t = time.perf_counter()
    os.environ["SAMCTL_CACHE_DIR"] = str(cache_dir)
    from samctl.stores import open_store

    store = open_store(str(root))
    sources = list(store.search_sources([]).values())
    chunks = [sources[i : i + 200] for i in range(0, len(sources), 200)]
    n, nbytes, lens, post = 0, 0, [], {}
    with multiprocessing.get_context("spawn").Pool(jobs, _corpus_init, (str(root), str(cache_dir))) as pool:
        for rows, b, ls, p in pool.imap(_corpus_chunk, chunks):
            for term, (r, tf) in p.items():
                post.setdefault(term, []).append(
                    (np.frombuffer(r, dtype=np.int32) + n, np.frombuffer(tf, dtype=np.int32))
                )
            lens.append(np.frombuffer(ls, dtype=np.int32))
            n += rows
            nbytes += b
    dl = np.concatenate(lens).astype(np.float32) if lens else np.zeros(0, np.float32)
    avgdl = float(dl.mean()) if n else 1.0
    floor = {}
    for term, parts in post.items():
        rows = np.concatenate([r for r, _ in parts])
        tf = np.concatenate([f for _, f in parts]).astype(np.float32)
        idf = np.log(1 + (n - len(rows) + 0.5) / (len(rows) + 0.5))
        w = idf * tf * (K1 + 1) / (tf + K1 * (1 - B + B * dl[rows] / avgdl))
        floor[term] = (rows, w.astype(np.float32))
    out = {"rows": n, "bytes": nbytes, "floor": floor, "seconds": time.perf_counter() - t}
    with open(path, "wb") as f:
        pickle.dump(out, f, protocol=pickle.HIGHEST_PROTOCOL)
    return out


def floor_query(c: dict, q: str, limit: int = 10):
    """A function doing the floor's work for ``q`` (None when the floor has no word to score)."""
    import numpy as np

    words, prefixes = floor_terms(q)
    floor = c["floor"]
    terms = [w for w in dict.fromkeys(words) if w in floor]
    terms += [t for t in floor for p in prefixes if t.startswith(p) and t not in terms]
    if not words and not prefixes:
        return None
    cols = [floor[t] for t in terms]
    n = c["rows"]

    def run():
        s = np.zeros(n, dtype=np.float32)
        for rows, w in cols:
            s[rows] += w
        k = min(limit, n)
        # (the best k at the front of the negated scores: numpy 2's select takes 20x longer to find the
        # k-th from the end above the block of zeros most rows score, 150-300 ms over 1.3 M rows)
        top = np.argpartition(-s, k - 1)[:k] if k else s[:0]
        return top[np.argsort(-s[top])]

    return run


# ---------------------------------------------------------------------------------------------
# samctl, in-process


def make_query(text: str, **kw):
    """A SearchQuery with whatever of ``kw`` this engine's SearchQuery has (fields come and go)."""
    import dataclasses

    from samctl.search.hits import SearchQuery

    names = {f.name for f in dataclasses.fields(SearchQuery)} if dataclasses.is_dataclass(SearchQuery) else set(kw)
    return SearchQuery(text=text, **{k: v for k, v in kw.items() if k in names})


def searcher(root, text: str, **kw):
    """A function running one search in this process (the store opened each time, as a search does).
    ``root``: a store's root, or a function returning the stores to search together (bench_cross_search)."""
    from samctl.search import dispatch
    from samctl.stores import open_store

    def run():
        # as the CLI does: the query language parsed (its in: narrowing as --in), then the search
        plan = None
        if not kw.get("exact") and kw.get("rank", "bm25") == "bm25":
            from samctl.search.query import parse

            plan = parse(text)
        q = make_query(text, **dict(kw, where=kw.get("where") or (plan.where if plan else None)))
        return dispatch.search(root() if callable(root) else open_store(str(root)), q, [], None, plan)

    return run


def try_once(fn) -> str | None:
    """None, or why ``fn`` failed (an engine rejecting a query syntax is a result, not a crash)."""
    try:
        fn()
        return None
    except Exception as exc:  # noqa: BLE001 - any failure is counted and printed
        return f"{type(exc).__name__}: {str(exc).splitlines()[0][:100] if str(exc) else ''}"


def pct(xs: list[float], p: float) -> float:
    """The nearest-rank percentile (p95 of 100 values: the 95th smallest)."""
    xs = sorted(xs)
    return xs[min(len(xs) - 1, max(0, math.ceil(p / 100 * len(xs)) - 1))]


def progress(msg: str) -> None:
    print(f"[bench_search] {msg}", file=sys.stderr, flush=True)


def ms(x: float) -> str:
    return f"{x * 1000:,.1f} ms"


def du(path: Path) -> int:
    total = 0
    for d, _, files in os.walk(path):
        for n in files:
            try:
                total += os.lstat(os.path.join(d, n)).st_size
            except OSError:
                pass
    return total


# ---------------------------------------------------------------------------------------------
# The measures


BUILD = (
    "import json, sys, time\n"
    "from samctl.stores import open_store\n"
    "from samctl.search import index as ix\n"
    "store = open_store(sys.argv[1])\n"
    "t = time.perf_counter()\n"
    "idx = ix.refresh(store, [], rebuild=True)\n"
    "dt = time.perf_counter() - t\n"
    "try:\n"
    "    d = str(ix.index_dir(store))\n"
    "except Exception:\n"
    "    d = None\n"
    "print(json.dumps({'seconds': dt, 'rows': getattr(idx, 'rows', None), 'dir': d}))\n"
)

READ_FLOOR = (
    "import sys, orjson\nfor p in open(sys.argv[1]).read().splitlines():\n    orjson.loads(open(p, 'rb').read())\n"
)


def measure_build(root: Path, kind: str, env: dict, c: dict, cache: Path) -> dict:
    # Timed without the memory sampler, whose reads of /proc/PID/smaps_rollup every 20 ms (the kernel
    # walks each process's page tables) took a core's share: 68 s -> 84 s for 100,000 x 12 on 2 cores.
    # The memory comes from a second build, sampled.
    r = launch([sys.executable, "-c", BUILD, str(root)], env, keep_stdout=True)
    if r["exit"] == 0:
        m = launch([sys.executable, "-c", BUILD, str(root)], env, keep_stdout=True, sample=True)
        r.update({k: m[k] for k in ("rss", "pss", "procs", "maxrss")}, sampled=m["wall"])
    if r["exit"] != 0:
        print(f"  full build FAILED (exit {r['exit']}): {r['stdout'][-300:]}")
        return {}
    res = json.loads(r["stdout"].splitlines()[-1])
    dt = res["seconds"]
    rows = res["rows"] or c["rows"]
    idir = Path(res["dir"]) if res.get("dir") and Path(res["dir"]).is_dir() else cache
    size = du(idir)
    print(
        f"  full build: {rows:,} rows in {dt:.1f} s = {rows / dt:,.0f} rows/s (goal >= {GOALS['build']:,}); "
        f"whole process {r['wall']:.1f} s"
    )
    print(
        f"    peak memory, build process + workers ({r['procs']} processes at most): RSS summed {r['rss']:,.0f} MiB, PSS summed {r['pss']:,.0f} MiB "
        f"(goal <= {GOALS['rss']} MiB); largest single process ru_maxrss {r['maxrss']:,.0f} MiB "
        f"(a second build, sampled: {r['sampled']:.1f} s)"
    )
    print(
        f"    index on disk: {size / 2**20:,.0f} MiB ({'index folder' if idir != cache else 'whole cache folder'}) "
        f"= {size / max(c['bytes'], 1):.2f}x the text (goal <= {GOALS['size']:g}x)"
    )
    guarded("  read floor", read_floor, root, kind, env, cache, dt)
    return {"seconds": dt}


def read_floor(root: Path, kind: str, env: dict, cache: Path, dt: float) -> None:
    listing = cache.parent / f".bench-files-{cache.name}"  # (100,000 paths do not fit in argv)
    listing.write_text("\n".join(conversation_files(root, kind)))
    try:
        f = launch([sys.executable, "-c", READ_FLOOR, str(listing)], env)
    finally:
        listing.unlink()
    print(
        f"    floor, orjson.loads of every conversation file in one process (SAM: not memory.db): {f['wall']:.1f} s "
        f"-> the build is {dt / f['wall']:.1f}x the floor"
    )


def measure_queries(root: Path, c: dict, rounds: int, rank: str | None) -> dict:
    kw = {"limit": 10}
    if rank:
        kw["rank"] = rank
    fns = [(cat, q, searcher(root, q, **kw), floor_query(c, q)) for cat, q in QUERIES]
    errors, ok = {}, []
    t0 = time.perf_counter()
    for cat, q, fn, fl in fns:  # warm-up pass: the index refreshed, the page cache warm, syntax checked
        why = try_once(fn)
        if why:
            errors[q] = why
        else:
            ok.append((cat, q, fn, fl))
    times = {q: [] for _, q, _, _ in ok}
    ftimes = {q: [] for _, q, _, fl in ok if fl}
    for i in range(rounds):  # samctl and floor in turns, so a busy machine slows both alike
        progress(f"query pass {i + 1} of {rounds + 1} ({time.perf_counter() - t0:.0f} s so far)")
        for _, q, fn, fl in ok:
            t = time.perf_counter()
            fn()
            times[q].append(time.perf_counter() - t)
            if fl:
                t = time.perf_counter()
                fl()
                ftimes[q].append(time.perf_counter() - t)
    med = {q: statistics.median(ts) for q, ts in times.items()}
    fmed = {q: statistics.median(ts) for q, ts in ftimes.items()}
    if med:
        all_ = list(med.values())
        fl = list(fmed.values())
        ratios = [med[q] / fmed[q] for q in fmed if fmed[q] > 0]
        print(
            f"  warm query in-process, {len(med)} of {len(QUERIES)} queries (median of {rounds} each): "
            f"p50 {ms(pct(all_, 50))} (goal <= {ms(GOALS['p50'])}), p95 {ms(pct(all_, 95))} "
            f"(goal <= {ms(GOALS['p95'])}), max {ms(max(all_))}"
        )
        if fl:
            print(
                f"    floor, numpy BM25 over the query terms' postings ({len(fl)} queries): p50 {ms(pct(fl, 50))}, "
                f"p95 {ms(pct(fl, 95))}; samctl / floor per query: median {statistics.median(ratios):.1f}x"
            )
        for cat in dict.fromkeys(c_ for c_, _ in QUERIES):
            xs = [med[q] for c_, q in QUERIES if c_ == cat and q in med]
            ys = [fmed[q] for c_, q in QUERIES if c_ == cat and q in fmed]
            if xs:
                print(
                    f"    {cat:<12} n={len(xs):<3} p50 {ms(pct(xs, 50)):>11}  max {ms(max(xs)):>11}"
                    + (f"   floor p50 {ms(pct(ys, 50))}" if ys else "")
                )
        titled = [med[q] for _, q in QUERIES if "title:" in q and q in med]
        if titled:
            print(f"    title: queries n={len(titled)}: p50 {ms(pct(titled, 50))}, max {ms(max(titled))}")
        slow = sorted(med, key=med.get, reverse=True)[:3]
        print("    slowest: " + "; ".join(f"{q!r} {ms(med[q])}" for q in slow))
    if errors:
        print(f"  {len(errors)} queries the engine rejected or failed on (not timed):")
        for q, why in errors.items():
            print(f"    {q!r}: {why}")
    return med


def cli_runs(base: list, env: dict, repeat: int, sample: bool = False) -> tuple:
    """The whole process ``base + ["--", q]`` for every query of CLI_SAMPLE, ``repeat`` times after an
    untimed run: (median wall per query, peak RSS per query, last exit code by query), and a bare
    ``python -c pass``'s median wall beside them."""
    py = [launch([sys.executable, "-c", "pass"], env)["wall"] for _ in range(repeat + 1)][1:]
    walls, peaks, codes = [], [], {}
    for _, q in CLI_SAMPLE:
        runs = [launch(base + ["--", q], env) for _ in range(repeat + 1)][1:]
        walls.append(statistics.median(r["wall"] for r in runs))
        if sample:  # (one more run, for its memory only: the sampler slows what it samples)
            runs.append(launch(base + ["--", q], env, sample=True))
        peaks.append(max(max(r["maxrss"], r.get("rss") or 0) for r in runs))
        codes[q] = runs[-1]["exit"]
    return walls, peaks, codes, statistics.median(py)


def print_cli(what: str, walls: list, peaks: list, codes: dict, py: float, inproc: list, indent: str) -> None:
    """cli_runs' figures, beside the same queries' in-process medians ``inproc``."""
    print(
        f"{indent}whole `samctl search` process{what}, {len(CLI_SAMPLE)} queries (every tenth; median of each "
        f"query's runs): median {ms(statistics.median(walls))}, max {ms(max(walls))}; peak RSS {max(peaks):,.0f} MiB "
        f"at most (goal <= {GOALS['rss']} MiB)"
    )
    print(
        f"{indent}  beside: the same queries in-process, median {ms(statistics.median(inproc)) if inproc else 'n/a'}; "
        f"a bare `python -c pass` {ms(py)}"
    )
    bad = {q: c for q, c in codes.items() if c not in (0, 1, 4)}
    if bad:
        print(f"{indent}  exit codes other than 0/1/4: " + "; ".join(f"{q!r} -> {c}" for q, c in bad.items()))


def measure_cli(root: Path, env: dict, med: dict, repeat: int, rank: str | None) -> None:
    base = samctl_argv() + ["--root", str(root), "search"] + (["--rank", rank] if rank else [])
    walls, peaks, codes, py = cli_runs(base, env, repeat)
    print_cli("", walls, peaks, codes, py, [med[q] for _, q in CLI_SAMPLE if q in med], "  ")


def measure_exact(root: Path, env: dict, repeat: int, cold: bool) -> None:
    rg = shutil.which("rg")
    conv = str(root / ".mermaid" / "conversations")
    if not rg:
        print("  --exact vs rg: rg (ripgrep) not found, skipped (apt-get install ripgrep)")
        return
    can_drop = cold and drop_caches()
    modes = ["warm"] + (["cold"] if can_drop else [])
    if not can_drop:
        print(
            "  --exact vs rg: cold not measured"
            + (" (--no-cold)" if not cold else " (/proc/sys/vm/drop_caches not writable)")
        )
    base = samctl_argv() + ["--root", str(root), "search", "--exact", "--"]
    for mode in modes:
        for needle in EXACT_NEEDLES:
            s, r = [], []
            order = [
                ("samctl", base + [needle], s),
                ("rg", [rg, "-F", "-i", "-c", "-g", "*.json", "--", needle, conv], r),
            ]
            for i in range(repeat + (mode == "warm")):
                for _, argv, ts in order if i % 2 == 0 else order[::-1]:  # who goes first alternates
                    if mode == "cold":
                        drop_caches()
                    w = launch(argv, env)["wall"]
                    if mode == "cold" or i:
                        ts.append(w)
            sm, rm = statistics.median(s), statistics.median(r)
            print(
                f"  --exact {needle!r:<14} {mode}: samctl {ms(sm):>11}, rg -F -i -c over *.json {ms(rm):>11} "
                f"-> {sm / rm:.1f}x rg (median of {repeat})"
            )


def edit(path: str, stamp: float) -> None:
    """A small content change: a word put at the start of the first message's text; mtime ``stamp``."""
    data = open(path, "rb").read()
    m = re.search(rb'"content"\s*:\s*"', data)
    new = data[: m.end()] + b"edited quokka " + data[m.end() :] if m else data + b" "
    tmp = path + ".bench-tmp"
    with open(tmp, "wb") as f:
        f.write(new)
    os.chmod(tmp, os.stat(path).st_mode & 0o777)
    os.replace(tmp, path)  # (a new inode, as an app's atomic save gives)
    os.utime(path, (stamp, stamp))


def _edit_files(paths, saved: dict, edit, stamp: float, kind: str) -> None:
    """Edit each of ``paths`` in place at ``stamp`` (its first bytes and times kept in ``saved`` to put back);
    for SAM, its memory.db is touched too, as SAM would write both."""
    for p in paths:
        if p not in saved:
            st = os.stat(p)
            saved[p] = (open(p, "rb").read(), st.st_atime_ns, st.st_mtime_ns)
        edit(p, stamp)
        if kind == "sam":
            db = os.path.join(os.path.dirname(p), "memory.db")
            if os.path.exists(db):
                os.utime(db, (stamp, stamp))


def measure_refresh(root: Path, kind: str, repeat: int, full: float | None) -> None:
    from samctl.search import index as ix
    from samctl.stores import open_store

    files = conversation_files(root, kind)
    k = max(1, len(files) // 100)
    rng = random.Random(1)
    pool = rng.sample(files, min(len(files), k * repeat))
    saved = {}
    times, reread = [], []
    try:
        ix.refresh(open_store(str(root)), [])  # (up to date before the first round)
        for i in range(repeat):
            batch = pool[i * k : (i + 1) * k] or rng.sample(files, k)
            stamp = time.time() - 10  # older than the racy window: the refresh trusts what it reads
            _edit_files(batch, saved, edit, stamp, kind)
            t = time.perf_counter()
            idx = ix.refresh(open_store(str(root)), [])
            times.append(time.perf_counter() - t)
            reread.append(len(getattr(idx, "read", ()) or ()))
    finally:
        for p, (data, at, mt) in saved.items():  # the tree back as generated, byte for byte
            tmp = p + ".bench-tmp"
            with open(tmp, "wb") as f:
                f.write(data)
            os.chmod(tmp, os.stat(p).st_mode & 0o777)
            os.replace(tmp, p)
            os.utime(p, ns=(at, mt))
    med = statistics.median(times)
    t = time.perf_counter()
    n = 0
    for d in {os.path.dirname(p) for p in files}:
        for e in os.scandir(d):
            e.stat(follow_symlinks=False)
            n += 1
    st = time.perf_counter() - t
    print(
        f"  refresh after editing 1% ({k:,} conversations; median of {repeat} rounds, a different 1% each): "
        f"{med:.2f} s"
        + (f" = {med / full:.1%} of the full build (goal <= {GOALS['refresh']:.0%})" if full else "")
        + f"; sources read again per round: {sorted(set(reread))}"
    )
    print(f"    floor, lstat of every file in the conversation folders ({n:,} files): {ms(st)} -> {med / st:.1f}x")
    ix.refresh(open_store(str(root)), [])  # (the files put back: the index current again, untimed)


def measure_refreshed(
    root: Path, kind: str, c: dict, times: int, rounds: int, rank: str | None, full: float | None
) -> None:
    """The warm queries again over an index refreshed TIMES times, each after editing a different 1% of the
    conversations (their old rows dead, their new ones in new segments, compaction as a refresh does it:
    what those refreshes cost, the rewrites of decayed segments included, is said too); the files are put
    back byte for byte afterwards and the index brought up to date (untimed)."""
    from samctl.search import index as ix
    from samctl.stores import open_store

    files = conversation_files(root, kind)
    k = max(1, len(files) // 100)
    rng = random.Random(2)
    pool = rng.sample(files, min(len(files), k * times))
    saved = {}
    spent = []
    try:
        for i in range(times):
            progress(f"refresh {i + 1} of {times} after editing 1%")
            stamp = time.time() - 10
            _edit_files(pool[i * k : (i + 1) * k], saved, edit, stamp, kind)
            t = time.perf_counter()
            idx = ix.refresh(open_store(str(root)), [])
            spent.append(time.perf_counter() - t)
        mean, most = statistics.mean(spent), max(spent)
        shares = f" ({mean / full:.1%} and {most / full:.1%} of the full build)" if full else ""
        print(f"  {times} refreshes after editing 1%: mean {mean:.2f} s, max {most:.2f} s{shares}")
        rows = sum(seg.rows for seg in idx.segments)
        alive = sum(int(seg.alive.sum()) for seg in idx.segments)
        print(
            f"  after {times} refreshes of 1% each: {len(idx.segments)} segments, {rows:,} rows, "
            f"{rows - alive:,} dead ({(rows - alive) / max(rows, 1):.1%})"
        )
        measure_queries(root, c, rounds, rank)
    finally:
        for p, (data, at, mt) in saved.items():  # the tree back as generated, byte for byte
            tmp = p + ".bench-tmp"
            with open(tmp, "wb") as f:
                f.write(data)
            os.chmod(tmp, os.stat(p).st_mode & 0o777)
            os.replace(tmp, p)
            os.utime(p, ns=(at, mt))
        ix.refresh(open_store(str(root)), [])


def guarded(what: str, fn, *args):
    """``fn(*args)``, or a line saying why it failed (the engine changes under this benchmark)."""
    progress(what.strip() + " ...")
    try:
        return fn(*args)
    except Exception as exc:  # noqa: BLE001 - one measure failing must not hide the others
        print(f"  {what}: FAILED, {type(exc).__name__}: {exc}")
        return None


def bench_tree(label: str, root: Path, kind: str, a, cache: Path) -> None:
    env = dict(os.environ, SAMCTL_CACHE_DIR=str(cache), SAMCTL_ASSUME_SAM_RUNNING="0")
    os.environ.update(SAMCTL_CACHE_DIR=str(cache), SAMCTL_ASSUME_SAM_RUNNING="0")
    t0 = time.perf_counter()
    c = corpus(root, cache.name.removeprefix("cache-"), cache, a.jobs)
    print(f"\n== {label}: {root}")
    print(
        f"  corpus: {c['rows']:,} rows (what search indexes), {c['bytes'] / 2**20:,.0f} MiB of text (UTF-8); "
        f"floor postings for {len(c['floor'])} query terms (built in {c['seconds']:.0f} s, cached)"
    )
    full = None
    if a.keep_index:
        from samctl.search import index as ix
        from samctl.stores import open_store

        guarded("refresh", lambda: ix.refresh(open_store(str(root)), []))
        print("  full build: skipped (--keep-index)")
    else:
        full = (guarded("full build", measure_build, root, kind, env, c, cache) or {}).get("seconds")
    med = guarded("warm query", measure_queries, root, c, a.rounds, a.rank) or {}
    if not a.no_cli:
        guarded("whole process", measure_cli, root, env, med, a.repeat, a.rank)
    if kind == "mermaid" and not a.no_exact:
        guarded("--exact vs rg", measure_exact, root, env, a.repeat, not a.no_cold)
    guarded("refresh", measure_refresh, root, kind, a.repeat, full)
    if a.refreshed:
        guarded("refreshed index", measure_refreshed, root, kind, c, a.refreshed, a.rounds, a.rank, full)
    print(f"  ({time.perf_counter() - t0:,.0f} s for this tree)")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--conversations", type=int, default=100_000, help="mermaid sessions (default 100,000)")
    ap.add_argument(
        "--profile",
        type=float,
        action="append",
        metavar="M",
        help="messages per session on average; repeatable (default 12; 40 for the coding-session tree)",
    )
    ap.add_argument("--sam", action="store_true", help="also the SAM tree (big: 10,000 x 100 memories, ~5 GB)")
    ap.add_argument("--sam-conversations", type=int, default=10_000)
    ap.add_argument("--memories", type=int, default=100, help="SAM memories per conversation (default 100)")
    ap.add_argument("--no-mermaid", action="store_true", help="only the SAM tree (with --sam)")
    ap.add_argument("--rounds", type=int, default=3, help="timed passes over the 100 queries (default 3)")
    ap.add_argument("--repeat", type=int, default=3, help="runs of each CLI, --exact and refresh measure (default 3)")
    ap.add_argument("--rank", default=None, help="pass --rank / SearchQuery.rank (default: the engine's default)")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="processes for the corpus pass")
    ap.add_argument("--keep-index", action="store_true", help="do not time a full build; refresh what is there")
    ap.add_argument("--no-cli", action="store_true", help="skip the whole-process timings")
    ap.add_argument("--no-exact", action="store_true", help="skip --exact vs rg")
    ap.add_argument("--no-cold", action="store_true", help="never drop the page cache")
    ap.add_argument(
        "--refreshed",
        type=int,
        default=0,
        metavar="N",
        help="then the warm queries again over the index refreshed N times, 1%% edited each time (default: not)",
    )
    ap.add_argument("--out", type=Path, default=HERE / "out")
    a = ap.parse_args(argv)
    a.out.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    print(
        f"samctl search benchmark (issue #22): {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}, "
        f"{a.rounds} rounds over {len(QUERIES)} queries, repeat {a.repeat}; medians, ratios to baselines of this run"
    )
    trees = []
    if not a.no_mermaid:
        for mean in a.profile or [12.0]:
            root = generate(a.out, "mermaid", a.conversations, mean)
            trees.append(
                (
                    f"mermaid, {a.conversations:,} sessions x {mean:g} messages on average",
                    root,
                    "mermaid",
                    a.out / f"cache-{root.name}",
                )
            )
    if a.sam:
        root = generate(a.out, "sam", a.sam_conversations, 12, a.memories)
        trees.append(
            (
                f"SAM, {a.sam_conversations:,} conversations x {a.memories} memories",
                root,
                "sam",
                a.out / f"cache-{root.parent.name}",
            )
        )
    for label, root, kind, cache in trees:
        bench_tree(label, root, kind, a, cache)
    print(f"\n(whole run {time.perf_counter() - t0:,.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
