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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=100_000)
    args = ap.parse_args()

    t = time.perf_counter()
    from samctl.model import ConversationMeta
    from samctl.search.hits import Hit
    from samctl.tui import rows as R
    from samctl.tui.app import BrowseApp, MainScreen
    imported = time.perf_counter() - t

    now = 1_790_000_000.0
    metas = [ConversationMeta("mermaid", f"2026{i:010d}", f"conversation {i} about topic {i % 977} and more",
                              updated_ts=now - i * 60, created_ts=now - i * 61, message_count=12, size=1000)
             for i in range(args.rows)]

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

    hits = [Hit("message", f"2026{i // 4:010d}", f"conversation {i // 4}", None, i % 4, now - i, 0.5,
                "some text " * 20, snippet="the budget for the trip " * 4, score=1.0 / (i + 1), role="user",
                store="mermaid", marks=[(4, 10)]) for i in range(200)]

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
    print(f"rows {n}: import {imported * 1000:.0f} ms, first paint {paint * 1000:.0f} ms, all listed "
          f"{listed * 1000:.0f} ms, filter key median {statistics.median(keys) * 1000:.1f} ms "
          f"(max {max(keys) * 1000:.1f}, {len(keys)} keys), 200 hits shown {shown * 1000:.0f} ms")


if __name__ == "__main__":
    main()
