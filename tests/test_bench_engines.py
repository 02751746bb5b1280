"""bench/bench_engines.py's translation of the query language to FTS5: each operator means in FTS5 what
it means in samctl (any word may match, +required, -excluded, "phrase", prefix*), and user text never
becomes FTS5 syntax.  Runs on a few rows in memory."""

import sqlite3

import pytest

from bench.bench_engines import FTS5_QUERY, FTS5_SCHEMA, QUERIES, split_query, to_fts5

ROWS = [
    "the budget for portland",
    "weekend trip to portland",
    "src/main.rs is broken",
    "budgeting is hard",
    "e.g. café zürich",
    "hotel and budget",
    'she said "AND" NOT OR',
]


@pytest.fixture(scope="module")
def match():
    con = sqlite3.connect(":memory:")
    try:
        con.execute(FTS5_SCHEMA)
    except sqlite3.OperationalError:
        pytest.skip("this Python's SQLite has no FTS5")
    con.executemany("INSERT INTO t(rowid, body) VALUES (?, ?)", enumerate(ROWS))

    def run(q: str) -> set:
        return {ROWS[r] for r, _ in con.execute(FTS5_QUERY.replace("LIMIT 10", ""), (to_fts5(split_query(q)),))}

    return run


@pytest.mark.parametrize(
    "q, want",
    [
        ("budget portland", {0, 1, 3, 5}),  # any may match; budget ~ budgeting (porter)
        ("+budget portland", {0, 3, 5}),
        ("+portland +budget", {0}),
        ("budget -portland", {3, 5}),
        ("portland -budget -weekend", set()),
        ('"weekend trip"', {1}),
        ('"trip weekend"', set()),
        ('+"weekend trip" -hotel', {1}),
        ("budg*", {0, 3, 5}),
        ("src/main.rs", {2}),
        ('"e.g."', {4}),
        ("cafe zurich", {4}),  # accents folded
        ("AND", {5, 6}),  # an FTS5 keyword is a word here (and stems to "and")
        ("NOT", {6}),
    ],
)
def test_operators_mean_what_they_mean_in_samctl(match, q, want):
    assert match(q) == {ROWS[i] for i in want}


def test_filters_and_purely_negative_queries_have_no_equivalent():
    assert split_query("role:user budget") is None
    assert split_query("budget title:portland") is None
    assert split_query("-budget") is None
    assert split_query('""') is None


def test_every_fixed_query_translates_or_is_a_filter(match):
    for _, q in QUERIES:
        parts = split_query(q)
        if parts is None:
            assert ":" in q
        else:
            match(q)  # FTS5 accepts the expression
