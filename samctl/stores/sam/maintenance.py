"""compact's work on SAM's SQLite files: VACUUM a database that has free pages."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from samctl.errors import FileProblem, SamctlError
from samctl.fs import faults, filemodes
from samctl.stores import sqlite
from samctl.stores.sam import sqlitefile


def vacuum(path: Path, dry_run: bool) -> tuple[int, int]:
    """(free pages, size after) of VACUUMing ``path``, only if its schema is exactly SAM's
    (``sqlitefile.open_for_writing``).  A dry run opens it read-only for real (no -shm or -wal created,
    no hot journal rolled back), says what the real run would refuse, and estimates the size.
    SamctlError when it cannot or must not be vacuumed.  A database whose header says it has no
    free pages is not opened at all, whatever its schema: there is nothing to do to it."""
    table = sqlitefile.MEMORY_TABLE if path.name == "memory.db" else sqlitefile.ARCHIVE_TABLE
    st = filemodes.lstat(path)
    size = st.st_size if st is not None else 0
    if not size:
        return 0, 0  # an empty database SAM fills on its next open: nothing to vacuum
    if sqlite.free_pages_in_header(path) == 0:
        return 0, size  # nothing to vacuum, so nothing to open (a cron run meets mostly these)
    try:
        if dry_run:
            db = sqlitefile.open_readonly(path, timeout=0)
            try:
                sqlitefile.check_writable(db, path, table)
            except BaseException:
                db.close()
                raise
        else:
            db = sqlitefile.open_for_writing(path, table, timeout=0)
    except FileProblem as exc:
        why = "not vacuumed" if exc.code == "db-schema" else "cannot open"
        raise SamctlError(f"{why}: {exc.message}") from None
    except sqlite3.Error as exc:
        raise SamctlError(f"cannot open: {exc}") from None
    try:
        free = db.execute("PRAGMA freelist_count").fetchone()[0]
        page = db.execute("PRAGMA page_size").fetchone()[0]
        if not free:
            return 0, size
        if dry_run:
            return free, max(0, size - free * page)
        faults.step("vacuum")
        db.execute("VACUUM")
    except sqlite3.Error as exc:
        raise SamctlError(f"cannot VACUUM: {exc}") from None
    finally:
        db.close()
    after = filemodes.lstat(path)
    return free, after.st_size if after else 0
