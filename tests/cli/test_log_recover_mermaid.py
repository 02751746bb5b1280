import json
import os
import shutil
import stat

import pytest

from samctl.fs import faults
from tests.conftest import fingerprint, make_fixtures

SPEC_ID = "20260810_140307_512"
SPEC = make_fixtures.SPEC


def _conv(project):
    return project / ".mermaid" / "conversations"


@pytest.fixture
def torn(mermaid_demo):
    """The demo project with the spec's torn log (mermaid.md §11.3) in place of the clean one."""
    shutil.copy(SPEC / f"{SPEC_ID}.jsonl", _conv(mermaid_demo) / f"{SPEC_ID}.jsonl")
    (_conv(mermaid_demo) / f"{SPEC_ID}.jsonl").chmod(0o600)
    return mermaid_demo


def test_log_lists_events_and_says_where_it_stopped(run, torn):
    r = run("--root", torn, "log", SPEC_ID)
    assert r.exit_code == 3
    rows = r.stdout.splitlines()
    assert rows[0].split() == ["SEQ", "TIME", "TYPE", "SUMMARY"]
    assert len(rows) == 14 and rows[1].split()[0] == "0" and "started" in rows[1]
    assert "Assistant: Let me look at the test first. [+1 tool call]" in r.stdout
    assert "torn tail at byte 4638" in r.stderr and f"samctl --root {torn} recover {SPEC_ID}" in r.stderr


def test_log_type_filter_and_json(run, torn):
    r = run("--root", torn, "log", SPEC_ID, "--type", "message", "--format", "json")
    doc = json.loads(r.stdout)
    assert [e["seq"] for e in doc["events"]] == [7, 10, 11]
    assert doc["stop"]["code"] == "log-torn-tail" and doc["stop"]["offset"] == 4638


def test_log_clean_end_is_exit_0(run, mermaid_demo):
    r = run("--root", mermaid_demo, "log", SPEC_ID, "--format", "jsonl")
    assert r.exit_code == 0 and len(r.stdout.splitlines()) == 13


@pytest.mark.parametrize(
    "content,code",
    [
        (b'{"event":{"type":"input","text":"x"},"seq":0,"ts":"2026-01-01T00:00:00Z","v":1}\n', "headerless"),
        ((SPEC / "compaction_line.jsonl").read_bytes().replace(b'"v":1', b'"v":2'), "newer-format"),
        (b"not json\n", "malformed"),
    ],
)
def test_log_reports_each_stop(run, mermaid_demo, content, code):
    (_conv(mermaid_demo) / f"{SPEC_ID}.jsonl").write_bytes(content)
    r = run("--root", mermaid_demo, "log", SPEC_ID)
    assert r.exit_code == 3 and f"log-{code}" in r.stderr


def test_log_on_sam_is_a_usage_error(run, sam_demo):
    r = run("--root", sam_demo, "log", "8B58")
    assert r.exit_code == 2 and "SAM keeps no event log" in r.stderr


def test_recover_missing_snapshot_is_byte_identical_to_mermaids(run, torn):
    conv = _conv(torn)
    (conv / f"{SPEC_ID}.json").unlink()
    (conv / f"{SPEC_ID}.meta").unlink()
    r = run("--root", torn, "recover", SPEC_ID)
    assert r.exit_code == 0, r.stderr
    assert (conv / f"{SPEC_ID}.json").read_bytes() == (SPEC / f"{SPEC_ID}.json").read_bytes()
    assert (conv / f"{SPEC_ID}.meta").read_bytes() == (SPEC / f"{SPEC_ID}.meta").read_bytes()
    for name in (f"{SPEC_ID}.json", f"{SPEC_ID}.meta"):
        assert stat.S_IMODE((conv / name).stat().st_mode) == 0o600
    # the torn tail is cut back to the last newline and its bytes kept in a 0600 .torn file
    log = (conv / f"{SPEC_ID}.jsonl").read_bytes()
    assert log.endswith(b"\n") and len(log) == 4638
    torn_files = list(conv.glob(f"{SPEC_ID}.jsonl.*.torn"))
    assert len(torn_files) == 1 and torn_files[0].read_bytes().startswith(b'{"event":{"message":{"actions"')
    assert stat.S_IMODE(torn_files[0].stat().st_mode) == 0o600
    chk = run("--root", torn, "check")
    assert chk.exit_code == 0, chk.stderr


def test_recover_corrupt_snapshot_keeps_a_bak(run, torn):
    conv = _conv(torn)
    (conv / f"{SPEC_ID}.json").write_bytes(b"{ torn")
    r = run("--root", torn, "recover", SPEC_ID)
    assert r.exit_code == 0, r.stderr
    assert (conv / f"{SPEC_ID}.json").read_bytes() == (SPEC / f"{SPEC_ID}.json").read_bytes()
    baks = list(conv.glob(f"{SPEC_ID}.json.*.bak"))
    assert len(baks) == 1 and baks[0].read_bytes() == b"{ torn"
    assert stat.S_IMODE(baks[0].stat().st_mode) == 0o600


def test_recover_snapshot_behind_its_log(run, mermaid_demo):
    conv = _conv(mermaid_demo)
    snap = json.loads((conv / f"{SPEC_ID}.json").read_text())
    behind = dict(snap, messages=snap["messages"][:2], updated_at=snap["messages"][1]["timestamp"])
    (conv / f"{SPEC_ID}.json").write_text(make_fixtures.mermaid_snapshot(behind))
    dry = run("--root", mermaid_demo, "recover", SPEC_ID, "--dry-run", "--format", "json")
    plan = json.loads(dry.stdout)
    assert plan["messages_before"] == 2 and plan["messages_after"] == 4 and plan["rewrites"]
    assert "+2 messages not in the old document" in plan["changes"]
    r = run("--root", mermaid_demo, "recover", SPEC_ID)
    assert r.exit_code == 0
    assert (conv / f"{SPEC_ID}.json").read_bytes() == (SPEC / f"{SPEC_ID}.json").read_bytes()


def test_recover_healthy_conversation_changes_nothing(run, mermaid_demo):
    before = fingerprint(mermaid_demo)
    r = run("--root", mermaid_demo, "recover", SPEC_ID)
    assert r.exit_code == 0 and "nothing to do" in r.stdout
    after = fingerprint(mermaid_demo)
    after.pop(".mermaid/.samctl", None), after.pop(".mermaid/.samctl/lock", None)
    assert after == before


def test_dry_run_writes_nothing(run, torn):
    (_conv(torn) / f"{SPEC_ID}.json").unlink()
    before = fingerprint(torn)
    r = run("--root", torn, "recover", SPEC_ID, "--dry-run")
    assert r.exit_code == 0 and r.stdout.startswith("would recover")
    assert fingerprint(torn) == before


def test_to_writes_elsewhere_and_leaves_the_store_alone(run, torn, tmp_path):
    (_conv(torn) / f"{SPEC_ID}.json").unlink()
    before = fingerprint(torn)
    out = tmp_path / "out.json"
    r = run("--root", torn, "recover", SPEC_ID, "--to", out)
    assert r.exit_code == 0, r.stderr
    assert out.read_bytes() == (SPEC / f"{SPEC_ID}.json").read_bytes()
    assert fingerprint(torn) == before


def test_nothing_to_recover_from_is_exit_1(run, mermaid_demo):
    conv = _conv(mermaid_demo)
    (conv / f"{SPEC_ID}.json").write_text("{")
    (conv / f"{SPEC_ID}.jsonl").write_text("}\n")
    before = fingerprint(mermaid_demo)
    r = run("--root", mermaid_demo, "recover", SPEC_ID)
    assert r.exit_code == 1 and "nothing to recover" in r.stderr and "--use" in r.stderr
    assert fingerprint(mermaid_demo) == before


def test_adopt_a_conflict_sibling(run, mermaid_demo):
    conv = _conv(mermaid_demo)
    snap = json.loads((conv / f"{SPEC_ID}.json").read_text())
    other = dict(snap, title="the other writer", messages=snap["messages"][:1])
    conflict = conv / f"{SPEC_ID}.4242.0.conflict"
    conflict.write_text(make_fixtures.mermaid_snapshot(other))
    r = run("--root", mermaid_demo, "recover", SPEC_ID, "--use", conflict)
    assert r.exit_code == 2 and "--yes" in r.stderr  # not a terminal: must confirm with --yes
    r = run("--root", mermaid_demo, "recover", SPEC_ID, "--use", conflict, "--yes")
    assert r.exit_code == 0, r.stderr
    assert json.loads((conv / f"{SPEC_ID}.json").read_text())["title"] == "the other writer"
    assert "-3 messages" in r.stdout and "title changed" in r.stdout


def test_use_with_another_sessions_file_is_refused(run, mermaid_demo):
    conv = _conv(mermaid_demo)
    before = fingerprint(mermaid_demo)
    r = run("--root", mermaid_demo, "recover", SPEC_ID, "--use", conv / "20260901_170000_250.json", "--yes")
    assert r.exit_code == 2 and "holds session 20260901_170000_250" in r.stderr
    assert fingerprint(mermaid_demo) == before


def test_busy_when_mermaid_holds_the_scratch_lock(run, torn):
    import fcntl

    from samctl.stores import open_store

    (_conv(torn) / f"{SPEC_ID}.json").unlink()
    lock = open_store(str(torn)).scratch_lock_path(SPEC_ID)
    lock.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(fd, fcntl.LOCK_EX)
    try:
        before = fingerprint(torn)
        r = run("--root", torn, "recover", SPEC_ID)
        assert r.exit_code == 5 and "scratch lock" in r.stderr and "--force" in r.stderr
        assert fingerprint(torn) == before
        assert run("--root", torn, "recover", SPEC_ID, "--force").exit_code == 0
    finally:
        os.close(fd)
        shutil.rmtree(lock.parent.parent.parent, ignore_errors=True)


@pytest.mark.parametrize("step", ["truncate", "bak", "tmp-write", "fsync", "rename", "dir-fsync"])
@pytest.mark.parametrize("when", ["before", "after"])
def test_recover_interrupted_at_any_step_leaves_old_or_new(run, torn, monkeypatch, step, when):
    conv = _conv(torn)
    old = (conv / f"{SPEC_ID}.json").read_bytes()
    snap = json.loads(old)
    behind = make_fixtures.mermaid_snapshot(
        dict(snap, messages=snap["messages"][:2], updated_at=snap["messages"][1]["timestamp"])
    ).encode()
    (conv / f"{SPEC_ID}.json").write_bytes(behind)
    seen = []

    def hook(s):
        if s == step:
            if when == "before" or seen.count(s) > 0:
                raise RuntimeError("injected")
            seen.append(s)

    monkeypatch.setattr(faults, "fault_hook", hook)
    with pytest.raises(RuntimeError):
        from samctl.core.recover import recover
        from samctl.stores import open_store

        recover(open_store(str(torn)), SPEC_ID)
        raise RuntimeError("injected")  # the step never came up twice: still a valid run
    monkeypatch.setattr(faults, "fault_hook", None)
    now = (conv / f"{SPEC_ID}.json").read_bytes()
    assert now in (behind, (SPEC / f"{SPEC_ID}.json").read_bytes())
    assert not [p for p in conv.iterdir() if p.name.endswith(".tmp")]
    # and a second run completes the job
    assert run("--root", torn, "recover", SPEC_ID).exit_code == 0
    assert (conv / f"{SPEC_ID}.json").read_bytes() == (SPEC / f"{SPEC_ID}.json").read_bytes()


def test_log_json_stop_counts_lines_as_its_reason_does(run, mermaid_demo):
    log = mermaid_demo / ".mermaid" / "conversations" / "20260812_091500_004.jsonl"
    n = len(log.read_bytes().splitlines())
    with open(log, "ab") as f:
        f.write(b"garbage\n")
    r = run("--root", mermaid_demo, "log", "20260812", "--format", "json")
    assert r.exit_code == 3
    stop = json.loads(r.stdout)["stop"]
    assert stop["code"] == "log-malformed" and stop["line"] == n + 1 and f"line {n + 1} " in stop["reason"]
    assert "log-malformed" in run("--root", mermaid_demo, "check").stderr
