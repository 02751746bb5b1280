"""search.dispatch: the ranking equals SAM's brute force (docs/formats/sam.md §7.7), excerpts (§11), importance."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from samctl.importance import message_importance
from samctl.model import Message
from samctl.search import dispatch as sx
from samctl.search import sam_scoring
from samctl.stores import open_store
from samctl.stores.sam.memorydb import create_memory_db
from tests.search_helpers import age, vec

SCOPE = "8B58CBC4-ACA7-4811-AE66-C01921690310"
WORDS = [
    "budget",
    "Budget.",
    "portland",
    "Portland,",
    "trip",
    "the",
    "rain",
    "sunny",
    "a",
    "to",
    "$500",
    "café",
    "Zürich",
    "weekend",
    "hotel",
    "hotel!",
    "it",
    "deadline",
]


def _tree(base: Path, texts: list[str]) -> None:
    conv = base / "conversations" / SCOPE
    conv.mkdir(parents=True, mode=0o700)
    rows = [
        (
            f"{i:08X}-0000-4000-8000-{i:012X}",
            SCOPE,
            t,
            "message",
            vec(256, i1=1.0),
            0.5,
            "2026-08-10T14:02:12.345",
            0,
            "2026-08-10T14:02:12.345",
            None,
        )
        for i, t in enumerate(texts)
    ]
    create_memory_db(conv / "memory.db", rows)
    age(base)


def _brute(query: str, texts: list[str], threshold: float) -> list[tuple[str, float]]:
    """SAM's retrieveRelevantMemories, row by row (docs/formats/sam.md §7.7), with samctl's embedding."""
    q = sam_scoring.embed(query)
    qt = sam_scoring.tokens(query)
    out = []
    for i, t in enumerate(texts):
        s = sam_scoring.cosine(q, sam_scoring.embed(t)) + sam_scoring.keyword_boost(qt, sam_scoring.tokens(t))
        if s >= threshold:
            out.append((f"{i:08X}-0000-4000-8000-{i:012X}", s))
    out.sort(key=lambda x: -x[1])
    return out


text_st = st.lists(st.sampled_from(WORDS), min_size=0, max_size=12).map(" ".join)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    texts=st.lists(text_st, min_size=1, max_size=30),
    query=text_st.filter(str.strip),
    threshold=st.sampled_from([0.0, 0.2, 0.3, 0.6]),
    limit=st.integers(1, 8),
)
def test_ranking_equals_sams_brute_force(texts, query, threshold, limit):
    base = Path(tempfile.mkdtemp()) / "SAM"
    try:
        _tree(base, texts)
        want = _brute(query, texts, threshold)
        for use_index in (True, False):
            q = sx.SearchQuery(
                text=query, threshold=threshold, limit=limit, where="memories", use_index=use_index, rank="sam"
            )
            got = [(h.ref, h.score) for h in sx.search(open_store(str(base)), q, [])]
            assert [s for _, s in got] == [s for _, s in want][:limit]  # exactly the same floats
            if len(want) > limit:
                cut = want[limit - 1][1]
                assert {r for r, s in got if s > cut} == {r for r, s in want if s > cut}
            else:
                assert sorted(got) == sorted(want)
    finally:
        shutil.rmtree(base.parent, ignore_errors=True)


def test_excerpt_is_sams_75_characters_either_side():
    t = "x" * 200 + "HIT" + "y" * 200
    assert sx.excerpt(t, 200, 3) == "..." + "x" * 75 + "HIT" + "y" * 75 + "..."
    assert sx.excerpt("short HIT text", 6, 3) == "short HIT text"
    assert sx.excerpt("HIT" + "y" * 100, 0, 3) == "HIT" + "y" * 75 + "..."
    assert sx.excerpt("y" * 100 + "HIT", 100, 3) == "..." + "y" * 75 + "HIT"


def test_snippet_centres_on_the_first_query_word():
    t = "z" * 300 + " Portland. " + "w" * 300
    s = sx.snippet(t, "portland budget")
    assert s.startswith("...") and s.endswith("...") and "Portland." in s
    assert sx.snippet("no words in common here", "portland") == "no words in common here"


def test_message_importance_is_shared_with_show():
    from samctl.render.text import visible

    msgs = [
        Message("user", "Plan a trip within a $500 budget."),
        Message("assistant", "ok"),
        Message("tool", "what? how?"),
        Message("reasoning", "which budget?"),
        Message("assistant", "fine", importance=0.95),
    ]
    want = [0.9, 0.3, 0.5, 0.5, 0.95]
    assert [message_importance(m) for m in msgs] == want
    assert [m.content for m in visible(msgs, True, 0.85)] == ["Plan a trip within a $500 budget.", "fine"]


def test_search_query_validation(sam_demo):
    store = open_store(str(sam_demo))
    with pytest.raises(sx.UsageError):
        sx.search(store, sx.SearchQuery(text=""), [])
    with pytest.raises(sx.UsageError):
        sx.search(store, sx.SearchQuery(text="x", exact=True, like="296E5007"), [])
