"""samctl ls: list conversations, newest first."""

from __future__ import annotations

import click

from samctl.cli.common import (
    date_option,
    emit_json,
    emit_jsonl,
    examples,
    finish,
    fit_table,
    format_option,
    human_size,
    relative_date,
    report_findings,
    scope_of,
    short_ids,
    table,
    terminal_width,
)
from samctl.cli.projectopts import project_options, project_spec
from samctl.core.listing import SORT_KEYS, ListQuery, list_across, project_name
from samctl.gcpause import gc_paused
from samctl.model import last_activity
from samctl.safetext import one_line
from samctl.timeparse import format_local, parse_when


@click.command("ls")
@click.option("--since", metavar="WHEN", help="Only conversations updated since WHEN (7d, 12h, 2026-08-01).")
@click.option("--until", metavar="WHEN", help="Only conversations updated until WHEN.")
@click.option("--pinned", is_flag=True, help="Only pinned conversations (SAM).")
@click.option("--title", metavar="TEXT", help="Only titles containing TEXT (case-insensitive).")
@click.option("--limit", "-n", type=click.IntRange(min=1), metavar="N", help="At most N conversations (1 or more).")
@click.option(
    "--sort",
    type=click.Choice(SORT_KEYS),
    default="updated",
    show_default=True,
    help="Order; newest/largest first (titles A-Z).",
)
@click.option("--reverse", "-r", is_flag=True, help="Reverse the order.")
@project_options
@click.option("--ids", "ids_only", is_flag=True, help="Print the ids only, one a line (whole ids).")
@click.option("--no-header", is_flag=True, help="Leave out the table's header line.")
@date_option
@format_option()
@examples(
    "samctl ls --since 7d",
    "samctl ls --here",
    "samctl ls --sort size -n 10",
    "samctl ls --format jsonl | jq .title",
    "samctl ls --ids | xargs -n1 samctl export",
)
@click.pass_context
def command(
    ctx, since, until, pinned, title, limit, sort, reverse, project, here, ids_only, no_header, date_style, fmt
):
    """List conversations: id, created, updated, messages, size, pinned, store, title.

    Without --root, of every store samctl finds (samctl stores), in one order; --root (repeatable)
    narrows to those stores. --limit and --sort apply to the whole list.
    """
    query = ListQuery(
        since=parse_when(since) if since is not None else None,
        until=parse_when(until, end=True) if until is not None else None,
        pinned=pinned,
        title=title,
        limit=limit,
        sort=sort,
        reverse=reverse,
        project=project_spec(project, here),
    )
    scope = scope_of(ctx)
    stores, findings = scope.stores(), scope.findings
    with gc_paused():  # a listing is 100,000s of small objects, none of them in a cycle
        metas = list_across(stores, query, findings)
        if fmt == "jsonl":
            emit_jsonl(m.json_row if m.json_row is not None else _row(m) for m in metas)
        elif fmt == "json":
            emit_json(list(map(_row, metas)))
        elif ids_only:
            click.echo("\n".join(m.id for m in metas)) if metas else None
        else:
            _table(metas, date_style, not no_header)
    report_findings(findings)
    finish(findings)


def _row(m) -> dict:
    """One conversation in ls's JSON (docs/json.md): ``message_count`` is the number, as in show and search
    (``messages`` is only ever a list)."""
    return m.to_dict("message_count")


def _table(metas, date_style: str = "relative", header: bool = True) -> None:
    """The table: every cell that comes from a file (id, title) through ``one_line``, so no control character
    from a store reaches the terminal, and a title never breaks its row.  On a terminal it fits: short ids,
    one date (relative unless --date iso), PIN only when a row is pinned, the title what is left; piped,
    every column whole."""
    if not metas:
        click.echo("no conversations", err=True)
        return
    width = terminal_width()
    if width is None:  # piped: whole values, for scripts
        rows: list = [
            (
                one_line(m.id),
                format_local(m.created_ts),
                format_local(last_activity(m)),
                m.message_count if m.message_count is not None else "-",
                human_size(m.size),
                "*" if m.pinned else "",
                m.store,
                one_line(m.project or "-"),
                _title(m),
            )
            for m in metas
        ]
        out = table(rows, ["ID", "CREATED", "UPDATED", "MSGS", "SIZE", "PIN", "STORE", "PROJECT", "TITLE"])
        click.echo(out if header else out.split("\n", 1)[1])
        return
    short = short_ids(m.id for m in metas)
    date = relative_date if date_style == "relative" else format_local
    rows = [
        (
            one_line(short[m.id]),
            date(last_activity(m)),
            m.message_count if m.message_count is not None else "-",
            human_size(m.size),
            "*" if m.pinned else "",
            m.store,
            one_line(project_name(m.project)),
            _title(m),
        )
        for m in metas
    ]
    click.echo(
        fit_table(
            rows,
            ["ID", "UPDATED", "MSGS", "SIZE", "PIN", "STORE", "PROJECT", "TITLE"],
            width,
            optional=("PIN", "PROJECT"),
            header=header,
        )
    )


def _title(m) -> str:
    """The title, and the session a resumed one continues."""
    return one_line(m.title) + (f" (continues {one_line(m.continues[:8])})" if m.continues else "")
