"""A memory scope is never removed while a conversation that might use it cannot be read (issue 20,
finding 1): rm, rm --purge, archive and compact refuse (--ignore-unreadable overrides), check calls
such a scope ``scope-unknown``, and a ``sharedTopicId`` naming a missing scope is reported."""

from __future__ import annotations

import json
import os
import shlex

import orjson
import pytest

from tests.adversarial.harness import fingerprint
from tests.cli.test_lifecycle import PINNED, SID, TOPIC, conv

IS_ROOT = os.geteuid() == 0


def tree_state(root) -> dict:
    """test_lifecycle's tree_state, through a fingerprint that copes with files closed to us."""
    return {
        k: v
        for k, v in fingerprint(root).items()
        if ".samctl/" not in f"/{k}" and not k.endswith(("samctl-attic/.staging", "samctl-attic/.journal"))
    }


def break_json(base) -> None:
    """PINNED (the conversation using TOPIC) no longer parses: one byte appended."""
    with open(conv(base) / PINNED / "conversation.json", "ab") as f:
        f.write(b"x")


def close_file(base) -> None:
    os.chmod(conv(base) / PINNED / "conversation.json", 0)


def close_folder(base) -> None:
    os.chmod(conv(base) / PINNED, 0)


BREAKS = [
    pytest.param(break_json, id="unparseable"),
    pytest.param(close_file, id="file-000", marks=pytest.mark.skipif(IS_ROOT, reason="root reads anything")),
    pytest.param(close_folder, id="folder-000", marks=pytest.mark.skipif(IS_ROOT, reason="root reads anything")),
]


def findings(run, base, *args) -> list:
    r = run("--root", base, "check", "--format", "json", *args)
    return json.loads(r.stdout)["findings"]


@pytest.mark.parametrize("brk", BREAKS)
@pytest.mark.parametrize(
    "cmd",
    [("rm", TOPIC), ("rm", TOPIC, "--purge", "--yes"), ("archive", TOPIC, "--yes")],
    ids=["rm", "purge", "archive"],
)
def test_a_scope_is_not_removed_while_a_conversation_cannot_be_read(run, sam_demo, brk, cmd):
    brk(sam_demo)
    before = tree_state(sam_demo)
    try:
        r = run("--root", sam_demo, *cmd)
        assert r.exit_code == 1, r.output
        assert PINNED in r.stderr and "cannot be read" in r.stderr and "--ignore-unreadable" in r.stderr
        assert "nothing was changed" in r.stderr
        assert tree_state(sam_demo) == before
        assert (conv(sam_demo) / TOPIC / "memory.db").exists()
    finally:
        os.chmod(conv(sam_demo) / PINNED, 0o700)
        os.chmod(conv(sam_demo) / PINNED / "conversation.json", 0o600)


def test_ignore_unreadable_removes_it_and_check_then_says_where_the_scope_went(run, sam_demo):
    break_json(sam_demo)
    r = run("--root", sam_demo, "rm", TOPIC, "--ignore-unreadable")
    assert r.exit_code == 0, r.output
    assert not (conv(sam_demo) / TOPIC).exists()
    # the conversation comes back, still pointing at the scope: check says the attic holds it
    p = conv(sam_demo) / PINNED / "conversation.json"
    p.write_bytes(p.read_bytes()[:-1])
    got = [f for f in findings(run, sam_demo) if f["code"] == "scope-missing"]
    assert len(got) == 1 and got[0]["severity"] == "warning", got
    assert TOPIC in got[0]["reason"] and PINNED in got[0]["reason"] and "attic" in got[0]["reason"]
    assert f"samctl restore {TOPIC}" in got[0]["reason"]
    said = run("--root", sam_demo, "check").stderr  # as text: the command pastes as it is, --root included
    assert f"`samctl --root {shlex.quote(str(sam_demo))} restore {TOPIC}` brings its memories back" in said
    # purged for good: check says its memories are not here
    r = run("--root", sam_demo, "rm", "--purge", TOPIC, "--yes")
    assert r.exit_code == 0, r.output
    got = [f for f in findings(run, sam_demo) if f["code"] == "scope-missing"]
    assert len(got) == 1 and "not in the attic" in got[0]["reason"], got


def test_purge_with_ignore_unreadable(run, sam_demo):
    break_json(sam_demo)
    r = run("--root", sam_demo, "rm", TOPIC, "--purge", "--yes", "--ignore-unreadable")
    assert r.exit_code == 0, r.output
    assert not (conv(sam_demo) / TOPIC).exists()


@pytest.mark.parametrize("brk", BREAKS)
def test_check_calls_the_scope_unknown_not_stray(run, sam_demo, brk):
    brk(sam_demo)
    try:
        got = {f["code"]: f for f in findings(run, sam_demo) if f["path"].endswith(TOPIC)}
    finally:
        os.chmod(conv(sam_demo) / PINNED, 0o700)
        os.chmod(conv(sam_demo) / PINNED / "conversation.json", 0o600)
    assert "scope-stray" not in got and "scope-unknown" in got, got
    assert got["scope-unknown"]["severity"] == "warning" and PINNED in got["scope-unknown"]["reason"]


def test_check_still_calls_a_scope_nobody_uses_stray(run, sam_demo):
    doc = orjson.loads((conv(sam_demo) / PINNED / "conversation.json").read_bytes())
    doc["settings"]["useSharedData"] = False
    (conv(sam_demo) / PINNED / "conversation.json").write_bytes(orjson.dumps(doc))
    codes = {f["code"] for f in findings(run, sam_demo) if f["path"].endswith(TOPIC)}
    assert "scope-stray" in codes and "scope-unknown" not in codes


def test_the_listing_cache_does_not_hide_an_unreadable_conversation(run, sam_demo, monkeypatch):
    """ls caches a file it could not parse too; the scope check must still see it as unreadable."""
    from samctl.stores.sam import store as samstore
    from tests.cli.test_lifecycle import _age_every_file

    break_json(sam_demo)
    _age_every_file(sam_demo)
    monkeypatch.setattr(samstore, "RACY_SECONDS", 0)
    assert run("--root", sam_demo, "ls").exit_code == 3  # (the broken conversation is reported)
    before = tree_state(sam_demo)
    r = run("--root", sam_demo, "rm", TOPIC, "--purge", "--yes")
    assert r.exit_code == 1 and PINNED in r.stderr, r.output
    assert tree_state(sam_demo) == before


def test_a_legacy_conversation_keeps_its_scope(run, sam_demo):
    """Conversations still in the legacy conversations.json use scopes too (SAM migrates them)."""
    p = conv(sam_demo) / PINNED / "conversation.json"
    doc = orjson.loads(p.read_bytes())
    (conv(sam_demo) / "conversations.json").write_bytes(orjson.dumps([doc]))
    p.unlink()
    os.rmdir(conv(sam_demo) / PINNED) if not any((conv(sam_demo) / PINNED).iterdir()) else None
    before = tree_state(sam_demo)
    r = run("--root", sam_demo, "rm", TOPIC, "--purge", "--yes")
    assert r.exit_code == 1 and "shared-topic memory scope" in r.stderr, r.output
    assert tree_state(sam_demo) == before


def _deleted_scope_entry(run, sam_demo) -> None:
    """TOPIC in the attic as a deleted entry (removed with --ignore-unreadable), PINNED unreadable."""
    break_json(sam_demo)
    assert run("--root", sam_demo, "rm", TOPIC, "--ignore-unreadable").exit_code == 0


def _entries(base) -> list:
    return sorted(p.name for p in (base / "samctl-attic").iterdir() if p.name.endswith(".json"))


def test_compact_keeps_a_deleted_scope_while_a_conversation_cannot_be_read(run, sam_demo):
    _deleted_scope_entry(run, sam_demo)
    entries = _entries(sam_demo)
    assert entries
    r = run("--root", sam_demo, "compact", "--grace", "0s")
    assert r.exit_code == 3, r.output
    assert PINNED in r.stderr and "cannot be read" in r.stderr and "--ignore-unreadable" in r.stderr
    assert _entries(sam_demo) == entries
    r = run("--root", sam_demo, "compact", "--grace", "0s", "--ignore-unreadable")
    assert r.exit_code == 0, r.output
    assert _entries(sam_demo) == []


def test_compact_keeps_a_deleted_scope_a_conversation_in_the_store_uses(run, sam_demo):
    """The sibling: the conversation was recovered after its scope went to the attic; purging the
    entry past the grace would lose its memories for good."""
    _deleted_scope_entry(run, sam_demo)
    p = conv(sam_demo) / PINNED / "conversation.json"
    p.write_bytes(p.read_bytes()[:-1])
    entries = _entries(sam_demo)
    r = run("--root", sam_demo, "compact", "--grace", "0s", "--ignore-unreadable")
    assert r.exit_code == 3, r.output
    assert TOPIC in r.stderr and PINNED in r.stderr and f"samctl restore {TOPIC}" in r.stderr
    assert _entries(sam_demo) == entries
    assert run("--root", sam_demo, "restore", TOPIC).exit_code == 0
    assert (conv(sam_demo) / TOPIC / "memory.db").exists()


def test_a_conversation_s_own_folder_is_still_removed_when_another_cannot_be_read(run, sam_demo):
    """The rule is about scopes (folders without conversation.json): an ordinary rm goes ahead."""
    break_json(sam_demo)
    r = run("--root", sam_demo, "rm", SID)
    assert r.exit_code == 0, r.output
    assert not (conv(sam_demo) / SID).exists()
