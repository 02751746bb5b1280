"""samctl stats: counts, sizes, the largest conversations, a month chart; read-only."""

from __future__ import annotations

import json

from samctl.report.stats import bar, month_range
from tests.conftest import fingerprint


def test_json_counts_for_both_stores(run, sam_demo, mermaid_demo):
    r = run("--root", sam_demo, "stats", "--format", "json")
    assert r.exit_code == 0, r.stderr
    (s,) = json.loads(r.stdout)["stores"]
    assert (s["store"], s["conversations"], s["messages"], s["memories"]) == ("sam", 3, 10, 3)  # (as ls counts)
    assert s["bytes"] > s["conversation_bytes"] > 0 and s["files"] >= 6
    assert s["largest"][0]["id"] == "8B58CBC4-ACA7-4811-AE66-C01921690310"
    assert s["by_month"] == {"2026-07": 1, "2026-08": 1, "2026-09": 1}
    r = run("stats", "--format", "json", sam_demo, mermaid_demo)
    stores = json.loads(r.stdout)["stores"]
    assert [x["store"] for x in stores] == ["sam", "mermaid"]
    assert stores[1]["memories"] is None and stores[1]["conversations"] == 3


def test_text_has_a_month_chart_and_largest(run, mermaid_demo):
    r = run("--root", mermaid_demo, "stats", "--top", "2")
    assert r.exit_code == 0, r.stderr
    out = r.stdout
    assert "conversations 3   messages 11   size" in out and "memories" not in out  # (mermaid has none)
    assert "largest conversations" in out and out.count("2026081") == 2
    assert "2026-08 2 " + "█" * 40 in out and "2026-09 1 " + "█" * 20 in out


def test_stats_is_read_only_and_reports_broken_files(run, sam_broken, mermaid_broken):
    for root in (sam_broken[0], mermaid_broken[0]):
        before = fingerprint(root)
        r = run("--root", root, "stats")
        assert r.exit_code == 3 and "Traceback" not in r.stderr
        assert fingerprint(root) == before


def test_bar_and_month_range():
    assert bar(0, 10) == "" and bar(10, 10, 4) == "████" and bar(1, 16, 4) == "▎" and bar(9, 16, 4) == "██▎"
    assert bar(1, 1000, 40) == "▏"  # never invisible
    assert month_range({"2025-11": 2, "2026-02": 1}) == [("2025-11", 2), ("2025-12", 0), ("2026-01", 0), ("2026-02", 1)]
    assert month_range({"2025-11": 2, "2026-02": 1}, last=2) == [("2026-01", 0), ("2026-02", 1)]
    assert month_range({}) == []


def test_help_shows_examples(run):
    r = run("stats", "--help")
    assert r.exit_code == 0 and "Examples:" in r.stdout


SAM_ID = "8B58CBC4-ACA7-4811-AE66-C01921690310"


def _memories(run, root):
    r = run("--root", root, "stats", "--format", "json")
    return r, json.loads(r.stdout)["stores"][0]["memories"]


def test_a_memory_db_that_is_not_a_file_is_a_finding_not_a_silent_undercount(run, sam_demo, tmp_path):
    import os

    db = sam_demo / "conversations" / SAM_ID / "memory.db"
    r, before = _memories(run, sam_demo)
    assert r.exit_code == 0 and before == 3
    for odd in ("symlink", "fifo"):
        moved = tmp_path / "memory.db"
        if not moved.exists():
            db.rename(moved)
        else:
            db.unlink()
        if odd == "symlink":
            db.symlink_to(moved)
        else:
            os.mkfifo(db)
        snapshot = fingerprint(sam_demo)
        r, count = _memories(run, sam_demo)
        assert r.exit_code == 3 and str(db) in r.stderr, (odd, r.stderr)
        assert count < before
        assert fingerprint(sam_demo) == snapshot


def test_the_legacy_memory_db_is_counted_as_search_reads_it(run, sam_demo):
    from tests.search_helpers import insert_memory

    base_db = sam_demo / "memory.db"
    src = sam_demo / "conversations" / SAM_ID / "memory.db"
    base_db.write_bytes(src.read_bytes())
    insert_memory(base_db, "99999999-0000-4000-8000-000000000009", SAM_ID, "a legacy memory", None)
    r, count = _memories(run, sam_demo)
    assert r.exit_code == 0 and count == 3 + 2 + 1  # the copy's two rows of SAM_ID plus the new one


def test_memory_counts_are_cached_per_database_and_read_again_when_one_changes(run, sam_demo, monkeypatch):
    """A warm stats opens no memory.db whose size and mtime (and its -wal's) are as they were counted."""
    import os
    import sqlite3

    from samctl.stores.sam import memorydb

    old = os.stat(sam_demo).st_mtime - 3600  # out of the racy window: countable results are cached
    for d, _, files in os.walk(sam_demo):
        for f in files:
            os.utime(os.path.join(d, f), (old, old))
    first = json.loads(run("--root", sam_demo, "stats", "--format", "json").stdout)["stores"][0]["memories"]
    opened = []
    real = memorydb.iter_memories
    monkeypatch.setattr(memorydb, "iter_memories", lambda p, *a, **k: opened.append(p) or real(p, *a, **k))
    r = run("--root", sam_demo, "stats", "--format", "json")
    assert json.loads(r.stdout)["stores"][0]["memories"] == first and opened == []
    db = next(p for p in sorted(sam_demo.glob("conversations/*/memory.db")))
    con = sqlite3.connect(db)
    row = con.execute("SELECT * FROM conversation_memories LIMIT 1").fetchone()
    con.execute(
        "INSERT INTO conversation_memories VALUES (?,?,?,?,?,?,?,?,?,?)",
        ("11111111-2222-4333-8444-555555555555",) + row[1:],
    )
    con.commit()
    con.close()
    r = run("--root", sam_demo, "stats", "--format", "json")
    assert json.loads(r.stdout)["stores"][0]["memories"] == first + 1
    assert [str(p) for p in opened] == [str(db)]
    r = run("--root", sam_demo, "--no-cache", "stats", "--format", "json")
    assert json.loads(r.stdout)["stores"][0]["memories"] == first + 1 and len(opened) > 1
