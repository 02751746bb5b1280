"""`samctl recover --to PATH`: the recovered document goes elsewhere, and the store is left alone."""

import json
import os
import stat

import pytest

from tests.conftest import REPO, fingerprint

SAM_ID = "8B58CBC4-ACA7-4811-AE66-C01921690310"  # "Portland weekend trip", 5 messages
SAM_OTHER = "C2A1F0E4-3B5D-4E6F-8A9B-0C1D2E3F4A5B"  # "Q3 budget", pinned
MERMAID_ID = "20260810_140307_512"
MERMAID_OTHER = "20260812_091500_004"
SPEC_DIR = REPO / "fixtures" / "spec"


def _damaged(which, sam_demo, mermaid_demo):
    """(root, id, the conversation's file, another conversation's file): the first file torn."""
    if which == "sam":
        conv = sam_demo / "conversations"
        own, other = conv / SAM_ID / "conversation.json", conv / SAM_OTHER / "conversation.json"
        root, cid = sam_demo, SAM_ID
    else:
        conv = mermaid_demo / ".mermaid" / "conversations"
        own, other = conv / f"{MERMAID_ID}.json", conv / f"{MERMAID_OTHER}.json"
        root, cid = mermaid_demo, MERMAID_ID
    os.truncate(own, own.stat().st_size // 2)
    return root, cid, own, other


@pytest.mark.parametrize("which", ["sam", "mermaid"])
@pytest.mark.parametrize("where", ["another-conversation", "its-own-file", "the-conversations-folder"])
def test_to_inside_the_store_is_refused(run, sam_demo, mermaid_demo, which, where):
    """--to "leaves the store alone": a path inside it would replace a conversation without a .bak,
    without the lock and without asking whether the app is using it."""
    root, cid, own, other = _damaged(which, sam_demo, mermaid_demo)
    dest = {"another-conversation": other, "its-own-file": own, "the-conversations-folder": own.parent}[where]
    before = fingerprint(root)
    r = run("--root", root, "recover", cid, "--to", dest)
    assert r.exit_code == 2, r.output
    assert "inside the store" in r.stderr and "nothing was written" in r.stderr
    assert fingerprint(root) == before


def test_to_a_symlink_into_the_store_is_refused(run, sam_demo, mermaid_demo, tmp_path):
    root, cid, own, other = _damaged("sam", sam_demo, mermaid_demo)
    link = tmp_path / "innocent.json"
    link.symlink_to(other)
    before = fingerprint(root)
    r = run("--root", root, "recover", cid, "--to", link)
    assert r.exit_code == 2 and "inside the store" in r.stderr
    assert fingerprint(root) == before and link.is_symlink()


@pytest.mark.parametrize("which", ["sam", "mermaid"])
def test_to_a_file_outside_writes_the_recovered_document_there(run, sam_demo, mermaid_demo, tmp_path, which):
    root, cid, own, _ = _damaged(which, sam_demo, mermaid_demo)
    before = fingerprint(root)
    out = tmp_path / "out"
    out.mkdir()
    r = run("--root", root, "recover", cid, "--to", out)
    assert r.exit_code == 0, r.stderr
    written = out / own.name
    assert f"wrote {written}" in r.stdout
    doc = json.loads(written.read_text())
    assert doc["messages"] and stat.S_IMODE(written.stat().st_mode) == 0o600
    assert fingerprint(root) == before  # the store is left alone


def test_to_a_folder_that_does_not_exist_is_a_usage_error(run, sam_demo, mermaid_demo, tmp_path):
    root, cid, _, _ = _damaged("sam", sam_demo, mermaid_demo)
    before = fingerprint(root)
    r = run("--root", root, "recover", cid, "--to", tmp_path / "nonexist" / "sub" / "file.json")
    assert r.exit_code == 2, r.output
    assert "does not exist" in r.stderr and "internal error" not in r.stderr
    assert not (tmp_path / "nonexist").exists() and fingerprint(root) == before


def test_to_of_a_healthy_conversation_says_it_copied_it(run, sam_demo, tmp_path):
    r = run("--root", sam_demo, "recover", "8B58", "--to", tmp_path / "copy.json")
    assert r.exit_code == 0, r.stderr
    assert "nothing to do" not in r.stdout and "copied" in r.stdout
    assert json.loads((tmp_path / "copy.json").read_text())["id"] == SAM_ID


def test_dry_run_of_a_healthy_conversation_says_nothing_to_do(run, mermaid_demo, sam_demo, tmp_path):
    for root, cid in ((mermaid_demo, "20260810_1403"), (sam_demo, "8B58")):
        r = run("--root", root, "recover", cid, "--dry-run")
        assert r.exit_code == 0 and r.stdout.startswith("nothing to do for "), r.stdout
        assert run("--root", root, "recover", cid).stdout.startswith("nothing to do for ")
        r = run("--root", root, "recover", cid, "--dry-run", "--to", tmp_path)
        assert r.exit_code == 0 and r.stdout.startswith("nothing to recover; would copy "), r.stdout


@pytest.mark.parametrize("which,cid,option", [("sam", "8B58", "--use"), ("mermaid", "20260810_1403", "--from")])
def test_the_other_stores_option_is_a_usage_error(run, mermaid_demo, sam_demo, tmp_path, which, cid, option):
    root = sam_demo if which == "sam" else mermaid_demo
    before = fingerprint(root)
    r = run("--root", root, "recover", cid, option, tmp_path / "x")
    assert r.exit_code == 2 and ("--from" in r.stderr and "--use" in r.stderr)
    assert fingerprint(root) == before


@pytest.mark.parametrize("which", ["sam", "mermaid"])
def test_to_dash_is_refused_not_a_file_named_dash(run, sam_demo, mermaid_demo, tmp_path, monkeypatch, which):
    """export -o - means stdout; recover writes files, so --to - is refused instead of making ./-."""
    root, cid, own, other = _damaged(which, sam_demo, mermaid_demo)
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    before = fingerprint(root)
    r = run("--root", root, "recover", cid, "--to", "-")
    assert r.exit_code == 2 and "would write a file named '-'" in r.stderr and "hint: " in r.stderr, r.output
    assert os.listdir(cwd) == [] and fingerprint(root) == before


def test_to_says_and_does_nothing_about_the_stores_torn_log_or_sidecar(run, mermaid_demo, tmp_path):
    """--to writes the document only: what an in-place recovery would also repair in the store (the
    log's torn tail, the .meta sidecar) is neither done nor claimed, in text or JSON."""
    conv = mermaid_demo / ".mermaid" / "conversations"
    (conv / f"{MERMAID_ID}.json").unlink()  # the snapshot is lost; the spec's log (torn tail) rebuilds it
    (conv / f"{MERMAID_ID}.jsonl").write_bytes((SPEC_DIR / f"{MERMAID_ID}.jsonl").read_bytes())
    (conv / f"{MERMAID_ID}.meta").write_text('{"id":"' + MERMAID_ID + '","title":"stale"}')
    before = fingerprint(mermaid_demo)
    out = tmp_path / "out.json"
    r = run("--root", mermaid_demo, "recover", MERMAID_ID, "--to", out, "--format", "json")
    assert r.exit_code == 0, r.stderr
    plan = json.loads(r.stdout)
    assert plan["trim_log"] is None and plan["sidecars"] == [] and plan["set_aside"] == []
    assert not any(c.startswith("log tail:") or "sidecar" in c for c in plan["changes"])
    assert "the store is left as it is" in " ".join(plan["changes"])
    assert plan["written"] == [str(out)] and json.loads(out.read_text())["messages"]
    assert fingerprint(mermaid_demo) == before
    r = run("--root", mermaid_demo, "recover", MERMAID_ID, "--to", tmp_path / "again.json")
    assert "torn bytes cut" not in r.stdout and "sidecar rebuilt" not in r.stdout


def test_the_preview_of_use_with_to_shows_only_what_to_does(run, mermaid_demo, tmp_path):
    conv = mermaid_demo / ".mermaid" / "conversations"
    (conv / f"{MERMAID_ID}.jsonl").write_bytes((SPEC_DIR / f"{MERMAID_ID}.jsonl").read_bytes())  # torn tail
    conflict = conv / f"{MERMAID_ID}.4242.1.conflict"
    conflict.write_bytes((conv / f"{MERMAID_ID}.json").read_bytes())
    before = fingerprint(mermaid_demo)
    r = run("--root", mermaid_demo, "recover", MERMAID_ID, "--use", conflict, "--to", tmp_path)
    assert r.exit_code == 2 and "needs --yes" in r.stderr  # (not a terminal: the preview, then the refusal)
    assert "the store is left as it is" in r.stdout and "torn bytes cut" not in r.stdout, r.stdout
    assert fingerprint(mermaid_demo) == before
