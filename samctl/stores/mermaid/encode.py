"""Byte-compatible writers for mermaid's files (mermaid.md §2).

``snapshot_bytes``, ``log_line_bytes`` and ``meta_bytes`` give exactly the bytes mermaid (serde_json)
writes; a value that is not JSON raises TypeError.

Design notes: docs/stores.md, "stores/mermaid/encode.py".
"""

from __future__ import annotations

import math
import re

import orjson

__all__ = ["format_float", "snapshot_bytes", "log_line_bytes", "meta_dict", "meta_bytes", "META_FIELDS"]

_PRETTY = orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS
_COMPACT = orjson.OPT_SORT_KEYS | orjson.OPT_APPEND_NEWLINE

_I64_MIN = -(1 << 63)
_U64_MAX = (1 << 64) - 1

# ConversationMeta struct order (mermaid.md §3.2); the .meta file keeps it.
META_FIELDS = ("id", "title", "updated_at", "git_branch", "message_count", "forked_from")


def format_float(x: float) -> str:
    """``x`` as serde_json writes an f64 (ryu layout, mermaid.md §2.6); ``null`` if not finite.

    Shortest round-trip digits D (taken from ``repr``) and exponent e with
    value = D x 10^e, kk = len(D) + e:
    e >= 0 and kk <= 16 -> ``D000.0``; 0 < kk <= 16 -> ``DD.DD``;
    -5 < kk <= 0 -> ``0.000D``; else ``D.DDDe{kk-1}`` (no ``+``, no padding).
    """
    x = float(x)
    if not math.isfinite(x):
        return "null"
    s = repr(x)
    sign = ""
    if s[0] == "-":
        sign, s = "-", s[1:]
    mant, _, exp = s.partition("e")
    whole, _, frac = mant.partition(".")
    digits = (whole + frac).lstrip("0")
    e = (int(exp) if exp else 0) - len(frac)
    if not digits:
        return sign + "0.0"
    trimmed = digits.rstrip("0")
    e += len(digits) - len(trimmed)
    digits = trimmed
    n = len(digits)
    kk = n + e
    if e >= 0 and kk <= 16:
        out = digits + "0" * e + ".0"
    elif 0 < kk <= 16:
        out = digits[:kk] + "." + digits[kk:]
    elif -5 < kk <= 0:
        out = "0." + "0" * -kk + digits
    else:
        out = digits[0] + ("." + digits[1:] if n > 1 else "") + "e" + str(kk - 1)
    return sign + out


def _widen_big_ints(v):
    """A copy of ``v`` with integers outside i64/u64 turned into floats (as serde_json reads them)."""
    t = type(v)
    if t is dict:
        return {k: _widen_big_ints(x) for k, x in v.items()}
    if t is list or t is tuple:
        return [_widen_big_ints(x) for x in v]
    if t is int and not _I64_MIN <= v <= _U64_MAX:
        try:
            return float(v)
        except OverflowError:
            raise TypeError(f"integer {str(v)[:20]}... is out of the range serde_json can read") from None
    return v


# A JSON string, or the ``e+`` of an exponent (outside strings it can only be that).
_STRING_OR_EXP_PLUS = re.compile(rb'"(?:[^"\\]|\\.)*"|e\+')


def _no_exponent_plus(m: re.Match) -> bytes:
    return b"e" if m.group() == b"e+" else m.group()


def _dumps(v, option: int) -> bytes:
    try:
        out = orjson.dumps(v, option=option)
    except orjson.JSONEncodeError as exc:
        if "64-bit" not in str(exc):
            raise
        # Rare path: only reached when a big integer is somewhere in the value.
        out = orjson.dumps(_widen_big_ints(v), option=option)
    if b"e+" in out:
        # orjson >= 3.10 writes 1e+16 where serde_json (ryu) writes 1e16; rare enough
        # (only floats >= 1e16) that a scan of the text is cheaper than formatting floats ourselves.
        out = _STRING_OR_EXP_PLUS.sub(_no_exponent_plus, out)
    return out


def snapshot_bytes(doc) -> bytes:
    """The bytes of a ``.json`` snapshot or ``.conflict`` file for ``doc`` (pretty, sorted, no newline)."""
    return _dumps(doc, _PRETTY)


def log_line_bytes(envelope) -> bytes:
    """One ``.jsonl`` line: compact, keys sorted at every depth, then ``\\n``."""
    return _dumps(envelope, _COMPACT)


_REDACTION = re.compile(r"\[REDACTED[^\]]{0,40}\]")  # "[REDACTED]", "[REDACTED PRIVATE KEY]" (mermaid.md §5.1)


def meta_title(snapshot_title, sidecar_title):
    """The title a rebuilt sidecar gets: the old sidecar's own when the snapshot's title is a
    redaction of it, else the snapshot's.  mermaid writes the sidecar from the live, unredacted
    session and only the snapshot is redacted (mermaid.md §3.2, §5.1), so a rebuilt sidecar would
    otherwise lose the title mermaid's picker shows, for good."""
    if type(snapshot_title) is not str or type(sidecar_title) is not str or "[REDACTED" not in snapshot_title:
        return snapshot_title
    parts = _REDACTION.split(snapshot_title)
    if len(parts) < 2 or not any(ch.isalnum() for p in parts for ch in p):
        return snapshot_title  # a title that is all markers explains any sidecar title: it proves nothing
    return sidecar_title if _fills(parts, sidecar_title) else snapshot_title


def _fills(parts: list, text: str) -> bool:
    """True if ``text`` is ``parts`` joined by one or more characters each (what each marker replaced).

    Leftmost matching of each literal is enough for wildcards of this kind, and it is linear: a
    sidecar title is untrusted input, and a backtracking regex over it could run for hours."""
    first, last = parts[0], parts[-1]
    if not text.startswith(first) or len(text) < len(first) + len(last) + len(parts) - 1:
        return False
    pos = len(first)
    for lit in parts[1:-1]:
        i = text.find(lit, pos + 1)  # (at least one character for the marker before it)
        if i < 0:
            return False
        pos = i + len(lit)
    return text.endswith(last) and len(text) - len(last) >= pos + 1


def meta_dict(snapshot_doc: dict, sidecar_title=None) -> dict:
    """The ``ConversationMeta`` of a snapshot document, in struct order.

    ``git_branch``/``forked_from`` are None when absent; ``message_count`` is
    the number of messages.  ``sidecar_title``: the title of the sidecar this
    one replaces, kept if the snapshot's is a redaction of it (``meta_title``).
    """
    return {
        "id": snapshot_doc["id"],
        "title": meta_title(snapshot_doc["title"], sidecar_title),
        "updated_at": snapshot_doc["updated_at"],
        "git_branch": snapshot_doc.get("git_branch"),
        "message_count": len(snapshot_doc.get("messages") or ()),
        "forked_from": snapshot_doc.get("forked_from"),
    }


def meta_bytes(meta: dict) -> bytes:
    """The bytes of a ``.meta`` file: compact, struct order, nulls included, no newline.

    Keys other than the six struct fields are dropped (mermaid's struct has no
    room for them); a missing ``message_count`` is written as 0, other missing
    fields as null.
    """
    ordered = {k: meta.get(k) for k in META_FIELDS}
    if ordered["message_count"] is None:
        ordered["message_count"] = 0
    return _dumps(ordered, 0)
