"""Property: folding a rendered log equals applying the same mutations to a reference model.

The reference model below restates ConversationHistory's mutators
(mermaid.md §3, §4.2) independently of ``eventlog.fold``; each random mutation is applied to
it and rendered as one log line. Then:

- fold(log) == the model, and the snapshot bytes agree;
- a torn or malformed line injected at any position folds like the prefix
  before it (prefix semantics);
- a valid ``v: 2`` line anywhere before a bad line refuses the whole log.
"""

from __future__ import annotations

import copy
from datetime import datetime, timedelta, timezone

from hypothesis import given, settings
from hypothesis import strategies as st

from samctl.stores.mermaid.encode import log_line_bytes, snapshot_bytes
from samctl.stores.mermaid.eventlog import fold, parse_log

UTC = timezone.utc
SID = "20260702_120000_123"
RUST_WS = set("\t\n\x0b\x0c\r \x85\xa0\u1680\u2028\u2029\u202f\u205f\u3000") | {chr(c) for c in range(0x2000, 0x200B)}
OPTIONAL_DEFAULTS = {
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
KNOWN_KINDS = {"normal", "context_checkpoint", "run_summary", "continuation", "recovery_nudge", "context_marker"}
SCALAR_DEFAULTS = {
    "safety_mode": None,
    "plan": None,
    "advertised_context": None,
    "last_token_usage": None,
    "context_usage": None,
    "git_branch": None,
    "git_sha": None,
    "cli_version": None,
    "forked_from": None,
    "parent_session": None,
}


def zeros():
    return {
        "prompt_tokens": 0,
        "completion_tokens": 0,
        "cached_input_tokens": 0,
        "cache_creation_input_tokens": 0,
        "reasoning_output_tokens": 0,
    }


def rfc3339(dt: datetime, width: int, zulu: bool) -> str:
    frac = f".{dt.microsecond:06d}{dt.microsecond % 997:03d}"[: width + 1] if width else ""
    off = dt.utcoffset()
    if zulu and not off:
        zone = "Z"
    else:
        mins = int(off.total_seconds() // 60)
        zone = f"{'-' if mins < 0 else '+'}{abs(mins) // 60:02d}:{abs(mins) % 60:02d}"
    return dt.strftime("%Y-%m-%dT%H:%M:%S") + frac + zone


zones = st.sampled_from(
    [
        UTC,
        timezone(timedelta(hours=-4)),
        timezone(timedelta(hours=5, minutes=30)),
        timezone(timedelta(hours=-23, minutes=-59)),
    ]
)
instants = st.builds(
    lambda d, tz: d.replace(tzinfo=tz),
    st.datetimes(min_value=datetime(1971, 1, 1), max_value=datetime(2099, 12, 31)),
    zones,
)
timestamps = st.builds(rfc3339, instants, st.sampled_from([0, 3, 6, 9]), st.booleans())
contents = st.one_of(st.text(max_size=12), st.text(min_size=55, max_size=90), st.sampled_from(["", "Session x"]))
json_leaf = st.none() | st.booleans() | st.integers(-5, 5) | st.text(max_size=4)
opaque = st.dictionaries(st.sampled_from(["a", "b", "Preview", "text"]), json_leaf, max_size=3)


@st.composite
def messages(draw):
    m = {
        "role": draw(st.sampled_from(["User", "Assistant", "Tool", "System", "Developer"])),
        "content": draw(contents),
        "timestamp": draw(timestamps),
    }
    # a random subset of the optional fields, as older or newer writers leave them
    if draw(st.booleans()):
        m["kind"] = draw(st.sampled_from(["normal", "context_checkpoint", "run_summary", "hologram"]))
    if draw(st.booleans()):
        m["thinking"] = draw(st.none() | st.text(max_size=5))
    if draw(st.booleans()):
        m["images"] = draw(st.none() | st.lists(st.text("AB=", max_size=4), max_size=2))
    if draw(st.booleans()):
        m["actions"] = draw(st.lists(opaque, max_size=2))
    if draw(st.booleans()):
        m["tool_calls"] = [{"id": "c1", "function": {"name": "f", "arguments": draw(opaque)}}]
    if draw(st.booleans()):
        m["metadata"] = draw(opaque | st.none())
    if draw(st.booleans()):
        m["citations"] = draw(st.lists(json_leaf, max_size=2))  # a newer build's field
    return m


record = st.fixed_dictionaries(
    {
        "id": st.text(max_size=6),
        "trigger": st.sampled_from(["manual", "auto_threshold"]),
        "created_at": timestamps,
        "before_tokens": st.integers(0, 10**6),
        "duration_secs": st.floats(0, 100, allow_nan=False),
    }
)
scalar_values = {
    "safety_mode": st.sampled_from(["ask", "auto", "read_only", "full_access"]),
    "plan": opaque,
    "advertised_context": opaque,
    "last_token_usage": st.just(zeros()),
    "cumulative_token_usage": st.builds(lambda n: dict(zeros(), prompt_tokens=n), st.integers(0, 10**9)),
    "context_usage": opaque,
    "git_branch": st.text(max_size=6),
    "git_sha": st.text("0123456789abcdef", max_size=7),
    "cli_version": st.just("0.25.0"),
    "forked_from": st.just("20260101_000000_000"),
    "parent_session": st.just("20260101_000000_001"),
}


@st.composite
def state_events(draw):
    ev = {
        "type": "state",
        "title": draw(st.text(max_size=10) | st.just("Session 2026-01-01 00:00")),
        "model_name": draw(st.sampled_from(["ollama/test", "anthropic/x"])),
    }
    for k in draw(st.sets(st.sampled_from(sorted(scalar_values)))):
        ev[k] = draw(scalar_values[k])
    return ev


events = st.one_of(
    st.builds(lambda m: {"type": "message", "message": m}, messages()),
    st.builds(lambda m: {"type": "message", "message": m}, messages()),  # messages are the common case
    st.builds(lambda m: {"type": "inserted_before_last", "message": m}, messages()),
    st.builds(lambda a: {"type": "action", "action": a}, opaque),
    st.builds(lambda d: {"type": "image", "data": d}, st.text("AB=", max_size=4)),
    st.builds(
        lambda at, r, ms: {"type": "compaction", "at": at, "record": r, "replacement": ms},
        timestamps,
        record,
        st.lists(messages(), max_size=3),
    ),
    st.builds(lambda at, ms: {"type": "reset", "at": at, "messages": ms}, timestamps, st.lists(messages(), max_size=3)),
    state_events(),
    st.builds(
        lambda t: {"type": "input", "text": t},
        st.sampled_from(["", " ", "\u3000", "\x1c", "a", "a", "b"]) | st.text(max_size=4),
    ),
    st.builds(
        lambda n: {"type": "tasks", "store": {"next_id": n, "tasks": [{"id": 0, "subject": "s"}] * (n % 2)}},
        st.integers(0, 3),
    ),
)


class Model:
    """ConversationHistory's mutators, restated for the test (mermaid.md §3, §4.2)."""

    def __init__(self, created: datetime, created_at: str):
        u = created.astimezone(UTC)
        self.doc = {
            "id": SID,
            "title": f"Session {u.year:04d}-{u.month:02d}-{u.day:02d} {u.hour:02d}:{u.minute:02d}",
            "messages": [],
            "model_name": "ollama/test",
            "project_path": "/p",
            "created_at": created_at,
            "updated_at": created_at,
            "compactions": [],
            "input_history": [],
            "cumulative_token_usage": zeros(),
            "tasks": {"tasks": [], "next_id": 0},
            **SCALAR_DEFAULTS,
        }

    @staticmethod
    def full(m: dict) -> dict:
        out = copy.deepcopy({**OPTIONAL_DEFAULTS, **m})
        if out["role"] not in ("User", "Assistant", "System", "Tool"):
            out["role"] = "System"
        if out["kind"] not in KNOWN_KINDS:
            out["kind"] = "unknown"
        return out

    @staticmethod
    def preview(s: str) -> str:
        if len(s.encode()) <= 60:
            return s
        out = ""
        for ch in s:
            if len((out + ch).encode()) > 60:
                break
            out += ch
        return out + "..."

    def apply(self, ev: dict) -> None:
        d, t = self.doc, ev["type"]
        msgs = d["messages"]
        last_asst = bool(msgs) and msgs[-1]["role"] == "Assistant"
        if t == "message":
            msgs.append(self.full(ev["message"]))
            d["updated_at"] = ev["message"]["timestamp"]
            users = [m for m in msgs if m["role"] == "User"]
            if d["title"].startswith("Session ") and users:
                d["title"] = self.preview(users[0]["content"])
        elif t == "inserted_before_last":
            msgs[len(msgs) - 1 if msgs else 0 : len(msgs) - 1 if msgs else 0] = [self.full(ev["message"])]
        elif t == "action" and last_asst:
            msgs[-1]["actions"].append(ev["action"])
        elif t == "image" and last_asst:
            msgs[-1]["images"] = (msgs[-1]["images"] or []) + [ev["data"]]
        elif t == "compaction":
            d["messages"] = [self.full(m) for m in ev["replacement"]]
            d["compactions"].append(ev["record"])
            d["updated_at"] = ev["at"]
        elif t == "reset":
            d["messages"] = [self.full(m) for m in ev["messages"]]
            d["updated_at"] = ev["at"]
        elif t == "state":
            d.update(SCALAR_DEFAULTS, cumulative_token_usage=zeros())
            d.update({k: v for k, v in ev.items() if k != "type"})
        elif t == "input":
            text, hist = ev["text"], d["input_history"]
            if any(c not in RUST_WS for c in text) and (not hist or hist[-1] != text):
                hist.append(text)
                del hist[:-100]
        elif t == "tasks":
            d["tasks"] = ev["store"]


@st.composite
def sessions(draw):
    created = draw(instants)
    created_at = rfc3339(created, draw(st.sampled_from([0, 3, 9])), True)
    evs = draw(st.lists(events, max_size=25))
    started = {
        "type": "started",
        "session_id": SID,
        "project_path": "/p",
        "model_id": "ollama/test",
        "created_at": created_at,
    }
    model = Model(created, created_at)
    snapshots = [None, copy.deepcopy(model.doc)]  # snapshots[k]: the fold of the first k lines
    for ev in evs:
        model.apply(ev)
        snapshots.append(copy.deepcopy(model.doc))
    ts_pool = draw(st.lists(timestamps, min_size=1, max_size=3))
    lines = [
        log_line_bytes({"v": 1, "seq": i, "ts": ts_pool[i % len(ts_pool)], "event": e})
        for i, e in enumerate([started, *evs])
    ]
    return lines, snapshots


def fold_of(data: bytes):
    read = parse_log(data)
    return fold(read.events, UTC) if read.usable else None


@settings(max_examples=200, deadline=None)
@given(sessions())
def test_fold_of_the_log_equals_the_reference_model(session):
    lines, snapshots = session
    read = parse_log(b"".join(lines))
    assert read.stop is None, read.reason
    doc = fold(read.events, UTC)
    assert doc == snapshots[-1]
    assert snapshot_bytes(doc) == snapshot_bytes(snapshots[-1])


BAD = [
    b"",
    b"{ torn",
    b"\x00\x00",
    b'{"v":1}',
    b'{"event":{"type":"hologram"},"seq":1,"ts":"2026-07-02T12:00:00Z","v":1}',
    b'{"event":{"text":"x","type":"input"},"seq":1,"ts":"2026-02-30T12:00:00Z","v":1}',
    b'{"event":{"text":"x","type":"input"},"seq":"1","ts":"2026-07-02T12:00:00Z","v":1}',
    b'{"event":{"text":"\xff","type":"input"},"seq":1,"ts":"2026-07-02T12:00:00Z","v":1}',
]


@settings(max_examples=200, deadline=None)
@given(sessions(), st.data())
def test_a_bad_line_anywhere_folds_like_the_prefix_before_it(session, data):
    lines, snapshots = session
    k = data.draw(st.integers(0, len(lines)), label="position")
    bad = data.draw(st.sampled_from(BAD), label="bad line")
    after = b"".join(lines[k:])
    read = parse_log(b"".join(lines[:k]) + bad + b"\n" + after)
    assert read.stop in ("malformed", "invalid-utf8") and read.stop_line == k
    assert (fold(read.events, UTC) if read.usable else None) == snapshots[k]


@settings(max_examples=200, deadline=None)
@given(sessions(), st.data())
def test_a_torn_last_line_folds_like_the_prefix_before_it(session, data):
    lines, snapshots = session
    k = data.draw(st.integers(0, len(lines) - 1), label="torn line")
    cut = data.draw(st.integers(1, len(lines[k]) - 2), label="cut")  # strictly inside the JSON object
    head = b"".join(lines[:k])
    read = parse_log(head + lines[k][:cut])
    assert read.stop == "torn-tail" and read.stop_offset == len(head) and not read.tail_complete
    assert fold_of(head + lines[k][:cut]) == snapshots[k]
    # losing only the final newline keeps the whole line, as mermaid's reader does
    whole = b"".join(lines)[:-1]
    assert fold_of(whole) == snapshots[-1] and parse_log(whole).tail_complete


@settings(max_examples=200, deadline=None)
@given(sessions(), st.data())
def test_a_newer_format_line_before_any_bad_line_refuses_everything(session, data):
    lines, _ = session
    k = data.draw(st.integers(0, len(lines)), label="position")
    newer = log_line_bytes({"v": 2, "seq": k, "ts": "2026-07-02T12:00:00Z", "event": {"type": "input", "text": "x"}})
    read = parse_log(b"".join(lines[:k]) + newer + b"".join(lines[k:]))
    assert read.stop == "newer-format" and read.events == [] and not read.usable
    # ...but one after a malformed line is never reached
    read = parse_log(b"".join(lines[:k]) + b"{ torn\n" + newer)
    assert read.stop == "malformed" and len(read.events) == k
