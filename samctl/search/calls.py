"""A tool call as one line of text: ``Bash(zsh -i -c 'zmodload zsh/zprof; …')``.

What the index keeps and a hit shows of a tool call (Claude Code ``tool_use`` input, Codex
``function_call`` arguments, llm and mermaid tool calls): the tool's name, then its arguments' values
in parentheses, the one people recognise first (the command, the file, the pattern) first.  Invariants:
pure; never raises on any arguments (a JSON string is read as JSON when it is one, else as the text
it is); bounded (``MAX_CHARS``), so one pasted file does not make a row of megabytes.
"""

from __future__ import annotations

import orjson

MAX_CHARS = 4096  # characters of a call's text at most (then …)
FIRST = ("command", "cmd", "file_path", "path", "pattern", "url", "query", "notebook_path", "description")


def _leaves(v, out: list, depth: int = 0) -> None:
    """The scalar values of V, depth first (a list of strings, such as ``["bash", "-lc", "ls"]``, joined by spaces)."""
    if depth > 8 or sum(map(len, out)) > MAX_CHARS:
        return
    if isinstance(v, str):
        if v.strip():
            out.append(v)
    elif isinstance(v, bool) or v is None:
        return
    elif isinstance(v, (int, float)):
        out.append(repr(v))
    elif isinstance(v, list):
        if v and all(isinstance(x, str) for x in v):
            out.append(" ".join(v))
        else:
            for x in v:
                _leaves(x, out, depth + 1)
    elif isinstance(v, dict):
        keys = [k for k in FIRST if k in v] + [k for k in v if k not in FIRST]
        for k in keys:
            _leaves(v[k], out, depth + 1)


def arguments_of(arguments) -> object:
    """ARGUMENTS as a JSON value: a string holding a JSON object or list is decoded, anything else kept."""
    if isinstance(arguments, str):
        s = arguments.strip()
        if s[:1] in ("{", "[") and len(s) <= 1 << 20:
            try:
                return orjson.loads(s)  # (its depth limit refuses a hostile nesting; json would recurse past Python's)
            except (ValueError, RecursionError):
                return arguments
    return arguments


def call_text(name, arguments) -> str:
    """``NAME(value, value, …)``: the call on one line of text, its values as written, cut at MAX_CHARS."""
    name = name if isinstance(name, str) and name.strip() else "?"
    values: list = []
    _leaves(arguments_of(arguments), values)
    text = f"{name}({', '.join(values)})"
    return text if len(text) <= MAX_CHARS else text[: MAX_CHARS - 1] + "…"


def is_call_of(text: str, name: str) -> bool:
    """True when TEXT (a ``call_text``) is a call of the tool NAME, compared case-insensitively."""
    head = text.partition("(")[0]
    return head.casefold() == name.casefold()
