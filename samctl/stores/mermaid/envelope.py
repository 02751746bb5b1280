"""What mermaid's reader accepts, line by line (mermaid.md §2.7, §4): RFC 3339 times as chrono reads them,
an envelope and each event's fields as serde's typed parse checks them, and serde_json's nesting limit.

``parse_line`` gives one log line's envelope or the reason mermaid stops there; ``eventlog`` reads whole
logs with it, and ``decode`` checks snapshots by the same message rules.

Design notes: docs/stores.md, "stores/mermaid/envelope.py".
"""

from __future__ import annotations

import re
from itertools import accumulate

import orjson

from samctl.timeparse import days_from_civil

# serde_json's default recursion limit is 128; it fails when the 128th nested
# container opens, so 127 levels is the deepest line mermaid can parse.
MAX_DEPTH = 127

_U32 = 0xFFFFFFFF
_U64 = 0xFFFFFFFFFFFFFFFF
_NONE = type(None)
_ABSENT = object()

# ChatMessage struct order (mermaid.md §3.1).
MESSAGE_FIELDS = (
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
)
MESSAGE_FIELD_SET = frozenset(MESSAGE_FIELDS)
_FIELD_COUNT = len(MESSAGE_FIELDS)


# --- timestamps -----------------------------------------------------------------

# RFC 3339 as chrono's DateTime deserializer reads it: 'T', 't' or ' ' between
# date and time, any number of fraction digits, 'Z'/'z' or +-HH:MM, leap second 60.
# Fixed widths up to the seconds, so the day check can slice; no capture groups
# on the hot path (it runs twice per log line).
_TS = (
    r"[0-9]{4}-(?:0[1-9]|1[0-2])-(?:0[1-9]|[12][0-9]|3[01])[Tt ]"
    r"(?:[01][0-9]|2[0-3]):[0-5][0-9]:(?:[0-5][0-9]|60)(?:\.[0-9]+)?"
    r"(?:[Zz]|[+-](?:[01][0-9]|2[0-3]):[0-5][0-9])"
)
_TS_RE = re.compile(_TS + r"\Z")
_TS_LINES_RE = re.compile(f"(?:{_TS}\n)*{_TS}")  # (no newline can match inside _TS)
_MONTH_DAYS = (0, 31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)


def _day_ok(s: str) -> bool:
    """The day of a string that matched _TS_RE exists in its month."""
    if s[8:10] <= "28":
        return True
    y, mo, day = int(s[0:4]), int(s[5:7]), int(s[8:10])
    if mo == 2 and day == 29:
        return y % 4 == 0 and (y % 100 != 0 or y % 400 == 0)
    return day <= _MONTH_DAYS[mo]


def is_timestamp(s) -> bool:
    """True if ``s`` is a string mermaid reads as a timestamp (mermaid.md §2.7)."""
    return type(s) is str and _TS_RE.match(s) is not None and (s[8:10] <= "28" or _day_ok(s))


def all_timestamps(times: list[str]) -> bool:
    """``all(map(is_timestamp, times))`` for strings, in one match of them all joined by newlines."""
    joined = "\n".join(times)
    return (
        _TS_LINES_RE.fullmatch(joined) is not None
        and joined.count("\n") == len(times) - 1  # (a string holding a newline would pass as two)
        and all(_day_ok(t) for t in times if t[8:10] > "28")
    )


def parse_rfc3339(s) -> tuple[int, int, int] | None:
    """``(unix_seconds, nanoseconds, utc_offset_seconds)`` of a timestamp, or None.

    Handles 0-9+ fraction digits (extra digits are dropped, as chrono does);
    a leap second 60 is second 59 plus 1e9 ns, as chrono stores it.
    """
    if not is_timestamp(s):
        return None
    y, mo, d, hh, mm, ss = int(s[0:4]), int(s[5:7]), int(s[8:10]), int(s[11:13]), int(s[14:16]), int(s[17:19])
    rest = s[19:]
    frac = ""
    if rest[0] == ".":
        n = len(rest) - len(rest[1:].lstrip("0123456789"))
        frac, rest = rest[1:n], rest[n:]
    nanos = int(frac[:9].ljust(9, "0"))
    if ss == 60:
        ss, nanos = 59, nanos + 1_000_000_000
    off = 0
    if rest[0] in "+-":
        off = (int(rest[1:3]) * 3600 + int(rest[4:6]) * 60) * (1 if rest[0] == "+" else -1)
    secs = days_from_civil(y, mo, d) * 86400 + hh * 3600 + mm * 60 + ss - off
    return secs, nanos, off


# --- validation -------------------------------------------------------------------


def _opt(e: dict, key: str, types: tuple, where: str):
    v = e.get(key, _ABSENT)
    if v is not _ABSENT and type(v) not in types:
        return f"{where}.{key} is {json_type(v)}"
    return None


def json_type(v) -> str:
    if v is _ABSENT:
        return "missing"
    return {
        dict: "an object",
        list: "an array",
        str: "a string",
        bool: "a boolean",
        int: "an integer",
        float: "a float",
        _NONE: "null",
    }.get(type(v), type(v).__name__)


_MESSAGE_OPTIONAL = (
    ("kind", (str,)),  # a unit enum: null is a type error for serde
    ("actions", (list,)),  # Vec with #[serde(default)]: absent is fine, null is not
    ("thinking", (str, _NONE)),
    ("images", (list, _NONE)),
    ("image_numbers", (list, _NONE)),
    ("tool_calls", (list, _NONE)),
    ("tool_call_id", (str, _NONE)),
    ("tool_name", (str, _NONE)),
    ("provider_continuation", (dict, _NONE)),
)


_S_N, _L_N, _D_N = (str, _NONE), (list, _NONE), (dict, _NONE)


def complete_message(m) -> bool:
    """True if ``m`` is a message object with every field present and of its type, as mermaid writes
    them: ``check_message`` passes it (the same rules with plain subscripts, half the cost).  Thirteen
    keys of which every field is one (a subscript of a missing one fails) are the fields exactly."""
    try:
        return (
            type(m) is dict
            and len(m) == _FIELD_COUNT
            and "metadata" in m  # (the one field of any type: not subscripted below)
            and type(m["role"]) is str
            and type(m["content"]) is str
            and type(m["kind"]) is str
            and type(m["actions"]) is list
            and type(m["thinking"]) in _S_N
            and type(m["images"]) in _L_N
            and type(m["image_numbers"]) in _L_N
            and type(m["tool_calls"]) in _L_N
            and type(m["tool_call_id"]) in _S_N
            and type(m["tool_name"]) in _S_N
            and type(m["provider_continuation"]) in _D_N
            and is_timestamp(m["timestamp"])
        )
    except KeyError:
        return False


def check_message(m, where: str) -> str | None:
    if type(m) is not dict:
        return f"{where} is {json_type(m)}, not an object"
    if complete_message(m):  # the line type every log is mostly made of
        return None
    return _message_problem(m, where)


def _message_problem(m: dict, where: str) -> str | None:
    """The general rule for a ChatMessage object (any subset of fields)."""
    get = m.get
    if type(get("role")) is not str:
        return f"{where}.role is {json_type(get('role', _ABSENT))}"
    if type(get("content")) is not str:
        return f"{where}.content is {json_type(get('content', _ABSENT))}"
    if not is_timestamp(get("timestamp")):
        return f"{where}.timestamp is not an RFC 3339 time"
    for key, types in _MESSAGE_OPTIONAL:
        v = get(key, _ABSENT)
        if v is not _ABSENT and type(v) not in types:
            return f"{where}.{key} is {json_type(v)}"
    return None


def _check_messages(ms, where: str) -> str | None:
    if type(ms) is not list:
        return f"{where} is {json_type(ms)}, not an array"
    for i, m in enumerate(ms):
        why = check_message(m, f"{where}[{i}]")
        if why:
            return why
    return None


def _need(e: dict, key: str, t: type, where: str) -> str | None:
    v = e.get(key, _ABSENT)
    if type(v) is not t:
        return f"{where}.{key} is {json_type(v)}"
    return None


def _need_ts(e: dict, key: str, where: str) -> str | None:
    if not is_timestamp(e.get(key)):
        return f"{where}.{key} is not an RFC 3339 time"
    return None


def _started(e):
    return (
        _need(e, "session_id", str, "started")
        or _need(e, "project_path", str, "started")
        or _need(e, "model_id", str, "started")
        or _need_ts(e, "created_at", "started")
        or _opt(e, "forked_from", (str, _NONE), "started")
        or _opt(e, "parent_session", (str, _NONE), "started")
    )


_STATE_FIELDS = (
    ("safety_mode", (str, _NONE)),
    ("plan", (dict, _NONE)),
    ("advertised_context", (dict, _NONE)),
    ("last_token_usage", (dict, _NONE)),
    ("cumulative_token_usage", (dict,)),
    ("context_usage", (dict, _NONE)),
    ("git_branch", (str, _NONE)),
    ("git_sha", (str, _NONE)),
    ("cli_version", (str, _NONE)),
    ("forked_from", (str, _NONE)),
    ("parent_session", (str, _NONE)),
)


_STATE_TYPES = dict(_STATE_FIELDS)


def _state(e):
    if type(e.get("title")) is str and type(e.get("model_name")) is str:
        # Only the fields present are looked at (a state line omits its null ones): fewer
        # lookups than walking the table, on a line written at every save point.
        for key, v in e.items():
            types = _STATE_TYPES.get(key)
            if types is not None and type(v) not in types:
                break
        else:
            return None
    return _state_problem(e)  # the reason, in struct order


def _state_problem(e: dict) -> str | None:
    why = _need(e, "title", str, "state") or _need(e, "model_name", str, "state")
    if why:
        return why
    get = e.get
    for key, types in _STATE_FIELDS:  # a table, not 11 calls: every save point writes a state line
        v = get(key, _ABSENT)
        if v is not _ABSENT and type(v) not in types:
            return f"state.{key} is {json_type(v)}"
    return None


_EVENT_CHECKS = {
    "started": _started,
    "message": lambda e: check_message(e.get("message", _ABSENT), "message.message"),
    "inserted_before_last": lambda e: check_message(e.get("message", _ABSENT), "inserted_before_last.message"),
    "action": lambda e: _need(e, "action", dict, "action"),
    "image": lambda e: _need(e, "data", str, "image"),
    "compaction": lambda e: (
        _need_ts(e, "at", "compaction")
        or _need(e, "record", dict, "compaction")
        or _check_messages(e.get("replacement", _ABSENT), "compaction.replacement")
    ),
    "reset": lambda e: _need_ts(e, "at", "reset") or _check_messages(e.get("messages", _ABSENT), "reset.messages"),
    "state": _state,
    "input": lambda e: _need(e, "text", str, "input"),
    "tasks": lambda e: _need(e, "store", dict, "tasks"),
}
EVENT_TYPES = tuple(_EVENT_CHECKS)


_last_good_ts = ""  # one-entry cache: every line of an append batch shares one ts


def check_envelope(obj) -> str | None:
    """Why ``obj`` is not a valid v1 envelope (None if it is)."""
    global _last_good_ts
    if type(obj) is not dict:
        return f"the line is {json_type(obj)}, not an object"
    v = obj.get("v", _ABSENT)
    if type(v) is not int or not 0 <= v <= _U32:
        return f"v is {json_type(v)}, not a u32"
    seq = obj.get("seq", _ABSENT)
    if type(seq) is not int or not 0 <= seq <= _U64:
        return f"seq is {json_type(seq)}, not a u64"
    ts = obj.get("ts")
    if ts != _last_good_ts:
        if not is_timestamp(ts):
            return "ts is not an RFC 3339 time"
        _last_good_ts = ts
    ev = obj.get("event", _ABSENT)
    if type(ev) is not dict:
        return f"event is {json_type(ev)}, not an object"
    t = ev.get("type", _ABSENT)
    if t == "message" and complete_message(ev.get("message")):
        return None  # the line most of a log is: its check, without two calls on the way
    check = _EVENT_CHECKS.get(t) if type(t) is str else None
    if check is None:
        return f"unknown event type {t!r}" if type(t) is str else f"event.type is {json_type(t)}"
    return check(ev)


# Depth checks: a cheap count first; the exact depth only when the count could exceed the limit.
_HUGE = 1 << 16  # above this many open brackets, measure depth on the bytes before parsing
_JSON_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"')
_BRACKETS = bytes.maketrans(b"[{]}", b"\x01\x01\xff\xff")
_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")


def _bytes_depth(line: bytes) -> int:
    """Nesting depth of a JSON line, counted on the bytes (exact for valid JSON)."""
    marks = _JSON_STRING.sub(b"", line).translate(_BRACKETS, _NOT_BRACKETS)
    return max(accumulate(memoryview(marks).cast("b")), default=0)


def deeper_than(obj, limit: int) -> bool:
    """True if the container ``obj`` (level 1) holds a container at a level past ``limit``.
    Walked a level at a time: one comprehension per level, not a push and pop per container."""
    level = [obj]
    for _ in range(limit):
        level = [c for v in level for c in (v.values() if type(v) is dict else v) if type(c) is dict or type(c) is list]
        if not level:
            return False
    return True


BAD_UTF8 = "not valid UTF-8"
_TOO_DEEP = f"nested deeper than serde_json's limit ({MAX_DEPTH} levels)"


def parse_line(line: bytes):
    """(envelope, None) for a valid line, else (None, why); why is BAD_UTF8 for encoding errors."""
    opens = line.count(b"[") + line.count(b"{")
    try:
        if opens > _HUGE and _bytes_depth(line) > MAX_DEPTH:
            line.decode("utf-8")  # the line reader's UTF-8 error comes first
            return None, _TOO_DEEP  # refused before building a million nested objects
        obj = orjson.loads(line)
    except (ValueError, RecursionError) as exc:  # JSONDecodeError and UnicodeDecodeError are ValueErrors
        try:
            line.decode("utf-8")
        except UnicodeDecodeError:
            return None, BAD_UTF8  # mermaid's line reader fails on this before any JSON parse
        return None, f"not JSON ({str(exc).split(':')[0][:80]})"
    if opens > MAX_DEPTH and deeper_than(obj, MAX_DEPTH):
        return None, _TOO_DEEP
    why = check_envelope(obj)
    return (obj, None) if why is None else (None, why)
