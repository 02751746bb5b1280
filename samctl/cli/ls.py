"""samctl ls: list conversations, newest first."""

from __future__ import annotations

import shutil
import sys

import click

from samctl.cli.common import emit_json, emit_jsonl, examples, finish, format_option, human_size, report_findings, \
    scope_of, table
from samctl.core.listing import SORT_KEYS, ListQuery, list_across
from samctl.model import last_activity
from samctl.safetext import one_line
from samctl.timeparse import format_local, parse_when
from samctl.gcpause import gc_paused


@click.command("ls")
@click.option("--since", metavar="WHEN", help="Only conversations updated since WHEN (7d, 12h, 2026-08-01).")
@click.option("--until", metavar="WHEN", help="Only conversations updated until WHEN.")
@click.option("--pinned", is_flag=True, help="Only pinned conversations (SAM).")
@click.option("--title", metavar="TEXT", help="Only titles containing TEXT (case-insensitive).")
@click.option("--limit", "-n", type=click.IntRange(min=1), metavar="N", help="At most N conversations (1 or more).")
@click.option("--sort", type=click.Choice(SORT_KEYS), default="updated", show_default=True,
              help="Order; newest/largest first (titles A-Z).")
@click.option("--reverse", "-r", is_flag=True, help="Reverse the order.")
@format_option()
@examples("samctl ls --since 7d", "samctl ls --sort size -n 10", "samctl ls --format jsonl | jq .title")
@click.pass_context
def command(ctx, since, until, pinned, title, limit, sort, reverse, fmt):
    """List conversations: id, created, updated, messages, size, pinned, store, title.

    Without --root, of every store samctl finds (samctl stores), in one order; --root (repeatable)
    narrows to those stores. --limit and --sort apply to the whole list.
    """
    query = ListQuery(
        since=parse_when(since) if since is not None else None,
        until=parse_when(until, end=True) if until is not None else None,
        pinned=pinned, title=title, limit=limit, sort=sort, reverse=reverse,
    )
    scope = scope_of(ctx)
    stores, findings = scope.stores(), scope.findings
    with gc_paused():  # a listing is 100,000s of small objects, none of them in a cycle
        metas = list_across(stores, query, findings)
        if fmt == "jsonl":
            emit_jsonl(m.to_dict() for m in metas)
        elif fmt == "json":
            emit_json([m.to_dict() for m in metas])
        else:
            _table(metas)
    report_findings(findings)
    finish(findings)


def _table(metas) -> None:
    """The table: every cell that comes from a file (id, title) through ``one_line``, so no control character
    from a store reaches the terminal, and a title never breaks its row."""
    if not metas:
        click.echo("no conversations", err=True)
        return
    rows = [
        (one_line(m.id), format_local(m.created_ts), format_local(last_activity(m)),
         m.message_count if m.message_count is not None else "-", human_size(m.size), "*" if m.pinned else "",
         m.store, one_line(m.title))
        for m in metas
    ]
    if sys.stdout.isatty():  # clip titles to the terminal; never when piped
        width = shutil.get_terminal_size((120, 24)).columns
        fixed = max(len(r[0]) for r in rows) + 16 + 16 + 6 + 8 + 3 + 9 + 14
        room = max(20, width - fixed)
        rows = [r[:-1] + (_clip(r[-1], room),) for r in rows]
    click.echo(table(rows, ["ID", "CREATED", "UPDATED", "MSGS", "SIZE", "PIN", "STORE", "TITLE"]))


def _clip(text: str, n: int) -> str:
    return text if len(text) <= n else text[: n - 1] + "…"
