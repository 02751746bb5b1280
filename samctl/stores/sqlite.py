"""Opening a SQLite file safely, for any store (SAM's memory.db and context_archive.db, llm's logs.db).

``open_readonly`` reads without changing a byte (``mode=ro`` URI, ``query_only``, ``immutable`` only
for a WAL database with no log, refused with one); ``open_readwrite`` is the raw ``mode=rw`` opener
under a store's own write guard (SAM's: ``stores/sam/sqlitefile.open_for_writing``, which alone may
call it).  SQLite errors become findings through ``sqlite_finding``.
"""

from __future__ import annotations

import os
import sqlite3
import stat
from urllib.parse import quote

from samctl.errors import FileProblem
from samctl.fs import filemodes, reading
from samctl.model import ERROR, Finding

DEFAULT_TIMEOUT = 2.0  # seconds to wait for a lock SAM holds while it writes


def lock_wait(timeout: float) -> float:
    """``timeout``, or less in samctl's own test suite: tests/conftest.py sets SAMCTL_TEST_LOCK_WAIT
    so that a test of a locked database does not sit out the whole wait (a test-only switch, as
    SAMCTL_TEST_NO_FSYNC; a test of the wait itself unsets it)."""
    wait = os.environ.get("SAMCTL_TEST_LOCK_WAIT")
    if wait is None:
        return timeout
    try:
        return min(timeout, float(wait))
    except ValueError:
        return timeout


_SQLITE_MAGIC = b"SQLite format 3\0"


class BadText(str):
    """A TEXT value that was not valid UTF-8 (decoded with surrogateescape, like the rest of samctl)."""

    __slots__ = ()


def text_factory(b: bytes) -> str:
    try:
        return b.decode("utf-8")
    except UnicodeDecodeError:
        return BadText(b.decode("utf-8", "surrogateescape"))


def row_batches(conn: sqlite3.Connection, select: str, batch: int, after_rowid: int | None = None):
    """The rows of ``select`` (whose first column is the rowid) in rowid order, as lists of at most
    ``batch``: each list is one short statement, so the shared lock that blocks SAM's writers is
    released between them.  SQLite errors come out of the ``next()`` that met them."""
    last = after_rowid
    while True:
        if last is None:
            rows = conn.execute(select + " ORDER BY rowid LIMIT ?", (batch,)).fetchall()
        else:
            rows = conn.execute(select + " WHERE rowid > ? ORDER BY rowid LIMIT ?", (last, batch)).fetchall()
        yield rows
        if len(rows) < batch:
            return
        last = rows[-1][0]


def ro_uri(path, immutable: bool = False) -> str:
    uri = "file:" + quote(os.path.abspath(os.fspath(path)), safe="/") + "?mode=ro"
    return uri + "&immutable=1" if immutable else uri


def rw_uri(path) -> str:
    """The URI that opens ``path`` for writing and never creates it (``mode=rw``; a '?' or '#' in
    the path is data).  Only ``open_readwrite`` uses it."""
    return "file:" + quote(os.path.abspath(os.fspath(path)), safe="/") + "?mode=rw"


def preflight(path, writing: bool = False) -> bool:
    """Check the file before SQLite sees it; True if it must be opened ``immutable``.

    Raises FileProblem: ``missing``/``symlink``/``not-regular``/``unreadable`` (as ``fs.reading``),
    ``db-not-sqlite``, ``db-corrupt`` (truncated header), ``db-wal`` (WAL mode with a log; not
    when ``writing``: a writer merges the log as SQLite does).
    """
    f, st = reading.open_regular(path)
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
    if writing:
        return False
    wal = filemodes.lstat(os.fspath(path) + "-wal")
    if head[18] == 2 or head[19] == 2:  # WAL mode; SAM always uses a rollback journal
        if wal is not None and (wal.st_size > 0 or not stat.S_ISREG(wal.st_mode)):
            raise FileProblem(
                "db-wal",
                path,
                "in WAL mode with an unmerged -wal log (not how SAM writes); reading it would modify the -shm "
                "file, so it was not read",
            )
        return True  # no log: every row is in the main file; immutable keeps SQLite from creating -wal/-shm
    if wal is not None:
        # A -wal beside a rollback-journal database is debris (SQLite checkpoints and deletes it before it
        # leaves WAL mode), yet SQLite would open it and create a -shm: read the main file as it is.
        return True
    return False


def free_pages_in_header(path) -> int | None:
    """The free-page count a rollback-journal database's header gives (offset 36), or None when the
    header alone cannot be trusted: not a whole SQLite header, WAL mode, or a -journal or -wal beside
    it (a hot journal means the main file may be mid-transaction).  SQLite keeps that count in every
    commit, so with none of those it is what ``PRAGMA freelist_count`` reads."""
    try:
        f, _ = reading.open_regular(path)
    except FileProblem:
        return None
    with f:
        try:
            head = f.read(100)
        except OSError:
            return None
    if len(head) < 100 or head[:16] != _SQLITE_MAGIC or head[18] == 2 or head[19] == 2:
        return None
    name = os.fspath(path)
    if filemodes.lstat(name + "-journal") is not None or filemodes.lstat(name + "-wal") is not None:
        return None
    return int.from_bytes(head[36:40], "big")


def rollback_mode(path) -> bool:
    try:
        f, _ = reading.open_regular(path)
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
    in WAL mode with a log (see ``preflight``), and sqlite3.Error from SQLite itself; the
    ``read_*`` functions turn both into findings.  A hot journal makes the first read fail with
    SQLITE_READONLY_ROLLBACK (SAM rolls it back on its next open; samctl never does).
    """
    immutable = preflight(path)
    conn = sqlite3.connect(ro_uri(path, immutable), uri=True, timeout=lock_wait(timeout), isolation_level=None)
    conn.text_factory = text_factory  # values with invalid UTF-8 become BadText, never an exception
    try:
        conn.execute("PRAGMA query_only=ON")
    except BaseException:
        conn.close()
        raise
    return conn


# A corrupt schema makes SQLite's own error text invalid UTF-8, and Python's
# sqlite3 raises UnicodeDecodeError decoding it: that is a database error too.
SQLITE_ERRORS = (sqlite3.Error, UnicodeDecodeError)


def sqlite_finding(exc: Exception, path: str, scope_id: str | None, after: str = "") -> Finding:
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
        code, why = (
            "db-hot-journal",
            (
                "has a hot -journal from an interrupted write; SAM rolls it back on its next open "
                "(samctl reads only, so it cannot)"
            ),
        )
    else:
        code, why = "db-unreadable", f"cannot be read: {msg}"
    return Finding(code, path, why + after, ERROR, scope_id)


def open_readwrite(path, timeout: float = DEFAULT_TIMEOUT) -> sqlite3.Connection:
    """A ``mode=rw`` (never created), autocommit connection with ``trusted_schema=OFF``, for a store's own
    write guard to check before it writes.  Raises FileProblem (as ``preflight``, or ``db-unreadable``)."""
    preflight(path, writing=True)
    try:
        conn = sqlite3.connect(rw_uri(path), uri=True, timeout=lock_wait(timeout), isolation_level=None)
    except SQLITE_ERRORS as exc:
        raise FileProblem("db-unreadable", path, f"cannot open for writing: {exc}") from None
    try:
        conn.execute("PRAGMA trusted_schema=OFF")  # (belt and braces: no SQL functions from the schema)
    except BaseException:
        conn.close()
        raise
    return conn
