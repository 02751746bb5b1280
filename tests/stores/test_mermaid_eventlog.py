"""Reading and folding mermaid's event log (mermaid.md §4, §4.4, §8 items 15-34, mermaid.md §11.3, §11.4).

Tests named ``test_item_NN_*`` mirror the behaviour pinned by mermaid's own
tests in mermaid.md §8.
"""

from __future__ import annotations

import copy
import importlib.util
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from samctl.errors import FileProblem
from samctl.fs import reading
from samctl.stores.mermaid import envelope, eventlog
from samctl.stores.mermaid.encode import log_line_bytes, snapshot_bytes
from samctl.stores.mermaid.envelope import is_timestamp, parse_rfc3339
from samctl.stores.mermaid.eventlog import (
    MERMAID_ID_RE,
    STOPS,
    LogRead,
    backfill_events,
    fold,
    fold_file,
    normalize_message,
    parse_log,
    read_log_file,
    torn_tail,
)


def _sibling(name: str):
    """Load a sibling test module by path (works with or without a package __init__)."""
    path = Path(__file__).with_name(name)
    spec = importlib.util.spec_from_file_location(f"_samctl_sibling_{path.stem}", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


_enc = _sibling("test_mermaid_encode.py")
SNAPSHOT_11_1 = _enc.SNAPSHOT_11_1
LEGACY_11_5 = _enc.LEGACY_11_5

UTC = timezone.utc
UTC_M4 = timezone(timedelta(hours=-4))  # the mermaid.md §11 writer's offset

# --- mermaid.md §11.3 / §11.4, verbatim -------------------------------------------------

LOG_11_3 = r"""{"event":{"created_at":"2026-08-10T14:03:07.512347811-04:00","model_id":"ollama/qwen3-coder:30b","project_path":"/home/dev/parsekit","session_id":"20260810_140307_512","type":"started"},"seq":0,"ts":"2026-08-10T14:03:21.131552090-04:00","v":1}
{"event":{"at":"2026-08-10T14:03:21.104938201-04:00","messages":[{"actions":[],"content":"Fix the flaky test in tests/parser.rs","image_numbers":null,"images":null,"kind":"normal","metadata":null,"provider_continuation":null,"role":"User","thinking":null,"timestamp":"2026-08-10T14:03:21.104938201-04:00","tool_call_id":null,"tool_calls":null,"tool_name":null}],"type":"reset"},"seq":1,"ts":"2026-08-10T14:03:21.131552090-04:00","v":1}
{"event":{"text":"Fix the flaky test in tests/parser.rs","type":"input"},"seq":2,"ts":"2026-08-10T14:03:21.131552090-04:00","v":1}
{"event":{"cli_version":"0.25.0","cumulative_token_usage":{"cache_creation_input_tokens":0,"cached_input_tokens":0,"completion_tokens":0,"prompt_tokens":0,"reasoning_output_tokens":0},"git_branch":"main","git_sha":"a614aa9","model_name":"ollama/qwen3-coder:30b","safety_mode":"ask","title":"Fix the flaky test in tests/parser.rs","type":"state"},"seq":3,"ts":"2026-08-10T14:03:21.131552090-04:00","v":1}
{"event":{"store":{"next_id":0,"tasks":[]},"type":"tasks"},"seq":4,"ts":"2026-08-10T14:03:21.131552090-04:00","v":1}
{"event":{"cli_version":"0.25.0","cumulative_token_usage":{"cache_creation_input_tokens":0,"cached_input_tokens":0,"completion_tokens":0,"prompt_tokens":0,"reasoning_output_tokens":0},"git_branch":"main","git_sha":"a614aa9","model_name":"ollama/qwen3-coder:30b","safety_mode":"ask","title":"Fix the flaky test in tests/parser.rs","type":"state"},"seq":5,"ts":"2026-08-10T14:03:21.131552090-04:00","v":1}
{"event":{"store":{"next_id":0,"tasks":[]},"type":"tasks"},"seq":6,"ts":"2026-08-10T14:03:21.131552090-04:00","v":1}
{"event":{"message":{"actions":[],"content":"Let me look at the test first.","image_numbers":null,"images":null,"kind":"normal","metadata":null,"provider_continuation":null,"role":"Assistant","thinking":null,"timestamp":"2026-08-10T14:03:25.877120554-04:00","tool_call_id":null,"tool_calls":[{"function":{"arguments":{"path":"tests/parser.rs"},"name":"read_file"},"id":"call_01"}],"tool_name":null},"type":"message"},"seq":7,"ts":"2026-08-10T14:03:25.880014472-04:00","v":1}
{"event":{"cli_version":"0.25.0","cumulative_token_usage":{"cache_creation_input_tokens":0,"cached_input_tokens":0,"completion_tokens":41,"prompt_tokens":1834,"reasoning_output_tokens":0},"git_branch":"main","git_sha":"a614aa9","last_token_usage":{"cache_creation_input_tokens":0,"cached_input_tokens":0,"completion_tokens":41,"prompt_tokens":1834,"reasoning_output_tokens":0},"model_name":"ollama/qwen3-coder:30b","safety_mode":"ask","title":"Fix the flaky test in tests/parser.rs","type":"state"},"seq":8,"ts":"2026-08-10T14:03:25.880014472-04:00","v":1}
{"event":{"action":{"action_type":"Read","details":{"Preview":{"line_count":42,"text":"use parsekit::parse;\n..."}},"duration_seconds":0.004,"metadata":null,"result":{"Success":{"images":null,"output":"42 lines"}},"target":"tests/parser.rs"},"type":"action"},"seq":9,"ts":"2026-08-10T14:03:25.903877905-04:00","v":1}
{"event":{"message":{"actions":[],"content":"use parsekit::parse;\n\n#[test]\nfn keys_are_stable() { /* ... */ }\n","image_numbers":null,"images":null,"kind":"normal","metadata":null,"provider_continuation":null,"role":"Tool","thinking":null,"timestamp":"2026-08-10T14:03:25.901553310-04:00","tool_call_id":"call_01","tool_calls":null,"tool_name":"read_file"},"type":"message"},"seq":10,"ts":"2026-08-10T14:03:25.903877905-04:00","v":1}
{"event":{"message":{"actions":[],"content":"The test depends on HashMap iteration order; I sorted the keys before asserting.","image_numbers":null,"images":null,"kind":"normal","metadata":null,"provider_continuation":null,"role":"Assistant","thinking":null,"timestamp":"2026-08-10T14:04:02.655120734-04:00","tool_call_id":null,"tool_calls":null,"tool_name":null},"type":"message"},"seq":11,"ts":"2026-08-10T14:04:02.661902318-04:00","v":1}
{"event":{"cli_version":"0.25.0","cumulative_token_usage":{"cache_creation_input_tokens":0,"cached_input_tokens":0,"completion_tokens":98,"prompt_tokens":4144,"reasoning_output_tokens":0},"git_branch":"main","git_sha":"a614aa9","last_token_usage":{"cache_creation_input_tokens":0,"cached_input_tokens":0,"completion_tokens":57,"prompt_tokens":2310,"reasoning_output_tokens":0},"model_name":"ollama/qwen3-coder:30b","safety_mode":"ask","title":"Fix the flaky test in tests/parser.rs","type":"state"},"seq":12,"ts":"2026-08-10T14:04:02.661902318-04:00","v":1}
{"event":{"message":{"actions":[],"content":"Want me to run the full suite"""


COMPACTION_LINE_11_4 = r"""{"event":{"at":"2026-08-10T15:10:44.002913377-04:00","record":{"after_tokens":3120,"archive_path":null,"archived_message_count":38,"before_tokens":91554,"created_at":"2026-08-10T15:10:44.002913377-04:00","duration_secs":6.25,"focus":null,"id":"cmp_20260810_151037","preserved_message_count":4,"preserved_turn_count":1,"review_error":null,"review_status":"reviewed","summary_tokens":1410,"trigger":"auto_threshold"},"replacement":[{"actions":[],"content":"MERMAID CONTEXT CHECKPOINT\n...","image_numbers":null,"images":null,"kind":"context_checkpoint","metadata":null,"provider_continuation":null,"role":"System","thinking":null,"timestamp":"2026-08-10T15:10:44.002913377-04:00","tool_call_id":null,"tool_calls":null,"tool_name":null}],"type":"compaction"},"seq":57,"ts":"2026-08-10T15:10:44.010552871-04:00","v":1}"""


NEWER_LINE_11_4 = r"""{"event":{"created_at":"2026-07-02T12:00:00.123Z","model_id":"m","project_path":"/p","session_id":"20260101_120000_001","type":"started"},"seq":0,"ts":"2026-07-02T12:00:00.123Z","v":2}"""


# --- helpers ------------------------------------------------------------------------

SID = "20260702_120000_123"
TS = "2026-07-02T12:00:00.123Z"


def tstamp(i: int) -> str:
    return f"2026-07-02T12:{i // 60 % 60:02d}:{i % 60:02d}.{i:09d}+00:00"


def message(role: str, content: str, ts: str = TS, **extra) -> dict:
    m = {
        "role": role,
        "content": content,
        "timestamp": ts,
        "kind": "normal",
        "metadata": None,
        "actions": [],
        "thinking": None,
        "images": None,
        "image_numbers": None,
        "tool_calls": None,
        "tool_call_id": None,
        "tool_name": None,
        "provider_continuation": None,
    }
    m.update(extra)
    return m


def started(sid: str = SID, created_at: str = TS, **extra) -> dict:
    return {
        "type": "started",
        "session_id": sid,
        "project_path": "/tmp/proj",
        "model_id": "ollama/test",
        "created_at": created_at,
        **extra,
    }


def msg_ev(role: str, content: str, ts: str = TS, **extra) -> dict:
    return {"type": "message", "message": message(role, content, ts, **extra)}


def state_ev(title: str = "t", **extra) -> dict:
    return {
        "type": "state",
        "title": title,
        "model_name": "ollama/test",
        "cumulative_token_usage": {
            "prompt_tokens": 0,
            "completion_tokens": 0,
            "cached_input_tokens": 0,
            "cache_creation_input_tokens": 0,
            "reasoning_output_tokens": 0,
        },
        **extra,
    }


ACTION = {
    "action_type": "Read",
    "target": "src/main.rs",
    "result": {"Success": {"output": "ok", "images": None}},
    "details": "Simple",
    "duration_seconds": 0.25,
    "metadata": None,
}
RECORD = {
    "id": "c-first",
    "trigger": "manual",
    "created_at": TS,
    "before_tokens": 100,
    "after_tokens": 10,
    "archived_message_count": 4,
    "preserved_message_count": 2,
    "preserved_turn_count": 1,
    "summary_tokens": 5,
    "duration_secs": 0.1,
    "focus": None,
    "archive_path": None,
}


def env(event: dict, seq: int = 0, ts: str = TS, v: int = 1) -> dict:
    return {"event": event, "seq": seq, "ts": ts, "v": v}


def log(*events: dict) -> bytes:
    return b"".join(log_line_bytes(env(e, i)) for i, e in enumerate(events))


def fold_bytes(data: bytes, tz=UTC):
    read = parse_log(data)
    return fold(read.events, tz) if read.usable else None


def spec_log() -> bytes:
    return LOG_11_3.encode("utf-8")


# --- mermaid.md §11.3: the example log folds to the mermaid.md §11.1 snapshot, byte for byte -----------


def test_spec_11_3_folds_to_the_11_1_snapshot_bytes():
    read = parse_log(spec_log())
    assert read.stop == "torn-tail"
    assert read.stop_line == 13
    assert read.stop_offset == read.last_newline_offset == LOG_11_3.encode().rfind(b"\n") + 1 == 4638
    assert read.size == len(spec_log())
    assert read.usable and read.torn and not read.tail_complete
    assert [e["seq"] for e in read.events] == list(range(13))
    assert "4638" in read.reason
    doc = fold(read.events, UTC_M4)
    assert snapshot_bytes(doc) == SNAPSHOT_11_1.encode("utf-8")
    assert doc == orjson.loads(SNAPSHOT_11_1)


def test_spec_11_3_fold_does_not_depend_on_the_local_zone_once_retitled():
    # The "Session ..." title is replaced by the state event, so any zone gives mermaid.md §11.1.
    assert snapshot_bytes(fold_bytes(spec_log(), UTC)) == SNAPSHOT_11_1.encode("utf-8")


def test_spec_11_3_intermediate_title_is_local_creation_minute():
    events = parse_log(spec_log()).events[:2]  # started, reset: a reset never retitles
    assert fold(events, UTC_M4)["title"] == "Session 2026-08-10 14:03"
    assert fold(events, UTC)["title"] == "Session 2026-08-10 18:03"
    assert fold(events, timezone(timedelta(hours=5, minutes=30)))["title"] == "Session 2026-08-10 23:33"


def test_spec_11_3_complete_lines_are_what_log_line_bytes_writes():
    lines = spec_log().split(b"\n")[:-1]
    for line in lines:
        assert log_line_bytes(orjson.loads(line)) == line + b"\n"


def test_spec_11_3_action_attaches_to_the_assistant_of_seq_7():
    doc = fold_bytes(spec_log())
    assert doc["messages"][1]["actions"][0]["target"] == "tests/parser.rs"
    assert all(not m["actions"] for i, m in enumerate(doc["messages"]) if i != 1)


def test_spec_11_3_first_batch_is_the_backfill_of_the_first_save():
    # Lines 0-4 are what mermaid wrote from the snapshot of its first save.
    first_save = orjson.loads(SNAPSHOT_11_1)
    first_save["messages"] = first_save["messages"][:1]
    first_save["updated_at"] = first_save["messages"][0]["timestamp"]
    first_save["last_token_usage"] = None
    first_save["cumulative_token_usage"] = {k: 0 for k in first_save["cumulative_token_usage"]}
    ts = "2026-08-10T14:03:21.131552090-04:00"
    lines = [log_line_bytes(e) for e in backfill_events(first_save, ts)]
    assert b"".join(lines) == b"".join(line + b"\n" for line in spec_log().split(b"\n")[:5])


# --- mermaid.md §11.4 ----------------------------------------------------------------------


def test_spec_11_4_compaction_line_folds_replacement_and_record():
    head = log(started(), msg_ev("User", "q", tstamp(1)), msg_ev("Assistant", "a", tstamp(2)))
    read = parse_log(head + COMPACTION_LINE_11_4.encode() + b"\n")
    assert read.stop is None and len(read.events) == 4
    doc = fold(read.events, UTC)
    line = orjson.loads(COMPACTION_LINE_11_4)["event"]
    assert doc["messages"] == line["replacement"]
    assert doc["messages"][0]["kind"] == "context_checkpoint"
    assert doc["compactions"] == [line["record"]]
    assert doc["updated_at"] == line["at"]
    assert doc["title"] == "q"  # a compaction never retitles


def test_spec_11_4_newer_format_line_refuses_the_whole_log_even_after_valid_lines():
    data = spec_log()[: spec_log().rfind(b"\n") + 1] + NEWER_LINE_11_4.encode() + b"\n"
    read = parse_log(data)
    assert read.stop == "newer-format"
    assert read.events == [] and not read.usable
    assert read.stop_line == 13 and read.stop_offset == 4638
    assert "newer mermaid" in read.reason


def test_spec_11_4_newer_format_as_unterminated_last_line_still_refuses():
    read = parse_log(log(started()) + NEWER_LINE_11_4.encode())
    assert read.stop == "newer-format" and read.events == []


def test_newer_format_after_the_first_malformed_line_is_never_seen():
    data = log(started(), msg_ev("User", "q")) + b"{ torn\n" + NEWER_LINE_11_4.encode() + b"\n"
    read = parse_log(data)
    assert read.stop == "malformed" and read.stop_line == 2 and len(read.events) == 2


def test_newer_format_needs_a_line_that_parses_as_v1():
    # mermaid's typed parse runs first: a v:2 line with an unknown event type is malformed.
    bad = log_line_bytes(env({"type": "hologram", "x": 1}, v=2))
    read = parse_log(log(started()) + bad)
    assert read.stop == "malformed" and len(read.events) == 1


def test_v0_is_accepted():
    read = parse_log(log_line_bytes(env(started(), v=0)))
    assert read.stop is None and read.usable


# --- mermaid.md §8, event log -----------------------------------------------------------------


def _driven_events() -> list[dict]:
    """A session: user prompt, input record, assistant reply, one scalar change, tasks."""
    return [
        started(),
        msg_ev("User", "hello event log", tstamp(1)),
        {"type": "input", "text": "hello event log"},
        msg_ev("Assistant", "hi there", tstamp(2)),
        state_ev("hello event log", safety_mode="ask", git_branch="main"),
        {
            "type": "tasks",
            "store": {
                "next_id": 1,
                "tasks": [
                    {
                        "id": 0,
                        "subject": "s",
                        "active_form": "a",
                        "status": "pending",
                        "origin": "model",
                        "evidence": [],
                    }
                ],
            },
        },
    ]


def _driven_snapshot() -> dict:
    return {
        "id": SID,
        "title": "hello event log",
        "messages": [message("User", "hello event log", tstamp(1)), message("Assistant", "hi there", tstamp(2))],
        "model_name": "ollama/test",
        "project_path": "/tmp/proj",
        "created_at": TS,
        "updated_at": tstamp(2),
        "compactions": [],
        "input_history": ["hello event log"],
        "git_branch": "main",
        "safety_mode": "ask",
        "plan": None,
        "advertised_context": None,
        "last_token_usage": None,
        "cumulative_token_usage": {
            "prompt_tokens": 0,
            "completion_tokens": 0,
            "cached_input_tokens": 0,
            "cache_creation_input_tokens": 0,
            "reasoning_output_tokens": 0,
        },
        "context_usage": None,
        "forked_from": None,
        "parent_session": None,
        "cli_version": None,
        "git_sha": None,
        "tasks": _driven_events()[5]["store"],
    }


def test_item_15_append_then_fold_equals_the_snapshot():
    doc = fold_bytes(log(*_driven_events()))
    assert doc == _driven_snapshot()
    assert snapshot_bytes(doc) == snapshot_bytes(_driven_snapshot())


def test_item_16_recovery_from_the_log_when_the_snapshot_is_gone(tmp_path):
    (tmp_path / f"{SID}.json").write_bytes(b"{ torn")
    p = tmp_path / f"{SID}.jsonl"
    p.write_bytes(log(*_driven_events()))
    doc, read = fold_file(p, local_tz=UTC)
    assert read.stop is None and read.usable
    assert doc["id"] == SID and len(doc["messages"]) == 2 and doc["title"] == "hello event log"


def test_item_17_backfill_folds_to_the_snapshot_with_gapless_seq():
    snap = _driven_snapshot()
    envs = backfill_events(snap, TS)
    assert [e["seq"] for e in envs] == list(range(len(envs)))
    assert {e["ts"] for e in envs} == {TS} and {e["v"] for e in envs} == {1}
    assert [e["event"]["type"] for e in envs] == ["started", "reset", "input", "state", "tasks"]
    data = b"".join(log_line_bytes(e) for e in envs)
    assert fold_bytes(data) == snap
    # a later append continues the seq, and the fold follows it
    more = log_line_bytes(env(msg_ev("User", "post-upgrade", tstamp(3)), seq=len(envs)))
    read = parse_log(data + more)
    assert [e["seq"] for e in read.events] == list(range(len(envs) + 1))
    assert fold(read.events, UTC)["messages"][-1]["content"] == "post-upgrade"


def test_item_17_backfill_omits_absent_optionals_and_keeps_present_ones():
    snap = _driven_snapshot() | {"forked_from": "20260101_000000_000", "git_sha": None, "plan": {"p": 1}}
    evs = [e["event"] for e in backfill_events(snap, TS)]
    assert evs[0]["forked_from"] == "20260101_000000_000" and "parent_session" not in evs[0]
    state = evs[-2]
    assert state["plan"] == {"p": 1} and "git_sha" not in state and "last_token_usage" not in state
    assert "cumulative_token_usage" in state  # always written
    assert fold(backfill_events(snap, TS), UTC) == snap


def test_item_17_backfill_of_the_11_1_snapshot_folds_back_to_it():
    snap = orjson.loads(SNAPSHOT_11_1)
    assert snapshot_bytes(fold(backfill_events(snap, TS), UTC)) == SNAPSHOT_11_1.encode("utf-8")


def test_item_17_backfill_without_messages_has_no_reset():
    snap = _driven_snapshot() | {"messages": []}
    assert "reset" not in [e["event"]["type"] for e in backfill_events(snap, TS)]


def test_item_18_compaction_in_the_creating_batch_is_not_doubled():
    snap = _driven_snapshot()
    envs = backfill_events(snap, TS)
    envs.append(env({"type": "compaction", "at": TS, "record": RECORD, "replacement": snap["messages"]}, seq=len(envs)))
    doc = fold_bytes(b"".join(log_line_bytes(e) for e in envs))
    assert len(doc["messages"]) == len(snap["messages"])
    assert [c["id"] for c in doc["compactions"]] == ["c-first"]


def test_item_19_the_reader_does_not_require_seq_to_be_gapless():
    # Two processes appending can interleave; mermaid's reader never checks seq.
    lines = [log_line_bytes(env(e, seq)) for e, seq in zip(_driven_events(), [0, 1, 1, 7, 3, 2])]
    assert fold_bytes(b"".join(lines)) == _driven_snapshot()


def test_item_20_backfill_strips_tool_images_and_keeps_user_images():
    snap = _driven_snapshot()
    snap["messages"] = [
        message("User", "look", tstamp(1), images=["USERIMG"]),
        message("Assistant", "shot", tstamp(2), images=["SHOTBYTES64"]),
        message("Tool", "done" + eventlog.IMAGE_MARKER, tstamp(3), images=[]),
        message("Assistant", "plain", tstamp(4)),
    ]
    reset = backfill_events(snap, TS)[1]["event"]
    out = reset["messages"]
    assert out[0]["images"] == ["USERIMG"] and out[0]["content"] == "look"
    assert out[1]["images"] is None and out[1]["content"] == "shot\n[screenshot not persisted]"
    assert out[2]["images"] is None and out[2]["content"] == "done\n[screenshot not persisted]"  # not doubled
    assert out[3]["content"] == "plain"  # no images, no marker
    assert snap["messages"][1]["images"] == ["SHOTBYTES64"]  # the input is untouched
    assert b"SHOTBYTES64" not in b"".join(log_line_bytes(e) for e in backfill_events(snap, TS))


def test_item_21_torn_tail_folds_the_pre_tear_messages():
    good = log(started(), msg_ev("User", "q", tstamp(1)), msg_ev("Assistant", "a", tstamp(2)))
    data = good + b'{"v":1,"seq":99,"ts":"2026-'
    read = parse_log(data)
    assert read.stop == "torn-tail" and read.stop_line == 3 and read.stop_offset == len(good)
    assert read.last_newline_offset == len(good) == torn_tail(data)
    assert len(fold(read.events, UTC)["messages"]) == 2


def test_item_22_a_single_newer_format_line_gives_no_fold(tmp_path):
    p = tmp_path / "20260101_120000_001.jsonl"
    p.write_bytes(NEWER_LINE_11_4.encode() + b"\n")
    doc, read = fold_file(p)
    assert doc is None and read.stop == "newer-format" and not read.usable


def test_item_25_a_directory_at_the_log_path_is_a_finding_not_a_hang(tmp_path):
    p = tmp_path / f"{SID}.jsonl"
    p.mkdir()
    with pytest.raises(FileProblem) as exc:
        read_log_file(p)
    assert exc.value.code == "not-regular"


ALL_EVENTS = [
    started(forked_from="20260101_000000_000", parent_session="20260101_000000_001"),
    msg_ev("User", "q"),
    {"type": "inserted_before_last", "message": message("System", "note")},
    {"type": "action", "action": ACTION},
    {"type": "image", "data": "aGVsbG8="},
    {
        "type": "compaction",
        "at": TS,
        "record": RECORD,
        "replacement": [message("System", "ckpt", kind="context_checkpoint")],
    },
    {"type": "reset", "at": TS, "messages": [message("User", "q")]},
    state_ev("t", safety_mode="full_access", git_branch="main", last_token_usage={"prompt_tokens": 1}),
    {"type": "input", "text": "hello"},
    {"type": "tasks", "store": {"tasks": [], "next_id": 0}},
]


def test_item_26_every_variant_parses_and_round_trips_byte_for_byte():
    assert sorted(e["type"] for e in ALL_EVENTS) == sorted(envelope.EVENT_TYPES)
    data = log(*ALL_EVENTS)
    read = parse_log(data)
    assert read.stop is None, read.reason
    assert [e["event"]["type"] for e in read.events] == [e["type"] for e in ALL_EVENTS]
    assert b"".join(log_line_bytes(e) for e in read.events) == data


def test_item_26_pinned_compact_forms_sorted_on_disk():
    assert log_line_bytes({"type": "input", "text": "hello"}) == b'{"text":"hello","type":"input"}\n'
    assert log_line_bytes({"type": "tasks", "store": {"tasks": [], "next_id": 0}}) == (
        b'{"store":{"next_id":0,"tasks":[]},"type":"tasks"}\n'
    )


def test_item_27_envelope_on_disk_is_sorted():
    line = log_line_bytes(env({"type": "input", "text": "x"}, seq=7))
    assert line == b'{"event":{"text":"x","type":"input"},"seq":7,"ts":"2026-07-02T12:00:00.123Z","v":1}\n'


def test_item_28_no_leading_started_or_no_events_folds_to_nothing():
    assert fold([]) is None
    read = parse_log(log(msg_ev("User", "q"), started()))
    assert read.stop == "headerless" and not read.usable and read.stop_line == 0
    assert fold(read.events) is None
    assert parse_log(b"").stop == "empty"


def test_item_29_a_mid_stream_started_is_ignored():
    doc = fold_bytes(log(started(), msg_ev("User", "q"), started(sid="20991231_235959_999", created_at=tstamp(9))))
    assert doc["id"] == SID and doc["created_at"] == TS and len(doc["messages"]) == 1


def test_item_30_action_and_image_attach_only_to_a_last_assistant():
    act, img = {"type": "action", "action": ACTION}, {"type": "image", "data": "SU1H"}
    doc = fold_bytes(log(started(), act, img, msg_ev("User", "q"), act, img, msg_ev("Assistant", "a"), act, img, img))
    user, asst = doc["messages"]
    assert user["actions"] == [] and user["images"] is None
    assert asst["actions"] == [ACTION] and asst["images"] == ["SU1H", "SU1H"]


def test_item_31_compaction_replaces_the_messages_and_records_it():
    doc = fold_bytes(
        log(
            started(),
            msg_ev("User", "q", tstamp(1)),
            msg_ev("Assistant", "a", tstamp(2)),
            {
                "type": "compaction",
                "at": tstamp(5),
                "record": RECORD,
                "replacement": [message("System", "ckpt", tstamp(4), kind="context_checkpoint")],
            },
        )
    )
    assert [m["content"] for m in doc["messages"]] == ["ckpt"]
    assert doc["compactions"] == [RECORD] and doc["updated_at"] == tstamp(5) and doc["title"] == "q"


def test_item_32_inserted_before_last_order():
    doc = fold_bytes(
        log(
            started(),
            msg_ev("User", "q"),
            msg_ev("Assistant", "a"),
            {"type": "inserted_before_last", "message": message("System", "note")},
        )
    )
    assert [m["content"] for m in doc["messages"]] == ["q", "note", "a"]
    doc = fold_bytes(log(started(), {"type": "inserted_before_last", "message": message("System", "note")}))
    assert [m["content"] for m in doc["messages"]] == ["note"]


def test_item_32_inserted_before_last_changes_neither_time_nor_title():
    doc = fold_bytes(
        log(
            started(),
            msg_ev("Assistant", "a", tstamp(1)),
            {"type": "inserted_before_last", "message": message("User", "late", tstamp(2))},
        )
    )
    assert doc["updated_at"] == tstamp(1) and doc["title"].startswith("Session ")


def test_item_33_fold_of_every_mutator_equals_the_hand_built_snapshot():
    doc = fold_bytes(log(*ALL_EVENTS))
    assert doc["id"] == SID and doc["forked_from"] is None and doc["parent_session"] is None  # state assigned them
    assert doc["messages"] == [message("User", "q")]
    assert doc["compactions"] == [RECORD] and doc["input_history"] == ["hello"]
    assert doc["safety_mode"] == "full_access" and doc["last_token_usage"] == {"prompt_tokens": 1}
    assert doc["title"] == "t" and doc["updated_at"] == TS
    assert list(orjson.loads(snapshot_bytes(doc))) == sorted(doc)


def test_item_34_repeated_state_and_tasks_lines_are_harmless():
    events = _driven_events()
    twice = events + [events[4], events[5], events[4]]
    assert fold_bytes(log(*twice)) == fold_bytes(log(*events))


# --- mermaid.md §8 items about decoding: 1, 3, 6, 7, 11 ----------------------------------------


def test_item_01_legacy_snapshot_backfills_and_folds_with_every_default():
    legacy = orjson.loads(LEGACY_11_5)
    doc = fold(backfill_events(legacy, TS), UTC)
    assert doc["messages"] == [message("System", "from a newer build", "2026-01-01T12:00:00-04:00")]
    assert "total_tokens" not in doc
    assert doc["git_branch"] is None and doc["safety_mode"] is None and doc["last_token_usage"] is None
    assert doc["context_usage"] is None and doc["forked_from"] is None and doc["parent_session"] is None
    assert doc["advertised_context"] is None and doc["plan"] is None and doc["cli_version"] is None
    assert doc["cumulative_token_usage"] == dict.fromkeys(
        [
            "prompt_tokens",
            "completion_tokens",
            "cached_input_tokens",
            "cache_creation_input_tokens",
            "reasoning_output_tokens",
        ],
        0,
    )
    assert doc["tasks"] == {"tasks": [], "next_id": 0} and doc["compactions"] == [] and doc["input_history"] == []
    assert doc["title"] == "Legacy session" and doc["updated_at"] == legacy["updated_at"]


def test_item_01_fold_defaults_every_snapshot_field():
    doc = fold_bytes(log(started()))
    assert set(doc) == {
        "id",
        "title",
        "messages",
        "model_name",
        "project_path",
        "created_at",
        "updated_at",
        "compactions",
        "input_history",
        "git_branch",
        "safety_mode",
        "plan",
        "advertised_context",
        "last_token_usage",
        "cumulative_token_usage",
        "context_usage",
        "forked_from",
        "parent_session",
        "cli_version",
        "git_sha",
        "tasks",
    }
    assert doc["updated_at"] == doc["created_at"] == TS


@pytest.mark.parametrize("good", ["20260101_120000_001", "00000000_000000_000", "99999999_999999_999"])
def test_item_03_valid_ids(good):
    assert MERMAID_ID_RE.match(good)
    assert eventlog.ID_RE is MERMAID_ID_RE


@pytest.mark.parametrize(
    "bad",
    [
        "../secret",
        "..\\secret",
        "/etc/passwd",
        "20260101_120000",
        "abcdefgh_120000_001",
        "20260101_120000_001\n",
        "20260101_120000_0011",
        " 20260101_120000_001",
        "20260101-120000-001",
        "２０２６0101_120000_001",
        "2026010１_120000_001",
        "",
    ],
)
def test_item_03_invalid_ids_match_nothing_and_fold_to_nothing(bad):
    assert not MERMAID_ID_RE.match(bad)
    read = parse_log(log(started(sid=bad), msg_ev("User", "q")))
    assert read.usable  # a well-formed line; the fold refuses the id
    assert fold(read.events) is None


def test_item_06_title_rules():
    doc = fold_bytes(log(started()))
    assert doc["title"] == "Session 2026-07-02 12:00"
    doc = fold_bytes(log(started(), msg_ev("Assistant", "hi"), msg_ev("User", "first"), msg_ev("User", "second")))
    assert doc["title"] == "first"  # set once, from the first user message
    long = "x" * 100
    t = fold_bytes(log(started(), msg_ev("User", long)))["title"]
    assert t == "x" * 60 + "..." and len(t.encode()) <= 64


def test_item_06_a_title_that_is_not_provisional_is_never_replaced():
    doc = fold_bytes(log(started(), state_ev("renamed"), msg_ev("User", "q"), msg_ev("User", "r")))
    assert doc["title"] == "renamed"


@pytest.mark.parametrize(
    "content, title",
    [
        ("é" * 40, "é" * 30 + "..."),  # 80 bytes: 60 is a boundary
        ("a" + "é" * 40, "a" + "é" * 29 + "..."),  # byte 60 is inside an é: back off to 59
        ("😀" * 20, "😀" * 15 + "..."),
        ("a" * 59 + "😀", "a" * 59 + "..."),  # 63 bytes: cut before the emoji
        ("a" * 60, "a" * 60),  # exactly 60 bytes: no cut
        ("", ""),
    ],
)
def test_item_06_title_cut_at_a_char_boundary(content, title):
    assert fold_bytes(log(started(), msg_ev("User", content)))["title"] == title


def test_item_06_title_rule_looks_at_every_message_while_still_provisional():
    # A reset brings a user message in without retitling; the next added message retitles from it.
    doc = fold_bytes(log(started(), {"type": "reset", "at": TS, "messages": [message("User", "from reset")]}))
    assert doc["title"].startswith("Session ")
    doc = fold_bytes(
        log(
            started(),
            {"type": "reset", "at": TS, "messages": [message("User", "from reset")]},
            msg_ev("Assistant", "a"),
        )
    )
    assert doc["title"] == "from reset"


def test_item_06_a_user_message_starting_with_session_keeps_retitling():
    doc = fold_bytes(log(started(), msg_ev("User", "Session notes"), msg_ev("User", "later")))
    assert doc["title"] == "Session notes"
    doc = fold_bytes(
        log(
            started(),
            state_ev("Session 2020-01-01 00:00"),
            msg_ev("Assistant", "a"),
            {"type": "inserted_before_last", "message": message("User", "u")},
            msg_ev("Assistant", "b"),
        )
    )
    assert doc["title"] == "u"


def test_item_07_input_history_rules():
    texts = ["a", "a", "", "   ", "\t\n", "\u3000", "b", "a", "\x1c"]
    doc = fold_bytes(log(started(), *({"type": "input", "text": t} for t in texts)))
    # Rust's trim() does not treat \x1c as whitespace (Python's str.strip does)
    assert doc["input_history"] == ["a", "b", "a", "\x1c"]
    doc = fold_bytes(log(started(), *({"type": "input", "text": f"msg{i}"} for i in range(110))))
    assert len(doc["input_history"]) == 100 and doc["input_history"][0] == "msg10"
    assert doc["input_history"][-1] == "msg109"


def test_item_11_unknown_role_and_kind_map_like_mermaid():
    m = message("Developer", "from a newer build", kind="hologram")
    doc = fold_bytes(log(started(), {"type": "message", "message": m}, msg_ev("Assistant", "x", kind="unknown")))
    assert doc["messages"][0]["role"] == "System" and doc["messages"][0]["kind"] == "unknown"
    assert doc["messages"][1]["kind"] == "unknown"
    assert doc["title"].startswith("Session ")  # a mapped System message never titles


def test_item_11_minimal_message_gets_every_field():
    m = {"role": "User", "content": "c", "timestamp": TS, "citations": [1]}
    out = normalize_message(m)
    assert list(out) == list(envelope.MESSAGE_FIELDS) + ["citations"]  # keys of newer builds kept, last
    assert out == message("User", "c") | {"citations": [1]}
    assert m == {"role": "User", "content": "c", "timestamp": TS, "citations": [1]}


def test_fold_does_not_mutate_its_input():
    read = parse_log(
        log(
            *ALL_EVENTS,
            msg_ev("Assistant", "a"),
            {"type": "action", "action": ACTION},
            {"type": "image", "data": "SU1H"},
        )
    )
    before = copy.deepcopy(read.events)
    fold(read.events, UTC)
    fold(read.events, UTC)
    assert read.events == before


# --- the reader: prefix semantics and stop codes -------------------------------------------


def _line(obj) -> bytes:
    return orjson.dumps(obj) + b"\n"


GOOD = env(msg_ev("User", "q"), 1)


def _with(path: tuple, value, base=GOOD):
    e = copy.deepcopy(base)
    d = e
    for k in path[:-1]:
        d = d[k]
    if value is KeyError:
        del d[path[-1]]
    else:
        d[path[-1]] = value
    return e


BAD_LINES = {
    "empty line": b"\n",
    "blank line": b"   \n",
    "not json": b"{ torn\n",
    "json array": b"[1,2]\n",
    "json string": b'"x"\n',
    "NaN": b'{"v":NaN}\n',
    "unknown type": _line(_with(("event", "type"), "hologram")),
    "type missing": _line(_with(("event", "type"), KeyError)),
    "type not string": _line(_with(("event", "type"), 3)),
    "event not object": _line(_with(("event",), [1])),
    "event missing": _line(_with(("event",), KeyError)),
    "v string": _line(_with(("v",), "1")),
    "v float": _line(_with(("v",), 1.0)),
    "v bool": _line(_with(("v",), True)),
    "v negative": _line(_with(("v",), -1)),
    "v over u32": _line(_with(("v",), 2**32)),
    "v missing": _line(_with(("v",), KeyError)),
    "seq negative": _line(_with(("seq",), -1)),
    "seq float": _line(_with(("seq",), 1.5)),
    "seq null": _line(_with(("seq",), None)),
    "seq over u64": b'{"event":{"text":"x","type":"input"},"seq":18446744073709551616,"ts":"'
    + TS.encode()
    + b'","v":1}\n',
    "ts bad month": _line(_with(("ts",), "2026-13-01T00:00:00Z")),
    "ts feb 30": _line(_with(("ts",), "2026-02-30T00:00:00Z")),
    "ts no zone": _line(_with(("ts",), "2026-07-02T12:00:00")),
    "ts number": _line(_with(("ts",), 17)),
    "content int": _line(_with(("event", "message", "content"), 5)),
    "content missing": _line(_with(("event", "message", "content"), KeyError)),
    "role int": _line(_with(("event", "message", "role"), 1)),
    "role null": _line(_with(("event", "message", "role"), None)),
    "timestamp missing": _line(_with(("event", "message", "timestamp"), KeyError)),
    "timestamp garbage": _line(_with(("event", "message", "timestamp"), "yesterday")),
    "kind null": _line(_with(("event", "message", "kind"), None)),
    "actions null": _line(_with(("event", "message", "actions"), None)),
    "images string": _line(_with(("event", "message", "images"), "x")),
    "tool_call_id int": _line(_with(("event", "message", "tool_call_id"), 1)),
    "message list": _line(_with(("event", "message"), [])),
    "started created_at": _line(env(started(created_at="2026-07-02"))),
    "started session_id int": _line(env(started(sid=5))),
    "started forked_from int": _line(env(started(forked_from=1))),
    "state title missing": _line(env({"type": "state", "model_name": "m"})),
    "state cumulative null": _line(env(state_ev(cumulative_token_usage=None))),
    "state safety_mode int": _line(env(state_ev(safety_mode=1))),
    "input text int": _line(env({"type": "input", "text": 1})),
    "tasks store list": _line(env({"type": "tasks", "store": []})),
    "image data missing": _line(env({"type": "image"})),
    "action string": _line(env({"type": "action", "action": "x"})),
    "reset at missing": _line(env({"type": "reset", "messages": []})),
    "reset messages object": _line(env({"type": "reset", "at": TS, "messages": {}})),
    "reset bad message": _line(env({"type": "reset", "at": TS, "messages": [{"role": "User"}]})),
    "compaction record null": _line(env({"type": "compaction", "at": TS, "record": None, "replacement": []})),
    "compaction replacement missing": _line(env({"type": "compaction", "at": TS, "record": RECORD})),
    "raw control char": b'{"event":{"text":"a\x01b","type":"input"},"seq":1,"ts":"' + TS.encode() + b'","v":1}\n',
    "lone surrogate": b'{"event":{"text":"\\ud800","type":"input"},"seq":1,"ts":"' + TS.encode() + b'","v":1}\n',
    "byte order mark": b"\xef\xbb\xbf" + _line(GOOD),
    "too deep": b"[" * 100000 + b"]" * 100000 + b"\n",
    "unclosed deep": b"[" * 100000 + b"\n",
}


@pytest.mark.parametrize("name", list(BAD_LINES))
def test_a_malformed_line_stops_the_read_and_keeps_the_prefix(name):
    head = log(started())
    tail = log_line_bytes(env(msg_ev("User", "never seen"), 9))
    read = parse_log(head + BAD_LINES[name] + tail)
    assert read.stop == "malformed", read.reason
    assert read.stop_line == 1 and read.stop_offset == len(head)
    assert len(read.events) == 1 and read.usable
    assert "line 2" in read.reason
    assert fold(read.events, UTC)["messages"] == []


@pytest.mark.parametrize("name", ["unknown type", "not json", "empty line"])
def test_a_malformed_first_line_leaves_nothing(name):
    read = parse_log(BAD_LINES[name] + log(started()))
    assert read.stop == "malformed" and read.events == [] and not read.usable and read.stop_offset == 0


def test_lenient_forms_mermaid_accepts():
    lines = [
        log_line_bytes(env(started(), ts="2026-07-02 12:00:00Z")),  # space separator
        log_line_bytes(env(msg_ev("User", "q", "2026-07-02t12:00:00.1z"), 1)),  # lowercase t/z, 1 digit
        log_line_bytes(env(msg_ev("Assistant", "a", "2024-02-29T23:59:60.123456789123+14:00"), 2)),  # leap
        b'  {"v":1,"seq":3,"ts":"' + TS.encode() + b'","event":{"type":"input","text":"x","extra":1}, "zz":[]}\r\n',
        log_line_bytes(env({"type": "state", "title": "t", "model_name": "m"}, 4)),  # no cumulative usage
        log_line_bytes(env({"type": "message", "message": {"role": "User", "content": "min", "timestamp": TS}}, 5)),
    ]
    read = parse_log(b"".join(lines))
    assert read.stop is None, read.reason
    doc = fold(read.events, UTC)
    assert doc["cumulative_token_usage"]["prompt_tokens"] == 0  # missing from state: the default
    assert doc["input_history"] == ["x"]


def test_nesting_limit_is_serde_jsons():
    def nested(depth_of_value: int):
        v = 0
        for _ in range(depth_of_value):
            v = [v]
        return log_line_bytes(env(msg_ev("User", "q", metadata=v), 1))

    # envelope, event and message are 3 levels; metadata adds the rest
    ok = parse_log(log(started()) + nested(envelope.MAX_DEPTH - 3))
    assert ok.stop is None and len(ok.events) == 2
    bad = parse_log(log(started()) + nested(envelope.MAX_DEPTH - 2))
    assert bad.stop == "malformed" and "nested deeper" in bad.reason


def test_many_brackets_inside_strings_are_not_nesting():
    text = "[{" * 40000  # over the byte pre-check threshold, all inside a string
    read = parse_log(log(started(), msg_ev("User", text)))
    assert read.stop is None and read.events[1]["event"]["message"]["content"] == text


def test_deep_nesting_over_the_byte_precheck_is_malformed():
    deep = (
        b'{"v":1,"seq":1,"ts":"'
        + TS.encode()
        + b'","event":{"type":"input","text":"x","n":'
        + b"[" * 70000
        + b"]" * 70000
        + b"}}\n"
    )
    read = parse_log(log(started()) + deep)
    assert read.stop == "malformed" and "nested deeper" in read.reason and len(read.events) == 1


def test_invalid_utf8_is_reported_and_the_prefix_kept():
    head = log(started(), msg_ev("User", "q"))
    bad = log_line_bytes(env(msg_ev("User", "x"), 2)).replace(b'"x"', b'"\xff"')
    read = parse_log(head + bad + log_line_bytes(env(msg_ev("User", "later"), 3)))
    assert read.stop == "invalid-utf8" and read.stop_line == 2 and read.stop_offset == len(head)
    assert len(read.events) == 2 and read.usable
    assert "UTF-8" in read.reason


def test_invalid_utf8_outside_strings_and_after_a_malformed_line():
    head = log(started())
    assert parse_log(head + b"\xc3\x28\n").stop == "invalid-utf8"
    assert parse_log(head + b"{ torn\n" + b"\xff\n").stop == "malformed"


def test_torn_tail_that_is_a_complete_event_is_read_like_mermaid_reads_it():
    data = log(started(), msg_ev("User", "q"))[:-1]  # only the final newline is missing
    read = parse_log(data)
    assert read.stop == "torn-tail" and read.tail_complete and len(read.events) == 2
    assert read.stop_line == 1 and read.stop_offset == read.last_newline_offset
    assert "complete event" in read.reason
    assert fold(read.events, UTC)["title"] == "q"


def test_torn_tail_inside_a_multibyte_character_is_a_torn_tail():
    line = log_line_bytes(env(msg_ev("User", "é"), 1))
    data = log(started()) + line[: line.index("é".encode()) + 1]
    read = parse_log(data)
    assert read.stop == "torn-tail" and len(read.events) == 1 and not read.tail_complete


def test_only_a_fragment():
    read = parse_log(b'{"v":1,"se')
    assert read.stop == "torn-tail" and read.events == [] and not read.usable
    assert read.stop_offset == 0 and read.last_newline_offset == 0 and read.torn


def test_headerless_wins_over_a_torn_tail_but_torn_still_shows():
    read = parse_log(log(msg_ev("User", "q")) + b'{"v"')
    assert read.stop == "headerless" and read.torn and "torn tail" in read.reason
    assert read.last_newline_offset == len(log(msg_ev("User", "q")))


def test_clean_end():
    data = log(started(), msg_ev("User", "q"))
    read = parse_log(data)
    assert read.stop is None and read.stop_line is None and read.stop_offset is None
    assert not read.torn and read.last_newline_offset == read.size == len(data)
    assert "2 events" in read.reason


def test_torn_tail_helper():
    assert torn_tail(b"") is None
    assert torn_tail(b"a\n") is None
    assert torn_tail(b"a\nb") == 2
    assert torn_tail(b"ab") == 0
    assert torn_tail(b"a\nb\ncd") == 4


# --- files --------------------------------------------------------------------------------


def test_read_log_file_missing_raises_the_file_problem(tmp_path):
    with pytest.raises(FileProblem) as exc:
        read_log_file(tmp_path / f"{SID}.jsonl")
    assert exc.value.code == "missing"
    with pytest.raises(FileProblem):
        fold_file(tmp_path / f"{SID}.jsonl")


def test_read_log_file_symlink_is_refused(tmp_path):
    real = tmp_path / "real.jsonl"
    real.write_bytes(log(started()))
    link = tmp_path / f"{SID}.jsonl"
    link.symlink_to(real)
    with pytest.raises(FileProblem) as exc:
        read_log_file(link)
    assert exc.value.code == "symlink"


def test_read_log_file_over_the_cap_is_never_read(tmp_path, monkeypatch):
    p = tmp_path / f"{SID}.jsonl"
    with open(p, "wb") as f:
        f.truncate(reading.LOG_CAP + 1)  # sparse: 128 MiB + 1 without the disk space

    def boom(*a, **k):
        raise AssertionError("read a file over the cap")

    monkeypatch.setattr(reading, "read_capped", boom)
    read = read_log_file(p)
    assert read.stop == "too-large" and read.size == reading.LOG_CAP + 1 and read.events == []
    assert not read.usable and not read.torn
    doc, read = fold_file(p)
    assert doc is None and read.stop == "too-large"


def test_read_log_file_at_the_cap_is_read(tmp_path):
    p = tmp_path / f"{SID}.jsonl"
    data = log(started(), msg_ev("User", "q"))
    p.write_bytes(data)
    assert read_log_file(p, cap=len(data)).stop is None
    assert read_log_file(p, cap=len(data) - 1).stop == "too-large"


def test_read_log_file_file_growing_past_the_cap_while_read(tmp_path, monkeypatch):
    p = tmp_path / f"{SID}.jsonl"
    p.write_bytes(log(started()))

    def grew(path, cap):
        raise FileProblem("too-large", path, "grew")

    monkeypatch.setattr(reading, "read_capped", grew)
    assert read_log_file(p).stop == "too-large"


def test_fold_file_spec_example(tmp_path):
    p = tmp_path / "20260810_140307_512.jsonl"
    p.write_bytes(spec_log())
    doc, read = fold_file(p, local_tz=UTC_M4)
    assert read.stop == "torn-tail" and snapshot_bytes(doc) == SNAPSHOT_11_1.encode("utf-8")


# --- timestamps ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "s",
    [
        "2026-08-10T14:03:07-04:00",
        "2026-08-10T14:03:07.512-04:00",
        "2026-08-10T14:03:07.512347-04:00",
        "2026-08-10T14:03:07.512347811-04:00",
        "2026-08-10T14:03:07Z",
        "2026-08-10t14:03:07z",
        "2026-08-10 14:03:07+00:00",
        "2024-02-29T00:00:00Z",
        "2000-02-29T00:00:00Z",
        "2026-06-30T23:59:60Z",
        "2026-01-31T00:00:00+23:59",
        "0000-01-01T00:00:00Z",
        "9999-12-31T23:59:59.1234567891-23:59",
    ],
)
def test_timestamps_mermaid_reads(s):
    assert is_timestamp(s) and parse_rfc3339(s) is not None


@pytest.mark.parametrize(
    "s",
    [
        "2023-02-29T00:00:00Z",
        "1900-02-29T00:00:00Z",
        "2026-04-31T00:00:00Z",
        "2026-00-10T00:00:00Z",
        "2026-08-10T24:00:00Z",
        "2026-08-10T14:60:00Z",
        "2026-08-10T14:03:61Z",
        "2026-08-10T14:03:07",
        "2026-08-10T14:03:07+0400",
        "2026-08-10T14:03:07+24:00",
        "2026-08-10T14:03:07.Z",
        "2026-08-10T14:03Z",
        "2026-08-10",
        "2026-08-10T14:03:07Z ",
        " 2026-08-10T14:03:07Z",
        "2026-08-10T14:03:07Z\n",
        "２026-08-10T14:03:07Z",
        "26-08-10T14:03:07Z",
        "2026-8-10T14:03:07Z",
        "",
        None,
        17,
        b"2026-08-10T14:03:07Z",
    ],
)
def test_timestamps_mermaid_refuses(s):
    assert not is_timestamp(s) and parse_rfc3339(s) is None


@settings(max_examples=200, deadline=None)
@given(
    st.datetimes(min_value=datetime(1, 1, 2), max_value=datetime(9999, 12, 30)),
    st.integers(-23 * 60 - 59, 23 * 60 + 59),
    st.integers(0, 999_999_999),
    st.sampled_from([0, 3, 6, 9]),
)
def test_parse_rfc3339_agrees_with_datetime(naive, off_min, nanos, width):
    tz = timezone(timedelta(minutes=off_min))
    dt = naive.replace(microsecond=0, tzinfo=tz)
    frac = f".{nanos:09d}"[: width + 1] if width else ""
    sign = "-" if off_min < 0 else "+"
    zone = f"{sign}{abs(off_min) // 60:02d}:{abs(off_min) % 60:02d}"
    text = f"{dt.year:04d}-" + dt.strftime("%m-%dT%H:%M:%S") + frac + zone  # %Y does not pad years < 1000
    secs, ns, off = parse_rfc3339(text)
    assert secs == int(dt.timestamp()) and off == off_min * 60
    assert ns == (int(f"{nanos:09d}"[:width].ljust(9, "0")) if width else 0)


def test_session_title_uses_the_given_zone_and_chrono_year_layout():
    def title(created_at, tz):
        return fold([env(started(created_at=created_at))], tz)["title"]

    assert title("2026-08-10T23:59:59.999999999-04:00", UTC) == "Session 2026-08-11 03:59"
    assert title("2026-08-10T23:59:60.5-04:00", UTC) == "Session 2026-08-11 03:59"  # leap second
    assert title("9999-12-31T23:59:00-05:00", UTC) == "Session +10000-01-01 04:59"
    assert title("0000-01-01T00:00:00Z", UTC) == "Session 0000-01-01 00:00"
    assert title("0000-01-01T00:00:00Z", timezone(timedelta(hours=-1))) == "Session -0001-12-31 23:00"


def test_session_title_defaults_to_the_process_local_zone(monkeypatch):
    if not hasattr(time, "tzset"):
        pytest.skip("no tzset")
    try:
        monkeypatch.setenv("TZ", "UTC+3")  # POSIX: 3 hours *west* of UTC
        time.tzset()
        assert fold([env(started(created_at="2026-08-10T14:03:07Z"))])["title"] == "Session 2026-08-10 11:03"
    finally:
        monkeypatch.undo()
        time.tzset()


# --- bad input never raises ------------------------------------------------------------------


def _assert_outcome(read: LogRead, data: bytes) -> None:
    assert read.stop in STOPS
    assert read.size == len(data)
    assert isinstance(read.reason, str) and read.reason
    if read.usable:
        doc = fold(read.events, UTC)
        if doc is not None:
            snapshot_bytes(doc)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=2000))
def test_random_bytes_never_raise(data):
    _assert_outcome(parse_log(data), data)


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_mutated_spec_log_never_raises(data):
    raw = bytearray(spec_log())
    for _ in range(data.draw(st.integers(1, 6))):
        op = data.draw(st.sampled_from(["flip", "cut", "insert", "nul"]))
        i = data.draw(st.integers(0, max(len(raw) - 1, 0)))
        if op == "flip" and raw:
            raw[i] = data.draw(st.integers(0, 255))
        elif op == "cut":
            del raw[i : i + data.draw(st.integers(1, 50))]
        elif op == "insert":
            raw[i:i] = data.draw(st.binary(min_size=1, max_size=8))
        else:
            raw[i:i] = b"\0" * data.draw(st.integers(1, 64))
    _assert_outcome(parse_log(bytes(raw)), bytes(raw))


PATHOLOGICAL = {
    "NUL run": b"\0" * 10000,
    "NUL lines": b"\0\n" * 100,
    "newlines": b"\n" * 100,
    "0xff": b"\xff" * 100,
    "half a char": b"\xc3",
    "open arrays": b"[" * 100000,
    "open objects": b"{" * 100000,
    "deep objects": b'{"a":' * 100000 + b"1" + b"}" * 100000 + b"\n",
    "crlf": b"\r\n",
    "space": b" ",
    "null": b"null\n",
    "empty object": b"{}\n",
    "null event": b'{"event":null}\n',
}


@pytest.mark.parametrize("name", list(PATHOLOGICAL))
def test_pathological_inputs_never_raise(name):
    data = PATHOLOGICAL[name]
    _assert_outcome(parse_log(data), data)
