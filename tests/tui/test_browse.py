"""samctl browse (issue #38) driven by Textual's pilot: every key of every screen and every action, on a
copy of fixtures/demo.  Actions are checked against what the command they stand for does (the same
export bytes, the same attic entry, the same refusals with nothing changed)."""

from __future__ import annotations

import asyncio
import json
import threading

import pytest

from tests.conftest import fingerprint
from tests.tui.conftest import NOW, open_stores

pytest.importorskip("textual")

from samctl.tui import rows as R  # noqa: E402
from samctl.tui.app import BrowseApp, MainScreen  # noqa: E402
from samctl.tui.screens import AtticScreen, ConfirmScreen, ExportScreen, HelpScreen, TranscriptScreen  # noqa: E402


async def settle(pilot, wait: float = 0.0) -> None:
    """Until the workers started so far (listing, search, transcript) are done and their results shown."""
    await pilot.pause(wait)
    for _ in range(100):  # (a search that ends starts the one typed meanwhile)
        await pilot.app.workers.wait_for_complete()
        await pilot.pause()
        if not pilot.app.searching and not any(w.is_running for w in pilot.app.workers):
            return


def drive(stores, steps, size=(110, 30)) -> BrowseApp:
    app = BrowseApp(stores, now=NOW)

    async def go():
        async with app.run_test(size=size) as pilot:
            await settle(pilot)
            await steps(pilot)

    asyncio.run(go())
    return app


def titles(app) -> list:
    return [r.meta.title for r in app.shown]


def cursor_title(app) -> str:
    return app.main.current()[2]


# --- the list --------------------------------------------------------------------------------


def test_every_conversation_newest_first_with_its_cells(stores, run, demo):
    async def steps(pilot):
        app = pilot.app
        table = app.main.query_one("#list")
        assert table.row_count == len(app.rows)
        first = table.get_row_at(0)
        assert first == list(R.cells(app.shown[0], NOW))
        assert "loading" not in str(app.main.query_one("#status").render())

    app = drive(stores, steps)
    listed = []
    for root in ("SAM", "mermaid-project", "claude_code", "codex", "llm/logs.db"):
        r = run("--root", demo / root, "ls", "--format", "json")
        assert r.exit_code == 0, r.stderr
        listed += json.loads(r.stdout)
    assert sorted(m.meta.id for m in app.rows) == sorted(x["id"] for x in listed)
    whens = [r.when for r in app.shown]
    assert whens == sorted(whens, reverse=True) and len(set(r.meta.store for r in app.shown)) == 5


def test_first_paint_does_not_wait_for_the_listing(demo):
    """A store whose listing blocks: the screen is up, says it is loading, and keys work meanwhile."""
    gate = threading.Event()
    [store] = open_stores(demo, ("SAM",))
    real = store.list_metas

    def slow(findings):
        gate.wait(10)
        return real(findings)

    store.list_metas = slow
    app = BrowseApp([store], now=NOW)

    async def go():
        async with app.run_test(size=(100, 24)) as pilot:
            await pilot.pause(0.2)
            status = str(app.main.query_one("#status").render())
            assert "loading 0/1 stores" in status and app.rows == []
            await pilot.press("question_mark")
            assert isinstance(app.screen, HelpScreen)
            await pilot.press("escape")
            gate.set()
            await settle(pilot)
            assert len(app.rows) == 3 and "loading" not in str(app.main.query_one("#status").render())

    asyncio.run(go())


def test_a_listing_that_ends_after_the_quit_key_is_dropped(demo):
    """q while a store is still being listed: what the listing brings once the app is leaving is not shown
    on a screen being taken down (it raised NoMatches, and the browser exited 1); and a worker's result
    for an app that is not running is dropped."""
    gate, done = threading.Event(), threading.Event()
    [store] = open_stores(demo, ("SAM",))
    real = store.list_metas

    def slow(findings):
        gate.wait(10)
        try:
            return real(findings)
        finally:
            done.set()

    store.list_metas = slow
    app = BrowseApp([store], now=NOW)
    real_exit = app.exit

    def exit_then_list(*a, **kw):
        real_exit(*a, **kw)
        gate.set()
        done.wait(10)  # (the rows are on their way to the app's thread while it leaves)

    app.exit = exit_then_list

    async def go():
        async with app.run_test(size=(100, 24)) as pilot:
            await pilot.pause(0.1)
            await pilot.press("q")

    asyncio.run(go())
    assert done.is_set() and app.return_code == 0 and app.rows == []
    called: list = []
    BrowseApp([store]).from_worker(called.append, 1)  # (never run: no loop to run it on)
    assert called == []


def test_filter_as_you_type_by_title_project_and_store(stores):
    async def steps(pilot):
        app = pilot.app
        await pilot.press("slash", *"flaky")
        assert titles(app) == ["Fix the flaky test in tests/parser.rs"]
        await pilot.press(*["backspace"] * 5, *"codex")
        assert {r.meta.store for r in app.shown} == {"codex"} and len(app.shown) == 6
        await pilot.press(*["backspace"] * 5, *"codex hello")  # every word must match
        assert titles(app) == ["hello"]
        await pilot.press("escape")  # out of the box, to the list: the filter stays
        assert app.focused is app.main.query_one("#list") and titles(app) == ["hello"]
        await pilot.press("escape")  # then Esc clears it
        assert len(app.shown) == len(app.rows)

    drive(stores, steps)


def test_the_filter_reads_a_project_when_the_model_has_one(stores):
    class Meta:  # (the model's `project` field is another change; the browser reads it when it is there)
        store, id, title, created_ts, updated_ts, active_ts, message_count, size = "sam", "x", "t", 1.0, 2.0, None, 1, 1
        project = "samctl"

    row = R.Row.of(stores[0], Meta())
    assert row.project == "samctl" and R.filtered([row], "SAMCTL") == [row]
    assert R.cells(row, NOW)[1] == "samctl"


class _Projects:
    """A store whose metas carry a project, for the PROJECT column."""

    name, read_only, conv_dir = "mermaid", True, "/nowhere"

    def list_metas(self, findings):
        class Meta:
            store, title, created_ts, active_ts, message_count, size, pinned = "mermaid", "t", 1.0, None, 1, 1, False

            def __init__(self, i, project):
                self.id, self.project, self.updated_ts = f"c{i}", project, NOW - i

        return [Meta(0, "samctl"), Meta(1, None)]


def _line(widget, y) -> str:
    return "".join(seg.text for seg in widget.render_line(y))


def test_the_project_column_is_shown_when_a_row_has_one(stores):
    async def with_projects(pilot):
        table = pilot.app.main.query_one("#list")
        assert "PROJECT" in _line(table, 0) and "samctl" in _line(table, 1)
        await pilot.press("slash", *"samctl")
        assert [r.meta.id for r in pilot.app.shown] == ["c0"]

    drive([_Projects()], with_projects)

    async def without(pilot):
        assert "PROJECT" not in _line(pilot.app.main.query_one("#list"), 0)

    no_projects = [s for s in stores if not any(m.project for m in s.list_metas([]))]
    assert no_projects
    drive(no_projects, without)


def test_vi_keys_and_arrows_move_the_cursor(stores):
    async def steps(pilot):
        app = pilot.app
        table = app.main.query_one("#list")
        await pilot.press("j", "j")
        assert table.cursor_row == 2
        await pilot.press("k")
        assert table.cursor_row == 1
        await pilot.press("down", "down", "up")
        assert table.cursor_row == 2
        await pilot.press("G")
        assert table.cursor_row == len(app.shown) - 1
        await pilot.press("g")
        assert table.cursor_row == 0

    drive(stores, steps)


def test_sort_keys_cycle_and_reverse(stores):
    async def steps(pilot):
        app = pilot.app
        seen = []
        for _ in R.SORT_KEYS:
            await pilot.press("S")
            seen.append(app.sort_key)
            assert app.shown == R.ordered(app.rows, app.sort_key)
            if app.sort_key == "title":
                assert titles(app) == sorted(titles(app), key=str.casefold)
            if app.sort_key == "messages":
                counts = [r.meta.message_count or 0 for r in app.shown]
                assert counts == sorted(counts, reverse=True)
        assert seen == ["created", "title", "messages", "size", "updated"]
        before = titles(app)
        await pilot.press("R")
        assert app.reverse and [r.when for r in app.shown] == sorted(r.when for r in app.shown)
        assert "sort updated ↑" in str(app.main.query_one("#status").render())
        await pilot.press("R")
        assert titles(app) == before

    drive(stores, steps)


def test_the_mouse_selects_and_opens_a_row(stores):
    async def steps(pilot):
        app = pilot.app
        table = app.main.query_one("#list")
        await pilot.click("#list", offset=(20, 3))  # header, then rows 0, 1, 2
        assert table.cursor_row == 2
        await pilot.click("#list", offset=(20, 3))  # a click on the highlighted row opens it
        await settle(pilot)
        assert isinstance(app.screen, TranscriptScreen) and app.screen.title == app.shown[2].meta.title

    drive(stores, steps)


# --- search ------------------------------------------------------------------------------------


def test_search_as_you_type_groups_hits_and_coalesces_keystrokes(stores, monkeypatch, run, demo):
    asked = []
    gate = threading.Event()

    async def steps(pilot):
        app = pilot.app
        real = app.search

        def search(text, limit):
            asked.append(text)
            gate.wait(10)  # the first search is slow: the other keys come while it runs
            return real(text, limit)

        monkeypatch.setattr(app, "search", search)
        await pilot.press("s")
        await settle(pilot)  # (the indexes brought up to date as the box opens)
        await pilot.press(*"flaky")
        await pilot.pause(0.1)
        assert asked == ["f"] and app.pending == ("flaky", app.search_seq)
        gate.set()
        await settle(pilot)
        assert asked == ["f", "flaky"]  # the first key at once, the four typed meanwhile as one search
        assert app.main.query_one("#query").value == "flaky"
        groups = app.groups
        assert groups and all(len({(h.store, h.conversation_id) for h in g.hits}) == 1 for g in groups)
        assert groups[0].title == "Fix the flaky test in tests/parser.rs"
        shown = str(app.main.query_one("#results").prompt(0))
        assert "Fix the flaky test" in shown and "hit" in shown
        # the same hits as samctl search over the same stores
        cli = run("--root", demo / "mermaid-project", "search", "flaky", "--format", "json", "-n", "200")
        want = {(h["conversation_id"], h["position"]) for h in json.loads(cli.stdout)}
        got = {(h.conversation_id, h.position) for g in groups for h in g.hits if h.store == "mermaid"}
        assert got == want

    drive(stores, steps)


def test_a_malformed_query_says_why_and_shows_nothing(stores):
    async def steps(pilot):
        app = pilot.app
        await pilot.press("s", *"-flaky")  # only an exclusion: nothing to rank
        await settle(pilot)
        assert app.groups == []
        assert "the query only excludes" in str(app.main.query_one("#status").render())

    drive(stores, steps)


def test_the_query_syntax_is_samctl_searchs(stores):
    async def steps(pilot):
        app = pilot.app
        await pilot.press("s", *"budget store:sam")
        await settle(pilot)
        assert app.groups and {g.store_name for g in app.groups} == {"sam"}

    drive(stores, steps)


def test_enter_opens_the_transcript_at_the_hit_and_n_walks_the_hits(stores):
    async def steps(pilot):
        app = pilot.app
        await pilot.press("s", *"portland")
        await settle(pilot)
        group = next(g for g in app.groups if g.title == "Portland weekend trip")
        app.main.query_one("#results").highlighted = app.groups.index(group)
        await pilot.press("enter")  # (from the box: to the results)
        await pilot.press("enter")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, TranscriptScreen) and len(group.positions) >= 2
        ol = screen.query_one("#transcript")
        at = [screen.blocks[i].position for i in screen.matches]
        assert at == group.positions and screen.blocks[ol.highlighted].position == group.positions[0]
        await pilot.press("n")
        assert screen.blocks[ol.highlighted].position == group.positions[1]
        await pilot.press("N")
        assert screen.blocks[ol.highlighted].position == group.positions[0]
        await pilot.press("N")  # wraps around
        assert screen.blocks[ol.highlighted].position == group.positions[-1]
        await pilot.press("escape")
        assert isinstance(app.screen, MainScreen) and app.mode == "search"
        await pilot.press("escape")  # out of the results: the list again
        assert app.mode == "filter" and len(app.shown) == len(app.rows)

    drive(stores, steps)


# --- the transcript ----------------------------------------------------------------------------


def _open(title):
    async def go(pilot):
        app = pilot.app
        app.main.query_one("#list").move_cursor(row=titles(app).index(title))
        await pilot.press("enter")
        await settle(pilot)
        return app.screen

    return go


def test_transcript_shows_roles_and_times_and_folds_tool_calls_and_thinking(stores):
    async def steps(pilot):
        screen = await _open("login timeout")(pilot)
        tools = [i for i, b in enumerate(screen.blocks) if b.kind == "tool"]
        thinking = [i for i, b in enumerate(screen.blocks) if b.kind == "thinking"]
        assert tools and thinking
        ol = screen.query_one("#transcript")
        first = str(ol.prompt(0))
        assert first.startswith("user  2026-") and "#0" in first
        t = tools[0]
        label = str(ol.prompt(t))
        assert "▸ Bash(" in label or "▸ " in label and "(" in label
        assert screen.blocks[t].text not in label  # the arguments are folded away
        ol.highlighted = t
        await pilot.press("o")
        assert screen.blocks[t].open and screen.blocks[t].text in str(ol.prompt(t))
        await pilot.press("space")
        assert not screen.blocks[t].open
        await pilot.press("enter")  # Enter (or a click) opens a block too
        assert screen.blocks[t].open
        k = thinking[0]
        assert "▸ thinking (" in str(ol.prompt(k))
        await pilot.press("O")  # everything open
        assert all(b.open for b in screen.blocks if b.foldable)
        await pilot.press("O")  # everything closed
        assert not any(b.open for b in screen.blocks if b.foldable)
        await pilot.press("G")
        assert ol.highlighted == len(screen.blocks) - 1
        await pilot.press("g")
        assert ol.highlighted == 0
        await pilot.press("j", "j", "k")
        assert ol.highlighted == 1
        await pilot.press("q")
        assert isinstance(pilot.app.screen, MainScreen)

    drive(stores, steps)


def test_find_in_the_transcript_and_n_N(stores):
    async def steps(pilot):
        screen = await _open("login timeout")(pilot)
        ol = screen.query_one("#transcript")
        await pilot.press("slash", *"timeout", "enter")
        want = [i for i, b in enumerate(screen.blocks) if "timeout" in (b.text + b.label).casefold()]
        assert len(want) >= 2 and screen.matches == want
        assert ol.highlighted == want[0] and "match 'timeout'" in str(screen.query_one("#tstatus").render())
        await pilot.press("n")
        assert ol.highlighted == want[1]
        await pilot.press("N")
        assert ol.highlighted == want[0]
        await pilot.press("slash", *"no such words here", "enter")
        assert screen.matches == []
        await pilot.press("n")
        assert "no hits" in str(screen.query_one("#tstatus").render())

    drive(stores, steps)


class _Fake:
    """A store of one synthetic conversation (a long output, thinking, a tool call), for the folding rules."""

    name, read_only, conv_dir = "sam", True, "/nowhere"

    def __init__(self, conv):
        self.conv = conv

    def list_metas(self, findings):
        return [self.conv.meta]

    def load_listed(self, cid, findings):
        return self.conv

    def resume_command(self, meta):
        return None


def test_a_long_output_is_cut_and_expands_with_a_key():
    from samctl.model import Conversation, ConversationMeta, Message, ToolCall

    meta = ConversationMeta("sam", "A", "long", updated_ts=NOW - 60, message_count=3)
    out = "\n".join(f"line {i}" for i in range(40))
    conv = Conversation(
        meta,
        [
            Message("user", "run it", timestamp_ts=NOW - 120),
            Message(
                "assistant",
                "",
                tool_calls=[ToolCall("1", "Bash", '{"command": "git status"}')],
                reasoning="first\nsecond",
            ),
            Message("tool", out, tool_name="Bash"),
        ],
    )
    blocks = R.blocks(conv)
    assert [b.kind for b in blocks] == ["text", "thinking", "tool", "text"]
    assert blocks[2].label == "Bash(git status)" and blocks[2].shown() == "▸ Bash(git status)"
    assert blocks[1].shown() == "▸ thinking (2 lines)"
    cut = blocks[3].shown()
    assert "line 11" in cut and "line 12" not in cut and "28 more lines (o: expand)" in cut

    async def steps(pilot):
        pilot.app.main.query_one("#list").move_cursor(row=0)
        await pilot.press("enter")
        await settle(pilot)
        screen = pilot.app.screen
        ol = screen.query_one("#transcript")
        ol.highlighted = 3
        await pilot.press("o")
        assert "line 39" in str(ol.prompt(3))
        ol.highlighted = 0
        await pilot.press("o")  # a short text does not fold
        assert not screen.blocks[0].open

    drive([_Fake(conv)], steps)


# --- actions -----------------------------------------------------------------------------------


def test_export_chooses_the_format_and_writes_what_samctl_export_writes(stores, demo, tmp_path, run):
    out = tmp_path / "out.jsonl"

    async def steps(pilot):
        app = pilot.app
        await _open("Fix the flaky test in tests/parser.rs")(pilot)
        await pilot.press("x")
        assert isinstance(app.screen, ExportScreen)
        await pilot.press("down", "down", "down")  # markdown, html, json, jsonl
        box = app.screen.query_one("#output")
        assert box.value.endswith("20260810_140307_512.jsonl")
        await pilot.press("tab")
        box.value = str(out)
        await pilot.press("enter")
        assert not isinstance(app.screen, ExportScreen)
        assert "exported 20260810_140307_512 as jsonl" in str(app.screen.query_one("#tstatus").render())

    before = fingerprint(demo)
    drive(stores, steps)
    want = run("--root", demo / "mermaid-project", "export", "20260810_140307_512", "--to", "jsonl")
    assert want.exit_code == 0 and out.read_bytes() == want.stdout_bytes
    assert fingerprint(demo) == before


def test_export_cancelled_or_refused_writes_nothing(stores, demo, tmp_path):
    async def steps(pilot):
        app = pilot.app
        await pilot.press("x")
        await pilot.press("escape")
        assert isinstance(app.screen, MainScreen) and "exported" not in app.note
        await pilot.press("x", "tab")
        app.screen.query_one("#output").value = str(demo / "SAM" / "inside.md")  # inside a store: refused
        await pilot.press("enter")
        assert app.note.startswith("not exported:")

    before = fingerprint(demo)
    drive(stores, steps)
    assert fingerprint(demo) == before and list(tmp_path.glob("*.md")) == []


def test_move_to_the_attic_asks_then_moves_as_rm_does_and_restore_brings_it_back(stores, demo, run):
    sam = demo / "SAM"

    def files():  # (the folder's own mtime changes as a file goes and comes back)
        return {k: v for k, v in fingerprint(sam / "conversations").items() if k != "."}

    before = files()
    cid = "D3B2A1C0-9F8E-4D7C-AB6A-5F4E3D2C1B0A"

    async def steps(pilot):
        app = pilot.app
        app.main.query_one("#list").move_cursor(row=titles(app).index("API Chat"))
        await pilot.press("d")
        assert isinstance(app.screen, ConfirmScreen)
        await pilot.press("n")
        assert app.note == "nothing was moved" and files() == before
        await pilot.press("d", "y")
        assert app.note.startswith(f"moved {cid} to the attic"), app.note
        assert "API Chat" not in titles(app)
        await pilot.press("a")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, AtticScreen) and [e.id for _, e in screen.entries] == [cid]
        listed = run("--root", sam, "attic", "--format", "json")
        assert [e["id"] for e in json.loads(listed.stdout)["entries"]] == [cid]
        await pilot.press("r")
        assert isinstance(app.screen, ConfirmScreen)
        await pilot.press("y")
        await settle(pilot)
        assert app.note.startswith(f"restored {cid}") and screen.entries == []
        await pilot.press("escape")
        assert "API Chat" in titles(app)

    drive(stores, steps)
    assert files() == before  # back exactly: bytes, modes, mtimes


def test_a_live_session_is_refused_and_nothing_moves(stores, demo, monkeypatch):
    monkeypatch.setenv("SAMCTL_LIVE_MINUTES", "100000000")  # every session counts as written just now
    before = fingerprint(demo)

    async def steps(pilot):
        app = pilot.app
        app.main.query_one("#list").move_cursor(row=titles(app).index("login timeout"))
        await pilot.press("d", "y")
        assert app.note.startswith("not moved:") and "Claude Code" in app.note, app.note
        assert "login timeout" in titles(app)

    drive(stores, steps)
    assert fingerprint(demo) == before


def test_a_read_only_store_is_never_asked_about(stores, demo):
    before = fingerprint(demo)

    async def steps(pilot):
        app = pilot.app
        llm = next(i for i, r in enumerate(app.shown) if r.store.read_only)
        app.main.query_one("#list").move_cursor(row=llm)
        await pilot.press("d")
        assert isinstance(app.screen, MainScreen) and "samctl only reads it" in app.note

    drive(stores, steps)
    assert fingerprint(demo) == before


def test_the_attic_view_when_empty_and_its_keys(stores):
    async def steps(pilot):
        app = pilot.app
        await pilot.press("a")
        await settle(pilot)
        assert isinstance(app.screen, AtticScreen) and "the attic is empty" in str(
            app.screen.query_one("#astatus").render()
        )
        await pilot.press("j", "k", "r")  # nothing under the cursor: nothing asked
        assert isinstance(app.screen, AtticScreen)
        await pilot.press("q")
        assert isinstance(app.screen, MainScreen)

    drive(stores, steps)


def test_copy_the_id_and_the_resume_command(stores, demo):
    async def steps(pilot):
        app = pilot.app
        app.main.query_one("#list").move_cursor(row=titles(app).index("API Chat"))
        await pilot.press("y")
        assert app.copied[-1] == "D3B2A1C0-9F8E-4D7C-AB6A-5F4E3D2C1B0A" and app.clipboard == app.copied[-1]
        await pilot.press("Y")
        assert app.copied[-1].startswith("samctl --root ") and app.copied[-1].endswith(
            " show D3B2A1C0-9F8E-4D7C-AB6A-5F4E3D2C1B0A"
        )
        await pilot.press("enter")
        await settle(pilot)
        await pilot.press("y")
        assert app.copied[-1] == "D3B2A1C0-9F8E-4D7C-AB6A-5F4E3D2C1B0A"
        assert "copied:" in str(app.screen.query_one("#tstatus").render())
        await pilot.press("escape")
        await settle(pilot)
        app.main.query_one("#list").move_cursor(row=titles(app).index("login timeout"))
        await pilot.press("Y")
        assert app.copied[-1].endswith("claude --resume 0b7c9d2e-3f41-4a6b-8c9d-0e1f2a3b4c5d"), app.copied[-1]

    drive(stores, steps)


def test_question_mark_lists_the_keys_of_the_screen_below(stores):
    async def steps(pilot):
        app = pilot.app
        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen)
        keys = str(app.screen.query_one("#keys").render())
        for line in ("/ ", "Filter", "s ", "Search", "j, ↓", "S ", "Sort", "x ", "Export", "d ", "To attic", "?"):
            assert line in keys, line
        for line in ("Enter", "Open", "PgDn", "Page down", "Home"):  # (the list's own keys too)
            assert line in keys, line
        await pilot.press("escape")
        await pilot.press("enter")
        await settle(pilot)
        await pilot.press("question_mark")
        keys = str(app.screen.query_one("#keys").render())
        assert "Open/close" in keys and "Next hit" in keys
        await pilot.press("question_mark")
        assert isinstance(app.screen, TranscriptScreen)

    drive(stores, steps)


def test_the_footer_shows_the_keys(stores):
    async def steps(pilot):
        footer = pilot.app.screen.query_one("Footer")
        rendered = " ".join(str(w.render()) for w in footer.query("FooterKey"))
        for word in ("Filter", "Search", "Sort", "Export", "Quit", "Keys"):
            assert word in rendered, word

    drive(stores, steps, size=(160, 30))


def test_q_quits(stores):
    async def steps(pilot):
        await pilot.press("q")
        assert pilot.app.return_code == 0 and not pilot.app.is_running

    drive(stores, steps)


def test_lines_are_wrapped_at_spaces_within_the_width_keeping_their_styles():
    from rich.cells import cell_len
    from rich.console import Console
    from rich.text import Text

    from samctl.tui.convlist import wrapped

    console = Console(width=200)
    t = Text("hello world this is a long line that must wrap\nshort\n\n" + "x" * 45 + " end")
    t.stylize("bold", 0, 5)
    lines = wrapped(t, 20, console)
    assert [x.plain for x in lines] == [
        "hello world this is",
        "a long line that",
        "must wrap",
        "short",
        "",
        "x" * 20,
        "x" * 20,
        "xxxxx end",
    ]
    assert lines[0].spans and lines[0].spans[0].style == "bold" and lines[0].spans[0].end == 5
    wide = wrapped(Text("漢字 " * 12), 10, console)  # (wide characters: measured in cells)
    assert all(cell_len(x.plain) <= 10 for x in wide) and "".join(x.plain for x in wide).count("漢字") == 12


def test_move_to_the_attic_from_the_transcript_goes_back_to_the_list(stores, demo, run):
    cid = "D3B2A1C0-9F8E-4D7C-AB6A-5F4E3D2C1B0A"

    async def steps(pilot):
        app = pilot.app
        await _open("API Chat")(pilot)
        await pilot.press("Y")
        assert app.copied[-1].endswith(f" show {cid}")
        await pilot.press("d")
        assert isinstance(app.screen, ConfirmScreen)
        await pilot.press("escape")  # Esc says no
        assert isinstance(app.screen, TranscriptScreen) and app.note == "nothing was moved"
        await pilot.press("d", "enter")  # Enter says yes
        assert isinstance(app.screen, MainScreen) and "API Chat" not in titles(app)

    drive(stores, steps)
    listed = run("--root", demo / "SAM", "attic", "--format", "json")
    assert [e["id"] for e in json.loads(listed.stdout)["entries"]] == [cid]


def test_paging_keys_and_the_mouse_in_results_and_transcripts(stores):
    async def steps(pilot):
        app = pilot.app
        table = app.main.query_one("#list")
        await pilot.press("pagedown")
        assert table.cursor_row == min(len(app.shown) - 1, table.size.height - 2)
        await pilot.press("pageup", "end")
        assert table.cursor_row == len(app.shown) - 1
        await pilot.press("home")
        assert table.cursor_row == 0
        await pilot.press("s", *"timeout", "enter")
        await settle(pilot)
        results = app.main.query_one("#results")
        assert results.option_count == len(app.groups) >= 3
        await pilot.press("j", "G")
        assert results.highlighted == len(app.groups) - 1
        await pilot.press("g", "down")
        assert results.highlighted == 1
        await pilot.click("#results", offset=(10, 0))  # the first group's first line: highlighted
        assert results.highlighted == 0 and isinstance(app.screen, MainScreen)
        await pilot.click("#results", offset=(10, 1))  # a line of the highlighted group: opened
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, TranscriptScreen) and screen.cid == app.groups[0].conversation_id
        blocks = screen.query_one("#transcript")
        await pilot.press("end")
        assert blocks.highlighted == len(screen.blocks) - 1
        await pilot.press("home", "pagedown")
        assert blocks.highlighted > 0
        await pilot.press("pageup")
        assert blocks.highlighted == 0
        await pilot.press("escape")
        results.highlighted = [g.title for g in app.groups].index("login timeout")
        await pilot.press("enter")
        await settle(pilot)
        screen = app.screen
        blocks = screen.query_one("#transcript")
        tool = next(i for i, b in enumerate(screen.blocks) if b.kind == "tool")
        blocks.highlighted = tool
        blocks.scroll_to_highlight(top=True)
        await pilot.pause()
        await pilot.click("#transcript", offset=(5, 0))  # a click on the highlighted block opens it
        assert screen.blocks[tool].open

    drive(stores, steps)


def test_the_keys_list_closes_with_q(stores):
    async def steps(pilot):
        await pilot.press("question_mark")
        assert isinstance(pilot.app.screen, HelpScreen)
        await pilot.press("q")  # (closes the list, not the app)
        assert isinstance(pilot.app.screen, MainScreen) and pilot.app.is_running

    drive(stores, steps)


class _Hostile:
    """A store whose title and messages carry terminal escapes; and, with ``fail``, one whose listing fails."""

    name, read_only, conv_dir = "sam", True, "/nowhere"

    def __init__(self, fail: bool = False):
        from samctl.model import Conversation, ConversationMeta, Message

        self.fail = fail
        meta = ConversationMeta(
            "sam", "H", "evil \x1b]52;c;aGk=\x07 \x1b[2J title", updated_ts=NOW - 5, message_count=1
        )
        self.conv = Conversation(meta, [Message("user\x1b[31m", "text \x1b[2J\x9b1m more", timestamp_ts=NOW - 9)])

    def list_metas(self, findings):
        if self.fail:
            from samctl.errors import FileProblem

            raise FileProblem("unreadable", "/nowhere", "cannot list /nowhere: permission denied")
        return [self.conv.meta]

    def load_listed(self, cid, findings):
        return self.conv

    def resume_command(self, meta):
        return None


def test_no_control_character_from_a_store_reaches_the_screen():
    async def steps(pilot):
        app = pilot.app
        line = _line(app.main.query_one("#list"), 1)
        assert "evil" in line and "\x1b" not in line and "\x07" not in line
        await pilot.press("enter")
        await settle(pilot)
        screen = app.screen
        shown = "".join(_line(screen.query_one("#transcript"), y) for y in range(3))
        head = str(screen.query_one("#head").render())
        assert "more" in shown and not any(c in shown + head for c in "\x1b\x07\x9b")

    drive([_Hostile()], steps)


def test_a_store_that_cannot_be_listed_is_a_problem_and_the_others_are_shown(stores):
    async def steps(pilot):
        app = pilot.app
        assert len(app.rows) == n and "1 problem (samctl check says more)" in str(
            app.main.query_one("#status").render()
        )
        assert [f.code for f in app.findings] == ["store-unreadable"]

    n = len(drive(stores, lambda pilot: asyncio.sleep(0)).rows)
    drive([_Hostile(fail=True)] + stores, steps)


def test_a_failing_search_is_said_and_the_browser_goes_on(stores, monkeypatch):
    monkeypatch.delenv("SAMCTL_DEBUG", raising=False)

    async def steps(pilot):
        app = pilot.app

        def broken(text, limit):
            raise RuntimeError("boom")

        monkeypatch.setattr(app, "search", broken)
        await pilot.press("s", *"budget")
        await settle(pilot)
        assert app.is_running and app.groups == []
        assert "search failed: internal error: RuntimeError: boom" in str(app.main.query_one("#status").render())

    drive(stores, steps)


def test_esc_closes_the_find_box_and_an_empty_find_goes_back_to_the_hits(stores):
    async def steps(pilot):
        app = pilot.app
        await pilot.press("s", *"portland")
        await settle(pilot)
        app.main.query_one("#results").highlighted = [g.title for g in app.groups].index("Portland weekend trip")
        await pilot.press("enter", "enter")
        await settle(pilot)
        screen = app.screen
        hits = list(screen.matches)
        box = screen.query_one("#find")
        await pilot.press("slash")
        assert box.display and box.has_focus
        await pilot.press("escape")  # closes the box, stays in the transcript
        assert not box.display and isinstance(app.screen, TranscriptScreen)
        await pilot.press("slash", *"weather", "enter")
        assert screen.matches != hits and screen.needle == "weather"
        await pilot.press("slash", *["backspace"] * 7, "enter")  # an empty find: n/N walk the hits again
        assert screen.matches == hits and screen.needle == ""

    drive(stores, steps)


def test_a_search_result_moved_to_the_attic_leaves_the_results(stores, demo):
    sam = demo / "SAM" / "conversations"

    async def steps(pilot):
        app = pilot.app
        await pilot.press("s", *"budget", "enter")
        await settle(pilot)
        results = app.main.query_one("#results")
        n = len(app.groups)
        results.highlighted = [g.title for g in app.groups].index("Q3 budget")
        before = fingerprint(sam)
        await pilot.press("d", "y")  # pinned in SAM: refused as `samctl rm` refuses it
        assert app.note.endswith("is pinned in SAM; nothing was removed") and len(app.groups) == n
        assert fingerprint(sam) == before
        i = [g.title for g in app.groups].index("Portland weekend trip")
        results.highlighted = i
        await pilot.press("d", "y")
        assert app.note.startswith("moved 8B58CBC4"), app.note
        assert len(app.groups) == results.option_count == n - 1
        assert "Portland weekend trip" not in [g.title for g in app.groups]
        assert results.highlighted == min(i, n - 2)
        await pilot.press("escape")
        assert "Portland weekend trip" not in titles(app)

    drive(stores, steps)
    assert not (sam / "8B58CBC4-ACA7-4811-AE66-C01921690310").exists()


def test_a_snippet_keeps_its_marks_on_one_line_and_when_cut():
    from samctl.search.hits import Hit

    h = Hit(
        "message", "c", "t", None, 0, NOW, 0.5, "", snippet="a budget\nof $500 for the budget", marks=[(2, 8), (25, 31)]
    )
    text, marks = R.snippet(h, 200)
    assert text == "a budget of $500 for the budget" and [text[a:b] for a, b in marks] == ["budget", "budget"]
    text, marks = R.snippet(h, 12)
    assert text == "a budget of…" and marks == [(2, 8)]
    h.snippet = "a \x1b[2J budget"  # (escaped: longer than the text the marks index)
    assert R.snippet(h, 200)[1] == [] and "\x1b" not in R.snippet(h, 200)[0]


def test_relative_dates_and_tool_labels():
    assert [
        R.relative(NOW - s, NOW) for s in (0, 59, 60, 3599, 3600, 86399, 86400, 13 * 86400, 14 * 86400, 364 * 86400)
    ] == ["now", "now", "1m", "59m", "1h", "23h", "1d", "13d", "2w", "52w"]
    assert R.relative(NOW - 400 * 86400, NOW) == "2025-08-17" and R.relative(None, NOW) == "-"
    assert R.relative(NOW + 60, NOW) == "now"  # (a clock ahead: never a negative age)
    assert R.tool_label("Bash", '{"command": "git status", "description": "x"}') == "Bash(git status)"
    assert R.tool_label("shell", {"command": ["bash", "-lc", "ls -la"]}) == "shell(bash -lc ls -la)"
    assert R.tool_label("Read", {"file_path": "/a/b.py"}) == "Read(/a/b.py)"
    assert R.tool_label("Task", {"other": "do\nit"}) == "Task(do it)"
    assert R.tool_label("x", "not json") == "x(not json)" and R.tool_label("x", None) == "x()"
    long = R.tool_label("Bash", {"command": "echo " + "a" * 100})
    assert len(long) == len("Bash()") + 60 and long.endswith("…)")
    assert R.tool_label("Bash\x1b[2J", {"command": "ls\x1b]52;c;x\x07"}).count("\x1b") == 0


def test_restore_refuses_when_the_conversation_exists_again_and_keeps_the_entry(stores, demo, tmp_path):
    import shutil

    cid = "D3B2A1C0-9F8E-4D7C-AB6A-5F4E3D2C1B0A"
    folder = demo / "SAM" / "conversations" / cid
    shutil.copytree(folder, tmp_path / "again")

    async def steps(pilot):
        app = pilot.app
        app.main.query_one("#list").move_cursor(row=titles(app).index("API Chat"))
        await pilot.press("d", "y")
        assert not folder.exists()
        shutil.copytree(tmp_path / "again", folder)  # the conversation is back meanwhile
        before = fingerprint(demo)
        await pilot.press("a")
        await settle(pilot)
        await pilot.press("r", "y")
        await settle(pilot)
        assert app.note.startswith("not restored:"), app.note
        assert [e.id for _, e in app.screen.entries] == [cid] and fingerprint(demo) == before

    drive(stores, steps)
