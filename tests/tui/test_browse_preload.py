"""The listing `samctl browse` starts in a child before Textual loads (samctl/tui/preload.py): the browser
shows exactly what listing in its own thread shows, a large store's first rows come before the rest and
are replaced by them (never twice), and a child that dies or sends garbage costs nothing but time: the
browser lists what it did not get."""

from __future__ import annotations

import asyncio
import os
import pickle
import threading

import pytest

from tests.conftest import fingerprint
from tests.tui.conftest import NOW

pytest.importorskip("textual")
if not hasattr(os, "fork"):
    pytest.skip("no fork: the browser lists in a thread", allow_module_level=True)

from samctl.model import ConversationMeta  # noqa: E402
from samctl.tui import preload  # noqa: E402
from samctl.tui.app import BrowseApp, MainScreen  # noqa: E402
from tests.tui.test_browse import settle  # noqa: E402


def run_app(stores, pre, size=(110, 30), during=None) -> BrowseApp:
    app = BrowseApp(stores, now=NOW, preload=pre)

    async def go():
        async with app.run_test(size=size) as pilot:
            if during is not None:
                await during(pilot)
            await settle(pilot)
            status.append(str(app.main.query_one("#status").render()))

    status: list = []
    app.status_line = status  # (what the status line said once every worker was done)
    try:
        asyncio.run(go())
    finally:
        if pre is not None:
            pre.close()
    return app


def shown(app) -> list:
    return [(r.store.name, r.meta.id, r.meta.title, r.meta.updated_ts) for r in app.shown]


def child_gone(pid: int) -> bool:
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        return True
    return False


def test_the_child_lists_what_the_thread_lists_and_is_reaped(stores, demo):
    before = fingerprint(demo)
    alone = run_app(stores, None)
    pre = preload.start(stores)
    assert pre is not None and pre.pid > 0
    pid = pre.pid
    app = run_app(stores, pre)
    assert shown(app) == shown(alone) and len(app.rows) == len(alone.rows) > 10
    assert "loading" not in app.status_line[0] and "conversations in" in app.status_line[0]
    assert app.preload is None and pre.pid == 0 and child_gone(pid)
    assert fingerprint(demo) == before


class Many:
    """A store of ``n`` conversations, newest first, listed without a disk."""

    name, read_only, conv_dir = "mermaid", True, "/nowhere"

    def __init__(self, n: int):
        self.metas = [
            ConversationMeta("mermaid", f"{i:08d}_000000_000", f"talk {i}", updated_ts=NOW - i * 60, message_count=3)
            for i in range(n)
        ]

    def list_metas(self, findings):
        return list(self.metas)

    def describe(self):
        return "many"


def test_a_large_store_sends_its_first_rows_first_then_all_once(stores, monkeypatch):
    store = Many(preload.HEAD * 3)
    pre = preload.start([store])
    frames = list(pre.frames())
    pre.close()
    assert [f[0] for f in frames] == ["head", "all"]
    assert [m.id for m in frames[0][2]] == [m.id for m in store.metas[: preload.HEAD]]
    assert [m.id for m in frames[1][2]] == [m.id for m in store.metas] and frames[1][3] == []

    counts: list = []

    real = MainScreen.show_rows

    def spy(self):  # (the rows at each refill: the large store's first ones, then all)
        real(self)
        counts.append(len(self.app.rows))

    monkeypatch.setattr(MainScreen, "show_rows", spy)
    both = [store, *stores]
    app = run_app(both, preload.start(both))
    ids = [(r.store.name, r.meta.id) for r in app.rows]
    demo_rows = len(run_app(stores, None).rows)
    assert len(ids) == len(set(ids)) == len(store.metas) + demo_rows
    assert [c for c in counts if c][:2] == [preload.HEAD, len(store.metas)]
    assert shown(app)[0][2] == "talk 0"


def test_a_child_that_dies_leaves_the_listing_to_the_browser(stores, demo):
    alone = run_app(stores, None)
    pre = preload.start(stores)
    os.kill(pre.pid, 9)
    app = run_app(stores, pre)
    assert shown(app) == shown(alone)
    assert "loading" not in app.status_line[0] and "conversations in" in app.status_line[0]


def test_garbage_on_the_pipe_is_ignored_and_the_stores_listed_here(stores):
    alone = run_app(stores, None)
    r, w = os.pipe()
    body = pickle.dumps(("all", 99, [], []))  # (a store index out of range)
    os.write(w, len(body).to_bytes(8, "little") + body + b"\x05\x00\x00\x00\x00\x00\x00\x00junk")
    os.close(w)
    app = run_app(stores, preload.Preload(0, r))
    assert shown(app) == shown(alone)
    r2, w2 = os.pipe()
    os.write(w2, (5).to_bytes(8, "little") + b"junk!")  # (not a pickle)
    os.close(w2)
    app = run_app(stores, preload.Preload(0, r2))
    assert shown(app) == shown(alone)


def test_a_store_the_child_cannot_list_is_a_problem_and_the_others_are_shown(stores, monkeypatch):
    monkeypatch.delenv("SAMCTL_DEBUG", raising=False)

    class Broken(Many):
        def list_metas(self, findings):
            raise RuntimeError("boom")

    pre = preload.start([Broken(1), *stores])
    app = run_app([Broken(1), *stores], pre)
    assert [f.code for f in app.findings] == ["store-unreadable"] and "RuntimeError: boom" in app.findings[0].reason
    assert len(app.rows) == len(run_app(stores, None).rows)


# --- the first screen kept from the last run (samctl/tui/firstrows.py) -------------------------


def test_the_newest_rows_are_kept_and_painted_first_then_replaced_by_the_listing(stores, demo):
    from samctl.tui import firstrows

    assert firstrows.load(stores) == []
    alone = run_app(stores, None)
    kept = firstrows.load(stores)
    assert [(s.name, m.id) for s, m in kept] == [(r.store.name, r.meta.id) for r in alone.shown][: firstrows.KEEP]
    assert oct(os.stat(firstrows._path(stores)).st_mode & 0o777) == "0o600"
    assert firstrows.load(stores[:2]) == []  # (another scope: not this file)

    gate = threading.Event()
    sam = stores[0]
    real = sam.list_metas
    sam.list_metas = lambda findings: (gate.wait(10), real(findings))[1]
    before = fingerprint(demo)
    app = BrowseApp(stores, now=NOW, first=kept[:3])

    async def go():
        async with app.run_test(size=(110, 30)) as pilot:
            await pilot.pause(0.3)
            status = str(app.main.query_one("#status").render())
            first_titles = [r.meta.title for r in app.shown][:3]
            assert first_titles[0] == kept[0][1].title and "loading" in status
            gate.set()
            await settle(pilot)

    asyncio.run(go())
    assert shown(app) == shown(alone)  # (each store's kept rows replaced by its listing: none twice)
    assert fingerprint(demo) == before


def test_a_kept_file_that_is_garbage_or_foreign_is_ignored_and_no_cache_keeps_nothing(stores):
    from samctl.tui import firstrows

    run_app(stores, None)
    path = firstrows._path(stores)
    good = path.read_bytes()
    for bad in (b"{", b"[]", good.replace(b'"v":1', b'"v":99'), good.replace(b'"rows":[[0,', b'"rows":[[77,')):
        path.write_bytes(bad)
        assert firstrows.load(stores) == []
    path.unlink()
    for s in stores:
        s.use_cache = False
    run_app(stores, None)
    assert not path.exists() and firstrows.load(stores) == []


@pytest.mark.parametrize(
    "field,value",
    [("project", 5), ("message_count", "12"), ("updated_ts", "soon"), ("pinned", 1), ("store", None), ("size", 1.5)],
)
def test_a_kept_row_with_a_field_of_the_wrong_type_drops_the_file(stores, field, value):
    """The kept file is untrusted (a row is a list of the meta's fields): one value of a type the meta never
    has, and nothing of it is shown (a project of 5 or an updated_ts of "soon" raised where the browser makes
    its rows, in Textual's first frame and in samctl's)."""
    import orjson

    from samctl.tui import firstrows

    run_app(stores, None)
    path = firstrows._path(stores)
    doc = orjson.loads(path.read_bytes())
    assert len(firstrows.load(stores)) == len(doc["rows"])
    doc["rows"][0][1][doc["fields"].index(field)] = value
    path.write_bytes(orjson.dumps(doc))
    assert firstrows.load(stores) == []


def test_the_kept_rows_know_the_type_of_every_field_of_the_meta():
    from samctl.tui import firstrows

    assert tuple(firstrows.KINDS) == preload.FIELDS


def test_quitting_while_the_child_lists_stops_it_and_lists_nothing_more(demo, monkeypatch):
    """q while the child is still listing: the app stops the child (SIGTERM) and its loop, instead of
    waiting for a large archive to be listed before it can leave (it waited about 2 s at 100,000)."""
    import signal
    import time

    from tests.tui.conftest import open_stores

    [store] = open_stores(demo, ("SAM",))
    monkeypatch.setattr(store, "list_metas", lambda findings: time.sleep(20) or [])  # (in the child, forked below)
    pre = preload.start([store])
    pid = pre.pid
    app = BrowseApp([store], now=NOW, preload=pre)

    async def go():
        async with app.run_test(size=(100, 24)) as pilot:
            await pilot.pause(0.1)
            await pilot.press("q")

    try:
        asyncio.run(go())
        _, status = os.waitpid(pid, 0)
        pre.pid = 0  # (reaped here)
    finally:
        pre.close()
    assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGTERM
    assert app.return_code == 0 and app.rows == []
