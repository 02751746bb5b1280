"""What the lifecycle commands must never lose or take: compact's repair of an interrupted log rewrite,
the only files compact deletes, manifest values out of range (mtime_ns, when_ts, mode), and journal
temps a crash left behind."""

from __future__ import annotations

import json
import os
import shutil
import stat
import time
from pathlib import Path

import make_fixtures
import orjson
import pytest

from samctl.attic import entries as attic
from samctl.fs import faults
from samctl.stores import open_store
from tests.cli.test_compact import LONG, MID, SID, age, conv, fold_of, long_session
from tests.cli.test_lifecycle import attic_of
from tests.conftest import fingerprint
from tests.test_faults import KILLED, _run_child


class Crash(BaseException):
    """Stands for a crash: no ``except Exception`` in samctl stops it, so nothing cleans up after it."""


# --- repair of a log rewrite a crash interrupted -------------------------------------------


def _crash_compact(run, monkeypatch, root: Path, after_swap: bool) -> tuple[bytes, Path]:
    """Run compact on a long session, stopped right after (or right before) the new log is renamed
    into place; returns (the old log's bytes, the log's path)."""
    c = conv(root)
    long_session(c)
    age(c.iterdir(), 7200)
    log = c / f"{LONG}.jsonl"
    old, ino = log.read_bytes(), log.stat().st_ino

    def hook(step):
        swapped = log.stat().st_ino != ino
        if (after_swap and step == "dir-fsync" and swapped) or (
            not after_swap and step == "rename" and list(c.glob(f".{LONG}.jsonl.*.tmp"))
        ):
            raise Crash(step)

    monkeypatch.setattr(faults, "fault_hook", hook)
    with pytest.raises(Crash):
        run("--root", root, "compact", "--log-threshold", "8K")
    monkeypatch.setattr(faults, "fault_hook", None)
    assert [p.name for p in (attic_of(root) / ".journal").iterdir()] != []  # the rewrite's record is left
    return old, log


def _append_like_mermaid(log: Path, at_least: int) -> bytes:
    """Append message events the way mermaid does (one JSON line per write, O_APPEND, fsync) until
    ``at_least`` bytes were added; returns them."""
    seq = len(log.read_bytes().splitlines())
    added = b""
    fd = os.open(log, os.O_WRONLY | os.O_APPEND)
    try:
        while len(added) < at_least:
            ts = f"2026-03-02T09:{seq // 60 % 60:02d}:{seq % 60:02d}-04:00"
            m = make_fixtures.mermaid_message("User", f"appended {seq} " + "after the crash " * 10, ts)
            line = make_fixtures.mermaid_line(seq, ts, {"message": m, "type": "message"}).encode()
            os.write(fd, line)
            os.fsync(fd)
            added += line
            seq += 1
    finally:
        os.close(fd)
    return added


def _history(root: Path) -> list:
    return attic.list_entries(open_store(str(root)), [], ("history",))


def _unpacked(e, tmp_path: Path) -> bytes:
    out = tmp_path / "unpacked"
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir()
    attic.unpack(e, out)
    return (out / f"{LONG}.jsonl").read_bytes()


REPAIRS = {"attic": ["attic", "--repair"], "compact": ["compact", "--log-threshold", "8K"]}


@pytest.mark.parametrize("how", list(REPAIRS))
def test_a_crash_right_after_the_log_swap_then_appends_past_the_old_size_keeps_the_history(
    how, run, mermaid_demo, monkeypatch, tmp_path
):
    old, log = _crash_compact(run, monkeypatch, mermaid_demo, after_swap=True)
    new = log.read_bytes()
    assert len(new) < len(old)
    appended = _append_like_mermaid(log, len(old) - len(new) + 100)
    assert log.stat().st_size > len(old)
    r = run("--root", mermaid_demo, *REPAIRS[how])
    assert r.exit_code == 0, r.stderr
    assert f"{LONG}: finished an interrupted log rewrite" in r.stderr
    assert "never replaced" not in r.stderr and "appended since" in r.stderr
    [e] = _history(mermaid_demo)
    assert _unpacked(e, tmp_path) == old
    assert log.read_bytes() == new + appended  # compact leaves a log written a moment ago alone
    assert fold_of(log.read_bytes()) == fold_of(old + appended)
    assert list((attic_of(mermaid_demo) / ".journal").iterdir()) == []
    assert run("--root", mermaid_demo, "attic", "--verify").exit_code == 0


def test_a_crash_right_after_the_log_swap_without_appends_keeps_the_history(run, mermaid_demo, monkeypatch, tmp_path):
    old, log = _crash_compact(run, monkeypatch, mermaid_demo, after_swap=True)
    new = log.read_bytes()
    r = run("--root", mermaid_demo, "attic", "--repair")
    assert r.exit_code == 0, r.stderr
    assert f"{LONG}: finished an interrupted log rewrite" in r.stderr and "appended" not in r.stderr
    [e] = _history(mermaid_demo)
    assert _unpacked(e, tmp_path) == old and log.read_bytes() == new


def test_a_crash_before_the_log_swap_drops_the_history_the_log_still_holds(run, mermaid_demo, monkeypatch):
    old, log = _crash_compact(run, monkeypatch, mermaid_demo, after_swap=False)
    assert log.read_bytes() == old
    appended = _append_like_mermaid(log, 300)
    r = run("--root", mermaid_demo, "attic", "--repair")
    assert r.exit_code == 0, r.stderr
    assert f"{LONG}: undid an interrupted log rewrite" in r.stderr and "still holds the old log" in r.stderr
    assert _history(mermaid_demo) == []
    assert log.read_bytes() == old + appended
    assert list(conv(mermaid_demo).glob(".*.tmp")) == []  # compact's unfinished new log


@pytest.mark.parametrize("damage", ["removed", "replaced"])
def test_a_log_that_is_neither_the_old_nor_the_new_one_keeps_the_history(
    damage, run, mermaid_demo, monkeypatch, tmp_path
):
    old, log = _crash_compact(run, monkeypatch, mermaid_demo, after_swap=True)
    if damage == "removed":
        log.unlink()
    else:
        log.write_bytes(b"something else\n")
    r = run("--root", mermaid_demo, "attic", "--repair")
    assert r.exit_code == 0, r.stderr
    assert f"{LONG}: kept the history segment" in r.stderr
    [e] = _history(mermaid_demo)
    assert _unpacked(e, tmp_path) == old
    assert list((attic_of(mermaid_demo) / ".journal").iterdir()) == []


# --- compact removes only what samctl (or the store's own writer) names -----------------------


def _files(folder: Path, names) -> list[Path]:
    out = []
    for n in names:
        p = folder / n
        p.write_bytes(b"keep me")
        os.chmod(p, 0o600)
        out.append(p)
    age(out, 60 * 86400)
    return out


USERS = ["my-notes.bak", "notes.torn", ".user.tmp", ".notes.json.tmp", "x.20200101.bak", ".a.b.tmp"]


def test_compact_keeps_the_users_bak_torn_and_tmp_files_mermaid(run, mermaid_demo):
    c = conv(mermaid_demo)
    keep = _files(
        c,
        USERS
        + [f"{MID}.json.bak", f"{MID}.jsonl.torn", f"{MID}.json.bak.1", f".{MID}.json.tmp", f".{MID}.json.4242.tmp"],
    )
    ours = _files(
        c,
        [
            f"{MID}.json.20200101T000000Z.bak",
            f"{MID}.json.20200101T000000Z.bak.3",
            f"{MID}.jsonl.20200101T000000Z.torn",
            f".{MID}.json.4242.0.tmp",
            f".{MID}.json.20200101T000000Z.bak.4242.7.tmp",
        ],
    )
    r = run("--root", mermaid_demo, "compact", "-v", "--grace", "1h")
    assert r.exit_code == 0, r.stderr
    assert [p.name for p in keep if not p.exists()] == []
    assert [p.name for p in ours if p.exists()] == []
    assert all(p.read_bytes() == b"keep me" for p in keep)


def test_compact_keeps_the_users_bak_torn_and_tmp_files_sam(run, sam_demo):
    top = sam_demo / "conversations"
    folder = top / SID
    keep = _files(folder, USERS + ["conversation.json.bak", "memory.db.bak", "conversation.json.tmp"]) + _files(
        top, USERS
    )
    ours = _files(
        folder,
        [
            "conversation.json.20200101T000000Z.bak",
            "conversation.json.20200101T000000Z.bak.2",
            ".conversation.json.4242.0.tmp",
            "kv_store.json.tmp",
            "ltm.json.tmp.4242",
        ],
    )
    r = run("--root", sam_demo, "compact", "-v", "--grace", "1h")
    assert r.exit_code == 0, r.stderr
    assert [str(p) for p in keep if not p.exists()] == []
    assert [p.name for p in ours if p.exists()] == []


def test_the_grace_of_a_copy_runs_from_when_it_was_made_not_from_its_mtime(run, sam_demo):
    """recover sets SAM's leftover .tmp aside by a rename: the .bak keeps the .tmp's old mtime, and
    must still wait the whole grace period from the time in its name."""
    folder = sam_demo / "conversations" / SID
    tmp = folder / "conversation.json.tmp"
    tmp.write_bytes((folder / "conversation.json").read_bytes())
    age([tmp], 60 * 86400)
    assert run("--root", sam_demo, "recover", SID).exit_code == 0
    [bak] = folder.glob("conversation.json.tmp.*.bak")
    r = run("--root", sam_demo, "compact", "-v")  # the default grace: 30 days
    assert r.exit_code == 0, r.output
    assert bak.exists() and "remove-backup" not in r.stdout


def test_a_rewritten_log_is_0600_whatever_the_old_one_was(run, mermaid_demo):
    c = conv(mermaid_demo)
    long_session(c)
    log = c / f"{LONG}.jsonl"
    os.chmod(log, 0o6777)
    age(c.iterdir(), 7200)
    r = run("--root", mermaid_demo, "compact", "--log-threshold", "8K", "-v")
    assert r.exit_code == 0 and "rewrite-log" in r.stdout, r.output
    assert stat.S_IMODE(log.stat().st_mode) == 0o600


def test_a_dry_run_on_a_big_log_with_a_torn_tail_says_what_the_run_does(run, mermaid_demo):
    c = conv(mermaid_demo)
    long_session(c)
    log = c / f"{LONG}.jsonl"
    with open(log, "ab") as f:
        f.write(b'{"event":{"type":"mess')
    age(c.iterdir(), 7200)
    before = fingerprint(mermaid_demo)
    dry = run("--root", mermaid_demo, "compact", "--log-threshold", "8K", "-v", "--dry-run")
    assert fingerprint(mermaid_demo) == before
    real = run("--root", mermaid_demo, "compact", "--log-threshold", "8K", "-v")
    assert (dry.exit_code, real.exit_code) == (0, 0), dry.output + real.output
    for kind in ("trim-tail", "rewrite-log"):
        assert f"would {kind}" in dry.stdout and f"{kind}:" in real.stdout


def test_a_torn_tail_compact_cannot_cut_is_said(run, mermaid_demo):
    """A line before the tail already stops the read: cutting the tail would not make the log readable."""
    c = conv(mermaid_demo)
    log = c / f"{MID}.jsonl"
    lines = log.read_bytes().split(b"\n")
    lines[2] = b"\xff\xfe not json"
    log.write_bytes(b"\n".join(lines) + b'{"event":{"ty')
    age([log], 7200)
    r = run("--root", mermaid_demo, "compact", "-v")
    assert r.exit_code == 3, r.output
    assert "compact-skipped" in r.stderr and "ends torn" in r.stderr


# --- manifest values samctl could not have written are a damaged entry ---------------------


def _rm_and_edit_manifest(run, root: Path, cid: str, edit) -> Path:
    assert run("--root", root, "rm", cid).exit_code == 0
    [manifest] = attic_of(root).glob("*.manifest.json")
    d = orjson.loads(manifest.read_bytes())
    edit(d)
    manifest.write_text(json.dumps(d))  # json: orjson cannot write integers past 64 bits
    return manifest


def _members(key, value, kind="file"):
    def edit(d):
        for m in d["members"]:
            if m["type"] == kind:
                m[key] = value

    return edit


def _when_ts(value):
    def edit(d):
        d["when_ts"] = value

    return edit


BAD = {
    "mtime_ns-huge": _members("mtime_ns", 10**30),
    "mtime_ns-past-time_t": _members("mtime_ns", 2**63 * 10**9),
    "mtime_ns-negative-past-time_t": _members("mtime_ns", -(2**64) * 10**9),
    "when_ts-nan": _when_ts("nan"),
    "when_ts-inf": _when_ts("inf"),
    "when_ts-huge": _when_ts(1e300),
    "when_ts-negative": _when_ts(-5.0),
    "mode-setuid-setgid": _members("mode", 0o6777),
    "mode-sticky": _members("mode", 0o1600),
}


@pytest.mark.parametrize("bad", list(BAD))
def test_a_manifest_value_out_of_range_is_a_damaged_entry(bad, run, mermaid_demo):
    _rm_and_edit_manifest(run, mermaid_demo, MID, BAD[bad])
    r = run("--root", mermaid_demo, "attic", "--verify")
    assert r.exit_code == 3 and "attic-bad-manifest" in r.stderr, r.stderr
    fp = fingerprint(mermaid_demo)
    r = run("--root", mermaid_demo, "restore", MID)
    # refused as every unreadable manifest is (exit 4: no readable entry of that id), never an internal error
    assert r.exit_code == 4 and f"no attic entry of {MID} can be read" in r.stderr, r.stderr
    assert "internal error" not in r.stderr
    assert fingerprint(mermaid_demo) == fp  # nothing placed, nothing staged
    r = run("--root", mermaid_demo, "compact", "--grace", "0s")  # never purged as if it were old, never a crash
    assert r.exit_code == 3 and "attic-bad-manifest" in r.stderr and "internal error" not in r.stderr


@pytest.mark.parametrize("kind,mode", [("dir", 0o4700), ("dir", 0o1700), ("file", 0o2600), ("file", 0o4600)])
def test_special_mode_bits_samctl_never_records_make_a_damaged_entry(run, sam_demo, kind, mode):
    _rm_and_edit_manifest(run, sam_demo, SID, _members("mode", mode, kind=kind))
    r = run("--root", sam_demo, "attic", "--verify")
    assert r.exit_code == 3 and "attic-bad-manifest" in r.stderr


def test_a_folder_keeps_its_inherited_setgid_and_a_file_loses_special_bits(run, sam_demo):
    """setgid on a folder is inherited from its parent on Linux: restored as it was (and entries that
    recorded it stay restorable); setuid on a file is never archived, so never restored."""
    folder = sam_demo / "conversations" / SID
    os.chmod(folder, 0o2700)
    os.chmod(folder / "conversation.json", 0o4600)
    if stat.S_IMODE(folder.stat().st_mode) != 0o2700:
        pytest.skip("this file system does not keep setgid on a folder")
    assert run("--root", sam_demo, "rm", SID).exit_code == 0
    [manifest] = attic_of(sam_demo).glob("*.manifest.json")
    modes = {m["name"]: m["mode"] for m in orjson.loads(manifest.read_bytes())["members"]}
    assert modes[SID] == 0o2700 and modes[f"{SID}/conversation.json"] == 0o600
    assert run("--root", sam_demo, "attic", "--verify").exit_code == 0
    r = run("--root", sam_demo, "restore", SID)
    assert r.exit_code == 0, r.stderr
    assert stat.S_IMODE(folder.stat().st_mode) == 0o2700
    assert stat.S_IMODE((folder / "conversation.json").stat().st_mode) == 0o600


def test_good_manifest_values_at_the_edges_are_accepted(run, mermaid_demo):
    """A pre-1970 mtime is something a real file can have (tar keeps it in a PAX header)."""
    for p in conv(mermaid_demo).glob(f"{MID}.*"):
        os.utime(p, ns=(-(10**18), -(10**18)))
    assert run("--root", mermaid_demo, "rm", MID).exit_code == 0
    [manifest] = attic_of(mermaid_demo).glob("*.manifest.json")
    assert {m["mtime_ns"] for m in orjson.loads(manifest.read_bytes())["members"]} == {-(10**18)}
    assert run("--root", mermaid_demo, "attic", "--verify").exit_code == 0
    r = run("--root", mermaid_demo, "restore", MID)
    assert r.exit_code == 0, r.stderr
    assert (conv(mermaid_demo) / f"{MID}.json").stat().st_mtime_ns == -(10**18)


# --- a journal temp a crash left is swept by the next repair ----------------------------------


def test_a_journal_temp_left_by_a_crash_is_swept_by_the_next_repair(run, mermaid_demo, tmp_path):
    template = tmp_path / "template"
    shutil.copytree(mermaid_demo, template, symlinks=True)
    for n in range(1, 20):  # the first write step that leaves a journal temp behind (a real SIGKILL)
        root = tmp_path / f"run{n}"
        shutil.copytree(template, root, symlinks=True)
        code = _run_child(["--root", str(root), "rm", MID], n, "kill")
        assert code == KILLED, code
        temps = list((attic_of(root) / ".journal").glob(".*.tmp"))
        if temps:
            break
        shutil.rmtree(root)
    else:
        pytest.fail("no write step left a journal temp")
    assert temps[0].name.startswith(".batch.") and time.time() - temps[0].stat().st_mtime < 60  # fresh
    r = run("--root", root, "attic", "--repair")
    assert r.exit_code == 0, r.stderr
    assert list((attic_of(root) / ".journal").iterdir()) == []
    assert fingerprint(conv(root)) == fingerprint(conv(template))  # the move never began


def test_a_log_record_naming_a_deleted_entry_drops_nothing(run, mermaid_demo):
    """A tampered journal record cannot make repair drop a conversation's entry: only the history
    segment of the log the record names is ever dropped."""
    assert run("--root", mermaid_demo, "rm", MID).exit_code == 0
    [manifest] = attic_of(mermaid_demo).glob("*.manifest.json")
    stem = manifest.name[: -len(".manifest.json")]
    h = "0" * 64
    (attic_of(mermaid_demo) / ".journal" / f"{stem}.json").write_bytes(
        orjson.dumps(
            {"op": "log", "stem": stem, "id": MID, "old_size": 1, "old_sha256": h, "new_size": 1, "new_sha256": h}
        )
    )
    r = run("--root", mermaid_demo, "attic", "--repair")
    assert r.exit_code == 0, r.stderr
    assert manifest.exists()
    r = run("--root", mermaid_demo, "restore", MID)
    assert r.exit_code == 0, r.stderr


def test_a_dry_runs_estimate_counts_the_history_segment(run, mermaid_demo):
    """The summary covers the store and the attic: the old log's compressed copy is in both estimates."""
    import json as jsonmod

    c = conv(mermaid_demo)
    long_session(c)
    age(c.iterdir(), 7200)
    dry = jsonmod.loads(
        run("--root", mermaid_demo, "compact", "--log-threshold", "8K", "--dry-run", "--format", "json").stdout
    )
    real = jsonmod.loads(run("--root", mermaid_demo, "compact", "--log-threshold", "8K", "--format", "json").stdout)
    (d,), (r,) = ([a for a in x["actions"] if a["kind"] == "rewrite-log"] for x in (dry, real))
    assert d["bytes_before"] == r["bytes_before"]
    new_log = (c / f"{LONG}.jsonl").stat().st_size
    (segment,) = _history(mermaid_demo)
    history = segment.tar_size + segment.manifest_path.stat().st_size  # (what the entry takes: archive and manifest)
    assert r["bytes_after"] == new_log + history
    assert abs(d["bytes_after"] - new_log - history) <= 0.5 * history, (d, r, history)
