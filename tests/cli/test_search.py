"""samctl search end to end: SAM's scoring and exact search (docs/formats/sam.md §7.7, §11), every option, bad input,
read-only proof, --touch."""

from __future__ import annotations

import json
import re
import sqlite3
import subprocess
import sys
import textwrap

import pytest

from samctl.importance import importance
from samctl.search.sam_scoring import cosine, embed, keyword_boost, tokens
from tests.conftest import fingerprint
from tests.search_helpers import (
    API_ID,
    MEM1,
    MEM1_TEXT,
    MEM2,
    MEM2_TEXT,
    PROBE,
    Q3_ID,
    SAM_ID,
    TOPIC,
    TOPIC_MEM,
    add_probe,
    age,
    insert_memory,
    vec,
)

MERMAID_ID = "20260810_140307_512"


def search(run, root, *args, code=0):
    """``samctl search``; with --threshold (SAM's scores), as --rank sam: this file tests SAM's
    scoring (tests/cli/test_search_bm25.py tests the default ranking)."""
    if "--threshold" in args and "--like" not in args and "--rank" not in args and "--exact" not in args:
        args = (*args, "--rank", "sam")
    r = run("--root", root, "search", *args)
    empty = r.stdout.strip() in ("", "[]")  # nothing matches: exit 1, as grep (issue #33)
    assert r.exit_code == (1 if code == 0 and empty else code), (r.exit_code, r.stdout, r.stderr)
    return r


def hits(run, root, *args, code=0):
    r = search(run, root, *args, "--format", "json", code=code)
    return json.loads(r.stdout)


def sam_score(query: str, text: str) -> float:
    return cosine(embed(query), embed(text)) + keyword_boost(tokens(query), tokens(text))


@pytest.fixture
def sam(sam_demo, monkeypatch):
    age(sam_demo)
    monkeypatch.setenv("SAMCTL_DEBUG", "1")  # an index that fails must fail the test, not fall back quietly
    return sam_demo


def test_the_index_is_really_used(run, sam):
    from samctl.search import index as ix
    from samctl.stores import open_store

    search(run, sam, "budget")
    idx = ix.open_index(open_store(str(sam)))
    assert idx.rows > 5 and (ix.index_dir(open_store(str(sam))) / "manifest").exists()


# --- spec vectors, with and without the index ---------------------------------------------------


@pytest.mark.parametrize(
    "query, boost1, boost2",
    [
        ("portland budget", 0.055556, 0.0),
        ("Portland weather Sunday", 0.05, 0.045455),
        ("rain", 0.0, 0.055556),
    ],
)
def test_spec_keyword_boost_vectors_through_the_cli(run, sam, query, boost1, boost2):
    for mode in ((), ("--no-index",)):
        got = {h["id"]: h for h in hits(run, sam, query, "--in", "memories", "--threshold", "-10", *mode)}
        assert round(got[MEM1]["boost"], 6) == boost1
        assert round(got[MEM2]["boost"], 6) == boost2
        for mid, text in ((MEM1, MEM1_TEXT), (MEM2, MEM2_TEXT)):
            assert got[mid]["cosine"] == cosine(embed(query), embed(text))
            assert got[mid]["score"] == sam_score(query, text)  # exactly SAM's arithmetic


def test_index_and_no_index_give_identical_results(run, sam):
    for args in (
        ("portland budget",),
        ("budget", "--threshold", "0"),
        ("portland budget", "--in", "all"),
        ("q3 budget maximum", "--limit", "3"),
        ("--exact", "portland"),
    ):
        a = hits(run, sam, *args)
        b = hits(run, sam, *args, "--no-index")
        c = hits(run, sam, *args)  # warm index
        assert a == b == c, args
        assert a, args


def test_results_are_best_first_and_thresholded(run, sam):
    got = hits(run, sam, "portland budget", "--threshold", "0.3", "--limit", "50")
    scores = [h["score"] for h in got]
    assert scores == sorted(scores, reverse=True)
    assert all(s >= 0.3 for s in scores)
    everything = hits(run, sam, "portland budget", "--threshold", "-10", "--limit", "1000")
    assert [h for h in everything if h["score"] >= 0.3] == got
    # every message and memory with text is a candidate (thinking message has no content)
    kinds = {h["kind"] for h in everything}
    assert kinds == {"memory", "message"}


def test_hit_fields(run, sam):
    h = next(h for h in hits(run, sam, "portland budget", "--threshold", "0") if h["id"] == MEM1)
    assert h["kind"] == "memory" and h["conversation_id"] == SAM_ID and h["title"] == "Portland weekend trip"
    assert h["date"] == "2026-08-10T14:02:12.345Z" and h["importance"] == 0.8
    assert h["content_type"] == "user_input" and h["dimension"] == 512
    assert h["text"] == MEM1_TEXT and "Portland" in h["snippet"]
    m = next(
        h
        for h in hits(run, sam, "portland budget", "--threshold", "0", "--in", "messages")
        if h["id"] == "F3C23113-9455-4E36-A06C-0599778A17C2"
    )
    assert m["kind"] == "message" and m["role"] == "user" and m["importance"] == 0.9
    assert m["date"] == "2026-08-10T14:02:11Z"


def test_table_output(run, sam):
    r = search(run, sam, "portland budget")
    lines = r.stdout.splitlines()
    assert lines[0].split()[:2] == ["SCORE", "KIND"]
    first = lines[1]
    assert re.match(r"\d\.\d{3}\s+(memory|message)\s+[0-9A-F-]{36}\s+\d{4}-\d\d-\d\d \d\d:\d\d\s+\S", first)
    assert lines[2].startswith("       ")  # the snippet, indented under the hit
    r = search(run, sam, "portland", "--threshold", "2")  # scores are at most 1.5
    assert r.stdout == "" and "no matches" in r.stderr


def test_jsonl_output(run, sam):
    r = search(run, sam, "portland budget", "--format", "jsonl")
    rows = [json.loads(ln) for ln in r.stdout.splitlines()]
    assert rows == hits(run, sam, "portland budget")


# --- --like: stored vectors, same length only -------------------------------------------------


def test_like_ranks_the_spec_vectors(run, sam):
    add_probe(sam)
    age(sam)
    for mode in ((), ("--no-index",)):
        got = hits(run, sam, "portland budget", "--like", PROBE, "--threshold", "0", *mode)
        # query vector e3: cos 0.6 and 0.8, boost 1/18 and 0 -> memory 2 first (docs/formats/sam.md §7.7)
        assert [h["id"] for h in got] == [MEM2, MEM1, TOPIC_MEM]
        assert [round(h["score"], 6) for h in got] == [0.8, 0.655556, 0.1]
        # the topic memory has a 2,048-byte vector: never compared with a 4,096-byte one (cosine 0),
        # only its keywords count ("budget": 1 of 5 words)
        assert [round(h["cosine"], 6) for h in got] == [0.8, 0.6, 0.0]
        assert hits(run, sam, "portland budget", "--like", PROBE, *mode) == got[:2]  # SAM's default 0.3


def test_like_without_query_uses_the_memory_text(run, sam):
    got = hits(run, sam, "--like", MEM1[:8].lower(), "--threshold", "0.01")  # score 0 would pass 0
    assert [h["id"] for h in got] == [MEM2]  # the seed itself is not listed
    assert round(got[0]["cosine"], 6) == 0.48
    assert got[0]["score"] == got[0]["cosine"] + keyword_boost(tokens(MEM1_TEXT), tokens(MEM2_TEXT))


def test_like_errors(run, sam, mermaid_demo):
    r = search(run, sam, "--like", "FFFFFFFF", code=4)
    assert "no memory" in r.stderr
    r = search(run, sam, "--like", "not-a-uuid", code=2)
    r = search(run, sam, "x", "--like", MEM1, "--exact", code=2)
    r = search(run, sam, "x", "--like", MEM1, "--in", "messages", code=2)
    r = search(run, mermaid_demo, "--like", MEM1, code=2)
    assert "SAM" in r.stderr
    search(run, sam, code=2)  # neither QUERY nor --like


def test_sams_retrieval_refuses_the_filters_it_would_read_as_words(run, sam):
    """--rank sam and --like read the query as SAM does, as words: a filter would be searched for, not obeyed,
    so it is a usage error (exit 2) that says which and what narrows instead; a colon in words is no filter."""
    before = fingerprint(sam)
    for query in (
        "budget role:assistant",
        "budget in:memories",
        "budget title:trip",
        "budget store:sam",
        "ls tool:Bash",
    ):
        for extra in (["--rank", "sam"], ["--like", MEM1]):
            r = search(run, sam, query, *extra, code=2)
            op, option = query.split()[1].split(":")[0] + ":", "--rank sam" if extra[0] == "--rank" else "--like"
            assert f"{option} reads the query as words, as SAM does: {op} would not filter it" in r.stderr, r.stderr
            assert "--in and --conversation" in r.stderr
    assert "role:bot" in search(run, sam, "budget role:bot", "--rank", "sam", code=2).stderr
    assert hits(run, sam, "the time: budget", "--rank", "sam", "--threshold", "0")  # (not an operator)
    search(run, sam, "--rank", "sam", "--", "-draft", code=0)  # (no filter: words, as SAM reads them)
    assert hits(run, sam, "budget role:assistant", "--exact", code=0) == []  # (--exact: a substring, as typed)
    assert fingerprint(sam) == before


# --- exact (docs/formats/sam.md §11) ----------------------------------------------------------------------------------


def test_exact_is_case_insensitive_substring_newest_first(run, sam):
    got = hits(run, sam, "--exact", "PORTLAND", "--limit", "100")
    assert got and all("portland" in h["text"].lower() for h in got)
    assert all(h["score"] is None for h in got)
    dates = [h["date_ts"] for h in got]
    assert dates == sorted(dates, reverse=True)
    everything = hits(run, sam, "portland", "--threshold", "-10", "--limit", "1000")
    want = {h["id"] for h in everything if "portland" in h["text"].lower()}
    # --rank sam scores memories and messages; --exact also finds the tool calls
    assert {h["id"] for h in got if h["kind"] != "call"} == want
    assert [h["text"] for h in got if h["kind"] == "call"] == ["weather_operations(Portland, OR, forecast)"]


def test_exact_whole_content_first(run, sam):
    got = hits(run, sam, "--exact", "PING")
    assert got[0]["text"] == "ping" and got[0]["exact"] == "whole"


def test_exact_snippet_is_75_chars_either_side(run, sam, tmp_path):
    db = sam / "conversations" / SAM_ID / "memory.db"
    long = "a" * 100 + " NEEDLE " + "b" * 100
    insert_memory(db, "11111111-2222-4333-8444-555555555555", SAM_ID, long, None)
    age(sam)
    h = hits(run, sam, "--exact", "needle")[0]
    pos = long.index("NEEDLE")
    assert h["snippet"] == "..." + long[pos - 75 : pos + 6 + 75] + "..."


# --- options -------------------------------------------------------------------------------------


def test_in_selects_kinds(run, sam):
    assert {h["kind"] for h in hits(run, sam, "portland", "--in", "memories", "--threshold", "0")} == {"memory"}
    assert {h["kind"] for h in hits(run, sam, "portland", "--in", "messages", "--threshold", "0")} == {"message"}


def test_limit(run, sam):
    assert len(hits(run, sam, "budget", "--threshold", "-10", "--limit", "2")) == 2
    assert len(hits(run, sam, "budget", "--threshold", "-10", "--limit", "1000")) > 5


def test_conversation_scope_includes_shared_topic(run, sam):
    got = hits(run, sam, "budget", "--conversation", "c2a1", "--threshold", "0", "--limit", "100")
    assert {h["conversation_id"] for h in got} == {Q3_ID, TOPIC}
    assert TOPIC_MEM in {h["id"] for h in got}
    topic_hit = next(h for h in got if h["id"] == TOPIC_MEM)
    assert topic_hit["title"] == "Finance (shared topic)"
    got = hits(run, sam, "budget", "--conversation", SAM_ID, "--threshold", "0", "--limit", "100")
    assert {h["conversation_id"] for h in got} == {SAM_ID}
    assert {MEM1, MEM2} <= {h["id"] for h in got}
    # the same with --no-index
    assert got == hits(run, sam, "budget", "--conversation", SAM_ID, "--threshold", "0", "--limit", "100", "--no-index")
    search(run, sam, "budget", "--conversation", "FFFF", code=4)


def test_since_until(run, sam):
    got = hits(run, sam, "budget", "--threshold", "-10", "--limit", "1000", "--since", "2026-09-01")
    assert got and all(h["date_ts"] >= 1788220800 for h in got)  # 2026-09-01T00:00Z (TZ=UTC)
    assert {h["conversation_id"] for h in got} <= {Q3_ID, TOPIC}
    got = hits(run, sam, "budget", "--threshold", "-10", "--limit", "1000", "--until", "2026-08-01")
    assert {h["conversation_id"] for h in got} == {API_ID}


def test_min_importance_uses_sams_score(run, sam, mermaid_demo):
    age(mermaid_demo)
    for root in (sam, mermaid_demo):
        got = hits(run, root, "the", "--threshold", "-10", "--limit", "1000", "--min-importance", "0.85")
        assert got and all(h["importance"] >= 0.85 for h in got)
        every = hits(run, root, "the", "--threshold", "-10", "--limit", "1000")
        key = lambda h: (h["conversation_id"], h["id"], h["position"])  # noqa: E731
        assert {key(h) for h in got} == {key(h) for h in every if h["importance"] >= 0.85}
    # mermaid stores no importance: computed exactly as docs/formats/sam.md §4.5.4 (and as show --min-importance does)
    m = hits(run, mermaid_demo, "budget lines", "--threshold", "0", "--limit", "100")
    for h in m:
        if h["role"] in ("user", "assistant"):
            assert h["importance"] == importance(h["text"], h["role"] == "user")


def test_show_and_search_agree_on_importance(run, mermaid_demo):
    age(mermaid_demo)
    shown = run("--root", mermaid_demo, "show", "20260812", "--min-importance", "0.85").stdout
    got = hits(
        run,
        mermaid_demo,
        "the",
        "--conversation",
        "20260812",
        "--threshold",
        "-10",
        "--limit",
        "100",
        "--min-importance",
        "0.85",
    )
    assert got
    for h in got:
        assert h["text"].splitlines()[0] in shown


def test_mermaid_messages(run, mermaid_demo):
    age(mermaid_demo)
    got = hits(run, mermaid_demo, "flaky test", "--threshold", "0.2")
    assert got and got[0]["conversation_id"] == MERMAID_ID
    assert all(h["kind"] == "message" for h in got)
    assert hits(run, mermaid_demo, "flaky", "--in", "memories") == []
    assert got == hits(run, mermaid_demo, "flaky test", "--threshold", "0.2", "--no-index")


def test_bad_option_values(run, sam):
    search(run, sam, "x", "--limit", "-1", code=2)
    search(run, sam, "x", "--since", "yesterday-ish", code=2)
    search(run, sam, "x", "--in", "notes", code=2)
    search(run, sam, "   ", code=2)


# --- read-only ------------------------------------------------------------------------------------


def test_search_changes_nothing_in_the_store(run, sam, mermaid_demo):
    age(mermaid_demo)
    for root in (sam, mermaid_demo):
        before = fingerprint(root)
        for args in (("budget",), ("budget", "--no-index"), ("--exact", "budget"), ("budget", "--in", "all")):
            search(run, root, *args)
        if root == sam:
            search(run, root, "--like", MEM1, "--threshold", "0")
        assert fingerprint(root) == before
        assert not [p for p in root.rglob("*") if p.name.endswith(("-journal", "-wal", "-shm"))]


# --- bad input ------------------------------------------------------------------------------------

BAD = "A0000000-0000-4000-8000-0000000000B1"


def _bad_db(base, maker):
    d = base / "conversations" / BAD
    d.mkdir(mode=0o700)
    maker(d / "memory.db")
    age(base)
    return d / "memory.db"


def _rows(path, rows):
    from samctl.stores.sam.memorydb import create_memory_db

    create_memory_db(path, rows)


def _row(mid, content="a budget memory", **over):
    r = dict(
        id=mid,
        conversation_id=BAD,
        content=content,
        content_type="message",
        embedding=vec(256, i1=1.0),
        importance=0.5,
        created_at="2026-08-10T14:02:12.345",
        access_count=0,
        last_accessed="2026-08-10T14:02:12.345",
        tags=None,
    )
    r.update(over)
    return tuple(r.values())


GOOD = "A0000000-0000-4000-8000-00000000F00D"

BAD_INPUTS = {
    "db-not-sqlite": lambda p: p.write_bytes(b"not a database, just text" * 40),
    "db-schema": lambda p: sqlite3.connect(p).executescript("CREATE TABLE notes(x TEXT);"),
    "memory-bad-id": lambda p: _rows(p, [_row("not-a-uuid"), _row(GOOD)]),
    "memory-bad-date": lambda p: _rows(
        p, [_row("A0000000-0000-4000-8000-000000000D01", created_at="yesterday"), _row(GOOD)]
    ),
    "memory-bad-blob": lambda p: _rows(
        p, [_row("A0000000-0000-4000-8000-000000000D02", embedding=b"\0" * 12), _row(GOOD)]
    ),
    "memory-nan": lambda p: _rows(
        p, [_row("A0000000-0000-4000-8000-000000000D03", embedding=vec(256, i1=float("nan"))), _row(GOOD)]
    ),
}


@pytest.mark.parametrize("code", sorted(BAD_INPUTS))
@pytest.mark.parametrize("mode", [(), ("--no-index",)])
def test_bad_memory_db_is_a_finding_and_the_rest_answers(run, sam, code, mode):
    path = _bad_db(sam, BAD_INPUTS[code])
    for _ in range(2):  # the second run answers from the index and still reports the finding
        r = search(run, sam, "budget", "--threshold", "0", "--limit", "100", "--format", "json", *mode, code=3)
        got = json.loads(r.stdout)
        assert MEM1 in {h["id"] for h in got}  # the rest of the store still answers
        assert re.search(rf"error: {code}: {re.escape(str(path))}", r.stderr), r.stderr
        if code.startswith("memory-"):
            assert [h["id"] for h in got if h["conversation_id"] == BAD] == [GOOD]
    assert "Traceback" not in r.stderr


def test_locked_memory_db_is_a_finding(run, sam):
    db = sam / "conversations" / SAM_ID / "memory.db"
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            textwrap.dedent(f"""
        import sqlite3, sys
        c = sqlite3.connect({str(db)!r}, isolation_level=None)
        c.execute("BEGIN EXCLUSIVE")
        print("locked", flush=True)
        sys.stdin.read()
    """),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "locked"
        r = search(run, sam, "budget", "--threshold", "0", "--format", "json", code=3)
        assert "db-locked" in r.stderr
        assert {h["kind"] for h in json.loads(r.stdout)} == {"memory", "message"}  # topic memory still there
    finally:
        holder.stdin.close()
        holder.stdout.close()
        holder.wait()
    # unlocked: the index did not keep the failure
    r = search(run, sam, "budget", "--threshold", "0", "--format", "json")
    assert MEM1 in {h["id"] for h in json.loads(r.stdout)}


# --- --touch --------------------------------------------------------------------------------------


def _counts(db):
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    rows = {
        r[0]: (r[1], r[2]) for r in con.execute("SELECT id, access_count, last_accessed FROM conversation_memories")
    }
    con.close()
    return rows


def test_touch_writes_sams_format_for_returned_rows_only(run, sam):
    db = sam / "conversations" / SAM_ID / "memory.db"
    before = _counts(db)
    got = hits(
        run,
        sam,
        "portland budget",
        "--in",
        "memories",
        "--conversation",
        SAM_ID,
        "--limit",
        "1",
        "--threshold",
        "0",
        "--touch",
    )
    assert len(got) == 1
    after = _counts(db)
    top = got[0]["id"]
    for mid, (count, last) in after.items():
        if mid == top:
            assert count == before[mid][0] + 1
            assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}", last) and last != before[mid][1]
        else:
            assert (count, last) == before[mid]
    assert not (db.parent / "memory.db-journal").exists()


def test_touch_refuses_while_sam_runs(run, sam):
    before = fingerprint(sam)
    r = run("--root", sam, "search", "portland budget", "--touch", env={"SAMCTL_ASSUME_SAM_RUNNING": "1"})
    assert r.exit_code == 5 and "SAM is running" in r.stderr
    assert fingerprint(sam) == before
    r = run(
        "--root",
        sam,
        "search",
        "portland budget",
        "--in",
        "memories",
        "--touch",
        "--force",
        env={"SAMCTL_ASSUME_SAM_RUNNING": "1"},
    )
    assert r.exit_code == 0, r.stderr
    assert fingerprint(sam) != before


def test_touch_is_for_sam_memories(run, mermaid_demo):
    r = run("--root", mermaid_demo, "search", "flaky", "--touch")
    assert r.exit_code == 2 and "SAM" in r.stderr


def test_help_shows_examples(run):
    r = run("search", "--help")
    assert "Examples:" in r.stdout and "samctl search" in r.stdout
    r = run("index", "--help")
    assert "Examples:" in r.stdout


# --- context_archive.db (docs/formats/sam.md §8) ----------------------------------------------------------------------


def test_archived_messages_only_when_the_conversation_lost_them(run, sam):
    from samctl.stores.sam.memorydb import create_archive_db

    kept = "Plan a weekend trip to Portland within a $500 budget."  # still in conversation.json
    lost = "Earlier we compared zanzibar ferry times for the trip."
    create_archive_db(
        sam / "conversations" / SAM_ID / "context_archive.db",
        [
            {
                "id": "AAAAAAAA-0000-4000-8000-000000000001",
                "conversation_id": SAM_ID,
                "messages": [
                    {
                        "id": "BBBBBBBB-0000-4000-8000-000000000001",
                        "content": kept,
                        "isFromUser": True,
                        "timestamp": 808063980.5,
                        "role": "user",
                    },
                    {
                        "id": "BBBBBBBB-0000-4000-8000-000000000002",
                        "content": lost,
                        "isFromUser": False,
                        "timestamp": 808063990.0,
                        "role": "assistant",
                    },
                ],
                "time_start": "2026-08-10T14:13:00.500",
                "time_end": "2026-08-10T14:13:10.000",
                "summary": "User asked",
                "key_topics": ["zanzibar"],
                "token_count": 20,
                "created_at": "2026-08-10T14:13:10.000",
            }
        ],
    )
    age(sam)
    for mode in ((), ("--no-index",)):
        got = hits(run, sam, "zanzibar ferry", "--threshold", "0.2", *mode)
        assert got[0]["kind"] == "archived" and got[0]["text"] == lost and got[0]["role"] == "assistant"
        assert got[0]["conversation_id"] == SAM_ID and got[0]["title"] == "Portland weekend trip"
        assert got[0]["date"] == "2026-08-10T14:13:10Z"  # 808063990 s after 2001-01-01
        assert got[0]["id"] == "AAAAAAAA-0000-4000-8000-000000000001#1"
        every = hits(run, sam, kept, "--threshold", "-10", "--limit", "1000", *mode)
        assert [h["kind"] for h in every if h["text"] == kept] == ["message"]  # the archived copy is not repeated
        kinds = {h["kind"] for h in hits(run, sam, "zanzibar", "--in", "messages", "--threshold", "0.1", *mode)}
        assert "archived" in kinds and "memory" not in kinds  # --in messages includes the archives
        assert {h["kind"] for h in hits(run, sam, "zanzibar", "--in", "memories", "--threshold", "0.1", *mode)} <= {
            "memory"
        }


def test_a_capped_search_does_not_hide_a_conversation_from_the_next(run, sam):
    """The index keeps a too-large file unsigned: read again next time, under that run's caps."""
    r = run("--root", sam, "--max-file-size", "4K", "search", "--exact", "Portland")
    assert r.exit_code == 3 and "too-large" in r.stderr
    r = run("--root", sam, "search", "--exact", "Portland", "--format", "json")
    assert r.exit_code == 0 and "too-large" not in r.stderr, r.stderr
    assert "8B58CBC4-ACA7-4811-AE66-C01921690310" in r.stdout


def test_a_nan_threshold_is_a_usage_error(run, sam):
    r = run("--root", sam, "search", "portland", "--threshold", "nan")
    assert r.exit_code == 2 and "--threshold" in r.stderr and "nan is not a number" in r.stderr


@pytest.mark.parametrize("damage", ["garbage", "locked"])
def test_like_a_memory_in_a_database_that_cannot_be_read_is_not_called_missing(run, sam, damage):
    db = sam / "conversations" / SAM_ID / "memory.db"
    holder = None
    if damage == "garbage":
        db.write_bytes(b"not a database at all" * 100)
    else:
        holder = sqlite3.connect(db, isolation_level=None)
        holder.execute("BEGIN EXCLUSIVE")
    try:
        before = fingerprint(sam)
        r = run("--root", sam, "search", "--like", MEM1[:4])
        assert r.exit_code == 3, r.stderr
        assert "could not be read" in r.stderr and str(db) in r.stderr
        assert ("db-locked" if damage == "locked" else "db-not-sqlite") in r.stderr
        assert "no memory" not in r.stderr.replace("no readable memory", "")
        if holder is None:
            assert fingerprint(sam) == before
    finally:
        if holder is not None:
            holder.close()
    if damage == "garbage":  # an id no database holds, while one cannot be read: still not "no such memory"
        r = run("--root", sam, "search", "--like", "FFFF")
        assert r.exit_code == 3


@pytest.mark.parametrize("index", [[], ["--no-index"]])
def test_exact_search_matches_canonically_equivalent_text(run, tmp_path, index):
    """Swift compares strings by canonical equivalence: "café" typed (NFC) finds "café" stored
    decomposed (NFD, as text from macOS file names often is), and "cafe" does not."""
    import unicodedata

    from tests.conftest import make_fixtures as mf

    base = tmp_path / "SAM"
    cid = "11111111-2222-4333-8444-555555555555"
    nfd = unicodedata.normalize("NFD", "Meet at the café near Zürich station")
    msgs = [mf.sam_message("A1111111-2222-4333-8444-555555555555", "user", nfd, "2026-08-10T14:02:11Z")]
    (base / "conversations" / cid).mkdir(parents=True)
    (base / "conversations" / cid / "conversation.json").write_text(
        mf.sam_dumps(mf.sam_doc(cid, "Unicode test", msgs, "2026-08-10T14:02:05Z", "2026-08-10T14:02:12Z"))
    )
    for query in ("café", "ZÜRICH STATION", unicodedata.normalize("NFD", "café")):
        r = run("--root", base, "search", "--exact", query, "--format", "json", *index)
        assert r.exit_code == 0, (query, r.output)
        hits = json.loads(r.stdout)
        assert len(hits) == 1 and hits[0]["exact"] == "substring", query
        assert unicodedata.normalize("NFC", query).lower() in unicodedata.normalize("NFC", hits[0]["snippet"]).lower()
    r = run("--root", base, "search", "--exact", "cafe", "--format", "json", *index)
    assert r.exit_code == 1 and json.loads(r.stdout) == [], r.output  # (nothing matches: 1, as grep)


def test_exact_snippet_shows_the_match_where_lowercasing_and_nfc_do_not_commute(run, tmp_path):
    from tests.conftest import make_fixtures as mf

    base = tmp_path / "SAM"
    cid = "78888888-2222-4333-8444-555555555555"
    text = "filler " * 40 + "ΚΑ\u0342ΛΟΣ end"
    (base / "conversations" / cid).mkdir(parents=True)
    (base / "conversations" / cid / "conversation.json").write_text(
        mf.sam_dumps(
            mf.sam_doc(
                cid,
                "Greek",
                [mf.sam_message("A1000000-2222-4333-8444-555555555555", "user", text, "2026-08-10T10:00:00Z")],
                "2026-08-10T10:00:00Z",
                "2026-08-10T10:00:00Z",
            )
        )
    )
    r = run("--root", base, "search", "--exact", "κᾶλος", "--format", "json")
    (hit,) = json.loads(r.stdout)
    assert "end" in hit["snippet"] and hit["snippet"].startswith("...")
