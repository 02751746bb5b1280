"""samctl never writes to a SQLite database whose schema is not exactly SAM's (issue 20, finding 3):
a trigger, a view or a table referencing the memory table makes search --touch, compact's VACUUM and
restore --as-new refuse that file with a finding, and leave it byte for byte as it was."""

from __future__ import annotations

import hashlib
import json
import re
import sqlite3
from pathlib import Path

import pytest

from samctl.errors import FileProblem
from samctl.stores.sam import archivedb, memorydb, sqlitefile
from tests.cli.test_lifecycle import API, PINNED, SID, TOPIC, attic_of, conv

REPO = Path(__file__).resolve().parents[2]
ARCHIVE_ID = "0D3C2B1A-0000-4000-8000-000000000001"

# (name, statements added to a database holding `table`): each turns a write into something else
HOSTILE = {
    "trigger": ["CREATE TRIGGER wipe AFTER UPDATE ON {t} BEGIN DELETE FROM {t}; END"],
    "trigger-on-delete": ["CREATE TRIGGER keep BEFORE DELETE ON {t} BEGIN SELECT RAISE(ABORT, 'no'); END"],
    "view": ["CREATE VIEW everything AS SELECT * FROM {t}"],
    "foreign-table": [
        "CREATE TABLE refs (mid TEXT REFERENCES {t}(id) ON UPDATE CASCADE ON DELETE CASCADE)",
        "INSERT INTO refs SELECT id FROM {t}",
    ],
}


def add(db: Path, what: str, table: str = sqlitefile.MEMORY_TABLE, free_pages: bool = False) -> None:
    c = sqlite3.connect(db)
    if free_pages:  # something for VACUUM to do
        c.execute("CREATE TABLE filler (x)")
        c.executemany("INSERT INTO filler VALUES (?)", [("x" * 1000,)] * 200)
        c.commit()
        c.execute("DROP TABLE filler")
    for stmt in HOSTILE[what]:
        c.execute(stmt.format(t=table))
    c.commit()
    c.close()


def state(p: Path) -> tuple:
    st = p.stat()
    return hashlib.sha256(p.read_bytes()).hexdigest(), st.st_size, st.st_mtime_ns


def rows(db: Path, table: str = sqlitefile.MEMORY_TABLE) -> list:
    c = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return c.execute(f"SELECT * FROM {table} ORDER BY id").fetchall()
    finally:
        c.close()


@pytest.mark.parametrize("what", HOSTILE)
def test_search_touch_refuses_a_database_with_its_own_schema(run, sam_demo, what):
    db = conv(sam_demo) / SID / "memory.db"
    add(db, what)
    before, kept = state(db), rows(db)
    r = run(
        "--root",
        sam_demo,
        "search",
        "portland budget",
        "--in",
        "memories",
        "--conversation",
        SID,
        "--rank",
        "sam",
        "--threshold",
        "0",
        "--touch",
        "--format",
        "json",
    )
    assert r.exit_code == 3, r.output
    assert json.loads(r.stdout), "the search itself still answers"
    assert "db-schema" in r.stderr and "not exactly SAM's" in r.stderr and "not touched" in r.stderr
    assert "touched 0 memories" in r.stderr
    assert state(db) == before and rows(db) == kept


def test_search_touch_still_touches_the_other_databases(run, sam_demo):
    """One refused file does not stop the others (the scope's memory.db is SAM's exactly)."""
    mine, shared = conv(sam_demo) / SID / "memory.db", conv(sam_demo) / TOPIC / "memory.db"
    add(mine, "trigger")
    before, other = state(mine), state(shared)
    r = run(
        "--root",
        sam_demo,
        "search",
        "budget portland",
        "--in",
        "memories",
        "--rank",
        "sam",
        "--threshold",
        "0",
        "--touch",
    )
    assert r.exit_code == 3, r.output
    assert state(mine) == before and state(shared) != other
    assert re.search(r"touched [1-9]\d* memor", r.stderr)


@pytest.mark.parametrize(
    "name,table", [("memory.db", sqlitefile.MEMORY_TABLE), ("context_archive.db", sqlitefile.ARCHIVE_TABLE)]
)
@pytest.mark.parametrize("what", HOSTILE)
def test_compact_does_not_vacuum_a_database_with_its_own_schema(run, sam_demo, what, name, table):
    db = conv(sam_demo) / SID / name
    if name == "context_archive.db":
        archivedb.create_archive_db(db, [{"id": ARCHIVE_ID, "conversation_id": SID, "messages": []}])
    add(db, what, table, free_pages=True)
    before = state(db)
    for dry in ([], ["--dry-run"]):
        r = run("--root", sam_demo, "compact", "--force", "-v", *dry)
        assert r.exit_code == 3, r.output
        assert "compact-skipped" in r.stderr and "not vacuumed" in r.stderr, r.stderr
        assert "not exactly SAM's" in r.stderr and name in r.stderr, r.stderr
        assert state(db) == before


@pytest.mark.parametrize("what", HOSTILE)
def test_compact_leaves_a_database_without_free_pages_unopened(run, sam_demo, what):
    """Nothing to vacuum: neither run opens it, so its schema is not compact's business (check's is)."""
    db = conv(sam_demo) / SID / "memory.db"
    add(db, what)
    c = sqlite3.connect(db)
    assert c.execute("PRAGMA freelist_count").fetchone()[0] == 0
    c.close()
    before = state(db)
    for dry in (["--dry-run"], []):
        r = run("--root", sam_demo, "compact", "--force", "-v", *dry)
        assert r.exit_code == 0, r.output
        assert "not vacuumed" not in r.stderr and "memory.db" not in r.stderr, r.stderr
        assert state(db) == before
        assert sorted(p.name for p in db.parent.iterdir() if p.name.startswith("memory.db")) == ["memory.db"]


def test_compact_still_vacuums_a_database_of_sams_schema(run, sam_demo):
    db = conv(sam_demo) / SID / "memory.db"
    c = sqlite3.connect(db)
    c.execute("DELETE FROM conversation_memories WHERE rowid > 1")
    c.commit()
    c.close()
    size = db.stat().st_size
    r = run("--root", sam_demo, "compact", "--force", "-v")
    assert r.exit_code == 0, r.output
    assert db.stat().st_size < size


@pytest.mark.parametrize(
    "name,table", [("memory.db", sqlitefile.MEMORY_TABLE), ("context_archive.db", sqlitefile.ARCHIVE_TABLE)]
)
@pytest.mark.parametrize("what", HOSTILE)
def test_restore_as_new_refuses_a_database_with_its_own_schema(run, sam_demo, what, name, table):
    db = conv(sam_demo) / SID / name
    if name == "context_archive.db":
        archivedb.create_archive_db(db, [{"id": ARCHIVE_ID, "conversation_id": SID, "messages": []}])
    add(db, what, table)
    before, kept = state(db), rows(db, table)
    assert run("--root", sam_demo, "rm", SID).exit_code == 0
    entries = sorted(attic_of(sam_demo).iterdir())
    r = run("--root", sam_demo, "restore", SID, "--as-new")
    assert r.exit_code in (1, 3), r.output
    assert "under a new id" in r.stderr and name in r.stderr and "not exactly SAM's" in r.stderr, r.stderr
    assert sorted(d.name for d in conv(sam_demo).iterdir() if d.is_dir()) == sorted([PINNED, TOPIC, API])
    assert sorted(attic_of(sam_demo).iterdir()) == entries
    # under its own id nothing is rewritten: it comes back as it went
    assert run("--root", sam_demo, "restore", SID).exit_code == 0
    assert rows(db, table) == kept and state(db)[:2] == before[:2]


def test_restore_as_new_still_rewrites_a_database_of_sams_schema(run, sam_demo):
    assert run("--root", sam_demo, "rm", SID).exit_code == 0
    r = run("--root", sam_demo, "restore", SID, "--as-new")
    assert r.exit_code == 0, r.output
    [new] = [d for d in conv(sam_demo).iterdir() if d.is_dir() and d.name not in (PINNED, TOPIC, API)]
    assert {row[1] for row in rows(new / "memory.db")} == {new.name}


# --- the one place ---------------------------------------------------------------------------------


def test_exact_schema_of_what_sam_writes(tmp_path):
    m = memorydb.create_memory_db(tmp_path / "memory.db")
    a = archivedb.create_archive_db(tmp_path / "context_archive.db")
    for p, table in ((m, sqlitefile.MEMORY_TABLE), (a, sqlitefile.ARCHIVE_TABLE)):
        sqlitefile.open_for_writing(p, table).close()
    with pytest.raises(FileProblem) as e:  # the other file's table is not this one
        sqlitefile.open_for_writing(m, sqlitefile.ARCHIVE_TABLE)
    assert e.value.code == "db-schema"


@pytest.mark.parametrize("what", list(HOSTILE) + ["index", "generated-column", "temp-free"])
def test_open_for_writing_refuses_any_other_schema(tmp_path, what):
    p = memorydb.create_memory_db(tmp_path / "memory.db")
    if what in HOSTILE:
        add(p, what)
    else:
        c = sqlite3.connect(p)
        if what == "index":
            c.execute("CREATE INDEX extra ON conversation_memories(content)")
        elif what == "generated-column":
            c.execute("ALTER TABLE conversation_memories ADD COLUMN g TEXT GENERATED ALWAYS AS (content) VIRTUAL")
        else:
            c.execute("CREATE TABLE t (x)")
        c.commit()
        c.close()
    before = state(p)
    with pytest.raises(FileProblem) as e:
        sqlitefile.open_for_writing(p, sqlitefile.MEMORY_TABLE)
    assert e.value.code == "db-schema" and "not exactly SAM's" in e.value.message
    with pytest.raises(FileProblem):
        memorydb.touch_memories(p, ["296E5007-66D6-4DA2-B9F5-7BC7B9542F8E"])
    assert state(p) == before


def test_a_trigger_added_after_the_open_is_seen_under_the_write_lock(tmp_path, monkeypatch):
    """The check runs again inside BEGIN IMMEDIATE: a trigger created between the open and the write
    (by another program) is refused too."""
    p = memorydb.create_memory_db(tmp_path / "memory.db")
    real = sqlitefile.open_for_writing

    def open_then_add(path, table, timeout=sqlitefile.DEFAULT_TIMEOUT):
        conn = real(path, table, timeout)
        add(Path(path), "trigger")
        return conn

    monkeypatch.setattr(sqlitefile, "open_for_writing", open_then_add)
    with pytest.raises(FileProblem) as e:
        memorydb.touch_memories(p, ["296E5007-66D6-4DA2-B9F5-7BC7B9542F8E"])
    assert "trigger wipe" in e.value.message


def test_every_sqlite_writer_goes_through_open_for_writing():
    """No module but sqlitefile opens a SAM database for writing (the fixture makers aside): a future
    writer cannot skip the schema rule."""
    offenders = []
    for path in (REPO / "samctl").rglob("*.py"):
        text = path.read_text()
        rel = path.relative_to(REPO).as_posix()
        if rel in ("samctl/stores/sam/sqlitefile.py", "samctl/stores/sqlite.py"):  # (the guard, the raw opener)
            continue
        for m in re.finditer(r"rw_uri\(|sqlite3\.connect\(|open_readwrite\(", text):
            line = text[: m.start()].count("\n") + 1
            func = re.findall(r"^def (\w+)", text[: m.start()], re.M)
            if func and func[-1] in ("create_memory_db", "create_archive_db"):
                continue
            offenders.append(f"{rel}:{line}")
    assert offenders == []
