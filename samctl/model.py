"""The format-neutral model both stores decode into.

Invariants:
- ``raw`` always holds the decoded document as it was stored (dicts and lists
  straight from the JSON parser), so writers can round-trip losslessly; model
  fields are a read-only view of it.
- Timestamps are kept as the original strings (``created``/``updated``/
  ``timestamp``); ``*_ts`` are the same instants as float epoch seconds (or
  None when absent/unparseable) for sorting and filtering only.
- ``Message.role`` is one of ROLES.
"""

from __future__ import annotations

import os
import stat
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from samctl.errors import SamctlError
from samctl.fs import filemodes, safepaths
from samctl.safetext import safe_text
from samctl.said import BIGGER_CAP, said
from samctl.timeparse import format_utc, parse_timestamp

ROLES = ("user", "assistant", "tool", "reasoning", "system")

ERROR = "error"
WARNING = "warning"
INFO = "info"


# Info findings about a record type, content part, role or table samctl does not know (a newer app version
# wrote it; it is kept and shown with --all): not a problem of the file, so ``check`` reports them and the
# reading commands say them only under -v.
UNKNOWN_KIND = frozenset({"unknown-type", "unknown-content", "unknown-part", "unknown-role", "unknown-table"})


@dataclass(slots=True)
class Finding:
    """One problem found in a store: a stable code, where, and one line of why."""

    code: str
    path: str
    reason: str
    severity: str = ERROR
    conversation: str | None = None

    def to_dict(self) -> dict:
        d = {"code": self.code, "severity": self.severity, "path": _shown(self.path), "reason": self.reason}
        if self.conversation:
            d["conversation"] = self.conversation
        return d

    def line(self, reason: str | None = None) -> str:
        """``severity: code: path: reason`` on one line, every control character escaped: the path is a file
        name from the store and the reason may quote the file, and the line goes to a terminal.  ``reason``:
        the reason as the cli renders it (its suggested commands with their --root, samctl.said)."""
        why = self.reason if reason is None else reason
        return safe_text(f"{self.severity}: {self.code}: {_shown(self.path)}: {why}", lines=False)


def _shown(path) -> str:
    """An absolute path by samctl's one rule (``safepaths.shown``); anything else as it is (a path built
    from a relative --root already is relative to the current folder; some "paths" are ids)."""
    return safepaths.shown(path) if isinstance(path, str) and os.path.isabs(path) else path


@dataclass(slots=True)
class ConversationMeta:
    store: str
    id: str
    title: str
    created: str | None = None
    updated: str | None = None
    created_ts: float | None = None
    updated_ts: float | None = None
    message_count: int | None = None
    size: int | None = None
    pinned: bool = False
    path: str = ""
    active_ts: float | None = None  # the newest message time, where it can be later than updated_ts (SAM)
    project: str | None = None  # the folder the session worked in (the app's own record of it), or None
    branch: str | None = None  # the git branch the app recorded for the session, or None
    continues: str | None = None  # the id of the session whose history this one copies (a resume), or None
    model: str | None = None  # the model the listing knows of (``stats --by model``), or None
    copied_messages: int = 0  # of message_count, how many are copies of the continued session's (stats skips them)
    # ``listed_json(self)`` as a store's listing cache held it (None: made from the fields when asked);
    # a store sets it only on a meta whose fields are those it was made from
    json_row: str | None = field(default=None, compare=False, repr=False)

    def to_dict(self, count_key: str = "messages") -> dict:
        """The meta in samctl's JSON (docs/json.md); the message count under ``count_key`` (ls and search
        rows call it ``message_count``, ``messages`` being only ever a list there)."""
        return {
            "id": self.id,
            "title": self.title,
            "created": self.created,
            "updated": self.updated,
            "last_activity": format_utc(last_activity(self)),  # what ls orders and filters by
            count_key: self.message_count,
            "size": self.size,
            "pinned": self.pinned,
            "store": self.store,
            "path": self.path,
            "project": self.project,
            "branch": self.branch,
            "continues": self.continues,
        }


def listed_json(m: ConversationMeta) -> str | None:
    """``m``'s row in ``ls --format jsonl`` (``to_dict("message_count")``) as JSON text, or None when
    orjson refuses it as it is (a lone surrogate: the JSON writer's own fallback makes that row)."""
    try:
        return orjson.dumps(m.to_dict("message_count")).decode()
    except TypeError:
        return None


def last_activity(m: ConversationMeta) -> float | None:
    """When the conversation was last updated or messaged in (SAM's ``updated`` is not touched by
    message traffic, docs/formats/sam.md §4.1; mermaid's ``updated_at`` already is the last message), or None."""
    if m.active_ts is None:
        return m.updated_ts
    return m.active_ts if m.updated_ts is None or m.active_ts > m.updated_ts else m.updated_ts


def recency(m: ConversationMeta) -> float:
    """The order of a listing, newest first when reversed: last activity, else created, else 0."""
    a, u = m.active_ts, m.updated_ts  # (last_activity, written out: a listing sorts by this)
    t = a if u is None or (a is not None and a > u) else u
    return t if t is not None else (m.created_ts or 0.0)


@dataclass(slots=True)
class ToolCall:
    id: str | None
    name: str
    arguments: Any  # a JSON string (SAM) or any JSON value (mermaid)


def tool_calls_from_openai(v) -> list[ToolCall]:
    """Tool calls in the OpenAI shape both stores keep (``[{"id", "function": {"name", "arguments"}}]``),
    leniently: entries that are not objects are skipped, a missing name reads as "?"."""
    out = []
    if isinstance(v, list):
        for tc in v:
            if isinstance(tc, dict):
                fn = tc.get("function")
                if not isinstance(fn, dict):
                    fn = {}
                name = fn.get("name")
                out.append(
                    ToolCall(
                        tc.get("id") if isinstance(tc.get("id"), str) else None,
                        name if isinstance(name, str) else "?",
                        fn.get("arguments"),
                    )
                )
    return out


# ``Message(..., timestamp_ts=PARSE_LATER)``: the number is parsed from ``timestamp`` when first read.
# An export to JSON never reads it, and parsing every message's time was a fifth of a mermaid export.
PARSE_LATER = float("nan")  # (a float, so the field keeps its type; compared by identity, never by value)


@dataclass(slots=True)
class Message:
    role: str
    content: str
    timestamp: str | None = None
    timestamp_ts: float | None = None
    id: str | None = None
    tool_calls: list[ToolCall] = field(default_factory=list)
    tool_call_id: str | None = None
    tool_name: str | None = None
    tool_status: str | None = None
    reasoning: str | None = None
    kind: str | None = None  # store-specific sub-kind (mermaid ``kind``, SAM ``type``)
    importance: float | None = None  # as stored; None when the store has none
    hidden: bool = False  # what the owning app's UI hides (system-generated, empty)
    marker: bool = False  # a line samctl adds to show the conversation's shape (a side branch starts, turns
    # were rolled back): shown, but no text of the app's, so never a search row
    pinned: bool = False
    actions: list = field(default_factory=list)  # mermaid tool runs attached to an assistant message
    attachments: list = field(default_factory=list)  # {"type": image|video|audio|text, "url"|"text"|"bytes"}
    raw: Any = None
    copied: bool = False  # a copy of a message of the session this one continues (a resume copies history)
    exit_code: int | None = None  # a tool result's exit code, where the app records one
    duration: float | None = None  # a tool result's wall time in seconds, where the app records one

    def __post_init__(self) -> None:
        if self.timestamp_ts is PARSE_LATER:
            del self.timestamp_ts  # (an unset slot: reading it calls __getattr__)

    if not TYPE_CHECKING:  # (hidden from mypy, which would otherwise accept any attribute of a Message)

        def __getattr__(self, name: str):
            """Only reached for an unset slot: ``timestamp_ts`` left to be parsed (``PARSE_LATER``)."""
            if name != "timestamp_ts":
                raise AttributeError(name)
            ts = self.timestamp_ts = parse_timestamp(self.timestamp)
            return ts

    def to_dict(self, d: dict | None = None) -> dict:
        """samctl's JSON model of the message (docs/json.md), its keys after those of ``d`` if given
        (filled in place: an export's row starts with its conversation and place)."""
        if d is None:
            d = {}
        d["id"] = self.id
        d["role"] = self.role
        d["content"] = self.content
        d["timestamp"] = self.timestamp
        d["kind"] = self.kind
        if self.tool_calls:
            d["tool_calls"] = [{"id": t.id, "name": t.name, "arguments": t.arguments} for t in self.tool_calls]
        if self.tool_call_id is not None:
            d["tool_call_id"] = self.tool_call_id
        if self.tool_name is not None:
            d["tool_name"] = self.tool_name
        if self.tool_status is not None:
            d["tool_status"] = self.tool_status
        if self.reasoning:
            d["reasoning"] = self.reasoning
        if self.importance is not None:
            d["importance"] = self.importance
        if self.actions:
            d["actions"] = self.actions
        if self.attachments:
            d["attachments"] = self.attachments
        if self.exit_code is not None:
            d["exit_code"] = self.exit_code
        if self.duration is not None:
            d["duration_seconds"] = self.duration
        if self.copied:
            d["copied"] = True
        d["hidden"] = self.hidden
        d["pinned"] = self.pinned
        return d


# Message's first fields, in order: the decoders of the stores read most (SAM, mermaid) pass them by position,
# since 16 keywords cost about 1 us a message in CPython 3.11, a tenth of an export (tests/stores/
# test_message_fields.py holds the order and what each decoder puts where).
MESSAGE_FIELDS = (
    "role",
    "content",
    "timestamp",
    "timestamp_ts",
    "id",
    "tool_calls",
    "tool_call_id",
    "tool_name",
    "tool_status",
    "reasoning",
    "kind",
    "importance",
    "hidden",
    "marker",
    "pinned",
    "actions",
    "attachments",
    "raw",
)


@dataclass(slots=True)
class Conversation:
    meta: ConversationMeta
    messages: list[Message]
    raw: Any = None
    model: str | None = None
    source: str = ""  # which file the conversation came from (snapshot, log fold, ...)
    resume: dict | None = None  # the app's command to resume it ({"argv", "command", "cwd"}), set by core

    def to_dict(self) -> dict:
        d = self.meta.to_dict()
        d["model"] = self.model
        d["source"] = self.source
        d["resume"] = self.resume
        d["messages"] = [m.to_dict() for m in self.messages]
        d["message_count"] = len(self.messages)
        return d


# --- recovery: what a store plans, and core carries out (core/recover.py) ---------------------------

CAP_HINT = said("a file is over samctl's read cap: ", BIGGER_CAP)


def over_cap(text: str) -> bool:
    """Whether ``text`` (a message or finding) says a file was skipped for its size (``reading.read_capped``)."""
    return "-byte cap" in text


def refuse_over_cap(path: Path, cap: int, app: str) -> None:
    """NothingToRecover if ``path`` is a file bigger than the read cap ``cap`` while ``app`` would
    read it: samctl cannot tell whether it is damaged, and must not replace it with an older copy."""
    st = filemodes.lstat(path)
    if st is not None and stat.S_ISREG(st.st_mode) and st.st_size > cap:
        raise NothingToRecover(
            f"{path} is {st.st_size} bytes, over samctl's {cap}-byte cap, so samctl cannot "
            f"read it; {app} can, and it is left as it is"
        )


class NothingToRecover(SamctlError):
    """No source holds anything of the conversation.  When a file was only skipped for its size,
    the hint says how to read it rather than where else to look."""

    def __init__(self, message: str, hint: str | None = None):
        super().__init__(message, hint=CAP_HINT if over_cap(message) else hint)


@dataclass
class RecoveryPlan:
    cid: str
    target: Path
    source: str
    new_bytes: bytes | None  # None: the file is already right
    sidecars: list = field(default_factory=list)  # (path, bytes) written after the main file
    changes: list = field(default_factory=list)
    messages_before: int | None = None
    messages_after: int | None = None
    tail: Any = None  # a logtail.TailRepair: the torn tail of a log to cut first
    set_aside: list = field(default_factory=list)  # files the document now holds: become .bak siblings, last
    partial: list = field(default_factory=list)  # what stays broken after the recovery (the command exits 3)
    written: list = field(default_factory=list)
    warnings: list = field(default_factory=list)  # Findings: a dry run's word that the real run would be refused
    repaired: list = field(default_factory=list)  # interrupted moves settled first (lines)
    in_place_only: list = field(default_factory=list)  # lines of ``changes`` that only an in-place recovery makes

    def change_in_place(self, line: str) -> None:
        """Say a change to the store beside the document (a log's tail, a sidecar, a file set aside)."""
        self.changes.append(line)
        self.in_place_only.append(line)

    def document_only(self) -> None:
        """What ``--to`` carries out: the document alone, written elsewhere; the store stays as it is."""
        if self.tail is None and not self.sidecars and not self.set_aside and not self.in_place_only:
            return
        self.tail, self.sidecars, self.set_aside = None, [], []
        self.changes = [c for c in self.changes if c not in self.in_place_only]
        self.changes.append(
            "the store is left as it is (--to writes only the document; recover in place to repair the rest)"
        )
        self.in_place_only = []

    @property
    def nothing_to_do(self) -> bool:
        return self.new_bytes is None and not self.sidecars and self.tail is None and not self.set_aside

    def to_dict(self) -> dict:
        return {
            "id": self.cid,
            "target": str(self.target),
            "source": self.source,
            "messages_before": self.messages_before,
            "messages_after": self.messages_after,
            "changes": self.changes,
            "rewrites": self.new_bytes is not None,
            "sidecars": [str(p) for p, _ in self.sidecars],
            "set_aside": [str(p) for p in self.set_aside],
            "trim_log": None
            if self.tail is None
            else {"log": str(self.tail.log), "keep_bytes": self.tail.offset, "add_newline": self.tail.add_newline},
            "written": [str(p) for p in self.written],
            "left_broken": self.partial,
            "findings": [f.to_dict() for f in self.warnings],
            "repaired": self.repaired,
        }


def title_key(text: str) -> str:
    """What ``--title`` compares: casefolded and NFC-normalised, as ``search --exact`` does (a
    decomposed "résumé" typed on one system finds the precomposed one stored by another)."""
    low = text.casefold()
    return low if low.isascii() else unicodedata.normalize("NFC", low)
