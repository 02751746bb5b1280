"""The llm decoder (samctl.stores.llm.decode) on the demo database and on broken ones: each broken
case checks its finding code and that the rest still reads."""

import importlib.util
import sqlite3
from pathlib import Path

import pytest

from samctl.stores import sqlite as sqlitefile
from samctl.stores.llm import decode
from samctl.stores.llm.store import LlmStore

REPO = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("make_llm", REPO / "fixtures" / "make_llm.py")
make_llm = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(make_llm)

T1, C2 = make_llm.T1, make_llm.C2


@pytest.fixture
def db(tmp_path) -> Path:
    return make_llm.write_demo(tmp_path / "llm")


def _edit(path, *sql):
    c = sqlite3.connect(path)
    for s in sql:
        c.execute(s)
    c.commit()
    c.close()


def _read(path, cid=None):
    findings = []
    conn = sqlitefile.open_readonly(path)
    text = conn.text_factory = decode.TextFactory()
    try:
        out = decode.load(conn, cid, str(path), findings) if cid else decode.list_metas(conn, str(path), findings)
    finally:
        conn.close()
    text.report(str(path), findings)
    return out, findings


def test_every_generation_is_listed(db):
    metas, findings = _read(db)
    ids = {m.id for m in metas}
    assert ids == {make_llm.C1, C2, T1, make_llm.T2, "01kf9z0c1eabcdefghjkmnpqrs", "log-12"}
    assert findings == []
    early = next(m for m in metas if m.id == make_llm.C1)
    assert early.created == "2024-07-12T10:00:00.123Z"  # no offset in the row: read as UTC


def test_legacy_tool_round_trip_attachment_and_reasoning(db):
    conv, findings = _read(db, C2)
    roles = [m.role for m in conv.messages]
    assert roles == ["user", "assistant", "tool", "assistant"]
    call = conv.messages[1].tool_calls[0]
    assert (call.id, call.name, call.arguments) == ("call_w1", "weather", {"city": "Lyon"})
    assert conv.messages[1].reasoning.startswith("The user wants")
    assert conv.messages[2].tool_call_id == "call_w1" and conv.messages[2].content == "18C, sunny"
    assert conv.messages[0].attachments[0]["type"] == "image" and conv.messages[0].attachments[0]["bytes"] == 2056
    assert findings == []


def test_thread_chain_parts_and_unknown_part(db):
    conv, findings = _read(db, T1)
    assert [m.role for m in conv.messages] == ["user", "assistant", "tool", "assistant"]
    assert conv.messages[1].reasoning == "Need the current name first."
    assert conv.messages[1].tool_calls[0].name == "get_name"
    assert "[unknown part type 'hologram']" in conv.messages[3].content
    assert [f.code for f in findings] == ["unknown-part"]


def test_fork_shares_the_opening_and_resolves_fragments(db):
    conv, _ = _read(db, make_llm.T2)
    assert conv.messages[0].content == "Rename the pelican"
    assert conv.messages[0].timestamp is not None  # timed by the turn of the thread it forked from
    assert conv.messages[2].content.startswith("# samctl\n") and conv.messages[2].content.endswith("instead.")


def test_parent_cycle_is_cut_and_reported(db):
    _edit(db, f"UPDATE messages SET parent_hash = '{make_llm.H[4]}' WHERE hash = '{make_llm.H[1]}'")
    conv, findings = _read(db, T1)
    assert "parent-cycle" in [f.code for f in findings]
    assert len(conv.messages) == 4  # every message once, nothing looped
    metas, _ = _read(db)
    assert len(metas) == 6


def test_dangling_tip_and_parent(db):
    _edit(
        db,
        f"UPDATE threads SET tip_message_hash = 'b2:{'9' * 32}' WHERE id = '{T1}'",
        f"DELETE FROM messages WHERE hash = '{make_llm.H[1]}'",
    )
    conv, findings = _read(db, T1)
    assert "dangling-tip" in [f.code for f in findings]
    conv2, findings2 = _read(db, make_llm.T2)
    assert "dangling-parent" in [f.code for f in findings2] and conv2.messages[-1].content.startswith("A CLI")
    assert _read(db, C2)[0] is not None


def test_missing_tables_and_columns(tmp_path):
    """A 0.5-era database: conversations + responses without reasoning, tokens or tools."""
    p = tmp_path / "logs.db"
    _edit(
        p,
        "CREATE TABLE conversations (id TEXT PRIMARY KEY, name TEXT, model TEXT)",
        "CREATE TABLE responses (id TEXT PRIMARY KEY, model TEXT, prompt TEXT, system TEXT, response TEXT, "
        "conversation_id TEXT, datetime_utc TEXT)",
        "INSERT INTO conversations VALUES ('01h00000000000000000000000', 'hi', 'gpt-3.5-turbo')",
        "INSERT INTO responses VALUES ('01h00000000000000000000001', 'gpt-3.5-turbo', 'hi', NULL, NULL, "
        "'01h00000000000000000000000', '2023-07-12T10:00:00')",
    )
    metas, findings = _read(p)
    assert [m.id for m in metas] == ["01h00000000000000000000000"]
    conv, findings = _read(p, "01h00000000000000000000000")
    assert [m.role for m in conv.messages] == ["user", "assistant"]
    assert [f.code for f in findings] == ["no-response"]  # interrupted: response NULL


def test_bad_ids_are_skipped_with_a_finding(db):
    _edit(
        db,
        "INSERT INTO conversations (id, name) VALUES ('../../etc/passwd', 'x')",
        "INSERT INTO responses (id, prompt, conversation_id) VALUES ('../../x', 'p', '../../etc/passwd')",
    )
    metas, findings = _read(db)
    assert len(metas) == 6 and "bad-id" in [f.code for f in findings]


def test_invalid_utf8_text_does_not_raise(db):
    _edit(db, f"UPDATE responses SET response = CAST(X'fffe41' AS TEXT) WHERE conversation_id = '{C2}'")
    conv, findings = _read(db, C2)
    assert conv is not None and len(conv.messages) == 4
    assert [f.code for f in findings] == ["bad-utf8"]


def test_not_sqlite_locked_and_empty_are_findings(tmp_path, db):
    junk = tmp_path / "junk"
    junk.mkdir()
    (junk / "logs.db").write_bytes(b"not a database at all" * 10)
    found = []
    assert LlmStore(junk, junk).list_metas(found) == []
    assert [f.code for f in found] == ["db-not-sqlite"]
    lock = sqlite3.connect(db)
    lock.execute("BEGIN EXCLUSIVE")
    try:
        store = LlmStore(db.parent, db.parent)
        found = []
        assert store.list_metas(found) == [] and [f.code for f in found] == ["db-locked"]
    finally:
        lock.rollback()
        lock.close()


def test_valid_ids_and_prefixes(db):
    s = LlmStore(db.parent, db.parent)
    assert s.valid_id(T1) and s.valid_id("log-12")
    assert not s.valid_id("../x") and not s.valid_id(T1.upper()) and not s.valid_id("log-")
    assert s.prefix_ok("01KG") and s.prefix_ok("lo") and s.prefix_ok("log-1")
    assert not s.prefix_ok("01u") and not s.prefix_ok("") and not s.prefix_ok("log-x")


def test_default_db_follows_llm_logs_path():
    from samctl.stores.llm.store import default_db

    assert default_db({"LLM_USER_PATH": "/x/llm"}, "linux") == Path("/x/llm/logs.db")
    assert default_db({"XDG_CONFIG_HOME": "/cfg"}, "linux") == Path("/cfg/io.datasette.llm/logs.db")
    assert str(default_db({}, "darwin")).endswith("Library/Application Support/io.datasette.llm/logs.db")
    assert str(default_db({}, "linux")).endswith(".config/io.datasette.llm/logs.db")
