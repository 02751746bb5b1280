"""samctl compact: attic grace purge, log rewrite, torn tails, temps and backups, VACUUM, output rules."""

from __future__ import annotations

import fcntl
import os
import sqlite3
import time
from pathlib import Path

import orjson
import pytest
from make_fixtures import mermaid_doc, mermaid_line, mermaid_message, mermaid_meta, mermaid_snapshot

from samctl.attic import entries as attic
from samctl.stores import open_store
from samctl.stores.mermaid import eventlog
from tests.conftest import fingerprint

LONG = "20260301_100000_000"
MID = "20260810_140307_512"
MID2 = "20260812_091500_004"
SID = "8B58CBC4-ACA7-4811-AE66-C01921690310"
T0 = "2026-03-01T10:00:00-04:00"


def long_session(conv: Path, cid: str = LONG, n: int = 50) -> dict:
    """A session whose log (started, message/input events, state, tasks) folds to its snapshot."""
    msgs = [
        mermaid_message(
            "User" if i % 2 == 0 else "Assistant",
            f"message {i} " + "lorem ipsum " * 20,
            f"2026-03-01T10:{i // 60:02d}:{i % 60:02d}.5-04:00",
        )
        for i in range(n)
    ]
    doc = mermaid_doc(cid, "A long session", msgs, T0)
    lines = [
        mermaid_line(
            0,
            T0,
            {
                "created_at": T0,
                "model_id": doc["model_name"],
                "project_path": doc["project_path"],
                "session_id": cid,
                "type": "started",
            },
        )
    ]
    for m in msgs:
        lines.append(mermaid_line(len(lines), m["timestamp"], {"message": m, "type": "message"}))
        if m["role"] == "User":
            lines.append(mermaid_line(len(lines), m["timestamp"], {"text": m["content"], "type": "input"}))
    state = {
        "type": "state",
        "title": doc["title"],
        "model_name": doc["model_name"],
        "cumulative_token_usage": doc["cumulative_token_usage"],
    }
    state.update({k: doc[k] for k in ("safety_mode", "git_branch", "git_sha", "cli_version")})
    lines.append(mermaid_line(len(lines), T0, state))
    lines.append(mermaid_line(len(lines), T0, {"store": doc["tasks"], "type": "tasks"}))
    for ext, data in (("json", mermaid_snapshot(doc)), ("meta", mermaid_meta(doc)), ("jsonl", "".join(lines))):
        p = conv / f"{cid}.{ext}"
        p.write_text(data, encoding="utf-8")
        os.chmod(p, 0o600)
    return doc


def age(paths, seconds: float) -> None:
    t = time.time() - seconds
    for p in paths:
        os.utime(p, (t, t))


def conv(root: Path) -> Path:
    return root / ".mermaid" / "conversations"


def fold_of(data: bytes) -> dict:
    read = eventlog.parse_log(data)
    assert read.stop is None, read.reason
    return {k: v for k, v in eventlog.fold(read.events).items() if k != "compactions"}


def test_rewrites_a_big_log_into_history_plus_backfill(run, mermaid_demo, tmp_path):
    c = conv(mermaid_demo)
    long_session(c)
    log = c / f"{LONG}.jsonl"
    age(c.iterdir(), 7200)
    old = log.read_bytes()
    snap_before = (c / f"{LONG}.json").read_bytes()
    r = run("--root", mermaid_demo, "compact", "--log-threshold", "8K")
    assert r.exit_code == 0, r.stderr
    assert "1 log rewritten" in r.stdout and "->" in r.stdout
    new = log.read_bytes()
    assert len(new) < len(old) and oct(log.stat().st_mode & 0o777) == "0o600"
    types = [orjson.loads(x)["event"]["type"] for x in new.splitlines()]
    assert types[:2] == ["started", "reset"] and types[-2:] == ["state", "tasks"] and set(types[2:-2]) == {"input"}
    assert [orjson.loads(x)["seq"] for x in new.splitlines()] == list(range(len(types)))
    assert fold_of(new) == fold_of(old)
    assert (c / f"{LONG}.json").read_bytes() == snap_before
    store = open_store(str(mermaid_demo))
    [e] = attic.list_entries(store, [], ("history",))
    assert e.id == LONG and e.tar_path.name.startswith(f"{LONG}.history.")
    out = tmp_path / "x"
    out.mkdir()
    attic.unpack(e, out)
    assert (out / f"{LONG}.jsonl").read_bytes() == old
    assert run("--root", mermaid_demo, "check").exit_code == 0
    # restore never offers history segments as conversations
    assert run("--root", mermaid_demo, "restore", LONG).exit_code == 4
    # a second run has nothing to do, and says nothing
    r = run("--root", mermaid_demo, "compact", "--log-threshold", "8K")
    assert r.exit_code == 0 and r.stdout == "" and r.stderr == ""


def test_leaves_recently_written_and_live_logs_alone(run, mermaid_demo, tmp_path):
    c = conv(mermaid_demo)
    long_session(c)
    fp = fingerprint(c)
    r = run("--root", mermaid_demo, "compact", "--log-threshold", "8K", "-v")
    assert r.exit_code == 0
    assert "skipped-busy" in r.stderr
    assert fingerprint(c) == fp
    age(c.iterdir(), 7200)
    fp = fingerprint(c)
    store = open_store(str(mermaid_demo))
    lock = store.scratch_lock_path(LONG)
    lock.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(fd, fcntl.LOCK_EX)
    try:
        r = run("--root", mermaid_demo, "compact", "--log-threshold", "8K", "-v")
        assert r.exit_code == 0 and "skipped-live" in r.stderr
        assert fingerprint(c) == fp
        # --force does not reach an open session's log: mermaid's cached seq cursor and an append
        # batch held open across the swap would both go wrong
        r = run("--root", mermaid_demo, "compact", "--log-threshold", "8K", "-v", "--force")
        assert r.exit_code == 0 and "skipped-live" in r.stderr
        assert fingerprint(c) == fp
    finally:
        os.close(fd)


@pytest.mark.parametrize("complete", [False, True])
def test_cuts_torn_tails_into_a_torn_file(complete, run, mermaid_demo):
    c = conv(mermaid_demo)
    log = c / f"{MID}.jsonl"
    good = log.read_bytes()
    frag = (
        mermaid_line(13, "2026-08-10T14:05:00Z", {"text": "more", "type": "input"}).rstrip("\n").encode()
        if complete
        else b'{"event":{"message":{"actions":[],"content":"Want me to run'
    )
    log.write_bytes(good + frag)
    age([log], 7200)
    r = run("--root", mermaid_demo, "compact", "-v")
    assert r.exit_code == 0, r.stderr
    assert "trim-tail" in r.stdout
    if complete:
        assert log.read_bytes() == good + frag + b"\n"
        assert list(c.glob("*.torn")) == []
    else:
        assert log.read_bytes() == good
        [torn] = list(c.glob(f"{MID}.jsonl.*.torn"))
        assert torn.read_bytes() == frag and oct(torn.stat().st_mode & 0o777) == "0o600"
    r = run("--root", mermaid_demo, "check")
    assert "log-torn-tail" not in r.stderr


def test_purges_deleted_entries_past_grace_only(run, mermaid_demo):
    assert run("--root", mermaid_demo, "rm", MID).exit_code == 0
    assert run("--root", mermaid_demo, "archive", MID2).exit_code == 0
    r = run("--root", mermaid_demo, "compact")
    assert r.exit_code == 0 and r.stdout == ""
    store = open_store(str(mermaid_demo))
    assert len(attic.list_entries(store, [])) == 2
    r = run("--root", mermaid_demo, "compact", "--grace", "0s")
    assert r.exit_code == 0 and "1 attic entry purged" in r.stdout
    [e] = attic.list_entries(store, [])
    assert e.state == "archived"


def test_a_deleted_entry_that_was_pinned_is_never_purged_by_compact(run, sam_demo):
    """Only `rm --purge --include-pinned` removes a pinned conversation for good; compact says it kept it."""
    pinned = "C2A1F0E4-3B5D-4E6F-8A9B-0C1D2E3F4A5B"
    assert run("--root", sam_demo, "rm", pinned, "--include-pinned").exit_code == 0
    assert run("--root", sam_demo, "rm", "8B58").exit_code == 0
    r = run("--root", sam_demo, "compact", "--grace", "0s", "-v")
    assert r.exit_code == 0, r.output
    assert "1 attic entry purged" in r.stdout and "kept-pinned" in r.stderr and pinned in r.stderr
    [e] = attic.list_entries(open_store(str(sam_demo)), [])
    assert e.id == pinned and e.state == "deleted"
    r = run("--root", sam_demo, "compact", "--grace", "0s")
    assert r.exit_code == 0 and r.output == ""  # quiet by default: the kept entry is said with -v


def test_sweeps_stale_temps_and_old_backups(run, mermaid_demo, sam_demo):
    c = conv(mermaid_demo)
    stale, fresh = c / f".{MID}.json.4242.0.tmp", c / f".{MID}.json.4242.1.tmp"
    old_bak, new_bak = c / f"{MID}.json.20200101T000000Z.bak", c / f"{MID}.json.20991231T000000Z.bak"
    for p in (stale, fresh, old_bak, new_bak):
        p.write_bytes(b"x")
    age([stale], 3700)
    age([old_bak], 40 * 86400)
    r = run("--root", mermaid_demo, "compact")
    assert r.exit_code == 0, r.stderr
    assert not stale.exists() and fresh.exists() and not old_bak.exists() and new_bak.exists()
    assert "1 stale temp removed" in r.stdout and "1 old .bak/.torn removed" in r.stdout
    s = sam_demo / "conversations" / SID
    kv, convtmp = s / "kv_store.json.tmp", s / "conversation.json.tmp"
    for p in (kv, convtmp):
        p.write_bytes(b"{}")
    age([kv, convtmp], 7200)
    r = run("--root", sam_demo, "compact")
    assert r.exit_code == 0, r.stderr
    assert not kv.exists() and convtmp.exists()  # conversation.json.tmp is a recovery source


def test_vacuums_sam_memory_databases(run, sam_demo):
    db_path = sam_demo / "conversations" / SID / "memory.db"
    db = sqlite3.connect(db_path)
    rows = list(db.execute("select * from conversation_memories"))
    blob = b"\0" * 4096
    db.executemany(
        "insert into conversation_memories values (?,?,?,?,?,?,?,?,?,?)",
        [
            (
                f"00000000-0000-4000-8000-{i:012d}",
                SID,
                "filler",
                "message",
                blob,
                0.5,
                "2026-08-10T14:02:12.345",
                0,
                "2026-08-10T14:02:12.345",
                None,
            )
            for i in range(300)
        ],
    )
    db.commit()
    db.execute("delete from conversation_memories where content = 'filler'")
    db.commit()
    db.close()
    big = db_path.stat().st_size
    r = run("--root", sam_demo, "compact")
    assert r.exit_code == 0, r.stderr
    assert "1 database vacuumed" in r.stdout
    assert db_path.stat().st_size < big / 4
    db = sqlite3.connect(db_path)
    assert list(db.execute("select * from conversation_memories")) == rows
    db.close()
    assert run("--root", sam_demo, "check").exit_code == 0


def test_json_report_and_quiet(run, mermaid_demo):
    c = conv(mermaid_demo)
    long_session(c)
    age(c.iterdir(), 7200)
    r = run("--root", mermaid_demo, "compact", "--log-threshold", "8K", "--format", "json")
    assert r.exit_code == 0
    doc = orjson.loads(r.stdout)
    assert doc["counts"] == {"rewrite-log": 1} and doc["bytes_after"] < doc["bytes_before"]
    r = run("--root", mermaid_demo, "compact", "-q")
    assert r.exit_code == 0 and r.stdout == "" and r.stderr == ""


def test_a_log_it_cannot_rewrite_is_reported(run, mermaid_demo):
    c = conv(mermaid_demo)
    long_session(c)
    with open(c / f"{LONG}.jsonl", "ab") as f:
        f.write(b"not json\n")
    age(c.iterdir(), 7200)
    fp = fingerprint(c)
    r = run("--root", mermaid_demo, "compact", "--log-threshold", "8K")
    assert r.exit_code == 3 and "compact-skipped" in r.stderr and "not clean" in r.stderr
    assert fingerprint(c) == fp


@pytest.mark.parametrize(
    "text,size",
    [
        ("64M", 64 << 20),
        ("64MiB", 64 << 20),
        ("64 mb", 64 << 20),
        ("8KiB", 8 << 10),
        ("1G", 1 << 30),
        ("1048576", 1 << 20),
        ("1048576B", 1 << 20),
    ],
)
def test_sizes_take_the_units_the_help_names(text, size):
    from samctl.cli import _parse_size

    assert _parse_size(text) == size


@pytest.mark.parametrize("text", ["0", "M", "64X", "-1", "64iB", "", "kib", "64MiBB", "1.5M"])
def test_a_size_that_is_not_one_is_a_usage_error(run, mermaid_demo, text):
    r = run("--root", mermaid_demo, "compact", "--log-threshold", text)
    assert r.exit_code == 2 and "'--log-threshold': " in r.stderr and "is not a size" in r.stderr
    r = run("--root", mermaid_demo, "--max-file-size", text, "ls")
    assert r.exit_code == 2 and "'--max-file-size': " in r.stderr and "is not a size" in r.stderr


def test_a_dry_run_with_nothing_to_do_says_so_plainly(run, mermaid_demo):
    r = run("--root", mermaid_demo, "compact", "--dry-run", "-v")
    assert r.exit_code == 0, r.output
    assert "compact (dry run): nothing to do" in r.stdout and "would do nothing" not in r.stdout


def test_a_dry_run_predicts_the_bytes_the_run_frees(run, mermaid_demo):
    """The estimate counts everything a purge removes: the archive and its manifest."""
    assert run("--root", mermaid_demo, "rm", MID).exit_code == 0
    assert run("--root", mermaid_demo, "rm", MID2).exit_code == 0
    dry = orjson.loads(run("--root", mermaid_demo, "compact", "--grace", "0s", "--dry-run", "--format", "json").stdout)
    real = orjson.loads(run("--root", mermaid_demo, "compact", "--grace", "0s", "--format", "json").stdout)
    assert dry["bytes_before"] == real["bytes_before"]
    assert dry["bytes_after"] == real["bytes_after"] < real["bytes_before"]


def big_input(conv: Path, cid: str = LONG, size: int = 300_000) -> Path:
    """``long_session`` plus one input event of ``size`` incompressible characters (a pasted blob):
    a backfill carries it again, so no rewrite can shrink this log."""
    import base64

    long_session(conv, cid)
    log = conv / f"{cid}.jsonl"
    n = sum(1 for _ in log.open("rb"))
    blob = base64.b64encode(os.urandom(size * 3 // 4)).decode()
    with open(log, "a", encoding="utf-8") as f:
        f.write(mermaid_line(n, T0, {"text": blob, "type": "input"}))
    snap = conv / f"{cid}.json"
    doc = orjson.loads(snap.read_bytes())
    doc["input_history"] = (doc.get("input_history") or []) + [blob]
    snap.write_text(mermaid_snapshot(doc), encoding="utf-8")
    return log


@pytest.mark.parametrize("dry", [False, True])
def test_a_rewrite_that_would_not_shrink_is_not_done_and_says_why(run, mermaid_demo, dry):
    """Finding 7 of issue #20: the fresh log holds the big input again and the old log goes to the attic,
    so a rewrite would grow the store; it is left alone, with the reason under -v, also on later runs."""
    c = conv(mermaid_demo)
    log = big_input(c)
    assert fold_of(log.read_bytes()) == {
        k: v for k, v in orjson.loads((c / f"{LONG}.json").read_bytes()).items() if k != "compactions"
    }
    age(c.iterdir(), 7200)
    fp = fingerprint(c)
    for _ in range(2):
        r = run("--root", mermaid_demo, "compact", "--log-threshold", "8K", "-v", *(["--dry-run"] if dry else []))
        assert r.exit_code == 0, r.output
        assert "rewrite-log" not in r.stdout and "nothing to do" in r.stdout
        assert "log-kept" in r.stderr and f"{LONG}.jsonl" in r.stderr and "would not make it smaller" in r.stderr
        assert fingerprint(c) == fp and not (c.parent / "samctl-attic").exists()
    r = run("--root", mermaid_demo, "compact", "--log-threshold", "8K")  # without -v: quiet, nothing wrong
    assert r.exit_code == 0 and r.output == ""
    assert fingerprint(c) == fp


def test_a_rewrite_reports_the_log_and_the_history_segment_separately(run, mermaid_demo):
    c = conv(mermaid_demo)
    long_session(c)
    log = c / f"{LONG}.jsonl"
    age(c.iterdir(), 7200)
    size0 = log.stat().st_size
    r = run("--root", mermaid_demo, "compact", "--log-threshold", "8K", "--format", "json")
    assert r.exit_code == 0, r.stderr
    [a] = orjson.loads(r.stdout)["actions"]
    [e] = attic.list_entries(open_store(str(mermaid_demo)), [], ("history",))
    history = e.tar_size + e.manifest_path.stat().st_size
    assert (a["bytes_before"], a["log_after"], a["history"]) == (size0, log.stat().st_size, history)
    assert a["bytes_after"] == a["log_after"] + history < size0


def test_a_segment_bigger_than_estimated_undoes_the_rewrite(run, mermaid_demo, monkeypatch):
    """The estimate decides before anything is written; the real segment decides again after packing,
    and a rewrite that would not shrink after all leaves no entry and no journal record behind."""
    from samctl.attic import compact

    c = conv(mermaid_demo)
    big_input(c)
    age(c.iterdir(), 7200)
    fp = fingerprint(c)
    monkeypatch.setattr(compact, "_history_estimate", lambda data, level: 1)
    r = run("--root", mermaid_demo, "compact", "--log-threshold", "8K", "-v")
    assert r.exit_code == 0, r.output
    assert "log-kept" in r.stderr and "rewrite-log" not in r.stdout
    assert fingerprint(c) == fp
    a = c.parent / "samctl-attic"
    assert [p.name for p in a.iterdir() if not p.name.startswith(".")] == [] and list((a / ".journal").iterdir()) == []
    assert run("--root", mermaid_demo, "attic", "--verify").exit_code == 0


def test_verbose_says_what_the_log_became_and_what_the_attic_got(run, mermaid_demo):
    c = conv(mermaid_demo)
    long_session(c)
    age(c.iterdir(), 7200)
    r = run("--root", mermaid_demo, "compact", "--log-threshold", "8K", "-v")
    assert r.exit_code == 0, r.output
    [line] = [x for x in r.stdout.splitlines() if x.startswith("rewrite-log:")]
    assert "(log 37.9K -> 33.6K, history segment " in line and "old log kept as" in line
