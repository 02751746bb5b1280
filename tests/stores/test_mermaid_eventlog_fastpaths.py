"""The shortcuts of the event-log validator agree with its general rules, case for case.

``check_message`` and ``_state`` accept the usual line with fewer lookups; on anything
else they defer to ``_message_problem`` / ``_state_problem``. A shortcut that accepted
what the rule refuses would let samctl fold a line mermaid stops at.
"""

import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from samctl.stores.mermaid import decode, eventlog
from samctl.stores.mermaid import envelope as E
from tests.test_timeparse import EDGE_TIMESTAMPS

VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 3),
    st.floats(allow_nan=False, width=32),
    st.sampled_from(
        ["", "x", "2026-08-10T14:03:07.512Z", "2026-02-30T00:00:00Z", "2026-08-10T14:03:07.512-04:00", "User"]
    ),
    st.just([]),
    st.just(["a"]),
    st.just({}),
    st.just({"k": 1}),
)
MISSING = object()
BASE_MESSAGE = {
    "role": "User",
    "content": "hi",
    "timestamp": "2026-08-10T14:03:07.512Z",
    "kind": "normal",
    "metadata": {"any": [1]},
    "actions": [],
    "thinking": None,
    "images": None,
    "image_numbers": None,
    "tool_calls": None,
    "tool_call_id": None,
    "tool_name": None,
    "provider_continuation": None,
}
BASE_STATE = {
    "type": "state",
    "title": "t",
    "model_name": "m",
    "safety_mode": "ask",
    "plan": None,
    "advertised_context": None,
    "last_token_usage": {},
    "cumulative_token_usage": {},
    "context_usage": None,
    "git_branch": "main",
    "git_sha": None,
    "cli_version": "0.25.0",
    "forked_from": None,
    "parent_session": None,
}


def _perturbed(base, changes, extra):
    """``base`` (valid) with a few fields replaced or removed: near the line of the shortcut."""
    d = dict(base)
    for key, value in changes:
        if value is MISSING:
            d.pop(key, None)
        else:
            d[key] = value
    if extra:
        d["newer_field"] = 1
    return d


def _changes(keys):
    return st.lists(st.tuples(st.sampled_from(keys), st.one_of(VALUES, st.just(MISSING))), max_size=3)


@settings(max_examples=3000, deadline=None)
@given(_changes(E.MESSAGE_FIELDS), st.booleans())
def test_message_shortcut_agrees_with_the_rule(changes, extra):
    m = _perturbed(BASE_MESSAGE, changes, extra)
    assert E.check_message(m, "m") == E._message_problem(m, "m")


def test_message_shortcut_takes_every_valid_type_combination():
    base = BASE_MESSAGE
    assert E.check_message(base, "m") is None
    for key, types in E._MESSAGE_OPTIONAL:
        sample = {str: "s", list: [], dict: {}, type(None): None}
        for t in types:
            assert E.check_message({**base, key: sample[t]}, "m") is None, (key, t)
        for wrong in (1, 1.5, True):
            assert E.check_message({**base, key: wrong}, "m") == f"m.{key} is {E.json_type(wrong)}"
    assert E.check_message({**base, "timestamp": "2026-02-30T00:00:00Z"}, "m") == "m.timestamp is not an RFC 3339 time"
    assert E.check_message({**base, "role": 1}, "m") == "m.role is an integer"
    assert E.check_message({**base, "content": None}, "m") == "m.content is null"


@settings(max_examples=3000, deadline=None)
@given(_changes(("type", *eventlog.SCALARS)), st.booleans())
def test_state_shortcut_agrees_with_the_rule(changes, extra):
    e = _perturbed(BASE_STATE, changes, extra)
    assert E._state(e) == E._state_problem(e)


def test_state_shortcut_takes_a_line_without_its_null_fields_and_names_the_first_bad_one():
    e = {"type": "state", "title": "t", "model_name": "m", "cumulative_token_usage": {}, "git_sha": "abc"}
    assert E._state(e) is None
    bad = {**e, "plan": 3, "safety_mode": 4}
    assert E._state(bad) == "state.safety_mode is an integer"  # struct order, not the line's
    assert E._state({**e, "cumulative_token_usage": None}) == "state.cumulative_token_usage is null"


def _depth_of(v) -> int:
    """The reference: the level of the deepest container in ``v`` (a container is level 1)."""
    if type(v) is dict:
        v = list(v.values())
    if type(v) is not list:
        return 0
    return 1 + max((_depth_of(c) for c in v), default=0)


NESTED = st.recursive(
    st.one_of(st.none(), st.integers(0, 3), st.just("x"), st.just([]), st.just({})),
    lambda kids: st.one_of(st.lists(kids, max_size=3), st.dictionaries(st.sampled_from("abc"), kids, max_size=3)),
    max_leaves=40,
)


@settings(max_examples=300, deadline=None)
@given(NESTED.filter(lambda v: type(v) in (dict, list)), st.integers(1, 8))
def test_deeper_than_agrees_with_the_depth(doc, limit):
    assert E.deeper_than(doc, limit) == (_depth_of(doc) > limit)


def test_deeper_than_at_serde_limit_on_a_wide_document():
    """A snapshot-like document: many shallow containers beside one chain exactly at, then past, the limit."""
    chain: list = []
    for _ in range(E.MAX_DEPTH - 3):  # MAX_DEPTH - 2 levels; with the top object and its list: MAX_DEPTH
        chain = [chain]
    doc = {"messages": [{"actions": [], "metadata": {}} for _ in range(200)] + [chain]}
    assert not E.deeper_than(doc, E.MAX_DEPTH)
    doc["messages"][-1] = [chain]
    assert E.deeper_than(doc, E.MAX_DEPTH)


# --- a snapshot's messages checked a field at a time (decode.complete_messages) --------------------------

EDGE_TEXTS = [t for t in EDGE_TIMESTAMPS if type(t) is str]
TIMES = st.one_of(
    st.sampled_from(EDGE_TEXTS),
    st.sampled_from(["0000-01-01T00:00:00Z", "2026-08-10T14:03:07." + "5" * 1100 + "Z", ""]),
    st.builds(lambda a, b: f"{a}\n{b}", st.sampled_from(EDGE_TEXTS), st.sampled_from(EDGE_TEXTS)),
    st.text(alphabet="0123456789-:TZ.+\n ", max_size=30),
)


@settings(max_examples=1500, deadline=None)
@given(st.lists(TIMES, max_size=6))
def test_all_timestamps_is_is_timestamp_of_each(times):
    assert E.all_timestamps(times) == (bool(times) and all(map(E.is_timestamp, times)))


@settings(max_examples=1500, deadline=None)
@given(
    st.lists(
        st.one_of(
            st.tuples(_changes(E.MESSAGE_FIELDS), st.booleans(), st.one_of(st.none(), TIMES)),
            st.sampled_from([None, [], "x", 1]),
        ),
        min_size=1,
        max_size=4,
    )
)
def test_complete_messages_is_the_message_rule_for_each(spec):
    msgs = []
    for s in spec:
        if type(s) is not tuple:
            msgs.append(s)
            continue
        changes, extra, ts = s
        m = _perturbed(BASE_MESSAGE, changes, extra)
        if ts is not None:
            m["timestamp"] = ts
        msgs.append(m)
    want = all(E.complete_message(m) and decode.readable_time(m["timestamp"]) for m in msgs)
    got = decode.complete_messages(msgs)
    assert (got is not None) == want
    if want:  # what may hold a container: every value of those fields, message by message, field by field
        fields = [
            k
            for k in E.MESSAGE_FIELDS
            if k in ("metadata", "actions", "images", "image_numbers", "tool_calls", "provider_continuation")
        ]
        assert sorted(map(repr, got)) == sorted(repr(m[k]) for m in msgs for k in fields)


def test_complete_messages_takes_a_message_in_either_key_order_and_refuses_a_shuffled_extra_key():
    forward = dict(BASE_MESSAGE)
    backward = dict(reversed(list(BASE_MESSAGE.items())))
    assert decode.complete_messages([forward, backward]) is not None
    assert decode.complete_messages([forward, {**backward, "extra": 1}]) is None
    short = dict(BASE_MESSAGE)
    del short["tool_name"]
    assert decode.complete_messages([forward, {**short, "extra": None}]) is None  # 13 keys, one unknown


def _nested(depth: int):
    v: object = 0
    for _ in range(depth):
        v = [v]
    return v


def _line(seq: int, kind: str, depth: int) -> bytes:
    """One log line: a message whose metadata nests ``depth`` levels (3 more for the envelope), a message
    with brackets in its text only, or a line that is not JSON."""
    if kind == "junk":
        return b"{not json"
    msg = dict(BASE_MESSAGE, metadata=_nested(depth)) if kind == "deep" else dict(BASE_MESSAGE, content="[{" * depth)
    env = {"v": 1, "seq": seq, "ts": "2026-08-10T14:03:07.512Z", "event": {"type": "message", "message": msg}}
    return orjson.dumps(env)


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["deep", "text", "junk"]),
            st.sampled_from([0, 2, E.MAX_DEPTH - 4, E.MAX_DEPTH - 3, E.MAX_DEPTH - 2, E.MAX_DEPTH + 3]),
        ),
        max_size=6,
    )
)
def test_a_log_is_read_as_its_lines_one_by_one(spec):
    """``parse_log`` (each line's brackets counted in one pass over the log) stops where ``parse_line`` of
    each line in turn first refuses one, for the same reason, having kept the lines before it."""
    started = {"type": "started", "session_id": "20260810_140307_512", "project_path": "/p", "model_id": "m"}
    first = {
        "v": 1,
        "seq": 0,
        "ts": "2026-08-10T14:03:07.512Z",
        "event": dict(started, created_at="2026-08-10T14:03:07.512Z"),
    }
    lines = [orjson.dumps(first)] + [_line(i + 1, kind, depth) for i, (kind, depth) in enumerate(spec)]
    read = eventlog.parse_log(b"\n".join(lines) + b"\n")
    kept, why = [], None
    for line in lines:
        obj, why = E.parse_line(line)
        if why is not None:
            break
        kept.append(obj)
    assert read.events == kept
    assert (read.stop is None) == (why is None)
    if why is not None:
        assert read.stop_line == len(kept) and why.split(" (")[0] in read.reason


@settings(max_examples=3000, deadline=None)
@given(_changes(E.MESSAGE_FIELDS), st.booleans())
def test_complete_message_is_every_field_and_no_other_of_its_type(changes, extra):
    m = _perturbed(BASE_MESSAGE, changes, extra)
    want = m.keys() == set(E.MESSAGE_FIELDS) and E._message_problem(m, "m") is None
    assert E.complete_message(m) == want
