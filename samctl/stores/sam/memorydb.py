"""SAM's ``memory.db`` (sam.md §7), read safely; and ``touch_memories``, samctl's one writer to it.

Reading changes nothing (``sqlitefile``), bad rows are findings; ``touch_memories`` is the only writer, in
one short transaction, on a file whose schema is exactly SAM's, with SAM not running.  Re-exports the names
of ``sqlitefile``, ``dbvalues`` and ``archivedb`` that were defined here before the split.

Design notes: docs/stores.md, "stores/sam/memorydb.py".
"""

from __future__ import annotations

import math
import os
import sqlite3
import struct
import sys
from dataclasses import dataclass, field
from datetime import datetime

from samctl.errors import Busy, FileProblem
from samctl.fs import filemodes, reading
from samctl.model import WARNING
from samctl.safetext import quoted
from samctl.stores.sam.archivedb import ARCHIVE_REASONS, create_archive_db, encode_archive_messages, read_archives
from samctl.stores.sam.dbvalues import APPLE_EPOCH, format_db_date, is_uuid, parse_db_date
from samctl.stores.sam.sqlitefile import (
    ARCHIVE_SCHEMA_SQL,
    ARCHIVE_TABLE,
    BATCH,
    DEFAULT_TIMEOUT,
    MAX_ROW_FINDINGS,
    MEMORY_TABLE,
    SCHEMA_SQL,
    SQLITE_ERRORS,
    BadText,
    Reporter,
    open_checked,
    open_readonly,
    row_batches,
    schema_problems,
    sqlite_finding,
    text_factory,
    write_transaction,
)

__all__ = [
    "APPLE_EPOCH",
    "ARCHIVE_REASONS",
    "ARCHIVE_SCHEMA_SQL",
    "ARCHIVE_TABLE",
    "BATCH",
    "CONTENT_TYPES",
    "DEFAULT_TIMEOUT",
    "EXPECTED_BLOB_LENGTHS",
    "MAX_ROW_FINDINGS",
    "MEMORY_TABLE",
    "SCHEMA_SQL",
    "SQLITE_ERRORS",
    "MemoryRow",
    "create_archive_db",
    "create_memory_db",
    "encode_archive_messages",
    "format_db_date",
    "is_uuid",
    "iter_memories",
    "open_readonly",
    "parse_db_date",
    "read_archives",
    "read_memories",
    "schema_problems",
    "touch_memories",
]

CONTENT_TYPES = (
    "message", "user_input", "assistant_response", "system_event", "tool_result", "context_info", "document",
)  # fmt: skip
EXPECTED_BLOB_LENGTHS = (4096, 2048, 0)  # Apple NL 512-d, hash fallback 256-d, none (sam.md §7.4)


# ---------------------------------------------------------------------------------------------
# Rows


@dataclass(slots=True)
class MemoryRow:
    """One ``conversation_memories`` row, as stored (``tags`` already split on ``,``)."""

    id: str
    conversation_id: str
    content: str
    content_type: str
    embedding: bytes | None
    importance: float
    created_at: str
    access_count: int
    last_accessed: str
    tags: list[str] = field(default_factory=list)
    rowid: int = 0

    @property
    def created_ts(self) -> float | None:
        return parse_db_date(self.created_at)

    @property
    def last_accessed_ts(self) -> float | None:
        return parse_db_date(self.last_accessed)

    @property
    def dimension(self) -> int:
        """Vector dimension (0 when there is no embedding)."""
        return len(self.embedding) // 8 if self.embedding else 0

    def vector(self) -> list[float] | None:
        """The embedding as floats, or None when there is none."""
        if not self.embedding:
            return None
        return list(struct.unpack("<%dd" % (len(self.embedding) // 8), self.embedding))

    def to_dict(self) -> dict:
        return {
            "id": self.id,
            "conversation_id": self.conversation_id,
            "content": self.content,
            "content_type": self.content_type,
            "dimension": self.dimension,
            "importance": self.importance,
            "created_at": self.created_at,
            "access_count": self.access_count,
            "last_accessed": self.last_accessed,
            "tags": list(self.tags),
        }


# ---------------------------------------------------------------------------------------------
# Reading

_MEMORY_SELECT = (
    'SELECT rowid, "id", "conversation_id", "content", "content_type", "embedding", "importance", "created_at", '
    '"access_count", "last_accessed", "tags" FROM "conversation_memories"'
)


def _finite_vector(blob: bytes) -> bool:
    if sys.byteorder == "little":
        vals = memoryview(blob).cast("d")  # no tuple of floats; the blob is little-endian float64
    else:  # pragma: no cover - no big-endian Mac runs SAM
        vals = struct.unpack("<%dd" % (len(blob) // 8), blob)
    if math.isfinite(sum(vals)):
        return True
    return all(map(math.isfinite, vals))  # a huge-but-finite sum can overflow; look at each value


def _check_memory(r, rep: Reporter, scope_id: str | None) -> MemoryRow | None:
    rowid, mid, cid, content, ctype, emb, imp, created, count, accessed, tags = r
    at = f"row {rowid}"
    if not is_uuid(mid):
        rep.add("memory-bad-id", f"{at}: id {mid!r} is not a UUID (SAM crashes reading this row)")
        return None
    if not is_uuid(cid):
        rep.add("memory-bad-id", f"{at} ({mid}): conversation_id {quoted(cid)} is not a UUID (SAM crashes on it)")
        return None
    at = f"{at} ({mid})"
    for col, val in (("content", content), ("content_type", ctype)):
        if not isinstance(val, str):
            rep.add("memory-bad-value", f"{at}: {col} is {type(val).__name__}, not text")
            return None
    if isinstance(imp, int) and not isinstance(imp, bool):
        imp = float(imp)
    if not isinstance(imp, float):
        rep.add("memory-bad-value", f"{at}: importance is {type(imp).__name__}, not a number")
        return None
    if not isinstance(count, int):
        rep.add("memory-bad-value", f"{at}: access_count is {type(count).__name__}, not an integer")
        return None
    if tags is not None and not isinstance(tags, str):
        rep.add("memory-bad-value", f"{at}: tags is {type(tags).__name__}, not text")
        return None
    for col, val in (("created_at", created), ("last_accessed", accessed)):
        if parse_db_date(val) is None:
            rep.add("memory-bad-date", f"{at}: {col} {val!r} is not yyyy-MM-ddTHH:mm:ss.SSS (SAM crashes on it)")
            return None
    if emb is not None:
        if not isinstance(emb, bytes):
            rep.add("memory-bad-blob", f"{at}: embedding is {type(emb).__name__}, not a blob")
            return None
        if len(emb) % 8:
            rep.add("memory-bad-blob", f"{at}: embedding of {len(emb)} bytes is not a whole number of float64s")
            return None
    if not math.isfinite(imp):
        rep.add("memory-nan", f"{at}: importance is {imp}")
        return None
    if emb and not _finite_vector(emb):
        rep.add("memory-nan", f"{at}: embedding contains NaN or infinity")
        return None
    # usable: warnings only from here on
    if emb is not None and len(emb) not in EXPECTED_BLOB_LENGTHS:
        rep.add(
            "memory-blob-dim",
            f"{at}: embedding of {len(emb)} bytes ({len(emb) // 8}-d); expected 4096 "
            "(Apple NL), 2048 (hash fallback) or none",
            WARNING,
        )
    if scope_id is not None and cid != scope_id:
        rep.add("memory-scope", f"{at}: conversation_id {cid} is not the folder's {scope_id}", WARNING)
    if mid != mid.upper() or cid != cid.upper():
        rep.add("memory-id-case", f"{at}: lowercase UUID (SAM writes uppercase; its updates will not match)", WARNING)
    if ctype not in CONTENT_TYPES:
        rep.add("memory-content-type", f"{at}: unknown content_type {ctype!r} (SAM reads it as message)", WARNING)
    if not 0.0 <= imp <= 1.0:
        rep.add("memory-importance-range", f"{at}: importance {imp} outside 0..1", WARNING)
    texts = (mid, cid, content, ctype, created, accessed, tags)
    if any(type(t) is BadText for t in texts):
        rep.add("memory-bad-utf8", f"{at}: text that is not valid UTF-8 (kept with surrogate escapes)", WARNING)
        mid, cid, content, ctype, created, accessed = (str(t) for t in (mid, cid, content, ctype, created, accessed))
        tags = None if tags is None else str(tags)
    return MemoryRow(
        id=mid,
        conversation_id=cid,
        content=content,
        content_type=ctype,
        embedding=emb,
        importance=imp,
        created_at=created,
        access_count=count,
        last_accessed=accessed,
        tags=[] if tags is None else tags.split(","),
        rowid=rowid,
    )


def iter_memories(
    path,
    findings: list,
    since_rowid: int | None = None,
    *,
    scope_id: str | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    missing_ok: bool = False,
    batch: int = BATCH,
):
    """Yield the good rows of a ``memory.db`` as ``MemoryRow`` in rowid order.

    ``since_rowid``: only rows with a larger rowid (for incremental indexing; SAM only appends,
    though a deleted-then-reinserted memory gets a new rowid).  ``scope_id``: the folder's UUID,
    for the ``memory-scope`` check.  ``missing_ok``: a missing file yields nothing and no
    finding (memory.db is created lazily, sam.md §7.1).  Findings are appended as the iteration runs;
    a lock or corruption met half-way stops it with a finding, keeping the rows already given.
    """
    spath = os.fspath(path)
    conn = open_checked(path, findings, MEMORY_TABLE, timeout, scope_id, missing_ok)
    if conn is None:
        return
    rep = Reporter(findings, spath, scope_id, MAX_ROW_FINDINGS)
    done = 0
    try:
        conn.text_factory = text_factory
        batches = row_batches(conn, _MEMORY_SELECT, batch, since_rowid)
        while True:
            try:
                rows = next(batches, None)
            except SQLITE_ERRORS as exc:
                findings.append(sqlite_finding(exc, spath, scope_id, f" (stopped after {done} rows)" if done else ""))
                return
            if rows is None:
                return
            for r in rows:
                row = _check_memory(r, rep, scope_id)
                if row is not None:
                    done += 1
                    yield row
    finally:
        rep.finish()
        conn.close()


def read_memories(
    path,
    findings: list,
    *,
    scope_id: str | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    missing_ok: bool = False,
) -> list[MemoryRow]:
    """Every good row of a ``memory.db`` in rowid order; problems go to ``findings``.  Never raises
    for a bad file (see ``iter_memories``)."""
    return list(iter_memories(path, findings, scope_id=scope_id, timeout=timeout, missing_ok=missing_ok))


# ---------------------------------------------------------------------------------------------
# Writing


def touch_memories(path, ids, now: float | datetime | None = None, timeout: float = DEFAULT_TIMEOUT) -> int:
    """SAM's retrieval side effect (sam.md §7.7 step 3) for ``ids``: ``access_count + 1`` and
    ``last_accessed = now`` (``yyyy-MM-dd'T'HH:mm:ss.SSS`` UTC), in one short transaction.

    Returns the number of rows updated.  The file must exist (``mode=rw``, never created) and
    have exactly SAM's schema (``sqlitefile.write_transaction``: a trigger would make the UPDATE
    do something else).  Raises Busy if the database stays locked for ``timeout`` seconds,
    FileProblem if it cannot or must not be written.  The caller must first make sure SAM is not
    running (SAM's busy timeout is 0).
    """
    ids = list(ids)
    stamp = format_db_date(now)
    fh, _ = reading.open_regular(path)  # missing / symlink / not a regular file -> FileProblem
    fh.close()
    if not ids:
        return 0
    try:
        with write_transaction(path, MEMORY_TABLE, timeout) as conn:
            cur = conn.executemany(
                'UPDATE "conversation_memories" SET "access_count" = "access_count" + 1, "last_accessed" = ? '
                'WHERE "id" = ?',
                [(stamp, i) for i in ids],
            )
            return cur.rowcount
    except SQLITE_ERRORS as exc:
        problem = sqlite_finding(exc, os.fspath(path), None)
        if problem.code == "db-locked":
            raise Busy(f"{path}: {problem.reason}", hint="quit SAM, then try again") from None
        raise FileProblem(problem.code, path, problem.reason) from None


def _memory_values(row) -> tuple:
    if isinstance(row, MemoryRow):
        tags = ",".join(row.tags) if row.tags else None
        return (
            row.id,
            row.conversation_id,
            row.content,
            row.content_type,
            row.embedding,
            row.importance,
            row.created_at,
            row.access_count,
            row.last_accessed,
            tags,
        )
    if isinstance(row, dict):
        created = row.get("created_at") or format_db_date()
        emb = row.get("embedding")
        if emb is not None and not isinstance(emb, (bytes, bytearray)):
            emb = struct.pack("<%dd" % len(emb), *emb)
        tags = row.get("tags")
        if isinstance(tags, (list, tuple)):
            tags = ",".join(tags) if tags else None
        return (
            row["id"],
            row["conversation_id"],
            row["content"],
            row.get("content_type", "message"),
            emb,
            row.get("importance", 0.5),
            created,
            row.get("access_count", 0),
            row.get("last_accessed", created),
            tags,
        )
    values = tuple(row)
    if len(values) != 10:
        raise ValueError(f"a memory row needs the 10 columns of §7.2, got {len(values)}")
    return values


def create_memory_db(path, rows=(), mode: int = filemodes.FILE_MODE):
    """Make a ``memory.db`` as SAM does (sam.md §7.2 schema, sam.md §15.3 Python route) and insert ``rows``.

    For tests and fixtures.  A row is a ``MemoryRow``, a dict (``embedding`` may be a list of
    floats, ``tags`` a list), or a tuple of the 10 columns in schema order.  Returns the path.
    """
    db = sqlite3.connect(os.fspath(path))
    try:
        db.executescript(SCHEMA_SQL)
        db.executemany(
            'INSERT INTO "conversation_memories" ("id", "conversation_id", "content", "content_type", "embedding", '
            '"importance", "created_at", "access_count", "last_accessed", "tags") VALUES (?,?,?,?,?,?,?,?,?,?)',
            [_memory_values(r) for r in rows],
        )
        db.commit()
    finally:
        db.close()
    os.chmod(path, mode)
    return path
