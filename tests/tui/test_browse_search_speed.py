"""What keeps a keystroke in the browser's search box fast on a large index (issue #38): a keystroke asks
for a screenful of hits and more only when the cursor nears the last one; the indexes are brought up to
date as the box opens, not at a keystroke; the browser's searches trust the index's last full check
longer than `samctl search` does, unless the user set SAMCTL_INDEX_RECHECK."""

from __future__ import annotations

import os
import threading

import pytest

from tests.tui.conftest import NOW

pytest.importorskip("textual")

from samctl.search.hits import Hit  # noqa: E402
from samctl.tui import app as A  # noqa: E402
from tests.tui.test_browse import drive, settle  # noqa: E402


def fake_hits(limit: int) -> list:
    """``limit`` hits, one per conversation (a group each), as the index gives them."""
    return [
        Hit(
            "message",
            f"2026{i:010d}",
            f"talk {i}",
            None,
            0,
            NOW - i,
            0.5,
            "text",
            snippet="a budget",
            score=1.0 / (i + 1),
            role="user",
            store="mermaid",
            marks=[(2, 8)],
        )
        for i in range(limit)
    ]


def test_a_keystroke_asks_a_screenful_and_more_come_when_the_cursor_nears_the_end(stores, monkeypatch):
    asked: list = []

    async def steps(pilot):
        app = pilot.app

        def search(text, limit):
            asked.append((text, limit))
            return fake_hits(limit)

        monkeypatch.setattr(app, "search", search)
        await pilot.press("s")
        await settle(pilot)
        await pilot.press(*"budget")
        await settle(pilot)
        assert asked[-1] == ("budget", A.FIRST_HITS) and all(lim == A.FIRST_HITS for _, lim in asked)
        assert len(app.groups) == A.FIRST_HITS
        await pilot.press("enter")  # (to the results)
        for _ in range(3):
            await pilot.press("down")
        await settle(pilot)
        assert asked[-1] == ("budget", A.FIRST_HITS)  # (far from the end: nothing more asked)
        await pilot.press("end")
        await settle(pilot)
        assert asked[-1] == ("budget", A.SEARCH_LIMIT) and len(app.groups) == A.SEARCH_LIMIT
        results = app.main.query_one("#results")
        assert results.highlighted == A.FIRST_HITS - 1  # (the cursor stayed where it was)
        n = len(asked)
        await pilot.press("end")
        await settle(pilot)
        assert len(asked) == n  # (all there is was asked: never again)

    drive(stores, steps, size=(110, 30))


def test_fewer_hits_than_asked_are_all_there_is(stores, monkeypatch):
    asked: list = []

    async def steps(pilot):
        app = pilot.app

        def search(text, limit):
            asked.append(limit)
            return fake_hits(5)

        monkeypatch.setattr(app, "search", search)
        await pilot.press("s")
        await settle(pilot)
        await pilot.press(*"ab", "enter", "end")
        await settle(pilot)
        assert asked and set(asked) == {A.FIRST_HITS}

    drive(stores, steps)


def test_the_indexes_are_brought_up_to_date_as_the_box_opens_and_keys_wait_for_it(stores, monkeypatch):
    gate = threading.Event()
    warmed: list = []
    asked: list = []

    async def steps(pilot):
        app = pilot.app
        real = app.search

        def refresh_indexes():
            warmed.append(1)
            gate.wait(10)

        def search(text, limit):
            asked.append(text)
            return real(text, limit)

        monkeypatch.setattr(app, "refresh_indexes", refresh_indexes)
        monkeypatch.setattr(app, "search", search)
        await pilot.press("s", *"flaky")
        await pilot.pause(0.1)
        assert warmed == [1] and asked == [] and app.pending == ("flaky", app.search_seq)
        gate.set()
        await settle(pilot)
        assert asked == ["flaky"] and app.groups[0].title == "Fix the flaky test in tests/parser.rs"
        await pilot.press("escape", "escape", "s")  # (back to the list, and the box again: warmed once)
        await settle(pilot)
        assert warmed == [1]

    drive(stores, steps)


def test_the_real_warm_up_makes_the_index_and_the_first_key_finds_it(stores):
    async def steps(pilot):
        app = pilot.app
        await pilot.press("s")
        await settle(pilot)
        assert app.warmed and not app.searching
        await pilot.press(*"budget")
        await settle(pilot)
        assert any(g.title == "Q3 budget" for g in app.groups)

    drive(stores, steps)


def test_searches_trust_the_last_check_longer_unless_the_user_said(stores, monkeypatch):
    from samctl.search import dispatch

    seen: list = []
    real = dispatch.search

    def spy(*a, **kw):
        seen.append(os.environ.get("SAMCTL_INDEX_RECHECK"))
        return real(*a, **kw)

    monkeypatch.setattr(dispatch, "search", spy)
    monkeypatch.delenv("SAMCTL_INDEX_RECHECK", raising=False)
    app = A.BrowseApp(stores, now=NOW)
    app.search("budget")
    assert seen == [str(A.TRUST)] and "SAMCTL_INDEX_RECHECK" not in os.environ
    monkeypatch.setenv("SAMCTL_INDEX_RECHECK", "7")
    app.search("budget")
    assert seen[-1] == "7" and os.environ["SAMCTL_INDEX_RECHECK"] == "7"
