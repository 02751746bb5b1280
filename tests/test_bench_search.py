"""bench_search.py's own parts: the fixed query list, the floor's BM25, and the refresh rounds leaving the
tree as generated (the benchmark itself is run by hand, not here)."""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
from collections import Counter

import pytest

from bench import bench_search as bs
from bench import gen_archive as gen


def test_queries_are_a_fixed_hundred_in_every_category():
    assert len(bs.QUERIES) == 100 and len({q for _, q in bs.QUERIES}) == 100
    cats = Counter(c for c, _ in bs.QUERIES)
    assert set(cats) == {"common", "rare", "stop words", "2-3 words", "phrase", "question", "+/-/prefix*", "filters"}
    assert all(6 <= len(q.split()) <= 10 for c, q in bs.QUERIES if c == "question")
    assert len(bs.CLI_SAMPLE) == 10


@pytest.mark.parametrize(
    "query, words, prefixes",
    [
        ("+budget portland", ["budget", "portland"], []),
        ("budget -portland", ["budget"], []),
        ('+"weekend trip" -hotel', ["weekend", "trip"], []),
        ("role:user budget", ["budget"], []),
        ("title:portland", [], []),
        ("dead* invoic*", [], ["dead", "invoic"]),
        ('"São Paulo"', ["são", "paulo"], []),
    ],
)
def test_floor_terms(query, words, prefixes):
    assert bs.floor_terms(query) == (words, prefixes)


def test_pct_is_nearest_rank():
    xs = list(range(1, 101))
    assert (bs.pct(xs, 50), bs.pct(xs, 95), bs.pct(xs, 100)) == (50, 95, 100)
    assert bs.pct([3.0], 95) == 3.0


@pytest.fixture
def tree(tmp_path, monkeypatch):
    root = tmp_path / "mermaid-30-m12"
    gen.make_mermaid(root, 30, seed=3, jobs=1, progress=False)
    old = os.stat(root).st_mtime - 60  # (older than the index's racy window, as a benchmark tree is)
    for d, _, names in os.walk(root):
        for n in names:
            os.utime(os.path.join(d, n), (old, old))
    cache = tmp_path / "cache-mermaid-30-m12"
    monkeypatch.setenv("SAMCTL_CACHE_DIR", str(cache))
    return root, cache


def _snapshot_texts(root):
    d = root / ".mermaid" / "conversations"
    for name in sorted(os.listdir(d)):
        if name.endswith(".json"):
            for m in json.loads((d / name).read_text("utf-8"))["messages"]:
                if m["content"].strip():
                    yield m["content"]


def test_corpus_counts_the_text_and_the_floor_ranks_as_plain_bm25(tree):
    root, cache = tree
    c = bs.corpus(root, "mermaid-30-m12", cache, 1)
    texts = list(_snapshot_texts(root))  # read independently of samctl
    assert c["rows"] == len(texts)
    assert c["bytes"] == sum(len(t.encode()) for t in texts)
    # plain BM25 over the same texts, in Python
    docs = [re.findall(r"\w+", t.lower()) for t in texts]
    avgdl = sum(map(len, docs)) / len(docs)
    q = ["budget", "portland"]
    df = {w: sum(w in d for d in docs) for w in q}

    def score(d):
        tf = Counter(d)
        return sum(
            math.log(1 + (len(docs) - df[w] + 0.5) / (df[w] + 0.5))
            * tf[w]
            * 2.2
            / (tf[w] + 1.2 * (0.25 + 0.75 * len(d) / avgdl))
            for w in q
            if tf[w]
        )

    want = sorted(range(len(docs)), key=lambda i: -score(docs[i]))[:3]
    got = bs.floor_query(c, "+budget portland -zanzibar role:user")()[:3].tolist()
    assert got == want


def test_refresh_rounds_put_the_tree_back_byte_for_byte(tree, capsys):
    root, cache = tree

    def state():
        d = root / ".mermaid" / "conversations"
        return {
            n: (hashlib.sha256((d / n).read_bytes()).hexdigest(), os.stat(d / n).st_mtime_ns) for n in os.listdir(d)
        }

    before = state()
    bs.measure_refresh(root, "mermaid", 2, None)
    out = capsys.readouterr().out
    assert "refresh after editing 1% (1 conversations; median of 2 rounds" in out
    assert "sources read again per round: [1]" in out  # the edit is seen
    assert state() == before


def test_full_build_is_measured_with_its_floor(tree, capsys):
    root, cache = tree
    c = bs.corpus(root, "mermaid-30-m12", cache, 1)
    env = dict(os.environ, SAMCTL_CACHE_DIR=str(cache))
    got = bs.measure_build(root, "mermaid", env, c, cache)
    out = capsys.readouterr().out
    assert got["seconds"] > 0
    built = re.search(r"full build: ([\d,]+) rows in", out)
    # (the index holds the corpus's messages and, since #34, a row per tool call besides)
    assert built and int(built.group(1).replace(",", "")) >= c["rows"]
    assert "peak memory" in out and "index on disk" in out
    assert "floor, orjson.loads of every conversation file" in out and "FAILED" not in out


def test_read_floor_takes_more_paths_than_argv_holds(tree, capsys, monkeypatch):
    """The floor's file list goes through a file, not argv: 4 MiB of paths (as 100,000 conversations
    give) is over the kernel's limit on a command line (2 MiB with the usual 8 MiB stack)."""
    root, cache = tree
    files = bs.conversation_files(root, "mermaid")
    copies = (4 << 20) // sum(len(os.fsencode(f)) + 1 for f in files) + 1
    monkeypatch.setattr(bs, "conversation_files", lambda r, k: files * copies)
    bs.read_floor(root, "mermaid", dict(os.environ), cache, 1.0)
    assert "floor, orjson.loads of every conversation file" in capsys.readouterr().out
    assert not list(cache.parent.glob(".bench-files-*"))
