"""`restore` of many small entries has worker processes extract and check them into the batch's
staging folder (``restore._stage_all``) while this process does every other step: the store it
leaves is the one a single process leaves, byte for byte, mode and mtime; ids are rewritten
there too (``--as-new``).  (A damaged entry among them: test_lifecycle's
``test_restore_many_reports_a_damaged_entry_and_restores_the_rest``; stopped at every write
step: test_faults.)"""

from __future__ import annotations

import shutil

import orjson
import pytest

from samctl.attic import restore
from samctl.stores import open_store
from tests.cli.test_lifecycle import API, SID, attic_of, conv
from tests.conftest import fingerprint, pools_with


@pytest.fixture
def pools(monkeypatch):
    """Workers from two entries on, one to a unit of work; counts the pools made."""
    return pools_with(monkeypatch, {(restore, "PARALLEL_STAGE"): 2, (restore, "STAGE_PART"): 1})


def _removed(run, root, which) -> list:
    ids = open_store(str(root)).all_ids() if which == "mermaid" else [SID, API]  # (not the pinned one, nor a topic)
    assert run("--root", root, "rm", "--yes", *ids, env={"SAMCTL_JOBS": "1"}).exit_code == 0
    return ids


def _store_state(root) -> dict:
    return {k: v for k, v in fingerprint(conv(root)).items() if k != "."}


@pytest.mark.parametrize("which", ["mermaid", "sam"])
def test_workers_restore_what_one_process_does(run, which, mermaid_demo, sam_demo, pools, tmp_path):
    root = mermaid_demo if which == "mermaid" else sam_demo
    before = _store_state(root)
    ids = _removed(run, root, which)
    copy = tmp_path / "copy"
    shutil.copytree(root, copy, symlinks=True)
    one = run("--root", root, "restore", *ids, env={"SAMCTL_JOBS": "1"})
    assert pools == []
    two = run("--root", copy, "restore", *ids, env={"SAMCTL_JOBS": "2"})
    assert len(pools) == 1 and pools[0][0] == 2  # one pool, of two workers
    assert (one.exit_code, two.exit_code) == (0, 0), (one.stderr, two.stderr)
    assert two.stdout.replace(str(copy), str(root)) == one.stdout
    assert _store_state(copy) == _store_state(root) == before
    for r in (root, copy):
        assert [p for p in attic_of(r).iterdir() if not p.name.startswith(".")] == []
        assert list((attic_of(r) / ".staging").iterdir()) == list((attic_of(r) / ".journal").iterdir()) == []
        assert run("--root", r, "check").exit_code == 0


@pytest.mark.parametrize("which", ["mermaid", "sam"])
def test_workers_rewrite_ids_for_as_new(run, which, mermaid_demo, sam_demo, pools):
    root = mermaid_demo if which == "mermaid" else sam_demo
    ids = _removed(run, root, which)
    r = run("--root", root, "restore", "--as-new", "--format", "json", *ids, env={"SAMCTL_JOBS": "2"})
    assert r.exit_code == 0, r.stderr
    assert len(pools) == 1
    new = [it["id"] for it in orjson.loads(r.stdout)["items"]]
    assert len(set(new)) == len(ids) and set(new).isdisjoint(ids)
    store = open_store(str(root))
    assert set(new) <= set(store.all_ids())
    for cid in new:
        doc = orjson.loads(
            (conv(root) / (f"{cid}.json" if which == "mermaid" else f"{cid}/conversation.json")).read_bytes()
        )
        assert doc["id"] == cid
    assert run("--root", root, "check").exit_code == 0
    assert list((attic_of(root) / ".staging").iterdir()) == []


def test_big_entries_stay_with_the_helper_thread(run, sam_demo, pools, monkeypatch):
    """Entries bigger than STAGE_SMALL on average are extracted here, read ahead on the helper thread."""
    monkeypatch.setattr(restore, "STAGE_SMALL", 1)
    ids = _removed(run, sam_demo, "sam")
    r = run("--root", sam_demo, "restore", *ids, env={"SAMCTL_JOBS": "2"})
    assert r.exit_code == 0, r.stderr
    assert pools == []
