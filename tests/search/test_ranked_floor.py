"""The best rows are looked for above the diversity pool's cut first; that shortcut never changes a result."""

from __future__ import annotations

import pytest

from bench import gen_archive as gen
from samctl.search import bm25, dispatch, fulltext
from samctl.search.hits import SearchQuery
from samctl.search.query import parse
from samctl.stores import open_store

QUERIES = [
    "budget",
    "portland budget",
    "the",
    '"budget deadline"',
    '"weekend trip" -portland',
    "budget +deadline",
    "role:assistant hotel",
    "dead* invoic*",
    "what was the budget for the portland trip",
    "zanzibar",
    "-budget portland",
    "title:budget hotel",
]


@pytest.fixture(scope="module")
def tree(tmp_path_factory):
    root = tmp_path_factory.mktemp("floor") / "m"
    gen.make_mermaid(root, 120, messages_mean=12, seed=3, jobs=1, progress=False)
    return root


def _search(root, text, limit, monkeypatch, floor):
    if not floor:
        real = bm25.parts
        monkeypatch.setattr(bm25, "parts", lambda *a, **kw: real(*a[:4]))  # (no info: no floor)
    plan = parse(text)
    q = SearchQuery(text=text, limit=limit, where=plan.where)
    hits = dispatch.search(open_store(str(root)), q, [], None, plan)
    monkeypatch.undo()
    return [(h.conversation_id, h.position, h.kind, h.score) for h in hits]


@pytest.mark.parametrize("limit", [1, 10, 200, 1500])
@pytest.mark.parametrize("text", QUERIES)
def test_the_floor_never_changes_the_hits(tree, text, limit, monkeypatch, tmp_path):
    monkeypatch.setenv("SAMCTL_CACHE_DIR", str(tmp_path / "cache"))
    with_floor = _search(tree, text, limit, monkeypatch, True)
    monkeypatch.setenv("SAMCTL_CACHE_DIR", str(tmp_path / "cache"))
    assert with_floor == _search(tree, text, limit, monkeypatch, False)


def test_the_floor_is_used_and_given_up_when_too_few_rows_are_above_it(tree, monkeypatch, tmp_path):
    monkeypatch.setenv("SAMCTL_CACHE_DIR", str(tmp_path / "cache"))
    calls = []
    real = fulltext._best_rows

    def spy(*a, **kw):
        got = real(*a, **kw)
        calls.append((a[5] if len(a) > 5 else kw.get("complete", True), got is None))
        return got

    monkeypatch.setattr(fulltext, "_best_rows", spy)
    for text, limit in (("budget", 10), ("budget", 1500)):
        plan = parse(text)
        assert dispatch.search(open_store(str(tree)), SearchQuery(text=text, limit=limit), [], None, plan)
    assert calls == [(False, False), (False, True), (True, False)]  # used; then too few above it: all rows


def test_rows_tied_beyond_the_limit_are_ordered_as_their_hits_would_be(tmp_path, monkeypatch):
    """Hundreds of identical messages tie; the cheap key orders them exactly as sort_key on full hits."""
    import shutil
    from pathlib import Path

    from samctl.search.hits import sort_key

    monkeypatch.setenv("SAMCTL_CACHE_DIR", str(tmp_path / "cache"))
    root = tmp_path / ".claude"  # the demo's Claude Code session, copied: every copy's rows tie with its own
    shutil.copytree(Path(__file__).resolve().parents[2] / "fixtures" / "demo" / "claude_code", root, symlinks=True)
    sid = "0b7c9d2e-3f41-4a6b-8c9d-0e1f2a3b4c5d"
    src = root / "projects" / "-home-ana-api" / f"{sid}.jsonl"
    for n in range(12):  # (each copy's messages ids of their own: copies of one message would be one hit)
        (src.parent / f"{sid[:-4]}{n:04d}.jsonl").write_text(
            src.read_text().replace(sid, f"{sid[:-4]}{n:04d}").replace("-0000-4000-8000-", f"-{n + 1:04d}-4000-8000-")
        )
    text = "login timeout"
    plan = parse(text)

    def hits(limit):
        return [
            (h.conversation_id, h.position, h.kind, h.score, h.ref)
            for h in dispatch.search(open_store(str(root)), SearchQuery(text=text, limit=limit), [], None, plan)
        ]

    cheap = {n: hits(n) for n in (1, 3, 7)}

    def full_key(corpus, score, r):
        part, local = corpus.locate(int(r))
        h = dispatch._hit(part.store, part.index, part.seg, local, part.seg.text(local))
        h.score = float(score[r])
        return sort_key(h)

    used = []
    monkeypatch.setattr(fulltext, "_key", lambda *a: used.append(1) or full_key(*a))
    assert cheap == {n: hits(n) for n in (1, 3, 7)} and all(cheap.values())
    assert len(used) > 7  # (there were rows tied beyond the limit to order)


def test_a_score_is_shown_as_its_shortest_decimal_in_its_order():
    """``fulltext._shown``: each float32 score as the float of its shortest decimal, which reads back as
    that score; scores keep their order and their ties (neighbouring float32s included)."""
    import numpy as np

    rng = np.random.default_rng(11)
    s = (rng.random(4000) * 30).astype(np.float32)
    s = np.concatenate([s, np.nextafter(s[:500], np.float32(np.inf)), s[:100], np.float32([0, 1e-7, 3.5])])
    shown = [fulltext._shown(x) for x in s]
    assert all(np.float32(v) == x for v, x in zip(shown, s))
    assert all(len(repr(v)) <= 11 for v in shown)  # (at most 9 significant digits, as float32 needs)
    order = np.argsort(s, kind="stable")
    assert [shown[i] for i in order] == sorted(shown)
    for i in range(len(s)):
        j = (i * 7919) % len(s)
        assert (shown[i] == shown[j]) == (s[i] == s[j]) and (shown[i] < shown[j]) == (s[i] < s[j])
