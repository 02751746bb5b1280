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


def test_queries_run_target_by_target_or_query_by_query(monkeypatch, capsys):
    """``--order target`` (the default) runs each target's queries together in each round, as a process
    that keeps searching one set of stores does; ``--order query`` each query over every target."""
    from bench import bench_search as bs

    calls: list = []

    def searcher(root, text, **kw):
        name = "union" if callable(root) else os.path.basename(str(root))
        return lambda: calls.append((name, text))

    monkeypatch.setattr(bs, "searcher", searcher)
    monkeypatch.setattr(bs, "QUERIES", [("common", "budget"), ("rare", "quokka")])
    monkeypatch.setattr(bs, "CLI_SAMPLE", [])
    roots = {"sam": "/x/sam", "codex": "/x/codex"}
    for order, expected in (
        ("target", [("union", "budget"), ("union", "quokka"), ("sam", "budget"), ("sam", "quokka")]),
        ("query", [("union", "budget"), ("sam", "budget"), ("codex", "budget"), ("union", "quokka")]),
    ):
        calls.clear()
        med = bxs.measure_queries(roots, 1, order)
        timed = calls[6:]  # (after the untimed warm-up pass: 2 queries x 3 targets)
        assert timed[:4] == expected and len(timed) == 6
        assert set(med) == {"union", "sam", "codex"} and all(len(m) == 2 for m in med.values())
    assert "each target in turn" in capsys.readouterr().out
