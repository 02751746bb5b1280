"""title: filters compare folded titles the index keeps (the manifest's column "folded"): a query folds its
words, never every title of the store (issue 34: 250-350 ms for title: queries at 100,000 conversations)."""

from __future__ import annotations

import json

from samctl.search import query
from tests.conftest import fingerprint
from tests.search.test_project import _session

N = 40


def _store(tmp_path):
    root = tmp_path / "claude"
    for i in range(N):
        first = f"Zürich  budget review {i}" if i % 2 else f"Café notes {i}"
        _session(root, str(tmp_path / "work"), f"{0xD0000000 + i:08x}-1111-4111-8111-000000000004", [first, "quokka"])
    return root


def test_title_filter_folds_no_title_at_query_time(run, tmp_path, monkeypatch):
    root = _store(tmp_path)
    before = fingerprint(root)
    r = run("--root", root, "search", "quokka", "--format", "json", "-n", "100")  # (the index built)
    assert r.exit_code == 0, r.stderr
    titles = {h["conversation_id"]: h["title"] for h in json.loads(r.stdout)}
    assert len(titles) == N
    calls = []
    real = query.fold
    monkeypatch.setattr(query, "fold", lambda t: calls.append(t) or real(t))
    r = run("--root", root, "search", 'quokka title:zurich title:"budget review"', "--format", "json", "-n", "100")
    assert r.exit_code == 0, r.stderr
    folded_titles = [c for c in calls if any(c.strip() == t for t in titles.values())]
    monkeypatch.setattr(query, "fold", real)
    got = {h["conversation_id"] for h in json.loads(r.stdout)}
    want = {
        c for c, t in titles.items() if query.title_matches(t, "zurich") and query.title_matches(t, "budget review")
    }
    assert got == want and len(want) == N // 2
    assert folded_titles == []  # (the old code folded each title that is not ASCII: all 40 here)
    assert fingerprint(root) == before
