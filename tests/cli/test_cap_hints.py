"""A conversation skipped only because a file is over the read cap (--max-file-size) is not
damaged: the hints say to read it with a bigger cap, not to recover it."""

from __future__ import annotations

import json
import re

import pytest

from tests.conftest import fingerprint


@pytest.mark.parametrize(
    "which,cid,cap", [("mermaid", "20260810_140307_512", "2K"), ("sam", "8B58CBC4-ACA7-4811-AE66-C01921690310", "1K")]
)
def test_show_and_recover_point_at_max_file_size(run, mermaid_demo, sam_demo, which, cid, cap):
    root = mermaid_demo if which == "mermaid" else sam_demo
    before = fingerprint(root)
    r = run("--root", root, "--max-file-size", cap, "show", cid)
    assert r.exit_code == 3 and "--max-file-size 1G" in r.stderr, r.stderr
    assert not re.search(r"samctl (--root \S+ )?recover", r.stderr)
    r = run("--root", root, "--max-file-size", cap, "recover", cid)
    assert r.exit_code == 1 and "hint: " in r.stderr and "--max-file-size 1G" in r.stderr, r.stderr
    assert "--use PATH" not in r.stderr and "--from FILE" not in r.stderr
    assert fingerprint(root) == before
    assert run("--root", root, "--max-file-size", "1G", "show", cid).exit_code == 0  # and the hint works


def _older_copy_in_legacy_backup(sam_demo, cid):
    doc = json.loads((sam_demo / "conversations" / cid / "conversation.json").read_text())
    doc["messages"] = doc["messages"][:1]
    backups = sam_demo / "conversations" / "backups"
    backups.mkdir()
    (backups / "conversations_migrated_2026-01-01T00-00-00Z.json").write_text(json.dumps([doc]))


def test_recover_never_replaces_a_file_that_is_only_over_the_cap(run, sam_demo):
    cid = "8B58CBC4-ACA7-4811-AE66-C01921690310"
    _older_copy_in_legacy_backup(sam_demo, cid)
    before = fingerprint(sam_demo)
    r = run("--root", sam_demo, "--max-file-size", "2K", "recover", cid[:4])
    assert r.exit_code == 1 and "cannot read it; SAM can" in r.stderr and "--max-file-size 1G" in r.stderr
    assert fingerprint(sam_demo) == before


def test_mermaid_recover_with_a_lowered_cap_leaves_the_snapshot(run, mermaid_demo):
    before = fingerprint(mermaid_demo)
    r = run("--root", mermaid_demo, "--max-file-size", "3500", "recover", "20260812_091500_004")
    assert r.exit_code == 1 and "cannot read it; mermaid can" in r.stderr
    assert fingerprint(mermaid_demo) == before
