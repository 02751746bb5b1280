"""The strict writer for SAM's JSON files (sam.md §3, "A near byte-faithful writer").

Every ``*_bytes`` gives SAM's encoder layout (Foundation's key order, ``" : "``, ``\\/``, integral floats as
ints); a value SAM could not read raises ValueError; the input is never modified.

Design notes: docs/stores.md, "stores/sam/encode.py".
"""

from __future__ import annotations

import functools
import json
import math
import re

from samctl.stores.sam.schema import format_date, is_uuid

__all__ = ["INT_FIELDS", "sort_key", "dumps", "conversation_bytes", "package_bytes", "active_conversation_bytes"]

# Where SAM's schema has Int fields, relative to a ConversationData (sam.md §4).
# "*" stands for every element of an array.
INT_FIELDS = (
    ("settings", "contextWindowSize"),
    ("settings", "maxTokens"),
    ("settings", "telemetry", "archiveRecallCount"),
    ("settings", "telemetry", "memoryRetrievalCount"),
    ("settings", "telemetry", "compressionEventCount"),
    ("settings", "telemetry", "contextOverflowCount"),
    ("messages", "*", "performanceMetrics", "tokenCount"),
    ("performanceMetrics", "*", "requestTokens"),
    ("performanceMetrics", "*", "responseTokens"),
)

_DIGITS = re.compile(r"[0-9]+")
_EXACT_INT_LIMIT = 2**53


@functools.lru_cache(maxsize=4096)  # the same few dozen keys recur in every message
def sort_key(key: str):
    """Sort key modelling Foundation's numeric, case-insensitive, forced-ordering compare."""
    low = key.lower()
    parts = []
    pos = 0
    for m in _DIGITS.finditer(low):
        parts.extend((ord(c), 0, "") for c in low[pos : m.start()])
        digits = m.group().lstrip("0")
        # A digit run sorts where "0" does, then by value: length first, then digits
        # (no int(): Python refuses to convert very long digit strings).
        parts.append((ord("0"), len(digits), digits))
        pos = m.end()
    parts.extend((ord(c), 0, "") for c in low[pos:])
    return (tuple(parts), key)  # (immutable: cached and shared)


def _prepare(value):
    """A copy of ``value`` with sorted dicts and integral floats as ints; checks finiteness."""
    if isinstance(value, dict):
        items = []
        for k, v in value.items():
            if not isinstance(k, str):
                raise ValueError(f"JSON object keys must be strings, got {k!r}")
            items.append((k, _prepare(v)))
        if len(items) > 1:
            items.sort(key=lambda kv: sort_key(kv[0]))
        return dict(items)
    if isinstance(value, (list, tuple)):
        return [_prepare(v) for v in value]
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"{value!r} cannot be written: SAM's JSON has no NaN/Infinity")
        if value.is_integer() and abs(value) < _EXACT_INT_LIMIT:
            return int(value)
    return value


def _coerce_ints(conv, where: str = "") -> None:
    """Make every Int field of a prepared ConversationData an int (in place, on our copy)."""
    if not isinstance(conv, dict):
        return
    for path in INT_FIELDS:
        _coerce_path(conv, path, where)


def _coerce_path(node, path: tuple, where: str) -> None:
    head, rest = path[0], path[1:]
    if head == "*":
        if isinstance(node, list):
            for i, item in enumerate(node):
                _coerce_path(item, rest, f"{where}[{i}]")
        return
    if not isinstance(node, dict) or head not in node:
        return
    here = f"{where}.{head}" if where else head
    if rest:
        _coerce_path(node[head], rest, here)
        return
    v = node[head]
    if isinstance(v, float):  # finite and integral-below-2**53 ones are already ints
        if not v.is_integer():
            raise ValueError(f"{here}: {v!r} is not an integer (an Int field in SAM's schema)")
        node[head] = int(v)


def dumps(prepared) -> bytes:
    """Bytes of an already prepared value in SAM's pretty layout."""
    try:
        text = json.dumps(prepared, indent=2, separators=(",", " : "), ensure_ascii=False, allow_nan=False)
    except RecursionError:
        raise ValueError("value is nested too deeply to write") from None
    # Safe: after json.dumps a "/" can only occur inside a string literal.
    text = text.replace("/", "\\/")
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError("a string holds a lone surrogate: not valid Unicode, cannot be written") from None


def _prepare_safely(value):
    try:
        return _prepare(value)
    except RecursionError:
        raise ValueError("value is nested too deeply to write") from None


def conversation_bytes(doc) -> bytes:
    """``conversation.json`` bytes for a ConversationData dict, in SAM's layout (see module doc)."""
    prepared = _prepare_safely(doc)
    _coerce_ints(prepared)
    return dumps(prepared)


def package_bytes(obj) -> bytes:
    """Bytes of a SAM export package (sam.md §10.1 single or sam.md §10.2 bulk) with the same encoder.

    The conversations inside get the same Int-field coercion as conversation.json.
    """
    prepared = _prepare_safely(obj)
    if isinstance(prepared, dict):
        _coerce_ints(prepared.get("conversation"), "conversation")
        packages = prepared.get("conversations")
        for i, pkg in enumerate(packages if isinstance(packages, list) else ()):
            if isinstance(pkg, dict):
                _coerce_ints(pkg.get("conversation"), f"conversations[{i}].conversation")
        count = prepared.get("conversationCount")
        if isinstance(count, float):
            raise ValueError(f"conversationCount: {count!r} is not an integer")
    return dumps(prepared)


def active_conversation_bytes(conversation_id: str, updated_epoch: float) -> bytes:
    """``active-conversation.json`` bytes: ``{"id": UUID, "updated": date}`` (sam.md §6.1).

    The id is written uppercase; raises ValueError if it is not a UUID or the
    epoch cannot be a SAM date.
    """
    if not is_uuid(conversation_id):
        raise ValueError(f"{conversation_id!r} is not a UUID")
    return dumps({"id": conversation_id.upper(), "updated": format_date(updated_epoch)})
