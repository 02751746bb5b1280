"""Lenient decoding of mermaid snapshots and metas into the neutral model.

Reading rules follow mermaid (mermaid.md §2.8, §3, §6): unknown keys are ignored
(and kept in ``raw``), optional fields may be absent or null, an unknown role
reads as System, an unknown kind as "unknown".  A document mermaid itself
would refuse (a required field missing or of the wrong type) raises
``Rejected`` with one line saying why.
"""

from __future__ import annotations

import itertools
import operator
import re
import time

from samctl.model import PARSE_LATER, ConversationMeta, Message, tool_calls_from_openai
from samctl.stores.mermaid import envelope
from samctl.stores.mermaid.eventlog import MERMAID_ID_RE
from samctl.timeparse import parse_timestamp

CONFLICT_RE = re.compile(r"([0-9]{8}_[0-9]{6}_[0-9]{3})\.\d+\.\d+\.conflict(\.jsonl)?\Z")  # a diverted writer's
TMP_RE = re.compile(r"\.(.+)\.\d+\.\d+\.tmp\Z")  # mermaid's temp files: .<name>.<pid>.<n>.tmp


def short_reason(exc: Exception) -> str:
    """The first line of an error, for a finding."""
    return str(exc).splitlines()[0][:160] if str(exc) else type(exc).__name__


ROLE_MAP = {"User": "user", "Assistant": "assistant", "Tool": "tool", "System": "system"}
KINDS = {"normal", "context_checkpoint", "run_summary", "continuation", "recovery_nudge", "context_marker"}


class Rejected(ValueError):
    """mermaid would refuse to load this document."""


def valid_id(text) -> bool:
    return isinstance(text, str) and MERMAID_ID_RE.match(text) is not None


def _need(doc: dict, key: str, kind, where: str = ""):
    if key not in doc:
        raise Rejected(f"{where}{key} is missing")
    v = doc[key]
    if not isinstance(v, kind) or isinstance(v, bool) and kind is not bool:
        raise Rejected(f"{where}{key} is {type(v).__name__}, not {getattr(kind, '__name__', kind)}")
    return v


def _need_ts(doc: dict, key: str, where: str = "") -> str:
    v = _need(doc, key, str, where)
    if parse_timestamp(v) is None:
        raise Rejected(f"{where}{key} {v[:40]!r} is not an RFC 3339 timestamp")
    return v


# Optional top-level fields and the JSON kinds serde accepts for them (mermaid.md §3; the same
# types the log's ``state``/``tasks`` events carry).  ``metadata``-like opaque values are
# not listed: any JSON is fine there.
_SNAPSHOT_OPTIONAL = (
    ("compactions", (list,)),
    ("input_history", (list,)),
    ("git_branch", (str, type(None))),
    ("safety_mode", (str, type(None))),
    ("plan", (dict, type(None))),
    ("advertised_context", (dict, type(None))),
    ("last_token_usage", (dict, type(None))),
    ("cumulative_token_usage", (dict,)),
    ("context_usage", (dict, type(None))),
    ("forked_from", (str, type(None))),
    ("parent_session", (str, type(None))),
    ("cli_version", (str, type(None))),
    ("git_sha", (str, type(None))),
    ("tasks", (dict,)),
)


def check_snapshot(doc) -> None:
    """Raise Rejected unless mermaid would deserialize ``doc`` as ConversationHistory.

    Checks what serde's typed parse checks: required fields, the JSON kind of
    every typed field (top level and each message, the same rules as the event
    log's), and serde_json's nesting limit.  The nesting is always walked: a walk
    costs per container, and a count of the text's brackets that could spare it
    costs per byte, more than the walk of any snapshot it spares.
    """
    if not isinstance(doc, dict):
        raise Rejected(f"top level is {type(doc).__name__}, not an object")
    _need(doc, "id", str)
    _need(doc, "title", str)
    msgs = _need(doc, "messages", list)
    _need(doc, "model_name", str)
    _need(doc, "project_path", str)
    _need_ts(doc, "created_at")
    _need_ts(doc, "updated_at")
    held = complete_messages(msgs)
    if held is None:  # some message is not as mermaid writes it: each by the full rules
        complete = envelope.complete_message
        for i, m in enumerate(msgs):
            if complete(m) and readable_time(m["timestamp"]):
                continue  # every field there and of its type: the checks below all pass
            where = f"messages[{i}]."
            if not isinstance(m, dict):
                raise Rejected(f"messages[{i}] is not an object")
            _need(m, "role", str, where)
            _need(m, "content", str, where)
            _need_ts(m, "timestamp", where)
            why = envelope.check_message(m, f"messages[{i}]")
            if why:
                raise Rejected(why)
    for key, kinds in _SNAPSHOT_OPTIONAL:
        if key in doc and type(doc[key]) not in kinds:
            raise Rejected(f"{key} is {envelope.json_type(doc[key])}, not {' or '.join(_KIND_NAMES[k] for k in kinds)}")
    hist = doc.get("input_history")
    if hist and any(type(h) is not str for h in hist):
        raise Rejected("input_history holds a value that is not a string")
    comps = doc.get("compactions")
    if comps and any(type(c) is not dict for c in comps):
        raise Rejected("compactions holds a value that is not an object")
    if _too_deep(doc, held):
        raise Rejected(f"nested deeper than serde_json's limit ({envelope.MAX_DEPTH} levels)")


def _too_deep(doc: dict, held: list | None) -> bool:
    """``deeper_than(doc, MAX_DEPTH)``.  ``held``: the values of the messages' fields that may be
    containers (level 4), if known (``complete_messages``): the walk then starts from them and the
    other top-level values, not from every field of every message."""
    limit = envelope.MAX_DEPTH
    if held is None:
        return envelope.deeper_than(doc, limit)
    rest = [v for k, v in doc.items() if k != "messages"]  # stands for the document: its values are level 2
    return envelope.deeper_than(rest, limit) or envelope.deeper_than(held, limit - 2)  # held: level 4


# The value types a complete message (every field of envelope.MESSAGE_FIELDS) may hold in each
# field, by check_message's rules (metadata: any JSON value), and the fields that hold containers.
_ANY_JSON = frozenset((dict, list, str, int, float, bool, type(None)))
_S, _S_N, _L_N = frozenset((str,)), frozenset((str, type(None))), frozenset((list, type(None)))
_FIELD_TYPES = {
    "role": _S,
    "content": _S,
    "timestamp": _S,
    "kind": _S,
    "metadata": _ANY_JSON,
    "actions": frozenset((list,)),
    "thinking": _S_N,
    "images": _L_N,
    "image_numbers": _L_N,
    "tool_calls": _L_N,
    "tool_call_id": _S_N,
    "tool_name": _S_N,
    "provider_continuation": frozenset((dict, type(None))),
}
_FIELDS = tuple((operator.itemgetter(k), kinds) for k, kinds in _FIELD_TYPES.items())
_HOLDERS = tuple(operator.itemgetter(k) for k, kinds in _FIELD_TYPES.items() if kinds & {dict, list})
_TIME = operator.itemgetter("timestamp")
_YEAR = operator.itemgetter(slice(0, 4))
_DICTS = {dict}


def complete_messages(msgs: list) -> list | None:
    """The values of ``msgs``' fields that may be containers if every item is a message with every
    field of its type and a readable time (``complete_message`` and ``readable_time`` pass each),
    else None.  Checked a field at a time across all messages, each in one C-level pass, and the
    times in one match: with the shorter depth walk this allows, a sixth less than a message at a time."""
    n = len(msgs)
    if set(map(type, msgs)) - _DICTS or sum(map(len, msgs)) != n * len(_FIELDS):
        return None
    try:  # each message has every field (a KeyError if not) and, by the count, no other
        for get, kinds in _FIELDS:
            if not kinds.issuperset(map(type, map(get, msgs))):
                return None
    except KeyError:
        return None
    times = list(map(_TIME, msgs))
    if not envelope.all_timestamps(times) or max(map(len, times)) > 1024 or "0000" in map(_YEAR, times):
        return None  # (the last two: what readable_time refuses)
    return list(itertools.chain.from_iterable(map(get, msgs) for get in _HOLDERS))


def readable_time(s: str) -> bool:
    """``parse_timestamp(s) is not None`` for a string ``envelope.is_timestamp`` passed, without
    parsing it (every message has its own timestamp, so a memo never hits): of those strings
    samctl's parser refuses only the year 0000 and those over 1024 characters."""
    return len(s) <= 1024 and not s.startswith("0000")


_KIND_NAMES = {list: "a list", dict: "an object", str: "a string", type(None): "null"}


def check_meta(doc) -> float:
    """The sidecar's ``updated_at`` as epoch seconds; raise Rejected unless mermaid
    would deserialize ``doc`` as ConversationMeta (one parse serves both)."""
    if type(doc) is not dict:
        raise Rejected(f"top level is {type(doc).__name__}, not an object")
    if type(doc.get("id")) is not str or type(doc.get("title")) is not str:
        _need(doc, "id", str)
        _need(doc, "title", str)
    ts = parse_timestamp(doc.get("updated_at"))
    if ts is None:
        _need_ts(doc, "updated_at")
    mc = doc.get("message_count")
    if mc is not None and (type(mc) is not int or mc < 0):
        raise Rejected("message_count is not a non-negative integer")
    for key in ("git_branch", "forked_from"):
        v = doc.get(key)
        if v is not None and type(v) is not str:
            raise Rejected(f"{key} is not a string or null")
    return ts


def created_from_id(cid: str) -> str:
    """The creation time encoded in a mermaid id (local wall clock, no zone)."""
    return f"{cid[0:4]}-{cid[4:6]}-{cid[6:8]}T{cid[9:11]}:{cid[11:13]}:{cid[13:15]}.{cid[16:19]}"


_OFFSET_RE = re.compile(r"(?:Z|([+-])(\d\d):(\d\d))\Z")


def foreign_offset(updated_at: str, updated_ts: float | None = None) -> int | None:
    """The UTC offset (seconds) of a sidecar's ``updated_at`` when it is not this machine's offset
    at that instant (the writer is in another zone, and its ids are read in that offset, see
    ``meta_from_meta``); None when it is ours, or cannot be told."""
    updated = parse_timestamp(updated_at) if updated_ts is None else updated_ts
    m = _OFFSET_RE.search(updated_at)
    if m is None or updated is None:
        return None
    offset = 0 if m[1] is None else (1 if m[1] == "+" else -1) * (int(m[2]) * 3600 + int(m[3]) * 60)
    return None if time.localtime(updated).tm_gmtoff == offset else offset


def meta_from_meta(doc: dict, path: str, size: int, updated_ts: float | None = None) -> ConversationMeta:
    """A listing row from a sidecar whose id the caller has checked against the id rule.

    A sidecar has no ``created_at``: the id is the creation time on the writer's wall clock, in
    the writer's zone, which the sidecar does not name.  Its ``updated_at`` carries the writer's
    offset at the last save.  When that is this machine's offset at that instant, the writer
    is taken to be in this machine's zone (the usual case: one machine), and the id is read in
    local time, across DST changes too; else in the ``updated_at`` offset, which is off by the
    difference if the writer's offset changed between creation and the last save.  ``created``
    gets the offset used, as the snapshot's ``created_at`` has one.
    """
    cid = doc["id"]
    created, created_ts = created_from_id(cid), _created_ts(cid)  # the id in local time
    used = None if created_ts is None else time.localtime(created_ts).tm_gmtoff
    offset = foreign_offset(doc["updated_at"], updated_ts)
    if offset is not None:  # written in another zone: its offset, not ours
        naive = parse_timestamp(created + "Z")
        created_ts, used = (None, None) if naive is None else (naive - offset, offset)
    if used is not None:
        created += f"{'-' if used < 0 else '+'}{abs(used) // 3600:02d}:{abs(used) % 3600 // 60:02d}"
    updated = parse_timestamp(doc["updated_at"]) if updated_ts is None else updated_ts
    m = ConversationMeta(
        "mermaid",
        cid,
        doc["title"],
        created,
        doc["updated_at"],
        created_ts,
        updated,
        doc.get("message_count") or 0,
        size,
        False,
        path,
    )
    m.branch = git_branch(doc)
    return m


def git_branch(doc: dict) -> str | None:
    """The git branch mermaid recorded for the session (sidecar or snapshot ``git_branch``), or None."""
    b = doc.get("git_branch")
    return b if isinstance(b, str) and b else None


def meta_from_snapshot(doc: dict, path: str, size: int) -> ConversationMeta:
    cid = doc["id"]
    return ConversationMeta(
        store="mermaid",
        id=cid,
        title=doc["title"],
        created=doc["created_at"],
        updated=doc["updated_at"],
        created_ts=parse_timestamp(doc["created_at"]),
        updated_ts=parse_timestamp(doc["updated_at"]),
        message_count=len(doc["messages"]),
        size=size,
        path=path,
        branch=git_branch(doc),
    )


_HOUR_STARTS: dict = {}


def _created_ts(cid: str):
    """The id's local wall-clock time as epoch seconds.

    time.mktime once per (date, hour) and zone, then minutes and seconds added: ids
    of one archive share few hours, and DST shifts fall on hour boundaries.
    """
    if not valid_id(cid):
        return None
    key = (cid[:11], time.timezone, time.altzone, time.tzname)  # (tzset may change the zone between calls)
    base = _HOUR_STARTS.get(key)
    if base is None:
        y, mo, d, h = int(cid[0:4]), int(cid[4:6]), int(cid[6:8]), int(cid[9:11])
        if not (1 <= mo <= 12 and 1 <= d <= 31 and h < 24):
            return None
        try:
            base = _HOUR_STARTS[key] = time.mktime((y, mo, d, h, 0, 0, 0, 0, -1))
        except (ValueError, OverflowError):
            return None
    mi, sec = int(cid[11:13]), int(cid[13:15])
    if mi > 59 or sec > 60:
        return None
    return base + mi * 60 + sec + int(cid[16:]) / 1000


def images(m: dict) -> list:
    """A message's ``images`` (base64 strings, mermaid.md §3) as model attachments: their decoded sizes."""
    v = m.get("images")
    return (
        [
            {"type": "image", "bytes": max(0, len(i) * 3 // 4 - min(2, len(i) - len(i.rstrip("="))))}
            for i in v
            if isinstance(i, str)
        ]
        if isinstance(v, list)
        else []
    )


def _kind(v) -> str:
    """A message's kind as samctl reads it: "normal" when absent or not a string, "unknown" when new."""
    if not isinstance(v, str):
        return "normal"
    return v if v in KINDS else "unknown"


def message(m: dict) -> Message:
    """The model message of a checked snapshot message (``check_snapshot`` passed it)."""
    get = m.get
    kind = _kind(get("kind"))
    thinking = get("thinking")
    tool_calls = get("tool_calls")
    tool_call_id = get("tool_call_id")
    tool_name = get("tool_name")
    actions = get("actions")
    ts = m["timestamp"]
    return Message(  # (by position, in MESSAGE_FIELDS order: keywords cost a tenth of an export)
        ROLE_MAP.get(m["role"], "system"),  # role
        m["content"],  # content
        ts,  # timestamp
        PARSE_LATER,  # timestamp_ts
        None,  # id
        tool_calls_from_openai(tool_calls) if tool_calls else [],  # tool_calls (nothing to read in a falsy value)
        tool_call_id if isinstance(tool_call_id, str) else None,  # tool_call_id
        tool_name if isinstance(tool_name, str) else None,  # tool_name
        None,  # tool_status
        thinking if isinstance(thinking, str) and thinking else None,  # reasoning
        kind,  # kind
        None,  # importance
        kind == "recovery_nudge",  # hidden
        False,  # marker
        False,  # pinned
        actions if isinstance(actions, list) else [],  # actions
        images(m) if get("images") else [],  # attachments (likewise)
        m,  # raw
    )


def message_rows(msgs: list, conversation_id: str, include_hidden: bool) -> list[dict]:
    """The JSON line of each message an export shows (``Message.to_dict`` after the conversation's id,
    store and the place among the messages shown) of a checked snapshot's ``msgs``, made without a
    Message: what ``message`` and ``to_dict`` make, field for field and in the same order (a fifth
    of an export was building Messages only to turn them into dicts; a test holds the two paths
    together)."""
    rows = []
    for m in msgs:
        get = m.get
        kind = _kind(get("kind"))
        hidden = kind == "recovery_nudge"
        if hidden and not include_hidden:
            continue
        d = {
            "conversation_id": conversation_id,
            "store": "mermaid",
            "seq": len(rows),
            "id": None,
            "role": ROLE_MAP.get(m["role"], "system"),
            "content": m["content"],
            "timestamp": m["timestamp"],
            "kind": kind,
        }
        v = get("tool_calls")
        if v:
            calls = tool_calls_from_openai(v)
            if calls:
                d["tool_calls"] = [{"id": t.id, "name": t.name, "arguments": t.arguments} for t in calls]
        v = get("tool_call_id")
        if isinstance(v, str):
            d["tool_call_id"] = v
        v = get("tool_name")
        if isinstance(v, str):
            d["tool_name"] = v
        v = get("thinking")
        if isinstance(v, str) and v:
            d["reasoning"] = v
        v = get("actions")
        if isinstance(v, list) and v:
            d["actions"] = v
        if get("images"):
            v = images(m)
            if v:
                d["attachments"] = v
        d["hidden"] = hidden
        d["pinned"] = False
        rows.append(d)
    return rows
