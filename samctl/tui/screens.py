"""The browser's other screens: a transcript, the attic, and the small dialogs (confirm, export, keys).

Invariants: a transcript is loaded in a worker thread (the screen paints first); its blocks fold on
their own (``rows.Block``) and the cursor stays on the same block when one opens or closes; n/N walk
the matches of the search within the transcript, else the hits the index search found in it.
"""

from __future__ import annotations

import os

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen, Screen
from textual.widgets import DataTable, Footer, Input, Label, OptionList, Static

from samctl.errors import SamctlError
from samctl.gcpause import gc_paused
from samctl.safetext import one_line
from samctl.tui import actions
from samctl.tui import rows as R
from samctl.tui.convlist import BlockList, wrapped

ROLE_STYLE = {"user": "bold green", "assistant": "bold magenta", "system": "bold yellow"}


class TranscriptScreen(Screen):
    """One conversation: a block per message text, thinking and tool call."""

    BINDINGS = [
        Binding("escape,q", "back", "Back"),
        Binding("j,down", "down", "Down", show=False),
        Binding("k,up", "up", "Up", show=False),
        Binding("g,home", "top", "Top", show=False),
        Binding("G,end", "bottom", "Bottom", show=False),
        Binding("o,space", "toggle", "Open/close"),
        Binding("O", "toggle_all", "All"),
        Binding("slash", "find", "Find"),
        Binding("n", "next", "Next hit"),
        Binding("N", "previous", "Prev hit"),
        Binding("x", "export", "Export"),
        Binding("d", "attic", "To attic"),
        Binding("y", "copy_id", "Copy id"),
        Binding("Y", "copy_resume", "Copy resume", show=False),
    ]

    def __init__(self, store, cid: str, title: str, positions: list | None = None):
        super().__init__()
        self.store, self.cid, self.title = store, cid, title
        self.positions = list(positions or [])  # the hits of the index search, in transcript order
        self.blocks: list = []
        self.needle = ""
        self.matches: list = []  # block indexes n/N walk

    def compose(self) -> ComposeResult:
        yield Static(
            Text(f"{one_line(self.store.name)}  {one_line(self.title)}  ({one_line(self.cid)})", style="bold"),
            id="head",
        )
        yield BlockList(id="transcript")
        yield Input(placeholder="find in this transcript (Enter; n/N next/previous)", id="find")
        yield Static("loading…", id="tstatus")
        yield Footer()

    DEFAULT_CSS = """
    TranscriptScreen #head { height: 1; background: $boost; }
    TranscriptScreen #transcript { height: 1fr; }
    TranscriptScreen #find { display: none; border: none; height: 1; padding: 0; }
    TranscriptScreen #tstatus { height: 1; background: $boost; color: $text-muted; }
    """

    def on_mount(self) -> None:
        self.query_one("#transcript").focus()
        self._load()

    @work(thread=True, group="transcript")
    def _load(self) -> None:
        from samctl.core.load import load_resolved  # (lazy: not needed for the first paint)

        findings: list = []
        try:
            conv = load_resolved(self.store, self.cid, findings)
            if conv is None:  # (nothing of it could be read: the first finding says why)
                why = findings[0].reason if findings else "unreadable"
                got, note = [], f"cannot read {self.cid}: {one_line(why)}"
            else:
                got, note = R.blocks(conv), ""
        except SamctlError as exc:
            got, note = [], f"cannot read {self.cid}: {one_line(exc.message)}"
        except Exception as exc:  # noqa: BLE001 - (a bug in one transcript must not take the browser down)
            if os.environ.get("SAMCTL_DEBUG") == "1":
                raise
            got, note = [], one_line(f"cannot show {self.cid}: internal error: {type(exc).__name__}: {exc}")
        # the lines are made here too, off the screen's thread: a long transcript never freezes the keys
        ol = self.query_one("#transcript", BlockList)
        width = ol.size.width - 1
        with gc_paused():  # (thousands of lines made at once, none of them in a cycle: see gcpause)
            prompts = [prompt_of(got, i, "") for i in range(len(got))]
            lines = [wrapped(p, width, self.app.console) for p in prompts] if width > 1 else None
        self.app.from_worker(self._show, got, note, prompts, lines, width)

    def _show(self, got: list, note: str, prompts: list, lines, width: int) -> None:
        self.blocks = got
        with gc_paused():
            self.query_one("#transcript", BlockList).set_items(prompts, 0, lines, width)
        if self.positions:
            self.matches = self._blocks_at(self.positions)
            if self.matches:
                self._go(self.matches[0])
        n = len({b.position for b in got})
        hits = f" · {len(self.matches)} hit{'s' if len(self.matches) != 1 else ''} (n/N)" if self.matches else ""
        self.say(note or f"{n} message{'s' if n != 1 else ''}{hits}")

    def _blocks_at(self, positions: list) -> list:
        """The first block of each message position in ``positions`` (a hidden message: the next shown)."""
        out = []
        for p in positions:
            i = next((i for i, b in enumerate(self.blocks) if b.position >= p), None)
            if i is not None and i not in out:
                out.append(i)
        return out

    def _prompt(self, i: int) -> Text:
        return prompt_of(self.blocks, i, self.needle)

    def _fill(self) -> None:
        ol = self.query_one("#transcript", BlockList)
        ol.set_items([self._prompt(i) for i in range(len(self.blocks))], ol.highlighted or 0)

    def _refresh_block(self, i: int) -> None:
        self.query_one("#transcript", BlockList).replace_item(i, self._prompt(i))

    def _go(self, i: int) -> None:
        ol = self.query_one("#transcript", BlockList)
        ol.highlighted = i
        ol.scroll_to_highlight(top=True)

    def say(self, line: str) -> None:
        self.query_one("#tstatus", Static).update(Text(line))

    # --- keys ---------------------------------------------------------------------------------

    def action_back(self) -> None:
        box = self.query_one("#find", Input)
        if box.has_focus:
            box.display = False
            self.query_one("#transcript").focus()
            return
        self.app.pop_screen()

    def action_down(self) -> None:
        self.query_one("#transcript", BlockList).action_cursor_down()

    def action_up(self) -> None:
        self.query_one("#transcript", BlockList).action_cursor_up()

    def action_top(self) -> None:
        self.query_one("#transcript", BlockList).action_first()

    def action_bottom(self) -> None:
        self.query_one("#transcript", BlockList).action_last()

    def on_block_list_selected(self, event: BlockList.Selected) -> None:
        event.stop()  # (Enter or a click on a block: open or close it)
        self._toggle(event.index)

    def action_toggle(self) -> None:
        i = self.query_one("#transcript", BlockList).highlighted
        if i is not None:
            self._toggle(i)

    def _toggle(self, i: int) -> None:
        if 0 <= i < len(self.blocks) and self.blocks[i].foldable:
            self.blocks[i].open = not self.blocks[i].open
            self._refresh_block(i)

    def action_toggle_all(self) -> None:
        """Open every folded block, or close them all when all are open."""
        foldable = [b for b in self.blocks if b.foldable]
        state = not all(b.open for b in foldable)
        for b in foldable:
            b.open = state
        self._fill()

    def action_find(self) -> None:
        box = self.query_one("#find", Input)
        box.display = True
        box.focus()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.needle = event.value.strip().casefold()
        event.input.display = False
        self.query_one("#transcript").focus()
        if not self.needle:
            self.matches = self._blocks_at(self.positions)
            self._fill()
            return
        self.matches = [i for i, b in enumerate(self.blocks) if b.matches(self.needle)]
        for i in self.matches:  # (a match inside a folded block is shown)
            if self.blocks[i].foldable and self.needle not in self.blocks[i].shown().casefold():
                self.blocks[i].open = True
        self._fill()
        if self.matches:
            at = self.query_one("#transcript", BlockList).highlighted or 0
            self._go(next((i for i in self.matches if i >= at), self.matches[0]))
        self.say(
            f"{len(self.matches)} block{'s' if len(self.matches) != 1 else ''} match "
            f"{one_line(event.value.strip())!r} (n/N)"
        )

    def action_next(self) -> None:
        self._step(+1)

    def action_previous(self) -> None:
        self._step(-1)

    def _step(self, way: int) -> None:
        if not self.matches:
            self.say("no hits in this transcript (/ finds)")
            return
        at = self.query_one("#transcript", BlockList).highlighted or 0
        later = [i for i in self.matches if (i > at if way > 0 else i < at)]
        i = (later[0] if way > 0 else later[-1]) if later else (self.matches[0] if way > 0 else self.matches[-1])
        self._go(i)
        self.say(f"hit {self.matches.index(i) + 1} of {len(self.matches)}")

    def _target(self):
        return (self.store, self.cid, self.title)

    def action_export(self) -> None:
        self.app.ask_export(self._target())

    def action_attic(self) -> None:
        self.app.ask_move(self._target(), then=self.app.pop_screen)

    def action_copy_id(self) -> None:
        self.app.copy_id(self._target())

    def action_copy_resume(self) -> None:
        self.app.copy_resume(self._target())


def prompt_of(blocks: list, i: int, needle: str) -> Text:
    """Block ``i`` as shown: the role, time and position above the first block of a message, the
    block in its present state, ``needle`` (casefolded) in reverse video."""
    b = blocks[i]
    t = Text()
    if i == 0 or blocks[i - 1].position != b.position:
        t.append(b.role, style=ROLE_STYLE.get(b.role, "bold cyan"))
        t.append(f"  {b.when}  #{b.position}\n", style="dim")
    body = Text(b.shown(), style="" if b.kind == "text" else ("italic dim" if b.kind == "thinking" else "cyan"))
    if needle:
        body.highlight_words([needle], "reverse", case_sensitive=False)
    t.append_text(body)
    return t


class AtticScreen(Screen):
    """The attic of every store in scope that has one, newest first; r restores the entry under the cursor."""

    BINDINGS = [
        Binding("escape,q", "back", "Back"),
        Binding("j,down", "down", "Down", show=False),
        Binding("k,up", "up", "Up", show=False),
        Binding("r", "restore", "Restore"),
    ]
    DEFAULT_CSS = """
    AtticScreen #attic { height: 1fr; }
    AtticScreen #astatus { height: 1; background: $boost; color: $text-muted; }
    """

    def __init__(self):
        super().__init__()
        self.entries: list = []

    def compose(self) -> ComposeResult:
        yield Static(Text("attic: what samctl removed, archived or kept (r restores)", style="bold"))
        yield DataTable(id="attic", cursor_type="row", zebra_stripes=True)
        yield Static("loading…", id="astatus")
        yield Footer()

    def on_mount(self) -> None:
        t = self.query_one("#attic", DataTable)
        t.add_column("STORE", width=11)
        t.add_column("STATE", width=8)
        t.add_column("WHEN", width=10)
        t.add_column("ID", width=24)
        t.add_column("TITLE")
        t.focus()
        self._load()

    @work(thread=True, group="attic")
    def _load(self) -> None:
        findings: list = []
        got = actions.attic_entries(self.app.stores, findings)
        self.app.from_worker(self._show, got)

    def _show(self, got: list) -> None:
        self.entries = got
        t = self.query_one("#attic", DataTable)
        t.clear()
        now = self.app.now
        t.add_rows(
            [
                (one_line(e.store), e.state, R.relative(e.when_ts, now), one_line(e.id), one_line(e.title or ""))
                for _, e in got
            ]
        )
        self.say(f"{len(got)} entr{'ies' if len(got) != 1 else 'y'}" if got else "the attic is empty")

    def say(self, line: str) -> None:
        self.query_one("#astatus", Static).update(Text(line))

    def action_back(self) -> None:
        self.app.pop_screen()

    def action_down(self) -> None:
        self.query_one("#attic", DataTable).action_cursor_down()

    def action_up(self) -> None:
        self.query_one("#attic", DataTable).action_cursor_up()

    def action_restore(self) -> None:
        t = self.query_one("#attic", DataTable)
        if not self.entries or not 0 <= t.cursor_row < len(self.entries):
            return
        store, entry = self.entries[t.cursor_row]

        def done(yes) -> None:
            if yes and self.app.restore(store, entry):
                self._load()

        self.app.push_screen(
            ConfirmScreen(f"Restore {entry.id} ({one_line(entry.title or '')}) from {entry.stem}?"), done
        )


class ConfirmScreen(ModalScreen):
    """A yes/no question: y or Enter says yes; n or Esc says no."""

    BINDINGS = [Binding("y,enter", "yes", "Yes"), Binding("n,escape", "no", "No")]
    DEFAULT_CSS = """
    ConfirmScreen { align: center middle; }
    ConfirmScreen > Vertical { width: 70; height: auto; border: thick $warning; background: $surface; padding: 1 2; }
    """

    def __init__(self, question: str):
        super().__init__()
        self.question = question

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(Text(self.question))
            yield Label(Text("y: yes   n: no", style="bold"))

    def action_yes(self) -> None:
        self.dismiss(True)

    def action_no(self) -> None:
        self.dismiss(False)


class ExportScreen(ModalScreen):
    """Choose the format (the list) and the file (the box); Enter exports, Esc does nothing."""

    BINDINGS = [Binding("escape", "cancel", "Cancel"), Binding("tab", "switch", "Format/path", show=False)]
    DEFAULT_CSS = """
    ExportScreen { align: center middle; }
    ExportScreen > Vertical { width: 76; height: auto; border: thick $accent; background: $surface; padding: 0 1; }
    ExportScreen OptionList { height: auto; max-height: 7; }
    ExportScreen Input { margin-top: 1; }
    """

    def __init__(self, cid: str):
        super().__init__()
        self.cid = cid

    def compose(self) -> ComposeResult:
        from samctl.core.export import FORMATS  # (lazy: at the first export)

        self.formats = FORMATS
        with Vertical():
            yield Label(Text(f"Export {one_line(self.cid)} as", style="bold"))
            yield OptionList(*FORMATS, id="formats")
            yield Input(value=actions.default_output(self.cid, FORMATS[0]), id="output")
            yield Label(Text("Enter: export   Tab: format/path   Esc: cancel", style="dim"))

    def on_mount(self) -> None:
        ol = self.query_one("#formats", OptionList)
        ol.highlighted = 0
        ol.focus()

    def on_option_list_option_highlighted(self, event: OptionList.OptionHighlighted) -> None:
        self.query_one("#output", Input).value = actions.default_output(self.cid, self.formats[event.option_index])

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        self.dismiss((self.formats[event.option_index], self.query_one("#output", Input).value))

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        i = self.query_one("#formats", OptionList).highlighted or 0
        self.dismiss((self.formats[i], event.value))

    def action_switch(self) -> None:
        box = self.query_one("#output", Input)
        (self.query_one("#formats") if box.has_focus else box).focus()

    def action_cancel(self) -> None:
        self.dismiss(None)


class HelpScreen(ModalScreen):
    """Every key of the screen below (and the app's), with what it does."""

    BINDINGS = [Binding("escape,q,question_mark", "close", "Close")]
    DEFAULT_CSS = """
    HelpScreen { align: center middle; }
    HelpScreen > Vertical { width: 60; height: auto; max-height: 90%; border: thick $accent; background: $surface;
                            padding: 0 1; }
    """

    def __init__(self, below):
        super().__init__()
        self.below = below

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label(Text("Keys", style="bold"))
            yield Static(keys_text(self.below, self.app), id="keys")
            yield Label(Text("Esc or ? closes · the mouse selects and scrolls", style="dim"))

    def action_close(self) -> None:
        self.dismiss(None)


def keys_text(screen, app) -> Text:
    """Every binding of ``screen``, then of its focused list (the keys not said yet), then of ``app``:
    its keys (as typed) and what it does, in two columns."""
    said: set = set()
    focused = getattr(screen, "focused", None)
    widget = list(getattr(focused, "BINDINGS", [])) if focused is not None and focused.id in LISTS else []
    entries = []
    for b in list(getattr(screen, "BINDINGS", [])) + widget + list(app.BINDINGS):
        new = [k.strip() for k in b.key.split(",") if k.strip() not in said]
        if new:
            said.update(new)
            entries.append((", ".join(_key_name(k) for k in new), b.description or b.action))
    half = (len(entries) + 1) // 2
    t = Text()
    for row in range(half):
        for keys, what in entries[row::half][:2]:
            t.append(f"{keys:<10}", style="bold")
            t.append(f"{what:<17} ")
        t.append("\n")
    return t


LISTS = ("list", "results", "transcript", "attic")  # the focusable lists whose own keys the list says


def _key_name(k: str) -> str:
    return {
        "slash": "/",
        "question_mark": "?",
        "escape": "Esc",
        "space": "Space",
        "enter": "Enter",
        "down": "↓",
        "up": "↑",
        "home": "Home",
        "end": "End",
        "tab": "Tab",
        "pageup": "PgUp",
        "pagedown": "PgDn",
    }.get(k.strip(), k.strip())
