"""Issue #31, hostile input (findings 8-11, 14-16, 18, 19, 21, 22, 24): one hostile value in one store's
file never stops another store's command; caps bound what parsing builds; wrong results and exit codes.

Each test runs samctl on a copy of the demo stores with one hostile edit, checks the exit code, the
finding, that the other store still answers, and that no byte changed.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import sqlite3
import zipfile
from pathlib import Path

import orjson
import pytest

from tests.adversarial import records
from tests.adversarial.harness import REPO, diff, findings_of, fingerprint, invoke

DEMO = REPO / "fixtures" / "demo"
CC_SESSION = "0b7c9d2e-3f41-4a6b-8c9d-0e1f2a3b4c5d"
CC_FILE = Path("projects/-home-ana-api") / f"{CC_SESSION}.jsonl"
CX_THREAD = "019c4a31-0000-7000-8000-00000000abcd"
CX_FILE = Path("sessions/2026/02/10") / f"rollout-2026-02-10T08-40-00-{CX_THREAD}.jsonl"
CX_ZST = Path("sessions/2026/01/05/rollout-2026-01-05T14-00-00-019c5f00-1111-7222-8333-444455556666.jsonl.zst")
GPT = "5b1f3c2a-8d4e-4f60-9a7b-0c1d2e3f4a5b"
DEEP = 1000


def _copy(tmp: Path, *names: str) -> dict:
    out = {}
    for n in names:
        shutil.copytree(DEMO / n, tmp / n, symlinks=True)
        out[n] = tmp / n
    return out


def _append(p: Path, line: bytes) -> None:
    with open(p, "ab") as f:
        f.write(line + b"\n")


def _ids(out) -> set:
    return {c["id"] for c in orjson.loads(out.stdout)}


def _codes(out) -> set:
    """The codes of the findings an output carries (one store's JSON, several stores' JSON, or stderr)."""
    try:
        doc = orjson.loads(out.stdout)
    except orjson.JSONDecodeError:
        doc = None
    if isinstance(doc, dict) and isinstance(doc.get("stores"), list):
        return {f["code"] for st in doc["stores"] for f in st.get("findings", [])} | {
            f["code"] for f in doc.get("findings", [])
        }
    return {f["code"] for f in findings_of(out)}


def _every_command(roots: list, other_ids: set, expect_code: str | None, tmp: Path, show: str | None = None):
    """ls, stats, search, export, check over all ``roots``: no crash, exit 3 (0 when no code is expected),
    the other store's conversations still there, and the finding named."""
    g = [a for r in roots for a in ("--root", str(r))]
    before = {str(r): fingerprint(r) for r in roots}
    ls = invoke(g + ["ls", "--format", "json"])  # (ls reports only what stops a file being listed)
    assert ls.crash is None, ls.crash
    assert ls.exit_code in (0, 3), (ls.exit_code, ls.stderr[-1500:])
    assert other_ids <= _ids(ls), ls.stdout[:800]
    runs = [
        g + ["stats"],
        g + ["check", "--format", "json"],
        g + ["export", "--all", "--to", "json", "-o", str(tmp / "out")],
    ]
    for r in roots:
        runs.append(["--root", str(r), "search", "the", "--no-index"])
    if show:
        runs.append(g + ["show", show, "--all", "--format", "json"])
    outs = [ls]
    for args in runs:
        o = invoke(args)
        assert o.crash is None, (args, o.crash)
        assert o.exit_code in (0, 3), (args, o.exit_code, o.stderr[-1500:])
        outs.append(o)
        shutil.rmtree(tmp / "out", ignore_errors=True)
    if expect_code:
        assert expect_code in _codes(outs[2]), sorted(_codes(outs[2]))  # check names it
    for r in roots:
        assert diff(before[str(r)], fingerprint(r)) == []
    return outs


def _deep_list() -> bytes:
    return b"[" * DEEP + b"]" * DEEP


# -- 8: a deep unknown entry / record --------------------------------------------------------------
def test_deep_unknown_claude_code_entry_stops_no_store(tmp_path):
    s = _copy(tmp_path, "claude_code", "codex")
    _append(s["claude_code"] / CC_FILE, b'{"type":"weird","uuid":"u-deep","x":' + _deep_list() + b"}")
    _every_command([s["claude_code"], s["codex"]], {CX_THREAD, CC_SESSION}, "too-deep", tmp_path, CC_SESSION)


def test_deep_unknown_codex_record_stops_no_store(tmp_path):
    s = _copy(tmp_path, "claude_code", "codex")
    _append(
        s["codex"] / CX_FILE,
        b'{"timestamp":"2026-02-10T10:00:00Z","type":"quantum","payload":{"x":' + _deep_list() + b"}}",
    )
    _every_command([s["codex"], s["claude_code"]], {CX_THREAD, CC_SESSION}, "too-deep", tmp_path, CX_THREAD)


# -- 9: Codex user_message with images: 5 ------------------------------------------------------------
def test_codex_images_not_a_list_is_read(tmp_path):
    s = _copy(tmp_path, "codex", "claude_code")
    _append(
        s["codex"] / CX_FILE,
        b'{"timestamp":"2026-02-10T10:00:00Z","type":"event_msg","payload":'
        b'{"type":"user_message","message":"five images","images":5,"local_images":{"a":1}}}',
    )
    outs = _every_command([s["codex"], s["claude_code"]], {CX_THREAD, CC_SESSION}, None, tmp_path, CX_THREAD)
    assert b"five images" in outs[-1].stdout


# -- 10: ChatGPT parent/role of the wrong type, content nested deep ---------------------------------
def _gpt_edit(root: Path, fn) -> None:
    p = root / "export" / "conversations.json"
    doc = json.loads(p.read_bytes())
    fn(doc[0])
    p.write_bytes(json.dumps(doc).replace('"@DEEP@"', "[" * DEEP + "]" * DEEP).encode())


@pytest.mark.parametrize(
    "edit, code",
    [
        (lambda c: c["mapping"]["n2"].update(parent=["n1"]), None),  # (read as no parent: a root)
        (lambda c: c["mapping"]["n1"]["message"]["author"].update(role=["user"]), "unknown-role"),
        (lambda c: c["mapping"]["n1"]["message"]["content"].update(parts=["@DEEP@"]), "too-deep"),
    ],
    ids=["parent-list", "role-list", "deep-content"],
)
def test_chatgpt_wrong_types_stop_no_store(tmp_path, edit, code):
    s = _copy(tmp_path, "chatgpt", "codex")
    _gpt_edit(s["chatgpt"], edit)
    _every_command([s["chatgpt"] / "export", s["codex"]], {CX_THREAD}, code, tmp_path)


# -- 11: llm values of the wrong SQLite type -----------------------------------------------------------
LLM_EDITS = {
    "blob-response-id": "UPDATE responses SET id = X'00ff' WHERE rowid = (SELECT min(rowid) FROM responses)",
    "text-ref-int": "UPDATE parts SET text = NULL, payload = '{\"text_ref\": 5}' WHERE type = 'text'",
    "blob-reasoning": "UPDATE responses SET reasoning = X'00ff41'",
    "blob-model": "UPDATE responses SET model = X'00ff41'",
    "blob-tool-call-id": "UPDATE tool_calls SET tool_call_id = X'00ff'",
    "blob-datetime": "UPDATE responses SET datetime_utc = X'3230'",
    "tool-call-name-list": 'UPDATE parts SET payload = \'{"name": ["a"], "tool_call_id": [1], '
    "\"arguments\": {\"x\": [1]}}' WHERE type IN ('tool_call', 'tool_result')",
}


@pytest.mark.parametrize("name", sorted(LLM_EDITS))
def test_llm_wrong_sqlite_types_stop_no_store(tmp_path, name):
    s = _copy(tmp_path, "llm", "codex")
    c = sqlite3.connect(s["llm"] / "logs.db")
    c.execute(LLM_EDITS[name])
    c.commit()
    c.close()
    outs = _every_command([s["llm"] / "logs.db", s["codex"]], {CX_THREAD}, None, tmp_path)
    del outs


# -- 14: what parsing builds from a small .jsonl.zst -------------------------------------------------
def _max_rss_mb(args: list) -> tuple[int, float]:
    code, peak, err = records.peak_rss_mb(args)
    assert b"Traceback" not in err and b"MemoryError" not in err, err[-1500:]
    return code, peak


def test_small_zst_cannot_make_ls_use_gigabytes(tmp_path):
    import zstandard

    s = _copy(tmp_path, "codex")
    line = (
        b'{"timestamp":"2026-01-05T14:00:00Z","type":"event_msg","payload":{"type":"x","l":['
        + b"{}," * 300_000
        + b"{}]}}\n"
    )  # 0.9 MB of text, 300,000 dicts, kept as a record (50 of them: 15 M dicts, over 600 MB if all were kept)
    data = b'{"timestamp":"2026-01-05T14:00:00Z","type":"session_meta","payload":{"id":"x"}}\n' + line * 50
    (s["codex"] / CX_ZST).write_bytes(zstandard.ZstdCompressor(level=19).compress(data))
    assert (s["codex"] / CX_ZST).stat().st_size < 64 << 10
    code, peak = _max_rss_mb(["--root", str(s["codex"]), "check"])
    assert code == 3 and peak < 600, (code, peak)


# -- 15: the ChatGPT per-conversation cap, whatever sits at the end ----------------------------------
def test_chatgpt_cap_holds_for_a_long_last_string(tmp_path):
    s = _copy(tmp_path, "chatgpt")
    p = s["chatgpt"] / "export" / "conversations.json"
    doc = json.loads(p.read_bytes())
    doc[0]["zzz_last"] = "@LONG@"
    p.write_bytes(json.dumps(doc).replace('"@LONG@"', '"' + "x" * (3 << 20) + '"').encode())
    before = fingerprint(s["chatgpt"])
    o = invoke(["--root", str(s["chatgpt"] / "export"), "--max-file-size", "1M", "ls", "--format", "json"])
    assert o.crash is None and o.exit_code == 3, (o.exit_code, o.stderr[-800:])
    assert GPT not in _ids(o) and len(_ids(o)) == 2
    assert "too-large" in _codes(o)
    assert diff(before, fingerprint(s["chatgpt"])) == []


def test_chatgpt_long_string_in_a_zip_is_streamed_not_buffered(tmp_path):
    s = _copy(tmp_path, "chatgpt")
    doc = json.loads((s["chatgpt"] / "export" / "conversations.json").read_bytes())
    doc[0]["zzz_last"] = "@LONG@"
    body = json.dumps(doc).replace('"@LONG@"', '"' + "x" * (96 << 20) + '"').encode()
    z = tmp_path / "big.zip"
    with zipfile.ZipFile(z, "w", zipfile.ZIP_STORED) as zf:  # (stored: no ratio for the bomb check to refuse)
        zf.writestr("conversations.json", body)
    del body
    code, peak = _max_rss_mb(["--root", str(z), "--max-file-size", "1M", "ls"])
    assert code == 3 and peak < 150, (code, peak)


def test_chatgpt_export_all_spools_only_listed_conversations(tmp_path, monkeypatch):
    from samctl.stores.base import Caps
    from samctl.stores.chatgpt.store import ChatgptStore

    s = _copy(tmp_path, "chatgpt")
    doc = json.loads((s["chatgpt"] / "export" / "conversations.json").read_bytes())
    doc.insert(1, {"id": "00000000-0000-4000-8000-000000000001", "mapping": {}, "pad": "y" * (4 << 20)})
    z = tmp_path / "e.zip"
    with zipfile.ZipFile(z, "w", zipfile.ZIP_STORED) as zf:
        zf.writestr("conversations.json", json.dumps(doc))
    store = ChatgptStore(z, z.parent, Caps.uniform(1 << 20), cache=False)
    found: list = []
    metas = store.list_metas(found)
    assert len(metas) == 3 and "too-large" in {f.code for f in found}
    convs = [store.load(m.id, []) for m in metas]
    assert sorted(c.meta.id for c in convs) == sorted(m.id for m in metas)
    spooled = sum(os.fstat(f.fileno()).st_size for f, _ in store._spools.values() if f is not None)
    assert 0 < spooled < 1 << 20, spooled


# -- 16: search on an unpacked ChatGPT export ----------------------------------------------------------
def test_search_reads_an_unpacked_chatgpt_export(tmp_path):
    s = _copy(tmp_path, "chatgpt")
    root = s["chatgpt"] / "export"
    before = fingerprint(root)
    o = invoke(["--root", str(root), "search", "sine", "--no-index", "--format", "json"])
    assert o.crash is None and o.exit_code == 0, (o.exit_code, o.stderr[-800:])
    assert GPT in o.stdout.decode()
    assert diff(before, fingerprint(root)) == []


# -- 18, 19: llm lock/WAL for show and export; a newer schema missing a column --------------------------
def _llm_one_id(db: Path) -> str:
    o = invoke(["--root", str(db), "ls", "--format", "json"])
    return sorted(_ids(o))[0]


def test_llm_show_of_a_locked_database_says_locked(tmp_path):
    s = _copy(tmp_path, "llm")
    db = s["llm"] / "logs.db"
    cid = _llm_one_id(db)
    lock = sqlite3.connect(db)
    lock.execute("BEGIN EXCLUSIVE")
    try:
        for args in (["show", cid], ["export", cid, "--to", "json", "-o", str(tmp_path / "x.json")]):
            o = invoke(["--root", str(db)] + args)
            assert o.crash is None and o.exit_code == 3, (args, o.exit_code, o.stderr[-600:])
            assert "db-locked" in o.stderr and "no conversation" not in o.stderr, o.stderr[-600:]
    finally:
        lock.rollback()
        lock.close()
    assert not (tmp_path / "x.json").exists()


def test_llm_show_with_a_pending_wal_says_wal(tmp_path):
    s = _copy(tmp_path, "llm")
    db = s["llm"] / "logs.db"
    cid = _llm_one_id(db)
    c = sqlite3.connect(db)
    c.execute("PRAGMA journal_mode=WAL")
    c.execute("PRAGMA wal_autocheckpoint=0")
    c.execute("INSERT INTO plugin_notes (note) VALUES ('in the log')")
    c.commit()
    os.link(str(db) + "-wal", str(db) + "-wal.keep")
    c.close()
    os.replace(str(db) + "-wal.keep", str(db) + "-wal")
    before = fingerprint(s["llm"])
    o = invoke(["--root", str(db), "show", cid])
    assert o.crash is None and o.exit_code == 3, (o.exit_code, o.stderr[-600:])
    assert "db-wal" in o.stderr and "no conversation" not in o.stderr, o.stderr[-600:]
    assert diff(before, fingerprint(s["llm"])) == []


def test_llm_newer_schema_missing_a_column_is_read(tmp_path):
    s = _copy(tmp_path, "llm")
    db = s["llm"] / "logs.db"
    c = sqlite3.connect(db)
    c.execute("ALTER TABLE responses DROP COLUMN datetime_utc")
    c.execute("ALTER TABLE turns DROP COLUMN resolved_model")
    c.commit()
    c.close()
    before = fingerprint(s["llm"])
    o = invoke(["--root", str(db), "ls", "--format", "json"])
    assert o.crash is None and o.exit_code in (0, 3), (o.exit_code, o.stderr[-600:])
    assert len(_ids(o)) >= 5, o.stdout[:600]
    for cid in sorted(_ids(o)):
        sh = invoke(["--root", str(db), "show", cid, "--all"])
        assert sh.crash is None and sh.exit_code in (0, 3), (cid, sh.exit_code, sh.stderr[-600:])
        assert "recover" not in sh.stderr
    assert diff(before, fingerprint(s["llm"])) == []


# -- 21: a zip without conversations.json; empty and skippable-only .jsonl.zst ---------------------------
def test_zip_without_conversations_json_is_not_an_export(tmp_path):
    z = tmp_path / "photos.zip"
    with zipfile.ZipFile(z, "w") as zf:
        zf.writestr("a.txt", "hello")
    o = invoke(["--root", str(z), "ls"])
    assert o.crash is None and o.exit_code not in (0, 3), (o.exit_code, o.stderr[-400:])
    assert "chatgpt" not in o.stderr.lower() or "not" in o.stderr.lower()


@pytest.mark.parametrize("data", [b"", b"\x50\x2a\x4d\x18\x04\x00\x00\x00abcd"], ids=["empty", "skippable-only"])
def test_empty_zst_rollout_is_a_finding(tmp_path, data):
    s = _copy(tmp_path, "codex")
    (s["codex"] / CX_ZST).write_bytes(data)
    o = invoke(["--root", str(s["codex"]), "check", "--format", "json"])
    assert o.crash is None and o.exit_code == 3, (o.exit_code, o.stderr[-400:])
    assert any(f["code"] == "bad-zstd" and f["path"].endswith(CX_ZST.name) for f in findings_of(o))


# -- 22: a zip of very many members is refused before zipfile reads its directory ----------------------
def test_zip_of_many_members_is_refused_quickly(tmp_path):
    from samctl.stores.chatgpt import store as gs

    z = tmp_path / "many.zip"
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("conversations.json", (DEMO / "chatgpt" / "export" / "conversations.json").read_bytes())
        for i in range(gs.ZIP_MAX_MEMBERS + 1):
            zf.writestr(zipfile.ZipInfo(f"f/{i}"), b"")
    z.write_bytes(buf.getvalue())
    o = invoke(["--root", str(z), "ls"])
    assert o.crash is None and o.exit_code == 3, (o.exit_code, o.stderr[-400:])
    assert "zip-refused" in o.stderr and "members" in o.stderr


# -- 24: a subagents folder that is a symlink ----------------------------------------------------------
def test_subagents_symlink_is_a_finding(tmp_path):
    s = _copy(tmp_path, "claude_code")
    session = s["claude_code"] / "projects" / "-home-ana-api" / "0b7c9d2e-3f41-4a6b-8c9d-0e1f2a3b4c5d"
    outside = tmp_path / "outside"
    shutil.move(str(session / "subagents"), str(outside))
    os.symlink(outside, session / "subagents")
    before = fingerprint(s["claude_code"])
    o = invoke(["--root", str(s["claude_code"]), "check", "--format", "json"])
    assert o.crash is None and o.exit_code == 3, (o.exit_code, o.stderr[-400:])
    assert any(f["code"] == "symlink" and f["path"].endswith("subagents") for f in findings_of(o)), findings_of(o)
    assert diff(before, fingerprint(s["claude_code"])) == []


# -- containment as a class: a bug one store's file reaches is that store's finding --------------------
@pytest.mark.parametrize(
    "args", [["ls"], ["stats"], ["check"], ["export", "--all", "--to", "jsonl"]], ids=lambda a: a[0]
)
def test_a_bug_in_one_store_stops_no_other(tmp_path, monkeypatch, args):
    from samctl.stores.codex import store as codex_store

    def broken(*a, **k):
        raise RecursionError("maximum recursion depth exceeded (planted)")

    monkeypatch.setattr(codex_store, "decode_rollout", broken)
    s = _copy(tmp_path, "codex", "claude_code")
    g = ["--root", str(s["codex"]), "--root", str(s["claude_code"]), "--no-cache"]
    before = {n: fingerprint(r) for n, r in s.items()}
    o = invoke(g + args + (["-o", str(tmp_path / "out.jsonl")] if args[0] == "export" else []))
    assert o.exit_code == 3, (o.exit_code, o.stderr[-800:])
    assert "internal-error" in o.stderr and "RecursionError" in o.stderr and "Traceback" not in o.stderr
    assert "samctl recover" not in o.stderr  # (recover refuses a store samctl only moves)
    if args[0] == "ls":
        assert CC_SESSION.encode() in o.stdout and CX_THREAD.encode() not in o.stdout
    if args[0] == "export":
        assert CC_SESSION.encode() in (tmp_path / "out.jsonl").read_bytes()
    for n, r in s.items():
        assert diff(before[n], fingerprint(r)) == []
