"""Sources: what a store's searchable rows are read from, and the signatures that tell a change.

A **source** is one unit of rows: a file (SAM's ``memory.db``), or a conversation's files together
(mermaid's snapshot + log).  Its key names it in the search index's manifest; its signature is
``size:mtime_ns:inode:ctime_ns`` per file, ``-`` for an absent one, joined by ``|``.  Stores find
their sources (``Store.search_sources``) with one ``lstat`` per file and never read one; a file that
cannot be stat'ed, or is not a regular file, is a finding instead of a source.
"""

from __future__ import annotations

import os
import stat
import time
from typing import NamedTuple

from samctl.fs import filemodes
from samctl.importance import message_importance
from samctl.model import ERROR, Finding
from samctl.stores.metacache import RACY_SECONDS

TRANSIENT_CODES = frozenset(
    {"db-locked", "db-hot-journal", "unreadable", "missing", "too-large"}
)  # (over this run's --max-file-size: the next may read it)
HOLDS = ("messages", "memories", "archived")  # what a source's rows are


class Source(NamedTuple):
    key: str  # unique in the store: "<folder>/memory.db", "<mermaid id>", ...
    kind: str  # the store's own label for this kind of source (kept in the index manifest)
    paths: tuple
    sig: str  # "size:mtime_ns:inode:ctime_ns" per path, "-" for an absent one, joined by "|"
    conv: str | None  # the conversation/scope its rows belong to (None: each row says)
    trusted: bool = True  # False: modified within RACY_SECONDS; read it again next time
    holds: str = "messages"  # one of HOLDS


class Row(NamedTuple):
    """One searchable text a store yields (``Store.source_rows``)."""

    kind: str  # "message", "memory", "archived" (a message the conversation no longer has)
    role: str  # a model role; "" for a memory
    content_type: str | None  # a memory's content type (SAM); None otherwise
    conversation: str  # the conversation (or memory scope) it belongs to
    position: int  # where it sits: its index among the messages, a memory's rowid, ...
    date: float | None  # epoch seconds
    importance: float
    dimension: int  # a memory's stored vector dimension; 0 for none
    ref: str  # its own id ("" when it has none)
    text: str
    calls: tuple = ()  # the message's tool calls: (name, arguments, call id) each, arguments as stored


def message_rows(conv, cid: str):
    """The rows of a conversation's messages: every message with text or tool calls, at its index
    (samctl's own markers of the conversation's shape are not rows)."""
    for i, m in enumerate(conv.messages):
        if (m.content.strip() or m.tool_calls) and not m.marker:
            calls = tuple((t.name, t.arguments, t.id) for t in m.tool_calls)
            yield Row(
                "message", m.role, None, cid, i, m.timestamp_ts, message_importance(m), 0, m.id or "", m.content, calls
            )


def unstattable(path: str, exc: OSError, conv) -> Finding:
    return Finding("unreadable", path, f"cannot stat: {exc.strerror}", ERROR, conv)


def not_regular(path: str, mode: int, conv) -> Finding:
    return Finding("not-regular", path, f"is {filemodes.describe_mode(mode)}, not a file", ERROR, conv)


def utf8_name(name: str) -> bool:
    """False for a file name that is not UTF-8 (surrogate-escaped): the index manifest (JSON) cannot key it."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


class Found:
    """The sources of one discovery, by key: ``add`` stats each file once."""

    def __init__(self, findings: list):
        self.sources: dict[str, Source] = {}
        self.findings = findings
        self.now = time.time_ns()
        self.racy_ns = int(RACY_SECONDS * 1e9)

    def _sig(self, path: str, conv, fd: int | None, listed: set | None):
        """(signature part, racy) of one file; None when absent or not a regular file (a finding).  With
        ``fd`` (its folder, opened), stated there by name, not along its whole path, and absent without
        a call when the folder's listing ``listed`` lacks it."""
        try:
            if fd is None:
                st = os.lstat(path)
            else:
                name = path.rpartition("/")[2]
                if listed is not None and name not in listed:
                    return None
                st = os.stat(name, dir_fd=fd, follow_symlinks=False)
        except FileNotFoundError:
            return None
        except OSError as exc:
            self.findings.append(unstattable(path, exc, conv))
            return None
        if not stat.S_ISREG(st.st_mode):
            self.findings.append(not_regular(path, st.st_mode, conv))
            return None
        return f"{st.st_size}:{st.st_mtime_ns}:{st.st_ino}:{st.st_ctime_ns}", self.now - st.st_mtime_ns < self.racy_ns

    def add(
        self,
        key: str,
        kind: str,
        paths,
        conv,
        holds: str = "messages",
        fd: int | None = None,
        listed: set | None = None,
    ) -> None:
        """A source of these files, if any of them is there.  ``fd``: the folder all of them are in,
        opened (``listed``: its names, when known), as ``_sig`` uses them."""
        parts = [self._sig(p, conv, fd, listed) for p in paths]
        if any(parts):
            self.sources[key] = Source(
                key,
                kind,
                tuple(paths),
                "|".join(x[0] if x else "-" for x in parts),
                conv,
                not any(x[1] for x in parts if x),
                holds,
            )
