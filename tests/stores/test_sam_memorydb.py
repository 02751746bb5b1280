"""memory.db / context_archive.db: sam.md §7.2, §7.3, §8, §15.3, and the read-only guarantees."""

from __future__ import annotations

import hashlib
import math
import os
import sqlite3
import struct
import subprocess
import sys
import textwrap
import threading
from datetime import datetime, timezone
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from samctl.errors import Busy, FileProblem
from samctl.model import ERROR, WARNING
from samctl.search.sam_scoring import cosine
from samctl.stores import sqlite as sqlitestore
from samctl.stores.sam import memorydb as mdb
from samctl.stores.sam.memorydb import (
    ARCHIVE_SCHEMA_SQL,
    SCHEMA_SQL,
    MemoryRow,
    create_archive_db,
    create_memory_db,
    format_db_date,
    iter_memories,
    open_readonly,
    parse_db_date,
    read_archives,
    read_memories,
    schema_problems,
    touch_memories,
)

SCOPE = "8B58CBC4-ACA7-4811-AE66-C01921690310"
ID1 = "296E5007-66D6-4DA2-B9F5-7BC7B9542F8E"
ID2 = "AB2B1E7D-4173-496C-8D08-F7CA82E37410"
MEM1 = "User wants a weekend trip to Portland within a $500 budget."
MEM2 = "Weather: Saturday 24°C sunny, Sunday 19°C light rain in Portland."

# sam.md §7.2, verbatim
SPEC_SCHEMA = [
    'CREATE TABLE IF NOT EXISTS "conversation_memories" ("id" TEXT PRIMARY KEY NOT NULL, "conversation_id" TEXT NOT '
    'NULL, "content" TEXT NOT NULL, "content_type" TEXT NOT NULL, "embedding" BLOB, "importance" REAL NOT NULL, '
    '"created_at" TEXT NOT NULL, "access_count" INTEGER NOT NULL DEFAULT (0), "last_accessed" TEXT NOT NULL, '
    '"tags" TEXT);',
    "CREATE INDEX IF NOT EXISTS idx_conversation_id ON conversation_memories(conversation_id);",
    "CREATE INDEX IF NOT EXISTS idx_created_at ON conversation_memories(created_at);",
    "CREATE INDEX IF NOT EXISTS idx_importance ON conversation_memories(importance);",
]
# sam.md §8, verbatim
SPEC_ARCHIVE_SCHEMA = [
    'CREATE TABLE IF NOT EXISTS "context_archives" ("id" TEXT PRIMARY KEY NOT NULL, "conversation_id" TEXT NOT NULL, '
    '"messages_json" TEXT NOT NULL, "time_start" TEXT NOT NULL, "time_end" TEXT NOT NULL, "summary" TEXT NOT NULL, '
    '"key_topics_json" TEXT NOT NULL, "token_count" INTEGER NOT NULL, "reason" TEXT NOT NULL, "created_at" TEXT NOT '
    "NULL);",
    'CREATE INDEX IF NOT EXISTS "index_context_archives_on_conversation_id" ON "context_archives" ("conversation_id");',
    'CREATE INDEX IF NOT EXISTS "index_context_archives_on_time_start" ON "context_archives" ("time_start");',
]


def vec(n, **nz) -> bytes:
    v = [0.0] * n
    for k, x in nz.items():
        v[int(k[1:])] = x
    return struct.pack("<%dd" % n, *v)


def spec_rows(scope=SCOPE):
    return [
        (
            ID1,
            scope,
            MEM1,
            "user_input",
            vec(512, i3=0.6, i200=0.8),
            0.8,
            "2026-08-10T14:02:12.345",
            0,
            "2026-08-10T14:02:12.345",
            None,
        ),
        (
            ID2,
            scope,
            MEM2,
            "tool_result",
            vec(512, i3=0.8, i401=0.6),
            0.5,
            "2026-08-10T14:02:20.118",
            2,
            "2026-08-10T14:09:41.502",
            "weather,portland",
        ),
    ]


def uid(n: int) -> str:
    return f"{n:08X}-0000-4000-8000-{n:012X}"


def good(n: int, scope=SCOPE, **over):
    row = dict(
        id=uid(n),
        conversation_id=scope,
        content=f"memory {n}",
        content_type="message",
        embedding=vec(256, i1=1.0),
        importance=0.5,
        created_at="2026-08-10T14:02:12.345",
        access_count=0,
        last_accessed="2026-08-10T14:02:12.345",
        tags=None,
    )
    row.update(over)
    return tuple(row.values())


@pytest.fixture
def folder(tmp_path):
    d = tmp_path / SCOPE
    d.mkdir()
    return d


@pytest.fixture
def spec_db(folder):
    return create_memory_db(folder / "memory.db", spec_rows())


def snapshot(root: Path) -> dict:
    """Every file under root: bytes hash, size, mtime (ns), mode."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            p = os.path.join(dirpath, name)
            st = os.lstat(p)
            h = None
            if os.path.isfile(p) and not os.path.islink(p):
                with open(p, "rb") as f:
                    h = hashlib.sha256(f.read()).hexdigest()
            out[os.path.relpath(p, root)] = (h, st.st_size, st.st_mtime_ns, st.st_mode)
    return out


def codes(findings):
    return [f.code for f in findings]


# --- schema --------------------------------------------------------------------------------------


def test_schema_sql_is_the_spec_text():
    assert SCHEMA_SQL.splitlines() == SPEC_SCHEMA
    assert ARCHIVE_SCHEMA_SQL.splitlines() == SPEC_ARCHIVE_SCHEMA


def test_created_db_matches_spec(spec_db):
    conn = sqlite3.connect(spec_db)
    names = sorted(r[0] for r in conn.execute("SELECT name FROM sqlite_master"))
    sql = {r[0]: r[1] for r in conn.execute("SELECT name, sql FROM sqlite_master")}
    conn.close()
    assert names == [
        "conversation_memories",
        "idx_conversation_id",
        "idx_created_at",
        "idx_importance",
        "sqlite_autoindex_conversation_memories_1",
    ]
    assert sql["conversation_memories"] == SPEC_SCHEMA[0][:-1].replace(" IF NOT EXISTS", "")
    assert os.stat(spec_db).st_mode & 0o777 == 0o600
    conn = open_readonly(spec_db)
    assert schema_problems(conn) == []
    conn.close()


def test_schema_compared_by_pragma_not_text(folder):
    p = folder / "memory.db"
    conn = sqlite3.connect(p)
    conn.executescript(
        textwrap.dedent("""
        create table conversation_memories (
            id text not null primary key, conversation_id text not null, content text not null,
            content_type text not null, embedding blob, importance real not null, created_at text not null,
            access_count integer not null default 0, last_accessed text not null, tags text);
        create index "idx_conversation_id" on "conversation_memories" ("conversation_id");
        create index idx_created_at on conversation_memories (created_at);
        create index idx_importance on conversation_memories(importance);
    """)
    )
    conn.close()
    conn = open_readonly(p)
    assert schema_problems(conn) == []
    conn.close()


def test_schema_differences_are_listed(folder):
    p = folder / "memory.db"
    conn = sqlite3.connect(p)
    conn.executescript(
        SCHEMA_SQL.replace('"tags" TEXT', '"tags" TEXT, "extra" INT').replace(
            '"importance" REAL NOT NULL', '"importance" TEXT'
        )
    )
    conn.execute("DROP INDEX idx_importance")
    conn.execute("CREATE INDEX idx_other ON conversation_memories(content)")
    conn.execute("CREATE TABLE other(x)")
    conn.close()
    conn = open_readonly(p)
    probs = schema_problems(conn)
    conn.close()
    assert "column importance is TEXT, expected REAL" in probs
    assert "column importance is nullable, expected NOT NULL" in probs
    assert "unexpected column extra" in probs
    assert "missing index idx_importance" in probs
    assert "unexpected index idx_other" in probs
    assert "unexpected table other" in probs


def test_archive_schema(folder):
    p = create_archive_db(folder / "context_archive.db", [])
    conn = open_readonly(p)
    assert schema_problems(conn, mdb.ARCHIVE_TABLE) == []
    assert schema_problems(conn) == ["no table conversation_memories"]
    conn.close()


# --- sam.md §15.3 example --------------------------------------------------------------------------------


def test_reads_spec_example(spec_db):
    findings = []
    rows = read_memories(spec_db, findings, scope_id=SCOPE)
    assert findings == []
    assert [r.id for r in rows] == [ID1, ID2]  # rowid order
    a, b = rows
    assert isinstance(a, MemoryRow)
    assert (a.conversation_id, a.content, a.content_type, a.importance) == (SCOPE, MEM1, "user_input", 0.8)
    assert (a.created_at, a.access_count, a.last_accessed, a.tags) == (
        "2026-08-10T14:02:12.345",
        0,
        "2026-08-10T14:02:12.345",
        [],
    )
    assert b.tags == ["weather", "portland"] and b.access_count == 2 and b.last_accessed == "2026-08-10T14:09:41.502"
    assert len(a.embedding) == 4096 and a.dimension == 512
    # the hex route of the sam.md §15.3 SQL gives the same blobs
    assert a.embedding == bytes.fromhex(
        "0" * 48 + "333333333333E33F" + "0" * 16 * 196 + "9A9999999999E93F" + "0" * 16 * 311
    )
    assert b.embedding == bytes.fromhex(
        "0" * 48 + "9A9999999999E93F" + "0" * 16 * 397 + "333333333333E33F" + "0" * 16 * 110
    )
    va, vb = a.vector(), b.vector()
    assert (va[3], va[200], vb[3], vb[401]) == (0.6, 0.8, 0.8, 0.6)
    assert sum(1 for x in va if x) == 2
    assert round(cosine(va, vb), 6) == 0.48
    assert a.created_ts == parse_db_date("2026-08-10T14:02:12.345")
    assert a.to_dict()["dimension"] == 512


@pytest.mark.skipif(sqlite3.sqlite_version_info < (3, 41), reason="unhex() needs SQLite 3.41")
def test_spec_sql_route_equals_python_route(folder):
    p = folder / "sql.db"
    conn = sqlite3.connect(p)
    conn.executescript(SCHEMA_SQL)
    conn.execute(
        "INSERT INTO conversation_memories VALUES (?, ?, ?, 'user_input', unhex(printf('%.*c', 16*3, '0') || "
        "'333333333333E33F' || printf('%.*c', 16*196, '0') || '9A9999999999E93F' || printf('%.*c', 16*311, '0')), "
        "0.8, '2026-08-10T14:02:12.345', 0, '2026-08-10T14:02:12.345', NULL)",
        (ID1, SCOPE, MEM1),
    )
    conn.commit()
    conn.close()
    assert read_memories(p, [])[0].embedding == vec(512, i3=0.6, i200=0.8)


# --- read-only proof ------------------------------------------------------------------------------


def test_reading_changes_nothing(spec_db, folder):
    create_archive_db(folder / "context_archive.db", [archive_row()])
    before = snapshot(folder.parent)
    findings = []
    assert len(read_memories(spec_db, findings, scope_id=SCOPE)) == 2
    assert len(read_archives(folder / "context_archive.db", findings, scope_id=SCOPE)) == 1
    it = iter_memories(spec_db, findings)
    next(it)
    it.close()
    conn = open_readonly(spec_db)
    assert schema_problems(conn) == []
    with pytest.raises(sqlite3.OperationalError):
        conn.execute("DELETE FROM conversation_memories")
    conn.close()
    assert findings == []
    assert snapshot(folder.parent) == before
    assert sorted(os.listdir(folder)) == ["context_archive.db", "memory.db"]  # no -journal, -wal, -shm


def test_missing_file_is_never_created(folder):
    p = folder / "memory.db"
    with pytest.raises(FileProblem) as e:
        open_readonly(p)
    assert e.value.code == "missing"
    findings = []
    assert read_memories(p, findings) == [] and codes(findings) == ["missing"]
    findings = []
    assert read_memories(p, findings, missing_ok=True) == [] and findings == []
    assert read_archives(folder / "context_archive.db", findings, missing_ok=True) == [] and findings == []
    with pytest.raises(FileProblem):
        touch_memories(p, [ID1])
    assert os.listdir(folder) == []


@pytest.mark.parametrize("name", ["a b", "a?b", "a#b", "a%20b", "a?mode=rw#x", "ü ñ"])
def test_odd_paths_are_quoted(tmp_path, name):
    d = tmp_path / name
    d.mkdir()
    p = create_memory_db(d / "memory.db", spec_rows())
    before = snapshot(tmp_path)
    findings = []
    assert [r.id for r in read_memories(p, findings)] == [ID1, ID2] and findings == []
    assert snapshot(tmp_path) == before
    assert sorted(os.listdir(tmp_path)) == [name]  # nothing created at a truncated path either


def make_hot_journal(p: Path):
    """Leave a hot journal, as a process that died in the middle of a write would."""
    code = textwrap.dedent(f"""
        import sqlite3, os
        db = sqlite3.connect({str(p)!r}, isolation_level=None)
        db.execute("PRAGMA cache_size=1")
        db.execute("BEGIN")
        for i in range(300):
            db.execute("UPDATE conversation_memories SET content = ? WHERE rowid = ?", ("y" * 900, i))
        db.execute("DELETE FROM conversation_memories WHERE rowid % 2 = 0")
        os._exit(0)
    """)
    subprocess.run([sys.executable, "-c", code], check=True)


def test_hot_journal_is_a_finding_and_left_alone(folder):
    p = create_memory_db(folder / "memory.db", [good(i, content="x" * 900) for i in range(300)])
    make_hot_journal(p)
    assert (folder / "memory.db-journal").exists()
    before = snapshot(folder)
    findings = []
    assert read_memories(p, findings) == []
    assert codes(findings) == ["db-hot-journal"]
    assert snapshot(folder) == before


def make_wal(p: Path, keep_log: bool):
    create_memory_db(p, spec_rows())
    conn = sqlite3.connect(p)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.commit()
    conn.close()
    if keep_log:
        code = textwrap.dedent(f"""
            import sqlite3, os
            db = sqlite3.connect({str(p)!r})
            db.execute("PRAGMA wal_autocheckpoint=0")
            db.execute("UPDATE conversation_memories SET access_count = 9")
            db.commit()
            os._exit(0)
        """)
        subprocess.run([sys.executable, "-c", code], check=True)


def test_wal_database_without_log_is_read_without_creating_files(folder):
    p = folder / "memory.db"
    make_wal(p, keep_log=False)
    assert sorted(os.listdir(folder)) == ["memory.db"]
    before = snapshot(folder)
    findings = []
    assert [r.id for r in read_memories(p, findings)] == [ID1, ID2] and findings == []
    assert snapshot(folder) == before


def test_wal_database_with_log_is_refused(folder):
    p = folder / "memory.db"
    make_wal(p, keep_log=True)
    assert (folder / "memory.db-wal").stat().st_size > 0
    before = snapshot(folder)
    findings = []
    assert read_memories(p, findings) == []
    assert codes(findings) == ["db-wal"]
    assert snapshot(folder) == before


HOLD_LOCK = textwrap.dedent("""
    import sqlite3, sys
    db = sqlite3.connect(sys.argv[1], isolation_level=None)
    db.execute("BEGIN EXCLUSIVE")
    print("locked", flush=True)
    sys.stdin.read()
    db.execute("ROLLBACK")
""")


@pytest.fixture
def exclusive_lock():
    procs = []

    def hold(path):
        proc = subprocess.Popen(
            [sys.executable, "-c", HOLD_LOCK, str(path)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )
        procs.append(proc)
        assert proc.stdout.readline().strip() == "locked"
        return proc

    yield hold
    for proc in procs:
        proc.stdin.close()
        proc.wait(timeout=10)
        proc.stdout.close()


def test_locked_database_is_a_finding(spec_db, exclusive_lock):
    proc = exclusive_lock(spec_db)
    findings = []
    assert read_memories(spec_db, findings, timeout=0.2) == []
    assert codes(findings) == ["db-locked"]
    findings = []
    assert read_archives(spec_db, findings, timeout=0.2) == [] and codes(findings) == ["db-locked"]
    with pytest.raises(Busy):
        touch_memories(spec_db, [ID1], timeout=0.2)
    proc.stdin.close()
    proc.wait(timeout=10)
    findings = []
    assert len(read_memories(spec_db, findings)) == 2 and findings == []
    assert sorted(os.listdir(spec_db.parent)) == ["memory.db"]


def test_lock_taken_between_batches_keeps_rows_read(folder, exclusive_lock):
    p = create_memory_db(folder / "memory.db", [good(i) for i in range(25)])
    findings = []
    it = iter_memories(p, findings, timeout=0.2, batch=10)
    got = [next(it) for _ in range(10)]
    exclusive_lock(p)  # no lock is held between batches, so another process can take one
    got += list(it)
    assert len(got) == 10
    assert codes(findings) == ["db-locked"] and "stopped after 10 rows" in findings[0].reason


# --- bad files ------------------------------------------------------------------------------------


def test_not_a_database(folder):
    p = folder / "memory.db"
    p.write_bytes(b"this is not sqlite at all\n" * 100)
    findings = []
    assert read_memories(p, findings) == [] and codes(findings) == ["db-not-sqlite"]
    assert findings[0].severity == ERROR and findings[0].conversation is None
    findings = []
    assert read_memories(p, findings, scope_id=SCOPE) == [] and findings[0].conversation == SCOPE


def test_valid_header_but_garbage_pages(folder):
    p = create_memory_db(folder / "memory.db", spec_rows())
    data = bytearray(p.read_bytes())
    data[100:] = b"\xff" * (len(data) - 100)
    p.write_bytes(bytes(data))
    findings = []
    assert read_memories(p, findings) == []
    assert codes(findings) in (["db-corrupt"], ["db-not-sqlite"])


@pytest.mark.parametrize("keep", [10, 99])
def test_truncated_header(folder, keep):
    p = create_memory_db(folder / "memory.db", spec_rows())
    p.write_bytes(p.read_bytes()[:keep])
    findings = []
    assert read_memories(p, findings) == [] and codes(findings) == ["db-corrupt"]


def test_truncated_file_keeps_what_it_can(folder):
    p = create_memory_db(folder / "memory.db", [good(i, content="z" * 2000) for i in range(400)])
    data = p.read_bytes()
    p.write_bytes(data[: len(data) // 2])
    findings = []
    rows = read_memories(p, findings)
    assert "db-corrupt" in codes(findings)
    assert len(rows) < 400


def test_empty_file_is_a_warning(folder):
    p = folder / "memory.db"
    p.write_bytes(b"")
    findings = []
    assert read_memories(p, findings) == []
    assert codes(findings) == ["db-empty"] and findings[0].severity == WARNING
    assert os.listdir(folder) == ["memory.db"] and p.stat().st_size == 0


def test_other_schema(folder):
    p = folder / "memory.db"
    conn = sqlite3.connect(p)
    conn.execute("CREATE TABLE conversation_memories (id TEXT PRIMARY KEY, content TEXT)")
    conn.execute("INSERT INTO conversation_memories VALUES (?, 'x')", (ID1,))
    conn.commit()
    conn.close()
    findings = []
    assert read_memories(p, findings) == []
    assert set(codes(findings)) == {"db-schema"}
    assert any("has no column conversation_id" in f.reason and f.severity == ERROR for f in findings)


def test_unrelated_database(folder):
    p = folder / "memory.db"
    conn = sqlite3.connect(p)
    conn.execute("CREATE TABLE t (x)")
    conn.commit()
    conn.close()
    findings = []
    assert read_memories(p, findings) == []
    assert [(f.code, f.reason, f.severity) for f in findings] == [
        ("db-schema", "no table conversation_memories", ERROR)
    ]


def test_minor_schema_difference_still_reads(folder):
    p = create_memory_db(folder / "memory.db", spec_rows())
    conn = sqlite3.connect(p)
    conn.execute("DROP INDEX idx_created_at")
    conn.commit()
    conn.close()
    findings = []
    assert len(read_memories(p, findings)) == 2
    assert [(f.code, f.severity) for f in findings] == [("db-schema", WARNING)]


def test_directory_and_symlink(folder, spec_db):
    d = folder / "dir.db"
    d.mkdir()
    findings = []
    assert read_memories(d, findings) == [] and codes(findings) == ["not-regular"]
    link = folder / "link.db"
    link.symlink_to(spec_db)
    findings = []
    assert read_memories(link, findings) == [] and codes(findings) == ["symlink"]


def test_fifo_does_not_block(folder):
    fifo = folder / "memory.db"
    os.mkfifo(fifo)
    findings = []
    assert read_memories(fifo, findings) == [] and codes(findings) == ["not-regular"]


# --- bad rows -------------------------------------------------------------------------------------

BAD_ROWS = [
    # (row, code, severity, kept)
    (good(10, id="not-a-uuid"), "memory-bad-id", ERROR, False),
    (good(11, id=12345), "memory-bad-id", ERROR, False),
    (good(12, conversation_id="nope"), "memory-bad-id", ERROR, False),
    (good(13, created_at="2026-08-10T14:02:12Z"), "memory-bad-date", ERROR, False),
    (good(14, last_accessed="2026-08-10 14:02:12.345"), "memory-bad-date", ERROR, False),
    (good(15, created_at="2026-02-30T14:02:12.345"), "memory-bad-date", ERROR, False),
    (good(16, embedding=b"\0" * 7), "memory-bad-blob", ERROR, False),
    (good(17, embedding="text, not a blob"), "memory-bad-blob", ERROR, False),
    (good(18, embedding=struct.pack("<3d", 0.1, float("nan"), 0.2)), "memory-nan", ERROR, False),
    (good(19, embedding=struct.pack("<2d", float("inf"), 0.0)), "memory-nan", ERROR, False),
    (good(20, importance=float("inf")), "memory-nan", ERROR, False),
    (good(21, importance="high"), "memory-bad-value", ERROR, False),
    (good(22, access_count="many"), "memory-bad-value", ERROR, False),  # "1" would become 1 (affinity)
    (good(23, content=b"a blob"), "memory-bad-value", ERROR, False),  # 42 would become "42"
    (good(24, tags=b"\x01"), "memory-bad-value", ERROR, False),
    (good(30, embedding=b"\0" * 1000), "memory-blob-dim", WARNING, True),
    (good(31, conversation_id=uid(999)), "memory-scope", WARNING, True),
    (good(32, id=uid(0xABCDEF).lower()), "memory-id-case", WARNING, True),
    (good(33, content_type="hologram"), "memory-content-type", WARNING, True),
    (good(34, importance=1.5), "memory-importance-range", WARNING, True),
]


@pytest.mark.parametrize(
    "bad, code, severity, kept", BAD_ROWS, ids=[b[1] + "-" + str(i) for i, b in enumerate(BAD_ROWS)]
)
def test_each_bad_row_gives_its_finding_and_good_rows_survive(folder, bad, code, severity, kept):
    p = create_memory_db(folder / "memory.db", [good(1), bad, good(2)])
    findings = []
    rows = read_memories(p, findings, scope_id=SCOPE)
    assert [(f.code, f.severity) for f in findings] == [(code, severity)]
    assert "row 2" in findings[0].reason and findings[0].path == str(p) and findings[0].conversation == SCOPE
    expect = [uid(1), bad[0], uid(2)] if kept else [uid(1), uid(2)]
    assert [r.id for r in rows] == expect


def test_all_bad_rows_together(folder):
    p = create_memory_db(folder / "memory.db", [good(1)] + [b[0] for b in BAD_ROWS] + [good(2)])
    findings = []
    rows = read_memories(p, findings, scope_id=SCOPE)
    assert sorted(codes(findings)) == sorted(b[1] for b in BAD_ROWS)
    assert len(rows) == 2 + sum(b[3] for b in BAD_ROWS)


def test_invalid_utf8_text_is_kept_with_a_warning(folder):
    p = create_memory_db(folder / "memory.db", [good(1)])
    conn = sqlite3.connect(p)
    conn.execute(
        "INSERT INTO conversation_memories VALUES (?, ?, CAST(x'616263ff' AS TEXT), 'message', NULL, 0.5, "
        "'2026-08-10T14:02:12.345', 0, '2026-08-10T14:02:12.345', NULL)",
        (uid(2), SCOPE),
    )
    conn.commit()
    conn.close()
    findings = []
    rows = read_memories(p, findings)
    assert codes(findings) == ["memory-bad-utf8"]
    assert rows[1].content == "abc\udcff" and type(rows[1].content) is str
    assert rows[1].content.encode("utf-8", "surrogateescape") == b"abc\xff"


def test_null_embedding_and_empty_blob(folder):
    p = create_memory_db(
        folder / "memory.db", [good(1, embedding=None), good(2, embedding=b""), good(3, embedding=vec(256, i5=1.0))]
    )
    findings = []
    rows = read_memories(p, findings)
    assert findings == []
    assert [r.embedding for r in rows[:2]] == [None, b""]
    assert [r.vector() for r in rows[:2]] == [None, None]
    assert rows[2].dimension == 256 and rows[2].vector()[5] == 1.0


def test_row_findings_are_capped(folder, monkeypatch):
    monkeypatch.setattr(mdb, "MAX_ROW_FINDINGS", 5)
    p = create_memory_db(folder / "memory.db", [good(i, created_at="bad") for i in range(12)] + [good(99)])
    findings = []
    rows = read_memories(p, findings)
    assert [r.id for r in rows] == [uid(99)]
    assert codes(findings) == ["memory-bad-date"] * 6
    assert findings[-1].reason == "7 more rows with this problem (not listed)"


def test_iter_batches_and_since_rowid(folder):
    p = create_memory_db(folder / "memory.db", [good(i) for i in range(2500)])
    findings = []
    rows = list(iter_memories(p, findings, batch=1000))
    assert [r.rowid for r in rows] == list(range(1, 2501))
    assert [r.id for r in rows] == [uid(i) for i in range(2500)]
    tail = list(iter_memories(p, findings, since_rowid=2000, batch=300))
    assert [r.rowid for r in tail] == list(range(2001, 2501))
    assert list(iter_memories(p, findings, since_rowid=2500)) == []
    assert findings == []


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(st.integers(0, 20000), st.integers(0, 255)), min_size=1, max_size=20))
def test_mutated_files_never_raise(tmp_path_factory, edits):
    d = tmp_path_factory.mktemp("fuzz")
    p = create_memory_db(d / "memory.db", spec_rows() + [good(i) for i in range(40)])
    data = bytearray(p.read_bytes())
    for pos, byte in edits:
        data[pos % len(data)] = byte
    p.write_bytes(bytes(data))
    findings = []
    rows = read_memories(p, findings, scope_id=SCOPE)
    assert all(isinstance(r, MemoryRow) for r in rows)
    read_archives(p, findings)
    assert sorted(os.listdir(d)) == ["memory.db"]


# --- dates ----------------------------------------------------------------------------------------


def test_date_format_vectors():
    assert (
        parse_db_date("2026-08-10T14:02:12.345")
        == datetime(2026, 8, 10, 14, 2, 12, tzinfo=timezone.utc).timestamp() + 0.345
    )
    assert format_db_date(parse_db_date("2026-08-10T14:02:12.345")) == "2026-08-10T14:02:12.345"
    assert format_db_date(0) == "1970-01-01T00:00:00.000"
    assert format_db_date(-0.001) == "1969-12-31T23:59:59.999"
    assert format_db_date(1.9999) == "1970-01-01T00:00:01.999"  # truncated, not rounded
    assert format_db_date(datetime(2026, 8, 10, 14, 2, 12, 345999, tzinfo=timezone.utc)) == "2026-08-10T14:02:12.345"
    assert format_db_date(datetime(2026, 8, 10, 14, 2, 12, 345999)) == "2026-08-10T14:02:12.345"  # naive = UTC
    assert format_db_date(parse_db_date("0001-01-01T00:00:00.001")) == "0001-01-01T00:00:00.001"


@pytest.mark.parametrize(
    "bad",
    [
        "2026-08-10T14:02:12",
        "2026-08-10T14:02:12.34",
        "2026-08-10T14:02:12.3456",
        "2026-08-10 14:02:12.345",
        "2026-08-10T14:02:12.345Z",
        "2026-08-10T14:02:12.345+00:00",
        " 2026-08-10T14:02:12.345",
        "2026-02-30T00:00:00.000",
        "2026-13-01T00:00:00.000",
        "2026-08-10T24:00:00.000",
        "2026-08-10T23:59:60.000",
        "２０２６-08-10T14:02:12.345",
        "2026-08-10T14:02:12.345\n",
        "",
        None,
        1786370532.345,
        b"2026-08-10T14:02:12.345",
    ],
)
def test_strict_date_parse_rejects(bad):
    assert parse_db_date(bad) is None


@given(st.datetimes(min_value=datetime(1, 1, 1), max_value=datetime(9999, 12, 31, 23, 59, 59, 999999)))
def test_date_round_trip(dt):
    s = format_db_date(dt)
    assert len(s) == 23
    assert format_db_date(parse_db_date(s)) == s


# --- touch (the one writer) -----------------------------------------------------------------------


def test_touch_memories(spec_db):
    now = parse_db_date("2026-09-01T08:00:00.250")
    assert touch_memories(spec_db, [ID2, "FFFFFFFF-0000-4000-8000-000000000000"], now=now) == 1
    rows = read_memories(spec_db, [])
    assert (rows[0].access_count, rows[0].last_accessed) == (0, "2026-08-10T14:02:12.345")
    assert (rows[1].access_count, rows[1].last_accessed) == (3, "2026-09-01T08:00:00.250")
    assert touch_memories(spec_db, [ID1, ID2]) == 2
    rows = read_memories(spec_db, [])
    assert [r.access_count for r in rows] == [1, 4]
    assert parse_db_date(rows[0].last_accessed) is not None
    assert touch_memories(spec_db, []) == 0
    assert sorted(os.listdir(spec_db.parent)) == ["memory.db"]  # the journal is gone after the commit
    assert os.stat(spec_db).st_mode & 0o777 == 0o600


def test_touch_refuses_non_databases(folder):
    p = folder / "memory.db"
    p.write_bytes(b"not a database" * 100)
    with pytest.raises(FileProblem) as e:
        touch_memories(p, [ID1])
    assert e.value.code == "db-not-sqlite"


# --- context_archive.db ---------------------------------------------------------------------------

ARCHIVE_ID = "5A1F0C3E-2B7D-4E8A-9C61-0D4B3A2F1E09"


def archive_row(**over):
    row = dict(
        id=ARCHIVE_ID,
        conversation_id=SCOPE,
        messages=[
            {
                "id": "2D5D9B9D-CCC3-492A-ACC6-81777613CEA0",
                "content": "Plan a weekend trip… http://x/y",
                "isFromUser": True,
                "timestamp": 808063980.5,
                "role": "user",
            }
        ],
        time_start="2026-08-10T14:13:00.500",
        time_end="2026-08-10T14:13:00.500",
        summary="User asked: Plan a weekend trip…",
        key_topics=["portland", "weekend", "budget"],
        token_count=5,
        reason="conversation_trimmed",
        created_at="2026-08-10T14:13:00.500",
    )
    row.update(over)
    return row


def test_read_archives(folder):
    p = create_archive_db(folder / "context_archive.db", [archive_row()])
    raw = sqlite3.connect(p).execute("SELECT messages_json FROM context_archives").fetchone()[0]
    assert raw.startswith('[{"id":"2D5D9B9D') and "http:\\/\\/x\\/y" in raw  # SAM's compact form, \/ escaped
    findings = []
    rows = read_archives(p, findings, scope_id=SCOPE)
    assert findings == []
    (a,) = rows
    assert a["id"] == ARCHIVE_ID and a["conversation_id"] == SCOPE
    assert a["messages"][0]["content"] == "Plan a weekend trip… http://x/y"
    assert a["messages"][0]["timestamp"] == 808063980.5
    assert a["messages"][0]["timestamp_epoch"] == 808063980.5 + 978307200
    assert format_db_date(a["messages"][0]["timestamp_epoch"]) == "2026-08-10T14:13:00.500"
    assert a["key_topics"] == ["portland", "weekend", "budget"]
    assert a["time_start_ts"] == parse_db_date("2026-08-10T14:13:00.500")
    assert (a["token_count"], a["reason"], a["summary"]) == (
        5,
        "conversation_trimmed",
        "User asked: Plan a weekend trip…",
    )


@pytest.mark.parametrize(
    "over, code, severity, kept",
    [
        (dict(id="x"), "archive-bad-id", ERROR, False),
        (dict(conversation_id="y"), "archive-bad-id", ERROR, False),
        (dict(messages_json="[{"), "archive-bad-json", ERROR, False),
        (dict(messages_json='{"a": 1}'), "archive-bad-json", ERROR, False),
        (dict(time_start="yesterday"), "archive-bad-date", ERROR, False),
        (dict(token_count="many"), "archive-bad-value", ERROR, False),
        (dict(key_topics_json="nope"), "archive-bad-topics", WARNING, True),
        (dict(conversation_id=uid(7)), "archive-scope", WARNING, True),
    ],
)
def test_bad_archive_rows(folder, over, code, severity, kept):
    bad = archive_row(id=uid(2), **over) if "id" not in over else archive_row(**over)
    p = create_archive_db(folder / "context_archive.db", [archive_row(id=uid(1)), bad, archive_row(id=uid(3))])
    findings = []
    rows = read_archives(p, findings, scope_id=SCOPE)
    assert [(f.code, f.severity) for f in findings] == [(code, severity)]
    assert len(rows) == (3 if kept else 2)
    assert rows[0]["id"] == uid(1) and rows[-1]["id"] == uid(3)


def test_archive_message_without_timestamp(folder):
    p = create_archive_db(folder / "context_archive.db", [archive_row(messages=[{"content": "x"}])])
    (a,) = read_archives(p, [])
    assert a["messages"][0]["timestamp_epoch"] is None


def test_archive_bad_files(folder, spec_db):
    findings = []
    assert read_archives(spec_db, findings) == []
    assert [(f.code, f.reason) for f in findings] == [("db-schema", "no table context_archives")]
    junk = folder / "context_archive.db"
    junk.write_bytes(b"\0" * 4096)
    findings = []
    assert read_archives(junk, findings) == [] and codes(findings) == ["db-not-sqlite"]


def test_module_import_does_not_import_numpy():
    code = "import sys, samctl.stores.sam.memorydb; print('numpy' in sys.modules)"
    repo = Path(__file__).resolve().parents[2]
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=repo).stdout
    assert out.strip() == "False"


def test_math_is_finite_check_handles_huge_sums():
    assert mdb._finite_vector(struct.pack("<2d", 1e308, 1e308))
    assert not mdb._finite_vector(struct.pack("<2d", 1e308, math.nan))


def test_corrupt_text_in_sqlite_master_is_a_finding_not_a_crash(tmp_path):
    """Found by CI's newer hypothesis: one byte of 0x80 inside sqlite_master's SQL text."""
    p = create_memory_db(tmp_path / "memory.db", spec_rows() + [good(i) for i in range(40)])
    data = bytearray(p.read_bytes())
    data[3594 % len(data)] = 128
    p.write_bytes(bytes(data))
    findings = []
    rows = read_memories(p, findings, scope_id=SCOPE)
    assert all(isinstance(r, MemoryRow) for r in rows)


def test_a_lock_released_within_the_wait_is_waited_for(spec_db, exclusive_lock, monkeypatch):
    """Without the test-only SAMCTL_TEST_LOCK_WAIT, a reader waits out a lock SAM holds briefly."""
    monkeypatch.delenv("SAMCTL_TEST_LOCK_WAIT")
    proc = exclusive_lock(spec_db)
    releaser = threading.Timer(0.3, proc.stdin.close)
    releaser.start()
    findings = []
    try:
        assert len(read_memories(spec_db, findings)) == 2 and findings == []
    finally:
        releaser.join()


def test_the_test_lock_wait_only_shortens_the_wait(monkeypatch):
    monkeypatch.setenv("SAMCTL_TEST_LOCK_WAIT", "0.1")
    assert sqlitestore.lock_wait(2.0) == 0.1 and sqlitestore.lock_wait(0.0) == 0.0
    monkeypatch.setenv("SAMCTL_TEST_LOCK_WAIT", "not a number")
    assert sqlitestore.lock_wait(2.0) == 2.0
    monkeypatch.delenv("SAMCTL_TEST_LOCK_WAIT")
    assert sqlitestore.lock_wait(2.0) == 2.0


# --- the free-page count from the header (compact skips a database with none) -------------------------


def test_free_pages_in_header_is_what_sqlite_counts(folder):
    p = create_memory_db(folder / "memory.db", [good(i, content="x" * 900) for i in range(300)])
    assert sqlitestore.free_pages_in_header(p) == 0
    conn = sqlite3.connect(p)
    conn.execute("DELETE FROM conversation_memories WHERE rowid % 2 = 0")
    conn.commit()
    counted = conn.execute("PRAGMA freelist_count").fetchone()[0]
    conn.close()
    assert counted > 0 and sqlitestore.free_pages_in_header(p) == counted


def test_free_pages_in_header_is_not_trusted_beside_a_journal_or_log(folder):
    p = create_memory_db(folder / "memory.db", [good(i, content="x" * 900) for i in range(300)])
    make_hot_journal(p)  # the main file may be mid-transaction
    assert sqlitestore.free_pages_in_header(p) is None
    wal = folder / "wal" / "memory.db"
    wal.parent.mkdir()
    make_wal(wal, keep_log=False)
    assert sqlitestore.free_pages_in_header(wal) is None  # WAL mode: the log may hold newer pages


@pytest.mark.parametrize("content", [b"", b"SQLite format 3\0" + b"\0" * 20, b"not a database" * 10])
def test_free_pages_in_header_of_what_is_not_a_whole_header_is_none(folder, content):
    p = folder / "memory.db"
    p.write_bytes(content)
    assert sqlitestore.free_pages_in_header(p) is None
    (folder / "link.db").symlink_to(p)
    assert sqlitestore.free_pages_in_header(folder / "link.db") is None
