"""``starts``: the line where each message begins in a transcript (show --at hands it to less as +LINE),
exact whatever line breaks, control characters, reasoning, tool calls or attachments the messages hold."""

from __future__ import annotations

import pytest

from samctl.model import Conversation, ConversationMeta, Message, ToolCall
from samctl.render import text as render
from samctl.safetext import safe_text

HOSTILE = "a\nb\r\nc\rd\x0be\x0cf\x85g\u2028h\u2029i\x1b[2Jj\n\n\n```\n<details>\n"


def _conv() -> Conversation:
    msgs = [
        Message("user", HOSTILE, reasoning="r1\nr2\u2028r3"),
        Message("assistant", "", tool_calls=[ToolCall("c1", "t\nx", {"k": "v\nw"})], hidden=True),
        Message("tool", HOSTILE * 3, tool_name="t\u2028n", tool_status="error"),
        Message(
            "assistant",
            "ok",
            attachments=[{"type": "text", "text": "x\ny"}, {"type": "image", "url": "u\nv"}],
            actions=[{"action_type": "run\n", "target": "t\r", "result": {"Ok": "o\nk"}}],
        ),
        Message("user", "last"),
    ]
    return Conversation(ConversationMeta("mermaid", "20260810_140307_512", "ti\ntle"), msgs, model="m\nodel")


@pytest.mark.parametrize("fmt", ["text", "markdown"])
@pytest.mark.parametrize("at", [None, 0, 1, 4])
def test_each_message_starts_at_its_line(fmt, at):
    conv = _conv()
    starts: dict = {}
    if fmt == "text":
        out = render.to_text(conv, include_hidden=False, at=at, starts=starts)
        heads = [i for i, ln in enumerate(out.split("\n")) if ln.startswith("── ")]
    else:
        out = safe_text(render.to_markdown(conv, include_hidden=False, at=at, starts=starts))
        heads = [i for i, ln in enumerate(out.split("\n")) if ln.startswith("## ")]
    # after safe_text, "\n" is the only line break left (what less counts)
    assert not any(c in out for c in "\r\x0b\x0c\x85\u2028\u2029")
    shown = [i for i in range(5) if i != 1 or at == 1]  # message 1 is hidden unless asked for by --at
    assert sorted(starts) == shown
    assert [starts[i] - 1 for i in shown] == heads
