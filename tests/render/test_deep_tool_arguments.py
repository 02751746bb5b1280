"""Tool-call arguments nested deeper than Python's recursion limit (a string of 100,000 '[' in a SAM
snapshot, an llm tool_calls row, a ChatGPT code message) must render as they are stored, never
crash show or export: json.loads/json.dumps raise RecursionError, not ValueError, on them."""

import pytest

from samctl.model import Conversation, ConversationMeta, Message, ToolCall
from samctl.render import html
from samctl.render import text as render

DEEP = ["[" * 100_000, "[" * 100_000 + "]" * 100_000, '{"a":' * 3000 + "1" + "}" * 3000]


@pytest.mark.parametrize("args", DEEP)
def test_text_markdown_and_html_render_deep_arguments(args):
    msg = Message("assistant", "", tool_calls=[ToolCall("call_1", "t", args)])
    conv = Conversation(ConversationMeta("sam", "X", "deep"), [msg])
    assert "t(" in render.to_text(conv)
    assert "**Tool call** `t" in render.to_markdown(conv)
    page = html.message_html(msg, 0)
    assert "<summary><code>t" in page and "call_1" not in page  # (the call id only in JSON)
