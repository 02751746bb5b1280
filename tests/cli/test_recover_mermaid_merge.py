"""mermaid recover and check where the snapshot and the log say the same thing differently: one
instant written in two offsets (mermaid re-saves every loaded timestamp in the reader's offset,
mermaid.md §2.7), and compaction records older than a backfilled log (mermaid.md §4.3: "the snapshot stays
authoritative")."""

import json
import re

from tests.conftest import fingerprint
from tests.conftest import make_fixtures as mf

CID = "20260810_140307_512"
CREATED = "2026-08-10T14:03:07.512347811-04:00"


def _conv(project):
    c = project / ".mermaid" / "conversations"
    c.mkdir(parents=True, exist_ok=True)
    c.chmod(0o700)
    return c


def _write(conv, doc, log):
    (conv / f"{CID}.json").write_text(mf.mermaid_snapshot(doc))
    (conv / f"{CID}.meta").write_text(mf.mermaid_meta(doc))
    (conv / f"{CID}.jsonl").write_text(log)
    for f in conv.iterdir():
        f.chmod(0o600)


def _winter(s):
    """The same instant as a -04:00 summer time, written in -05:00 (after the clocks went back)."""
    return re.sub(r"T(\d\d):(\d\d:\d\d(?:\.\d+)?)-04:00", lambda m: f"T{int(m[1]) - 1:02d}:{m[2]}-05:00", s)


def _dst_session(project, snapshot_has_last: bool):
    """Summer: two messages, saved and backfilled into the log.  Winter: mermaid (now at -05:00) loads
    the snapshot, so its two old timestamps are re-saved as -05:00, and appends two more messages; with
    ``snapshot_has_last`` False it crashed before saving the second."""
    conv = _conv(project)
    summer = [
        mf.mermaid_message("User", "summer question", "2026-08-10T14:03:10.5-04:00"),
        mf.mermaid_message("Assistant", "summer answer", "2026-08-10T14:03:11.5-04:00"),
    ]
    doc = mf.mermaid_doc(CID, "summer question", summer, CREATED)
    log = mf.mermaid_backfill_log(doc, "2026-08-10T14:03:11.6-04:00")
    m3 = mf.mermaid_message("User", "winter follow-up", "2026-11-20T09:00:00.5-05:00")
    m4 = mf.mermaid_message("Assistant", "winter answer", "2026-11-20T09:00:01.5-05:00")
    n = log.count("\n")
    log += mf.mermaid_line(n, "2026-11-20T09:00:00.6-05:00", {"type": "message", "message": m3})
    log += mf.mermaid_line(n + 1, "2026-11-20T09:00:01.6-05:00", {"type": "message", "message": m4})
    saved = [m3, m4] if snapshot_has_last else [m3]
    winter = dict(
        doc,
        created_at=_winter(CREATED),
        updated_at=saved[-1]["timestamp"],
        input_history=["summer question"],
        messages=[dict(m, timestamp=_winter(m["timestamp"])) for m in summer] + saved,
    )
    _write(conv, winter, log)
    return conv


def test_one_instant_in_two_offsets_is_no_divergence(run, tmp_path):
    conv = _dst_session(tmp_path, snapshot_has_last=True)
    before = fingerprint(tmp_path)
    r = run("--root", tmp_path, "check")
    assert r.exit_code == 0, r.output
    assert "log-diverged" not in r.stderr
    r = run("--root", tmp_path, "recover", CID)
    assert r.exit_code == 0, r.output
    assert "snapshot kept" not in r.stderr and "lacks" not in r.stderr
    assert fingerprint(tmp_path) == before
    assert not list(conv.glob("*.bak"))


def test_a_message_only_the_log_has_comes_back_across_an_offset_change(run, tmp_path):
    conv = _dst_session(tmp_path, snapshot_has_last=False)
    r = run("--root", tmp_path, "recover", CID)
    assert r.exit_code == 0, r.output
    doc = json.loads((conv / f"{CID}.json").read_text())
    assert [m["content"] for m in doc["messages"]] == [
        "summer question",
        "summer answer",
        "winter follow-up",
        "winter answer",
    ]
    assert doc["updated_at"] == "2026-11-20T09:00:01.5-05:00"


def _compaction(i, at):
    return {
        "after_tokens": 3120,
        "archive_path": None,
        "archived_message_count": 38,
        "before_tokens": 91554,
        "created_at": at,
        "duration_secs": 6.25,
        "focus": None,
        "id": f"cmp_{i}",
        "preserved_message_count": 4,
        "preserved_turn_count": 1,
        "review_error": None,
        "review_status": "reviewed",
        "summary_tokens": 1410,
        "trigger": "auto_threshold",
    }


def test_compaction_records_older_than_a_backfilled_log_are_kept_before_the_logs_own(run, tmp_path):
    conv = _conv(tmp_path)
    chk1 = mf.mermaid_message("System", "CHECKPOINT 1", "2026-08-10T15:00:00-04:00", kind="context_checkpoint")
    m1 = mf.mermaid_message("User", "after the first compaction", "2026-08-10T15:01:00-04:00")
    snap = mf.mermaid_doc(
        CID,
        "Fix it",
        [chk1, m1],
        CREATED,
        compactions=[_compaction(1, "2026-08-10T15:00:00-04:00")],
        input_history=["after the first compaction"],
    )
    log = mf.mermaid_backfill_log(snap, "2026-08-10T15:01:00.5-04:00")  # the log starts after cmp_1
    n = log.count("\n")
    chk2 = mf.mermaid_message("System", "CHECKPOINT 2", "2026-08-10T16:00:00-04:00", kind="context_checkpoint")
    m3 = mf.mermaid_message("User", "after the second compaction", "2026-08-10T16:01:00-04:00")
    log += mf.mermaid_line(
        n,
        "2026-08-10T16:00:00.1-04:00",
        {
            "type": "compaction",
            "at": "2026-08-10T16:00:00-04:00",
            "record": _compaction(2, "2026-08-10T16:00:00-04:00"),
            "replacement": [chk2],
        },
    )
    log += mf.mermaid_line(n + 1, "2026-08-10T16:01:00.1-04:00", {"type": "message", "message": m3})
    _write(conv, snap, log)  # mermaid crashed before saving the second compaction
    r = run("--root", tmp_path, "recover", CID)
    assert r.exit_code == 0, r.output
    doc = json.loads((conv / f"{CID}.json").read_text())
    assert [c["id"] for c in doc["compactions"]] == ["cmp_1", "cmp_2"]
    assert [m["content"] for m in doc["messages"]] == ["CHECKPOINT 2", "after the second compaction"]


def test_the_summary_counts_only_the_message_gained_not_the_ones_rewritten_in_another_offset(run, tmp_path):
    _dst_session(tmp_path, snapshot_has_last=False)
    r = run("--root", tmp_path, "recover", CID, "--dry-run")
    assert r.exit_code == 0, r.output
    assert "+1 messages not in the old document" in r.output + r.stderr
    assert "no longer in the new document" not in r.output + r.stderr
    assert "created_at changed" not in r.output + r.stderr


def test_a_snapshot_timestamp_with_ten_fraction_digits_loads_as_mermaid_loads_it(run, tmp_path):
    conv = _conv(tmp_path)
    msgs = [
        mf.mermaid_message("User", "ten digit fraction", "2026-08-10T14:03:21.1049382011-04:00"),
        mf.mermaid_message("Assistant", "ok", "2026-08-10T14:03:22-04:00"),
    ]
    mf.write_mermaid(conv, mf.mermaid_doc(CID, "ten digit fraction", msgs, CREATED), log=True)
    r = run("--root", tmp_path, "show", CID)
    assert r.exit_code == 0, r.output
    assert "ten digit fraction" in r.output and "ok" in r.output
    r = run("--root", tmp_path, "check")
    assert r.exit_code == 0, r.output


REDACTED = "set OPENAI_API_KEY=[REDACTED] in env"
SECRET = "set OPENAI_API_KEY=sk-abcdefghijklmnop1234 in env"


def _redacted_session(tmp_path, meta_count_off_by=0):
    """The snapshot is redacted, the sidecar (written from the live session) is not (mermaid.md §3.2)."""
    conv = _conv(tmp_path)
    msgs = [
        mf.mermaid_message("User", REDACTED, "2026-08-10T14:03:10-04:00"),
        mf.mermaid_message("Assistant", "done", "2026-08-10T14:03:11-04:00"),
    ]
    mf.write_mermaid(conv, mf.mermaid_doc(CID, REDACTED, msgs, CREATED))
    meta = json.loads((conv / f"{CID}.meta").read_text())
    meta["title"], meta["message_count"] = SECRET, meta["message_count"] + meta_count_off_by
    (conv / f"{CID}.meta").write_text(json.dumps(meta, separators=(",", ":")))
    return conv


def test_recover_leaves_a_sidecar_whose_title_the_snapshot_only_redacted(run, tmp_path):
    _redacted_session(tmp_path)
    before = fingerprint(tmp_path)
    r = run("--root", tmp_path, "recover", CID)
    assert r.exit_code == 0, r.output
    assert r.output.startswith("nothing to do") and "sidecar rebuilt" not in r.output
    assert fingerprint(tmp_path) == before


def test_a_sidecar_rebuilt_by_recover_or_check_fix_keeps_its_unredacted_title(run, tmp_path):
    conv = _redacted_session(tmp_path, meta_count_off_by=5)  # stale: it must be rebuilt
    r = run("--root", tmp_path, "recover", CID)
    assert r.exit_code == 0 and ".meta sidecar rebuilt" in r.output, r.output
    meta = json.loads((conv / f"{CID}.meta").read_text())
    assert meta["title"] == SECRET and meta["message_count"] == 2
    meta["message_count"] = 9
    (conv / f"{CID}.meta").write_text(json.dumps(meta, separators=(",", ":")))
    r = run("--root", tmp_path, "check", "--fix")
    assert r.exit_code == 0, r.output
    meta = json.loads((conv / f"{CID}.meta").read_text())
    assert meta["title"] == SECRET and meta["message_count"] == 2


def test_meta_title_keeps_only_a_title_the_redaction_explains():
    from samctl.stores.mermaid.encode import meta_title

    assert meta_title(REDACTED, SECRET) == SECRET
    assert (
        meta_title("key [REDACTED PRIVATE KEY] and [REDACTED]", "key -----BEGIN x----- and tok")
        == "key -----BEGIN x----- and tok"
    )
    assert meta_title(REDACTED, "another title") == REDACTED  # renamed since: the snapshot's
    assert meta_title("plain title", "other") == "plain title"  # no redaction: the snapshot's
    assert meta_title(REDACTED, None) == REDACTED
    assert meta_title(REDACTED, "set OPENAI_API_KEY= in env") == REDACTED  # a redaction replaced something


def test_meta_title_is_linear_on_a_hostile_sidecar_title_and_ignores_an_all_marker_title():
    from samctl.stores.mermaid.encode import meta_title

    hostile = "[REDACTED]a" * 8 + "[REDACTED]b"
    assert meta_title(hostile, "a" * 100_000) == hostile  # no match: a backtracking regex would hang here for hours
    assert meta_title("[REDACTED]", "Session 2026-08-10 14:03") == "[REDACTED]"
    assert meta_title("[REDACTED] [REDACTED]", "sk-1 sk-2") == "[REDACTED] [REDACTED]"
    assert meta_title("a[REDACTED]b[REDACTED]c", "aXbYc") == "aXbYc"
    assert meta_title("a[REDACTED]b[REDACTED]c", "abYc") == "a[REDACTED]b[REDACTED]c"  # a marker stands for something
    assert meta_title("x=[REDACTED]", "x=") == "x=[REDACTED]"
    assert meta_title("x [REDACTED", "x [REDACTEDyx [REDACTED") == "x [REDACTED"  # no whole marker
    assert meta_title("[REDACTED] key", "sk-abc key") == "sk-abc key"


def test_a_time_inside_a_tool_calls_arguments_is_compared_as_written(run, tmp_path):
    """Only mermaid's own timestamp fields are re-saved in another offset; a tool's arguments are
    written verbatim, so the same instant spelled another way there is a real difference."""
    conv = _conv(tmp_path)

    def msgs(at):
        return [
            mf.mermaid_message("User", "remind me at 2pm", "2026-08-10T14:03:10-04:00"),
            mf.mermaid_message(
                "Assistant",
                "scheduled",
                "2026-08-10T14:03:11-04:00",
                tool_calls=[{"function": {"arguments": {"at": at}, "name": "schedule"}, "id": "call_1"}],
            ),
        ]

    snap = mf.mermaid_doc(CID, "remind me at 2pm", msgs("2026-08-10T14:00:00-04:00"), CREATED)
    logdoc = mf.mermaid_doc(CID, "remind me at 2pm", msgs("2026-08-10T18:00:00Z"), CREATED)
    (conv / f"{CID}.json").write_text(mf.mermaid_snapshot(snap))
    (conv / f"{CID}.meta").write_text(mf.mermaid_meta(snap))
    (conv / f"{CID}.jsonl").write_text(mf.mermaid_backfill_log(logdoc, logdoc["updated_at"]))
    r = run("--root", tmp_path, "check")
    assert r.exit_code == 3 and "log-diverged" in r.stderr and "messages" in r.stderr, r.output


def test_a_compaction_record_saved_again_without_some_fields_is_one_record():
    from samctl.stores.mermaid.recover import _same_record

    full = _compaction(1, "2026-08-10T15:00:00-04:00")
    slim = {k: v for k, v in full.items() if k not in ("review_status", "review_error")}
    assert _same_record(full, slim) and not _same_record(full, _compaction(2, "2026-08-10T15:00:00-04:00"))
