"""SAM's message decode reads each field once and skips what it can (issue #32): it gives what the
plain rules, kept here as they were written, give, for any message.

The reference functions below are the rules before the fast path: one helper call per field, and the
think tags always removed before a message's text is looked at.
"""

from __future__ import annotations

import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from samctl.model import PARSE_LATER, Message, tool_calls_from_openai
from samctl.stores.sam import decode


def _str(v, default=""):
    return v if isinstance(v, str) else default


def _role_of(m: dict) -> str:
    if m.get("isFromUser") is True:
        return "user"
    return {"toolExecution": "tool", "thinking": "reasoning", "systemStatus": "system"}.get(
        m.get("type") if isinstance(m.get("type"), str) else None, "assistant"
    )


def _hidden_by_ui(m: dict) -> bool:
    if m.get("isSystemGenerated") is True:
        return True
    if _str(m.get("content")).replace("<think>", "").replace("</think>", "").strip():
        return False
    if m.get("type") == "toolExecution" or m.get("isToolMessage") is True and m.get("type") != "thinking":
        return False
    if m.get("type") == "thinking" and _str(m.get("reasoningContent")).strip():
        return False
    return not (isinstance(m.get("contentParts"), list) and m["contentParts"])


def _message(m) -> Message | None:
    if not isinstance(m, dict):
        return None
    imp = m.get("importance")
    reasoning = m.get("reasoningContent")
    return Message(
        _role_of(m),
        _str(m.get("content")),
        m.get("timestamp") if isinstance(m.get("timestamp"), str) else None,
        PARSE_LATER,
        m.get("id") if isinstance(m.get("id"), str) else None,
        tool_calls_from_openai(m.get("toolCalls")),
        m.get("toolCallId") if isinstance(m.get("toolCallId"), str) else None,
        m.get("toolName") if isinstance(m.get("toolName"), str) else None,
        m.get("toolStatus") if isinstance(m.get("toolStatus"), str) else None,
        reasoning if isinstance(reasoning, str) and reasoning else None,
        _str(m.get("type"), None),
        float(imp) if isinstance(imp, (int, float)) and not isinstance(imp, bool) else None,
        _hidden_by_ui(m),
        False,
        m.get("isPinned") is True,
        [],
        decode.content_parts(m.get("contentParts")),
        m,
    )


def _fields(msg: Message | None):
    if msg is None:
        return None
    return tuple(getattr(msg, f) for f in msg.__slots__ if f != "timestamp_ts") + (msg.timestamp_ts,)


TEXTS = st.one_of(
    st.sampled_from(
        ["", " ", "hi", "  hi", "<think>", "<think></think>", " <think>x</think>", "</<think>think>", "<b>"]
    ),
    st.text(alphabet=" \t\n<>/thinkx\u00a0\u2003", max_size=20),
)
VALUES = st.one_of(
    st.none(), st.booleans(), st.integers(-2, 2), st.floats(allow_nan=False), TEXTS, st.just([]), st.just({})
)
KEYS = [
    "content",
    "timestamp",
    "id",
    "type",
    "isFromUser",
    "isSystemGenerated",
    "isToolMessage",
    "isPinned",
    "importance",
    "reasoningContent",
    "toolCalls",
    "toolCallId",
    "toolName",
    "toolStatus",
    "contentParts",
]
SPECIAL = {
    "type": st.sampled_from(["toolExecution", "thinking", "systemStatus", "text", ["x"], None]),
    "timestamp": st.sampled_from(["2026-08-10T14:03:07Z", "2026-08-10T14:03:07.5+02:00", "soon", None]),
    "toolCalls": st.sampled_from(
        [None, [], [{"id": "a", "function": {"name": "Bash", "arguments": "{}"}}], ["x"], {"a": 1}, "x"]
    ),
    "contentParts": st.sampled_from(
        [None, [], [{"type": "text", "text": "t"}], [{"type": "image_url", "image_url": {"url": "u"}}], ["x"], "x"]
    ),
}
MESSAGES = st.fixed_dictionaries({}, optional={k: SPECIAL.get(k, VALUES) for k in KEYS})


@settings(max_examples=600, deadline=None)
@given(st.one_of(MESSAGES, VALUES))
def test_a_message_decodes_as_the_plain_rules_decode_it(m):
    assert _fields(decode.message(m)) == _fields(_message(m))
    if isinstance(m, dict):
        assert decode.hidden_by_ui(m) == _hidden_by_ui(m)
        assert decode.role_of(m) == _role_of(m)


def test_every_message_of_the_demo_decodes_as_before(sam_demo):
    docs = [orjson.loads(p.read_bytes()) for p in sam_demo.rglob("conversation.json")]
    msgs = [m for d in docs for m in d.get("messages") or ()]
    assert len(msgs) > 10
    assert [_fields(decode.message(m)) for m in msgs] == [_fields(_message(m)) for m in msgs]
