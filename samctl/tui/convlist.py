"""The conversation list: a virtual table that renders only the lines on screen.

Invariants: its cost per paint and per keystroke does not grow with the number of rows (Textual's
DataTable builds an object per row, which for 100,000 conversations took tens of seconds per refill);
``rows`` is the list shown, in order, and ``cells(row)`` makes one row's cells only when it is painted.
"""

from __future__ import annotations

from rich.cells import cell_len
from rich.text import Text
from textual.binding import Binding
from textual.events import Click
from textual.geometry import Size
from textual.message import Message
from textual.scroll_view import ScrollView
from textual.strip import Strip

from samctl.tui import rows as R

# The keys both lists answer to themselves; the screens add the vi keys.
MOVES = [
    Binding("enter", "select", "Open", show=False),
    Binding("up", "cursor_up", "Up", show=False),
    Binding("down", "cursor_down", "Down", show=False),
    Binding("pageup", "page_up", "Page up", show=False),
    Binding("pagedown", "page_down", "Page down", show=False),
    Binding("home", "first", "First", show=False),
    Binding("end", "last", "Last", show=False),
]


class ConvList(ScrollView, can_focus=True):
    """Rows of cells under a fixed header line, a cursor row; Enter or a click on the cursor row
    posts ``Selected``."""

    BINDINGS = MOVES
    COMPONENT_CLASSES = {"convlist--header", "convlist--cursor", "convlist--odd"}
    DEFAULT_CSS = """
    ConvList { height: 1fr; overflow-x: hidden; }
    ConvList > .convlist--header { text-style: bold; color: $text-accent; background: $panel; }
    ConvList > .convlist--cursor { background: $block-cursor-background; color: $block-cursor-foreground;
                                   text-style: bold; }
    ConvList:blur > .convlist--cursor { background: $block-cursor-blurred-background; text-style: none; }
    ConvList > .convlist--odd { background: $surface-lighten-1 20%; }
    """

    class Selected(Message):
        def __init__(self, index: int):
            super().__init__()
            self.index = index

    def __init__(self, cells, **kw):
        super().__init__(**kw)
        self.cells = cells
        self.rows: list = []
        self.cursor_row = 0
        self.hidden: set = set()  # indexes of R.COLUMNS not shown (PROJECT when no row has one)

    # --- the API the screen (and the tests) use: that of DataTable's rows ----------------------

    @property
    def row_count(self) -> int:
        return len(self.rows)

    def get_row_at(self, i: int) -> list:
        return list(self.cells(self.rows[i]))

    def set_rows(self, rows: list, keep=None, hidden=()) -> None:
        """Show ``rows``; the cursor goes to ``keep`` when it is among them, else stays where it was;
        ``hidden``: the indexes of the columns left out."""
        self.rows, self.hidden = rows, set(hidden)
        if keep is not None:
            try:
                self.cursor_row = rows.index(keep)
            except ValueError:
                pass
        self.cursor_row = max(0, min(self.cursor_row, len(rows) - 1))
        self.virtual_size = Size(self.size.width, len(rows) + 1)
        self._follow()
        self.refresh()

    def move_cursor(self, row: int, animate: bool = False) -> None:
        if self.rows:
            self.cursor_row = max(0, min(row, len(self.rows) - 1))
            self._follow()
            self.refresh()

    def action_cursor_down(self) -> None:
        self.move_cursor(self.cursor_row + 1)

    def action_cursor_up(self) -> None:
        self.move_cursor(self.cursor_row - 1)

    def action_page_down(self) -> None:
        self.move_cursor(self.cursor_row + max(1, self.size.height - 2))

    def action_page_up(self) -> None:
        self.move_cursor(self.cursor_row - max(1, self.size.height - 2))

    def action_first(self) -> None:
        self.move_cursor(0)

    def action_last(self) -> None:
        self.move_cursor(len(self.rows) - 1)

    def action_select(self) -> None:
        if self.rows:
            self.post_message(self.Selected(self.cursor_row))

    def _follow(self) -> None:
        """Scroll so the cursor row is on screen (below the header line)."""
        top, height = int(self.scroll_offset.y), max(1, self.size.height - 1)
        if self.cursor_row < top:
            self.scroll_to(y=self.cursor_row, animate=False)
        elif self.cursor_row >= top + height:
            self.scroll_to(y=self.cursor_row - height + 1, animate=False)

    def on_resize(self) -> None:
        self.virtual_size = Size(self.size.width, len(self.rows) + 1)

    def on_click(self, event: Click) -> None:
        offset = event.get_content_offset(self)
        if offset is None or offset.y == 0:  # (the header)
            return
        i = int(self.scroll_offset.y) + offset.y - 1
        if not 0 <= i < len(self.rows):
            return
        if i == self.cursor_row:
            self.post_message(self.Selected(i))
        else:
            self.move_cursor(i)

    # --- painting -----------------------------------------------------------------------------

    def render_line(self, y: int) -> Strip:
        width = self.scrollable_content_region.width  # (less the scrollbar: the ellipsis of a cut title shows)
        if y == 0:
            return self._strip(
                [name for name, _ in R.COLUMNS], width, self.get_component_rich_style("convlist--header")
            )
        i = int(self.scroll_offset.y) + y - 1
        if i >= len(self.rows):
            return Strip.blank(width, self.rich_style)
        if i == self.cursor_row:
            style = self.get_component_rich_style("convlist--cursor")
        elif i % 2:
            style = self.get_component_rich_style("convlist--odd")
        else:
            style = self.rich_style
        return self._strip(self.cells(self.rows[i]), width, style)

    def _strip(self, cells, width: int, style) -> Strip:
        text = Text(R.line(cells, self.hidden, width), style=style, no_wrap=True, end="")
        return Strip(text.render(self.app.console), width)


class BlockList(ScrollView, can_focus=True):
    """Items of several lines each (search results, transcript blocks), wrapped to the width once and
    painted line by line: laying out thousands of items costs their wrapping, never a widget each
    (a widget per result, as an OptionList makes, is laid out slowly enough to be seen).  One item is highlighted;
    Enter or a click on it posts ``Selected``."""

    BINDINGS = MOVES
    COMPONENT_CLASSES = {"blocklist--cursor"}
    DEFAULT_CSS = """
    BlockList { height: 1fr; }
    BlockList > .blocklist--cursor { background: $block-cursor-blurred-background; }
    BlockList:focus > .blocklist--cursor { background: $block-cursor-background 40%; }
    """

    class Selected(Message):
        def __init__(self, index: int):
            super().__init__()
            self.index = index

    class Highlighted(Message):
        """The cursor moved (by a key or the mouse) to item ``index``."""

        def __init__(self, index: int):
            super().__init__()
            self.index = index

    def __init__(self, **kw):
        super().__init__(**kw)
        self.prompts: list = []
        self._wrapped: list = []  # per item: its lines (Text), wrapped to ``_width``
        self._starts: list = []  # per item: the index of its first line
        self._owner: list = []  # per line: its item
        self._width = 0
        self._highlighted: int | None = None

    # --- items -----------------------------------------------------------------------------------

    @property
    def option_count(self) -> int:
        return len(self.prompts)

    def prompt(self, i: int) -> Text:
        return self.prompts[i]

    def set_items(self, prompts: list, highlighted: int | None = 0, lines=None, width: int = 0) -> None:
        """Show ``prompts``; ``lines``: each one already ``wrapped`` to ``width`` (used if that is the
        width now)."""
        self.prompts = list(prompts)
        if lines is not None and width == self.size.width - 1 and len(lines) == len(self.prompts):
            self._wrapped, self._width = list(lines), width
        else:
            self._wrapped = [None] * len(self.prompts)
        self._highlighted = None if not self.prompts or highlighted is None else min(highlighted, len(self.prompts) - 1)
        self._layout()

    def add_items(self, prompts: list) -> None:
        self.prompts += prompts
        self._wrapped += [None] * len(prompts)
        if self._highlighted is None and self.prompts:
            self._highlighted = 0
        self._layout()

    def replace_item(self, i: int, prompt: Text) -> None:
        self.prompts[i] = prompt
        self._wrapped[i] = None
        self._layout()

    def _layout(self) -> None:
        if self.size.width < 2:  # (not laid out yet: wrapped once the size is known, by on_resize)
            return
        width = self.size.width - 1
        first = not self._width
        if width != self._width:
            self._wrapped = [None] * len(self.prompts)
            self._width = width
        console = self.app.console
        starts, owner = [], []
        for i, p in enumerate(self.prompts):
            if self._wrapped[i] is None:
                self._wrapped[i] = wrapped(p, width, console)
            starts.append(len(owner))
            owner += [i] * len(self._wrapped[i])
        self._starts, self._owner = starts, owner
        self.virtual_size = Size(self.size.width, len(owner))
        if first and self._highlighted:  # (a cursor set before the size was known: now it can be followed)
            self.call_after_refresh(self.scroll_to_highlight, True)
        self.refresh()

    def on_resize(self) -> None:
        if self.prompts:
            self._layout()

    # --- the cursor -----------------------------------------------------------------------------

    @property
    def highlighted(self) -> int | None:
        return self._highlighted

    @highlighted.setter
    def highlighted(self, i: int | None) -> None:
        if i is None or not self.prompts:
            self._highlighted = None
        else:
            self._highlighted = max(0, min(i, len(self.prompts) - 1))
            self.scroll_to_highlight()
            self.post_message(self.Highlighted(self._highlighted))
        self.refresh()

    def scroll_to_highlight(self, top: bool = False) -> None:
        """Scroll so the highlighted item is on screen (``top``: at the top of the screen)."""
        i = self._highlighted
        if i is None or i >= len(self._starts):
            return
        first = self._starts[i]
        last = first + len(self._wrapped[i]) - 1
        view, height = int(self.scroll_offset.y), max(1, self.size.height)
        if top or first < view:
            self.scroll_to(y=first, animate=False)
        elif last >= view + height:
            self.scroll_to(y=min(first, last - height + 1), animate=False)

    def action_cursor_down(self) -> None:
        if self.prompts:
            self.highlighted = 0 if self._highlighted is None else self._highlighted + 1

    def action_cursor_up(self) -> None:
        if self.prompts:
            self.highlighted = 0 if self._highlighted is None else self._highlighted - 1

    def _item_at_line(self, line: int) -> int:
        return self._owner[max(0, min(line, len(self._owner) - 1))]

    def action_page_down(self) -> None:
        if self.prompts:
            at = self._starts[self._highlighted or 0] + max(1, self.size.height - 1)
            self.highlighted = self._item_at_line(at)

    def action_page_up(self) -> None:
        if self.prompts:
            at = self._starts[self._highlighted or 0] - max(1, self.size.height - 1)
            self.highlighted = self._item_at_line(at)

    def action_first(self) -> None:
        if self.prompts:
            self.highlighted = 0

    def action_last(self) -> None:
        if self.prompts:
            self.highlighted = len(self.prompts) - 1

    def action_select(self) -> None:
        if self._highlighted is not None:
            self.post_message(self.Selected(self._highlighted))

    def on_click(self, event: Click) -> None:
        offset = event.get_content_offset(self)
        if offset is None or not self._owner:
            return
        line = int(self.scroll_offset.y) + offset.y
        if line >= len(self._owner):
            return
        i = self._owner[line]
        if i == self._highlighted:
            self.post_message(self.Selected(i))
        else:
            self.highlighted = i

    # --- painting -----------------------------------------------------------------------------

    def render_line(self, y: int) -> Strip:
        width = self.size.width
        line = int(self.scroll_offset.y) + y
        if line >= len(self._owner):
            return Strip.blank(width, self.rich_style)
        i = self._owner[line]
        text = self._wrapped[i][line - self._starts[i]]
        base = self.get_component_rich_style("blocklist--cursor") if i == self._highlighted else self.rich_style
        row = Text(" ", no_wrap=True, end="", style=base)  # (a margin: the cursor shows as a bar there too)
        row.append_text(text)
        row.truncate(width, overflow="ellipsis", pad=True)
        return Strip(row.render(self.app.console), width)


def wrapped(text: Text, width: int, console) -> list:
    """``text`` as lines of at most ``width`` cells, broken after a space where a line is too long (a
    word longer than the line is cut).  Lines that fit, and ASCII lines that do not, skip rich's
    ``Text.wrap`` (which measures every word: 2.5 s for a transcript of 4,000 blocks); other
    lines that do not fit go through it."""
    out = []
    for line in text.split("\n", allow_blank=True):
        plain = line.plain
        if len(plain) <= width and (plain.isascii() or cell_len(plain) <= width):
            out.append(line)
        elif plain.isascii():
            out += [piece.rstrip() or piece for piece in line.divide(_breaks(plain, width))]
        else:
            out += list(line.wrap(console, width)) or [Text("")]
    return out or [Text("")]


def _breaks(line: str, width: int) -> list:
    """Where an ASCII line longer than ``width`` breaks: after the last space that fits, else at ``width``."""
    out, pos = [], 0
    while len(line) - pos > width:
        cut = line.rfind(" ", pos, pos + width + 1)
        cut = cut + 1 if cut > pos else pos + width
        out.append(cut)
        pos = cut
    return out
