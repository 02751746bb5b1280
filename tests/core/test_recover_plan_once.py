"""recover plans once when nothing changed between its plan and its lock, and again when
something did: a big salvage costs seconds, and the files may move on while it waits."""

from __future__ import annotations

import json
import os

import pytest

from samctl.core import recover as core_recover
from samctl.stores import open_store
from samctl.stores.mermaid import recover as mermaid_recover
from samctl.stores.sam import recover as sam_recover

SAM_ID = "8B58CBC4-ACA7-4811-AE66-C01921690310"
MERMAID_ID = "20260810_140307_512"


@pytest.fixture
def counted(monkeypatch):
    calls = []

    def wrap(module):
        real = module.plan_recovery

        def plan_recovery(*a, **k):
            calls.append(a[1])
            return real(*a, **k)

        monkeypatch.setattr(module, "plan_recovery", plan_recovery)

    wrap(sam_recover)
    wrap(mermaid_recover)
    return calls


def _between_plan_and_lock(monkeypatch, change):
    """Run ``change`` where recover checks that the app is idle: after its first plan, before its lock."""
    real = core_recover.ensure_app_idle

    def idle(*a, **k):
        change()
        return real(*a, **k)

    monkeypatch.setattr(core_recover, "ensure_app_idle", idle)


def _torn_sam(sam_demo):
    p = sam_demo / "conversations" / SAM_ID / "conversation.json"
    whole = json.loads(p.read_text())
    p.write_bytes(p.read_bytes()[:-200])
    return p, whole


def test_sam_unchanged_inputs_are_planned_once(sam_demo, counted):
    p, _ = _torn_sam(sam_demo)
    plan = core_recover.recover(open_store(str(sam_demo), cache=False), SAM_ID)
    assert counted == [SAM_ID] and plan.new_bytes is not None
    assert json.loads(p.read_text())["id"] == SAM_ID


def test_sam_a_tmp_written_after_the_plan_is_planned_again_and_used(sam_demo, counted, monkeypatch):
    p, whole = _torn_sam(sam_demo)
    newer = dict(whole, title="Saved by SAM meanwhile")
    tmp = p.with_name("conversation.json.tmp")
    _between_plan_and_lock(monkeypatch, lambda: tmp.write_text(json.dumps(newer)))
    core_recover.recover(open_store(str(sam_demo), cache=False), SAM_ID)
    assert counted == [SAM_ID, SAM_ID]
    assert json.loads(p.read_text())["title"] == "Saved by SAM meanwhile"  # a whole .tmp is the newer save
    assert not tmp.exists()  # kept as a .bak: its content is in the file


def test_mermaid_unchanged_inputs_are_planned_once(mermaid_demo, counted):
    conv = mermaid_demo / ".mermaid" / "conversations"
    (conv / f"{MERMAID_ID}.json").unlink()
    core_recover.recover(open_store(str(mermaid_demo), cache=False), MERMAID_ID)
    assert counted == [MERMAID_ID] and (conv / f"{MERMAID_ID}.json").exists()


def test_mermaid_a_log_touched_after_the_plan_is_planned_again(mermaid_demo, counted, monkeypatch):
    conv = mermaid_demo / ".mermaid" / "conversations"
    (conv / f"{MERMAID_ID}.json").unlink()
    log = conv / f"{MERMAID_ID}.jsonl"
    st = log.stat()
    _between_plan_and_lock(monkeypatch, lambda: os.utime(log, ns=(st.st_atime_ns, st.st_mtime_ns + 1)))
    core_recover.recover(open_store(str(mermaid_demo), cache=False), MERMAID_ID)
    assert counted == [MERMAID_ID, MERMAID_ID] and (conv / f"{MERMAID_ID}.json").exists()
