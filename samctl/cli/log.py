"""samctl log: a mermaid session's event log, and where reading stopped."""

from __future__ import annotations

import click

from samctl import errors
from samctl.cli.common import emit_json, emit_jsonl, examples, format_option, store_of, table
from samctl.core.logview import EVENT_TYPES, log_rows
from samctl.core.timeparse import format_local, parse_timestamp


@click.command("log")
@click.argument("conversation_id", metavar="ID")
@click.option("--type", "types", type=click.Choice(EVENT_TYPES), multiple=True,
              help="Only events of this type (repeatable).")
@format_option()
@examples("samctl log 20260810_1403", "samctl log 2026081 --type compaction", "samctl log ID --format jsonl | jq .seq")
@click.pass_context
def command(ctx, conversation_id, types, fmt):
    """Show the event log of mermaid session ID: seq, time, type and a summary.

    Says where reading stopped and why (torn tail at byte N, malformed line N,
    newer format, headerless, over the cap); exit 3 when it did not reach a
    clean end.
    """
    from samctl.errors import FileProblem

    try:
        cid, path, rows, read = log_rows(store_of(ctx), conversation_id, tuple(types))
    except FileProblem as exc:  # a log that is a FIFO, a symlink, unreadable...: a finding, like show's
        click.echo(f"error: {exc.code}: {exc.path}: {exc.message}", err=True)
        raise click.exceptions.Exit(errors.PARTIAL) from None
    stop = None
    if read.stop:
        stop = {"code": read.stop, "line": read.stop_line, "offset": read.stop_offset, "reason": read.reason}
    if fmt == "json":
        emit_json({"id": cid, "path": str(path), "size": read.size, "events": rows, "stop": stop})
    elif fmt == "jsonl":
        emit_jsonl(rows)
    elif rows:
        click.echo(table([(r["seq"], format_local(parse_timestamp(r["ts"])), r["type"], r["summary"]) for r in rows],
                         ["SEQ", "TIME", "TYPE", "SUMMARY"]))
    if stop:
        click.echo(f"{'warning' if read.stop == 'torn-tail' else 'error'}: log-{read.stop}: {path}: {read.reason}",
                   err=True)
        if read.stop == "torn-tail":
            click.echo(f"hint: `samctl recover {cid}` trims the torn line (keeping its bytes in a .torn file)",
                       err=True)
        raise click.exceptions.Exit(errors.PARTIAL)
    click.echo(f"{len(read.events)} events, clean end", err=True)
