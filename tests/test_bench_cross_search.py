"""bench_cross_search.py's own parts: it finds the stores of its synthetic home as `samctl search` without
--root does, and narrows them to a query's store:NAME (the benchmark itself is run by hand, not here)."""

from __future__ import annotations

import os

from bench import bench_cross_ls as bx
from bench import bench_cross_search as bxs


def test_finds_every_store_of_the_synthetic_home_and_narrows_to_store_name(tmp_path, monkeypatch):
    home = bx.build(tmp_path, 2, 3, 2, 2)
    for k in bxs.SCRUB:
        monkeypatch.delenv(k, raising=False)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("SAMCTL_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("SAMCTL_ASSUME_SAM_RUNNING", "0")
    monkeypatch.chdir(tmp_path)
    found = bxs.find_stores()
    assert sorted(s.name for s in found) == ["claude-code", "codex", "mermaid", "sam"]
    assert all(os.path.isdir(s.conv_dir) for s in found)
    assert [s.name for s in bxs.union_opener("store:codex budget")()] == ["codex"]
    assert len(bxs.union_opener("budget")()) == 4
