"""What the browser shows, without Textual: list rows (filter, sort, relative dates), search hits
grouped by conversation, and a transcript cut into blocks that fold.

Invariants: every string that came from a file goes through ``safetext.one_line``/``safe_text`` before
it is shown (no control character from a store reaches the terminal); ``Block.position`` is the
index in ``Conversation.messages``, the numbering search hits and ``samctl show --at`` use.
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass, field

from rich.cells import cell_len, set_cell_size

from samctl.core.listing import project_name
from samctl.model import recency
from samctl.safetext import one_line, safe_text
from samctl.timeparse import format_local

SORT_KEYS = ("updated", "created", "title", "messages", "size")  # as `samctl ls --sort`
COLUMNS = (("STORE", 11), ("PROJECT", 14), ("WHEN", 10), ("MSGS", 5), ("TITLE", 0))  # 0: the rest of the line
GAP = 2
# The columns of Textual's vertical scrollbar (scrollbar-size-vertical), beside a list longer than its screen.
SCROLLBAR = 2
CUT_LINES = 12  # a block longer than this shows its first lines until expanded


@dataclass(slots=True)
class Row:
    """One conversation of the list: its store object (for actions) and meta, and the cells shown."""

    store: object
    meta: object
    project: str
    when: float
    haystack: str  # title, project and store, casefolded: what the filter matches

    @classmethod
    def of(cls, store, meta) -> Row:
        project = meta.project or ""
        return cls(
            store,
            meta,
            one_line(project_name(project)),
            recency(meta),
            f"{meta.title}\n{project}\n{meta.store}".casefold(),
        )


def relative(ts: float | None, now: float) -> str:
    """A short age: ``now``, ``5m``, ``3h``, ``2d``, ``6w``; older than a year, the date."""
    if not ts:
        return "-"
    s = max(0.0, now - ts)
    for limit, unit, size in (
        (60, "now", 0),
        (3600, "m", 60),
        (86400, "h", 3600),
        (14 * 86400, "d", 86400),
        (365 * 86400, "w", 7 * 86400),
    ):
        if s < limit:
            return unit if not size else f"{int(s // size)}{unit}"
    return time.strftime("%Y-%m-%d", time.gmtime(ts))


def filtered(rows: list, text: str) -> list:
    """The rows whose title, project or store contain every word of ``text`` (case-insensitive)."""
    out = rows
    for w in text.casefold().split():  # (one plain pass per word: no generator frame per row)
        out = [r for r in out if w in r.haystack]
    return out


def ordered(rows: list, key: str = "updated", reverse: bool = False) -> list:
    """``rows`` in the order of ``samctl ls --sort key`` (newest/largest first, titles A-Z)."""
    keyf = {
        "updated": lambda r: r.when,
        "created": lambda r: r.meta.created_ts or 0.0,
        "title": lambda r: r.meta.title.casefold(),
        "messages": lambda r: r.meta.message_count or 0,
        "size": lambda r: r.meta.size or 0,
    }[key]
    return sorted(rows, key=keyf, reverse=(key != "title") != reverse)


def cells(row: Row, now: float) -> tuple:
    m = row.meta
    return (
        one_line(m.store),
        row.project,
        relative(row.when, now),
        str(m.message_count) if m.message_count is not None else "-",
        one_line(m.title),
    )


def fit(text: str, width: int) -> str:
    """``text`` in exactly ``width`` terminal cells: padded, or cut with an ellipsis (as Rich's
    ``Text.truncate(width, overflow="ellipsis", pad=True)``)."""
    n = cell_len(text)
    if n <= width:
        return text + " " * (width - n)
    return set_cell_size(text, width - 1) + "…"


def line(cells, hidden, width: int) -> str:
    """One line of the conversation list (its header or a row) in ``width`` cells: a space, then each
    column not in ``hidden`` (indexes of COLUMNS) in its width and GAP spaces, the last one the rest."""
    parts = [" "]
    for k, ((_, w), cell) in enumerate(zip(COLUMNS, cells)):
        if k not in hidden:
            parts.append(fit(str(cell), w) + " " * GAP if w else str(cell))
    return fit("".join(parts), width)


def list_status(loading: bool, loaded: int, stores: int, shown: int, rows: int, sort_key: str, reverse: bool) -> str:
    """The status line under the list: what is shown of how many, from how many stores, in which order."""
    head = f"loading {loaded}/{stores} stores… " if loading else ""
    arrow = "↑" if reverse else "↓"
    return (
        f"{head}{shown} of {rows} conversations in {stores} store{'s' if stores != 1 else ''} · sort {sort_key} {arrow}"
    )


# --- search results ----------------------------------------------------------------------------


@dataclass
class Group:
    """The hits of one conversation, best first, in the order of its best hit."""

    store_name: str
    conversation_id: str
    title: str
    hits: list = field(default_factory=list)

    @property
    def positions(self) -> list:
        """The message positions of the hits, in transcript order (what n/N walk through)."""
        return sorted(
            {h.position for h in self.hits if h.kind == "message" and h.position is not None and h.position >= 0}
        )


def grouped(hits: list) -> list[Group]:
    """``hits`` grouped by (store, conversation), groups in the order of their best hit."""
    out: dict = {}
    for h in hits:
        key = (h.store, h.conversation_id)
        if key not in out:
            out[key] = Group(h.store, h.conversation_id, h.title)
        out[key].hits.append(h)
    return list(out.values())


def snippet(h, width: int = 200) -> tuple[str, list]:
    """The hit's snippet on one line of at most ``width`` characters, and its matched words' (start,
    end) in that line: each whitespace character made a space on its own, so the marks' offsets
    hold (as `samctl search` prints them); a snippet whose escaping changed its length keeps none."""
    raw = re.sub(r"\s", " ", h.snippet or h.text or "")
    text = safe_text(raw)
    marks = list(h.marks or []) if text == raw and h.snippet else []
    if len(text) > width:
        text = text[: width - 1] + "…"
        marks = [(a, min(b, width - 1)) for a, b in marks if a < width - 1]
    return text, marks


# --- transcript -------------------------------------------------------------------------------


@dataclass
class Block:
    """A piece of a transcript that folds on its own: a message's text, its thinking, one tool call.
    ``kind``: text | thinking | tool.  ``open``: shown whole (thinking and tool calls start closed,
    a text longer than CUT_LINES starts cut)."""

    kind: str
    position: int
    role: str
    when: str
    label: str
    text: str
    open: bool = False

    @property
    def lines(self) -> list:
        return self.text.splitlines() or [""]

    @property
    def foldable(self) -> bool:
        return self.kind != "text" or len(self.lines) > CUT_LINES

    def shown(self) -> str:
        """The block as shown in its present state (plain text; the screen adds styles)."""
        if self.kind == "text":
            lines = self.lines
            if not self.open and len(lines) > CUT_LINES:
                more = len(lines) - CUT_LINES
                return "\n".join(lines[:CUT_LINES] + [f"… {more} more line{'s' if more != 1 else ''} (o: expand)"])
            return self.text
        mark = "▾" if self.open else "▸"
        head = f"{mark} {self.label}"
        return head + ("\n" + self.text if self.open and self.text else "")

    def matches(self, needle: str) -> bool:
        return needle in self.text.casefold() or needle in self.label.casefold()


def tool_label(name: str, arguments) -> str:
    """``Bash(git status)``: the tool's name and its main argument (the command, path or first value),
    on one line, short."""
    args = arguments
    if isinstance(args, str):
        try:
            args = json.loads(args)
        except ValueError:
            pass
    main = ""
    if isinstance(args, dict):
        for k in ("command", "cmd", "file_path", "path", "pattern", "query", "url", "description"):
            if isinstance(args.get(k), (str, list)):
                main = args[k] if isinstance(args[k], str) else " ".join(map(str, args[k]))
                break
        else:
            first = next((v for v in args.values() if isinstance(v, str)), "")
            main = first
    elif isinstance(args, str):
        main = args
    main = one_line(" ".join(main.split()))
    if len(main) > 60:
        main = main[:59] + "…"
    return f"{one_line(name)}({main})"


def _args_text(arguments) -> str:
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except ValueError:
            return arguments
    return json.dumps(arguments, indent=2, ensure_ascii=False)


def blocks(conv, show_hidden: bool = False) -> list[Block]:
    """The transcript of ``conv`` as blocks, in order: for each message its thinking (folded), its
    text (cut when long; a tool result's text is its output), then its tool calls (each folded to
    its label).  Hidden messages (what the app's UI hides) are left out unless ``show_hidden``."""
    out = []
    for pos, m in enumerate(conv.messages):
        if m.hidden and not show_hidden:
            continue
        when = format_local(m.timestamp_ts) if m.timestamp_ts else one_line(m.timestamp or "")
        role = one_line(m.role or "?")
        if m.role == "tool" and m.tool_name:
            role = f"tool {one_line(m.tool_name)}"
        if m.reasoning:
            n = len(m.reasoning.splitlines())
            out.append(
                Block(
                    "thinking", pos, role, when, f"thinking ({n} line{'s' if n != 1 else ''})", safe_text(m.reasoning)
                )
            )
        if m.content or not (m.tool_calls or m.actions or m.reasoning):
            out.append(Block("text", pos, role, when, "", safe_text(m.content or "")))
        for tc in m.tool_calls:
            out.append(
                Block("tool", pos, role, when, tool_label(tc.name, tc.arguments), safe_text(_args_text(tc.arguments)))
            )
        for a in m.actions:
            if isinstance(a, dict):
                name = a.get("tool") or a.get("name") or a.get("type") or "action"
                out.append(
                    Block(
                        "tool",
                        pos,
                        role,
                        when,
                        tool_label(str(name), a.get("input") or a.get("arguments") or a),
                        safe_text(_args_text(a)),
                    )
                )
    return out
