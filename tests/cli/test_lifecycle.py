"""samctl rm / restore / archive / attic: behaviour, safety refusals (exit code, message, nothing changed)."""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import sqlite3
import stat
from pathlib import Path

import orjson
import pytest

from samctl.stores import open_store
from tests.conftest import fingerprint

MID = "20260810_140307_512"
MID2 = "20260812_091500_004"
SID = "8B58CBC4-ACA7-4811-AE66-C01921690310"
PINNED = "C2A1F0E4-3B5D-4E6F-8A9B-0C1D2E3F4A5B"
TOPIC = "5E0C7E55-1B7A-4C0B-9C3E-2F3A7D8B9C01"
API = "D3B2A1C0-9F8E-4D7C-AB6A-5F4E3D2C1B0A"


def conv(root: Path) -> Path:
    return root / ".mermaid" / "conversations" if (root / ".mermaid").exists() else root / "conversations"


def attic_of(root: Path) -> Path:
    return root / ".mermaid" / "samctl-attic" if (root / ".mermaid").exists() else root / "samctl-attic"


def tree_state(root: Path) -> dict:
    """``fingerprint`` of the whole tree but samctl's scratch: its lock file (which records who held it
    last) and the attic's staging and journal folders (a refused restore made and removed its batch's)."""
    return {
        k: v
        for k, v in fingerprint(root).items()
        if ".samctl/" not in f"/{k}" and not k.endswith(("samctl-attic/.staging", "samctl-attic/.journal"))
    }


def files_state(root: Path, prefix: str) -> dict:
    """bytes, mode and mtime of every file/folder of one conversation."""
    return {k: v for k, v in fingerprint(conv(root)).items() if k.startswith(prefix)}


# --- rm and restore -------------------------------------------------------------------


@pytest.mark.parametrize("which,cid,short", [("mermaid", MID, "20260810_14"), ("sam", SID, "8b58cbc4")])
def test_rm_then_restore_brings_back_bytes_modes_mtimes(which, cid, short, run, mermaid_demo, sam_demo):
    root = mermaid_demo if which == "mermaid" else sam_demo
    before = files_state(root, cid)
    assert before
    r = run("--root", root, "rm", short)
    assert r.exit_code == 0, r.stderr
    assert f"deleted: {cid}" in r.stdout
    assert f"undo with: samctl --root {root} restore {cid}" in r.stderr
    assert files_state(root, cid) == {}
    entries = [p.name for p in attic_of(root).iterdir() if p.name.endswith(".tar.zst")]
    assert len(entries) == 1 and entries[0].startswith(f"{cid}.deleted.")
    assert oct(attic_of(root).stat().st_mode & 0o777) == "0o700"
    r = run("--root", root, "attic", "--format", "json")
    assert r.exit_code == 0
    doc = orjson.loads(r.stdout)
    assert [e["id"] for e in doc["entries"]] == [cid] and doc["entries"][0]["state"] == "deleted"
    r = run("--root", root, "check")
    assert r.exit_code == 0, r.stderr
    r = run("--root", root, "restore", short[:10])
    assert r.exit_code == 0, r.stderr
    assert files_state(root, cid) == before
    assert [p for p in attic_of(root).iterdir() if not p.name.startswith(".")] == []
    assert run("--root", root, "check").exit_code == 0


def test_restore_refuses_when_the_id_exists_again(run, mermaid_demo):
    assert run("--root", mermaid_demo, "rm", MID).exit_code == 0
    (conv(mermaid_demo) / f"{MID}.json").write_bytes(b"{}")
    fp = fingerprint(mermaid_demo)
    r = run("--root", mermaid_demo, "restore", MID)
    assert r.exit_code == 1
    assert "exists in the store again" in r.stderr and "--as-new" in r.stderr
    assert fingerprint(mermaid_demo) == fp


def test_restore_as_new_mermaid_rewrites_the_id_inside_the_files(run, mermaid_demo):
    old_doc = orjson.loads((conv(mermaid_demo) / f"{MID}.json").read_bytes())
    assert run("--root", mermaid_demo, "rm", MID).exit_code == 0
    r = run("--root", mermaid_demo, "restore", MID, "--as-new", "--format", "json")
    assert r.exit_code == 0, r.stderr
    new = orjson.loads(r.stdout)["items"][0]["new_id"]
    store = open_store(str(mermaid_demo))
    assert new != MID and store.valid_id(new)
    doc = orjson.loads((conv(mermaid_demo) / f"{new}.json").read_bytes())
    assert doc["id"] == new and {k: v for k, v in doc.items() if k != "id"} == {
        k: v for k, v in old_doc.items() if k != "id"
    }
    assert orjson.loads((conv(mermaid_demo) / f"{new}.meta").read_bytes())["id"] == new
    first = orjson.loads((conv(mermaid_demo) / f"{new}.jsonl").read_bytes().split(b"\n")[0])
    assert first["event"]["session_id"] == new
    assert not (conv(mermaid_demo) / f"{MID}.json").exists()
    r = run("--root", mermaid_demo, "check")
    assert r.exit_code == 0, r.stderr


def test_restore_as_new_beside_the_existing_one(run, mermaid_demo):
    c = conv(mermaid_demo)
    backup = {p.name: p.read_bytes() for p in c.glob(f"{MID2}.*")}
    assert run("--root", mermaid_demo, "rm", MID2).exit_code == 0
    for name, data in backup.items():  # the same session comes back from a backup
        (c / name).write_bytes(data)
        os.chmod(c / name, 0o600)
    assert run("--root", mermaid_demo, "restore", MID2).exit_code == 1
    r = run("--root", mermaid_demo, "restore", MID2, "--as-new")
    assert r.exit_code == 0, r.stderr
    ids = open_store(str(mermaid_demo)).all_ids()
    assert MID2 in ids and len(ids) == 4
    assert run("--root", mermaid_demo, "check").exit_code == 0


def test_restore_as_new_sam_rewrites_ids_and_memories(run, sam_demo):
    assert run("--root", sam_demo, "rm", SID).exit_code == 0
    r = run("--root", sam_demo, "restore", SID, "--as-new", "--format", "json")
    assert r.exit_code == 0, r.stderr
    new = orjson.loads(r.stdout)["items"][0]["new_id"]
    assert new == new.upper() and new != SID and open_store(str(sam_demo)).valid_id(new)
    doc = orjson.loads((conv(sam_demo) / new / "conversation.json").read_bytes())
    assert doc["id"] == new and doc["sessionId"] == new
    db = sqlite3.connect(conv(sam_demo) / new / "memory.db")
    assert {r[0] for r in db.execute("select conversation_id from conversation_memories")} == {new}
    db.close()
    assert not (conv(sam_demo) / SID).exists()
    r = run("--root", sam_demo, "check")
    assert r.exit_code == 0, r.stderr


def test_restore_unknown_id_is_not_found(run, mermaid_demo):
    fp = fingerprint(mermaid_demo)
    r = run("--root", mermaid_demo, "restore", "2026")
    assert r.exit_code == 4 and "no conversation matches" in r.stderr
    r = run("--root", mermaid_demo, "restore", "../etc")
    assert r.exit_code == 2 and "not a mermaid conversation id" in r.stderr
    assert fingerprint(mermaid_demo) == fp


def test_rm_unknown_and_bad_ids_change_nothing(run, mermaid_demo):
    fp = fingerprint(mermaid_demo)
    r = run("--root", mermaid_demo, "rm", "19990101")
    assert r.exit_code == 4 and "no conversation matches" in r.stderr
    r = run("--root", mermaid_demo, "rm", "/etc/passwd")
    assert r.exit_code == 2
    r = run("--root", mermaid_demo, "rm")
    assert r.exit_code == 2 and "--older-than" in r.stderr
    assert fingerprint(mermaid_demo) == fp


# --- safety: pinned, shared scopes, busy, lock, confirmation -----------------------------------


def test_pinned_sam_conversation_refused_without_include_pinned(run, sam_demo):
    fp = fingerprint(sam_demo)
    r = run("--root", sam_demo, "rm", PINNED)
    assert r.exit_code == 1
    assert "pinned" in r.stderr and "--include-pinned" in r.stderr
    assert fingerprint(sam_demo) == fp
    r = run("--root", sam_demo, "rm", "--title", "budget", "--yes")
    assert r.exit_code == 0 and f"kept: {PINNED}: pinned" in r.stderr
    assert fingerprint(sam_demo) == fp
    r = run("--root", sam_demo, "rm", PINNED, "--include-pinned")
    assert r.exit_code == 0, r.stderr
    assert not (conv(sam_demo) / PINNED).exists()
    assert (conv(sam_demo) / TOPIC / "memory.db").exists()  # its shared-topic scope stays


def test_shared_topic_scope_in_use_is_never_removed(run, sam_demo):
    fp = fingerprint(sam_demo)
    r = run("--root", sam_demo, "rm", TOPIC)
    assert r.exit_code == 1 and "shared-topic memory scope" in r.stderr
    r = run("--root", sam_demo, "rm", TOPIC, "--purge", "--yes")
    assert r.exit_code == 1 and "shared-topic memory scope" in r.stderr
    assert fingerprint(sam_demo) == fp
    # once nobody uses it, it is an ordinary stray scope and can go
    assert run("--root", sam_demo, "rm", PINNED, "--include-pinned", "--purge", "--yes").exit_code == 0
    assert (conv(sam_demo) / TOPIC).exists()  # SAM's own delete never removes the topic scope
    assert run("--root", sam_demo, "rm", TOPIC).exit_code == 0
    assert not (conv(sam_demo) / TOPIC).exists()


def _age_every_file(root: Path, seconds: int = 3600) -> None:
    """Move every mtime an hour back: ls caches only files older than its racy window."""
    old = os.stat(root).st_mtime - seconds
    for d, _, files in os.walk(root):
        for f in files:
            os.utime(os.path.join(d, f), (old, old))


def test_scope_users_come_from_the_listing_cache_and_a_changed_file_is_read_again(run, sam_demo, monkeypatch):
    """A warm rm of one id does not parse every conversation.json again to find who uses a scope, yet a
    conversation that starts using the scope after ls cached it still keeps the scope in place."""
    from samctl.stores.sam import store as samstore
    from samctl.stores.sam.store import SamStore

    _age_every_file(sam_demo)
    monkeypatch.setattr(samstore, "RACY_SECONDS", 0)  # (utime just set every ctime: no 2 s wait)
    assert run("--root", sam_demo, "ls").exit_code == 0  # the cache now holds every conversation's topic
    parsed = []
    real_parse = SamStore.parse_file
    monkeypatch.setattr(SamStore, "parse_file", lambda self, p: parsed.append(p) or real_parse(self, p))
    assert open_store(str(sam_demo)).topic_refs() == {TOPIC: {PINNED}}
    assert parsed == []
    # the pinned conversation stops using the scope, another one (written later) starts
    pinned = conv(sam_demo) / PINNED / "conversation.json"
    doc = orjson.loads(pinned.read_bytes())
    doc["settings"]["useSharedData"] = False
    pinned.write_bytes(orjson.dumps(doc))
    user = conv(sam_demo) / SID / "conversation.json"
    doc = orjson.loads(user.read_bytes())
    doc["settings"].update(useSharedData=True, sharedTopicId=TOPIC)
    user.write_bytes(orjson.dumps(doc))
    assert open_store(str(sam_demo)).topic_refs() == {TOPIC: {SID}}
    assert sorted(parsed) == sorted([str(pinned), str(user)])
    fp = fingerprint(sam_demo)
    r = run("--root", sam_demo, "rm", TOPIC, "--yes")
    assert r.exit_code == 1 and "shared-topic memory scope" in r.stderr and SID in r.stderr
    assert fingerprint(sam_demo) == fp


def test_a_rewrite_that_keeps_size_and_puts_the_mtime_back_is_read_again_before_a_scope_moves(
    run, sam_demo, monkeypatch
):
    """rsync -t or a restored backup: same size, old mtime, another scope.  The cached topic is
    not trusted (its ctime changed), so the scope's memories stay where their user needs them."""
    from samctl.stores.sam import store as samstore

    monkeypatch.setattr(samstore, "RACY_SECONDS", 0)  # (the cache keeps every ctime, however recent)
    pinned = conv(sam_demo) / PINNED / "conversation.json"
    doc = orjson.loads(pinned.read_bytes())
    other = "00000000-0000-4000-8000-000000000000"  # as long as TOPIC: the file keeps its size
    doc["settings"]["sharedTopicId"] = other
    pinned.write_bytes(orjson.dumps(doc))
    _age_every_file(sam_demo)
    assert run("--root", sam_demo, "ls").exit_code == 0  # cached: the pinned conversation uses `other`
    st = pinned.stat()
    doc["settings"]["sharedTopicId"] = TOPIC
    pinned.write_bytes(orjson.dumps(doc))
    os.utime(pinned, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert pinned.stat().st_size == st.st_size and pinned.stat().st_mtime_ns == st.st_mtime_ns
    fp = fingerprint(sam_demo)
    r = run("--root", sam_demo, "rm", TOPIC, "--yes")
    assert r.exit_code == 1 and "shared-topic memory scope" in r.stderr and PINNED in r.stderr, r.output
    assert fingerprint(sam_demo) == fp


@pytest.mark.parametrize("state", ["archive", "rm"])
@pytest.mark.parametrize("purge", [False, True], ids=["rm", "purge"])
def test_a_scope_used_by_a_conversation_in_the_attic_is_never_removed(run, sam_demo, state, purge):
    """The conversation can come back (restore): its memories must still be there when it does."""
    assert run("--root", sam_demo, state, PINNED, "--include-pinned", "--yes").exit_code == 0
    fp = fingerprint(sam_demo)
    r = run("--root", sam_demo, "rm", TOPIC, "--yes", *(["--purge"] if purge else []))
    assert r.exit_code == 1, r.output
    assert "shared-topic memory scope" in r.stderr and PINNED in r.stderr
    assert fingerprint(sam_demo) == fp
    assert run("--root", sam_demo, "restore", PINNED).exit_code == 0
    assert (conv(sam_demo) / TOPIC / "memory.db").exists()


def test_a_scope_used_by_an_entry_written_before_manifests_named_the_scope(run, sam_demo):
    """Older manifests do not say which scope the conversation used: its archived conversation.json does."""
    import orjson

    assert run("--root", sam_demo, "archive", PINNED, "--include-pinned", "--yes").exit_code == 0
    (man,) = attic_of(sam_demo).glob(f"{PINNED}.*.manifest.json")
    doc = orjson.loads(man.read_bytes())
    assert doc.pop("shared_topic") == TOPIC
    man.write_bytes(orjson.dumps(doc, option=orjson.OPT_INDENT_2))
    r = run("--root", sam_demo, "rm", TOPIC, "--purge", "--yes")
    assert r.exit_code == 1 and "shared-topic memory scope" in r.stderr
    assert (conv(sam_demo) / TOPIC / "memory.db").exists()


def test_once_the_attic_entry_is_purged_the_scope_can_go(run, sam_demo):
    assert run("--root", sam_demo, "rm", PINNED, "--include-pinned", "--yes").exit_code == 0
    assert run("--root", sam_demo, "rm", PINNED, "--purge", "--include-pinned", "--yes").exit_code == 0
    assert run("--root", sam_demo, "rm", TOPIC, "--purge", "--yes").exit_code == 0
    assert not (conv(sam_demo) / TOPIC).exists()


def test_a_pinned_conversation_in_the_attic_is_not_purged_without_include_pinned(run, sam_demo):
    assert run("--root", sam_demo, "archive", PINNED, "--include-pinned", "--yes").exit_code == 0
    fp = fingerprint(sam_demo)
    r = run("--root", sam_demo, "rm", "--purge", PINNED, "--yes")
    assert r.exit_code == 1, r.output
    assert "pinned" in r.stderr and "--include-pinned" in r.stderr
    assert fingerprint(sam_demo) == fp
    r = run("--root", sam_demo, "rm", "--purge", PINNED, "--yes", "--include-pinned")
    assert r.exit_code == 0, r.stderr
    assert not list(attic_of(sam_demo).glob(f"{PINNED}.*"))


@pytest.mark.parametrize("how", [["{id}"], ["--title", "budget"]], ids=["named", "filter"])
def test_a_pinned_entry_is_not_purged_when_its_conversation_came_back_unpinned(run, sam_demo, how):
    """The pinned archived copy is kept by --purge of the id that is in the store again, unpinned."""
    import shutil

    import orjson

    saved = conv(sam_demo).parent / "saved"
    shutil.copytree(conv(sam_demo) / PINNED, saved)
    assert run("--root", sam_demo, "archive", PINNED, "--include-pinned", "--yes").exit_code == 0
    shutil.copytree(saved, conv(sam_demo) / PINNED)
    shutil.rmtree(saved)
    doc = orjson.loads((conv(sam_demo) / PINNED / "conversation.json").read_bytes())
    doc["isPinned"] = False
    (conv(sam_demo) / PINNED / "conversation.json").write_bytes(orjson.dumps(doc))
    fp = fingerprint(sam_demo)
    r = run("--root", sam_demo, "rm", "--purge", "--yes", *[a.replace("{id}", PINNED) for a in how])
    if how[0] == "{id}":
        assert r.exit_code == 1 and "pinned" in r.stderr and "--include-pinned" in r.stderr, r.output
        assert fingerprint(sam_demo) == fp
    else:
        assert r.exit_code == 0 and f"kept: {PINNED}: its attic entry was pinned" in r.stderr, r.output
        assert (conv(sam_demo) / PINNED).exists()
    assert list(attic_of(sam_demo).glob(f"{PINNED}.*.manifest.json"))
    r = run("--root", sam_demo, "rm", "--purge", PINNED, "--yes", "--include-pinned")
    assert r.exit_code == 0, r.stderr
    assert not list(attic_of(sam_demo).glob(f"{PINNED}.*")) and not (conv(sam_demo) / PINNED).exists()


@pytest.mark.parametrize(
    "cmd", [["rm", SID], ["archive", "--older-than", "1d", "--yes"], ["restore", SID], ["compact"]]
)
def test_busy_when_sam_runs_unless_force(cmd, run, sam_demo, monkeypatch):
    if cmd[0] == "restore":
        assert run("--root", sam_demo, "rm", SID).exit_code == 0
    fp = fingerprint(sam_demo)
    monkeypatch.setenv("SAMCTL_ASSUME_SAM_RUNNING", "1")
    r = run("--root", sam_demo, *cmd)
    assert r.exit_code == 5, r.stderr
    assert "SAM is running" in r.stderr and "--force" in r.stderr
    assert fingerprint(sam_demo) == fp
    r = run("--root", sam_demo, *cmd, "--force")
    assert r.exit_code == 0, r.stderr


@pytest.fixture
def held_scratch_lock(mermaid_demo):
    store = open_store(str(mermaid_demo))
    p = store.scratch_lock_path(MID)
    p.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    fd = os.open(p, os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(fd, fcntl.LOCK_EX)
    yield p
    os.close(fd)
    import shutil

    shutil.rmtree(p.parent, ignore_errors=True)


def test_busy_when_mermaid_session_is_live(run, mermaid_demo, held_scratch_lock):
    fp = fingerprint(mermaid_demo)
    r = run("--root", mermaid_demo, "rm", MID)
    assert r.exit_code == 5 and "scratch lock is held" in r.stderr
    r = run("--root", mermaid_demo, "rm", MID, "--purge", "--yes")
    assert r.exit_code == 5
    assert fingerprint(mermaid_demo) == fp
    r = run("--root", mermaid_demo, "rm", MID2)  # another session is fine
    assert r.exit_code == 0
    r = run("--root", mermaid_demo, "rm", MID, "--force")
    assert r.exit_code == 0


@pytest.mark.parametrize(
    "cmd", [["rm", MID], ["archive", "--older-than", "1d", "--yes"], ["compact"], ["attic", "--repair"]]
)
def test_lock_contention_is_busy_with_lock_wait_zero(cmd, run, mermaid_demo):
    lockdir = mermaid_demo / ".mermaid" / ".samctl"
    lockdir.mkdir(mode=0o700)
    fd = os.open(lockdir / "lock", os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(fd, fcntl.LOCK_EX)
    try:
        fp = fingerprint(mermaid_demo)
        r = run("--root", mermaid_demo, *cmd, "--lock-wait", "0")
        assert r.exit_code == 5, r.stderr
        assert "another samctl is writing" in r.stderr and "pass --lock-wait SECONDS" in r.stderr
        assert fingerprint(mermaid_demo) == fp
        r = run("--root", mermaid_demo, *cmd, "--lock-wait", "0.2")
        assert r.exit_code == 5 and "(waited 0.2 s)" in r.stderr and "a longer --lock-wait" in r.stderr
        assert fingerprint(mermaid_demo) == fp
    finally:
        os.close(fd)
    r = run("--root", mermaid_demo, *cmd, "--lock-wait", "0")
    assert r.exit_code == 0, r.stderr


def test_many_without_a_terminal_needs_yes(run, mermaid_demo):
    fp = fingerprint(mermaid_demo)
    r = run("--root", mermaid_demo, "rm", "--older-than", "1d")
    assert r.exit_code == 2 and "--yes" in r.stderr
    r = run("--root", mermaid_demo, "rm", MID, MID2)
    assert r.exit_code == 2
    r = run("--root", mermaid_demo, "rm", MID, "--purge")
    assert r.exit_code == 2 and "purge" in r.stderr.lower()
    assert fingerprint(mermaid_demo) == fp


def test_terminal_confirmation(run, mermaid_demo, monkeypatch):
    monkeypatch.setattr("samctl.cli.writeopts.stdin_is_tty", lambda: True)
    fp = fingerprint(mermaid_demo)
    r = run("--root", mermaid_demo, "rm", "--older-than", "1d", input="n\n")
    assert r.exit_code == 1 and "nothing was changed" in r.stderr
    assert r.stderr.count("delete: ") == 3  # the list the question is about
    assert fingerprint(mermaid_demo) == fp
    r = run("--root", mermaid_demo, "rm", "--older-than", "1d", input="y\n")
    assert r.exit_code == 0
    assert "Move 3 conversations to the attic?" in r.stderr
    assert open_store(str(mermaid_demo)).all_ids() == []


def test_dry_run_changes_nothing(run, mermaid_demo, sam_demo):
    for root, args in (
        (mermaid_demo, ["rm", "--older-than", "1d"]),
        (mermaid_demo, ["rm", MID, "--purge"]),
        (sam_demo, ["archive", "--older-than", "1d"]),
        (mermaid_demo, ["compact", "--grace", "0s"]),
    ):
        fp = fingerprint(root)
        r = run("--root", root, *args, "--dry-run", "--format", "json")
        assert r.exit_code == 0, r.stderr
        assert orjson.loads(r.stdout)["dry_run"] is True
        assert fingerprint(root) == fp


def test_empty_selection(run, sam_demo, mermaid_demo):
    from make_fixtures import mermaid_doc, mermaid_snapshot, sam_doc, sam_dumps

    empty = "E0000000-0000-4000-8000-000000000001"
    (conv(sam_demo) / empty).mkdir(mode=0o700)
    (conv(sam_demo) / empty / "conversation.json").write_text(
        sam_dumps(sam_doc(empty, "New Conversation", [], "2026-01-01T00:00:00Z", "2026-01-01T00:00:00Z"))
    )
    r = run("--root", sam_demo, "rm", "--empty", "--yes")
    assert r.exit_code == 0, r.stderr
    assert r.stdout.count("deleted:") == 1 and empty in r.stdout
    eid = "20260101_000000_000"
    (conv(mermaid_demo) / f"{eid}.json").write_text(mermaid_snapshot(mermaid_doc(eid, "x", [], "2026-01-01T00:00:00Z")))
    r = run("--root", mermaid_demo, "rm", "--empty", "--yes")
    assert r.exit_code == 0 and r.stdout.count("deleted:") == 1 and eid in r.stdout


# --- purge -------------------------------------------------------------------------------


def test_purge_mermaid_keeps_conflicts_and_removes_the_scratch_dir(run, mermaid_demo):
    c = conv(mermaid_demo)
    (c / f"{MID}.4242.0.conflict").write_bytes(b"{}")
    store = open_store(str(mermaid_demo))
    scratch = store.scratch_lock_path(MID).parent
    scratch.mkdir(parents=True, exist_ok=True, mode=0o700)
    (scratch / "scratchpad").mkdir()
    (scratch / ".lock").write_bytes(b"")
    r = run("--root", mermaid_demo, "rm", MID, "--purge", "--yes")
    assert r.exit_code == 0, r.stderr
    assert not any((c / f"{MID}.{e}").exists() for e in ("json", "meta", "jsonl"))
    assert (c / f"{MID}.4242.0.conflict").exists()
    assert not scratch.exists()
    assert not attic_of(mermaid_demo).exists() or not any(attic_of(mermaid_demo).glob("*.tar.zst"))


def test_purge_an_id_that_is_only_in_the_attic(run, mermaid_demo):
    assert run("--root", mermaid_demo, "rm", MID).exit_code == 0
    assert run("--root", mermaid_demo, "rm", MID2).exit_code == 0
    r = run("--root", mermaid_demo, "rm", "--purge", "20260810", "--yes")
    assert r.exit_code == 0, r.stderr
    left = [p.name for p in attic_of(mermaid_demo).glob("*.tar.zst")]
    assert len(left) == 1 and left[0].startswith(MID2)


def test_purge_sam_removes_the_folder(run, sam_demo):
    r = run("--root", sam_demo, "rm", API, "--purge", "--yes")
    assert r.exit_code == 0, r.stderr
    assert not (conv(sam_demo) / API).exists()
    assert run("--root", sam_demo, "check").exit_code == 0


# --- archive -------------------------------------------------------------------------------


def test_archive_older_than_keep_last(run, mermaid_demo):
    r = run("--root", mermaid_demo, "archive", "--older-than", "1d", "--keep-last", "1", "--yes")
    assert r.exit_code == 0, r.stderr
    assert r.stdout.count("archived:") == 2
    assert "one of the 1 most recent" in r.stderr
    assert open_store(str(mermaid_demo)).all_ids() == ["20260901_170000_250"]
    r = run("--root", mermaid_demo, "attic", "--state", "archived", "--format", "jsonl")
    assert len(r.stdout.splitlines()) == 2
    r = run("--root", mermaid_demo, "archive")
    assert r.exit_code == 2


def test_attic_verify_reports_damage(run, mermaid_demo):
    assert run("--root", mermaid_demo, "rm", MID).exit_code == 0
    tar = next(attic_of(mermaid_demo).glob("*.tar.zst"))
    data = bytearray(tar.read_bytes())
    data[-5] ^= 0x55
    tar.write_bytes(bytes(data))
    r = run("--root", mermaid_demo, "attic", "--verify")
    assert r.exit_code == 3 and "attic-tampered" in r.stderr
    fp = fingerprint(conv(mermaid_demo)), tar.read_bytes()
    r = run("--root", mermaid_demo, "restore", MID)  # a problem of the entry named: exit 3 (issue #20, finding 9)
    assert r.exit_code == 3 and "not-restored" in r.stderr and "damaged" in r.stderr and "attic --verify" in r.stderr
    assert (fingerprint(conv(mermaid_demo)), tar.read_bytes()) == fp
    assert list((attic_of(mermaid_demo) / ".staging").iterdir()) == []


def _count_manifest_reads(monkeypatch) -> list:
    from samctl.attic import entries as atticmod

    read = []
    real = atticmod.load_manifest
    monkeypatch.setattr(
        atticmod,
        "load_manifest",
        lambda store, path, data=None, attic=None: (
            read.append(os.path.basename(path)),
            real(store, path, data, attic),
        )[1],
    )
    return read


def test_restore_and_purge_of_one_id_read_only_its_manifests(run, mermaid_demo, monkeypatch):
    """In an attic of many entries, restoring or purging one conversation reads its own manifests,
    not every one (the ids are resolved from the file names)."""
    ids = open_store(str(mermaid_demo)).all_ids()
    assert run("--root", mermaid_demo, "rm", "--yes", *ids).exit_code == 0
    assert run("--root", mermaid_demo, "rm", MID).exit_code == 4  # gone from the store already
    read = _count_manifest_reads(monkeypatch)
    r = run("--root", mermaid_demo, "restore", MID[:11])
    assert r.exit_code == 0, r.stderr
    assert read and all(n.startswith(MID) for n in read)
    read.clear()
    other = next(i for i in ids if i != MID)
    r = run("--root", mermaid_demo, "restore", "--entry", other)  # an entry named by a prefix of its name
    assert r.exit_code == 0, r.stderr
    assert read and all(n.startswith(other) for n in read)
    read.clear()
    last = next(i for i in ids if i not in (MID, other))
    r = run("--root", mermaid_demo, "rm", "--purge", "--yes", last)
    assert r.exit_code == 0, r.stderr
    assert read and all(n.startswith(last) for n in read)
    assert not list(attic_of(mermaid_demo).glob(f"{last}.*"))


@pytest.mark.parametrize("cmd", [["restore"], ["rm", "--purge", "--yes"]])
def test_an_id_whose_only_entry_is_damaged_is_refused_and_nothing_changes(cmd, run, mermaid_demo):
    assert run("--root", mermaid_demo, "rm", MID).exit_code == 0
    manifest = next(attic_of(mermaid_demo).glob("*.manifest.json"))
    manifest.write_bytes(b"{not json")
    fp = fingerprint(mermaid_demo)
    r = run("--root", mermaid_demo, *cmd, MID)
    assert r.exit_code == 4, r.stderr
    assert f"no attic entry of {MID} can be read" in r.stderr and f"samctl --root {mermaid_demo} attic" in r.stderr
    assert fingerprint(mermaid_demo) == fp
    r = run("--root", mermaid_demo, "attic")
    assert r.exit_code == 3 and "attic-bad-manifest" in r.stderr
    assert "holds no readable entry" in r.stderr and "is empty" not in r.stderr


def test_a_symlinked_file_is_not_moved_but_can_be_purged(run, mermaid_demo, tmp_path):
    c = conv(mermaid_demo)
    outside = tmp_path / "outside.json"
    outside.write_bytes((c / f"{MID}.json").read_bytes())
    (c / f"{MID}.json").unlink()
    os.symlink(outside, c / f"{MID}.json")
    fp = fingerprint(mermaid_demo)
    r = run("--root", mermaid_demo, "rm", MID)  # a problem of the conversation named: exit 3 (issue #20, finding 9)
    assert r.exit_code == 3 and "not-moved" in r.stderr and "symlink" in r.stderr and "nothing was changed" in r.stderr
    assert fingerprint(mermaid_demo) == fp
    r = run("--root", mermaid_demo, "rm", MID, "--purge", "--yes")
    assert r.exit_code == 0, r.stderr
    assert not os.path.lexists(c / f"{MID}.json") and outside.exists()  # the link goes, never its target


def test_sam_age_counts_the_newest_message_not_only_updated(run, sam_demo):
    """SAM does not touch `updated` for ordinary messages (docs/formats/sam.md §4.1): a conversation with a
    recent message is not idle, whatever `updated` says."""
    import time as _time

    from make_fixtures import sam_doc, sam_dumps, sam_message

    recent = _time.strftime("%Y-%m-%dT%H:%M:%SZ", _time.gmtime(_time.time() - 3600))
    cid = "F0000000-0000-4000-8000-000000000001"
    (conv(sam_demo) / cid).mkdir(mode=0o700)
    doc = sam_doc(
        cid,
        "Busy yesterday",
        [
            sam_message("11111111-2222-4333-8444-555555555555", "user", "hello", "2026-01-01T12:00:00Z"),
            sam_message("66666666-7777-4888-8999-AAAAAAAAAAAA", "assistant", "hi", recent),
        ],
        "2026-01-01T12:00:00Z",
        "2026-01-01T12:00:01Z",
    )
    (conv(sam_demo) / cid / "conversation.json").write_text(sam_dumps(doc))
    r = run("--root", sam_demo, "archive", "--older-than", "30d", "--dry-run", "--format", "json")
    assert r.exit_code == 0, r.stderr
    ids = [i["id"] for i in orjson.loads(r.stdout)["items"]]
    assert cid not in ids and API in ids


@pytest.mark.parametrize("as_new", [False, True], ids=["restore", "as-new"])
def test_a_read_only_sub_folder_moves_out_and_back(run, sam_demo, folder_write_rule, as_new):
    """As a user who is not root: rm empties the conversation's 0555 sub-folder from its trash, and
    restore moves the files out of the staged folder before the folder gets its 0555 back."""
    sub = conv(sam_demo) / SID / "sub"
    sub.mkdir()
    (sub / "note.txt").write_text("hello")
    os.chmod(sub, 0o555)
    r = run("--root", sam_demo, "rm", SID)
    assert r.exit_code == 0, r.output
    assert not (conv(sam_demo) / SID).exists()
    assert os.listdir(attic_of(sam_demo) / ".staging") == []
    r = run("--root", sam_demo, "restore", SID, *(["--as-new"] if as_new else []))
    assert r.exit_code == 0, r.output
    [back] = [d for d in conv(sam_demo).iterdir() if (d / "sub").exists()]
    assert (back / "sub" / "note.txt").read_text() == "hello"
    assert stat.S_IMODE((back / "sub").stat().st_mode) == 0o555
    assert run("--root", sam_demo, "check").exit_code in (0, 3)
    assert os.listdir(attic_of(sam_demo) / ".staging") == [] and os.listdir(attic_of(sam_demo) / ".journal") == []
    os.chmod(back / "sub", 0o755)  # (so pytest can clean up)


def _user_of_8b58s_memories(sam_demo) -> str:
    """A new conversation whose shared-topic scope is 8B58's own folder (SAM allows it); its id."""
    from make_fixtures import sam_doc, sam_dumps, sam_message, sam_settings

    other = "F0000000-0000-4000-8000-000000000002"
    (conv(sam_demo) / other).mkdir(mode=0o700)
    doc = sam_doc(
        other,
        "Uses 8B58's memories",
        [sam_message("11111111-2222-4333-8444-555555555555", "user", "hello", "2026-01-01T12:00:00Z")],
        "2026-01-01T12:00:00Z",
        "2026-01-01T12:00:01Z",
        settings=sam_settings(useSharedData=True, sharedTopicId=SID, sharedTopicName="Trips"),
    )
    (conv(sam_demo) / other / "conversation.json").write_text(sam_dumps(doc))
    os.chmod(conv(sam_demo) / other / "conversation.json", 0o600)
    return other


@pytest.mark.parametrize("purge", [False, True], ids=["rm", "purge"])
def test_a_folder_that_is_the_scope_of_a_conversation_in_the_attic_keeps_its_memories(run, sam_demo, purge):
    """A conversation's own folder that another conversation, now in the attic, uses as its shared
    scope: removing the conversation keeps the memories the attic's conversation needs back."""
    other = _user_of_8b58s_memories(sam_demo)
    assert run("--root", sam_demo, "rm", other).exit_code == 0
    memories = (conv(sam_demo) / SID / "memory.db").read_bytes()
    r = run("--root", sam_demo, "rm", SID, "--yes", *(["--purge"] if purge else []))
    assert r.exit_code == 0, r.stderr
    assert not (conv(sam_demo) / SID / "conversation.json").exists()
    assert (conv(sam_demo) / SID / "memory.db").read_bytes() == memories
    assert run("--root", sam_demo, "restore", other).exit_code == 0


def test_a_folder_that_is_also_another_conversations_scope_keeps_its_memories(run, sam_demo):
    _user_of_8b58s_memories(sam_demo)  # (its folder is compared with the others below)
    before = files_state(sam_demo, SID)
    r = run("--root", sam_demo, "rm", SID)
    assert r.exit_code == 0, r.stderr
    assert (conv(sam_demo) / SID / "memory.db").exists()
    assert not (conv(sam_demo) / SID / "conversation.json").exists()
    r = run("--root", sam_demo, "restore", SID)
    assert r.exit_code == 0, r.stderr
    after = files_state(sam_demo, SID)
    assert {k: v for k, v in after.items() if k != SID} == {k: v for k, v in before.items() if k != SID}


# --- batches: barriers, a failure inside a batch, a manifest cut short -----------------


def test_rm_of_many_shares_its_fsyncs_in_ordered_barriers(run, mermaid_demo, monkeypatch):
    """Three conversations, one batch: its journal record, then archives and manifests (each archive
    written before its manifest), then removals, each set reaching the disk (a barrier) before the
    next begins."""
    from samctl.fs import faults

    events = []
    monkeypatch.setattr(faults, "fault_hook", lambda step: events.append(step) if step == "sync" else None)
    real_replace = os.replace

    def replace(src, dst, *a, **k):
        name = os.path.basename(dst)
        events.append(
            "manifest"
            if name.endswith(".manifest.json")
            else "tar"
            if name.endswith(".tar.zst")
            else "journal"
            if "/.journal/" in str(dst)
            else "other"
        )
        return real_replace(src, dst, *a, **k)

    monkeypatch.setattr(os, "replace", replace)
    real_unlink = os.unlink

    def unlink(p, *a, **k):
        if "/conversations/" in str(p) and "samctl-attic" not in str(p):
            events.append("original")
        return real_unlink(p, *a, **k)

    monkeypatch.setattr(os, "unlink", unlink)
    ids = open_store(str(mermaid_demo)).all_ids()
    r = run("--root", mermaid_demo, "rm", "--yes", *ids)
    assert r.exit_code == 0, r.stderr
    syncs = [i for i, e in enumerate(events) if e == "sync"]
    assert len(syncs) == 3
    first, second, third = syncs
    assert events[:first] == ["journal"]  # one record for the batch, on disk before anything else
    assert events[first + 1 : second] == ["tar", "manifest"] * 3  # the commit point: all on disk before removals
    assert events[second + 1 : third] == ["original"] * 9  # .meta, .json and .jsonl of each
    assert open_store(str(mermaid_demo)).all_ids() == []


@pytest.mark.parametrize("which", ["mermaid", "sam"])
def test_moves_of_more_than_one_batch_round_trip(which, run, mermaid_demo, sam_demo, monkeypatch):
    """A batch size of 2: rm and restore of every conversation each take several batches, every one
    with its own record and staging folder, and leave nothing behind."""
    from samctl.attic import lifecycle, restore

    monkeypatch.setattr(lifecycle, "BATCH", 2)
    root = mermaid_demo if which == "mermaid" else sam_demo
    ids = [i for i in open_store(str(root)).all_ids() if i != TOPIC]  # a scope in use never moves
    assert len(ids) > 2
    before = {k: v for k, v in fingerprint(conv(root)).items() if k != "."}  # the folder's own mtime moves
    records = []
    real_write_batch = lifecycle.write_batch

    def write_batch(attic, moves):
        records.append(len(moves))
        return real_write_batch(attic, moves)

    monkeypatch.setattr(lifecycle, "write_batch", write_batch)
    monkeypatch.setattr(restore, "write_batch", write_batch)
    r = run("--root", root, "rm", "--yes", "--include-pinned", *ids)
    assert r.exit_code == 0, r.stderr
    assert open_store(str(root)).all_ids() == ([] if which == "mermaid" else [TOPIC])
    assert all(n <= 2 for n in records) and sum(records) == len(ids)
    records.clear()
    r = run("--root", root, "restore", *ids)
    assert r.exit_code == 0, r.stderr
    assert all(n <= 2 for n in records) and sum(records) == len(ids)
    assert {k: v for k, v in fingerprint(conv(root)).items() if k != "."} == before
    assert [p.name for p in attic_of(root).iterdir() if not p.name.startswith(".")] == []
    assert list((attic_of(root) / ".journal").iterdir()) == []
    assert list((attic_of(root) / ".staging").iterdir()) == []


def test_one_conversation_changing_mid_batch_stays_and_the_others_move(run, mermaid_demo, monkeypatch):
    from samctl.attic import entries as atticmod

    c = conv(mermaid_demo)
    real_commit = atticmod.commit_entry

    def commit_then_touch(entry):
        real_commit(entry)
        if entry.id == MID:  # the app saves this one after it was archived, before its originals go
            with open(c / f"{MID}.jsonl", "a") as f:
                f.write("{}\n")

    monkeypatch.setattr(atticmod, "commit_entry", commit_then_touch)
    ids = open_store(str(mermaid_demo)).all_ids()
    before = files_state(mermaid_demo, MID)
    r = run("--root", mermaid_demo, "rm", "--yes", *ids)
    assert r.exit_code == 3
    assert f"{MID}" in r.stderr and "changed while samctl was archiving it" in r.stderr
    assert open_store(str(mermaid_demo)).all_ids() == [MID]
    assert files_state(mermaid_demo, MID).keys() == before.keys()
    r = run("--root", mermaid_demo, "attic", "--format", "json")
    assert sorted(e["id"] for e in orjson.loads(r.stdout)["entries"]) == sorted(set(ids) - {MID})
    assert list((attic_of(mermaid_demo) / ".journal").iterdir()) == []


def _committed_not_removed(root, cid):
    """What a crash leaves between a batch's manifests and the removal of its originals: the batch's
    journal record, the archive and its manifest, and every original.  The entry."""
    from samctl.attic import entries as atticmod
    from samctl.attic import journal as repair
    from samctl.attic import lifecycle, targets

    store = open_store(str(root))
    attic = atticmod.ensure_attic(store)
    out = lifecycle._plan_out(store, attic, targets.Target(cid), "deleted", None, None, set())
    repair.write_batch(attic, [out.record(store, "deleted")])
    return atticmod.pack(store, cid, "deleted", out.paths, now=out.now, stem=out.stem)


def _repair_leaves_the_store_as_it_was(run, root, before: dict, says: str) -> None:
    """``attic --repair`` undoes the move: it says ``says``, the conversations folder is as it was
    (``before``), and the attic holds no entry and no journal record."""
    r = run("--root", root, "attic", "--repair")
    assert r.exit_code == 0, r.stderr
    assert says in r.stdout + r.stderr
    assert fingerprint(conv(root)) == before
    assert [p for p in attic_of(root).iterdir() if not p.name.startswith(".")] == []
    assert list((attic_of(root) / ".journal").iterdir()) == []
    assert run("--root", root, "check").exit_code == 0


@pytest.mark.parametrize("cut", [b"", b'{"samctl_attic": 1, "id"'])
def test_repair_undoes_a_move_whose_manifest_was_cut_short(run, mermaid_demo, cut):
    """A power loss before a batch's commit barrier can leave a manifest shorter than written;
    the originals were not touched yet, so the move is undone."""
    before = fingerprint(conv(mermaid_demo))
    _committed_not_removed(mermaid_demo, MID).manifest_path.write_bytes(cut)
    _repair_leaves_the_store_as_it_was(run, mermaid_demo, before, "manifest was cut short")


@pytest.mark.parametrize("loss", ["archive-missing", "archive-empty", "archive-cut"])
def test_repair_drops_an_entry_whose_archive_did_not_reach_the_disk(run, mermaid_demo, loss):
    """A batch's archives and manifests share one barrier, so a power loss before it can leave a
    whole manifest beside an archive that is gone, empty or cut; the originals were not touched
    yet, so the entry is dropped and the conversation stays where it is, whole."""
    before = fingerprint(conv(mermaid_demo))
    entry = _committed_not_removed(mermaid_demo, MID)
    data = entry.tar_path.read_bytes()
    if loss == "archive-missing":
        entry.tar_path.unlink()
    else:
        entry.tar_path.write_bytes(b"" if loss == "archive-empty" else data[: len(data) // 2])
    _repair_leaves_the_store_as_it_was(
        run, mermaid_demo, before, "damaged archive; it was removed, the store copy is whole"
    )


def test_repair_leaves_a_cut_manifest_alone_when_an_original_is_gone(run, mermaid_demo):
    _committed_not_removed(mermaid_demo, MID).manifest_path.write_bytes(b"")
    (conv(mermaid_demo) / f"{MID}.meta").unlink()
    attic_before = fingerprint(attic_of(mermaid_demo))
    run("--root", mermaid_demo, "attic", "--repair")
    assert fingerprint(attic_of(mermaid_demo)) == attic_before  # for a person to look at
    assert (conv(mermaid_demo) / f"{MID}.json").exists()


@pytest.mark.parametrize(
    "record",
    [
        {"op": "teleport", "stem": f"{MID}.deleted.20990101T000000Z"},  # a newer samctl's operation
        {"op": "batch", "moves": [{"op": "teleport", "stem": f"{MID}.deleted.20990101T000000Z"}]},
        {"op": "batch", "moves": "not a list"},
    ],
)
def test_repair_leaves_records_it_does_not_understand(run, mermaid_demo, record):
    journal = attic_of(mermaid_demo) / ".journal"
    journal.mkdir(parents=True, mode=0o700)
    os.chmod(journal.parent, 0o700)
    name = (f"batch.{MID}.deleted.20990101T000000Z" if record["op"] == "batch" else record["stem"]) + ".json"
    (journal / name).write_bytes(orjson.dumps(record))
    before = fingerprint(attic_of(mermaid_demo)), fingerprint(conv(mermaid_demo))
    r = run("--root", mermaid_demo, "attic", "--repair")
    assert r.exit_code == 0, r.stderr
    assert "ignored" in r.stdout + r.stderr and name in r.stdout + r.stderr
    assert (fingerprint(attic_of(mermaid_demo)), fingerprint(conv(mermaid_demo))) == before


def _rm_all(run, root):
    ids = open_store(str(root)).all_ids()
    before = {cid: files_state(root, cid) for cid in ids}
    assert run("--root", root, "rm", "--yes", *ids).exit_code == 0
    return ids, before


def test_restore_many_brings_every_one_back_in_one_batch(run, mermaid_demo, monkeypatch):
    from samctl.fs import faults

    ids, before = _rm_all(run, mermaid_demo)
    syncs = []
    monkeypatch.setattr(faults, "fault_hook", lambda step: syncs.append(step) if step == "sync" else None)
    r = run("--root", mermaid_demo, "restore", *[cid[:13] for cid in ids])
    assert r.exit_code == 0, r.stderr
    assert len(syncs) == 3  # staged + journal records; placed; entries dropped
    assert {cid: files_state(mermaid_demo, cid) for cid in ids} == before
    assert [p for p in attic_of(mermaid_demo).iterdir() if not p.name.startswith(".")] == []
    assert list((attic_of(mermaid_demo) / ".journal").iterdir()) == []
    assert run("--root", mermaid_demo, "check").exit_code == 0


def test_a_file_appearing_mid_restore_keeps_that_entry_and_its_move_for_repair(run, mermaid_demo, monkeypatch):
    """mermaid saves a session with the same id after samctl checked the store but before it placed
    the files: the others are restored; that one keeps its attic entry, its staged copy and its move
    in the batch's journal record, and `attic --repair` finishes it once the intruder is moved aside."""
    from samctl.attic import restore

    ids, before = _rm_all(run, mermaid_demo)
    intruder = conv(mermaid_demo) / f"{MID}.jsonl"
    real = restore.write_batch

    def record_then_intrude(attic, moves):
        name = real(attic, moves)
        intruder.write_text('{"intruder": true}\n')
        return name

    monkeypatch.setattr(restore, "write_batch", record_then_intrude)
    r = run("--root", mermaid_demo, "restore", *ids)
    assert r.exit_code == 3, r.stderr
    assert f"{MID}.jsonl appeared in the store while restoring {MID}" in r.stderr
    for cid in set(ids) - {MID}:
        assert files_state(mermaid_demo, cid) == before[cid]
    assert intruder.read_text() == '{"intruder": true}\n'
    assert len(list(attic_of(mermaid_demo).glob(f"{MID}.*.manifest.json"))) == 1
    (record,) = (attic_of(mermaid_demo) / ".journal").iterdir()
    moves = orjson.loads(record.read_bytes())["moves"]
    assert [m["id"] for m in moves] == [MID]  # only the move left to finish
    monkeypatch.undo()
    intruder.unlink()
    r = run("--root", mermaid_demo, "attic", "--repair")
    assert r.exit_code == 0, r.stderr
    assert f"{MID}: finished an interrupted restore" in r.stdout + r.stderr
    assert {cid: files_state(mermaid_demo, cid) for cid in ids} == before
    assert [p for p in attic_of(mermaid_demo).iterdir() if not p.name.startswith(".")] == []
    assert list((attic_of(mermaid_demo) / ".journal").iterdir()) == []
    assert list((attic_of(mermaid_demo) / ".staging").iterdir()) == []
    assert run("--root", mermaid_demo, "check").exit_code == 0


def test_restore_one_conversation_named_twice_restores_it_once(run, mermaid_demo):
    ids, before = _rm_all(run, mermaid_demo)
    r = run("--root", mermaid_demo, "restore", "--format", "json", MID, MID[:13], ids[-1])
    assert r.exit_code == 0, r.stderr
    assert sorted(i["id"] for i in orjson.loads(r.stdout)["items"]) == sorted({MID, ids[-1]})
    assert files_state(mermaid_demo, MID) == before[MID]


def test_restore_many_does_nothing_if_one_exists_again(run, mermaid_demo):
    ids, _ = _rm_all(run, mermaid_demo)
    (conv(mermaid_demo) / f"{ids[0]}.jsonl").write_text("")  # mermaid started a session with that id again
    state = fingerprint(mermaid_demo)
    r = run("--root", mermaid_demo, "restore", *ids)
    assert r.exit_code == 1 and "exists in the store again" in r.stderr and ids[0] in r.stderr
    assert fingerprint(mermaid_demo) == state


@pytest.mark.parametrize("read_ahead", ["inline", "read-ahead", "workers"])
@pytest.mark.parametrize("damage", ["flipped-byte", "unreadable", "io-error"])
def test_restore_many_reports_a_damaged_entry_and_restores_the_rest(run, mermaid_demo, monkeypatch, read_ahead, damage):
    from samctl.attic import restore

    if read_ahead == "read-ahead":  # as for archives of 64 KiB or more: read, hashed and decompressed on a helper
        monkeypatch.setattr(restore, "READ_AHEAD_MIN", 0)  # thread, ahead
    if read_ahead == "workers":  # as for a batch of 64 small entries or more: extracted by worker processes
        monkeypatch.setattr(restore, "PARALLEL_STAGE", 2)
        monkeypatch.setattr(restore, "STAGE_PART", 1)
        monkeypatch.setenv("SAMCTL_JOBS", "2")
    ids, before = _rm_all(run, mermaid_demo)
    tar = next(attic_of(mermaid_demo).glob(f"{MID}.*.tar.zst"))
    data = bytearray(tar.read_bytes())
    data[-5] ^= 0x55
    if damage == "flipped-byte":
        tar.write_bytes(bytes(data))
    else:  # listed fine, then cannot be read (an I/O error, permissions gone): a finding, never a crash
        import errno

        from samctl.errors import FileProblem
        from samctl.fs import reading

        real, failed = reading.read_capped, []

        def read_capped(path, cap):
            if str(path) == str(tar):
                failed.append(path)
                if damage == "io-error":  # (not turned into a FileProblem on the way: an OSError as it comes)
                    raise OSError(errno.EIO, "Input/output error", str(path))
                raise FileProblem("unreadable", path, f"{path}: Input/output error")
            return real(path, cap)

        monkeypatch.setattr(reading, "read_capped", read_capped)
    r = run("--root", mermaid_demo, "restore", *ids)
    assert r.exit_code == 3, r.stderr
    assert "not-restored" in r.stderr and MID in r.stderr
    assert ("Input/output error" if damage == "io-error" else "damaged") in r.stderr
    assert f"not-restored: {tar}: " in r.stderr  # the path is the archive's, as in every other finding
    if damage != "flipped-byte":
        assert failed or read_ahead == "workers"  # it failed where the archive is read (inline, on the helper
        monkeypatch.undo()  # thread; or in a worker, which has its own copy of the list)
    assert sorted(open_store(str(mermaid_demo)).all_ids()) == sorted(set(ids) - {MID})
    for cid in set(ids) - {MID}:
        assert files_state(mermaid_demo, cid) == before[cid]
    assert tar.exists() and list((attic_of(mermaid_demo) / ".staging").iterdir()) == []


def test_restore_many_as_new_gives_each_its_own_id(run, mermaid_demo):
    ids, _ = _rm_all(run, mermaid_demo)
    r = run("--root", mermaid_demo, "restore", "--as-new", "--format", "json", *ids)
    assert r.exit_code == 0, r.stderr
    new = [it["id"] for it in orjson.loads(r.stdout)["items"]]
    assert len(set(new)) == 3 and not set(new) & set(ids)
    assert sorted(open_store(str(mermaid_demo)).all_ids()) == sorted(new)


def test_restore_as_new_never_picks_an_id_the_attic_holds(run, mermaid_demo, monkeypatch):
    """The fresh id must not be one a later `samctl restore` would want back."""
    from samctl.stores.mermaid.store import MermaidStore

    ids, _ = _rm_all(run, mermaid_demo)
    seen = []
    real = MermaidStore.new_id

    def new_id(self, taken=None, like=None):
        seen.append(set(taken))
        return real(self, taken, like)

    monkeypatch.setattr(MermaidStore, "new_id", new_id)
    r = run("--root", mermaid_demo, "restore", "--as-new", "--format", "json", ids[0])
    assert r.exit_code == 0, r.stderr
    assert seen and all(set(ids) <= taken for taken in seen)


def test_restore_entry_with_several_ids_is_a_usage_error(run, mermaid_demo):
    ids, _ = _rm_all(run, mermaid_demo)
    state = fingerprint(mermaid_demo)
    r = run("--root", mermaid_demo, "restore", "--entry", MID, ids[0], ids[1])
    assert r.exit_code == 2 and "--entry names one entry" in r.stderr
    assert fingerprint(mermaid_demo) == state


# --- a removal that fails after the commit point -----------------------------


def _fail_unlink_of(monkeypatch, suffix: str):
    """Every unlink of a path ending in ``suffix`` fails as on a read-only or immutable file."""
    from samctl.fs import removing

    real = removing.remove

    def remove(path, missing_ok=True):
        if str(path).endswith(suffix):
            raise PermissionError(13, "Permission denied", str(path))
        return real(path, missing_ok)

    monkeypatch.setattr(removing, "remove", remove)


def test_rm_that_cannot_remove_the_first_original_undoes_the_move(run, mermaid_demo, monkeypatch):
    """Nothing of the conversation left the store: its new attic entry goes again, and the report
    says nothing was moved (it used to leave the conversation in both places)."""
    before = fingerprint(conv(mermaid_demo))
    _fail_unlink_of(monkeypatch, f"{MID}.meta")
    r = run("--root", mermaid_demo, "rm", MID)
    assert r.exit_code == 3, r.output  # (not 1: the conversation named had a problem, issue #20, finding 9)
    assert "not-moved" in r.stderr and "Permission denied" in r.stderr and "nothing was moved" in r.stderr
    assert fingerprint(conv(mermaid_demo)) == before
    assert not [p for p in attic_of(mermaid_demo).iterdir() if p.name.startswith(MID)]


def test_rm_that_removes_part_of_a_conversation_says_so(run, mermaid_demo, monkeypatch):
    """The sidecar went, the snapshot cannot: the conversation is whole in the attic, and the
    report says it moved, which files stayed behind, and how to undo (exit 3, not 'not-moved')."""
    _fail_unlink_of(monkeypatch, f"{MID}.json")
    r = run("--root", mermaid_demo, "rm", MID)
    assert r.exit_code == 3, r.output
    assert "not-moved" not in r.stderr and "partly-removed" in r.stderr and f"{MID}.json" in r.stderr
    assert f"undo with: samctl --root {mermaid_demo} restore" in r.stdout + r.stderr
    assert [p for p in attic_of(mermaid_demo).iterdir() if p.name.startswith(MID) and p.name.endswith(".tar.zst")]
    assert (conv(mermaid_demo) / f"{MID}.json").exists() and not (conv(mermaid_demo) / f"{MID}.meta").exists()


def test_sam_rm_whose_folder_cannot_leave_deletes_nothing_in_place(run, sam_demo, monkeypatch):
    """The rename of the folder out of conversations/ failing for any reason but another file system
    (a read-only conversations folder) used to fall back to deleting every file in place."""
    import errno
    import os as real_os

    before = fingerprint(conv(sam_demo))
    rename = real_os.rename

    def no_rename(src, dst):
        if str(src).endswith(SID):
            raise PermissionError(errno.EACCES, "Permission denied", str(src))
        return rename(src, dst)

    monkeypatch.setattr(real_os, "rename", no_rename)
    r = run("--root", sam_demo, "rm", SID)
    assert r.exit_code == 3, r.output
    assert "not-moved" in r.stderr and "nothing was moved" in r.stderr
    assert fingerprint(conv(sam_demo)) == before
    assert not [p for p in attic_of(sam_demo).iterdir() if p.name.startswith(SID)]


# --- interrupted restores that repair must not lose or choke on ---------------


class _Stop(Exception):
    pass


def _restore_stopped_before_placing(run, root, monkeypatch, cid):
    """``rm`` then ``restore`` of ``cid``, stopped (an exception) at its first rename into the store,
    after the barrier that made the staged copy durable: its journal record and staging copy stay,
    as after a crash."""
    from samctl.fs import faults

    assert run("--root", root, "rm", cid).exit_code == 0
    seen = []

    def hook(step):
        seen.append(step)
        if step == "rename" and "sync" in seen:
            raise _Stop(step)

    monkeypatch.setattr(faults, "fault_hook", hook)
    assert run("--root", root, "restore", cid).exit_code == 1  # (samctl reports the exception)
    monkeypatch.setattr(faults, "fault_hook", None)
    assert list((attic_of(root) / ".journal").glob("*.json"))


def test_a_restore_waiting_for_a_person_survives_the_next_writing_command(run, mermaid_demo, monkeypatch):
    """A file appeared where the restore places one: the move waits in the journal for the person the
    message speaks to, whatever samctl runs meanwhile (cron's compact, an rm of another id)."""
    before = files_state(mermaid_demo, MID)
    _restore_stopped_before_placing(run, mermaid_demo, monkeypatch, MID)
    intruder = conv(mermaid_demo) / f"{MID}.json"
    intruder.write_text('{"other": 1}')
    for args in (["compact"], ["rm", MID2]):
        r = run("--root", mermaid_demo, *args)
        assert "waiting" in r.stdout + r.stderr and "attic --repair" in r.stdout + r.stderr, r.output
        assert list((attic_of(mermaid_demo) / ".journal").glob("*.json"))
    intruder.rename(mermaid_demo / "moved-aside.json")
    r = run("--root", mermaid_demo, "attic", "--repair")
    assert r.exit_code == 0 and "finished an interrupted restore" in r.stdout + r.stderr, r.output
    assert files_state(mermaid_demo, MID) == before
    assert not list((attic_of(mermaid_demo) / ".journal").glob("*.json"))


@pytest.mark.parametrize("damage", ["names-not-a-list", "manifest-not-json"])
def test_a_damaged_interrupted_restore_blocks_no_writing_command(run, mermaid_demo, monkeypatch, damage):
    """Left for a person (`samctl attic` reports it), never an internal error in every rm and compact."""
    import orjson

    _restore_stopped_before_placing(run, mermaid_demo, monkeypatch, MID)
    (record,) = (attic_of(mermaid_demo) / ".journal").glob("*.json")
    if damage == "names-not-a-list":
        doc = orjson.loads(record.read_bytes())
        for move in doc.get("moves", [doc]):
            move["names"] = 5
        record.write_bytes(orjson.dumps(doc))
    else:
        (manifest,) = attic_of(mermaid_demo).glob(f"{MID}.*.manifest.json")
        manifest.write_text("garbage")
    for args in (["rm", MID2], ["compact"], ["attic", "--repair"]):
        r = run("--root", mermaid_demo, *args)
        assert r.exit_code in (0, 3), r.output
        assert "internal error" not in r.stderr
    assert record.exists()  # still there for a person


def test_an_attic_entry_that_cannot_be_dropped_after_its_restore(run, mermaid_demo, monkeypatch):
    """The conversation is back; the entry stays (exit 3, said so), and a later repair removes it."""
    from samctl.attic import entries as atticmod

    before = files_state(mermaid_demo, MID)
    assert run("--root", mermaid_demo, "rm", MID).exit_code == 0
    real = atticmod.drop

    def drop(entry):
        raise PermissionError(1, "Operation not permitted", str(entry.manifest_path))

    monkeypatch.setattr(atticmod, "drop", drop)
    r = run("--root", mermaid_demo, "restore", MID)
    assert r.exit_code == 3, r.output
    assert "internal error" not in r.stderr and "could not be removed" in r.stderr
    assert files_state(mermaid_demo, MID) == before
    for args in (["rm", MID2], ["compact"]):
        assert "internal error" not in run("--root", mermaid_demo, *args).stderr
    monkeypatch.setattr(atticmod, "drop", real)
    r = run("--root", mermaid_demo, "attic", "--repair")
    assert r.exit_code == 0, r.output
    assert not list(attic_of(mermaid_demo).glob(f"{MID}.*"))
    assert files_state(mermaid_demo, MID) == before


def test_an_id_the_attic_does_not_hold_points_at_samctl_attic(run, mermaid_demo):
    r = run("--root", mermaid_demo, "restore", MID)
    pasted = f"samctl --root {mermaid_demo}"
    assert r.exit_code == 4 and "samctl-attic" in r.stderr and f"`{pasted} attic` lists them" in r.stderr
    r = run("--root", mermaid_demo, "rm", "--purge", "20990101", "--yes")
    assert r.exit_code == 4 and f"`{pasted} ls` and `{pasted} attic` list them" in r.stderr, r.stderr


@pytest.mark.parametrize(
    "odd", ["folder-symlink", "dangling-symlink", "folder-is-a-file", "lock-symlink", "lock-is-a-folder"]
)
def test_an_odd_lock_folder_is_refused_and_nothing_is_written_anywhere(run, mermaid_demo, tmp_path, odd):
    """samctl never writes through a symlink (its lock file outside the store) and never ends in an
    internal error: the refusal says what is in the way."""
    outside = tmp_path / "outside"
    outside.mkdir()
    lockdir = mermaid_demo / ".mermaid" / ".samctl"
    if odd == "folder-symlink":
        lockdir.symlink_to(outside)
    elif odd == "dangling-symlink":
        lockdir.symlink_to(tmp_path / "nowhere")
    elif odd == "folder-is-a-file":
        lockdir.write_text("x")
    else:
        lockdir.mkdir(mode=0o700)
        if odd == "lock-symlink":
            (lockdir / "lock").symlink_to(outside / "lock")
        else:
            (lockdir / "lock").mkdir()
    fp = fingerprint(mermaid_demo)
    r = run("--root", mermaid_demo, "rm", MID)
    assert r.exit_code in (1, 2), r.output
    assert "internal error" not in r.stderr and ".samctl" in r.stderr
    assert fingerprint(mermaid_demo) == fp and list(outside.iterdir()) == []


def test_check_fix_leaves_a_live_sessions_files_alone(run, mermaid_demo, held_scratch_lock):
    """mermaid may be rewriting that session's sidecar this instant: check --fix says so, fixes the
    other sessions, and touches none of this one's files unless --force."""
    c = conv(mermaid_demo)
    (c / f"{MID}.meta").unlink()
    os.chmod(c / f"{MID}.json", 0o644)
    os.chmod(c / f"{MID2}.json", 0o644)
    mine = files_state(mermaid_demo, MID)
    r = run("--root", mermaid_demo, "check", "--fix")
    assert r.exit_code == 3, r.output
    assert "skipped-live" in r.stderr and f"{MID2}.json: mode 0644 -> 0600" in r.stdout
    assert files_state(mermaid_demo, MID) == mine
    r = run("--root", mermaid_demo, "check", "--fix", "--force")
    assert (c / f"{MID}.meta").exists() and stat.S_IMODE((c / f"{MID}.json").stat().st_mode) == 0o600


def test_check_fix_refuses_while_sam_runs(run, sam_demo, monkeypatch):
    p = conv(sam_demo) / SID / "conversation.json"
    os.chmod(p, 0o644)
    fp = fingerprint(sam_demo)
    monkeypatch.setenv("SAMCTL_ASSUME_SAM_RUNNING", "1")
    r = run("--root", sam_demo, "check", "--fix")
    assert r.exit_code == 5 and "SAM is running" in r.stderr
    assert fingerprint(sam_demo) == fp
    assert run("--root", sam_demo, "check").exit_code == 3  # reading is fine while SAM runs
    r = run("--root", sam_demo, "check", "--fix", "--force")
    assert stat.S_IMODE(p.stat().st_mode) == 0o600


def test_a_dry_run_beside_a_running_samctl_calls_its_moves_in_progress(run, mermaid_demo):
    """A journal record while another samctl holds the lock is that samctl's work, not a crash's."""
    journal = mermaid_demo / ".mermaid" / "samctl-attic" / ".journal"
    journal.mkdir(parents=True)
    (journal / f"batch.{MID}.deleted.20261130T000000Z.json").write_text('{"op": "batch", "moves": []}')
    lockdir = mermaid_demo / ".mermaid" / ".samctl"
    lockdir.mkdir(mode=0o700)
    fd = os.open(lockdir / "lock", os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(fd, fcntl.LOCK_EX)
    try:
        r = run("--root", mermaid_demo, "compact", "--dry-run")
        assert r.exit_code == 0 and "attic-interrupted" not in r.stderr, r.output
    finally:
        os.close(fd)
    r = run("--root", mermaid_demo, "compact", "--dry-run")
    assert r.exit_code == 3 and "attic-interrupted" in r.stderr


def test_restore_as_new_of_a_database_with_its_wal(run, sam_demo):
    """Rewriting the copy's conversation_id merges memory.db-wal into memory.db: the memories come back
    under the new id, and the -wal is simply not there any more."""
    import shutil
    import sqlite3

    db = conv(sam_demo) / SID / "memory.db"
    c = sqlite3.connect(db)
    c.execute("PRAGMA journal_mode=WAL")
    c.execute("PRAGMA wal_autocheckpoint=0")
    c.execute("UPDATE conversation_memories SET access_count = access_count + 1")
    c.commit()
    shutil.copy(db, str(db) + ".x")  # a snapshot while the -wal holds the last commit (as a crash leaves it)
    shutil.copy(str(db) + "-wal", str(db) + "-wal.x")
    c.close()
    os.replace(str(db) + ".x", db)
    os.replace(str(db) + "-wal.x", str(db) + "-wal")
    want = (
        sqlite3.connect(f"file:{db}?mode=ro", uri=True)
        .execute("SELECT count(*), sum(access_count) FROM conversation_memories")
        .fetchone()
    )
    assert run("--root", sam_demo, "rm", SID).exit_code == 0
    r = run("--root", sam_demo, "restore", SID, "--as-new")
    assert r.exit_code == 0, r.output
    [new] = [d for d in conv(sam_demo).iterdir() if d.name not in (PINNED, TOPIC, API) and d.is_dir()]
    assert not (new / "memory.db-wal").exists()
    got = (
        sqlite3.connect(f"file:{new / 'memory.db'}?mode=ro", uri=True)
        .execute(
            "SELECT count(*), sum(access_count), min(conversation_id), max(conversation_id) FROM conversation_memories"
        )
        .fetchone()
    )
    assert got[:2] == want and got[2] == got[3] == new.name
    assert os.listdir(attic_of(sam_demo) / ".journal") == []


def _interrupt_rm(run, root, cid, monkeypatch, step="rename", nth=1):
    """Run `rm cid` and stop it at the ``nth`` ``step`` past the commit point, where the originals go
    (SAM: the folder's rename out of conversations/; mermaid: each file's unlink): the journal
    record is left for repair to finish."""
    from samctl.fs import faults

    barriers, seen = [], []

    def hook(name):
        if name == "sync":
            barriers.append(name)
        elif name == step and len(barriers) == 2:
            seen.append(name)
            if len(seen) == nth:
                raise _Stop(name)

    monkeypatch.setattr(faults, "fault_hook", hook)
    r = run("--root", root, "rm", cid)
    assert r.exit_code == 1 and "_Stop" in r.stderr, r.output  # (samctl's last resort: an internal error)
    monkeypatch.setattr(faults, "fault_hook", None)
    assert os.listdir(attic_of(root) / ".journal")


def test_attic_repair_waits_for_sam_like_every_writing_command(run, sam_demo, monkeypatch):
    _interrupt_rm(run, sam_demo, SID, monkeypatch)
    monkeypatch.setenv("SAMCTL_ASSUME_SAM_RUNNING", "1")
    fp = fingerprint(sam_demo)
    r = run("--root", sam_demo, "attic", "--repair")
    assert r.exit_code == 5 and "SAM is running" in r.stderr and "--force" in r.stderr
    assert fingerprint(sam_demo) == fp
    r = run("--root", sam_demo, "attic", "--repair", "--force")
    assert r.exit_code == 0, r.output
    assert "finished an interrupted move" in r.stderr and not (conv(sam_demo) / SID).exists()


def test_a_move_repair_cannot_finish_waits_and_blocks_nothing_else(run, sam_demo, monkeypatch):
    """An OSError while finishing one interrupted move leaves that move in the journal; the other
    writing commands, which repair first, still do their work, and every one of them says what is
    stuck (an error, exit 3: cron notices), never as a 'repaired:' line."""
    from samctl.attic import journal as repairmod

    _interrupt_rm(run, sam_demo, SID, monkeypatch)

    def denied(*a, **k):
        raise PermissionError(13, "Permission denied", str(conv(sam_demo) / SID))

    monkeypatch.setattr(repairmod, "_repair_out", denied)
    r = run("--root", sam_demo, "attic", "--repair", "--format", "json")
    assert r.exit_code == 3, r.output
    [f] = [f for f in json.loads(r.stdout)["findings"] if f["code"] == "attic-left"]
    assert "cannot be finished yet (Permission denied" in f["reason"] and "repaired:" not in r.stderr
    assert os.listdir(attic_of(sam_demo) / ".journal")
    for cmd in (["rm", API], ["compact"], ["restore", API]):
        r = run("--root", sam_demo, *cmd)
        assert r.exit_code == 3 and "error: attic-left: " in r.stderr and "repaired:" not in r.stderr, r.output
    assert (conv(sam_demo) / API).exists()  # rm, then restore: both did their work
    monkeypatch.undo()
    r = run("--root", sam_demo, "attic", "--repair")
    assert r.exit_code == 0 and "finished an interrupted move" in r.stderr, r.output
    assert os.listdir(attic_of(sam_demo) / ".journal") == [] and not (conv(sam_demo) / SID).exists()


@pytest.mark.parametrize("sub", [".staging", ".journal"])
@pytest.mark.parametrize(
    "cmd",
    [
        ["rm", SID],
        ["restore", API],
        ["archive", SID],
        ["rm", API, "--purge", "--yes"],
        ["attic", "--repair"],
        ["compact"],
        ["attic"],
    ],
)
def test_a_symlinked_folder_inside_the_attic_is_never_followed(run, sam_demo, tmp_path, sub, cmd):
    """Not listed, not written, not swept: what the link points at stays as it was."""
    assert run("--root", sam_demo, "rm", API).exit_code == 0
    elsewhere = tmp_path / "elsewhere"
    (elsewhere / "photos").mkdir(parents=True)
    (elsewhere / "notes.txt").write_text("precious")
    (elsewhere / "photos" / "a.jpg").write_text("jpg")
    (elsewhere / "x.json").write_text("{}")  # (what a journal record is named like)
    shutil.rmtree(attic_of(sam_demo) / sub)
    os.symlink(elsewhere, attic_of(sam_demo) / sub)
    fp, theirs = tree_state(sam_demo), fingerprint(elsewhere)
    r = run("--root", sam_demo, *cmd)
    assert f"{sub} is a symlink" in r.stderr, r.output
    assert r.exit_code == (3 if cmd == ["attic"] else 2), r.output  # (listing: a finding; writing: refused)
    assert fingerprint(elsewhere) == theirs and tree_state(sam_demo) == fp


@pytest.mark.parametrize("edit", [{"mode": 0o666}, {"mtime_ns": 0}], ids=["wider-mode", "mtime"])
@pytest.mark.parametrize("streamed", [False, True], ids=["plain", "tarfile"])
def test_a_manifest_edited_to_other_modes_or_mtimes_is_refused(run, mermaid_demo, monkeypatch, edit, streamed):
    """The tar headers keep each member's mode and mtime: a manifest that says otherwise is tampered."""
    import orjson

    from samctl.attic import tarscan

    if streamed:  # the general (tarfile) reader, as for a tar not laid out as samctl writes it
        monkeypatch.setattr(tarscan, "plain_layout", lambda tar, members: False)
    assert run("--root", mermaid_demo, "rm", MID).exit_code == 0
    (man,) = attic_of(mermaid_demo).glob(f"{MID}.*.manifest.json")
    doc = orjson.loads(man.read_bytes())
    for m in doc["members"]:
        m.update(edit)
    man.write_bytes(orjson.dumps(doc, option=orjson.OPT_INDENT_2))
    r = run("--root", mermaid_demo, "attic", "--verify")
    assert r.exit_code == 3 and "attic-tampered" in r.stderr, r.output
    fp = tree_state(mermaid_demo)
    r = run("--root", mermaid_demo, "restore", MID)
    assert r.exit_code == 3 and "is damaged or not samctl's; nothing was restored" in r.stderr, r.output
    assert not list(conv(mermaid_demo).glob(f"{MID}.*")) and tree_state(mermaid_demo) == fp


def test_yes_lists_each_conversation_once(run, mermaid_demo):
    """From cron (--yes): no confirmation list before the results (a 5,000-line list, twice)."""
    r = run("--root", mermaid_demo, "archive", "--older-than", "1d", "--yes")
    assert r.exit_code == 0, r.output
    assert "archive: " not in r.stderr and r.stdout.count("archived: ") == 3


def test_restore_entry_takes_a_name_or_its_path_in_this_attic_only(run, mermaid_demo, tmp_path):
    assert run("--root", mermaid_demo, "rm", MID).exit_code == 0
    (tar,) = attic_of(mermaid_demo).glob(f"{MID}.*.tar.zst")
    stem = tar.name[: -len(".tar.zst")]
    fp = tree_state(mermaid_demo)
    for bad in (f"/etc/{stem}", f"{stem}/../{stem}", "..", f"{tmp_path}/{stem}.tar.zst"):
        r = run("--root", mermaid_demo, "restore", "--entry", bad, "--dry-run")
        assert r.exit_code == 2 and "is not an entry of this store's attic" in r.stderr, (bad, r.output)
    assert tree_state(mermaid_demo) == fp
    for good in (stem, stem[:25], str(tar), str(tar.with_name(stem + ".manifest.json"))):
        r = run("--root", mermaid_demo, "restore", "--entry", good, "--dry-run")
        assert r.exit_code == 0 and MID in r.stdout, (good, r.output)
    assert run("--root", mermaid_demo, "restore", "--entry", stem).exit_code == 0


def test_a_trash_copy_that_cannot_be_cleared_is_said_and_repair_clears_it(run, sam_demo, monkeypatch):
    from samctl.fs import removing

    real = removing.remove_tree

    def stuck(path, *a, **k):
        if str(path).endswith(".trash"):
            raise PermissionError(13, "Permission denied", str(path))
        return real(path, *a, **k)

    monkeypatch.setattr(removing, "remove_tree", stuck)
    r = run("--root", sam_demo, "rm", SID)
    assert r.exit_code == 0 and "warning: trash-left" in r.stderr and "gone from the store" in r.stderr, r.output
    assert "could not be removed from the store" not in r.stderr
    assert not (conv(sam_demo) / SID).exists()
    monkeypatch.undo()
    r = run("--root", sam_demo, "attic", "--repair")
    assert r.exit_code == 0 and "removed leftover staging copy" in r.stderr, r.output
    assert os.listdir(attic_of(sam_demo) / ".staging") == []
    assert run("--root", sam_demo, "restore", SID).exit_code == 0


def test_json_reports_what_a_filter_kept_and_always_prints_a_report(run, sam_demo):
    import orjson

    r = run("--root", sam_demo, "rm", "--older-than", "1d", "--dry-run", "--format", "json")
    assert r.exit_code == 0, r.output
    doc = orjson.loads(r.stdout)
    assert {"id": PINNED, "reason": "pinned (use --include-pinned)"} in doc["kept"]
    assert PINNED not in [i["id"] for i in doc["items"]] and "kept:" not in r.stderr
    # nothing selected: still a report a script can read
    for cmd in (["rm", "--title", "no such title", "--yes"], ["archive", "--older-than", "100y", "--yes"]):
        r = run("--root", sam_demo, *cmd, "--format", "json")
        assert r.exit_code == 0, r.output
        doc = orjson.loads(r.stdout)
        assert doc["items"] == [] and doc["dry_run"] is False


def test_attic_state_filter_that_matches_nothing_says_so(run, mermaid_demo):
    assert run("--root", mermaid_demo, "rm", MID).exit_code == 0
    r = run("--root", mermaid_demo, "attic", "--state", "archived")
    assert r.exit_code == 0 and "holds no archived entry" in r.stderr and "is empty" not in r.stderr


@pytest.mark.parametrize(
    "cmd",
    [
        ["rm", SID, "--dry-run"],
        ["rm", SID, "--purge", "--dry-run", "--yes"],
        ["archive", "--older-than", "1d", "--dry-run"],
        ["compact", "--dry-run"],
        ["recover", SID, "--dry-run"],
    ],
)
@pytest.mark.parametrize("why", ["sam-running", "lock-held"])
def test_a_dry_run_says_the_real_run_would_be_refused(run, sam_demo, monkeypatch, cmd, why):
    """Every dry run, whatever makes the real run refuse (exit 5): a warning, exit 0, nothing changed."""
    if cmd[0] == "recover":  # something to recover
        p = conv(sam_demo) / SID / "conversation.json"
        p.write_bytes(p.read_bytes()[:-40])
    fd = None
    if why == "sam-running":
        monkeypatch.setenv("SAMCTL_ASSUME_SAM_RUNNING", "1")
    else:
        (sam_demo / ".samctl").mkdir(mode=0o700)
        fd = os.open(sam_demo / ".samctl" / "lock", os.O_RDWR | os.O_CREAT, 0o600)
        fcntl.flock(fd, fcntl.LOCK_EX)
    try:
        fp = fingerprint(sam_demo)
        r = run("--root", sam_demo, *cmd)
        assert r.exit_code == 0, r.output
        assert "warning: busy: " in r.stderr and "the real run would" in r.stderr
        assert fingerprint(sam_demo) == fp
    finally:
        if fd is not None:
            os.close(fd)


def test_attic_repair_with_nothing_interrupted_does_not_wait_for_sam(run, sam_demo, monkeypatch):
    assert run("--root", sam_demo, "rm", SID).exit_code == 0
    monkeypatch.setenv("SAMCTL_ASSUME_SAM_RUNNING", "1")
    r = run("--root", sam_demo, "attic", "--repair")
    assert r.exit_code == 0 and "nothing to repair" in r.stderr, r.output


def test_removing_a_sam_conversation_parses_only_the_manifests_that_may_name_it(run, sam_demo, monkeypatch):
    """topic_refs looks for attic users of a folder by a byte search: an attic of thousands is read,
    but only manifests naming the folder (or too old to say) are parsed."""
    for cid in (API, PINNED):
        assert run("--root", sam_demo, "rm", cid, "--include-pinned").exit_code == 0
    read = _count_manifest_reads(monkeypatch)
    assert run("--root", sam_demo, "rm", SID).exit_code == 0
    # the pinned one used TOPIC's memories; API used none: neither manifest names 8B58
    assert read == [], read
    read.clear()
    r = run("--root", sam_demo, "rm", TOPIC, "--yes")  # the scope of the pinned one, which is in the attic
    assert r.exit_code == 1 and "shared-topic memory scope" in r.stderr
    assert any(n.startswith(PINNED) for n in read)


def test_a_stuck_move_whose_conversation_was_used_since_is_undone_not_split(run, mermaid_demo, monkeypatch):
    """The move stopped before any original went; the app then appended to the log. Repair keeps the
    store's newer copy whole (and drops the older attic copy), rather than removing the unchanged
    files and leaving the log alone in the store."""
    _interrupt_rm(run, mermaid_demo, MID, monkeypatch, step="unlink")
    log = conv(mermaid_demo) / f"{MID}.jsonl"
    with open(log, "ab") as f:
        f.write(log.read_bytes().splitlines(keepends=True)[-1])  # (any change: the bytes differ)
    before = files_state(mermaid_demo, MID)
    r = run("--root", mermaid_demo, "attic", "--repair")
    assert r.exit_code == 0 and "undid an interrupted move" in r.stderr and "changed since" in r.stderr, r.output
    assert files_state(mermaid_demo, MID) == before
    assert not list(attic_of(mermaid_demo).glob(f"{MID}.*")) and os.listdir(attic_of(mermaid_demo) / ".journal") == []


def test_a_stuck_move_partly_done_and_used_since_is_left_for_a_person(run, mermaid_demo, monkeypatch):
    _interrupt_rm(run, mermaid_demo, MID, monkeypatch, step="unlink", nth=2)  # the sidecar went, not the rest
    assert not (conv(mermaid_demo) / f"{MID}.meta").exists()
    log = conv(mermaid_demo) / f"{MID}.jsonl"
    with open(log, "ab") as f:
        f.write(log.read_bytes().splitlines(keepends=True)[-1])
    before = tree_state(mermaid_demo)
    r = run("--root", mermaid_demo, "attic", "--repair")
    assert r.exit_code == 3 and "error: attic-left: " in r.stderr and "both are kept for a person" in r.stderr
    assert tree_state(mermaid_demo) == before  # nothing removed: the newer log and the attic's whole copy


@pytest.mark.parametrize("odd", ["file", "symlink"])
@pytest.mark.parametrize("which", ["mermaid", "sam"])
def test_restore_with_an_attic_that_is_not_a_folder_says_so_not_a_pending_move(
    run, which, odd, mermaid_demo, sam_demo, tmp_path
):
    """An attic that is a file or a link is what stops restore: said as rm says it (exit 2), and never
    the hint of an interrupted move, which `attic --repair` would not settle."""
    root, cid = (mermaid_demo, MID) if which == "mermaid" else (sam_demo, SID)
    attic = attic_of(root)
    if attic.exists():
        shutil.rmtree(attic)
    if odd == "file":
        attic.write_bytes(b"not an attic")
    else:
        (tmp_path / "elsewhere").mkdir()
        attic.symlink_to(tmp_path / "elsewhere")
    before = tree_state(root)
    for args in ([cid], [cid[:8]], [cid, "--dry-run"]):
        r = run("--root", root, "restore", *args)
        assert r.exit_code == 2, r.output
        assert "not samctl's attic folder" in r.stderr and "nothing was changed" in r.stderr, r.stderr
        assert "interrupted" not in r.stderr and "--repair" not in r.stderr, r.stderr
    assert tree_state(root) == before
    assert list((tmp_path / "elsewhere").iterdir()) == [] if odd == "symlink" else True
