"""Keys written twice in one JSON object (a hand edit, a merge tool): orjson, like most parsers,
keeps the last value, but serde's derived Deserialize refuses a struct with a repeated field
("duplicate field"), so mermaid cannot open such a file; SAM's decoder is Apple's (unknown).

A second parse with the standard library, whose hook sees each object's members before they
become a dict: only ``check`` and ``recover`` pay for it, never a listing.  mermaid's schema below
says which objects are structs (a repeated field refused) and which are free JSON values or maps
(``metadata``, tool ``arguments``, ``plan``...: serde_json's map keeps the last, no error); in a
struct only a field serde knows counts (an unknown key is skipped, however often).
"""

from __future__ import annotations

import json

import orjson

_UNPARSED = object()  # (no parse given: dupkeys parses the text itself)


class _Repeated(dict):
    """A parsed object that had repeated keys (``repeated``, in the order they first repeated)."""

    __slots__ = ("repeated",)


def _no_repeats(data: bytes, parsed=_UNPARSED, lines: bool = False) -> bool:
    """True only if no object in the text repeats a key (False: it may, or it is not JSON).
    ``parsed``: what ``orjson.loads(data)`` gave, if the caller has it (one parse less); with
    ``lines``, ``data`` is JSON texts one per line and ``parsed`` the list of their values.

    First the usual case: the text is exactly what orjson writes of its parse (compact, as mermaid's
    log lines and sidecars, or with a 2-space indent, as its snapshots), so it has as many members
    as orjson kept: none repeated.  Else the colons are counted: the text's are one per key token
    plus those inside its strings; orjson's output of what it parsed has one per member plus those
    inside its strings, which are the text's strings decoded less those of the members it dropped.
    With no ``\\u003`` in the text (an escaped colon: else the slow path), decoding adds no colon,
    so equal counts mean as many members as key tokens: no key repeated."""
    try:
        value = orjson.loads(data) if parsed is _UNPARSED else parsed
        pretty = data[:2] in (b"{\n", b"[\n")
        out = orjson.dumps(value, option=orjson.OPT_INDENT_2 if pretty else None)
    except (orjson.JSONDecodeError, orjson.JSONEncodeError):
        return False
    if lines:
        # out == b"[" + data.rstrip(b"\n").replace(b"\n", b",") + b"]", with one copy of the log, not four
        end = len(data)
        while end and data[end - 1] == 0x0A:
            end -= 1
        if (
            len(out) == end + 2
            and out.startswith(b"[")
            and out.endswith(b"]")
            and out.startswith(memoryview(data.replace(b"\n", b","))[:end], 1)
        ):
            return True
    elif out == data:
        return True
    if b"\\u003" in data:
        return False
    return data.count(b":") == out.count(b":")


def may_repeat(data: bytes, parsed, lines: bool = False) -> bool:
    """False only if no object of ``data`` repeats a key, ``parsed`` being what orjson gave for it:
    one JSON text, or with ``lines`` several, one per line (an event log, ``parsed`` the list of
    their values).
    For several texts the counts add up line by line, and no line's output has more colons than
    its text, so equal sums still mean no line repeats a key."""
    return not _no_repeats(data, parsed, lines)


def _parse(data: bytes, parsed=_UNPARSED):
    """(the parsed text with ``_Repeated`` objects, whether any); (None, False) if it is not JSON
    or holds no repeated key."""
    if _no_repeats(data, parsed):
        return None, False
    seen_any = []

    def hook(pairs):
        d = dict(pairs)
        if len(d) == len(pairs):
            return d
        r, seen = _Repeated(d), set()
        r.repeated = []
        for k, _ in pairs:
            if k in seen and k not in r.repeated:
                r.repeated.append(k)
            seen.add(k)
        seen_any.append(True)
        return r

    try:
        return json.loads(data, object_pairs_hook=hook), bool(seen_any)
    except (ValueError, RecursionError):
        return None, False


def anywhere(data: bytes, parsed=_UNPARSED) -> list[tuple[str, str]]:
    """``(where, key)`` of every repeated key in the text, at any depth (SAM: whether its decoder
    refuses one is not known, so each is worth a warning).  ``parsed``: ``orjson.loads(data)``,
    unchanged, if the caller has it."""
    doc, any_ = _parse(data, parsed)
    out: list = []
    if not any_:
        return out
    stack = [(doc, "top level")]
    while stack:
        v, where = stack.pop()
        if isinstance(v, dict):
            if type(v) is _Repeated:
                out += [(where, k) for k in v.repeated]
            stack += [
                (c, f"{where}.{k}" if where != "top level" else k) for k, c in v.items() if isinstance(c, (dict, list))
            ]
        else:
            stack += [(c, f"{where}[{i}]") for i, c in enumerate(v) if isinstance(c, (dict, list))]
    return sorted(out)


# mermaid's structs (docs/formats/mermaid.md §3, §4): name -> (its fields, or None: a struct whose fields are not
# listed in the spec, any repeated key counts; {field: (how, struct)}), how: "one", "list" (of
# structs), "map" (string -> struct), "enum" (externally tagged: {"Variant": struct}).
_USAGE = {
    "prompt_tokens",
    "completion_tokens",
    "cached_input_tokens",
    "cache_creation_input_tokens",
    "reasoning_output_tokens",
}
_MESSAGE = {
    "role",
    "content",
    "timestamp",
    "kind",
    "metadata",
    "actions",
    "thinking",
    "images",
    "image_numbers",
    "tool_calls",
    "tool_call_id",
    "tool_name",
    "provider_continuation",
}
_SCALARS = {
    "title",
    "model_name",
    "safety_mode",
    "plan",
    "advertised_context",
    "last_token_usage",
    "cumulative_token_usage",
    "context_usage",
    "git_branch",
    "git_sha",
    "cli_version",
    "forked_from",
    "parent_session",
}
_USAGE_KIDS = {"last_token_usage": ("one", "usage"), "cumulative_token_usage": ("one", "usage")}
SCHEMA = {
    "snapshot": (
        {
            "id",
            "messages",
            "project_path",
            "created_at",
            "updated_at",
            "compactions",
            "input_history",
            "tasks",
            "usage_by_model",
            "checkpoint_seq",
            "total_tokens",
        }
        | _SCALARS,
        {
            "messages": ("list", "message"),
            "compactions": ("list", "compaction"),
            "tasks": ("one", "checklist"),
            "usage_by_model": ("map", "usage"),
            **_USAGE_KIDS,
        },
    ),
    "message": (_MESSAGE, {"actions": ("list", "action"), "tool_calls": ("list", "tool_call")}),
    "action": (
        {"action_type", "target", "result", "details", "duration_seconds", "metadata"},
        {"result": ("enum", "variant"), "details": ("enum", "variant"), "metadata": ("one", "variant")},
    ),
    "variant": (None, {}),
    "tool_call": ({"id", "function"}, {"function": ("one", "function")}),
    "function": ({"name", "arguments"}, {}),
    "compaction": (
        {
            "id",
            "trigger",
            "created_at",
            "before_tokens",
            "after_tokens",
            "archived_message_count",
            "preserved_message_count",
            "preserved_turn_count",
            "summary_tokens",
            "duration_secs",
            "review_status",
            "review_error",
            "focus",
            "archive_path",
        },
        {},
    ),
    "usage": (_USAGE, {}),
    "checklist": ({"tasks", "next_id"}, {"tasks": ("list", "task")}),
    "task": (
        {
            "id",
            "subject",
            "active_form",
            "description",
            "status",
            "origin",
            "started_at",
            "completed_at",
            "tokens_at_start",
            "tokens_spent",
            "evidence",
        },
        {"evidence": ("list", "evidence")},
    ),
    "evidence": ({"tool", "target", "status"}, {}),
    "line": ({"v", "seq", "ts", "event"}, {"event": ("one", "event")}),
    # one SessionEvent: internally tagged by ``type``; the union of every variant's fields (a
    # field name means the same in each variant that has it)
    "event": (
        {
            "type",
            "session_id",
            "project_path",
            "model_id",
            "created_at",
            "message",
            "action",
            "data",
            "at",
            "record",
            "replacement",
            "messages",
            "text",
            "store",
        }
        | _SCALARS,
        {
            "message": ("one", "message"),
            "action": ("one", "action"),
            "record": ("one", "compaction"),
            "replacement": ("list", "message"),
            "messages": ("list", "message"),
            "store": ("one", "checklist"),
            **_USAGE_KIDS,
        },
    ),
    "meta": ({"id", "title", "updated_at", "git_branch", "message_count", "forked_from"}, {}),
}


def in_mermaid(data: bytes, kind: str, parsed=_UNPARSED) -> list[tuple[str, str]]:
    """``(where, key)`` of each field repeated in one of mermaid's structs in the text: ``kind`` is
    "snapshot", "line" (an event-log line) or "meta" ("any": a non-empty list if any object at all
    repeats a key).  [] when there is none (or no JSON).  ``parsed``: ``orjson.loads(data)``,
    unchanged, if the caller has it (the text is then parsed again only where a key may repeat)."""
    doc, any_ = _parse(data, parsed)
    out: list = []
    if any_ and kind == "any":  # (a cheap first look: whether any object repeats a key at all)
        out.append(("", ""))
    elif any_:
        _walk(doc, kind, "top level" if kind != "line" else "the line", out)
    return out


def _walk(v, name: str, where: str, out: list) -> None:
    if not isinstance(v, dict):
        return
    fields, kids = SCHEMA[name]
    if type(v) is _Repeated:
        out += [(where, k) for k in v.repeated if fields is None or k in fields]
    for k, (how, sub) in kids.items():
        c = v.get(k)
        at = f"{where}.{k}" if where not in ("top level", "the line") else k
        if how == "one":
            _walk(c, sub, at, out)
        elif how == "list" and type(c) is list:
            for i, x in enumerate(c):
                _walk(x, sub, f"{at}[{i}]", out)
        elif how in ("map", "enum") and isinstance(c, dict):
            for kk, x in c.items():
                _walk(x, sub, f"{at}.{kk}", out)


def say(found: list) -> str:
    """One phrase for the first of ``found`` (and how many more)."""
    where, key = found[0]
    more = f" (and {len(found) - 1} more)" if len(found) > 1 else ""
    return f"key {key[:40]!r} appears twice in {where[:80]}{more}"
