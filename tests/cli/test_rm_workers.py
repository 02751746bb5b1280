"""`rm` and `archive` of many conversations read and compress them in worker processes while this
process writes (``lifecycle._built``): the attic they leave is the one a single process leaves,
byte for byte, and a conversation that cannot be read, or whose archive does not read back, stays
whole in the store while the others move."""

from __future__ import annotations

import re
import shutil

import orjson
import pytest

from samctl.attic import lifecycle, tarzst
from samctl.stores import open_store
from tests.cli.test_lifecycle import API, MID, SID, attic_of, conv, files_state
from tests.conftest import pools_with

JOBS = {"one process": "1", "workers": "2"}


@pytest.fixture
def pools(monkeypatch):
    """Workers from two conversations on, one to a unit of work; counts the pools made."""
    return pools_with(monkeypatch, {(lifecycle, "PARALLEL_PACK"): 2, (lifecycle, "PACK_PART"): 1})


def _attic(root) -> dict:
    """Each entry by conversation id: its archive's bytes and its manifest without the time it was
    made, the store's folder written as ROOT."""
    out = {}
    for man in attic_of(root).glob("*.manifest.json"):
        doc = orjson.loads(man.read_bytes().replace(str(root).encode(), b"ROOT"))
        tar = man.with_name(doc["tar"]["name"]).read_bytes()
        out[doc["id"]] = (
            tar,
            {k: v for k, v in doc.items() if k not in ("when", "when_ts", "tar")},
            {k: v for k, v in doc["tar"].items() if k != "name"},
        )
    return out


def _unstamped(text: str) -> str:
    """``text`` without the time in each entry's name (the two runs may fall in different seconds)."""
    return re.sub(r"\.\d{8}T\d{6}Z", ".STAMP", text)


@pytest.mark.parametrize("which", ["mermaid", "sam"])
def test_workers_archive_what_one_process_does(run, which, mermaid_demo, sam_demo, pools, tmp_path):
    root = mermaid_demo if which == "mermaid" else sam_demo
    copy = tmp_path / "copy"
    shutil.copytree(root, copy, symlinks=True)  # (copy2: the same mtimes, so the same tar headers)
    ids = open_store(str(root)).all_ids() if which == "mermaid" else [SID, API]  # (not the pinned one, nor a topic)
    one = run("--root", root, "rm", "--yes", *ids, env={"SAMCTL_JOBS": "1"})
    assert pools == []
    two = run("--root", copy, "rm", "--yes", *ids, env={"SAMCTL_JOBS": "2"})
    assert len(pools) == 1 and pools[0][0] == 2  # one pool, of two workers
    assert (one.exit_code, two.exit_code) == (0, 0), (one.stderr, two.stderr)
    assert _unstamped(two.stdout.replace(str(copy), str(root))) == _unstamped(one.stdout)
    assert len(_attic(root)) == len(ids) >= 2 and _attic(copy) == _attic(root)
    assert open_store(str(copy)).all_ids() == open_store(str(root)).all_ids()
    assert run("--root", copy, "attic", "--verify").exit_code == 0


def _fail_reading(monkeypatch, exc):
    """Reading MID's files into a tar raises ``exc`` (in a worker as here: forked workers are patched too)."""
    real = tarzst.tar_in_memory

    def tar_in_memory(store, paths):
        if any(p.name.startswith(MID) for p in paths):
            raise exc
        return real(store, paths)

    monkeypatch.setattr(tarzst, "tar_in_memory", tar_in_memory)


@pytest.mark.parametrize("jobs", JOBS.values(), ids=JOBS.keys())
@pytest.mark.parametrize(
    "failure, said",
    [
        ("changed", "changed while samctl was archiving it; nothing was moved"),
        ("unreadable", "Permission denied"),
    ],
)
def test_a_conversation_that_cannot_be_read_stays_and_the_others_move(
    run, mermaid_demo, pools, monkeypatch, jobs, failure, said
):
    path = conv(mermaid_demo) / f"{MID}.jsonl"
    _fail_reading(
        monkeypatch,
        tarzst.FileChanged(str(path)) if failure == "changed" else PermissionError(13, "Permission denied", str(path)),
    )
    ids = open_store(str(mermaid_demo)).all_ids()
    before = files_state(mermaid_demo, MID)
    r = run("--root", mermaid_demo, "rm", "--yes", *ids, env={"SAMCTL_JOBS": jobs})
    assert r.exit_code == 3 and MID in r.stderr and said in r.stderr, r.stderr
    assert len(pools) == (jobs != "1")
    assert open_store(str(mermaid_demo)).all_ids() == [MID] and files_state(mermaid_demo, MID) == before
    assert sorted(_attic(mermaid_demo)) == sorted(set(ids) - {MID})
    leftovers = [p.name for p in attic_of(mermaid_demo).iterdir() if p.name.endswith(".tmp") or MID in p.name]
    assert leftovers == [] and list((attic_of(mermaid_demo) / ".journal").iterdir()) == []


def _archive_on_disk_flipped(monkeypatch):
    """MID's archive changes on disk between its write and its read-back."""
    from samctl.fs import writing

    real = writing.commit_temp

    def commit_then_flip(tmp, path, sync_dir=True):
        real(tmp, path, sync_dir)
        if str(path).endswith(".tar.zst") and MID in str(path):
            data = bytearray(open(path, "rb").read())
            data[len(data) // 2] ^= 0x20
            with open(path, "wb") as f:
                f.write(data)

    monkeypatch.setattr(writing, "commit_temp", commit_then_flip)


def _compressed_otherwise(monkeypatch):
    """MID's compressed bytes are not those of its tar (what the check after compressing is for)."""
    real = tarzst.compressor

    class Other:
        def __init__(self, c):
            self.c = c

        def compress(self, data):
            return self.c.compress(data.replace(MID.encode(), b"20000101_000000_000", 1))

    def compressor(level, threads):
        return Other(real(level, threads))

    monkeypatch.setattr(tarzst, "compressor", compressor)


@pytest.mark.parametrize("jobs", JOBS.values(), ids=JOBS.keys())
@pytest.mark.parametrize(
    "damage, why",
    [
        (_archive_on_disk_flipped, "the archive on disk is not the bytes written"),
        (_compressed_otherwise, "the archive does not decompress to the tar written"),
    ],
)
def test_an_archive_that_does_not_read_back_as_built_is_not_committed(
    run, mermaid_demo, pools, monkeypatch, jobs, damage, why
):
    damage(monkeypatch)
    ids = open_store(str(mermaid_demo)).all_ids()
    before = files_state(mermaid_demo, MID)
    r = run("--root", mermaid_demo, "rm", "--yes", *ids, env={"SAMCTL_JOBS": jobs})
    assert r.exit_code == 3, r.stderr
    assert f"the archive of {MID} did not read back as written ({why}); nothing was moved" in r.stderr, r.stderr
    assert open_store(str(mermaid_demo)).all_ids() == [MID] and files_state(mermaid_demo, MID) == before
    assert sorted(_attic(mermaid_demo)) == sorted(set(ids) - {MID})
    assert not [p for p in attic_of(mermaid_demo).iterdir() if MID in p.name]


def test_a_worker_killed_mid_batch_loses_nothing_and_the_next_run_finishes(run, mermaid_demo, pools, monkeypatch):
    """The OOM killer takes a worker: the command fails saying so, every conversation is whole in
    the store or the attic, and running it again finishes the move."""
    import os
    import signal

    real = tarzst.tar_in_memory
    parent = os.getpid()

    def tar_in_memory(store, paths):
        if os.getpid() != parent and any(p.name.startswith(MID) for p in paths):
            os.kill(os.getpid(), signal.SIGKILL)
        return real(store, paths)

    monkeypatch.setattr(tarzst, "tar_in_memory", tar_in_memory)
    ids = open_store(str(mermaid_demo)).all_ids()
    before = {cid: files_state(mermaid_demo, cid) for cid in ids}
    r = run("--root", mermaid_demo, "rm", "--yes", *ids, env={"SAMCTL_JOBS": "2"})
    assert r.exit_code == 1 and "a worker process stopped before it finished its work" in r.stderr, r.stderr
    assert "internal error" not in r.stderr
    left = open_store(str(mermaid_demo)).all_ids()
    assert MID in left and files_state(mermaid_demo, MID) == before[MID]
    assert sorted(set(left) | set(_attic(mermaid_demo))) == sorted(ids)  # each one somewhere, whole
    for cid in left:
        assert files_state(mermaid_demo, cid) == before[cid]
    r = run("--root", mermaid_demo, "rm", "--yes", *left, env={"SAMCTL_JOBS": "1"})
    assert r.exit_code == 0, r.stderr
    assert open_store(str(mermaid_demo)).all_ids() == [] and sorted(_attic(mermaid_demo)) == sorted(ids)
    assert list((attic_of(mermaid_demo) / ".journal").iterdir()) == []
    assert run("--root", mermaid_demo, "attic", "--verify").exit_code == 0
