"""samctl search's default ranking (BM25 with conversation-aware evidence) end to end: what it finds,
what it hides (nothing), its output, its errors, and that the index (rebuilt, refreshed, temporary)
never changes an answer."""

from __future__ import annotations

import json
import os
import struct
import zlib

import pytest

from samctl.search import index as ix
from samctl.stores import open_store
from tests.conftest import fingerprint
from tests.search_helpers import Q3_ID, SAM_ID, age


@pytest.fixture
def sam(sam_demo, monkeypatch):
    age(sam_demo)
    monkeypatch.setenv("SAMCTL_DEBUG", "1")
    return sam_demo


def hits(run, root, *args, code=0):
    r = run("--root", root, "search", *args, "--format", "json")
    empty = r.stdout.strip() in ("", "[]")  # nothing matches: exit 1, as grep (issue #33)
    assert r.exit_code == (1 if code == 0 and empty else code), (r.exit_code, r.stdout, r.stderr)
    return json.loads(r.stdout) if r.stdout.strip() else []


def test_the_message_holding_the_words_comes_first(run, sam):
    got = hits(run, sam, "portland", "budget", "--per-conversation", "0")  # several words, no quotes
    assert got[0]["text"] == "Plan a weekend trip to Portland within a $500 budget."
    assert got[0]["conversation_id"] == SAM_ID and got[0]["role"] == "user"
    assert [h["score"] for h in got] == sorted((h["score"] for h in got), reverse=True)


def test_nothing_is_hidden_by_a_threshold_and_n_limits(run, sam):
    every = hits(run, sam, "budget", "-n", "1000")
    holding = [h for h in every if "budget" in h["text"].lower()]
    assert len(holding) >= 4  # every message and memory that says it
    assert {h["kind"] for h in holding} == {"message", "memory"}
    assert every[0] in holding
    assert hits(run, sam, "budget", "-n", "2") == every[:2]


def test_a_query_of_stop_words_finds_the_rows_holding_them(run, sam):
    got = hits(run, sam, "the", "-n", "1000")
    assert got and all(" the " in f" {h['text'].lower()} " or h["context"] for h in got)
    assert any(" the " in f" {h['text'].lower()} " for h in got)


def test_stemming_and_accents(run, sam):
    assert hits(run, sam, "budgets")[0]["text"] == hits(run, sam, "budget")[0]["text"]
    assert hits(run, sam, "PORTLAND")[0]["text"] == hits(run, sam, "portland")[0]["text"]


def test_json_keeps_the_fields_and_adds_the_parts(run, sam):
    h = hits(run, sam, "portland budget")[0]
    assert "cosine" not in h and "boost" not in h  # (SAM's scoring only: docs/json.md)
    parts = h["parts"]
    assert set(parts) == {"own", "date", "context", "conversation", "addressee", "reply", "diversity"}
    assert h["score"] == pytest.approx(sum(parts.values()))
    for key in (
        "kind",
        "conversation_id",
        "title",
        "id",
        "position",
        "date",
        "importance",
        "role",
        "snippet",
        "text",
        "store",
    ):
        assert key in h


def test_the_table_shows_the_command_that_opens_each_hit(run, sam):
    r = run("--root", sam, "search", "portland budget", "-n", "3")
    assert r.exit_code == 0, r.stderr
    assert "ROLE" in r.stdout.splitlines()[0]
    assert f"samctl --root {sam} show {SAM_ID} --at 0" in r.stdout  # pasteable: the same store as this run


def test_a_turn_found_by_its_neighbour_says_so(run, sam):
    got = hits(run, sam, "portland budget", "-n", "20")
    by_neighbour = [h for h in got if h["context"]]
    assert by_neighbour and all(h["parts"]["context"] > 0 or h["parts"]["conversation"] > 0 for h in by_neighbour)
    assert any(h["context"].startswith("user before") for h in by_neighbour)


def test_threshold_belongs_to_rank_sam(run, sam):
    before = fingerprint(sam)
    r = run("--root", sam, "search", "budget", "--threshold", "0.2")
    assert r.exit_code == 2 and "--rank sam" in r.stderr and "Traceback" not in r.stderr
    assert fingerprint(sam) == before


def test_a_query_starting_with_a_dash_goes_after_double_dash(run, sam):
    r = run("--root", sam, "search", "-budget")
    assert r.exit_code == 2 and "samctl search -- -budget" in r.stderr
    r = run("--root", sam, "search", "-n", "3", "budget")  # (a known short option is still one)
    assert r.exit_code == 0 and r.stdout


def test_rank_sam_and_exact_do_not_mix(run, sam):
    r = run("--root", sam, "search", "budget", "--exact", "--rank", "sam")
    assert r.exit_code == 2 and "--exact" in r.stderr


def test_no_index_gives_the_same_answer_and_leaves_nothing(run, sam, tmp_path, monkeypatch):
    want = hits(run, sam, "portland budget", "-n", "50")
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    monkeypatch.setenv("TMPDIR", str(tmp))
    assert hits(run, sam, "portland budget", "-n", "50", "--no-index") == want
    assert not list(tmp.iterdir())


def test_a_refreshed_index_ranks_as_a_rebuilt_one(run, sam, tmp_path, monkeypatch):
    """Statistics are global at query time: after a refresh that read one conversation again (its
    rows now in a new segment, the old ones dead), every score is the one a fresh build gives."""
    hits(run, sam, "budget")  # builds the index
    conv = sam / "conversations" / Q3_ID / "conversation.json"
    doc = json.loads(conv.read_text())
    doc["messages"][0]["content"] += " The budget also covers a Portland offsite."
    conv.write_text(json.dumps(doc))
    age(sam)
    cache = os.environ["SAMCTL_CACHE_DIR"]
    for i, q in enumerate(("budget", "portland budget offsite", "the", "weekend trip")):
        monkeypatch.setenv("SAMCTL_CACHE_DIR", cache)
        refreshed = hits(run, sam, q, "-n", "100")
        monkeypatch.setenv("SAMCTL_CACHE_DIR", str(tmp_path / f"fresh-{i}"))
        assert hits(run, sam, q, "-n", "100") == refreshed, q


def test_an_index_of_an_older_samctl_is_replaced_and_said_once(run, sam):
    store = open_store(str(sam))
    d = ix.index_dir(store)
    d.mkdir(parents=True, mode=0o700)
    body = b"{}"
    (d / "manifest").write_bytes(b"SAMCTLIX" + struct.pack("<II", 3, zlib.crc32(body)) + body)
    (d / "seg-0123456789abcdef01234567.seg").write_bytes(b"\0" * (1 << 20))
    r = run("--root", sam, "search", "budget")
    assert r.exit_code == 0 and "older samctl" in r.stderr and "replaced" in r.stderr
    assert not (d / "seg-0123456789abcdef01234567.seg").exists()
    r = run("--root", sam, "search", "budget")
    assert r.exit_code == 0 and "older samctl" not in r.stderr


def test_mermaid_is_ranked_too(run, mermaid_demo):
    age(mermaid_demo)
    got = hits(run, mermaid_demo, "flaky", "test")
    assert got and "flaky" in got[0]["text"].lower() and got[0]["store"] == "mermaid"


def test_highlighting_is_bold_on_a_terminal_and_off_with_no_color():
    from samctl.cli.search import _snippet
    from samctl.search import text as tx
    from samctl.search.hits import Hit, term_snippet

    h = Hit(
        kind="message",
        conversation_id="c",
        title="t",
        ref=None,
        position=0,
        date_ts=None,
        importance=0.5,
        text="We planned the budgets for Zürich.",
    )
    h.snippet, h.marks = term_snippet(h.text, set(tx.query_terms("budget zurich")))
    assert [h.snippet[a:b] for a, b in h.marks] == ["budgets", "Zürich"]
    bold = _snippet(h, 120, True, "budget zurich")
    assert "\x1b[1mbudgets\x1b[0m" in bold and "\x1b[1mZürich\x1b[0m" in bold
    assert "\x1b" not in _snippet(h, 120, False, "budget zurich")


# ---------------------------------------------------------------------------------- the query language


def test_required_and_excluded_words(run, sam):
    got = hits(run, sam, "budget +portland", "-n", "100")
    assert got and all("portland" in h["text"].lower() for h in got)
    got = hits(run, sam, "budget -portland", "-n", "100")
    assert got and not any("portland" in h["text"].lower() for h in got)


def test_a_phrase_is_required_as_written(run, sam):
    got = hits(run, sam, '"weekend trip"', "-n", "100")
    assert got and all("weekend trip" in h["text"].lower() for h in got)
    # the words in another order are not the phrase: it is found nowhere, so its words are searched
    assert hits(run, sam, '"trip weekend"', "-n", "100") == hits(run, sam, "trip weekend", "-n", "100")
    assert hits(run, sam, '"trip weekend" +zanzibar', "-n", "100") == []  # (a required word still holds)


def test_a_prefix_finds_the_words_it_starts(run, sam):
    got = hits(run, sam, "budg*", "-n", "100")
    assert got and any("budget" in h["text"].lower() for h in got)
    assert got[0]["parts"]["own"] > 0


def test_filters(run, sam):
    assert {h["role"] for h in hits(run, sam, "portland role:user", "-n", "100")} == {"user"}
    assert {h["kind"] for h in hits(run, sam, "budget in:memories", "-n", "100")} == {"memory"}
    assert {h["title"] for h in hits(run, sam, "budget title:portland", "-n", "100")} == {"Portland weekend trip"}
    assert hits(run, sam, "budget store:sam")
    assert hits(run, sam, "budget store:mermaid") == []


@pytest.mark.parametrize(
    "query, message",
    [
        ("-", "nothing to search for"),
        (" + ", "nothing to search for"),
        ("role:bot budget", "role:bot"),
        ("store:nothing budget", "store:nothing"),
        ("in:everything budget", "in:everything"),
        ("-budget", "only excludes"),
        ("role:user", "nothing to search for"),
        ("tool:Bash", "filters (role:, in:, title:, store:, tool:) only narrow"),
    ],
)
def test_a_malformed_query_is_a_usage_error_that_says_what(run, sam, query, message):
    before = fingerprint(sam)
    r = run("--root", sam, "search", "--", query)
    assert r.exit_code == 2, (r.stdout, r.stderr)
    assert message in r.stderr and "Traceback" not in r.stderr and not r.stdout
    assert fingerprint(sam) == before


@pytest.mark.parametrize(
    "query",
    [
        "portland - budget",
        "portland -- budget",
        '"portland budget',
        'portland budget"',
        "b* portland + budget",
        "--portland budget",
    ],
)
def test_questions_as_people_type_them_are_read_as_words(run, sam, query):
    """A lone dash, a run of signs, an unbalanced quote and a stray * are punctuation: the query finds
    what its words find, exit 0, nothing said on stderr."""
    r = run("--root", sam, "search", "--format", "json", "--", query)
    assert r.exit_code == 0 and not r.stderr.strip(), (r.exit_code, r.stderr)
    assert json.loads(r.stdout) == hits(run, sam, "portland budget")


def test_a_phrase_found_nowhere_is_searched_as_its_words(run, sam):
    before = fingerprint(sam)
    r = run("--root", sam, "search", "--format", "json", "--", 'What was the "budget for portland"?')
    assert r.exit_code == 0, r.stderr
    got = json.loads(r.stdout)
    assert got and got == hits(run, sam, "What was the budget for portland?")
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "'budget for portland'" in lines[0] and "words" in lines[0], r.stderr
    assert fingerprint(sam) == before
    # a phrase that is found stays a phrase: only the rows holding it, and nothing said
    r = run("--root", sam, "search", "--format", "json", "--", '"weekend trip"')
    assert r.exit_code == 0 and not r.stderr.strip()
    assert all(
        "weekend trip" in (h["text"] + h["title"]).lower() or h["kind"] == "memory" for h in json.loads(r.stdout)
    )


def test_in_and_the_in_filter_must_agree(run, sam):
    r = run("--root", sam, "search", "budget in:memories", "--in", "messages")
    assert r.exit_code == 2 and "in:memories" in r.stderr and "--in messages" in r.stderr
    assert hits(run, sam, "budget in:memories", "--in", "memories")


def test_text_without_spaces_is_found(run, sam):
    conv = sam / "conversations" / SAM_ID / "conversation.json"
    doc = json.loads(conv.read_text())
    doc["messages"][0]["content"] = "東京タワーの予算は五百ドルです。งบประมาณการเดินทาง"
    conv.write_text(json.dumps(doc, ensure_ascii=False))
    age(sam)
    assert hits(run, sam, "予算")[0]["text"].startswith("東京タワー")
    assert hits(run, sam, "東京")[0]["text"].startswith("東京タワー")
    assert hits(run, sam, "งบประมาณ")[0]["text"].startswith("東京タワー")


def test_the_help_shows_the_query_language(run):
    r = run("search", "--help")
    assert r.exit_code == 0 and "Query language" in r.stdout and "role:user" in r.stdout
