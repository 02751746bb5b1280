"""Transcripts as text and Markdown: plain strings, no click, no terminal codes.

``style`` is an optional callable(text, role_or_tag) -> text the CLI uses to
add colour; the core never emits escape codes itself.  Message text is
printed as stored, except that ``safe_text`` (samctl/safetext.py) shows every control character as ``\\xNN``/``\\uNNNN`` so a hostile transcript cannot drive
the terminal.  Invariant: every piece of file text a command prints as text
(not JSON) goes through ``safe_text`` or ``one_line``.
"""

from __future__ import annotations

import json
import re
import shlex

from samctl.importance import message_importance
from samctl.model import last_activity
from samctl.safetext import one_line, safe_text
from samctl.timeparse import format_local
from samctl.toollabel import duration_text, tool_label


def _args(arguments) -> str:
    value = arguments
    if isinstance(arguments, str):
        try:
            value = json.loads(arguments)
        except (ValueError, RecursionError):
            return arguments
    if isinstance(value, dict):
        try:
            return ", ".join(f"{k}={json.dumps(v, ensure_ascii=False)}" for k, v in value.items())
        except (ValueError, TypeError, RecursionError):
            return arguments if isinstance(arguments, str) else args_json(arguments)
    return args_json(arguments)


def args_json(arguments, indent: int | None = None, quote: bool = False) -> str:
    """Tool-call arguments as JSON text: a JSON string parsed and re-dumped (``indent``), any other value
    dumped; a string that is not JSON as it is (``quote``: as a JSON string).  RecursionError counts as
    not JSON: arguments nested deeper than Python recurses (a hostile file) are shown, never a crash."""
    value = arguments
    if isinstance(arguments, str):
        try:
            value = json.loads(arguments)
        except (ValueError, RecursionError):
            return json.dumps(arguments, ensure_ascii=False) if quote else arguments
    try:
        return json.dumps(value, ensure_ascii=False, indent=indent)
    except (ValueError, TypeError, RecursionError):
        return arguments if isinstance(arguments, str) else repr(arguments)[:100_000]


def plain_style(text, tag):
    return text


def shown_count(conv) -> int:
    """The messages a transcript shows by default (the app's own: none it hides), as ``ls`` counts them."""
    return sum(1 for msg in conv.messages if not msg.hidden)


def place_line(conv) -> str | None:
    """``project DIR · branch B · continues ID`` for a conversation that has any of them, else None."""
    m = conv.meta
    bits = [f"{k} {v}" for k, v in (("project", m.project), ("branch", m.branch), ("continues", m.continues)) if v]
    return " · ".join(bits) if bits else None


def resume_text(conv) -> str | None:
    """The app's command to resume the conversation, ``cd DIR && ...`` when it runs in a folder, or None."""
    r = conv.resume
    if not r:
        return None
    return (f"cd {shlex.quote(r['cwd'])} && " if r.get("cwd") else "") + r["command"]


def header_lines(conv) -> list[str]:
    """The title, ``id · store · model · dates · N messages`` (N: what is shown without --all, as ``ls``
    counts), then the project line and the resume command where there are any."""
    m = conv.meta
    bits = [m.id, m.store]
    if conv.model:
        bits.append(conv.model)
    bits.append(f"{format_local(m.created_ts)} → {format_local(last_activity(m))}")  # (as ls shows it)
    n, hidden = shown_count(conv), len(conv.messages) - shown_count(conv)
    bits.append(f"{n} message{'s' if n != 1 else ''}" + (f" (+{hidden} hidden)" if hidden else ""))
    out = [m.title, " · ".join(bits)]
    place, resume = place_line(conv), resume_text(conv)
    if place:
        out.append(place)
    if resume:
        out.append(f"resume: {resume}")
    return out


def result_label(msg) -> str:
    """A tool result's label: ``tool NAME [error] · exit 1 · 0.3s`` (what is known of it)."""
    label = msg.role
    if msg.tool_name:
        label += f" {msg.tool_name}"
    if msg.tool_status and msg.tool_status != "success":
        label += f" [{msg.tool_status}]"
    if msg.exit_code is not None:
        label += f" · exit {msg.exit_code}"
    if msg.duration is not None:
        label += f" · {duration_text(msg.duration)}"
    return label


def attachment_line(a: dict) -> str:
    """One attachment as a line of text: ``[image] file:///...``, ``[image, 12,345 bytes, in the file]``."""
    if a.get("type") == "text":
        return a.get("text") or ""
    if "url" in a:
        return f"[{a.get('type')}] {a['url']}"
    return f"[{a.get('type')}, {a.get('bytes', 0):,} bytes, in the file]"


def shown(messages, include_hidden: bool, min_importance: float | None = None, at: int | None = None):
    """(index, message) of the messages a transcript shows; the one at index ``at`` (``show --at``) whatever
    the filters, since it was asked for by its position."""
    for i, msg in enumerate(messages):
        if i == at:
            yield i, msg
            continue
        if msg.hidden and not include_hidden:
            continue
        if min_importance is not None:
            if message_importance(msg) < min_importance:
                continue
        yield i, msg


def visible(messages, include_hidden: bool, min_importance: float | None = None, at: int | None = None):
    return (msg for _, msg in shown(messages, include_hidden, min_importance, at))


def _mark_lines(out: list[str], marks: dict, starts: dict | None) -> None:
    """Fill ``starts`` with the line (from 1) of ``"\n".join(out)`` where each message starts (``marks``:
    message index -> its first entry in ``out``)."""
    if starts is None:
        return
    line, k = 1, 0
    for i, entry in sorted(marks.items(), key=lambda x: x[1]):
        line += sum(e.count("\n") + 1 for e in out[k:entry])
        k = entry
        starts[i] = line


def to_text(
    conv,
    reasoning: bool = False,
    include_hidden: bool = False,
    style=plain_style,
    min_importance: float | None = None,
    at: int | None = None,
    starts: dict | None = None,
) -> str:
    """The transcript; the message at index ``at`` is shown whatever the filters, and ``starts`` (if given) is
    filled with the line (from 1) where each message shown starts."""
    title, *info = header_lines(conv)
    out = [style(one_line(title), "title"), *(style(safe_text(x), "dim") for x in info), ""]  # (title: one line)
    marks = {}
    for i, msg in shown(conv.messages, include_hidden, min_importance, at):
        marks[i] = len(out)
        label = result_label(msg) if msg.role == "tool" else msg.role
        when = format_local(msg.timestamp_ts)
        out.append(style(f"── {safe_text(label, lines=False)} · {when} ──", msg.role))
        if msg.reasoning:
            if reasoning:
                out.append(style("(reasoning)", "dim"))
                out.append(style(safe_text(msg.reasoning), "dim"))
            else:
                n = msg.reasoning.count("\n") + 1
                out.append(style(f"(reasoning folded: {n} line{'s' if n != 1 else ''}; --reasoning shows it)", "dim"))
        if msg.content:
            out.append(safe_text(msg.content))
        for att in msg.attachments:  # (not ``at``: that names the message shown whatever the filters)
            out.append(
                safe_text(att["text"]) if att.get("type") == "text" else style(safe_text(attachment_line(att)), "dim")
            )
        for tc in msg.tool_calls:  # as the app shows it: Bash(git status); ids only in --raw and JSON
            out.append(style(f"  → {safe_text(tool_label(tc.name, tc.arguments))}", "tool"))
        for a in msg.actions:
            if isinstance(a, dict):
                out.append(
                    style(
                        f"  ⚙ {safe_text(str(a.get('action_type', '?')))} "
                        f"{safe_text(str(a.get('target', '')))} {_action_result(a)}",
                        "tool",
                    )
                )
        out.append("")
    _mark_lines(out, marks, starts)
    return "\n".join(out)


def action_outcome(a: dict) -> tuple[str, object]:
    """("ok"|"error"|"", output) of a mermaid tool run's externally tagged ``result``."""
    r = a.get("result")
    if isinstance(r, dict):
        if isinstance(r.get("Success"), dict):
            return "ok", r["Success"].get("output", "")
        if isinstance(r.get("Error"), dict):
            return "error", r["Error"].get("error", "")
    return "", ""


def _action_result(a: dict) -> str:
    status, output = action_outcome(a)
    return f"{status}: " + safe_text(str(output)[:120]) if status else ""


def _fence(text: str) -> str:
    longest = max((len(m) for m in re.findall(r"`+", text)), default=0)
    return "`" * max(3, longest + 1)


_FENCE_LINE = re.compile(r"( {0,3})(`{3,}|~{3,})(.*)")
_DETAILS_END = re.compile(r"</details\s*>", re.I)
_CODE_SPAN = re.compile(r"(`+).*?(?<!`)\1(?!`)")


def _fences(text: str):
    """``([(line, in a fenced code block or a fence line)], the fence left open as its opening
    indentation and run, or None)``, by CommonMark §4.5: a fence closes with a run of the same
    character at least as long, with nothing but spaces after it."""
    lines, open_fence = [], None
    for line in text.split("\n"):
        m = _FENCE_LINE.fullmatch(line)
        if open_fence is None:
            if m and not (m[2][0] == "`" and "`" in m[3]):  # (a backtick fence's info string has no backtick)
                open_fence = (m[1], m[2])
            lines.append((line, open_fence is not None))
            continue
        lines.append((line, True))
        if m and m[2][0] == open_fence[1][0] and len(m[2]) >= len(open_fence[1]) and not m[3].strip():
            open_fence = None
    return lines, open_fence


def _closed(text: str, open_fence) -> str:
    # indented like its opener: inside a list item a fence at column 0 would open a new block instead
    return text if open_fence is None else text.rstrip("\n") + "\n" + "".join(open_fence)


def _contained(text: str) -> str:
    """``text`` with a closing line added for a code fence it leaves open, so that one message's
    text cannot turn the headings and messages after it into code."""
    return _closed(text, _fences(text)[1])


def _in_fold(reasoning: str) -> str:
    """Reasoning for a ``<details>`` block, contained: a ``</details>`` of its own, outside code
    (where a reader would take it for the tag and end the fold early), is written as ``&lt;/details>``,
    which a reader shows as those characters.  In code it is shown as written already."""
    lines, open_fence = _fences(reasoning)
    out = [
        line if code else _outside_code_spans(line, lambda t: _DETAILS_END.sub(lambda m: "&lt;" + m[0][1:], t))
        for line, code in lines
    ]
    return _closed("\n".join(out), open_fence)


def _outside_code_spans(line: str, fix) -> str:
    out, at = [], 0
    for m in _CODE_SPAN.finditer(line):
        out += [fix(line[at : m.start()]), m[0]]
        at = m.end()
    return "".join(out) + fix(line[at:])


def to_markdown(
    conv,
    reasoning: bool = True,
    include_hidden: bool = False,
    min_importance: float | None = None,
    at: int | None = None,
    starts: dict | None = None,
) -> str:
    """The transcript as Markdown; ``at`` and ``starts`` as for ``to_text``."""
    m = conv.meta
    out = [f"# {_md_inline(m.title)}", ""]
    out.append(f"- **id:** `{m.id}` ({m.store})")
    if conv.model:
        out.append(f"- **model:** {_md_inline(conv.model)}")
    out.append(f"- **created:** {m.created or '-'}")
    out.append(f"- **updated:** {m.updated or '-'}")
    out.append(f"- **messages:** {shown_count(conv)}")
    for key, value in (("project", m.project), ("branch", m.branch), ("continues", m.continues)):
        if value:
            out.append(f"- **{key}:** {_code_span(value)}")
    resume = resume_text(conv)
    if resume:
        out.append(f"- **resume:** {_code_span(resume)}")
    out.append("")
    marks = {}
    for i, msg in shown(conv.messages, include_hidden, min_importance, at):
        marks[i] = len(out)
        label = msg.role.capitalize()
        if msg.role == "tool" and msg.tool_name:
            label += f" `{msg.tool_name}`"
        if msg.role == "tool" and msg.tool_status and msg.tool_status != "success":
            label += f" [{msg.tool_status}]"
        if msg.role == "tool" and msg.exit_code is not None:
            label += f" · exit {msg.exit_code}"
        if msg.role == "tool" and msg.duration is not None:
            label += f" · {duration_text(msg.duration)}"
        if msg.hidden:
            label += " (hidden in the app)"
        out.append(f"## {label} · {msg.timestamp or ''}".rstrip(" ·"))
        out.append("")
        if msg.reasoning and reasoning:
            out += ["<details><summary>Reasoning</summary>", "", _in_fold(msg.reasoning), "", "</details>", ""]
        if msg.content:
            if msg.role == "tool":
                f = _fence(msg.content)
                out += [f, msg.content.rstrip("\n"), f, ""]
            else:
                out += [_contained(msg.content), ""]
        if msg.attachments:
            out += [
                f"*{_md_inline(attachment_line(a))}*" if a.get("type") != "text" else _contained(a["text"])
                for a in msg.attachments
            ] + [""]
        for tc in msg.tool_calls:
            body = args_json(tc.arguments, 2, quote=True)
            f = _fence(body)
            label = tool_label(tc.name, tc.arguments)
            out += [f"**Tool call** {_code_span(label)}", "", f + "json", body, f, ""]
        for a in msg.actions:
            if isinstance(a, dict):
                out += _md_action(a)
    _mark_lines(out, marks, starts)
    return "\n".join(out).rstrip("\n") + "\n"


def _md_action(a: dict) -> list[str]:
    """A mermaid tool run (an ``actions`` entry) as a line and its output, fenced."""
    status, output = action_outcome(a)
    line = f"**Tool run** {_md_inline(str(a.get('action_type', '?')))} `{_md_inline(str(a.get('target', '')))}`"
    out = [line + (f": {status}" if status else ""), ""]
    if isinstance(output, str) and output:
        f = _fence(output)
        out += [f, output.rstrip("\n"), f, ""]
    return out


def _md_inline(s: str) -> str:
    return " ".join(s.split())


def _code_span(s: str) -> str:
    """``s`` as one Markdown code span, whatever backticks it holds (CommonMark §6.1)."""
    s = _md_inline(s)
    longest = max((len(m) for m in re.findall(r"`+", s)), default=0)
    tick = "`" * (longest + 1)
    pad = " " if s.startswith("`") or s.endswith("`") else ""
    return f"{tick}{pad}{s}{pad}{tick}"
