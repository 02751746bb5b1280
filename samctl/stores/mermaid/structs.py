"""mermaid's structs, for the duplicate-key rule (``dupkeys``): serde's derived Deserialize refuses a
struct with a field written twice, so mermaid cannot open such a file, while a free JSON value or map
(``metadata``, tool ``arguments``, ``plan``...) keeps the last, no error; in a struct only a field serde
knows counts (an unknown key is skipped, however often).  The fields of a message and the state's
scalars are the reader's own lists (``envelope.MESSAGE_FIELDS``, ``eventlog.SCALARS``).
"""

from __future__ import annotations

from samctl.stores import dupkeys
from samctl.stores.mermaid.envelope import MESSAGE_FIELDS
from samctl.stores.mermaid.eventlog import SCALARS

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
_MESSAGE = set(MESSAGE_FIELDS)
_SCALARS = set(SCALARS)
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


def repeated_fields(data: bytes, kind: str, parsed=dupkeys.UNPARSED) -> list[tuple[str, str]]:
    """``(where, key)`` of each field repeated in one of mermaid's structs in the text: ``kind`` is
    "snapshot", "line" (an event-log line) or "meta" ("any": a non-empty list if any object at all
    repeats a key).  [] when there is none (or no JSON).  ``parsed``: ``orjson.loads(data)``,
    unchanged, if the caller has it (the text is then parsed again only where a key may repeat)."""
    doc, any_ = dupkeys.parse_marked(data, parsed)
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
    if type(v) is dupkeys.Repeated:
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
