"""samctl export: conversations as Markdown, HTML, JSON, JSONL or SAM import packages."""

from __future__ import annotations

import sys

import click

from samctl.cli.common import complete_ids, examples, findings_first, finish, report_findings, scope_of
from samctl.cli.projectopts import project_options, project_spec
from samctl.core.export import FORMATS
from samctl.errors import UsageError
from samctl.said import Suggestion, said


class _Progress:
    """``exporting 12/340`` on one stderr line, redrawn at most ten times a second."""

    def __init__(self):
        self.last = 0.0

    def __call__(self, done: int, total: int) -> None:
        import time

        now = time.monotonic()
        if done == total or now - self.last >= 0.1:
            self.last = now
            click.echo(f"\rexporting {done}/{total}", err=True, nl=False)

    def close(self) -> None:
        click.echo("\r\033[K", err=True, nl=False)


@click.command("export")
@click.argument("ids", nargs=-1, metavar="[ID]...", shell_complete=complete_ids)
@click.option("--all", "all_", is_flag=True, help="Export every conversation (newest first).")
@click.option("--since", metavar="WHEN", help="With --all: only conversations updated since WHEN (7d, 2026-08-01).")
@click.option("--until", metavar="WHEN", help="With --all: only conversations updated until WHEN.")
@click.option(
    "--to",
    "fmt",
    type=click.Choice(FORMATS),
    default="markdown",
    show_default=True,
    help="markdown: a readable document; html: a self-contained page (plus index.html for several); "
    "json: samctl's model; jsonl: one message per line; sam-package: SAM's own import file.",
)
@click.option(
    "-o",
    "--output",
    metavar="PATH|-",
    help="A file for one conversation, a folder for several (created 0700; files 0600). A .json/.jsonl "
    "file name holds several conversations in one stream (json, jsonl, sam-package: a bulk package). "
    "Default, or -: stdout (json, jsonl, sam-package, or one conversation). Never inside the "
    "app's folder; an existing file is replaced, unless nothing could be exported.",
)
@click.option(
    "--all-messages",
    is_flag=True,
    help="Also export what the app's UI hides (system-generated turns, empty messages). SAM packages "
    "always carry every message.",
)
@click.option("--progress/--no-progress", default=None, help="Show progress on stderr (default: on a terminal).")
@examples(
    "samctl export 8B58 --to markdown > trip.md",
    "samctl export --all --to html -o ~/exports/chats && open ~/exports/chats/index.html",
    "samctl export --all --since 30d --to jsonl | jq -r .content",
    "samctl export 8B58 --to sam-package -o portland.json   # then import it in SAM",
)
@project_options
@click.pass_context
def command(ctx, ids, all_, since, until, fmt, output, all_messages, progress, project, here):
    """Export conversations without changing the store.

    Give conversation IDs (a unique prefix is enough) or --all: of every store samctl finds, unless
    --root names the stores. Markdown and HTML show each message with its role and time, tool calls with their
    arguments and results, and reasoning in collapsible blocks. A sam-package is what
    SAM's "Import" accepts: SAM conversations with their memories, and mermaid sessions
    converted (new ids, SAM's roles and dates). Conversations that cannot be read are
    reported on stderr and skipped (exit 3).
    """
    from samctl.core import export as core
    from samctl.timeparse import parse_when

    if ids and all_:
        raise UsageError("give conversation IDs or --all, not both", hint="drop the IDs to export everything")
    if not ids and not all_:
        raise UsageError(
            "nothing to export: give conversation IDs or --all",
            hint=said(
                "`",
                Suggestion("ls"),
                "` lists the ids; then e.g. `",
                Suggestion("export", "ID", rest="--to markdown"),
                "`",
            ),
        )
    if (since is not None or until is not None) and not all_:
        raise UsageError("--since/--until choose from --all", hint="add --all, or drop --since/--until")
    project = project_spec(project, here)
    if project is not None and not all_:
        raise UsageError("--project/--here choose from --all", hint="add --all, or drop --project/--here")
    scope = scope_of(ctx)
    stores, findings = scope.stores(), scope.findings
    since, until = (
        parse_when(since) if since is not None else None,
        parse_when(until, end=True) if until is not None else None,
    )
    sizes: dict = {}  # (store, id) -> bytes, of those the listing gives
    if len(stores) == 1:
        store = stores[0]
        selected = core.select_ids(store, ids, all_, since, until, findings, project, sizes)
    else:  # several stores: (store, id) pairs
        store = stores
        with findings_first(findings):
            selected = core.select_across(stores, ids, all_, since, until, findings, project, sizes)
    many = all_ or len(selected) > 1
    plan = core.plan_output(output, fmt, many, store)
    show = progress if progress is not None else (all_ and sys.stderr.isatty())
    bar = _Progress() if show and selected else None
    try:
        res = core.export(
            store,
            selected,
            fmt,
            plan,
            findings,
            include_hidden=all_messages,
            stdout=_Stdout() if plan.kind == "stdout" else None,
            progress=bar,
            as_many=many,
            sizes=sizes,
        )
    finally:
        if bar:
            bar.close()
    report_findings(findings)
    if plan.kind != "stdout" and not res.files:
        pass  # nothing written: the not-written line above says so
    elif plan.kind != "stdout":
        what = f"{res.exported} conversation{'s' if res.exported != 1 else ''}"
        skipped = f" ({res.skipped} skipped, see above)" if res.skipped else ""
        click.echo(f"exported {what} as {fmt} to {res.destination}{skipped}", err=True)
    elif all_ and not selected:
        click.echo("no conversations to export", err=True)
    finish(findings)


class _Stdout:
    """stdout as a binary stream; on a terminal, control characters are shown, not obeyed."""

    def __init__(self):
        self.out = sys.stdout.buffer
        self.tty = sys.stdout.isatty()

    def write(self, data: bytes) -> None:
        if self.tty:
            from samctl.safetext import safe_text

            data = safe_text(data.decode("utf-8", "replace")).encode("utf-8")
        self.out.write(data)

    def flush(self) -> None:
        self.out.flush()
