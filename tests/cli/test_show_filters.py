"""show selects the same messages in every format, and says when a transcript comes from the log."""

import json
import re

import pytest

from tests.conftest import fingerprint

SAM_TRIP = "8B58CBC4-ACA7-4811-AE66-C01921690310"
SAM_BUDGET = "C2A1F0E4-3B5D-4E6F-8A9B-0C1D2E3F4A5B"
SPEC_ID = "20260810_140307_512"


def _json(run, root, *args):
    r = run("--root", root, "show", *args, "--format", "json")
    assert r.exit_code == 0, r.stderr
    return json.loads(r.stdout)


def _md_headings(run, root, *args):
    r = run("--root", root, "show", *args, "--format", "markdown", "--no-pager")
    assert r.exit_code == 0, r.stderr
    return re.findall(r"^## (\w+)", r.stdout, re.M)


def test_json_min_importance_keeps_what_markdown_keeps(run, sam_demo):
    doc = _json(run, sam_demo, SAM_TRIP, "--min-importance", "0.8")
    assert [(m["role"], m["importance"]) for m in doc["messages"]] == [("user", 0.9), ("assistant", 0.85)]
    assert doc["message_count"] == 5 and doc["exported_messages"] == 2
    assert [m["role"].capitalize() for m in doc["messages"]] == _md_headings(
        run, sam_demo, SAM_TRIP, "--min-importance", "0.8"
    )


def test_json_leaves_hidden_messages_out_unless_all(run, sam_demo):
    doc = _json(run, sam_demo, SAM_BUDGET)
    assert "Continue." not in [m["content"] for m in doc["messages"]]
    assert not any(m["hidden"] for m in doc["messages"])
    assert doc["message_count"] == 3 and doc["stored_messages"] == 4 and doc["exported_messages"] == 3
    assert len(_md_headings(run, sam_demo, SAM_BUDGET)) == 3
    doc = _json(run, sam_demo, SAM_BUDGET, "--all")
    assert [m["content"] for m in doc["messages"]][-1] == "Continue."
    assert doc["stored_messages"] == doc["exported_messages"] == 4


def test_json_all_and_min_importance_combine(run, sam_demo):
    doc = _json(run, sam_demo, SAM_BUDGET, "--all", "--min-importance", "0.7")
    assert [(m["content"][:9], m["hidden"]) for m in doc["messages"]] == [
        ("Draft the", False),
        ("Here is a", False),
        ("Continue.", True),
    ]
    assert doc["exported_messages"] == 3


def test_json_without_filters_matches_the_export_model(run, sam_demo):
    doc = _json(run, sam_demo, SAM_TRIP)
    r = run("--root", sam_demo, "export", SAM_TRIP, "--to", "json")
    assert r.exit_code == 0, r.stderr
    exported = json.loads(r.stdout)
    assert doc == exported


# -- a mermaid transcript read from its event log (README: exit 3, with a finding saying so) -----------


@pytest.mark.parametrize("damage", ["missing", "corrupt"])
@pytest.mark.parametrize("fmt", ["text", "markdown", "json"])
def test_show_from_the_log_is_partial_and_says_so(run, mermaid_demo, damage, fmt):
    snap = mermaid_demo / ".mermaid" / "conversations" / f"{SPEC_ID}.json"
    if damage == "missing":
        snap.unlink()
    else:
        snap.write_text("{ torn")
    before = fingerprint(mermaid_demo)
    r = run("--root", mermaid_demo, "show", SPEC_ID, "--format", fmt, "--no-pager")
    assert r.exit_code == 3, r.stderr
    assert "The test depends on HashMap iteration order" in r.stdout
    lines = [ln for ln in r.stderr.splitlines() if ": from-log: " in ln]
    assert lines == [
        f"warning: from-log: {snap.with_suffix('.jsonl')}: no readable snapshot "
        f"({snap.name}); this transcript is the event log's fold "
        f"(`samctl --root {mermaid_demo} recover {SPEC_ID}` rebuilds the snapshot)"
    ]
    assert ("bad-json" in r.stderr) == (damage == "corrupt")
    assert fingerprint(mermaid_demo) == before


@pytest.mark.parametrize("args", [(SPEC_ID, "--to", "json"), ("--all", "--to", "jsonl")])
def test_export_from_the_log_is_partial_and_says_so(run, mermaid_demo, args):
    """export, like show: a transcript rebuilt from the log is a finding and exit 3, also when the
    snapshot is simply missing (a cron export learns that one transcript was not read but rebuilt)."""
    snap = mermaid_demo / ".mermaid" / "conversations" / f"{SPEC_ID}.json"
    snap.unlink()
    r = run("--root", mermaid_demo, "export", *args)
    assert r.exit_code == 3, r.stderr
    assert "The test depends on HashMap iteration order" in r.stdout
    assert f"warning: from-log: {snap.with_suffix('.jsonl')}: no readable snapshot" in r.stderr


def test_show_from_the_snapshot_has_no_log_finding(run, mermaid_demo):
    r = run("--root", mermaid_demo, "show", SPEC_ID)
    assert r.exit_code == 0 and r.stderr == ""
