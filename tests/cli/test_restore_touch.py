"""restore --touch: the restored files' mtimes become now; when that fails the conversation is still restored,
with a warning, and the report names every conversation."""

from __future__ import annotations

import json

MERMAID_ID = "20260812_091500_004"


def test_restore_touch_that_fails_still_restores_and_warns(run, mermaid_demo, monkeypatch):
    from samctl.attic import restore

    assert run("--root", mermaid_demo, "rm", MERMAID_ID).exit_code == 0
    snapshot = mermaid_demo / ".mermaid" / "conversations" / f"{MERMAID_ID}.json"
    assert not snapshot.exists()

    def refuse(store, r):
        raise PermissionError(1, "Operation not permitted")

    monkeypatch.setattr(restore, "_touch", refuse)
    r = run("--root", mermaid_demo, "restore", "--touch", MERMAID_ID, "--format", "json")
    assert "Traceback" not in r.stderr
    assert snapshot.exists()
    assert r.stdout, (r.stderr, r.exception)
    doc = json.loads(r.stdout)
    assert [(it["id"], it["action"]) for it in doc["items"]] == [(MERMAID_ID, "restored")]
    assert [f["code"] for f in doc["findings"]] == ["not-touched"]
    assert "mtime could not be set" in doc["findings"][0]["reason"]
    assert r.exit_code == 0  # (restored: the mtime is a warning, not a conversation left undone)
