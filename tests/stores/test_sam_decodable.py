"""``decodable.first_error`` (the listing's fast "would SAM decode it?") against ``schema``'s full
validator, which is the statement of SAM's rules: the same first error, or none, on the spec's
example, on every rejection rule, and on documents mutated at random places with random values."""

from __future__ import annotations

import copy
import json

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bench import gen_archive as gen
from samctl.stores.sam import decodable, schema
from tests.stores.test_sam_schema import DELETE, ERROR_CASES, all_paths, example, json_values, mutate


def rich() -> dict:
    """The sam.md §15.1 example with every kind of the schema present at least once."""
    doc = example()
    m = doc["messages"][0]
    m["contentParts"] = [
        {"type": "text", "text": "hi"},
        {"type": "image_url", "image_url": {"url": "file:///a.png", "detail": "low"}},
        {"type": "video_url", "video_url": "file:///a.mp4"},
        {"type": "audio_url", "audio_url": "file:///a.m4a"},
    ]
    m["toolDisplayData"] = {
        "action": "a",
        "actionDisplayName": "A",
        "status": "success",
        "summary": "s",
        "details": ["d"],
        "icon": "i",
        "metadata": {"k": "v"},
    }
    m["toolMetadata"] = {"k": "v"}
    m["performanceMetrics"] = {"tokenCount": 3, "timeToFirstToken": 0.5, "tokensPerSecond": 10, "processingTime": 1}
    m["processingTime"] = 2
    doc["workingDirectoryBookmark"] = "AAEC"
    doc["lastGitHubCopilotResponseId"] = "x"
    return doc


def _strict(doc):
    """``doc`` as orjson would decode it from the text SAM's encoder writes, or None if no JSON
    text holds it (a NaN, a lone surrogate, an integer past 64 bits read as a float...)."""
    try:
        return orjson.loads(json.dumps(doc, allow_nan=False, ensure_ascii=False).encode("utf-8"))
    except (ValueError, UnicodeEncodeError, orjson.JSONDecodeError):
        return None


def same(doc) -> None:
    errors = schema.errors_of(doc)
    assert decodable.first_error(doc) == (errors[0] if errors else None)
    assert [p for p in schema.validate_conversation(doc) if p.severity == schema.ERROR] == errors
    strict = _strict(doc)
    if strict is not None:
        errors = schema.errors_of(strict)
        assert decodable.first_error(strict, strict_json=True) == (errors[0] if errors else None)


RICH_PATHS = all_paths(rich())


def test_valid_documents_have_no_error():
    for doc in (example(), rich()):
        assert schema.errors_of(doc) == []
        assert decodable.first_error(doc) is None
        assert decodable.first_error(_strict(doc), strict_json=True) is None


def test_generated_sam_conversations_agree(tmp_path):
    gen.make_sam(tmp_path, 30, memories_per_conversation=1, seed=5, jobs=1, progress=False)
    docs = [orjson.loads(p.read_bytes()) for p in (tmp_path / "SAM" / "conversations").glob("*/conversation.json")]
    assert len(docs) >= 25
    for doc in docs:
        assert decodable.first_error(doc, strict_json=True) is None
        same(doc)


@pytest.mark.parametrize("path,value,code,where", ERROR_CASES)
def test_every_rejection_rule_gives_the_same_first_error(path, value, code, where):
    doc = mutate(example(), path, value)
    got = decodable.first_error(doc)
    assert (got is None) == (code is None)
    same(doc)


@pytest.mark.parametrize(
    "depth", [1, schema.MAX_DEPTH - 12, schema.MAX_DEPTH - 2, schema.MAX_DEPTH, schema.MAX_DEPTH + 1, 700]
)
@pytest.mark.parametrize("where", [(), ("settings",), ("messages", 1, "toolCalls", 0, "function")])
def test_nesting_under_unknown_keys(depth, where):
    """Values under keys SAM does not know are ignored, unless nested past Foundation's limit."""
    doc = rich()
    node = doc
    for k in where:
        node = node[k]
    deep: list = []
    for _ in range(depth - 1 - len(where) - 1):
        deep = [deep]
    node["someFutureKey"] = deep
    problem = decodable.first_error(doc)
    assert (problem is not None and problem.code == "too-deep") == (depth > schema.MAX_DEPTH)
    same(doc)


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(RICH_PATHS), json_values | st.just(DELETE), st.booleans())
def test_random_mutations_agree(path, value, beside):
    doc = rich()
    if beside:  # a new key next to the chosen place (known to the schema or not)
        parent = doc
        for c in path[:-1]:
            parent = parent[c]
        if not isinstance(parent, dict) or value is DELETE:
            return
        key = path[-1] + "X" if isinstance(path[-1], str) else "x"
        parent[key] = copy.deepcopy(value)
    else:
        try:
            mutate(doc, path, value)
        except (KeyError, IndexError, TypeError):
            return
    same(doc)


@settings(max_examples=300, deadline=None)
@given(json_values)
def test_any_json_value_agrees(value):
    same(value)
    same({**rich(), "messages": [value]})


@pytest.mark.parametrize(
    "date",
    [
        "2026-08-10T14:02:11Z",
        "2026-08-10T14:02:11+23:59",
        "2026-08-10T14:02:11-05:30",
        "2026-08-10T14:02:11+24:00",
        "2026-08-10T14:02:11+23:60",
        "2026-08-10T14:02:11.5Z",
        "2026-02-29T00:00:00Z",
        "2028-02-29T00:00:00Z",
        "2026-13-01T00:00:00Z",
        "2026-08-10T24:00:00Z",
        "2026-08-10T14:60:00Z",
        "2026-08-10T14:02:60Z",
        "0000-01-01T00:00:00Z",
        "2026-08-10 14:02:11Z",
        "2026-08-10T14:02:11",
        "２０２６-08-10T14:02:11Z",
    ],
)
@pytest.mark.parametrize(
    "where", [("created",), ("messages", 0, "timestamp"), ("settings", "telemetry", "lastUpdated")]
)
def test_dates_agree(date, where):
    doc = rich()
    doc["settings"]["telemetry"] = {
        "archiveRecallCount": 0,
        "memoryRetrievalCount": 0,
        "compressionEventCount": 0,
        "contextOverflowCount": 0,
        "lastUpdated": "2026-08-10T14:02:11Z",
    }
    mutate(doc, where, date)
    same(doc)


def test_a_dates_verdict_is_the_parsers():
    """``_date`` (its fields compared as text) says what ``schema.parse_date_parts`` says of a date
    without a fraction: every field at and past the ends of its range, leap days of three kinds of year."""
    import itertools

    grid = itertools.product(
        ["0000", "0001", "2024", "2025", "2100", "2000", "9999"],
        ["00", "01", "02", "04", "09", "12", "13", "19"],
        ["00", "01", "28", "29", "30", "31", "32"],
        ["00", "23", "24"],
        ["00", "59", "60"],
        ["00", "59", "60"],
        ["", ".5"],
        ["Z", "+23:59", "+24:00", "-23:60"],
    )
    for year, month, day, hour, minute, second, fraction, zone in grid:
        s = f"{year}-{month}-{day}T{hour}:{minute}:{second}{fraction}{zone}"
        parts = schema.parse_date_parts(s)
        assert decodable._date(s) == (parts is not None and not parts[1]), s
    for s in ["2026-08-10T14:02:13Z\n", " 2026-08-10T14:02:13Z", "\u0662026-08-10T14:02:13Z", "2026-08-10t14:02:13Z"]:
        parts = schema.parse_date_parts(s)
        assert decodable._date(s) == (parts is not None and not parts[1]), s


@pytest.mark.parametrize("ts", ["2026-08-10T14:02:13Z", "2026-08-10T16:02:13+02:00", "2025-12-31T23:59:59Z"])
@pytest.mark.parametrize(
    "lm",
    [
        None,
        DELETE,
        "2026-08-10T14:02:12Z",
        "2026-08-10T14:02:13Z",
        "2026-08-10T14:02:14Z",
        "2026-08-10T15:02:12+01:00",
        "2026-08-10T13:02:14-01:00",
        "2025-12-31T23:59:58Z",
        "2027-01-01T00:00:00Z",
    ],
)
def test_warnings_of_a_decodable_document_are_validate_conversations(ts, lm):
    """``warnings_of`` (dates of one zone compared as text) finds the warnings the full walk finds."""
    doc = mutate(mutate(example(), ("messages", 1, "timestamp"), ts), ("messages", 1, "lastModified"), lm)
    assert decodable.first_error(doc, strict_json=True) is None
    full = [(p.code, p.where) for p in schema.validate_conversation(doc) if p.severity != "error"]
    assert [(p.code, p.where) for p in schema.warnings_of(doc)] == full
