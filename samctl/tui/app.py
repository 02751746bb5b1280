"""The browser's main screen: every conversation of the stores in scope, filtered as you type, or the
index searched as you type; Enter opens a transcript (``screens.TranscriptScreen``).

Invariants: the listing and every search run in worker threads, so the first paint never waits for
them and a keystroke never waits on the disk; a search's results are shown only if no later
keystroke started another one (``search_seq``); one search runs at a time, and the keystrokes typed
during it are coalesced into one search of the latest text (``pending``), run as soon as it ends.
Every action calls ``tui.actions``, which calls the functions the commands call.
"""

from __future__ import annotations

import heapq
import os
import threading
import time
from contextlib import contextmanager

from rich.text import Text
from textual import work
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal
from textual.screen import Screen
from textual.widgets import Footer, Input, Label, Static

from samctl.errors import SamctlError, UsageError
from samctl.gcpause import gc_paused
from samctl.model import ERROR
from samctl.safetext import one_line
from samctl.stores import STORES
from samctl.tui import actions, firstrows, preload
from samctl.tui import rows as R
from samctl.tui.convlist import BlockList, ConvList
from samctl.tui.screens import AtticScreen, ConfirmScreen, ExportScreen, HelpScreen, TranscriptScreen

SEARCH_LIMIT = 200  # hits asked of the index per query at most (grouped by conversation)
# A keystroke asks only for a screenful of hits (a search's cost grows with the hits it makes: their
# snippets, their grouping); more are asked when the cursor nears the last result.
FIRST_HITS = 40
TRUST = 600.0  # seconds the browser's searches trust the index's last full check (see ``_trusting``)


class MainScreen(Screen):
    """The list (or the search results) with the query box above and the status line below."""

    BINDINGS = [
        Binding("slash", "filter", "Filter"),
        Binding("s", "search", "Search"),
        Binding("escape", "leave", "Back"),
        Binding("j,down", "down", "Down", show=False),
        Binding("k,up", "up", "Up", show=False),
        Binding("g", "top", "Top", show=False),
        Binding("G", "bottom", "Bottom", show=False),
        Binding("S", "sort", "Sort"),
        Binding("R", "reverse", "Reverse", show=False),
        Binding("x", "export", "Export"),
        Binding("d", "attic", "To attic"),
        Binding("a", "attic_view", "Attic"),
        Binding("y", "copy_id", "Copy id"),
        Binding("Y", "copy_resume", "Copy resume", show=False),
    ]

    def compose(self) -> ComposeResult:
        with Horizontal(id="bar"):
            yield Label("filter:", id="mode")
            yield Input(placeholder="type to filter (title, project, store); s: search the index", id="query")
        yield ConvList(lambda r: R.cells(r, self.browse.now), id="list")
        yield BlockList(id="results")
        yield Static("", id="status")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#results").display = False
        self.query_one("#list").focus()
        self.browse._reset()  # (the rows kept from the last run, if any, in the first frame)
        self.show_rows()
        # the listing once the first frame is painted: its thread would hold the GIL during it
        self.call_after_refresh(self.browse.load, False)

    # --- what is shown -----------------------------------------------------------------------

    @property
    def browse(self) -> BrowseApp:
        return self.app  # type: ignore[return-value]

    def show_rows(self) -> None:
        """Refill the table from the app's rows: filtered by the box (in filter mode), in the sort order,
        the cursor kept on the same conversation when it is still there."""
        app = self.browse
        keep = self.current_row()
        text = self.query_one("#query", Input).value if app.mode == "filter" else ""
        order = (app.sort_key, app.reverse, app.generation)
        if app.order != order:  # (sorted once per change of rows or order; a filter keeps that order)
            app.sorted_rows, app.order = R.ordered(app.rows, app.sort_key, app.reverse), order
            app.no_project = not any(r.project for r in app.rows)
        # typing on narrows what the last filter kept: those are filtered again, not every row
        narrower = app.filter_base is not None and text.startswith(app.filter_base[0]) and app.filter_base[1] == order
        app.shown = R.filtered(app.shown if narrower else app.sorted_rows, text)
        app.filter_base = (text, order)
        self.query_one("#list", ConvList).set_rows(app.shown, keep, hidden=(1,) if app.no_project else ())
        self.update_status()

    def update_status(self, note: str | None = None) -> None:
        app = self.browse
        if note is not None:
            app.note = note
        if app.mode == "search":
            n = sum(len(g.hits) for g in app.groups)
            what = (
                f"{len(app.groups)} conversation{'s' if len(app.groups) != 1 else ''}, {n} hit{'s' if n != 1 else ''}"
                if app.searched
                else "type a query (the syntax of samctl search)"
            )
        else:
            what = R.list_status(
                app.loading, app.loaded, len(app.stores), len(app.shown), len(app.rows), app.sort_key, app.reverse
            )
        line = what + (f" · {app.note}" if app.note else "")
        self.query_one("#status", Static).update(Text(line))

    def current_row(self):
        table = self.query_one("#list", ConvList)
        shown = self.browse.shown
        if not shown or table.row_count == 0:
            return None
        i = table.cursor_row
        return shown[i] if 0 <= i < len(shown) else None

    def current(self):
        """The (store, conversation id, title) the keys act on: the row or search group under the cursor."""
        app = self.browse
        if app.mode == "search":
            results = self.query_one("#results", BlockList)
            i = results.highlighted
            if i is None or not 0 <= i < len(app.groups):
                return None
            g = app.groups[i]
            store = app.store_named(g)
            return (store, g.conversation_id, g.title) if store is not None else None
        r = self.current_row()
        return (r.store, r.meta.id, r.meta.title) if r is not None else None

    # --- the query box -----------------------------------------------------------------------

    def action_filter(self) -> None:
        self._mode("filter")

    def action_search(self) -> None:
        self._mode("search")

    def _mode(self, mode: str) -> None:
        app = self.browse
        box = self.query_one("#query", Input)
        if app.mode != mode:
            app.mode = mode
            box.value = ""
            self.query_one("#mode", Label).update("search:" if mode == "search" else "filter:")
            box.placeholder = (
                'type a query: words, +required, -excluded, "a phrase", prefix*, role:, title:, store:'
                if mode == "search"
                else "type to filter (title, project, store); s: search the index"
            )
            self.query_one("#list").display = mode == "filter"
            self.query_one("#results").display = mode == "search"
            app.groups, app.searched, app.asked = [], False, None
            self.query_one("#results", BlockList).set_items([])
            if mode == "filter":
                self.show_rows()
            else:
                self.warm()
            self.update_status("")
        box.focus()

    def action_leave(self) -> None:
        """Esc: out of the box to the list; in the list of search results, back to the conversations."""
        box = self.query_one("#query", Input)
        if box.has_focus:
            self._list().focus()
        elif self.browse.mode == "search":
            self._mode("filter")
            self._list().focus()
        elif box.value:
            box.value = ""
            self.show_rows()

    def _list(self):
        return self.query_one("#results" if self.browse.mode == "search" else "#list")

    def on_input_changed(self, event: Input.Changed) -> None:
        if event.input.id != "query":
            return
        app = self.browse
        if app.mode == "filter":
            self.show_rows()
            return
        app.search_seq += 1
        self.run_search(event.value, app.search_seq)

    def on_input_submitted(self, event: Input.Submitted) -> None:
        if event.input.id == "query":
            self._list().focus()

    # --- search ------------------------------------------------------------------------------

    def run_search(self, text: str, seq: int, limit: int = FIRST_HITS) -> None:
        """Search ``text`` now if no search is running; else once the running one ends (only the latest
        text waits: what was typed in between is never searched)."""
        app = self.browse
        if not text.strip():
            app.pending = None
            self.show_groups([], seq, "")
            return
        if app.searching:
            app.pending = (text, seq)
            return
        app.searching = True
        self.update_status("searching…")
        self._search_worker(text, seq, limit)

    def warm(self) -> None:
        """Bring the indexes up to date in the background as the search box opens, before the first key
        (a search that finds its index's last full check too old checks every file: seconds on a large
        archive); the keys typed meanwhile wait for it as for a search."""
        app = self.browse
        if app.warmed or app.searching:
            return
        app.warmed = app.searching = True
        self._warm_worker()

    @work(thread=True, group="search")
    def _warm_worker(self) -> None:
        app = self.browse
        try:
            app.refresh_indexes()
        except Exception:  # noqa: BLE001 - (the first search meets the same problem and says it)
            if debugging():
                raise
        app.from_worker(self._searched, None, -1, "")

    @work(thread=True, group="search")
    def _search_worker(self, text: str, seq: int, limit: int = FIRST_HITS) -> None:
        app = self.browse
        try:
            groups = R.grouped(app.search(text, limit))
            note = ""
        except SamctlError as exc:
            groups, note = [], one_line(exc.message)
        except Exception as exc:  # noqa: BLE001 - (a bug in one search must not take the browser down)
            if debugging():
                raise
            groups, note = [], one_line(f"search failed: internal error: {type(exc).__name__}: {exc}")
        app.from_worker(self._searched, groups, seq, note, text, limit)

    def _searched(self, groups, seq: int, note: str, text: str = "", limit: int = 0) -> None:
        app = self.browse
        app.searching = False
        if groups is not None:
            if seq == app.search_seq:
                app.asked = (text, limit, sum(len(g.hits) for g in groups) >= limit)
            self.show_groups(groups, seq, note, keep=limit > FIRST_HITS)
        if app.pending is not None:
            (text, seq), app.pending = app.pending, None
            self.run_search(text, seq)

    def show_groups(self, groups: list, seq: int, note: str, keep: bool = False) -> None:
        app = self.browse
        if seq != app.search_seq or app.mode != "search":  # a later keystroke asked again: this answer is stale
            return
        app.groups, app.searched = groups, True
        width = max(40, self.size.width - 6)
        results = self.query_one("#results", BlockList)
        results.set_items([_group_prompt(g, width, app.now) for g in groups], (results.highlighted or 0) if keep else 0)
        self.update_status(note)

    def more(self) -> None:
        """The results' cursor is within a screen of the last result and the index may hold more: ask
        for ``SEARCH_LIMIT`` hits of the same text (the cursor stays)."""
        app = self.browse
        if app.mode != "search" or app.asked is None or app.searching or app.pending is not None:
            return
        text, limit, full = app.asked
        results = self.query_one("#results", BlockList)
        if not full or limit >= SEARCH_LIMIT or (results.highlighted or 0) < len(app.groups) - self.size.height // 2:
            return
        app.asked = None
        self.run_search(text, app.search_seq, SEARCH_LIMIT)

    def on_block_list_highlighted(self, event) -> None:
        self.more()

    def on_block_list_selected(self, event: BlockList.Selected) -> None:
        app = self.browse
        i = event.index
        if 0 <= i < len(app.groups):
            g = app.groups[i]
            store = app.store_named(g)
            if store is not None:
                app.push_screen(TranscriptScreen(store, g.conversation_id, g.title, g.positions))

    def on_conv_list_selected(self, event: ConvList.Selected) -> None:
        r = self.current_row()
        if r is not None:
            self.browse.push_screen(TranscriptScreen(r.store, r.meta.id, r.meta.title))

    # --- moving -------------------------------------------------------------------------------

    def action_down(self) -> None:
        self._list().action_cursor_down()

    def action_up(self) -> None:
        self._list().action_cursor_up()

    def action_top(self) -> None:
        self._list().action_first()

    def action_bottom(self) -> None:
        self._list().action_last()

    def action_sort(self) -> None:
        app = self.browse
        app.sort_key = R.SORT_KEYS[(R.SORT_KEYS.index(app.sort_key) + 1) % len(R.SORT_KEYS)]
        self.show_rows()

    def action_reverse(self) -> None:
        self.browse.reverse = not self.browse.reverse
        self.show_rows()

    # --- actions ------------------------------------------------------------------------------

    def action_export(self) -> None:
        self.browse.ask_export(self.current())

    def action_attic(self) -> None:
        self.browse.ask_move(self.current())

    def action_attic_view(self) -> None:
        self.browse.push_screen(AtticScreen())

    def action_copy_id(self) -> None:
        self.browse.copy_id(self.current())

    def action_copy_resume(self) -> None:
        self.browse.copy_resume(self.current())


def _group_prompt(g: R.Group, width: int, now: float) -> Text:
    """A search result: the conversation (store, title, hits) and up to three snippets."""
    t = Text()
    t.append(f"{one_line(g.store_name)}  ", style="cyan")
    t.append(one_line(g.title) or g.conversation_id, style="bold")
    t.append(f"  {len(g.hits)} hit{'s' if len(g.hits) != 1 else ''}", style="dim")
    for h in g.hits[:3]:
        t.append("\n  ")
        t.append(f"{R.relative(h.date_ts, now):>5} {one_line(h.role or h.kind):<9} ", style="dim")
        snip, marks = R.snippet(h, width - 18)
        piece = Text(snip)
        for a, b in marks:
            piece.stylize("bold reverse", a, b)
        t.append_text(piece)
    return t


_env_lock = threading.Lock()


@contextmanager
def _trusting(seconds: float):
    """Searches typed in the browser trust the index's last full check for ``seconds`` (instead of
    ``samctl search``'s 30): files added, removed or saved by a rename are still seen at once (their
    folders are stated at every search), a file changed in place within that time is not.  The box
    brings the indexes up to date when it opens (``MainScreen.warm``), so a keystroke never pays a
    check of every file.  SAMCTL_INDEX_RECHECK, when the user sets it, is kept."""
    with _env_lock:
        if "SAMCTL_INDEX_RECHECK" in os.environ:
            yield
            return
        os.environ["SAMCTL_INDEX_RECHECK"] = str(seconds)
        try:
            yield
        finally:
            os.environ.pop("SAMCTL_INDEX_RECHECK", None)


def debugging() -> bool:
    """SAMCTL_DEBUG=1: an internal error is raised (Textual shows the traceback), as the commands do."""
    return os.environ.get("SAMCTL_DEBUG") == "1"


def _keeping_driver():
    """Textual's terminal driver, less its first switch to the alternate screen: samctl's own first frame
    (``tui.prepaint``) is there already, and the switch would blank it until Textual's first frame."""
    from textual.drivers.linux_driver import LinuxDriver  # (lazy: only once samctl painted first, on POSIX)

    class KeepingDriver(LinuxDriver):
        switched = False

        def start_application_mode(self) -> None:
            self._app.screen_taken = True  # (from here on, Textual leaves the alternate screen itself)
            super().start_application_mode()

        def write(self, data: str) -> None:
            if not self.switched and data == "\x1b[?1049h":
                self.switched = True
                return
            super().write(data)

    return KeepingDriver


class BrowseApp(App):
    """``samctl browse``.  ``stores``: the stores in scope (opened by the command); ``now``: the time
    relative dates count from (fixed by the tests); ``findings``: what opening the stores found."""

    TITLE = "samctl browse"
    CSS = """
    #bar { height: 1; }
    #mode { width: 8; color: $accent; }
    #query { border: none; height: 1; padding: 0; }
    #list, #results { height: 1fr; }
    #status { height: 1; background: $boost; color: $text-muted; }
    """
    BINDINGS = [
        Binding("q", "quit", "Quit"),
        Binding("question_mark", "help", "Keys"),
    ]

    def __init__(
        self,
        stores: list,
        findings: list | None = None,
        now: float | None = None,
        preload=None,
        first=None,
        prepainted: bool = False,
    ):
        super().__init__(driver_class=_keeping_driver() if prepainted else None)
        self.screen_taken = False  # Textual's driver took over the terminal samctl painted first (tui.prepaint)
        self.leaving = False  # exit was called: the widgets are being taken down
        self.first = list(first or [])  # [(store, meta)] kept from the last run (tui.firstrows), shown first
        self.preload = preload  # a child listing the stores (tui.preload), read by the first load
        self.listing = preload  # the same child, stopped when the app exits (the command reaps it)
        self.partial: set = set()  # id() of the stores of which only the first rows are shown yet
        self.stores = list(stores)
        self.findings = list(findings or [])
        self.fixed_now = now
        self.now = now if now is not None else time.time()
        self.rows: list = []
        self.sorted_rows: list = []
        self.generation = 0  # counts the changes of ``rows``
        self.order = None  # (sort key, reverse, generation) of sorted_rows
        self.filter_base = None  # (text, order) of the rows in ``shown``
        self.no_project = True  # no row has a project: the column is left out
        self.shown: list = []
        self.groups: list = []
        self.searched = False
        self.mode = "filter"
        self.sort_key = "updated"
        self.reverse = False
        self.loading = True
        self.loaded = 0
        self.note = ""
        self.search_seq = 0
        self.searching = False  # a search worker is running
        self.pending = None  # (text, seq) to search when it ends
        self.warmed = False  # the indexes were brought up to date when the search box first opened
        self.asked = None  # (text, limit, whether it got all it asked) of the results shown
        self.copied: list = []  # what was put on the clipboard (the tests read it)

    def exit(self, *args, **kw) -> None:
        """Leave at once: the listing (its child, and the loop that shows what it sends) stops here too,
        so quitting never waits for a large archive to be listed."""
        self.leaving = True
        if self.listing is not None:
            self.listing.stop()
        super().exit(*args, **kw)

    def from_worker(self, fn, *args) -> None:
        """``fn(*args)`` on the app's thread, called by a worker: unless the app is leaving by then (a
        listing or search that ends after a quit key must not meet a screen being taken down)."""

        def unless_leaving() -> None:
            if not self.leaving:
                fn(*args)

        try:
            self.call_from_thread(unless_leaving)
        except RuntimeError:  # (the app is gone: what the worker made is not wanted)
            pass

    def get_default_screen(self) -> Screen:
        """The main screen is the first one: no empty default screen is laid out and painted before it."""
        return MainScreen()

    @property
    def main(self) -> MainScreen:
        return next(s for s in self.screen_stack if isinstance(s, MainScreen))

    # --- the listing, in the background ------------------------------------------------------

    @work(thread=True, exclusive=True, group="load")
    def load(self, reset: bool = True) -> None:
        """Every store's conversations, one store after the other, each shown as it comes: first what the
        child started by ``samctl browse`` sent (``preload``; once), then, listed here, every store it did
        not finish."""
        if reset:
            self.from_worker(self._reset)
        pre, self.preload = self.preload, None
        done: set = set()
        if pre is not None:
            for frame in pre.frames():
                if self.leaving:
                    return
                if not (isinstance(frame, tuple) and frame and 0 <= frame[1] < len(self.stores)):
                    break
                store = self.stores[frame[1]]
                with gc_paused():  # (a row per conversation, none in a cycle: see gcpause)
                    got = [R.Row.of(store, m) for m in frame[2]]
                if frame[0] == "head":
                    self.from_worker(self._add, got, [], store, False)
                else:
                    self.from_worker(self._add, got, frame[3], store)
                    done.add(frame[1])
        for i, store in enumerate(self.stores):
            if self.leaving:
                return
            if i in done:
                continue
            metas, findings = preload.list_store(store)
            got = [R.Row.of(store, m) for m in metas]
            self.from_worker(self._add, got, findings, store)
        self.from_worker(self._done)

    def _reset(self) -> None:
        """No row yet, or (once) the rows kept from the last run (``tui.firstrows``), each store's
        replaced by its listing."""
        first, self.first = self.first, []
        self.rows = [R.Row.of(store, meta) for store, meta in first]
        self.loaded, self.loading, self.partial = 0, True, {id(r.store) for r in self.rows}
        self.generation += 1
        if self.fixed_now is None:
            self.now = time.time()

    def _add(self, got: list, findings: list, store=None, whole: bool = True) -> None:
        """Show ``got``, ``store``'s rows: its first ones (``whole`` False) or all of them, which replace
        the first ones shown before."""
        with gc_paused():  # (a row per conversation, none in a cycle: see gcpause)
            if id(store) in self.partial:
                self.rows = [r for r in self.rows if r.store is not store]
                self.partial.discard(id(store))
            self.rows += got
            if not whole:
                self.partial.add(id(store))
            self.generation += 1
            self.loaded += whole
            self.findings += findings
            self.main.show_rows()

    def _done(self) -> None:
        self.loading = False
        self._keep_first(list(self.rows))
        bad = [f for f in self.findings if f.severity == ERROR]
        self.main.update_status(
            f"{len(bad)} problem{'s' if len(bad) != 1 else ''} (samctl check says more)" if bad else None
        )

    @work(thread=True, group="keep")
    def _keep_first(self, rows: list) -> None:
        """The newest rows, kept for the next run's first frame."""
        newest = heapq.nlargest(firstrows.KEEP, rows, key=lambda r: r.when)
        firstrows.save(self.stores, [(r.store, r.meta) for r in newest])

    # --- search ------------------------------------------------------------------------------

    def refresh_indexes(self) -> None:
        """Every store's index brought up to date, by ``samctl search``'s rule (a full check of every
        file unless the last one is recent)."""
        from samctl.search.index.update import refresh  # (lazy: as search)

        for store in self.stores:
            if store.use_cache:
                refresh(store, [])

    def search(self, text: str, limit: int = SEARCH_LIMIT) -> list:
        """The hits of ``text`` (the query syntax of ``samctl search``) over the stores in scope, best
        first, as ``samctl search`` gets them (a malformed query raises UsageError)."""
        from samctl.search import dispatch  # (lazy: as query)
        from samctl.search import query as ql  # (lazy: the search modules load numpy, wanted at the first search)

        plan = ql.parse(text, stores=tuple(STORES))
        if plan.is_empty():
            raise UsageError("nothing to search for: the query has no word to rank or require")
        stores = [s for s in self.stores if not plan.stores or s.name in plan.stores]
        if not stores:
            return []
        q = dispatch.SearchQuery(text=text, where=plan.where, limit=limit)
        findings: list = []
        with _trusting(TRUST):
            return dispatch.search(stores, q, findings, None, plan)

    def store_named(self, g: R.Group):
        """The store a search group's hits came from (``Hit.store`` names its kind; of several stores of
        one kind, the one that holds the conversation)."""
        same = [s for s in self.stores if s.name == g.store_name]
        if len(same) > 1:
            for s in same:
                try:
                    if s.has_id(g.conversation_id):
                        return s
                except SamctlError:
                    continue
        return same[0] if same else None

    # --- actions (from any screen) ----------------------------------------------------------

    def say(self, line: str) -> None:
        self.note = line
        self.main.update_status(line)
        shown = getattr(self.screen, "say", None)
        if shown is not None and self.screen is not self.main:
            shown(line)

    def ask_export(self, target) -> None:
        if target is None:
            return
        store, cid, _ = target

        def done(choice) -> None:
            if choice:
                fmt, output = choice
                try:
                    self.say(actions.export_one(store, cid, fmt, output))
                except SamctlError as exc:
                    self.say(f"not exported: {one_line(exc.message)}")

        self.push_screen(ExportScreen(cid), done)

    def ask_move(self, target, then=None) -> None:
        if target is None:
            return
        store, cid, title = target
        if not actions.writable(store):
            self.say(f"{store.describe()}: samctl only reads it; nothing was moved")
            return

        def done(yes) -> None:
            if not yes:
                self.say("nothing was moved")
                return
            try:
                line = actions.move_to_attic(store, cid)
            except SamctlError as exc:
                self.say(f"not moved: {one_line(exc.message)}")
                return
            self.rows = [r for r in self.rows if not (r.store is store and r.meta.id == cid)]
            self.generation += 1
            if self.mode == "search":  # (its results without it, the cursor where it was)
                left = [g for g in self.groups if not (g.conversation_id == cid and self.store_named(g) is store)]
                self.main.show_groups(left, self.search_seq, "", keep=True)
            else:
                self.main.show_rows()
            self.say(line)
            if then is not None:
                then()

        self.push_screen(
            ConfirmScreen(
                f"Move {cid} ({one_line(title)}) to the attic?\n"
                f"`samctl restore {cid}` (or r in the attic view) brings it back."
            ),
            done,
        )

    def restore(self, store, entry) -> bool:
        try:
            self.say(actions.restore_entry(store, entry))
        except SamctlError as exc:
            self.say(f"not restored: {one_line(exc.message)}")
            return False
        self.load()
        return True

    def copy_id(self, target) -> None:
        if target is not None:
            self._copy(target[1])

    def copy_resume(self, target) -> None:
        if target is not None:
            self._copy(actions.resume_command(target[0], target[1]))

    def _copy(self, text: str) -> None:
        self.copied.append(text)
        self.copy_to_clipboard(text)  # (OSC 52: the terminal puts it on the clipboard)
        self.say(f"copied: {one_line(text)}")

    def action_help(self) -> None:
        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen(self.screen))
