"""Snapshots of samctl browse's main screens (pytest-textual-snapshot) at 80x24 and 160x48, on a copy of
fixtures/demo with a fixed "now" (relative dates) and UTC times.  ``--snapshot-update`` rewrites them;
``docs/make_browse_screens.py`` copies them to docs/ as the screenshots docs/browse.md shows."""

from __future__ import annotations

import pytest

from tests.tui.conftest import NOW

pytest.importorskip("pytest_textual_snapshot")

from samctl.tui.app import BrowseApp  # noqa: E402

SIZES = [(80, 24), (160, 48)]


async def _settle(pilot, wait: float = 0.0) -> None:
    await pilot.pause(wait)
    for _ in range(100):  # (a search that ends starts the one typed meanwhile)
        await pilot.app.workers.wait_for_complete()
        await pilot.pause()
        if not pilot.app.searching and not any(w.is_running for w in pilot.app.workers):
            break
    for box in pilot.app.screen.query("Input"):  # (a blinking cursor would make two runs differ)
        box.cursor_blink = False
    await pilot.pause()


@pytest.fixture
def app(stores, zone):
    zone("UTC")
    return BrowseApp(stores, now=NOW)


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_list(snap_compare, app, size):
    assert snap_compare(app, terminal_size=size, run_before=_settle)


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_search(snap_compare, app, size):
    async def before(pilot):
        await _settle(pilot)
        await pilot.press("s", *"timeout")
        await _settle(pilot)

    assert snap_compare(app, terminal_size=size, run_before=before)


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_transcript(snap_compare, app, size):
    async def before(pilot):
        await _settle(pilot)
        await pilot.press("s", *"timeout")
        await _settle(pilot)
        await pilot.press("enter")  # out of the box, to the results
        app = pilot.app
        app.main.query_one("#results").highlighted = [g.title for g in app.groups].index("login timeout")
        await pilot.press("enter")  # the conversation, at its first hit
        await _settle(pilot)
        screen = pilot.app.screen
        tool = next(i for i, b in enumerate(screen.blocks) if b.kind == "tool")
        screen.query_one("#transcript").highlighted = tool
        await pilot.press("o")  # one tool call opened: the others show their labels
        await _settle(pilot)

    assert snap_compare(app, terminal_size=size, run_before=before)


def test_keys(snap_compare, app):
    async def before(pilot):
        await _settle(pilot)
        await pilot.press("question_mark")
        await _settle(pilot)

    assert snap_compare(app, terminal_size=(80, 24), run_before=before)


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_attic(snap_compare, app, size):
    async def before(pilot):
        await _settle(pilot)
        rows = [r.meta.title for r in pilot.app.shown]
        pilot.app.main.query_one("#list").move_cursor(row=rows.index("API Chat"))
        await pilot.press("d", "y", "a")  # (moved just now: "now" in the attic, whatever the fixed time)
        await _settle(pilot)

    assert snap_compare(app, terminal_size=size, run_before=before)
