"""Opening SAM's SQLite files (``memory.db`` sam.md §7, ``context_archive.db`` sam.md §8) safely, and checking them.

Reading changes nothing (``mode=ro``, ``query_only``, no journal, -wal or -shm created, short batches);
writing only through ``open_for_writing``, on a file whose schema is exactly SAM's; bad files are findings,
never raised.

Design notes: docs/stores.md, "stores/sam/sqlitefile.py".
"""

from __future__ import annotations

import os
import sqlite3
import stat
from collections import Counter
from contextlib import contextmanager

from samctl.errors import FileProblem
from samctl.fs import filemodes
from samctl.model import ERROR, WARNING, Finding
from samctl.stores.sqlite import (  # noqa: F401
    DEFAULT_TIMEOUT,
    SQLITE_ERRORS,
    BadText,
    open_readonly,
    open_readwrite,
    rollback_mode,
    row_batches,
    sqlite_finding,
    text_factory,
)

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

# (name, declared type, notnull, default, pk) as PRAGMA table_info reports them for sam.md §7.2 / §8.
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

BATCH = 1000  # rows per read statement; the shared lock is released between batches
MAX_ROW_FINDINGS = 100  # per code per file; then one finding counts the rest


# ---------------------------------------------------------------------------------------------
# Rows as they come out of a connection


class Reporter:
    """Row findings of one file, at most ``limit`` per code, then a count of the rest.

    ``limit`` is ``MAX_ROW_FINDINGS`` as the reader's own module (``memorydb``, ``archivedb``)
    has it when the read starts, so a test can lower it there.
    """

    def __init__(self, findings: list, path: str, scope_id: str | None, limit: int):
        self.findings = findings
        self.path = path
        self.scope_id = scope_id
        self.limit = limit
        self.seen: Counter = Counter()
        self.severity: dict[str, str] = {}

    def add(self, code: str, reason: str, severity: str = ERROR) -> None:
        self.seen[code] += 1
        self.severity.setdefault(code, severity)
        if self.seen[code] <= self.limit:
            self.findings.append(Finding(code, self.path, reason, severity, self.scope_id))

    def finish(self) -> None:
        for code, n in self.seen.items():
            if n > self.limit:
                self.findings.append(
                    Finding(
                        code,
                        self.path,
                        f"{n - self.limit} more rows with this problem (not listed)",
                        self.severity[code],
                        self.scope_id,
                    )
                )


# ---------------------------------------------------------------------------------------------
# Opening


def open_for_writing(path, table: str, timeout: float = DEFAULT_TIMEOUT) -> sqlite3.Connection:
    """The one way samctl opens a SAM database to change it (``memorydb.touch_memories``, compact's
    VACUUM, restore's retarget; any future writer): ``mode=rw`` (never created), autocommit, and
    only if its schema is exactly the spec's for ``table`` (``exact_schema_problem``).

    A trigger, a view, another table (one whose foreign key points at ``table``, say) or any other
    difference would make a write do more than samctl means, or act on what SAM does not have: such a
    file is refused.  A writer that changes rows must call ``check_writable`` again inside its
    ``BEGIN IMMEDIATE`` (``write_transaction`` does), so that nothing is added in between.  Raises
    FileProblem (``db-schema`` for the schema; else as ``stores.sqlite.preflight``, or ``db-unreadable``) and
    sqlite3.Error.
    """
    conn = open_readwrite(path, timeout)
    try:
        check_writable(conn, path, table)
    except BaseException:
        conn.close()
        raise
    return conn


@contextmanager
def write_transaction(path, table: str, timeout: float = DEFAULT_TIMEOUT):
    """``open_for_writing``, then ``BEGIN IMMEDIATE`` and the schema check again under the write
    lock; yields the connection, commits when the block ends, rolls back if it raises."""
    conn = open_for_writing(path, table, timeout)
    try:
        conn.execute("BEGIN IMMEDIATE")
        try:
            check_writable(conn, path, table)
            yield conn
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                try:
                    conn.execute("ROLLBACK")
                except SQLITE_ERRORS:
                    pass
            raise
    finally:
        conn.close()


def check_writable(conn: sqlite3.Connection, path, table: str) -> None:
    """Raise FileProblem ``db-schema`` unless the schema is exactly the spec's (see ``open_for_writing``)."""
    problem = exact_schema_problem(conn, table)
    if problem is not None:
        raise FileProblem(
            "db-schema", path, f"its schema is not exactly SAM's ({problem}): samctl does not write to it"
        )


def exact_schema_problem(conn: sqlite3.Connection, table: str) -> str | None:
    """The first way the schema differs from the spec's for ``table`` (sam.md §7.2, §8), or None: every
    ``schema_problems`` line, and any object besides the table, its indexes and SQLite's automatic
    index (no trigger, view or other table, whatever its name), and no hidden or generated column."""
    master = _master(conn)
    key = ("exact", table, master)
    if key not in _SCHEMAS:
        problem = _exact_problem(conn, table, master)
        if len(_SCHEMAS) >= 64:
            _SCHEMAS.clear()
        _SCHEMAS[key] = problem
    return _SCHEMAS[key]


def _master(conn: sqlite3.Connection) -> tuple:
    """Every row of sqlite_master with its SQL: what SQLite builds the database's schema from."""
    return tuple(conn.execute("SELECT type, name, tbl_name, sql FROM sqlite_master").fetchall())


def _exact_problem(conn: sqlite3.Connection, table: str, master: tuple) -> str | None:
    """``exact_schema_problem`` for a schema not seen yet (``master``: ``_master(conn)``)."""
    fatal, minor = _schema_check(conn, table, master)
    problems = fatal + minor
    if problems:
        return problems[0] + (f" (and {len(problems) - 1} more differences)" if len(problems) > 1 else "")
    for kind, name, tbl, _ in master:
        if kind == "table" and name == table:
            continue
        if (
            kind == "index"
            and tbl == table
            and (name in _INDEXES[table] or str(name).startswith(f"sqlite_autoindex_{table}_"))
        ):
            continue
        return f"unexpected {kind} {name}"
    q = '"' + table.replace('"', '""') + '"'
    if len(conn.execute(f"PRAGMA table_xinfo({q})").fetchall()) != len(_COLUMNS[table]):
        return f"{table} has hidden or generated columns"
    return None


def open_checked(path, findings: list, table: str, timeout: float, scope_id: str | None, missing_ok: bool):
    """Open read-only and check the schema; None (after adding findings) if nothing can be read."""
    spath = os.fspath(path)
    st = filemodes.lstat(spath)
    if st is not None and stat.S_ISREG(st.st_mode) and st.st_size == 0:
        findings.append(
            Finding("db-empty", spath, "0-byte database (SAM creates its tables on its next open)", WARNING, scope_id)
        )
        return None
    try:
        conn = open_readonly(path, timeout)
    except FileProblem as exc:
        if exc.code == "missing" and missing_ok:
            return None
        findings.append(Finding(exc.code, spath, exc.message, ERROR, scope_id))
        return None
    except SQLITE_ERRORS as exc:
        findings.append(sqlite_finding(exc, spath, scope_id))
        return None
    wal = filemodes.lstat(spath + "-wal")
    if wal is not None and rollback_mode(spath):
        findings.append(
            Finding(
                "db-stray-wal",
                spath + "-wal",
                "a -wal file beside a database that is not in WAL "
                "mode (debris; SQLite would use it): the database was read without it",
                WARNING,
                scope_id,
            )
        )
    try:
        fatal, minor = _schema_check(conn, table)
    except SQLITE_ERRORS as exc:
        conn.close()
        findings.append(sqlite_finding(exc, spath, scope_id))
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


def _schema_check(conn: sqlite3.Connection, table: str, master: tuple | None = None) -> tuple[list[str], list[str]]:
    """(fatal, minor) differences from the spec's schema of ``table``.

    Fatal: the table or one of its columns is missing, or it has no rowid; rows cannot be read.
    Minor: other column types/constraints, extra columns, missing or different indexes, extra
    tables, views or triggers.
    """
    master = _master(conn) if master is None else master
    key = (table, master)
    known = _SCHEMAS.get(key)
    if known is None:
        known = _schema_differences(conn, table, [r[:3] for r in master])
        if len(_SCHEMAS) >= 64:
            _SCHEMAS.clear()
        _SCHEMAS[key] = known
    return list(known[0]), list(known[1])


# (table, every row of sqlite_master with its SQL) -> (fatal, minor): SQLite builds a database's schema
# from those rows alone, so databases written by one SAM build (a store holds thousands) share an answer.
_SCHEMAS: dict = {}


def _schema_differences(conn: sqlite3.Connection, table: str, objects: list) -> tuple[list[str], list[str]]:
    """``_schema_check`` for a schema not seen yet; ``objects``: (type, name, tbl_name) of sqlite_master."""
    fatal: list[str] = []
    minor: list[str] = []
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
            minor.append(
                f"column {name} is {'NOT NULL' if gnotnull else 'nullable'}, expected "
                f"{'NOT NULL' if notnull else 'nullable'}"
            )
        if _norm_default(gdefault) != default:
            minor.append(f"column {name} has default {gdefault}, expected {default if default is not None else 'none'}")
        if bool(gpk) != bool(pk):
            minor.append(
                f"column {name} is {'' if gpk else 'not '}the primary key, expected "
                f"{'' if pk else 'not '}the primary key"
            )
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
            minor.append(
                f"index {idx} is {'UNIQUE ' if have[idx][2] else ''}on ({', '.join(map(str, gcols))}), "
                f"expected ({', '.join(cols)})"
            )
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
    """Every difference between the database's ``table`` and the spec (sam.md §7.2, or sam.md §8 for
    ``ARCHIVE_TABLE``), one line each; [] when it matches.

    Columns are compared through ``PRAGMA table_info`` (name, declared type, NOT NULL, default,
    primary key) and indexes through ``PRAGMA index_list``/``index_info``, not through SQL text,
    so whitespace and quoting differences do not count.
    """
    fatal, minor = _schema_check(conn, table)
    return fatal + minor
