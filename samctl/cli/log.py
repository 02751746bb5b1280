"""samctl log: a mermaid session's event log, and where reading stopped."""

from __future__ import annotations

import click

from samctl import errors
from samctl.cli.common import (
    complete_event_types,
    complete_logged_ids,
    emit_json,
    emit_jsonl,
    examples,
    format_option,
    scope_of,
    suggest,
    table,
)
from samctl.core.logview import log_rows
from samctl.safetext import one_line, safe_text
from samctl.timeparse import format_local, parse_timestamp


@click.command("log")
@click.argument("conversation_id", metavar="ID", shell_complete=complete_logged_ids)
@click.option(
    "--type",
    "types",
    metavar="TYPE",
    multiple=True,
    shell_complete=complete_event_types,
    help="Only events of this type (repeatable): started, message, compaction, state, input, ...",
)
@format_option()
@examples("samctl log 20260810_1403", "samctl log 20260810 --type compaction", "samctl log ID --format jsonl | jq .seq")
@click.pass_context
def command(ctx, conversation_id, types, fmt):
    """Show the event log of mermaid session ID: seq, time, type and a summary.

    Says where reading stopped and why (torn tail at byte N, malformed line N,
    newer format, headerless, over the cap); exit 3 when it did not reach a
    clean end.
    """
    from samctl.errors import FileProblem

    try:
        scope = scope_of(
            ctx,
            limit=lambda s: (
                None
                if s.has_event_logs or not (s.read_only or s.moves_only)
                else f"log does not read {s.name} stores yet"
            ),
        )
        one = len(scope.found()) == 1  # (a scope of one: the store says itself why it has no log)
        [(store, conversation_id)] = scope.resolve(
            [conversation_id], view=None if one else lambda s: s if s.has_event_logs else None
        )
        cid, path, rows, read = log_rows(store, conversation_id, tuple(types))
    except FileProblem as exc:  # a log that is a FIFO, a symlink, unreadable...: a finding, like show's
        click.echo(safe_text(f"error: {exc.code}: {exc.path}: {exc.message}", lines=False), err=True)
        raise click.exceptions.Exit(errors.PARTIAL) from None
    stop = None
    if read.stop:
        # the finding's code, and lines counted from 1, as its reason and `check` count them
        stop = {
            "code": f"log-{read.stop}",
            "line": None if read.stop_line is None else read.stop_line + 1,
            "offset": read.stop_offset,
            "reason": read.reason,
        }
    if fmt == "json":
        emit_json({"id": cid, "store": store.name, "path": str(path), "size": read.size, "events": rows, "stop": stop})
    elif fmt == "jsonl":
        emit_jsonl(rows)
    elif rows:
        # type and summary are the log's own text (the JSON formats keep it exact); seq is an int (eventlog)
        click.echo(
            table(
                [
                    (r["seq"], format_local(parse_timestamp(r["ts"])), one_line(r["type"]), one_line(r["summary"]))
                    for r in rows
                ],
                ["SEQ", "TIME", "TYPE", "SUMMARY"],
            )
        )
    if stop:
        click.echo(
            safe_text(
                f"{'warning' if read.stop == 'torn-tail' else 'error'}: log-{read.stop}: {path}: {read.reason}",
                lines=False,
            ),
            err=True,
        )
        if read.stop == "torn-tail":
            click.echo(
                f"hint: `{suggest(ctx, 'recover', cid, store)}` trims the torn line (keeping its bytes in "
                "a .torn file)",
                err=True,
            )
        raise click.exceptions.Exit(errors.PARTIAL)
    click.echo(f"{len(read.events)} events, clean end", err=True)
