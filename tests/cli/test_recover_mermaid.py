"""mermaid recover and check on what the log and the snapshot disagree about: which one wins (mermaid.md §0.1),
checkpoint_seq (mermaid.md §9), message-less sessions (mermaid.md §5), 0.26+ .conflict.jsonl logs (mermaid.md §9),
logs that stay broken (mermaid.md §4.4) and sessions only a log holds (mermaid.md §6)."""

import json
import stat

import pytest

from samctl.stores.mermaid import eventlog
from tests.conftest import fingerprint, make_fixtures

SPEC_ID = "20260810_140307_512"
SPEC = make_fixtures.SPEC


def _conv(project):
    return project / ".mermaid" / "conversations"


def _lines(path):
    return [json.loads(x) for x in path.read_bytes().split(b"\n")[:-1]]


def _write_log(path, envelopes):
    path.write_bytes(
        b"".join(
            json.dumps(e, separators=(",", ":"), sort_keys=True, ensure_ascii=False).encode() + b"\n" for e in envelopes
        )
    )


def _drop_log_line(project, index):
    """The demo log without line ``index``, seqs renumbered: a failed append (mermaid.md §4.3)."""
    log = _conv(project) / f"{SPEC_ID}.jsonl"
    ev = [e for i, e in enumerate(_lines(log)) if i != index]
    for i, e in enumerate(ev):
        e["seq"] = i
    _write_log(log, ev)


def _no_writes(before, after):
    for k in (".mermaid/.samctl", ".mermaid/.samctl/lock"):  # samctl's own lock file
        after.pop(k, None)
    return after == before


# --- a complete snapshot is never replaced by a fold that is not newer and as complete -------------


def test_tie_keeps_the_complete_snapshot_over_a_log_missing_a_message(run, mermaid_demo):
    _drop_log_line(mermaid_demo, 10)  # the Tool message; the last message (and updated_at) is in both
    before = fingerprint(mermaid_demo)
    r = run("--root", mermaid_demo, "recover", SPEC_ID)
    assert r.exit_code == 3, r.output
    assert "snapshot kept" in r.stderr and "lacks 1 message" in r.stderr
    assert _no_writes(before, fingerprint(mermaid_demo))
    assert (_conv(mermaid_demo) / f"{SPEC_ID}.json").read_bytes() == (SPEC / f"{SPEC_ID}.json").read_bytes()
    assert not list(_conv(mermaid_demo).glob("*.bak"))


def test_a_newer_fold_that_lacks_a_snapshot_message_does_not_replace_it(run, mermaid_demo):
    conv = _conv(mermaid_demo)
    snap = json.loads((conv / f"{SPEC_ID}.json").read_text())
    three = dict(snap, messages=snap["messages"][:3], updated_at=snap["messages"][2]["timestamp"])
    (conv / f"{SPEC_ID}.json").write_text(make_fixtures.mermaid_snapshot(three))
    (conv / f"{SPEC_ID}.meta").write_text(make_fixtures.mermaid_meta(three))
    _drop_log_line(mermaid_demo, 10)  # the log lacks message 3 but holds a newer message 4
    before = fingerprint(mermaid_demo)
    r = run("--root", mermaid_demo, "recover", SPEC_ID)
    assert r.exit_code == 3, r.output
    assert "snapshot kept" in r.stderr
    assert _no_writes(before, fingerprint(mermaid_demo))


def test_a_newer_compaction_in_the_log_replaces_the_snapshot(run, mermaid_demo):
    """A compaction shrinks the message list legitimately (the originals stay in the log, mermaid.md §4.2)."""
    conv = _conv(mermaid_demo)
    log = conv / f"{SPEC_ID}.jsonl"
    ev = _lines(log)
    checkpoint = make_fixtures.mermaid_message(
        "System", "MERMAID CONTEXT CHECKPOINT\n...", "2026-08-10T15:10:44.002913377-04:00", kind="context_checkpoint"
    )
    record = json.loads((SPEC / "compaction_line.jsonl").read_text())["event"]["record"]
    ev.append(
        {
            "event": {
                "at": checkpoint["timestamp"],
                "record": record,
                "replacement": [checkpoint],
                "type": "compaction",
            },
            "seq": len(ev),
            "ts": "2026-08-10T15:10:44.010552871-04:00",
            "v": 1,
        }
    )
    _write_log(log, ev)
    r = run("--root", mermaid_demo, "recover", SPEC_ID)
    assert r.exit_code == 0, r.output
    doc = json.loads((conv / f"{SPEC_ID}.json").read_text())
    assert len(doc["messages"]) == 1 and len(doc["compactions"]) == 1
    assert len(list(conv.glob(f"{SPEC_ID}.json.*.bak"))) == 1


def test_summary_counts_messages_gained_and_lost_without_contradiction(run, mermaid_demo):
    conv = _conv(mermaid_demo)
    snap = json.loads((conv / f"{SPEC_ID}.json").read_text())
    other = dict(snap, messages=[m for i, m in enumerate(snap["messages"]) if i != 2])
    conflict = conv / f"{SPEC_ID}.4242.0.conflict"
    conflict.write_text(make_fixtures.mermaid_snapshot(other))
    r = run("--root", mermaid_demo, "recover", SPEC_ID, "--use", conflict, "--yes")
    assert r.exit_code == 0, r.output
    assert "messages: 4 -> 3" in r.stdout
    assert "-1 messages no longer in the new document" in r.stdout
    assert "+" not in r.stdout.split("messages: 4 -> 3")[1].split("wrote")[0]


# --- checkpoint_seq of a snapshot written from a full fold ---------------------------------------


def test_full_fold_sets_checkpoint_seq_to_the_last_folded_seq(run, mermaid_demo):
    conv = _conv(mermaid_demo)
    snap = json.loads((conv / f"{SPEC_ID}.json").read_text())
    stale = dict(snap, messages=snap["messages"][:2], updated_at=snap["messages"][1]["timestamp"], checkpoint_seq=7)
    (conv / f"{SPEC_ID}.json").write_text(make_fixtures.mermaid_snapshot(stale))
    r = run("--root", mermaid_demo, "recover", SPEC_ID)
    assert r.exit_code == 0, r.output
    doc = json.loads((conv / f"{SPEC_ID}.json").read_text())
    events = eventlog.read_log_file(conv / f"{SPEC_ID}.jsonl").events
    assert len(doc["messages"]) == 4 and doc["checkpoint_seq"] == events[-1]["seq"] == 12
    # a 0.26+ resume (mermaid.md §9): the checkpoint plus the events after its watermark gives the same conversation
    replay = [e for e in events if e["seq"] > doc["checkpoint_seq"]]
    assert replay == []
    assert doc == dict(eventlog.fold(events), checkpoint_seq=12)


def test_a_0_25_snapshot_rebuilt_from_the_log_gets_no_checkpoint_seq(run, mermaid_demo):
    conv = _conv(mermaid_demo)
    (conv / f"{SPEC_ID}.json").unlink()
    assert run("--root", mermaid_demo, "recover", SPEC_ID).exit_code == 0
    assert (conv / f"{SPEC_ID}.json").read_bytes() == (SPEC / f"{SPEC_ID}.json").read_bytes()


# --- a log that folds to no messages --------------------------------------------------------------


def test_a_message_less_log_is_nothing_to_recover(run, mermaid_demo):
    conv = _conv(mermaid_demo)
    (conv / f"{SPEC_ID}.json").unlink()
    (conv / f"{SPEC_ID}.meta").unlink()
    ev = _lines(conv / f"{SPEC_ID}.jsonl")
    state = dict(ev[3], seq=1)
    _write_log(conv / f"{SPEC_ID}.jsonl", [ev[0], state])
    assert run("--root", mermaid_demo, "check").exit_code == 0
    before = fingerprint(mermaid_demo)
    r = run("--root", mermaid_demo, "recover", SPEC_ID)
    assert r.exit_code == 4, r.output
    assert "nothing to recover" in r.stderr and "no messages" in r.stderr
    assert fingerprint(mermaid_demo) == before
    assert not (conv / f"{SPEC_ID}.json").exists()
    assert run("--root", mermaid_demo, "check").exit_code == 0


def test_a_log_reset_to_no_messages_never_empties_the_snapshot(run, mermaid_demo):
    conv = _conv(mermaid_demo)
    log = conv / f"{SPEC_ID}.jsonl"
    ev = _lines(log)
    ev.append(
        {
            "event": {"at": "2026-08-10T14:05:00Z", "messages": [], "type": "reset"},
            "seq": len(ev),
            "ts": "2026-08-10T14:05:00Z",
            "v": 1,
        }
    )
    _write_log(log, ev)
    r = run("--root", mermaid_demo, "recover", SPEC_ID)
    assert r.exit_code == 3, r.output
    assert (conv / f"{SPEC_ID}.json").read_bytes() == (SPEC / f"{SPEC_ID}.json").read_bytes()


# --- 0.26+ <id>.<pid>.<n>.conflict.jsonl ------------------------------------------------------------


def _conflict_log(project):
    """A 0.26+ diverted log: a complete log (it was backfilled) plus this writer's continuation."""
    conv = _conv(project)
    ev = _lines(conv / f"{SPEC_ID}.jsonl")
    more = make_fixtures.mermaid_message("User", "run the full suite", "2026-08-10T14:05:10.000000001-04:00")
    ev.append({"event": {"message": more, "type": "message"}, "seq": len(ev), "ts": "2026-08-10T14:05:10Z", "v": 1})
    path = conv / f"{SPEC_ID}.4242.0.conflict.jsonl"
    _write_log(path, ev)
    path.chmod(0o600)
    return path


def test_check_calls_a_conflict_jsonl_a_conflict_not_a_bad_id(run, mermaid_demo):
    path = _conflict_log(mermaid_demo)
    r = run("--root", mermaid_demo, "check", "--format", "json")
    assert r.exit_code == 3
    doc = json.loads(r.stdout)
    assert [(f["code"], f["severity"], f["path"]) for f in doc["findings"]] == [("conflict", "warning", str(path))]
    assert (
        "diverted log" in doc["findings"][0]["reason"]
        and f"`samctl recover {SPEC_ID} --use {path}`" in doc["findings"][0]["reason"]
    )
    # the hint, pasted as it stands, adopts the file
    text = run("--root", mermaid_demo, "check").stderr
    hint = text.split("`")[1]
    assert hint == f"samctl --root {mermaid_demo} recover {SPEC_ID} --use {path}"
    assert run(*hint.split()[1:], "--yes").exit_code == 0


def test_recover_use_folds_a_conflict_jsonl(run, mermaid_demo):
    conv = _conv(mermaid_demo)
    path = _conflict_log(mermaid_demo)
    log_before = (conv / f"{SPEC_ID}.jsonl").read_bytes()
    r = run("--root", mermaid_demo, "recover", SPEC_ID, "--use", path, "--yes")
    assert r.exit_code == 0, r.output
    assert "+1 messages" in r.stdout
    doc = json.loads((conv / f"{SPEC_ID}.json").read_text())
    assert doc == eventlog.fold(_lines(path))
    assert len(doc["messages"]) == 5 and doc["messages"][-1]["content"] == "run the full suite"
    assert stat.S_IMODE((conv / f"{SPEC_ID}.json").stat().st_mode) == 0o600
    assert json.loads((conv / f"{SPEC_ID}.meta").read_text())["message_count"] == 5
    assert (conv / f"{SPEC_ID}.jsonl").read_bytes() == log_before  # the session's own log is left alone
    assert path.exists()


@pytest.mark.parametrize(
    "content,why",
    [
        (b"not json\n", "not a log mermaid would fold"),
        (None, "holds session 20260901_170000_250"),
    ],
)
def test_recover_use_refuses_a_conflict_jsonl_that_does_not_fold_to_this_session(run, mermaid_demo, content, why):
    conv = _conv(mermaid_demo)
    path = conv / f"{SPEC_ID}.4242.1.conflict.jsonl"
    path.write_bytes(content if content is not None else (conv / "20260901_170000_250.jsonl").read_bytes())
    before = fingerprint(mermaid_demo)
    r = run("--root", mermaid_demo, "recover", SPEC_ID, "--use", path, "--yes")
    assert r.exit_code == 2 and why in r.stderr
    assert fingerprint(mermaid_demo) == before


# --- a log problem recover cannot fix is exit 3, and says so ----------------------------------------


def _break(project, how):
    log = _conv(project) / f"{SPEC_ID}.jsonl"
    data = log.read_bytes()
    if how == "malformed":
        data = data.replace(b"HashMap", b"Hash\x00Map", 1)
    elif how == "newer-format":
        lines = data.split(b"\n")
        lines[5] = lines[5].replace(b'"v":1', b'"v":2')
        data = b"\n".join(lines)
    elif how == "headerless":
        data = data[data.index(b"\n") + 1 :]
    elif how == "invalid-utf8":
        data = data.replace(b"HashMap", b"Hash\xffMap", 1)
    log.write_bytes(data)


@pytest.mark.parametrize(
    "how,why",
    [
        ("malformed", "line 12 at byte 3639 is malformed"),
        ("newer-format", "line 6 was written by a newer mermaid (v=2): the whole log is refused"),
        ("headerless", "the first event is 'reset', not 'started'"),
        ("invalid-utf8", "line 12 at byte 3639 is not valid UTF-8"),
    ],
)
def test_recover_says_the_log_stays_broken_and_exits_3(run, mermaid_demo, how, why):
    _break(mermaid_demo, how)
    before = fingerprint(mermaid_demo)
    r = run("--root", mermaid_demo, "recover", SPEC_ID)
    assert r.exit_code == 3, r.output
    assert "log stays broken" in r.stderr and why in r.stderr and "nothing to do" not in r.output
    assert "samctl never rewrites an event log" in r.stderr and "invisible to a fold" in r.stderr
    assert _no_writes(before, fingerprint(mermaid_demo))
    dry = run("--root", mermaid_demo, "recover", SPEC_ID, "--dry-run")
    assert dry.exit_code == 3 and "log stays broken" in dry.stderr


def test_a_healthy_session_is_still_nothing_to_do(run, mermaid_demo):
    r = run("--root", mermaid_demo, "recover", SPEC_ID)
    assert r.exit_code == 0 and "nothing to do" in r.stdout and r.stderr == ""


# --- a session only its log knows ------------------------------------------------------------------


def test_check_reports_a_session_with_only_a_log(run, mermaid_demo):
    conv = _conv(mermaid_demo)
    (conv / f"{SPEC_ID}.json").unlink()
    (conv / f"{SPEC_ID}.meta").unlink()
    before = fingerprint(mermaid_demo)
    r = run("--root", mermaid_demo, "check", "--format", "json")
    assert r.exit_code == 3
    found = json.loads(r.stdout)["findings"]
    assert [(f["code"], f["severity"], f["conversation"]) for f in found] == [("log-only", "warning", SPEC_ID)]
    assert "4 messages" in found[0]["reason"] and f"samctl recover {SPEC_ID}" in found[0]["reason"]
    assert fingerprint(mermaid_demo) == before
    assert run("--root", mermaid_demo, "recover", SPEC_ID).exit_code == 0
    assert run("--root", mermaid_demo, "check").exit_code == 0


def test_recover_that_rebuilds_from_a_broken_log_says_it_stays_broken(run, mermaid_demo):
    conv = _conv(mermaid_demo)
    (conv / f"{SPEC_ID}.json").unlink()
    _break(mermaid_demo, "invalid-utf8")
    r = run("--root", mermaid_demo, "recover", SPEC_ID)
    assert "snapshot rebuilt with 3 messages" in r.stdout
    assert "log stays broken: line 12 at byte 3639 is not valid UTF-8" in r.stdout
    assert len(json.loads((conv / f"{SPEC_ID}.json").read_text())["messages"]) == 3


def test_recover_that_rebuilds_from_a_broken_log_exits_3(run, mermaid_demo):
    (_conv(mermaid_demo) / f"{SPEC_ID}.json").unlink()
    _break(mermaid_demo, "invalid-utf8")
    assert run("--root", mermaid_demo, "recover", SPEC_ID).exit_code == 3


def test_another_sessions_log_is_never_written_as_this_session(run, mermaid_demo):
    conv = _conv(mermaid_demo)
    (conv / f"{SPEC_ID}.json").unlink()
    (conv / f"{SPEC_ID}.jsonl").write_bytes((conv / "20260901_170000_250.jsonl").read_bytes())
    before = fingerprint(mermaid_demo)
    r = run("--root", mermaid_demo, "recover", SPEC_ID)
    assert r.exit_code == 1 and "nothing to recover" in r.stderr and "names session '20260901_170000_250'" in r.stderr
    assert fingerprint(mermaid_demo) == before
