"""The first `samctl ls` of a big store (or one with --no-cache) reads the files its cache has
nothing for (mermaid's sidecars and snapshots, SAM's conversation.json files) in worker processes:
the listing, its findings and the cache it saves are the ones a single process gives."""

from __future__ import annotations

import os

import pytest

from samctl.stores.mermaid import store as mermaid_store
from samctl.stores.sam import store as sam_store
from tests.conftest import fingerprint, pools_with


@pytest.fixture
def pools(monkeypatch):
    """Workers from one cache miss on, one file per unit of work; counts the pools made."""
    return pools_with(
        monkeypatch, {(mod, name): 1 for mod in (mermaid_store, sam_store) for name in ("PARALLEL_SCAN", "SCAN_PART")}
    )


def _cache_files(folder):
    out = {}
    for dirpath, _, files in os.walk(folder):
        for f in files:
            with open(os.path.join(dirpath, f), "rb") as fh:
                out[os.path.relpath(os.path.join(dirpath, f), folder)] = fh.read()
    return out


def _age(root):
    """Files written a while ago: a listing caches only what is not racy (as git's index does)."""
    for dirpath, _, files in os.walk(root):
        for f in files:
            os.utime(os.path.join(dirpath, f), (1.7e9, 1.7e9), follow_symlinks=False)


@pytest.mark.parametrize("which", ["mermaid", "sam"])
@pytest.mark.parametrize("fmt", ["jsonl", "table"])
def test_workers_list_what_one_process_does(run, which, fmt, mermaid_broken, sam_broken, pools, monkeypatch, tmp_path):
    root, _ = mermaid_broken if which == "mermaid" else sam_broken
    _age(root)
    before = fingerprint(root)
    one = run("--root", root, "--no-cache", "ls", "--format", fmt, env={"SAMCTL_JOBS": "1"})
    assert pools == []
    two = run("--root", root, "--no-cache", "ls", "--format", fmt, env={"SAMCTL_JOBS": "2"})
    # mermaid: the sidecars, then the snapshots no sidecar listed; SAM: the conversation.json files
    assert len(pools) == (2 if which == "mermaid" else 1)
    assert (two.exit_code, two.stdout, two.stderr) == (one.exit_code, one.stdout, one.stderr)
    assert one.exit_code == 3 and one.stderr.count("error: ") >= 3 and len(one.stdout.splitlines()) >= 3
    assert fingerprint(root) == before

    # the cache a parallel scan saves is the one a serial scan saves, and a warm listing reads the same
    caches = {}
    for jobs in ("1", "2"):
        folder = tmp_path / f"cache-{jobs}"
        monkeypatch.setenv("SAMCTL_CACHE_DIR", str(folder))
        cold = run("--root", root, "ls", "--format", fmt, env={"SAMCTL_JOBS": jobs})
        warm = run("--root", root, "ls", "--format", fmt, env={"SAMCTL_JOBS": jobs})
        assert (cold.stdout, cold.stderr) == (warm.stdout, warm.stderr) == (one.stdout, one.stderr)
        caches[jobs] = _cache_files(folder)
    assert caches["1"] == caches["2"] and caches["1"]
    assert fingerprint(root) == before


@pytest.mark.parametrize("which", ["mermaid", "sam"])
def test_a_few_cache_misses_are_read_here(run, which, mermaid_broken, sam_broken, monkeypatch):
    root, _ = mermaid_broken if which == "mermaid" else sam_broken
    made = pools_with(monkeypatch, {})
    r = run("--root", root, "--no-cache", "ls", env={"SAMCTL_JOBS": "2"})
    assert r.exit_code == 3 and made == []  # fewer than PARALLEL_SCAN files to read: no worker is worth starting
