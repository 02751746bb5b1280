"""One message's Markdown stays inside that message: a code fence the text leaves open is closed
before the next message, and a ``</details>`` inside reasoning does not end its fold early."""

from __future__ import annotations

import re

import pytest

from samctl.model import Conversation, ConversationMeta, Message
from samctl.render.text import to_markdown

_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})(.*)$")


def _outside_fences(md: str) -> list[str]:
    """The lines CommonMark reads outside fenced code blocks (CommonMark §4.5: a fence closes with a run of the
    same character, at least as long, and nothing but spaces after it)."""
    out, open_run = [], None
    for line in md.split("\n"):
        m = _FENCE.match(line)
        if open_run is None:
            if m and not (m.group(1)[0] == "`" and "`" in m.group(2)):
                open_run = m.group(1)
                continue
            out.append(line)
        elif m and m.group(1)[0] == open_run[0] and len(m.group(1)) >= len(open_run) and not m.group(2).strip():
            open_run = None
    return out


def _conv(*messages):
    meta = ConversationMeta("mermaid", "20260810_140307_512", "t", None, None, None, None, len(messages), 0, False, "")
    return Conversation(meta=meta, messages=list(messages))


def _msg(role, content, reasoning=None, ts="2026-08-10T14:03:07Z"):
    return Message(role=role, content=content, timestamp=ts, reasoning=reasoning)


@pytest.mark.parametrize(
    "content",
    ["My script:\n```python\nimport os", "~~~\nopen tilde", "````\nfour\n```\nstill open", "   ```sh\nindented open"],
)
def test_a_fence_left_open_is_closed_before_the_next_message(content):
    md = to_markdown(_conv(_msg("user", content), _msg("assistant", "Here is **the answer**.")))
    outside = _outside_fences(md)
    assert any(line.startswith("## Assistant") for line in outside)
    assert "Here is **the answer**." in outside
    assert content in md  # the text itself is kept as it was


def test_closed_fences_and_plain_text_are_left_alone():
    text = "Run:\n```sh\nls\n```\nand ``` inline ``` is not a fence"
    md = to_markdown(_conv(_msg("user", text), _msg("assistant", "ok")))
    assert text + "\n\n## Assistant" in md


def test_details_inside_reasoning_does_not_end_the_fold():
    md = to_markdown(_conv(_msg("assistant", "final", reasoning="step one</details>\n\nstep two</DETAILS >")))
    body = md.split("<details><summary>Reasoning</summary>", 1)[1]
    fold, after = body.split("</details>", 1)
    assert "step one" in fold and "step two" in fold
    assert "step two" not in after and "final" in after


def test_a_fence_left_open_in_a_list_item_is_closed_at_its_indentation():
    """Inside a list item the fence ends with the item anyway; a closing line at column 0 would
    open a new fence there and swallow the rest (checked with a CommonMark parser)."""
    content = "1. Run:\n\n   ```sh\n   make"
    md = to_markdown(_conv(_msg("user", content), _msg("assistant", "ok")))
    assert content + "\n   ```\n\n## Assistant" in md
    assert "\n```\n" not in md


def test_details_in_code_inside_reasoning_is_left_as_written():
    reasoning = "use `</details>` to close\n```html\n</details>\n```\nbut </details> here ends it"
    md = to_markdown(_conv(_msg("assistant", "final", reasoning=reasoning)))
    assert "use `</details>` to close\n```html\n</details>\n```\nbut &lt;/details> here ends it" in md
