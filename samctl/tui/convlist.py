"""The conversation list: a virtual table that renders only the lines on screen.

Invariants: its cost per paint and per keystroke does not grow with the number of rows (Textual's
DataTable builds an object per row, which for 100,000 conversations took tens of seconds per refill);
``rows`` is the list shown, in order, and ``cells(row)`` makes one row's cells only when it is painted.
"""

from __future__ import annotations

from rich.text import Text
from textual.binding import Binding
from textual.events import Click
from textual.geometry import Size
from textual.message import Message
from textual.scroll_view import ScrollView
from textual.strip import Strip

COLUMNS = (("STORE", 11), ("PROJECT", 14), ("WHEN", 10), ("MSGS", 5), ("TITLE", 0))  # 0: the rest of the line
GAP = 2


class ConvList(ScrollView, can_focus=True):
    """Rows of cells under a fixed header line, a cursor row; Enter or a click on the cursor row
    posts ``Selected``."""

    BINDINGS = [
        Binding("enter", "select", "Open", show=False),
        Binding("up", "cursor_up", "Up", show=False),
        Binding("down", "cursor_down", "Down", show=False),
        Binding("pageup", "page_up", "Page up", show=False),
        Binding("pagedown", "page_down", "Page down", show=False),
        Binding("home", "first", "First", show=False),
        Binding("end", "last", "Last", show=False),
    ]
    COMPONENT_CLASSES = {"convlist--header", "convlist--cursor", "convlist--odd"}
    DEFAULT_CSS = """
    ConvList { height: 1fr; }
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
        self.hidden: set = set()  # indexes of COLUMNS not shown (PROJECT when no row has one)

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
        width = self.size.width
        if y == 0:
            return self._strip([name for name, _ in COLUMNS], width, self.get_component_rich_style("convlist--header"))
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
        line = Text(" ", style=style, no_wrap=True, end="")
        for k, ((name, w), cell) in enumerate(zip(COLUMNS, cells)):
            if k in self.hidden:
                continue
            piece = Text(str(cell), no_wrap=True, end="")
            if w:
                piece.truncate(w, overflow="ellipsis", pad=True)
                piece.append(" " * GAP)
            line.append_text(piece)
        line.truncate(width, overflow="ellipsis", pad=True)
        return Strip(line.render(self.app.console), width)
