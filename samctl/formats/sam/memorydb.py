"""SAM's SQLite files: ``memory.db`` (spec §7) and ``context_archive.db`` (§8), read safely.

Data model:

- ``CONV/<scope>/memory.db`` holds one table, ``conversation_memories`` (exact schema ``SCHEMA_SQL``,
  §7.2), one row per memory: uppercase UUID ``id`` and ``conversation_id`` (the scope), ``content``,
  ``content_type``, ``embedding`` (raw little-endian float64 blob: 4096 bytes = 512-d Apple NL,
  2048 = 256-d hash fallback, empty/NULL = none), ``importance`` (0..1), ``created_at`` and
  ``last_accessed`` (``yyyy-MM-dd'T'HH:mm:ss.SSS`` UTC, no zone), ``access_count``, ``tags``
  (comma-joined or NULL).  A full scan returns rows in rowid (insertion) order.
- ``CONV/<id>/context_archive.db`` holds ``context_archives`` (``ARCHIVE_SCHEMA_SQL``, §8): chunks of
  messages trimmed from the LLM context, ``messages_json`` being a JSON array whose ``timestamp`` is
  a Double of seconds since 2001-01-01 UTC.

Invariants:

- Reading changes nothing: ``open_readonly`` opens ``file:<path>?mode=ro`` with ``query_only``;
  it never creates the file, a ``-journal``, a ``-wal`` or a ``-shm`` (a WAL-mode database, which
  SAM never makes, is opened ``immutable`` when it has no log and refused when it has one, because
  SQLite would otherwise create or write the ``-shm``), never takes a write lock, and never
  changes a byte or an mtime.  Reads go in short rowid-keyed batches, so the shared lock that
  blocks SAM's writers (busy timeout 0, §7.9) is never held for long.
- Bad files are reported, never raised: every problem is a ``Finding`` appended to the caller's
  list; a file that cannot be read yields ``[]``; a bad row is skipped (error) and the others
  are still returned; an odd-but-usable row is kept (warning).  Per file, at most
  ``MAX_ROW_FINDINGS`` findings of one code are listed, then one finding counts the rest.
- ``touch_memories`` is the only writer (SAM's retrieval side effect, §7.7 step 3), in one short
  transaction; the caller must first make sure SAM is not running.

Finding codes (severity): file level ``missing``/``symlink``/``not-regular``/``unreadable`` (error,
as ``fsafe``), ``db-not-sqlite``, ``db-corrupt``, ``db-locked``, ``db-hot-journal``, ``db-wal``,
``db-unreadable``, ``db-schema`` (error when the table or a column is missing, else warning),
``db-empty`` (warning: 0-byte file, SAM fills it on its next open).
memory.db rows: ``memory-bad-id`` (id or conversation_id not a UUID), ``memory-bad-date``,
``memory-bad-value`` (a column of the wrong type), ``memory-bad-blob`` (length not a multiple
of 8), ``memory-nan`` (NaN/Inf in importance or the vector) are errors and skip the row;
``memory-blob-dim`` (not 4096/2048/0 bytes), ``memory-scope`` (conversation_id is not the
folder's UUID), ``memory-id-case`` (lowercase UUID), ``memory-content-type`` (unknown type; SAM
reads it as ``message``), ``memory-importance-range``, ``memory-bad-utf8`` are warnings.
context_archive.db rows: ``archive-bad-id``, ``archive-bad-date``, ``archive-bad-value``,
``archive-bad-json`` (errors, row skipped); ``archive-scope``, ``archive-bad-topics``,
``archive-bad-utf8`` (warnings).
"""

from __future__ import annotations

import math
import os
import re
import sqlite3
import stat
import struct
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from functools import lru_cache
from datetime import datetime, timedelta, timezone
from urllib.parse import quote

from samctl import fsafe
from samctl.core.model import ERROR, WARNING, Finding
from samctl.errors import Busy, FileProblem

SCHEMA_SQL = (
    'CREATE TABLE IF NOT EXISTS "conversation_memories" ("id" TEXT PRIMARY KEY NOT NULL, "conversation_id" TEXT '
    'NOT NULL, "content" TEXT NOT NULL, "content_type" TEXT NOT NULL, "embedding" BLOB, "importance" REAL NOT NULL, '
    '"created_at" TEXT NOT NULL, "access_count" INTEGER NOT NULL DEFAULT (0), "last_accessed" TEXT NOT NULL, '
    '"tags" TEXT);\n'
    "CREATE INDEX IF NOT EXISTS idx_conversation_id ON conversation_memories(conversation_id);\n"
    "CREATE INDEX IF NOT EXISTS idx_created_at ON conversation_memories(created_at);\n"
    "CREATE INDEX IF NOT EXISTS idx_importance ON conversation_memories(importance);\n"
)

ARCHIVE_SCHEMA_SQL = (
    'CREATE TABLE IF NOT EXISTS "context_archives" ("id" TEXT PRIMARY KEY NOT NULL, "conversation_id" TEXT NOT NULL, '
    '"messages_json" TEXT NOT NULL, "time_start" TEXT NOT NULL, "time_end" TEXT NOT NULL, "summary" TEXT NOT NULL, '
    '"key_topics_json" TEXT NOT NULL, "token_count" INTEGER NOT NULL, "reason" TEXT NOT NULL, "created_at" TEXT '
    "NOT NULL);\n"
    'CREATE INDEX IF NOT EXISTS "index_context_archives_on_conversation_id" ON "context_archives" '
    '("conversation_id");\n'
    'CREATE INDEX IF NOT EXISTS "index_context_archives_on_time_start" ON "context_archives" ("time_start");\n'
)

MEMORY_TABLE = "conversation_memories"
ARCHIVE_TABLE = "context_archives"

# (name, declared type, notnull, default, pk) as PRAGMA table_info reports them for §7.2 / §8.
_COLUMNS = {
    MEMORY_TABLE: (
        ("id", "TEXT", 1, None, 1),
        ("conversation_id", "TEXT", 1, None, 0),
        ("content", "TEXT", 1, None, 0),
        ("content_type", "TEXT", 1, None, 0),
        ("embedding", "BLOB", 0, None, 0),
        ("importance", "REAL", 1, None, 0),
        ("created_at", "TEXT", 1, None, 0),
        ("access_count", "INTEGER", 1, "0", 0),
        ("last_accessed", "TEXT", 1, None, 0),
        ("tags", "TEXT", 0, None, 0),
    ),
    ARCHIVE_TABLE: (
        ("id", "TEXT", 1, None, 1),
        ("conversation_id", "TEXT", 1, None, 0),
        ("messages_json", "TEXT", 1, None, 0),
        ("time_start", "TEXT", 1, None, 0),
        ("time_end", "TEXT", 1, None, 0),
        ("summary", "TEXT", 1, None, 0),
        ("key_topics_json", "TEXT", 1, None, 0),
        ("token_count", "INTEGER", 1, None, 0),
        ("reason", "TEXT", 1, None, 0),
        ("created_at", "TEXT", 1, None, 0),
    ),
}
_INDEXES = {
    MEMORY_TABLE: {
        "idx_conversation_id": ("conversation_id",),
        "idx_created_at": ("created_at",),
        "idx_importance": ("importance",),
    },
    ARCHIVE_TABLE: {
        "index_context_archives_on_conversation_id": ("conversation_id",),
        "index_context_archives_on_time_start": ("time_start",),
    },
}

CONTENT_TYPES = (
    "message", "user_input", "assistant_response", "system_event", "tool_result", "context_info", "document",
)  # fmt: skip
EXPECTED_BLOB_LENGTHS = (4096, 2048, 0)  # Apple NL 512-d, hash fallback 256-d, none (§7.4)
ARCHIVE_REASONS = ("yarn_compression", "manual", "token_limit", "conversation_trimmed")

DEFAULT_TIMEOUT = 2.0  # seconds to wait for a lock SAM holds while it writes
BATCH = 1000  # rows per read statement; the shared lock is released between batches
MAX_ROW_FINDINGS = 100  # per code per file; then one finding counts the rest

APPLE_EPOCH = 978307200.0  # 2001-01-01T00:00:00Z in Unix seconds (Foundation's reference date)
_UNIX_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
_SQLITE_MAGIC = b"SQLite format 3\0"
_UUID_RE = re.compile(r"[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}\Z")
_DATE_RE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T(?:[01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9]\.[0-9]{3}\Z")


# ---------------------------------------------------------------------------------------------
# Dates (§7.3): yyyy-MM-dd'T'HH:mm:ss.SSS, UTC, no zone


def format_db_date(when: float | datetime | None = None) -> str:
    """``yyyy-MM-dd'T'HH:mm:ss.SSS`` in UTC for a Unix time (float seconds) or an aware datetime.

    Milliseconds are truncated, as in spec §15.3 (``dt.microsecond // 1000``), except that a float
    within rounding noise of a whole millisecond counts as that millisecond, so that
    ``format_db_date(parse_db_date(s)) == s`` for every valid ``s``.  None means now.
    """
    if when is None:
        when = time.time()
    if isinstance(when, datetime):
        dt = when.astimezone(timezone.utc) if when.tzinfo else when.replace(tzinfo=timezone.utc)
        dt = dt.replace(microsecond=dt.microsecond // 1000 * 1000)
    else:
        x = float(when) * 1000.0
        n = round(x)
        ms = n if abs(x - n) <= max(1e-6, abs(x) * 1e-15) else math.floor(x)
        dt = _UNIX_EPOCH + timedelta(milliseconds=ms)
    # not strftime: glibc's %Y does not pad years below 1000 to four digits
    return (f"{dt.year:04d}-{dt.month:02d}-{dt.day:02d}T{dt.hour:02d}:{dt.minute:02d}:{dt.second:02d}."
            f"{dt.microsecond // 1000:03d}")


@lru_cache(maxsize=4096)
def _day_seconds(day: str) -> int | None:
    """Unix seconds at 00:00 UTC of ``yyyy-MM-dd`` (already matched by _DATE_RE), None if no such day."""
    try:
        d = datetime(int(day[0:4]), int(day[5:7]), int(day[8:10]), tzinfo=timezone.utc)
    except ValueError:
        return None
    return (d - _UNIX_EPOCH).days * 86400


def parse_db_date(s) -> float | None:
    """Unix seconds of a strict ``yyyy-MM-dd'T'HH:mm:ss.SSS`` UTC string; None for anything else.

    Strict like SAM's formatter: ASCII digits only, exactly three fraction digits, no zone, no
    spaces, a real calendar date and time.  (SAM crashes on a date it cannot parse, §7.3.)
    """
    if not isinstance(s, str) or not _DATE_RE.match(s):
        return None
    day = _day_seconds(s[:10])
    if day is None:
        return None
    return day + int(s[11:13]) * 3600 + int(s[14:16]) * 60 + int(s[17:19]) + int(s[20:23]) / 1000


def is_uuid(s) -> bool:
    """True for a canonical 8-4-4-4-12 hex UUID string in either case (what Swift's UUID parses)."""
    return isinstance(s, str) and _UUID_RE.match(s) is not None


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


class _BadText(str):
    """A TEXT value that was not valid UTF-8 (decoded with surrogateescape, like the rest of samctl)."""

    __slots__ = ()


def _text_factory(b: bytes) -> str:
    try:
        return b.decode("utf-8")
    except UnicodeDecodeError:
        return _BadText(b.decode("utf-8", "surrogateescape"))


class _Reporter:
    """Row findings of one file, at most ``MAX_ROW_FINDINGS`` per code, then a count of the rest."""

    def __init__(self, findings: list, path: str, scope_id: str | None):
        self.findings = findings
        self.path = path
        self.scope_id = scope_id
        self.seen: Counter = Counter()
        self.severity: dict[str, str] = {}

    def add(self, code: str, reason: str, severity: str = ERROR) -> None:
        self.seen[code] += 1
        self.severity.setdefault(code, severity)
        if self.seen[code] <= MAX_ROW_FINDINGS:
            self.findings.append(Finding(code, self.path, reason, severity, self.scope_id))

    def finish(self) -> None:
        for code, n in self.seen.items():
            if n > MAX_ROW_FINDINGS:
                self.findings.append(
                    Finding(code, self.path, f"{n - MAX_ROW_FINDINGS} more rows with this problem (not listed)",
                            self.severity[code], self.scope_id)
                )


# ---------------------------------------------------------------------------------------------
# Opening


def _uri(path, immutable: bool = False) -> str:
    uri = "file:" + quote(os.path.abspath(os.fspath(path)), safe="/") + "?mode=ro"
    return uri + "&immutable=1" if immutable else uri


def _preflight(path) -> bool:
    """Check the file before SQLite sees it; True if it must be opened ``immutable``.

    Raises FileProblem: ``missing``/``symlink``/``not-regular``/``unreadable`` (as fsafe),
    ``db-not-sqlite``, ``db-corrupt`` (truncated header), ``db-wal`` (WAL mode with a log).
    """
    f, st = fsafe.open_regular(path)
    with f:
        try:
            head = f.read(100)
        except OSError as exc:
            raise FileProblem("unreadable", path, f"cannot read: {exc.strerror or exc}") from None
    if not head:
        return False  # a 0-byte file is an empty database to SQLite; nothing to read, nothing created
    if head[:16] != _SQLITE_MAGIC[: len(head[:16])]:
        raise FileProblem("db-not-sqlite", path, "not a SQLite database (no SQLite header)")
    if len(head) < 100:
        raise FileProblem("db-corrupt", path, f"truncated: {len(head)} bytes, shorter than a SQLite header")
    wal = fsafe.lstat(os.fspath(path) + "-wal")
    if head[18] == 2 or head[19] == 2:  # WAL mode; SAM always uses a rollback journal
        if wal is not None and (wal.st_size > 0 or not stat.S_ISREG(wal.st_mode)):
            raise FileProblem(
                "db-wal", path,
                "in WAL mode with an unmerged -wal log (not how SAM writes); reading it would modify the -shm "
                "file, so it was not read",
            )
        return True  # no log: every row is in the main file; immutable keeps SQLite from creating -wal/-shm
    if wal is not None:
        # A -wal beside a rollback-journal database is debris (SQLite checkpoints and deletes it before it
        # leaves WAL mode), yet SQLite would open it and create a -shm: read the main file as it is.
        return True
    return False


def _rollback_mode(path) -> bool:
    try:
        f, _ = fsafe.open_regular(path)
    except FileProblem:
        return False
    with f:
        head = f.read(20)
    return len(head) == 20 and head[18] != 2 and head[19] != 2


def open_readonly(path, timeout: float = DEFAULT_TIMEOUT) -> sqlite3.Connection:
    """A read-only, query-only connection to a SAM database that cannot change the file.

    ``file:<quoted path>?mode=ro`` (so a missing file is never created), ``uri=True``, autocommit
    (no transaction is held between statements), ``timeout`` as busy timeout, ``PRAGMA
    query_only=ON``.  Raises FileProblem for a file that is missing, not regular, not SQLite, or
    in WAL mode with a log (see ``_preflight``), and sqlite3.Error from SQLite itself; the
    ``read_*`` functions turn both into findings.  A hot journal makes the first read fail with
    SQLITE_READONLY_ROLLBACK (SAM rolls it back on its next open; samctl never does).
    """
    immutable = _preflight(path)
    conn = sqlite3.connect(_uri(path, immutable), uri=True, timeout=timeout, isolation_level=None)
    conn.text_factory = _text_factory  # values with invalid UTF-8 become _BadText, never an exception
    try:
        conn.execute("PRAGMA query_only=ON")
    except BaseException:
        conn.close()
        raise
    return conn


# A corrupt schema makes SQLite's own error text invalid UTF-8, and Python's
# sqlite3 raises UnicodeDecodeError decoding it: that is a database error too.
SQLITE_ERRORS = (sqlite3.Error, UnicodeDecodeError)


def _sqlite_finding(exc: Exception, path: str, scope_id: str | None, after: str = "") -> Finding:
    name = getattr(exc, "sqlite_errorname", "") or ""
    msg = str(exc)
    if isinstance(exc, UnicodeDecodeError):
        code, why = "db-corrupt", "corrupt (SQLite's error text about it is not even UTF-8)"
    elif name.startswith(("SQLITE_BUSY", "SQLITE_LOCKED")) or "locked" in msg:
        code, why = "db-locked", "locked by another program (SAM writing?); try again"
    elif name == "SQLITE_NOTADB" or "not a database" in msg:
        code, why = "db-not-sqlite", "not a SQLite database"
    elif name.startswith("SQLITE_CORRUPT") or "malformed" in msg:
        code, why = "db-corrupt", f"corrupt ({msg})"
    elif name == "SQLITE_READONLY_ROLLBACK" or (name == "" and "readonly" in msg):
        code, why = "db-hot-journal", (
            "has a hot -journal from an interrupted write; SAM rolls it back on its next open "
            "(samctl reads only, so it cannot)"
        )
    else:
        code, why = "db-unreadable", f"cannot be read: {msg}"
    return Finding(code, path, why + after, ERROR, scope_id)


def _open_checked(path, findings: list, table: str, timeout: float, scope_id: str | None, missing_ok: bool):
    """Open read-only and check the schema; None (after adding findings) if nothing can be read."""
    spath = os.fspath(path)
    st = fsafe.lstat(spath)
    if st is not None and stat.S_ISREG(st.st_mode) and st.st_size == 0:
        findings.append(Finding("db-empty", spath, "0-byte database (SAM creates its tables on its next open)",
                                WARNING, scope_id))
        return None
    try:
        conn = open_readonly(path, timeout)
    except FileProblem as exc:
        if exc.code == "missing" and missing_ok:
            return None
        findings.append(Finding(exc.code, spath, exc.message, ERROR, scope_id))
        return None
    except SQLITE_ERRORS as exc:
        findings.append(_sqlite_finding(exc, spath, scope_id))
        return None
    wal = fsafe.lstat(spath + "-wal")
    if wal is not None and _rollback_mode(spath):
        findings.append(Finding("db-stray-wal", spath + "-wal", "a -wal file beside a database that is not in WAL "
                                "mode (debris; SQLite would use it): the database was read without it", WARNING,
                                scope_id))
    try:
        fatal, minor = _schema_check(conn, table)
    except SQLITE_ERRORS as exc:
        conn.close()
        findings.append(_sqlite_finding(exc, spath, scope_id))
        return None
    for p in fatal:
        findings.append(Finding("db-schema", spath, p, ERROR, scope_id))
    for p in minor:
        findings.append(Finding("db-schema", spath, p, WARNING, scope_id))
    if fatal:
        conn.close()
        return None
    return conn


# ---------------------------------------------------------------------------------------------
# Schema


def _norm_default(d):
    if d is None:
        return None
    d = str(d).strip()
    while d.startswith("(") and d.endswith(")"):
        d = d[1:-1].strip()
    return d


def _schema_check(conn: sqlite3.Connection, table: str) -> tuple[list[str], list[str]]:
    """(fatal, minor) differences from the spec's schema of ``table``.

    Fatal: the table or one of its columns is missing, or it has no rowid; rows cannot be read.
    Minor: other column types/constraints, extra columns, missing or different indexes, extra
    tables, views or triggers.
    """
    fatal: list[str] = []
    minor: list[str] = []
    objects = conn.execute("SELECT type, name, tbl_name FROM sqlite_master").fetchall()
    kinds = {name: kind for kind, name, _ in objects}
    if table not in kinds:
        return [f"no table {table}"], []
    if kinds[table] != "table":
        return [f"{table} is a {kinds[table]}, not a table"], []
    q = '"' + table.replace('"', '""') + '"'
    info = {r[1]: r for r in conn.execute(f"PRAGMA table_info({q})").fetchall()}
    expected = _COLUMNS[table]
    for name, typ, notnull, default, pk in expected:
        got = info.get(name)
        if got is None:
            fatal.append(f"{table} has no column {name}")
            continue
        _, _, gtyp, gnotnull, gdefault, gpk = got
        if (gtyp or "").upper() != typ:
            minor.append(f"column {name} is {gtyp or 'untyped'}, expected {typ}")
        if bool(gnotnull) != bool(notnull):
            minor.append(f"column {name} is {'NOT NULL' if gnotnull else 'nullable'}, expected "
                         f"{'NOT NULL' if notnull else 'nullable'}")
        if _norm_default(gdefault) != default:
            minor.append(f"column {name} has default {gdefault}, expected {default if default is not None else 'none'}")
        if bool(gpk) != bool(pk):
            minor.append(f"column {name} is {'' if gpk else 'not '}the primary key, expected "
                         f"{'' if pk else 'not '}the primary key")
    names = {c[0] for c in expected}
    for extra in sorted(set(info) - names):
        minor.append(f"unexpected column {extra}")
    try:
        conn.execute(f"SELECT rowid FROM {q} LIMIT 0").fetchall()
    except sqlite3.OperationalError:
        fatal.append(f"{table} has no rowid (WITHOUT ROWID table)")
    want = _INDEXES[table]
    have = {r[1]: r for r in conn.execute(f"PRAGMA index_list({q})").fetchall()}
    for idx, cols in want.items():
        if idx not in have:
            minor.append(f"missing index {idx}")
            continue
        iq = '"' + idx.replace('"', '""') + '"'
        gcols = tuple(r[2] for r in conn.execute(f"PRAGMA index_info({iq})").fetchall())
        if gcols != cols or have[idx][2]:
            minor.append(f"index {idx} is {'UNIQUE ' if have[idx][2] else ''}on ({', '.join(map(str, gcols))}), "
                         f"expected ({', '.join(cols)})")
    for idx in sorted(set(have) - set(want)):
        if not idx.startswith("sqlite_autoindex_"):
            minor.append(f"unexpected index {idx}")
    for kind, name, tbl in sorted(objects):
        if name == table or name in want or name.startswith("sqlite_"):
            continue
        if kind == "index" and tbl == table:
            continue  # reported above
        minor.append(f"unexpected {kind} {name}")
    return fatal, minor


def schema_problems(conn: sqlite3.Connection, table: str = MEMORY_TABLE) -> list[str]:
    """Every difference between the database's ``table`` and the spec (§7.2, or §8 for
    ``ARCHIVE_TABLE``), one line each; [] when it matches.

    Columns are compared through ``PRAGMA table_info`` (name, declared type, NOT NULL, default,
    primary key) and indexes through ``PRAGMA index_list``/``index_info``, not through SQL text,
    so whitespace and quoting differences do not count.
    """
    fatal, minor = _schema_check(conn, table)
    return fatal + minor


# ---------------------------------------------------------------------------------------------
# memory.db

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


def _check_memory(r, rep: _Reporter, scope_id: str | None) -> MemoryRow | None:
    rowid, mid, cid, content, ctype, emb, imp, created, count, accessed, tags = r
    at = f"row {rowid}"
    if not is_uuid(mid):
        rep.add("memory-bad-id", f"{at}: id {mid!r} is not a UUID (SAM crashes reading this row)")
        return None
    if not is_uuid(cid):
        rep.add("memory-bad-id", f"{at} ({mid}): conversation_id {cid!r} is not a UUID (SAM crashes on it)")
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
        rep.add("memory-blob-dim", f"{at}: embedding of {len(emb)} bytes ({len(emb) // 8}-d); expected 4096 "
                "(Apple NL), 2048 (hash fallback) or none", WARNING)
    if scope_id is not None and cid != scope_id:
        rep.add("memory-scope", f"{at}: conversation_id {cid} is not the folder's {scope_id}", WARNING)
    if mid != mid.upper() or cid != cid.upper():
        rep.add("memory-id-case", f"{at}: lowercase UUID (SAM writes uppercase; its updates will not match)",
                WARNING)
    if ctype not in CONTENT_TYPES:
        rep.add("memory-content-type", f"{at}: unknown content_type {ctype!r} (SAM reads it as message)", WARNING)
    if not 0.0 <= imp <= 1.0:
        rep.add("memory-importance-range", f"{at}: importance {imp} outside 0..1", WARNING)
    texts = (mid, cid, content, ctype, created, accessed, tags)
    if any(type(t) is _BadText for t in texts):
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
    finding (memory.db is created lazily, §7.1).  Findings are appended as the iteration runs;
    a lock or corruption met half-way stops it with a finding, keeping the rows already given.
    """
    spath = os.fspath(path)
    conn = _open_checked(path, findings, MEMORY_TABLE, timeout, scope_id, missing_ok)
    if conn is None:
        return
    rep = _Reporter(findings, spath, scope_id)
    done = 0
    try:
        conn.text_factory = _text_factory
        last = since_rowid
        while True:
            try:
                if last is None:
                    rows = conn.execute(_MEMORY_SELECT + " ORDER BY rowid LIMIT ?", (batch,)).fetchall()
                else:
                    rows = conn.execute(_MEMORY_SELECT + " WHERE rowid > ? ORDER BY rowid LIMIT ?",
                                        (last, batch)).fetchall()
            except SQLITE_ERRORS as exc:
                findings.append(_sqlite_finding(exc, spath, scope_id, f" (stopped after {done} rows)" if done else ""))
                return
            for r in rows:
                row = _check_memory(r, rep, scope_id)
                if row is not None:
                    done += 1
                    yield row
            if len(rows) < batch:
                return
            last = rows[-1][0]
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
# context_archive.db

_ARCHIVE_SELECT = (
    'SELECT rowid, "id", "conversation_id", "messages_json", "time_start", "time_end", "summary", '
    '"key_topics_json", "token_count", "reason", "created_at" FROM "context_archives"'
)


def _check_archive(r, rep: _Reporter, scope_id: str | None, loads) -> dict | None:
    rowid, aid, cid, mjson, tstart, tend, summary, topics_json, tokens, reason, created = r
    at = f"row {rowid}"
    if not is_uuid(aid):
        rep.add("archive-bad-id", f"{at}: id {aid!r} is not a UUID")
        return None
    if not is_uuid(cid):
        rep.add("archive-bad-id", f"{at} ({aid}): conversation_id {cid!r} is not a UUID")
        return None
    at = f"{at} ({aid})"
    for col, val in (("messages_json", mjson), ("summary", summary), ("key_topics_json", topics_json),
                     ("reason", reason)):
        if not isinstance(val, str):
            rep.add("archive-bad-value", f"{at}: {col} is {type(val).__name__}, not text")
            return None
    if not isinstance(tokens, int):
        rep.add("archive-bad-value", f"{at}: token_count is {type(tokens).__name__}, not an integer")
        return None
    stamps = {}
    for col, val in (("time_start", tstart), ("time_end", tend), ("created_at", created)):
        ts = parse_db_date(val)
        if ts is None:
            rep.add("archive-bad-date", f"{at}: {col} {val!r} is not yyyy-MM-ddTHH:mm:ss.SSS")
            return None
        stamps[col + "_ts"] = ts
    try:
        messages = loads(mjson)
    except ValueError as exc:
        rep.add("archive-bad-json", f"{at}: messages_json is not JSON ({exc})")
        return None
    if not isinstance(messages, list) or not all(isinstance(m, dict) for m in messages):
        rep.add("archive-bad-json", f"{at}: messages_json is not an array of objects")
        return None
    for m in messages:
        ts = m.get("timestamp")
        ok = isinstance(ts, (int, float)) and not isinstance(ts, bool) and math.isfinite(ts)
        m["timestamp_epoch"] = ts + APPLE_EPOCH if ok else None
    try:
        topics = loads(topics_json)
    except ValueError:
        topics = None
    if not isinstance(topics, list) or not all(isinstance(t, str) for t in topics):
        rep.add("archive-bad-topics", f"{at}: key_topics_json is not a JSON array of strings", WARNING)
        topics = []
    if scope_id is not None and cid != scope_id:
        rep.add("archive-scope", f"{at}: conversation_id {cid} is not the folder's {scope_id}", WARNING)
    texts = (aid, cid, mjson, tstart, tend, summary, topics_json, reason, created)
    if any(type(t) is _BadText for t in texts):
        rep.add("archive-bad-utf8", f"{at}: text that is not valid UTF-8 (kept with surrogate escapes)", WARNING)
    return {
        "rowid": rowid,
        "id": str(aid),
        "conversation_id": str(cid),
        "messages": messages,
        "time_start": str(tstart),
        "time_end": str(tend),
        "summary": str(summary),
        "key_topics": topics,
        "token_count": tokens,
        "reason": str(reason),
        "created_at": str(created),
        **stamps,
    }


def read_archives(
    path,
    findings: list,
    *,
    scope_id: str | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    missing_ok: bool = False,
) -> list[dict]:
    """Every good row of a ``context_archive.db`` in rowid order, as dicts.

    Keys: ``rowid``, ``id``, ``conversation_id``, ``messages`` (``messages_json`` decoded; each
    message gains ``timestamp_epoch`` = its 2001-based ``timestamp`` as Unix seconds, or None),
    ``summary``, ``key_topics`` (decoded), ``token_count``, ``reason``, ``time_start``,
    ``time_end``, ``created_at`` (as stored) and their ``*_ts`` Unix seconds.  Never raises for
    a bad file; problems go to ``findings``.
    """
    import orjson

    spath = os.fspath(path)
    conn = _open_checked(path, findings, ARCHIVE_TABLE, timeout, scope_id, missing_ok)
    if conn is None:
        return []
    rep = _Reporter(findings, spath, scope_id)
    out: list[dict] = []
    try:
        conn.text_factory = _text_factory
        last = None
        while True:
            try:
                if last is None:
                    rows = conn.execute(_ARCHIVE_SELECT + " ORDER BY rowid LIMIT ?", (BATCH,)).fetchall()
                else:
                    rows = conn.execute(_ARCHIVE_SELECT + " WHERE rowid > ? ORDER BY rowid LIMIT ?",
                                        (last, BATCH)).fetchall()
            except SQLITE_ERRORS as exc:
                after = f" (stopped after {len(out)} rows)" if out else ""
                findings.append(_sqlite_finding(exc, spath, scope_id, after))
                break
            for r in rows:
                row = _check_archive(r, rep, scope_id, orjson.loads)
                if row is not None:
                    out.append(row)
            if len(rows) < BATCH:
                break
            last = rows[-1][0]
    finally:
        rep.finish()
        conn.close()
    return out


# ---------------------------------------------------------------------------------------------
# Writing


def touch_memories(path, ids, now: float | datetime | None = None, timeout: float = DEFAULT_TIMEOUT) -> int:
    """SAM's retrieval side effect (§7.7 step 3) for ``ids``: ``access_count + 1`` and
    ``last_accessed = now`` (``yyyy-MM-dd'T'HH:mm:ss.SSS`` UTC), in one short transaction.

    Returns the number of rows updated.  The file must exist (``mode=rw``, never created).
    Raises Busy if the database stays locked for ``timeout`` seconds, FileProblem if it cannot
    be written.  The caller must first make sure SAM is not running (SAM's busy timeout is 0).
    """
    ids = list(ids)
    stamp = format_db_date(now)
    fh, _ = fsafe.open_regular(path)  # missing / symlink / not a regular file -> FileProblem
    fh.close()
    if not ids:
        return 0
    uri = "file:" + quote(os.path.abspath(os.fspath(path)), safe="/") + "?mode=rw"
    try:
        conn = sqlite3.connect(uri, uri=True, timeout=timeout, isolation_level=None)
    except SQLITE_ERRORS as exc:
        raise FileProblem("db-unreadable", path, f"cannot open for writing: {exc}") from None
    try:
        try:
            conn.execute("BEGIN IMMEDIATE")
            cur = conn.executemany(
                'UPDATE "conversation_memories" SET "access_count" = "access_count" + 1, "last_accessed" = ? '
                'WHERE "id" = ?',
                [(stamp, i) for i in ids],
            )
            n = cur.rowcount
            conn.execute("COMMIT")
            return n
        except SQLITE_ERRORS as exc:
            if conn.in_transaction:
                try:
                    conn.execute("ROLLBACK")
                except SQLITE_ERRORS:
                    pass
            problem = _sqlite_finding(exc, os.fspath(path), None)
            if problem.code == "db-locked":
                raise Busy(f"{path}: {problem.reason}", hint="quit SAM, then try again") from None
            raise FileProblem(problem.code, path, problem.reason) from None
    finally:
        conn.close()


def _memory_values(row) -> tuple:
    if isinstance(row, MemoryRow):
        tags = ",".join(row.tags) if row.tags else None
        return (row.id, row.conversation_id, row.content, row.content_type, row.embedding, row.importance,
                row.created_at, row.access_count, row.last_accessed, tags)
    if isinstance(row, dict):
        created = row.get("created_at") or format_db_date()
        emb = row.get("embedding")
        if emb is not None and not isinstance(emb, (bytes, bytearray)):
            emb = struct.pack("<%dd" % len(emb), *emb)
        tags = row.get("tags")
        if isinstance(tags, (list, tuple)):
            tags = ",".join(tags) if tags else None
        return (row["id"], row["conversation_id"], row["content"], row.get("content_type", "message"), emb,
                row.get("importance", 0.5), created, row.get("access_count", 0),
                row.get("last_accessed", created), tags)
    values = tuple(row)
    if len(values) != 10:
        raise ValueError(f"a memory row needs the 10 columns of §7.2, got {len(values)}")
    return values


def create_memory_db(path, rows=(), mode: int = fsafe.FILE_MODE):
    """Make a ``memory.db`` as SAM does (§7.2 schema, §15.3 Python route) and insert ``rows``.

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


def encode_archive_messages(messages: list[dict]) -> str:
    """``messages_json`` as SAM's default JSONEncoder writes it: compact, ``/`` escaped as ``\\/``."""
    import json

    return json.dumps(messages, separators=(",", ":"), ensure_ascii=False, allow_nan=False).replace("/", "\\/")


def create_archive_db(path, rows=(), mode: int = fsafe.FILE_MODE):
    """Make a ``context_archive.db`` with the §8 schema and insert ``rows``; for tests and fixtures.

    A row is a dict with the §8 columns (``messages`` and ``key_topics`` as Python lists may
    stand for ``messages_json``/``key_topics_json``) or a tuple of the 10 columns.
    """
    import json

    values = []
    for r in rows:
        if isinstance(r, dict):
            mj = r.get("messages_json")
            if mj is None:
                mj = encode_archive_messages(r.get("messages", []))
            kj = r.get("key_topics_json")
            if kj is None:
                kj = json.dumps(r.get("key_topics", []), separators=(",", ":"), ensure_ascii=False)
            created = r.get("created_at") or format_db_date()
            values.append((r["id"], r["conversation_id"], mj, r.get("time_start", created), r.get("time_end", created),
                           r.get("summary", ""), kj, r.get("token_count", 0), r.get("reason", "conversation_trimmed"),
                           created))
        else:
            values.append(tuple(r))
    db = sqlite3.connect(os.fspath(path))
    try:
        db.executescript(ARCHIVE_SCHEMA_SQL)
        db.executemany('INSERT INTO "context_archives" VALUES (?,?,?,?,?,?,?,?,?,?)', values)
        db.commit()
    finally:
        db.close()
    os.chmod(path, mode)
    return path
