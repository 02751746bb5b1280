"""The repairs ``samctl recover`` applies to SAM conversations (sam.md §4.5.5, §4.6, §14).

``repair_conversation`` never modifies its input, returns a document with no error-severity problem, notes
every change, and drops a message only when it cannot be made to decode; ValueError only when nothing can be
salvaged.

Design notes: docs/recovery.md, "stores/sam/repair.py".
"""

from __future__ import annotations

import json
import math
import re

from samctl.stores.sam.schema import (
    CONVERSATION_KIND,
    DATE,
    INT,
    MESSAGE_KIND,
    MESSAGE_TYPES,
    SETTINGS_KIND,
    SURROGATE_RE,
    TOOL_STATUS_KIND,
    UUID,
    Array,
    Map,
    Object,
    check,
    format_date,
    int_valued_float,
    is_uuid,
    parse_date,
    parse_date_parts,
    resolve_kind,
    where_of,
)

__all__ = ["DEFAULT_TITLE", "repair_conversation", "salvage_messages", "salvage_top_level"]

DEFAULT_TITLE = "Recovered Conversation"

_NO = object()  # "no default": the key cannot be filled


class _Unfixable(Exception):
    """A unit (message, settings, document) holds an error no fill or removal inside it can cure."""

    def __init__(self, problem):
        super().__init__(problem.line())
        self.problem = problem


def _show(v) -> str:
    try:
        s = json.dumps(v, ensure_ascii=False)
    except (TypeError, ValueError):
        s = repr(v)
    return s if len(s) <= 60 else s[:57] + "..."


# --- step 1: copy --------------------------------------------------------------------


def _spell(link) -> tuple:
    keys = []
    while link is not None:
        link, key = link
        keys.append(key)
    return tuple(reversed(keys))


def _copy_clean(value, notes: list):
    """Deep copy of a JSON value, iteratively (any depth); lone surrogates -> U+FFFD, NaN/Infinity -> null.

    A null in an optional key means "absent" to SAM; in a required one it is
    then filled or its unit removed like any other missing value.
    """

    def fix(v, link):
        if isinstance(v, str) and SURROGATE_RE.search(v):
            notes.append(f"{where_of(_spell(link))}: lone UTF-16 surrogate(s) replaced by U+FFFD")
            return SURROGATE_RE.sub("\ufffd", v)
        if isinstance(v, float) and not math.isfinite(v):
            notes.append(f"{where_of(_spell(link))}: {v!r} -> null (not a JSON number)")
            return None
        return v

    if not isinstance(value, (dict, list)):
        return fix(value, None)
    root = {} if isinstance(value, dict) else []
    stack = [(value, root, None)]
    while stack:
        src, dst, link = stack.pop()
        for k, v in src.items() if isinstance(src, dict) else enumerate(src):
            here = (link, k)
            if isinstance(v, dict):
                new = {}
                stack.append((v, new, here))
            elif isinstance(v, list):
                new = []
                stack.append((v, new, here))
            else:
                new = fix(v, here)
            if isinstance(dst, dict):
                dst[fix(k, here)] = new
            else:
                dst.append(new)
    return root


# --- step 3: lossless normalisation -------------------------------------------------------


def _normalise(kind, value, path: tuple, notes: list):
    """``value`` with the lossless fixes of step 3 applied (containers changed in place)."""
    kind = resolve_kind(kind, value)
    if isinstance(kind, Object):
        if isinstance(value, dict):
            for key, (sub, _required) in kind.fields.items():
                if value.get(key) is not None:
                    value[key] = _normalise(sub, value[key], path + (key,), notes)
    elif isinstance(kind, Array):
        if isinstance(value, list):
            for i, item in enumerate(value):
                value[i] = _normalise(kind.item, item, path + (i,), notes)
    elif isinstance(kind, Map):
        pass  # maps hold plain strings: nothing to normalise
    elif kind is TOOL_STATUS_KIND:
        if value in ("running", "queued"):
            notes.append(f"{where_of(path)}: {value} -> error (the tool never finished)")
            return "error"
    elif kind == UUID:
        if is_uuid(value) and value != value.upper():
            notes.append(f"{where_of(path)}: uppercased UUID")
            return value.upper()
    elif kind == DATE:
        parts = parse_date_parts(value)
        if parts is not None:
            try:
                canonical = format_date(parts[0])
            except ValueError:  # an offset pushed it outside years 1-9999: leave it
                return value
            if canonical != value:
                why = "fractional seconds truncated" if parts[1] else "converted to UTC"
                if parts[1] and not value.endswith("Z"):
                    why += ", converted to UTC"
                notes.append(f"{where_of(path)}: {value} -> {canonical} ({why})")
                return canonical
    elif kind == INT:
        if isinstance(value, float) and int_valued_float(value):
            notes.append(f"{where_of(path)}: {value!r} -> {int(value)} (Int field)")
            return int(value)
    return value


# --- steps 4-6: settle a unit ----------------------------------------------------------


def _removal_point(kind, value, rel: tuple):
    """The deepest removable place at or above ``rel``: an optional key, an array element
    or a map entry.  None if only removing the whole unit would do."""
    best = None
    for depth, comp in enumerate(rel):
        kind = resolve_kind(kind, value)
        if isinstance(kind, Object):
            spec = kind.fields.get(comp) if isinstance(comp, str) else None
            if spec is None:
                break
            kind, required = spec
            if not required:
                best = rel[: depth + 1]
        elif isinstance(kind, (Array, Map)):
            kind = kind.item if isinstance(kind, Array) else kind.value
            best = rel[: depth + 1]
        else:
            break
        try:
            value = value[comp]
        except (KeyError, IndexError, TypeError):
            break
    return best


def _parent(value, rel: tuple):
    for comp in rel[:-1]:
        value = value[comp]
    return value


def _order(path: tuple):
    # Deeper places and higher indexes first, so earlier removals never shift later ones.
    return tuple((0, c) if isinstance(c, int) else (1, str(c)) for c in path)


def _settle(value, kind, path: tuple, notes: list, defaults: dict, *, fatal=(), replace_invalid=False):
    """Make ``value`` decode as ``kind`` by filling defaults and removing broken optional parts.

    ``defaults`` maps a path relative to ``value`` to a function of ``value``
    giving the fill (or _NO).  Raises _Unfixable if a ``fatal`` code appears or
    an error sits where nothing can be filled or removed.  Each round fixes every
    current error, so it ends: a fill is valid by construction, a removal shrinks.
    """
    while True:
        errs: list = []
        check(kind, value, path, errs)
        if not errs:
            return value
        for p in errs:
            if p.code in fatal:
                raise _Unfixable(p)
        removals = {}
        for p in errs:
            rel = p.path[len(path) :]
            fill = _NO
            if rel in defaults and (replace_invalid or p.code in ("missing-key", "null-key")):
                fill = defaults[rel](value)
            if fill is not _NO:
                parent = _parent(value, rel)
                old = "missing" if p.code == "missing-key" else _show(parent.get(rel[-1]))
                parent[rel[-1]] = fill
                notes.append(f"{p.where}: {old} -> {_show(fill)} ({p.reason})")
                continue
            point = _removal_point(kind, value, rel)
            if point is None:
                raise _Unfixable(p)
            removals.setdefault(point, p)
        for point in sorted(removals, key=_order, reverse=True):
            p = removals[point]
            del _parent(value, point)[point[-1]]
            inside = "" if path + point == p.path else f"{p.where}: "
            notes.append(f"{where_of(path + point)}: removed ({inside}{p.code}: {p.reason})")


# Message defaults (sam.md §4.3): only for keys that are missing or null.


def _message_type(m):
    t = m.get("type")
    return t if isinstance(t, str) and t in MESSAGE_TYPES else None


def _derived_type(m):
    # sam.md §4.3 derivation, from the flags; without isFromUser the role would be a guess.
    user, reasoning = m.get("isFromUser"), m.get("reasoningContent")
    if not isinstance(user, bool):
        return _NO
    if isinstance(reasoning, str) and reasoning:
        return "thinking"
    if m.get("isToolMessage") is True:
        return "toolExecution"
    return "user" if user else "assistant"


def _timestamp_from_last_modified(m):
    lm = m.get("lastModified")
    return lm if parse_date(lm, allow_fraction=False) is not None else _NO


_MESSAGE_DEFAULTS = {
    ("content",): lambda m: "",
    ("showReasoning",): lambda m: False,
    ("isStreaming",): lambda m: False,
    ("isToolMessage",): lambda m: _message_type(m) in ("toolExecution", "thinking") if _message_type(m) else _NO,
    ("isFromUser",): lambda m: _message_type(m) == "user" if _message_type(m) else _NO,
    ("type",): _derived_type,
    ("timestamp",): _timestamp_from_last_modified,
}

# Settings defaults: those of a new conversation (sam.md §4.2); also replace invalid values.
_SETTINGS_DEFAULTS = {
    ("selectedModel",): lambda s: "",
    ("temperature",): lambda s: 0.7,
    ("topP",): lambda s: 1.0,
    ("contextWindowSize",): lambda s: 8192,
    ("enableReasoning",): lambda s: True,
    ("enableTools",): lambda s: True,
    **{
        ("telemetry", k): (lambda s: 0)
        for k in ("archiveRecallCount", "memoryRetrievalCount", "compressionEventCount", "contextOverflowCount")
    },
}


def _carries_nothing(m: dict) -> bool:
    """A non-user message interrupted mid-stream with no text and nothing else worth keeping.

    SAM's save filter (sam.md §4.5.2) drops every non-user streaming message with blank
    content; we keep those that carry reasoning, content parts or tool-call
    pairing (sam.md §12: recovering a stream must not drop its tool calls).
    """
    content = m.get("content")
    blank = content is None or (isinstance(content, str) and not content.strip())
    return (
        m.get("isStreaming") is True
        and m.get("isFromUser") is not True
        and blank
        and not any(m.get(k) for k in ("reasoningContent", "contentParts", "toolCalls", "toolCallId"))
    )


def _repair_message(m, i: int, notes: list):
    """The repaired message, or None (with a note saying why) if it must be dropped."""
    path = ("messages", i)
    if not isinstance(m, dict):
        notes.append(f"{where_of(path)}: dropped: not an object ({_show(m)})")
        return None
    label = f"{where_of(path)} (id {_show(m.get('id'))})"
    if _carries_nothing(m):
        notes.append(f"{label}: dropped: interrupted stream with no content (SAM's save filter drops it too)")
        return None
    local: list = []
    m = _normalise(MESSAGE_KIND, m, path, local)
    if m.get("isStreaming") is True:
        m["isStreaming"] = False
        local.append(f"{where_of(path + ('isStreaming',))}: true -> false (interrupted stream)")
    try:
        m = _settle(m, MESSAGE_KIND, path, local, _MESSAGE_DEFAULTS, fatal=("bad-enum",))
    except _Unfixable as exc:
        p = exc.problem
        notes.append(f"{label}: dropped: {p.where}: {p.code}: {p.reason}")
        return None
    notes.extend(local)
    return m


def _rename_mini_prompts(doc: dict, notes: list) -> None:
    """sam.md §4.6: enabledMiniPromptIds was renamed without migration; merge it into the new key."""
    if "enabledMiniPromptIds" not in doc:
        return
    old = doc.pop("enabledMiniPromptIds")
    cur = doc.get("enabledCustomInstructionIds")
    merged, seen, bad = [], set(), 0
    for v in (cur if isinstance(cur, list) else []) + (old if isinstance(old, list) else []):
        if is_uuid(v):
            if v.upper() not in seen:
                seen.add(v.upper())
                merged.append(v.upper())
        else:
            bad += 1
    if not isinstance(old, list):
        notes.append(f"enabledMiniPromptIds: removed (not an array: {_show(old)})")
        return
    if cur is not None and not isinstance(cur, list):
        notes.append(f"enabledCustomInstructionIds: replaced (not an array: {_show(cur)})")
    doc["enabledCustomInstructionIds"] = merged
    extra = f", {bad} invalid dropped" if bad else ""
    notes.append(
        f"enabledMiniPromptIds: renamed to enabledCustomInstructionIds ({len(merged)} id(s) after merge{extra})"
    )


def _message_dates(doc: dict) -> list[str]:
    out = []
    for m in doc.get("messages") or ():
        for key in ("timestamp", "lastModified"):
            if parse_date(m.get(key), allow_fraction=False) is not None:
                out.append(m[key])
    return out


def _valid_date(v):
    return v if parse_date(v, allow_fraction=False) is not None else None


def repair_conversation(doc, *, fallback_id=None, fallback_title=None, fallback_epoch=None) -> tuple[dict, list[str]]:
    """A copy of ``doc`` that SAM loads, and one line per change (see the module doc).

    ``fallback_id`` (a UUID, e.g. the folder name), ``fallback_title`` and
    ``fallback_epoch`` (epoch seconds, e.g. the file's mtime) fill a missing or
    invalid ``id``/``title``/``created``/``updated``.  Raises ValueError when
    nothing is salvageable (top level not an object; no usable id or date), or
    when a fallback itself is invalid.
    """
    if fallback_id is not None and not is_uuid(fallback_id):
        raise ValueError(f"fallback_id {fallback_id!r} is not a UUID")
    fallback_date = None
    if fallback_epoch is not None:
        if isinstance(fallback_epoch, bool) or not isinstance(fallback_epoch, (int, float)):
            raise ValueError(f"fallback_epoch {fallback_epoch!r} is not a number")
        fallback_date = format_date(fallback_epoch)  # ValueError if NaN/out of range
    if fallback_title is not None and not isinstance(fallback_title, str):
        raise ValueError(f"fallback_title {fallback_title!r} is not a string")
    if not isinstance(doc, dict):
        raise ValueError(f"nothing to salvage: the top level is not an object ({type(doc).__name__})")

    notes: list[str] = []
    doc = _copy_clean(doc, notes)
    _rename_mini_prompts(doc, notes)

    messages = doc.pop("messages", None)
    _normalise(CONVERSATION_KIND, doc, (), notes)  # messages are normalised one by one below
    if not isinstance(messages, list):
        notes.append(f"messages: {'missing' if messages is None else _show(messages)} -> [] (no message array)")
        messages = []
    kept = []
    for i, m in enumerate(messages):
        m = _repair_message(m, i, notes)
        if m is not None:
            kept.append(m)
    doc["messages"] = kept

    if doc.get("settings") is not None:
        local: list = []
        try:
            doc["settings"] = _settle(
                doc["settings"], SETTINGS_KIND, ("settings",), local, _SETTINGS_DEFAULTS, replace_invalid=True
            )
            notes.extend(local)
        except _Unfixable as exc:
            del doc["settings"]
            notes.append(f"settings: removed, SAM uses its defaults ({exc.problem.where}: {exc.problem.reason})")

    def created(d):  # the first message, not the file's mtime: that is when it was last saved
        dates = sorted(_message_dates(d), key=parse_date)
        return (dates[0] if dates else None) or fallback_date or _valid_date(d.get("updated")) or _NO

    def updated(d):
        dates = sorted(_message_dates(d), key=parse_date)
        return fallback_date or (dates[-1] if dates else None) or _valid_date(d.get("created")) or _NO

    top_defaults = {
        ("id",): lambda d: fallback_id.upper() if fallback_id else _NO,
        ("title",): lambda d: fallback_title if fallback_title is not None else DEFAULT_TITLE,
        ("created",): created,
        ("updated",): updated,
    }
    try:
        doc = _settle(doc, CONVERSATION_KIND, (), notes, top_defaults, replace_invalid=True)
    except _Unfixable as exc:
        p = exc.problem
        hint = {"id": " (pass fallback_id)", "created": " (pass fallback_epoch)", "updated": " (pass fallback_epoch)"}
        raise ValueError(f"nothing to salvage: {p.where}: {p.reason}{hint.get(p.where, '')}") from None
    return doc, notes


# --- salvaging text that is not valid JSON ---------------------------------------------------
#
# Heuristic.  SAM (and samctl) always write conversation.json pretty-printed:
# top-level keys on lines indented by 2 spaces, each message starting on a line
# "    {" (4 spaces), the array closing on a line "  ]".  JSON strings cannot
# hold a raw newline, so such lines are structure, never text.  We find the
# "messages" array, decode each element on its own (json raw_decode from its
# "{"), and after an element that does not decode jump to the next line that
# opens an element at the same indentation.  Text that is not pretty-printed
# (compact JSON) falls back to a string-aware bracket scan.
#
# Limits: a message is recovered only if its own bytes are intact (a corrupt
# byte inside a string is tolerated when it decodes to a control character or
# U+FFFD); a message that was cut off is lost; damage to the "messages" key
# itself or to the line structure around an element loses the elements it
# hides; in compact text, damage to a quote or bracket can desynchronise the
# scan and lose the rest of the array.  If no top-level key line survives at
# all (damaged head and truncated tail), the shallowest surviving key lines,
# those of a message, would be taken for top-level keys: check what
# salvage_top_level returns against the folder name and the file's mtime.  A corrupt byte can also change a value
# and still decode: salvaged values are what the bytes say, nothing more.


def _reject_constant(name):
    raise ValueError(f"{name} is not JSON")


_DECODERS = (
    json.JSONDecoder(parse_constant=_reject_constant),
    json.JSONDecoder(parse_constant=_reject_constant, strict=False),  # tolerates raw control characters
)
_WS = re.compile(r"[ \t\n\r]*")
_TOKEN = re.compile(r'"(?:[^"\\\n]|\\.)*"|[{}\[\]:,]')
_KEY_LINE = re.compile(r'^( +)"', re.M)
_SAM_KEY_LINE = re.compile(r'^  "', re.M)


def _as_text(raw) -> str:
    if isinstance(raw, (bytes, bytearray)):
        return bytes(raw).decode("utf-8", "replace")
    if not isinstance(raw, str):
        raise TypeError(f"expected the file's text, got {type(raw).__name__}")
    return raw


def _decode_at(text: str, pos: int):
    for decoder in _DECODERS:
        try:
            return decoder.raw_decode(text, pos)
        except (ValueError, RecursionError):
            continue
    return None


def _unquote(raw: str):
    try:
        return json.loads('"' + raw + '"')
    except ValueError:
        return None


def _pretty_indent(text: str) -> str | None:
    """The indentation of the top-level keys if the text is pretty-printed, else None.

    Two spaces if any key line has them (SAM's and samctl's layout), else the
    smallest indentation of any key line (another writer's layout).
    """
    if _SAM_KEY_LINE.search(text):
        return "  "
    widths = [len(m.group(1)) for m in _KEY_LINE.finditer(text)]
    return " " * min(widths) if widths else None


def _top_level_keys(text: str):
    """(key, position of its value) for each top-level key, in file order."""
    indent = _pretty_indent(text)
    if indent is not None:
        for m in re.finditer(r"^" + indent + r'"((?:[^"\\\n]|\\.)*)"[ \t]*:[ \t]*', text, re.M):
            key = _unquote(m.group(1))
            if key is not None:
                yield key, m.end()
        return
    depth, prev = 0, None
    for t in _TOKEN.finditer(text):
        c = t.group()[0]
        if c in "{[":
            depth += 1
        elif c in "}]":
            depth -= 1
        elif c == ":" and depth == 1 and prev is not None and prev.group()[0] == '"':
            key = _unquote(prev.group()[1:-1])
            if key is not None:
                yield key, _WS.match(text, t.end()).end()
        prev = t


def _skip_value(text: str, pos: int):
    """Where the compact-JSON value starting at ``pos`` ends (or the array's next ``,``/``]``)."""
    depth = 0
    for t in _TOKEN.finditer(text, pos):
        c = t.group()[0]
        if c in "{[":
            depth += 1
        elif c in "}]":
            depth -= 1
            if depth < 0:
                return t.start()
            if depth == 0:
                return t.end()
        elif c == "," and depth == 0:
            return t.start()
    return None


def salvage_messages(raw_text) -> list[dict]:
    """Every message object of a conversation.json text that still decodes on its own.

    For text that is not valid JSON (truncated, corrupt bytes); on valid text it
    returns the whole ``messages`` array's objects.  Never raises on any text
    (bytes are decoded as UTF-8 with replacement).  See the heuristic above.
    """
    text = _as_text(raw_text)
    start = None
    for key, pos in _top_level_keys(text):
        if key == "messages" and text.startswith("[", pos):
            start = pos + 1
            break
    if start is None:  # the structure around the key is damaged: take any "messages" : [
        m = re.search(r'"messages"\s*:\s*\[', text)
        if m is None:  # the key or its bracket is gone: the elements may still be there
            return _loose_messages(text)
        start = m.end()
    indent = _pretty_indent(text)
    gap = _WS.match(text, start).group()
    resync = None
    if indent is not None and "\n" in gap:
        element = gap.rsplit("\n", 1)[1]  # the indentation of the array's elements
        resync = re.compile(r"\n(?:" + element + r"(\{)|" + indent + r"\])")
    out = []
    pos = start
    while True:
        pos = _WS.match(text, pos).end()
        if pos >= len(text) or text[pos] == "]":
            break
        if text[pos] == ",":
            pos += 1
            continue
        got = _decode_at(text, pos) if text[pos] == "{" else None
        if got is not None and isinstance(got[0], dict):
            out.append(got[0])
            pos = got[1]
            continue
        if resync is not None:
            m = resync.search(text, pos + 1)
            if m is None or m.group(1) is None:  # no further element before the array's end
                break
            pos = m.start(1)
        else:
            nxt = _skip_value(text, pos)
            if nxt is None:
                break
            pos = max(nxt, pos + 1)
    return out


_OBJECT_START = re.compile(r'\{\s*"')  # an object that opens with a key, as every message does


def looks_like_message(value) -> bool:
    """A message object, by the keys every message has (sam.md §4.2: ``id``, ``isFromUser``);
    performance records, settings and tool calls have no ``isFromUser``."""
    return isinstance(value, dict) and isinstance(value.get("id"), str) and "isFromUser" in value


def _loose_messages(text: str) -> list[dict]:
    """The message objects that still decode, in file order, when no ``"messages" : [`` survives
    to say where the array is: every ``{`` that opens a key is tried.  Only message-shaped objects
    count, and a found one is skipped whole, so nothing inside it is taken for another; what does
    not decode (the whole document, a damaged message) is stepped into."""
    out, pos = [], 0
    while True:
        m = _OBJECT_START.search(text, pos)
        if m is None:
            return out
        got = _decode_at(text, m.start())
        if got is not None and looks_like_message(got[0]):
            out.append(got[0])
            pos = got[1]
        else:
            pos = m.start() + 1


def salvage_top_level(raw_text) -> dict:
    """The top-level keys of a conversation.json text whose values still decode (not ``messages``).

    Scalars (``id``, ``title``, ``created``, ...) and intact containers
    (``settings``, ``performanceMetrics``...) alike; values are as decoded,
    not validated -- pass the result through ``repair_conversation``.  For a
    repeated key the last decodable value wins, as in JSON.  Never raises on
    any text.
    """
    text = _as_text(raw_text)
    out = {}
    for key, pos in _top_level_keys(text):
        if key == "messages":
            continue
        got = _decode_at(text, pos)
        if got is not None:
            out[key] = got[0]
    return out
