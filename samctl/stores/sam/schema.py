"""SAM's conversation.json decoder rules as a validator (sam.md §3, §4, §4.5.8).

``validate_conversation`` never raises and reports every problem: errors are exactly SAM's rejection rules,
warnings the rest.  Pure; the input is never modified.

Design notes: docs/stores.md, "stores/sam/schema.py".
"""

from __future__ import annotations

import base64
import binascii
import functools
import json
import math
import re
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone

from samctl.stores.sam.dbvalues import UUID_RE, is_uuid

__all__ = [
    "ERROR",
    "WARNING",
    "UUID_RE",
    "CANONICAL_ID_RE",
    "MESSAGE_TYPES",
    "TOOL_STATUSES",
    "PART_TYPES",
    "IMAGE_DETAILS",
    "ERROR_CODES",
    "WARNING_CODES",
    "Problem",
    "is_uuid",
    "parse_date",
    "format_date",
    "validate_conversation",
    "errors_of",
    "message_errors",
    "would_load",
    "flag_problem",
]

ERROR = "error"
WARNING = "warning"

# What SAM names conversation directories: UUID.uuidString, uppercase only.
CANONICAL_ID_RE = re.compile(r"\A[0-9A-F]{8}-[0-9A-F]{4}-[0-9A-F]{4}-[0-9A-F]{4}-[0-9A-F]{12}\Z")

MESSAGE_TYPES = frozenset({"user", "assistant", "toolExecution", "subagentExecution", "systemStatus", "thinking"})
TOOL_STATUSES = frozenset({"queued", "running", "success", "error", "userInputRequired"})
PART_TYPES = frozenset({"text", "image_url", "video_url", "audio_url"})
IMAGE_DETAILS = frozenset({"auto", "low", "high"})

ERROR_CODES = {
    "not-object": "an object was expected (the top level, a message, a nested record)",
    "missing-key": "a required key is absent",
    "null-key": "a required key is null",
    "wrong-type": "a value of the wrong JSON kind (string for number, fraction in an Int field, ...)",
    "integral-float": "an Int field holds a float such as 8192.0 (rejected by current Foundation)",
    "out-of-range": "a number too big for Swift's Int (64-bit) or Double",
    "non-finite": "NaN or Infinity (anywhere: JSON text cannot hold them)",
    "bad-uuid": "a UUID field that does not parse",
    "bad-date": "a date that is not ISO-8601 internet date-time",
    "fractional-date": "a date with fractional seconds (rejected by macOS <= 15)",
    "bad-enum": "an unknown enum value (type, toolStatus, content-part type, image detail)",
    "bad-base64": "workingDirectoryBookmark is not standard padded base64",
    "bad-string": "a string holding a lone UTF-16 surrogate (not valid Unicode)",
    "too-deep": "arrays/objects nested deeper than Foundation's JSON limit (512 levels)",
}
WARNING_CODES = {
    "orphan-tool-result": "a toolCallId that no toolCalls entry in the conversation has",
    "duplicate-message-id": "two messages share an id",
    "streaming": "isStreaming is true (an interrupted stream)",
    "tool-running": "a tool status still running/queued (the tool never finished)",
    "modified-before-created": "lastModified is earlier than timestamp",
    "type-flags": "type/isFromUser/isToolMessage/reasoningContent outside SAM's derivation rules (§4.3)",
    "renamed-key": "enabledMiniPromptIds, renamed to enabledCustomInstructionIds; SAM drops it on load",
}


@dataclass(frozen=True, slots=True)
class Problem:
    """One problem in a document: severity, stable kebab-case code, JSON path, one line of why."""

    severity: str  # ERROR or WARNING
    code: str
    where: str
    reason: str
    path: tuple = field(default=(), compare=False, repr=False)

    def line(self) -> str:
        return f"{self.severity}: {self.code}: {self.where}: {self.reason}"


# --- dates ---------------------------------------------------------------------

DATE_RE = re.compile(
    r"\A(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(\.\d+)?(Z|([+-])(\d{2}):(\d{2}))\Z",
    re.ASCII,
)
_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


def parse_date_parts(s) -> tuple[int, str] | None:
    """(whole UTC epoch seconds, fraction digits or "") for an ISO-8601 date, else None.

    The whole seconds are exact integers, so truncating a fraction never rounds
    up into the next second the way float arithmetic could.
    """
    if not isinstance(s, str):
        return None
    return _date_parts(s) if len(s) <= 64 else _date_parts.__wrapped__(s)  # (no long junk kept in the cache)


@functools.lru_cache(maxsize=1 << 16)  # a repair reads each message's dates many times over
def _date_parts(s: str) -> tuple[int, str] | None:
    m = DATE_RE.match(s)
    if m is None:
        return None
    try:
        dt = datetime(int(m[1]), int(m[2]), int(m[3]), int(m[4]), int(m[5]), int(m[6]), tzinfo=timezone.utc)
    except ValueError:  # month 13, Feb 30, hour 24, second 60, year 0 ...
        return None
    whole = (dt - _EPOCH) // timedelta(seconds=1)
    if m[9]:
        hh, mm = int(m[10]), int(m[11])
        if hh > 23 or mm > 59:
            return None
        offset = hh * 3600 + mm * 60
        whole -= offset if m[9] == "+" else -offset
    return whole, (m[7] or "")[1:]


def parse_date(s, *, allow_fraction: bool = True) -> float | None:
    """Epoch seconds of a SAM JSON date (``2026-08-10T14:02:11Z``), or None.

    Accepts ``Z`` or a ``+HH:MM``/``-HH:MM`` offset (Foundation probably does,
    sam.md §3).  Fractional seconds are accepted only with ``allow_fraction`` (the
    lenient reader); SAM on macOS <= 15 rejects them.  Non-strings give None.
    """
    parts = parse_date_parts(s)
    if parts is None:
        return None
    whole, frac = parts
    if frac and not allow_fraction:
        return None
    return whole + (float("0." + frac) if frac else 0.0)


def format_date(epoch) -> str:
    """``epoch`` as SAM writes dates: exactly ``%Y-%m-%dT%H:%M:%SZ``, UTC, whole seconds.

    Sub-second precision is truncated (floored), as Foundation's encoder does.
    Raises ValueError for NaN/Infinity or an instant outside years 1-9999.
    """
    try:
        seconds = math.floor(epoch)
        dt = _EPOCH + timedelta(seconds=seconds)
    except (ValueError, OverflowError, TypeError) as exc:
        raise ValueError(f"cannot format {epoch!r} as a SAM date: {exc}") from None
    return f"{dt.year:04d}-{dt.month:02d}-{dt.day:02d}T{dt.hour:02d}:{dt.minute:02d}:{dt.second:02d}Z"


# --- the schema as data ----------------------------------------------------------
# A kind is one of the leaf names below, a OneOf (a string from a set), an
# Array, a Map (string keys), an Object (key -> (kind, required)), or PART
# (the tagged MessageContentPart union).

STRING, BOOL, INT, DOUBLE, UUID, DATE, DATA = "string", "bool", "int", "double", "uuid", "date", "data"


class OneOf(frozenset):
    """A string that must be one of these values."""


@dataclass(frozen=True, eq=False)
class Array:
    item: object


@dataclass(frozen=True, eq=False)
class Map:
    value: object


@dataclass(frozen=True, eq=False)
class Object:
    name: str
    fields: dict  # key -> (kind, required)


PART = "content-part"

MESSAGE_TYPE_KIND = OneOf(MESSAGE_TYPES)
TOOL_STATUS_KIND = OneOf(TOOL_STATUSES)
_PART_TYPE_KIND = OneOf(PART_TYPES)

TELEMETRY_KIND = Object(
    "ConversationTelemetry",
    {
        "archiveRecallCount": (INT, True),
        "memoryRetrievalCount": (INT, True),
        "compressionEventCount": (INT, True),
        "contextOverflowCount": (INT, True),
        "lastUpdated": (DATE, True),
    },
)
SETTINGS_KIND = Object(
    "ConversationSettings",
    {
        "selectedModel": (STRING, True),
        "temperature": (DOUBLE, True),
        "topP": (DOUBLE, True),
        "maxTokens": (INT, False),
        "contextWindowSize": (INT, True),
        "selectedSystemPromptId": (UUID, False),
        "workspacePromptIds": (Array(UUID), False),
        "selectedPersonalityId": (UUID, False),
        "enableReasoning": (BOOL, True),
        "enableTools": (BOOL, True),
        "thinkingEffort": (STRING, False),
        "scrollLockEnabled": (BOOL, False),
        "useSharedData": (BOOL, False),
        "sharedTopicId": (UUID, False),
        "sharedTopicName": (STRING, False),
        "draftMessage": (STRING, False),
        "showingMemoryPanel": (BOOL, False),
        "showingWorkingDirectoryPanel": (BOOL, False),
        "showAdvancedParameters": (BOOL, False),
        "showingPerformanceMetrics": (BOOL, False),
        "telemetry": (TELEMETRY_KIND, False),
    },
)
IMAGE_URL_KIND = Object("ImageURL", {"url": (STRING, True), "detail": (OneOf(IMAGE_DETAILS), False)})
PART_KINDS = {
    "text": Object("text part", {"type": (_PART_TYPE_KIND, True), "text": (STRING, True)}),
    "image_url": Object("image part", {"type": (_PART_TYPE_KIND, True), "image_url": (IMAGE_URL_KIND, True)}),
    "video_url": Object("video part", {"type": (_PART_TYPE_KIND, True), "video_url": (STRING, True)}),
    "audio_url": Object("audio part", {"type": (_PART_TYPE_KIND, True), "audio_url": (STRING, True)}),
}
UNKNOWN_PART_KIND = Object("MessageContentPart", {"type": (_PART_TYPE_KIND, True)})
TOOL_CALL_KIND = Object(
    "SimpleToolCall",
    {
        "id": (STRING, True),
        "type": (STRING, True),
        "function": (Object("function", {"name": (STRING, True), "arguments": (STRING, True)}), True),
    },
)
TOOL_DISPLAY_KIND = Object(
    "ToolDisplayData",
    {
        "action": (STRING, True),
        "actionDisplayName": (STRING, True),
        "status": (TOOL_STATUS_KIND, True),
        "summary": (STRING, False),
        "details": (Array(STRING), False),
        "icon": (STRING, False),
        "metadata": (Map(STRING), False),
    },
)
MESSAGE_METRICS_KIND = Object(
    "MessagePerformanceMetrics",
    {
        "tokenCount": (INT, True),
        "timeToFirstToken": (DOUBLE, True),
        "tokensPerSecond": (DOUBLE, True),
        "processingTime": (DOUBLE, True),
    },
)
MESSAGE_KIND = Object(
    "EnhancedMessage",
    {
        "id": (UUID, True),
        "type": (MESSAGE_TYPE_KIND, True),
        "content": (STRING, True),
        "contentParts": (Array(PART), False),
        "timestamp": (DATE, True),
        "isFromUser": (BOOL, True),
        "toolName": (STRING, False),
        "toolStatus": (TOOL_STATUS_KIND, False),
        "toolDisplayData": (TOOL_DISPLAY_KIND, False),
        "toolDetails": (Array(STRING), False),
        "toolDuration": (DOUBLE, False),
        "toolIcon": (STRING, False),
        "toolCategory": (STRING, False),
        "parentToolName": (STRING, False),
        "toolMetadata": (Map(STRING), False),
        "toolCalls": (Array(TOOL_CALL_KIND), False),
        "toolCallId": (STRING, False),
        "performanceMetrics": (MESSAGE_METRICS_KIND, False),
        "processingTime": (DOUBLE, False),
        "reasoningContent": (STRING, False),
        "showReasoning": (BOOL, True),
        "isStreaming": (BOOL, True),
        "githubCopilotResponseId": (STRING, False),
        "isPinned": (BOOL, False),
        "importance": (DOUBLE, False),
        "lastModified": (DATE, False),
        "isSystemGenerated": (BOOL, False),
        "isToolMessage": (BOOL, True),
    },
)
API_METRICS_KIND = Object(
    "APIPerformanceMetrics",
    {
        "id": (UUID, True),
        "timestamp": (DATE, True),
        "model": (STRING, True),
        "provider": (STRING, True),
        "requestTokens": (INT, True),
        "responseTokens": (INT, True),
        "timeToFirstToken": (DOUBLE, True),
        "totalLatency": (DOUBLE, True),
        "success": (BOOL, True),
        "errorMessage": (STRING, False),
    },
)
CONVERSATION_KIND = Object(
    "ConversationData",
    {
        "id": (UUID, True),
        "title": (STRING, True),
        "created": (DATE, True),
        "updated": (DATE, True),
        "messages": (Array(MESSAGE_KIND), True),
        "settings": (SETTINGS_KIND, False),
        "sessionId": (STRING, False),
        "lastGitHubCopilotResponseId": (STRING, False),
        "isPinned": (BOOL, False),
        "workingDirectory": (STRING, False),
        "workingDirectoryBookmark": (DATA, False),
        "enabledCustomInstructionIds": (Array(UUID), False),
        "folderId": (STRING, False),
        "isFromAPI": (BOOL, False),
        "performanceMetrics": (Array(API_METRICS_KIND), False),
    },
)


def resolve_kind(kind, value):
    """The concrete kind for ``value``: a content part's object kind depends on its ``type``."""
    if kind is PART:
        t = value.get("type") if isinstance(value, dict) else None
        return PART_KINDS.get(t, UNKNOWN_PART_KIND) if isinstance(t, str) else UNKNOWN_PART_KIND
    return kind


# --- checking --------------------------------------------------------------------

INT_MIN, INT_MAX = -(1 << 63), (1 << 63) - 1


def int_valued_float(v) -> bool:
    """Whether the float ``v`` stands for an Int64 exactly (``8192.0``).  orjson reads an
    integer past 64 bits as a float, so a float at or past the limits (-2**63 included: the
    text may have been -2**63-1) is no longer a known integer."""
    return math.isfinite(v) and v.is_integer() and -(2.0**63) < v < 2.0**63


_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
SURROGATE_RE = re.compile("[\ud800-\udfff]")


def where_of(path: tuple) -> str:
    """``("messages", 3, "toolStatus")`` -> ``messages[3].toolStatus``; ``()`` -> ``$``."""
    if not path:
        return "$"
    out = []
    for c in path:
        if isinstance(c, int) and not isinstance(c, bool):
            out.append(f"[{c}]")
        elif isinstance(c, str) and _IDENT.match(c):
            out.append(("." if out else "") + c)
        else:
            out.append("[" + (json.dumps(c, ensure_ascii=False) if isinstance(c, str) else repr(c)) + "]")
    return "".join(out)


def json_kind(v) -> str:
    """The JSON kind of a decoded value, for messages."""
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "a boolean"
    if isinstance(v, int):
        return "an integer"
    if isinstance(v, float):
        return "a number"
    if isinstance(v, str):
        return "a string"
    if isinstance(v, list):
        return "an array"
    if isinstance(v, dict):
        return "an object"
    return type(v).__name__


def _short(v) -> str:
    """A bounded repr for reasons (values may be megabytes long)."""
    if isinstance(v, str) and len(v) > 40:
        return repr(v[:40]) + "..."
    r = repr(v)
    return r if len(r) <= 60 else r[:60] + "..."


def _err(out: list, code: str, path: tuple, reason: str) -> None:
    out.append(Problem(ERROR, code, where_of(path), reason, path))


def _check_leaf(kind: str, v, path: tuple, out: list) -> None:
    if kind == STRING:
        if not isinstance(v, str):
            _err(out, "wrong-type", path, f"expected a string, got {json_kind(v)}")
    elif kind == BOOL:
        if not isinstance(v, bool):
            _err(out, "wrong-type", path, f"expected a boolean, got {json_kind(v)}")
    elif kind == INT:
        if isinstance(v, int) and not isinstance(v, bool):
            if not INT_MIN <= v <= INT_MAX:
                _err(out, "out-of-range", path, f"{_short(v)} does not fit in a 64-bit Int")
        elif isinstance(v, float) and int_valued_float(v):
            _err(out, "integral-float", path, f"{v!r} in an Int field (write an integer)")
        elif isinstance(v, float) and math.isfinite(v) and v.is_integer():
            _err(out, "out-of-range", path, f"an integer beyond the 64-bit Int range (about {v:.4g})")
        else:
            what = "a fraction" if isinstance(v, float) else json_kind(v)
            _err(out, "wrong-type", path, f"expected an integer, got {what}")
    elif kind == DOUBLE:
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            _err(out, "wrong-type", path, f"expected a number, got {json_kind(v)}")
        elif isinstance(v, float) and not math.isfinite(v):
            _err(out, "non-finite", path, f"{v!r} is not a finite number")
        elif isinstance(v, int):
            try:
                float(v)
            except OverflowError:
                _err(out, "out-of-range", path, f"{_short(v)} does not fit in a Double")
    elif kind == UUID:
        if not isinstance(v, str):
            _err(out, "wrong-type", path, f"expected a UUID string, got {json_kind(v)}")
        elif not UUID_RE.match(v):
            _err(out, "bad-uuid", path, f"{_short(v)} is not a UUID")
    elif kind == DATE:
        parts = parse_date_parts(v)
        if not isinstance(v, str):
            _err(out, "wrong-type", path, f"expected an ISO-8601 date string, got {json_kind(v)}")
        elif parts is None:
            _err(out, "bad-date", path, f"{_short(v)} is not an ISO-8601 date-time")
        elif parts[1]:
            _err(out, "fractional-date", path, f"{_short(v)} has fractional seconds (macOS <= 15 rejects it)")
    elif kind == DATA:
        if not isinstance(v, str):
            _err(out, "wrong-type", path, f"expected a base64 string, got {json_kind(v)}")
        else:
            try:
                base64.b64decode(v, validate=True)
            except (binascii.Error, ValueError):
                _err(out, "bad-base64", path, "not standard padded base64")


def check(kind, value, path: tuple, out: list) -> None:
    """Append to ``out`` every decode error of ``value`` read as ``kind`` at ``path``.

    Recursion follows the schema, whose depth is fixed (< 10), never the input.
    """
    kind = resolve_kind(kind, value)
    if isinstance(kind, Object):
        if not isinstance(value, dict):
            _err(out, "not-object", path, f"expected an object ({kind.name}), got {json_kind(value)}")
            return
        for key, (sub, required) in kind.fields.items():
            if key not in value:
                if required:
                    _err(out, "missing-key", path + (key,), f"required key of {kind.name} is missing")
            elif value[key] is None:
                if required:
                    _err(out, "null-key", path + (key,), f"required key of {kind.name} is null")
            else:
                check(sub, value[key], path + (key,), out)
    elif isinstance(kind, Array):
        if not isinstance(value, list):
            _err(out, "wrong-type", path, f"expected an array, got {json_kind(value)}")
            return
        for i, item in enumerate(value):
            check(kind.item, item, path + (i,), out)
    elif isinstance(kind, Map):
        if not isinstance(value, dict):
            _err(out, "wrong-type", path, f"expected an object of strings, got {json_kind(value)}")
            return
        for k, item in value.items():
            check(kind.value, item, path + (k,), out)
    elif isinstance(kind, OneOf):
        if not isinstance(value, str):
            _err(out, "wrong-type", path, f"expected a string, got {json_kind(value)}")
        elif value not in kind:
            _err(out, "bad-enum", path, f"unknown value {_short(value)} (SAM knows {', '.join(sorted(kind))})")
    else:
        _check_leaf(kind, value, path, out)


# Foundation's JSON readers (JSONSerialization and swift-foundation's JSONDecoder) refuse input
# nested deeper than 512 arrays/objects.  Uncertain: the limit is Foundation's, not SAM's
# source; it also keeps samctl's own recursive code (copies, encoders) far from Python's limit.
MAX_DEPTH = 512


def check_values(value, path: tuple, out: list) -> None:
    """Append errors for values no JSON text can hold, anywhere (unknown keys too).

    A lone UTF-16 surrogate in a string or key (``bad-string``) and NaN/Infinity
    (``non-finite``) can only come from a lenient parser; SAM cannot read them
    and samctl's writer refuses them.  A place ``check`` already reported is
    skipped.  Iterative, so any nesting depth is fine; a node's path is kept as
    a link to its parent's and only spelled out for a hit, so deep input stays
    linear.
    """
    reported = {p.path for p in out}

    def spell(link) -> tuple:
        keys = []
        while link is not None:
            link, key = link
            keys.append(key)
        return path + tuple(reversed(keys))

    stack = [(value, None, 1)]
    too_deep = False
    while stack:
        v, link, depth = stack.pop()
        if depth > MAX_DEPTH and isinstance(v, (dict, list)):
            if not too_deep:
                too_deep = True
                _err(
                    out,
                    "too-deep",
                    spell(link),
                    f"nested deeper than {MAX_DEPTH} levels: SAM's JSON reader refuses the file",
                )
            continue
        if isinstance(v, str):
            if SURROGATE_RE.search(v):
                _err(out, "bad-string", spell(link), "string holds a lone UTF-16 surrogate")
        elif isinstance(v, float):
            if not math.isfinite(v) and spell(link) not in reported:
                _err(out, "non-finite", spell(link), f"{v!r} is not a JSON number")
        elif isinstance(v, dict):
            for k, item in v.items():
                if isinstance(k, str) and SURROGATE_RE.search(k):
                    _err(out, "bad-string", spell((link, k)), "key holds a lone UTF-16 surrogate")
                stack.append((item, (link, k), depth + 1))
        elif isinstance(v, list):
            stack.extend((item, (link, i), depth + 1) for i, item in enumerate(v))


# --- warnings ----------------------------------------------------------------------


def flag_problem(msg) -> str | None:
    """Why a message's type/flags could not come out of SAM's derivation (sam.md §4.3), or None.

    Only judged when ``type``, ``isFromUser`` and ``isToolMessage`` decode.
    Derivation: explicit thinking => thinking/tool; non-empty reasoningContent
    => thinking/not tool; isToolMessage or toolExecution => toolExecution/tool;
    isFromUser => user/not tool; else the given type, not tool.
    """
    if not isinstance(msg, dict):
        return None
    t, user, tool = msg.get("type"), msg.get("isFromUser"), msg.get("isToolMessage")
    if not isinstance(t, str) or t not in MESSAGE_TYPES or not isinstance(user, bool) or not isinstance(tool, bool):
        return None
    reasoning = msg.get("reasoningContent")
    has_reasoning = isinstance(reasoning, str) and reasoning != ""
    if t == "thinking":
        return None if tool or has_reasoning else "type thinking with isToolMessage false and no reasoningContent"
    if has_reasoning:
        return f"non-empty reasoningContent but type {t} (SAM derives thinking)"
    if t == "toolExecution":
        return None if tool else "type toolExecution with isToolMessage false"
    if tool:
        return f"isToolMessage true but type {t} (SAM derives toolExecution)"
    if user and t != "user":
        return f"isFromUser true but type {t} (SAM derives user)"
    return None


def _warn(out: list, code: str, path: tuple, reason: str) -> None:
    out.append(Problem(WARNING, code, where_of(path), reason, path))


def _warnings(doc: dict, out: list, decodes: bool = False) -> None:
    """The warnings of ``doc``; ``decodes``: ``decodable.first_error`` passed it, so each message is an
    object whose ``id`` is a UUID and whose ``timestamp`` and ``lastModified`` are valid dates of whole
    seconds, or absent or null."""
    msgs = doc.get("messages")
    msgs = msgs if isinstance(msgs, list) else []
    call_ids = set()
    for m in msgs:
        calls = m.get("toolCalls") if isinstance(m, dict) else None
        for c in calls if isinstance(calls, list) else ():
            if isinstance(c, dict) and isinstance(c.get("id"), str):
                call_ids.add(c["id"])
    first_index = {}
    for i, m in enumerate(msgs):
        if not isinstance(m, dict):
            continue
        p = ("messages", i)
        mid = m.get("id")
        if decodes or is_uuid(mid):  # (a message that decodes has a UUID for its id)
            j = first_index.setdefault(mid.upper(), i)
            if j != i:
                _warn(out, "duplicate-message-id", p + ("id",), f"same id as messages[{j}]")
        if m.get("isStreaming") is True:
            _warn(out, "streaming", p + ("isStreaming",), "still streaming: the stream was interrupted")
        if m.get("toolStatus") in ("running", "queued"):
            _warn(out, "tool-running", p + ("toolStatus",), f"tool still {m['toolStatus']}: it never finished")
        tdd = m.get("toolDisplayData")
        if isinstance(tdd, dict) and tdd.get("status") in ("running", "queued"):
            _warn(out, "tool-running", p + ("toolDisplayData", "status"), f"tool card still {tdd['status']}")
        tcid = m.get("toolCallId")
        if isinstance(tcid, str) and tcid not in call_ids:
            _warn(out, "orphan-tool-result", p + ("toolCallId",), f"no toolCalls entry has id {_short(tcid)}")
        lm, ts = m.get("lastModified"), m.get("timestamp")
        if decodes and type(lm) is str and type(ts) is str and len(lm) == len(ts) == 20 and lm[19] == ts[19] == "Z":
            earlier = lm < ts  # (two valid dates of whole seconds in UTC: their text orders them)
        else:
            lm = parse_date(lm)  # (most messages have none: their timestamp is not parsed)
            ts = parse_date(ts) if lm is not None else None
            earlier = ts is not None and lm is not None and lm < ts
        if earlier:
            _warn(out, "modified-before-created", p + ("lastModified",), "lastModified is earlier than timestamp")
        why = flag_problem(m)
        if why:
            _warn(out, "type-flags", p + ("type",), why)
    if "enabledMiniPromptIds" in doc:
        _warn(
            out,
            "renamed-key",
            ("enabledMiniPromptIds",),
            "renamed to enabledCustomInstructionIds; SAM ignores it and drops it on its next save",
        )


# --- public entry points ------------------------------------------------------------


def validate_conversation(doc) -> list[Problem]:
    """Every problem SAM's decoder (errors) and samctl's verifier (warnings) find in ``doc``.

    ``doc`` is any decoded JSON value.  Never raises; never modifies ``doc``.
    """
    out = errors_of(doc)
    if isinstance(doc, dict):
        _warnings(doc, out)
    return out


def warnings_of(doc) -> list[Problem]:
    """The warning-severity problems of ``validate_conversation(doc)``, in its order (no errors
    looked for: for a document ``decodable.first_error`` passed)."""
    out: list[Problem] = []
    if isinstance(doc, dict):
        _warnings(doc, out, decodes=True)
    return out


def errors_of(doc) -> list[Problem]:
    """The error-severity problems of ``validate_conversation(doc)``, in its order (no warnings
    looked for).  ``decodable.first_error`` is the fast way to ask for the first one."""
    out: list[Problem] = []
    if not isinstance(doc, dict):
        _err(out, "not-object", (), f"top level must be an object (ConversationData), got {json_kind(doc)}")
        return out
    check(CONVERSATION_KIND, doc, (), out)
    check_values(doc, (), out)
    return out


def message_errors(msg, index: int | None = None) -> list[Problem]:
    """The error-severity problems of one message alone (would it decode?).

    Paths are relative to the message (``toolStatus``), or under
    ``messages[index]`` when ``index`` is given.  Never raises.
    """
    path = () if index is None else ("messages", index)
    out: list[Problem] = []
    check(MESSAGE_KIND, msg, path, out)
    check_values(msg, path, out)
    return out


def would_load(doc) -> bool:
    """True iff SAM would decode ``doc`` (no error-severity problem)."""
    return not any(p.severity == ERROR for p in validate_conversation(doc))
