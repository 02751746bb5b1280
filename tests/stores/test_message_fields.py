"""The decoders that build a Message by position (SAM's, mermaid's) put each value in the field it belongs to."""

from __future__ import annotations

from samctl.model import MESSAGE_FIELDS, Message, ToolCall
from samctl.stores.mermaid import decode as mermaid_decode
from samctl.stores.sam import decode as sam_decode


def test_message_fields_are_the_first_slots_in_order():
    assert tuple(Message.__slots__[: len(MESSAGE_FIELDS)]) == MESSAGE_FIELDS
    assert set(Message.__slots__[len(MESSAGE_FIELDS) :]) == {"copied", "exit_code", "duration"}


def _fields(m: Message) -> dict:
    return {k: getattr(m, k) for k in Message.__slots__}


def test_sam_puts_every_value_in_its_field():
    raw = {
        "content": "the content",
        "id": "MSG-ID",
        "timestamp": "2026-08-10T14:02:11Z",
        "isFromUser": False,
        "type": "toolExecution",
        "toolCalls": [{"id": "call-1", "function": {"name": "weather", "arguments": "{}"}}],
        "toolCallId": "call-0",
        "toolName": "the tool",
        "toolStatus": "success",
        "reasoningContent": "the reasoning",
        "importance": 0.25,
        "isPinned": True,
        "contentParts": [{"type": "text", "text": "a part"}],
    }
    got = _fields(sam_decode.message(raw))
    assert got == {
        "role": "tool",
        "content": "the content",
        "timestamp": "2026-08-10T14:02:11Z",
        "timestamp_ts": 1786370531.0,
        "id": "MSG-ID",
        "tool_calls": [ToolCall("call-1", "weather", "{}")],
        "tool_call_id": "call-0",
        "tool_name": "the tool",
        "tool_status": "success",
        "reasoning": "the reasoning",
        "kind": "toolExecution",
        "importance": 0.25,
        "hidden": False,
        "marker": False,
        "pinned": True,
        "actions": [],
        "attachments": [{"type": "text", "text": "a part"}],
        "raw": raw,
        "copied": False,
        "exit_code": None,
        "duration": None,
    }
    assert sam_decode.message({"content": "", "isSystemGenerated": True}).hidden is True


def test_mermaid_puts_every_value_in_its_field():
    raw = {
        "role": "Assistant",
        "content": "the content",
        "timestamp": "2026-08-10T14:02:11.250Z",
        "kind": "recovery_nudge",
        "tool_calls": [{"id": "call-1", "function": {"name": "read_file", "arguments": {"path": "a"}}}],
        "tool_call_id": "call-0",
        "tool_name": "the tool",
        "thinking": "the thinking",
        "actions": [{"tool": "read_file"}],
        "images": ["aGVsbG8="],
    }
    got = _fields(mermaid_decode.message(raw))
    assert got == {
        "role": "assistant",
        "content": "the content",
        "timestamp": "2026-08-10T14:02:11.250Z",
        "timestamp_ts": 1786370531.25,
        "id": None,
        "tool_calls": [ToolCall("call-1", "read_file", {"path": "a"})],
        "tool_call_id": "call-0",
        "tool_name": "the tool",
        "tool_status": None,
        "reasoning": "the thinking",
        "kind": "recovery_nudge",
        "importance": None,
        "hidden": True,
        "marker": False,
        "pinned": False,
        "actions": [{"tool": "read_file"}],
        "attachments": [{"type": "image", "bytes": 5}],
        "raw": raw,
        "copied": False,
        "exit_code": None,
        "duration": None,
    }
