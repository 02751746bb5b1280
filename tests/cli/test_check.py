import json
import os
import stat

import pytest

from tests.conftest import fingerprint, make_fixtures


def _codes(r):
    doc = json.loads(r.stdout)
    root = doc["stores"][0]["root"]  # (one shape for one store or several: docs/json.md)
    return {(f["code"], os.path.relpath(f["path"], root)) for f in doc["findings"]}, doc


def test_check_demo_trees_are_clean(run, mermaid_demo, sam_demo):
    for root in (mermaid_demo, sam_demo):
        r = run("--root", root, "check")
        assert r.exit_code == 0, r.stderr
        assert "0 errors, 0 warnings" in r.stderr


@pytest.mark.parametrize("which", ["mermaid", "sam"])
def test_check_reports_every_planted_problem_and_changes_nothing(run, which, mermaid_broken, sam_broken):
    root, expected = mermaid_broken if which == "mermaid" else sam_broken
    before = fingerprint(root)
    r = run("--root", root, "check", "--format", "json")
    assert r.exit_code == 3
    found, doc = _codes(r)
    missing = [e for e in expected if e not in found]
    assert not missing, f"not reported: {missing}\nfound: {sorted(found)}"
    assert fingerprint(root) == before
    assert doc["summary"]["errors"] > 0
    for f in doc["findings"]:
        assert set(f) >= {"code", "severity", "path", "reason"} and "\n" not in f["reason"]


@pytest.mark.parametrize("which", ["mermaid", "sam"])
def test_check_text_output_lines_and_summary(run, which, mermaid_broken, sam_broken):
    root, expected = mermaid_broken if which == "mermaid" else sam_broken
    r = run("--root", root, "check")
    assert r.exit_code == 3
    assert r.stdout == ""
    lines = r.stderr.splitlines()
    assert all(ln.startswith(("error: ", "warning: ", "info: ")) for ln in lines[:-1])
    assert "errors" in lines[-1] and "warnings" in lines[-1]


def test_check_fix_mermaid_tightens_modes_and_rebuilds_metas(run, mermaid_broken):
    root, _ = mermaid_broken
    conv = root / ".mermaid" / "conversations"
    os.chmod(conv, 0o755)
    r = run("--root", root, "check", "--fix", "--format", "json")
    found, doc = _codes(r)
    assert doc["fixes"]
    assert ("mode", "20260101_000006_000.json") not in found
    assert ("meta-stale", "20260101_000007_000.meta") not in found
    assert ("meta-missing", "20260101_000009_000.json") not in found
    assert stat.S_IMODE((conv / "20260101_000006_000.json").stat().st_mode) == 0o600
    assert stat.S_IMODE(conv.stat().st_mode) == 0o700
    # the rebuilt sidecar is byte-for-byte what mermaid writes
    snap = json.loads((conv / "20260101_000009_000.json").read_text())
    assert (conv / "20260101_000009_000.meta").read_text() == make_fixtures.mermaid_meta(snap)
    assert stat.S_IMODE((conv / "20260101_000009_000.meta").stat().st_mode) == 0o600
    # symlinks are never chmodded or followed
    assert stat.S_IMODE((root.parent / "outside" / "secret.json").stat().st_mode) == 0o600
    again = run("--root", root, "check", "--fix", "--format", "json")
    assert json.loads(again.stdout)["fixes"] == []


def test_check_fix_sam_tightens_modes_only(run, sam_broken):
    root, _ = sam_broken
    p = root / "conversations" / "A0000000-0000-4000-8000-000000000009" / "conversation.json"
    data = p.read_bytes()
    r = run("--root", root, "check", "--fix")
    assert "fixed: " in r.stdout
    assert stat.S_IMODE(p.stat().st_mode) == 0o600 and p.read_bytes() == data


def test_sam_scope_classification(run, sam_demo):
    r = run("--root", sam_demo, "check", "--format", "json")
    found, doc = _codes(r)
    assert ("scope-shared", "5E0C7E55-1B7A-4C0B-9C3E-2F3A7D8B9C01") in found
    assert r.exit_code == 0  # a shared-topic scope is normal: info only


def test_check_fix_trims_torn_tails_of_sessions_not_open(run, mermaid_broken):
    root, _ = mermaid_broken
    conv = root / ".mermaid" / "conversations"
    log = conv / "20260101_000014_000.jsonl"
    data = log.read_bytes()
    r = run("--root", root, "check", "--fix", "--format", "json")
    found, doc = _codes(r)
    assert ("log-torn-tail", "20260101_000014_000.jsonl") not in found
    assert log.read_bytes() == data[: data.rindex(b"\n") + 1]
    torn = list(conv.glob("20260101_000014_000.jsonl.*.torn"))
    assert len(torn) == 1 and torn[0].read_bytes() == b'{"v":1,"seq":99,"ts":"2026-'


def test_findings_come_in_path_order(run, mermaid_demo):
    """Not the folder's listing order (ext4 hashes names): two cron runs, or two copies, diff cleanly."""
    import json as _json

    conv = mermaid_demo / ".mermaid" / "conversations"
    for p in sorted(conv.iterdir(), reverse=True):  # created in reverse: tmpfs lists newest first
        if p.is_file():
            data = p.read_bytes()
            p.unlink()
            p.write_bytes(data)
            p.chmod(0o644)  # a mode finding for every file
    r = run("--root", mermaid_demo, "check", "--format", "json")
    paths = [f["path"] for f in _json.loads(r.stdout)["findings"]]
    assert len(paths) >= 6 and paths == sorted(paths)
