"""Hostile llm databases: truncated, not SQLite, empty, foreign schema, WAL with a log, a symlink or
FIFO for logs.db, parent cycles, dangling references, invalid UTF-8 and NUL in text, huge BLOBs,
unknown tables, views and triggers.  0 crashes, exit 0 or 3, 0 changed bytes (no journal, no -shm),
and each problem a finding."""

from __future__ import annotations

import importlib.util
import os
import sqlite3
from pathlib import Path

import pytest

from tests.adversarial.readonly_hostile import run_all

REPO = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("make_llm", REPO / "fixtures" / "make_llm.py")
make_llm = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(make_llm)
IDS = [make_llm.T1, make_llm.C2]


def _sql(*stmts):
    def edit(db: Path):
        c = sqlite3.connect(db)
        for s in stmts:
            c.execute(s)
        c.commit()
        c.close()

    return edit


def _truncate(db: Path):
    data = db.read_bytes()
    db.write_bytes(data[: len(data) // 2])


def _wal_with_log(db: Path):
    c = sqlite3.connect(db)
    c.execute("PRAGMA journal_mode=WAL")
    c.execute("PRAGMA wal_autocheckpoint=0")
    c.execute("INSERT INTO plugin_notes (note) VALUES ('in the log')")
    c.commit()
    os.link(str(db) + "-wal", str(db) + "-wal.keep")  # the log survives the close
    c.close()
    os.replace(str(db) + "-wal.keep", str(db) + "-wal")


H = make_llm.H
CASES = {
    "truncated": (_truncate, {"db-corrupt|db-not-sqlite"}),
    "not-sqlite": (lambda db: db.write_bytes(b"hello, not a database\n" * 20), {"db-not-sqlite"}),
    "empty-file": (lambda db: db.write_bytes(b""), set()),
    "foreign-schema": (lambda db: (db.unlink(), _sql("CREATE TABLE photos (id INTEGER)")(db)), {"db-schema"}),
    "wal-with-log": (_wal_with_log, {"db-wal"}),
    "parent-cycle": (_sql(f"UPDATE messages SET parent_hash = '{H[4]}' WHERE hash = '{H[1]}'"), {"parent-cycle"}),
    "dangling-refs": (
        _sql(
            f"DELETE FROM messages WHERE hash = '{H[3]}'",
            "DELETE FROM conversations",
            f"UPDATE threads SET tip_message_hash = 'b2:{'e' * 32}' WHERE id = '{make_llm.T2}'",
        ),
        {"dangling-parent", "dangling-tip"},
    ),
    "invalid-utf8": (
        _sql(
            "UPDATE responses SET response = CAST(X'c328ff00' AS TEXT), prompt = CAST(X'80' AS TEXT)",
            "UPDATE parts SET text = CAST(X'ffff' AS TEXT) WHERE type = 'text'",
        ),
        {"bad-utf8"},
    ),
    "nul-and-controls": (_sql("UPDATE responses SET response = 'a' || char(0) || char(27) || '[31mred'"), set()),
    "huge-blob": (_sql("UPDATE attachments SET content = zeroblob(20000000)"), set()),
    "unknown-parts-and-roles": (
        _sql("UPDATE parts SET type = 'teleport', payload = '[1,2'", "UPDATE messages SET role = 'oracle'"),
        {"unknown-part"},
    ),
    "bad-ids": (
        _sql(
            "INSERT INTO threads (id, name) VALUES ('../../etc/passwd', 'x')",
            "INSERT INTO responses (id, prompt) VALUES ('x/y', 'p')",
        ),
        {"bad-id"},
    ),
    "views-and-triggers": (
        _sql(
            "CREATE VIEW evil AS SELECT 1/0 AS x",
            "CREATE TRIGGER t AFTER INSERT ON responses BEGIN DELETE FROM responses; END",
            "CREATE TABLE plugin_more (x BLOB)",
        ),
        {"unknown-table"},
    ),
    "deep-json": (_sql("UPDATE tool_calls SET arguments = '" + "[" * 100_000 + "'"), set()),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_hostile_database(tmp_path, name):
    edit, expect = CASES[name]
    root = tmp_path / "tree" / "llm"
    db = make_llm.write_demo(root)
    edit(db)
    expanded = set()
    for e in expect:  # "a|b": either code will do
        expanded.add(e)
    run_all(tmp_path / "tree", root, tmp_path / "out", {e for e in expect if "|" not in e}, ids=IDS)
    if any("|" in e for e in expect):
        import orjson

        from tests.adversarial.harness import invoke

        o = invoke(["--root", str(root), "check", "--format", "json"])
        codes = {f["code"] for f in orjson.loads(o.stdout)["findings"]}
        assert codes & set(next(e for e in expect if "|" in e).split("|")), codes


def test_symlink_and_fifo_logs_db(tmp_path):
    outside = make_llm.write_demo(tmp_path / "outside")
    root = tmp_path / "tree" / "llm"
    root.mkdir(parents=True)
    (root / "logs.db").symlink_to(outside)
    run_all(tmp_path / "tree", root, tmp_path / "out", {"symlink"})
    root2 = tmp_path / "tree2" / "llm"
    root2.mkdir(parents=True)
    os.mkfifo(root2 / "logs.db")
    run_all(tmp_path / "tree2", root2, tmp_path / "out2", {"not-regular"})
