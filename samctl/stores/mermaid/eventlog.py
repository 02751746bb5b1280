"""Read and fold mermaid's per-session event log ``<id>.jsonl`` (mermaid.md §4, §4.4).

``parse_log`` never raises and keeps mermaid's prefix semantics (every valid envelope before the first bad
line); ``fold`` gives the snapshot mermaid would write and does not mutate its input.

Design notes: docs/stores.md, "stores/mermaid/eventlog.py".
"""

from __future__ import annotations

import re
import stat
import time
from dataclasses import dataclass, field
from datetime import datetime

import orjson

from samctl.errors import FileProblem, SamctlError
from samctl.fs import filemodes, reading
from samctl.gcpause import gc_paused
from samctl.said import Suggestion, said
from samctl.stores.base import FreshLog
from samctl.stores.mermaid.envelope import (
    BAD_UTF8,
    MAX_DEPTH,
    MESSAGE_FIELD_SET,
    check_envelope,
    parse_line,
    parse_rfc3339,
)
from samctl.timeparse import civil_from_days

__all__ = [
    "MERMAID_ID_RE",
    "ID_RE",
    "STOPS",
    "LogRead",
    "parse_log",
    "read_log_file",
    "read_log_bytes",
    "events_text",
    "torn_tail",
    "fold",
    "fold_file",
    "backfill_events",
    "normalize_message",
]

MERMAID_ID_RE = re.compile(r"[0-9]{8}_[0-9]{6}_[0-9]{3}\Z")  # the one definition of the id rule
ID_RE = MERMAID_ID_RE

FORMAT_VERSION = 1  # SESSION_EVENT_FORMAT_VERSION
INPUT_HISTORY_CAP = 100
TITLE_BYTES = 60
IMAGE_MARKER = "\n[screenshot not persisted]"  # 0.25.0's text (0.26+: "[tool image not persisted]")

STOPS = (None, "torn-tail", "malformed", "newer-format", "headerless", "empty", "invalid-utf8", "too-large")


ROLES = frozenset({"User", "Assistant", "System", "Tool"})
KINDS = frozenset(
    {"normal", "context_checkpoint", "run_summary", "continuation", "recovery_nudge", "context_marker", "unknown"}
)
SCALARS = (
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
)


def _zero_usage() -> dict:
    return {
        "prompt_tokens": 0,
        "completion_tokens": 0,
        "cached_input_tokens": 0,
        "cache_creation_input_tokens": 0,
        "reasoning_output_tokens": 0,
    }


def _empty_tasks() -> dict:
    return {"tasks": [], "next_id": 0}


def _local_minute(secs: int, tz) -> tuple[int, int, int, int, int]:
    """(year, month, day, hour, minute) of ``secs`` in ``tz`` (None: the process's local zone)."""
    off = 0
    try:
        if tz is None:
            t = time.localtime(secs)
            return t.tm_year, t.tm_mon, t.tm_mday, t.tm_hour, t.tm_min
        dt = datetime.fromtimestamp(secs, tz)
        return dt.year, dt.month, dt.day, dt.hour, dt.minute
    except (OverflowError, OSError, ValueError):
        # Outside the platform's clock range: a fixed zone's offset, else UTC.
        delta = tz.utcoffset(None) if tz is not None else None
        off = int(delta.total_seconds()) if delta is not None else 0
    days, rem = divmod(secs + off, 86400)
    y, mo, d = civil_from_days(days)
    return y, mo, d, rem // 3600, rem % 3600 // 60


def _session_title(created_at: str, tz) -> str:
    """``Session <created_at in local time, %Y-%m-%d %H:%M>`` (ConversationHistory::new)."""
    secs = parse_rfc3339(created_at)[0]
    y, mo, d, hh, mm = _local_minute(secs, tz)
    year = f"{y:04d}" if 0 <= y <= 9999 else (f"+{y}" if y > 0 else f"-{-y:04d}")  # chrono's %Y
    return f"Session {year}-{mo:02d}-{d:02d} {hh:02d}:{mm:02d}"


# --- reading ----------------------------------------------------------------------


@dataclass(slots=True)
class LogRead:
    """The outcome of reading one event log (see the module docstring for ``events``).

    ``stop`` is None (clean end) or one of STOPS: "torn-tail" (the last line has
    no ``\\n``), "malformed" (a line that is not a valid envelope), "invalid-utf8"
    (mermaid's hard read error; the events before it are kept), "newer-format"
    (a valid line with v > 1 before any bad line: the whole log is refused),
    "headerless" (the first event is not ``started``), "empty" (no bytes),
    "too-large" (over the cap: never read). ``stop_line`` is 0-based and
    ``stop_offset`` the byte where that line starts. ``last_newline_offset`` is
    the offset just after the last ``\\n`` (where to cut a torn tail).
    ``tail_complete`` is True when the unterminated last line is itself a valid
    event: mermaid reads it (it is in ``events``), but mermaid's next append
    would glue onto it, so a repair should add the ``\\n`` rather than cut.
    """

    events: list = field(default_factory=list)
    stop: str | None = None
    stop_line: int | None = None
    stop_offset: int | None = None
    reason: str = ""
    size: int = 0
    last_newline_offset: int = 0
    tail_complete: bool = False

    @property
    def usable(self) -> bool:
        """True if the events fold: some were read, the first is ``started``, and the log is not refused."""
        return bool(self.events) and self.events[0]["event"]["type"] == "started"

    @property
    def torn(self) -> bool:
        """True if the data does not end with ``\\n`` (whatever ``stop`` says)."""
        return self.stop != "too-large" and self.size > self.last_newline_offset


def torn_tail(data: bytes) -> int | None:
    """The offset just after the last ``\\n`` if ``data`` does not end with one, else None."""
    if not data or data.endswith(b"\n"):
        return None
    return data.rfind(b"\n") + 1


def parse_log(data: bytes) -> LogRead:
    """Read a whole log from its bytes (pure; never raises)."""
    with gc_paused():
        return _parse_log(data)


_NOT_OPENING_NOR_NEWLINE = bytes(b for b in range(256) if b not in b"[{\n")


def _parse_log(data: bytes) -> LogRead:
    size = len(data)
    read = LogRead(size=size, last_newline_offset=data.rfind(b"\n") + 1)
    if not data:
        read.stop, read.reason = "empty", "the log is empty"
        return read
    lines = data.split(b"\n")
    tail = lines.pop()  # b"" when the data ends with a newline
    events = read.events
    offset = 0
    loads, check = orjson.loads, check_envelope
    # Each line's opening brackets counted in one pass over the bytes (not two counts a line): a line
    # with at most MAX_DEPTH of them cannot nest deeper, so when none has more, none is counted again.
    shallow = max(map(len, data.translate(None, _NOT_OPENING_NOR_NEWLINE).split(b"\n"))) <= MAX_DEPTH
    for n, line in enumerate(lines):
        # parse_line inlined for the usual line (shallow, JSON): one call less per line.
        if shallow or line.count(b"[") + line.count(b"{") <= MAX_DEPTH:
            try:
                obj = loads(line)
                why = check(obj)
            except (ValueError, RecursionError):
                obj, why = parse_line(line)  # the reason, worded as for any bad line
        else:
            obj, why = parse_line(line)
        if why is not None:
            if why is BAD_UTF8:
                _stop(
                    read,
                    "invalid-utf8",
                    n,
                    offset,
                    f"line {n + 1} at byte {offset} is not valid UTF-8 (a read error for mermaid)",
                )
            else:
                _stop(read, "malformed", n, offset, f"line {n + 1} at byte {offset} is malformed: {why}")
            return _check_header(read)
        if obj["v"] > FORMAT_VERSION:
            return _refuse(read, n, offset, obj["v"])
        events.append(obj)
        offset += len(line) + 1
    if tail:
        n = len(lines)
        obj, why = parse_line(tail)
        if why is None and obj["v"] > FORMAT_VERSION:
            return _refuse(read, n, offset, obj["v"])
        if why is None:
            # mermaid's line reader yields an unterminated last line like any other.
            events.append(obj)
            read.tail_complete = True
            note = "it is a complete event, but mermaid's next append would glue onto it"
        else:
            note = "mermaid stops reading there"
        _stop(read, "torn-tail", n, offset, f"torn tail at byte {offset}: last line has no newline ({note})")
    return _check_header(read)


def _stop(read: LogRead, code: str, n: int, offset: int, reason: str) -> None:
    read.stop, read.stop_line, read.stop_offset, read.reason = code, n, offset, reason


def _refuse(read: LogRead, n: int, offset: int, v: int) -> LogRead:
    read.events = []
    read.tail_complete = False
    _stop(
        read,
        "newer-format",
        n,
        offset,
        f"line {n + 1} was written by a newer mermaid (v={v}): the whole log is refused",
    )
    return read


def _check_header(read: LogRead) -> LogRead:
    if read.events and read.events[0]["event"]["type"] != "started":
        first = read.events[0]["event"]["type"]
        also = f"; also {read.reason}" if read.reason else ""
        _stop(read, "headerless", 0, 0, f"the first event is {first!r}, not 'started': nothing to fold{also}")
    elif read.stop is None:
        read.reason = f"{len(read.events)} events, clean end"
    return read


def read_log_file(path, cap: int = reading.LOG_CAP) -> LogRead:
    """Read ``path`` with mermaid's rules: over ``cap`` -> "too-large" without reading.

    Raises FileProblem (missing, symlink, not-regular, unreadable) as
    ``reading.read_capped`` does.
    """
    return read_log_bytes(path, cap)[0]


def read_log_bytes(path, cap: int = reading.LOG_CAP) -> tuple[LogRead, bytes]:
    """``read_log_file`` and the bytes it read (b"" when too large): for a reader that looks at
    the text again (check's duplicate-key scan) without reading the file twice."""
    st = filemodes.lstat(path)
    if st is not None and stat.S_ISREG(st.st_mode) and st.st_size > cap:
        return _too_large(st.st_size, cap), b""
    try:
        data = reading.read_capped(path, cap)
    except FileProblem as exc:
        if exc.code != "too-large":
            raise
        st = filemodes.lstat(path)
        return _too_large(st.st_size if st is not None else cap + 1, cap), b""  # it grew while we read
    return parse_log(data), data


def events_text(read: LogRead, data: bytes) -> bytes:
    """The part of ``data`` whose lines ``read.events`` are (the first ``len(read.events)`` lines;
    newlines between them)."""
    n = len(read.events)
    if read.stop is None or (read.stop == "torn-tail" and read.tail_complete):
        return data  # every line is an event (a trailing newline adds no line)
    if read.stop in ("malformed", "invalid-utf8", "torn-tail"):
        return data[: read.stop_offset]  # the lines before the one reading stopped at
    return b"\n".join(data.split(b"\n", n)[:n])


def _too_large(size: int, cap: int) -> LogRead:
    return LogRead(
        stop="too-large",
        size=size,
        reason=f"{size} bytes is over the {cap}-byte cap: not read (mermaid treats it as no log)",
    )


# --- folding ----------------------------------------------------------------------


def normalize_message(m: dict) -> dict:
    """A ChatMessage as mermaid re-saves it: every field, defaults filled,
    an unknown role as "System", an unknown kind as "unknown". Keys of newer builds are kept
    after the known ones. ``actions`` is a new list (folding appends to it).
    """
    if m.keys() == MESSAGE_FIELD_SET and m["role"] in ROLES and m["kind"] in KINDS:
        # What mermaid itself wrote (every field, known role and kind): a copy is enough, as
        # writers sort keys anyway. Most messages of a log take this path.
        out = m.copy()
        out["actions"] = list(m["actions"])
        return out
    kind = m.get("kind", "normal")
    out = {
        "role": m["role"] if m["role"] in ROLES else "System",
        "content": m["content"],
        "timestamp": m["timestamp"],
        "kind": kind if kind in KINDS else "unknown",
        "metadata": m.get("metadata"),
        "actions": list(m.get("actions") or ()),
        "thinking": m.get("thinking"),
        "images": m.get("images"),
        "image_numbers": m.get("image_numbers"),
        "tool_calls": m.get("tool_calls"),
        "tool_call_id": m.get("tool_call_id"),
        "tool_name": m.get("tool_name"),
        "provider_continuation": m.get("provider_continuation"),
    }
    for k, v in m.items():
        if k not in out:
            out[k] = v
    return out


def _title_preview(content: str) -> str:
    """The first user message as a title: over 60 bytes, cut at a char boundary and add "..."."""
    b = content.encode("utf-8", "surrogatepass")
    if len(b) <= TITLE_BYTES:
        return content
    end = TITLE_BYTES
    while end > 0 and b[end] & 0xC0 == 0x80:  # back off a UTF-8 continuation byte
        end -= 1
    return b[:end].decode("utf-8", "surrogatepass") + "..."


_RUST_WHITESPACE = (
    "\t\n\x0b\x0c\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008"
    "\u2009\u200a\u2028\u2029\u202f\u205f\u3000"
)  # char::is_whitespace (Python's adds \x1c-\x1f)


def _add_input(history: list, text: str) -> None:
    if not text.strip(_RUST_WHITESPACE):
        return
    if history and history[-1] == text:
        return
    if len(history) >= INPUT_HISTORY_CAP:
        del history[0]
    history.append(text)


def _new_conversation(started: dict, tz) -> dict:
    created = started["created_at"]
    return {
        "id": started["session_id"],
        "title": _session_title(created, tz),
        "messages": [],
        "model_name": started["model_id"],
        "project_path": started["project_path"],
        "created_at": created,
        "updated_at": created,
        "compactions": [],
        "input_history": [],
        "git_branch": None,
        "safety_mode": None,
        "plan": None,
        "advertised_context": None,
        "last_token_usage": None,
        "cumulative_token_usage": _zero_usage(),
        "context_usage": None,
        "forked_from": started.get("forked_from"),
        "parent_session": started.get("parent_session"),
        "cli_version": None,
        "git_sha": None,
        "tasks": _empty_tasks(),
    }


def fold(events: list, local_tz=None) -> dict | None:
    """Fold validated envelopes (``LogRead.events``) into a snapshot document (mermaid.md §4.2).

    None when there are no events, the first is not ``started``, or its
    session id is not a valid mermaid id. ``local_tz`` (a tzinfo; default the
    process's local zone) is only used for the provisional "Session ..." title.
    """
    with gc_paused():
        return _fold(events, local_tz)


def _fold(events: list, local_tz) -> dict | None:
    if not events:
        return None
    first = events[0]["event"]
    if first["type"] != "started" or not MERMAID_ID_RE.match(first["session_id"]):
        return None
    doc = _new_conversation(first, local_tz)
    msgs = doc["messages"]
    for env in events[1:]:
        ev = env["event"]
        t = ev["type"]
        if t == "message":
            m = normalize_message(ev["message"])
            msgs.append(m)
            doc["updated_at"] = m["timestamp"]
            if doc["title"].startswith("Session "):
                user = next((x for x in msgs if x["role"] == "User"), None)
                if user is not None:
                    doc["title"] = _title_preview(user["content"])
        elif t == "action":
            if msgs and msgs[-1]["role"] == "Assistant":
                msgs[-1]["actions"].append(ev["action"])
        elif t == "state":
            doc.update(zip(SCALARS, map(ev.get, SCALARS)))  # every field: an absent one becomes null
            if doc["cumulative_token_usage"] is None:
                doc["cumulative_token_usage"] = _zero_usage()
        elif t == "tasks":
            doc["tasks"] = ev["store"]
        elif t == "input":
            _add_input(doc["input_history"], ev["text"])
        elif t == "inserted_before_last":
            msgs.insert(max(len(msgs) - 1, 0), normalize_message(ev["message"]))
        elif t == "reset":
            msgs = doc["messages"] = [normalize_message(m) for m in ev["messages"]]
            doc["updated_at"] = ev["at"]
        elif t == "compaction":
            msgs = doc["messages"] = [normalize_message(m) for m in ev["replacement"]]
            doc["compactions"].append(ev["record"])
            doc["updated_at"] = ev["at"]
        elif t == "image":
            if msgs and msgs[-1]["role"] == "Assistant":
                msgs[-1]["images"] = [*(msgs[-1]["images"] or ()), ev["data"]]
        # "started" after the first event is ignored (a corrupt concatenation must not reset identity)
    return doc


def fold_file(path, cap: int = reading.LOG_CAP, local_tz=None) -> tuple[dict | None, LogRead]:
    """``read_log_file`` then ``fold`` when the read is usable."""
    read = read_log_file(path, cap)
    return (fold(read.events, local_tz) if read.usable else None), read


# --- backfill (writer side, mermaid.md §4.3) ----------------------------------------------


def _strip_tool_images(m: dict) -> dict:
    """Non-User images are not persisted: images := null plus the marker (not doubled)."""
    if m["role"] == "User" or m["images"] is None:
        return m
    m = dict(m, images=None)
    if not m["content"].endswith(IMAGE_MARKER):
        m["content"] += IMAGE_MARKER
    return m


def backfill_events(snapshot: dict, ts: str) -> list[dict]:
    """The envelopes mermaid writes when it creates a log from ``snapshot`` (mermaid.md §4.3).

    ``started``, ``reset`` (only if there are messages), one ``input`` per history
    entry, ``state``, ``tasks``; seq from 0, all sharing ``ts``. Optional payload
    fields are omitted when null (mermaid.md §0.2). Folding the result gives back the
    snapshot except ``compactions`` (a log cannot carry earlier compaction records).
    """
    s = snapshot
    started = {
        "type": "started",
        "session_id": s["id"],
        "project_path": s["project_path"],
        "model_id": s["model_name"],
        "created_at": s["created_at"],
    }
    for k in ("forked_from", "parent_session"):
        if s.get(k) is not None:
            started[k] = s[k]
    out = [started]
    if s.get("messages"):
        out.append(
            {
                "type": "reset",
                "at": s["updated_at"],
                "messages": [_strip_tool_images(normalize_message(m)) for m in s["messages"]],
            }
        )
    out.extend({"type": "input", "text": text} for text in s.get("input_history") or ())
    state = {"type": "state", "title": s["title"], "model_name": s["model_name"]}
    for k in SCALARS[2:]:
        if k == "cumulative_token_usage":
            state[k] = s.get(k) or _zero_usage()  # always written
        elif s.get(k) is not None:
            state[k] = s[k]
    out.append(state)
    out.append({"type": "tasks", "store": s.get("tasks") or _empty_tasks()})
    return [{"v": FORMAT_VERSION, "seq": i, "ts": ts, "event": e} for i, e in enumerate(out)]


def _without_compactions(doc: dict) -> dict:
    return {k: v for k, v in doc.items() if k != "compactions"}


def fresh_log(data: bytes):
    """``data`` (a whole log) as exactly mermaid's own backfill of its fold (``started``, ``reset``,
    ``input``, ``state``, ``tasks``): the same conversation but for its ``compactions`` records, which a
    backfill has no place for.  SamctlError when the log is not clean or would not fold the same."""
    from samctl.stores.mermaid import encode  # (lazy: not loaded by ls or --help)

    read = parse_log(data)
    if read.stop is not None or not read.usable:
        raise SamctlError(
            said(f"the log is not clean ({read.reason}); `", Suggestion("check"), "` says more; left alone")
        )
    doc = fold(read.events)
    if doc is None:
        raise SamctlError("the log does not fold; left alone")
    events = backfill_events(doc, read.events[-1]["ts"])
    new = b"".join(encode.log_line_bytes(e) for e in events)
    again = parse_log(new)
    if again.stop is not None or _without_compactions(fold(again.events) or {}) != _without_compactions(doc):
        raise SamctlError("a backfill would not fold to the same conversation; left alone")
    return FreshLog(new, len(read.events), len(events), doc.get("title"))
