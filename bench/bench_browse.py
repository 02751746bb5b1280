"""samctl browse's own costs on a large list (issue #38), headless (Textual's run_test), no disk:

- import: ``import samctl.tui.app`` (Textual and the modules the browser needs);
- first paint: from ``BrowseApp(...)`` to the main screen's first refresh, the listing still running;
- listed: until all N rows are shown (sorted; what the listing itself costs is `ls`'s: bench_ls.py);
- filter key: one keystroke in the filter box to the list refilled (``show_rows``), median over a word
  typed letter by letter and deleted again;
- hits shown: 200 search hits grouped by conversation and put on screen (``show_groups``; the search
  itself is ``samctl search``'s: bench_search.py), until the first screenful is painted.

    .venv/bin/python bench/bench_browse.py --rows 100000
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time


def main(n: int) -> None:

    t = time.perf_counter()
    from samctl.model import ConversationMeta
    from samctl.search.hits import Hit
    from samctl.tui import rows as R
    from samctl.tui.app import BrowseApp, MainScreen

    imported = time.perf_counter() - t

    now = 1_790_000_000.0
    metas = [
        ConversationMeta(
            "mermaid",
            f"2026{i:010d}",
            f"conversation {i} about topic {i % 977} and more",
            updated_ts=now - i * 60,
            created_ts=now - i * 61,
            message_count=12,
            size=1000,
        )
        for i in range(n)
    ]

    class Store:
        name, read_only, conv_dir = "mermaid", True, "/nowhere"

        def list_metas(self, findings):
            return list(metas)

    marks: dict = {}
    real_mount = MainScreen.on_mount

    def on_mount(self):
        real_mount(self)
        self.call_after_refresh(lambda: marks.setdefault("paint", time.perf_counter()))

    MainScreen.on_mount = on_mount

    timed: list = []
    real_show = MainScreen.show_rows

    def show_rows(self):
        t0 = time.perf_counter()
        real_show(self)
        timed.append(time.perf_counter() - t0)

    MainScreen.show_rows = show_rows

    hits = [
        Hit(
            "message",
            f"2026{i // 4:010d}",
            f"conversation {i // 4}",
            None,
            i % 4,
            now - i,
            0.5,
            "some text " * 20,
            snippet="the budget for the trip " * 4,
            score=1.0 / (i + 1),
            role="user",
            store="mermaid",
            marks=[(4, 10)],
        )
        for i in range(200)
    ]

    async def run():
        start = time.perf_counter()
        app = BrowseApp([Store()], now=now)
        async with app.run_test(size=(160, 48)) as pilot:
            await app.workers.wait_for_complete()
            await pilot.pause()
            listed = time.perf_counter() - start
            paint = marks["paint"] - start
            del timed[:]
            await pilot.press("slash", *"topic 97", *["backspace"] * 8)
            keys = list(timed)
            screen = app.main
            await pilot.press("escape", "s")
            app.search_seq += 1
            t0 = time.perf_counter()
            screen.show_groups(R.grouped(hits), app.search_seq, "")
            screen.call_after_refresh(lambda: marks.setdefault("hits", time.perf_counter()))
            await pilot.pause()
            shown = marks["hits"] - t0
            return paint, listed, keys, shown, len(app.rows)

    paint, listed, keys, shown, n = asyncio.run(run())
    print(
        f"rows {n}: import {imported * 1000:.0f} ms, first paint {paint * 1000:.0f} ms, all listed "
        f"{listed * 1000:.0f} ms, filter key median {statistics.median(keys) * 1000:.1f} ms "
        f"(max {max(keys) * 1000:.1f}, {len(keys)} keys), 200 hits shown {shown * 1000:.0f} ms"
    )


WORDS = ("budget", "deadline", "portland", "invoice", "meeting", "zanzibar", "quokka", "database review")


def search_keys(tree: str | None = None, cache: str | None = None, words=WORDS) -> list:
    """A keystroke in the search box (its Changed event) to its results painted (no debounce: a search
    starts at the keystroke), with a warm index: the search plus what the browser adds (the worker,
    grouping, the paint).  Each key is typed once the last one's results are in (a search per key).
    ``tree``: a store root whose index is in ``cache`` (bench_search.py's 1.2 M-message tree); default:
    a copy of fixtures/demo's four stores."""
    import os
    import shutil
    import tempfile
    from pathlib import Path

    tmp = Path(tempfile.mkdtemp())
    try:
        os.environ.update(SAMCTL_CACHE_DIR=cache or str(tmp / "cache"), XDG_DATA_HOME=str(tmp / "data"), HOME=str(tmp))
        from samctl.stores import open_store
        from samctl.stores.base import Caps
        from samctl.tui.app import BrowseApp, MainScreen

        if tree:
            roots = [tree]
        else:
            shutil.copytree(Path(__file__).resolve().parents[1] / "fixtures" / "demo", tmp / "demo", symlinks=True)
            roots = [str(tmp / "demo" / r) for r in ("SAM", "mermaid-project", "claude_code", "codex")]

        typed: dict = {}
        searched_at: dict = {}
        real_changed, real_searched, real_worker = (
            MainScreen.on_input_changed,
            MainScreen._searched,
            BrowseApp.search,
        )

        def changed(self, event):
            typed[self.app.search_seq + 1] = time.perf_counter()
            real_changed(self, event)

        def search(self, text, *rest):
            t0 = time.perf_counter()
            try:
                return real_worker(self, text, *rest)
            finally:
                searched_at[text] = time.perf_counter() - t0

        def searched(self, groups, seq, *rest):
            real_searched(self, groups, seq, *rest)
            if groups is not None and seq == self.app.search_seq and seq in typed:
                t0 = typed[seq]
                self.call_after_refresh(lambda: times.append(time.perf_counter() - t0))

        MainScreen.on_input_changed, MainScreen._searched, BrowseApp.search = changed, searched, search

        stores = [open_store(r, Caps(), True) for r in roots]
        app = BrowseApp(stores, now=1_790_000_000.0)
        times: list = []
        alone: list = []

        async def run():
            async with app.run_test(size=(160, 48)) as pilot:
                await app.workers.wait_for_complete()
                await pilot.press("s", *"warm")  # (the first search brings the index up to date)
                while app.searching:
                    await pilot.pause(0.05)
                del times[:]
                for word in words:
                    await pilot.press(*["backspace"] * 20)
                    while app.searching or app.pending:
                        await pilot.pause(0.01)
                    for ch in word:
                        n = len(times)
                        searched_at.clear()
                        await pilot.press(ch)
                        for _ in range(2000):  # (at most 10 s: a key whose paint is never seen is left out)
                            if not (app.searching or app.pending or len(times) == n):
                                break
                            await pilot.pause(0.005)
                        alone.extend(searched_at.values())

        asyncio.run(run())
        where = f"{roots[0]}" if tree else "fixtures/demo, 4 stores"
        q = statistics.quantiles(times, n=20)
        print(
            f"search key to results ({where}, warm index, no debounce): median "
            f"{statistics.median(times) * 1000:.0f} ms, p95 {q[-1] * 1000:.0f} ms, max {max(times) * 1000:.0f} ms, "
            f"{len(times)} keys; the search alone (BrowseApp.search) median {statistics.median(alone) * 1000:.0f} ms"
        )
        return times
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def scroll_keys(tree: str, cache: str | None, child: bool = False) -> None:
    """Paging keys pressed while ``tree`` is still being listed (in the background, as samctl browse does
    with no child): the time of each key until its frame is painted, and how many came before every row
    was in.  The list moves over the rows already there: no key waits for the disk.  ``child``: listed by
    a forked child (tui/preload.py), as samctl browse does when a core is free."""
    import os

    if cache:
        os.environ["SAMCTL_CACHE_DIR"] = cache
    from samctl.stores import open_store
    from samctl.stores.base import Caps
    from samctl.tui import preload
    from samctl.tui.app import BrowseApp

    stores = [open_store(tree, Caps(), True)]
    pre = preload.start(stores) if child else None
    app = BrowseApp(stores, now=1_790_000_000.0, preload=pre)
    during: list = []
    after: list = []

    async def run():
        async with app.run_test(size=(160, 48)) as pilot:
            for i in range(400):
                loading = app.loading
                t0 = time.perf_counter()
                await pilot.press("pagedown" if i % 10 else "home")
                (during if loading else after).append(time.perf_counter() - t0)
                if not loading and len(after) >= 20:
                    break

    asyncio.run(run())
    if pre is not None:
        pre.close()
    q = lambda xs: f"median {statistics.median(xs) * 1000:.0f} ms, max {max(xs) * 1000:.0f} ms ({len(xs)} keys)"  # noqa: E731
    print(
        f"paging keys ({tree}, {len(app.rows):,} rows, {'child' if child else 'thread'}): while listing {q(during)}; after {q(after)}"
    )


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=100_000)
    ap.add_argument("--tree", help="search keys only, on this store root (its index warm in --cache)")
    ap.add_argument("--cache", help="SAMCTL_CACHE_DIR of --tree")
    ap.add_argument("--scroll", action="store_true", help="with --tree: paging keys while it is listed")
    ap.add_argument("--child", action="store_true", help="with --scroll: listed by a forked child")
    a = ap.parse_args()
    if a.tree and a.scroll:
        scroll_keys(a.tree, a.cache, a.child)
    elif a.tree:
        search_keys(a.tree, a.cache)
    else:
        main(a.rows)
        search_keys()
