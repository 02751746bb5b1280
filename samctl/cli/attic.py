"""samctl attic: list what rm, archive and compact keep; verify or repair it."""

from __future__ import annotations

import click

from samctl import errors
from samctl.cli.common import emit_json, emit_jsonl, examples, format_option, human_size, report_findings, \
    store_of, table
from samctl.cli.writeopts import force_option, lock_wait_option


@click.command("attic")
@click.option("--state", type=click.Choice(("deleted", "archived", "history", "kept")), multiple=True,
              help="Only entries in this state (repeatable). Default: all.")
@click.option("--verify", is_flag=True, help="Decompress every entry and check every hash (slower).")
@click.option("--repair", is_flag=True, help="Finish or undo moves a crash interrupted (every writing samctl "
              "command also does this first). Exit 5 if the owning app is using what it would touch.")
@force_option
@lock_wait_option
@format_option()
@examples("samctl attic", "samctl attic --state archived --format json", "samctl attic --verify",
          "samctl attic --repair")
@click.pass_context
def command(ctx, state, verify, repair, force, lock_wait, fmt):
    """List the attic: conversations removed by `samctl rm`, archived by `samctl archive`,
    copies kept by `samctl archive --copy` (kept), and old event logs `samctl compact`
    replaced (history).

    The attic is a 0700 folder the app never lists: beside the store (SAM:
    next to conversations/; mermaid: inside .mermaid/), or, for Claude Code
    and Codex CLI, in samctl's data folder
    ($XDG_DATA_HOME/samctl/attic/<store>/<root>/, else ~/.local/share/...).
    One compressed archive plus a manifest of sha256 hashes per entry. Exit 3
    if an entry is damaged, incomplete or not samctl's.
    """
    from samctl.attic import entries as attic
    from samctl.attic import journal as repairmod
    from samctl.lock import ensure_app_idle, store_lock
    from samctl.safetext import one_line
    from samctl.timeparse import format_local

    store = store_of(ctx)
    if repair:
        def app_idle() -> None:  # only moves touch the store (debris is the attic's): only they wait for the app
            if repairmod.pending(store):
                ensure_app_idle(store, repairmod.pending_ids(store), force)

        app_idle()
        with store_lock(store, lock_wait):
            app_idle()  # (asked again: now nothing moves)
            lines, left = repairmod.settle(store, full=True)
        for line in lines:
            click.echo(f"repaired: {line}", err=True)
        if not lines and not left:
            click.echo("nothing to repair", err=True)
    findings: list = []
    entries = attic.list_entries(store, findings, state or attic.STATES)
    findings.extend(left if repair else repairmod.pending(store))  # (after a repair: what it had to leave)
    if verify:
        for e in entries:
            findings.extend(attic.verify(e))
    if fmt == "json":
        emit_json({"attic": str(attic.attic_dir(store)), "entries": [e.to_dict() for e in entries],
                   "findings": [f.to_dict() for f in findings]})
    elif fmt == "jsonl":
        emit_jsonl(e.to_dict() for e in entries)
    elif not repair or entries:
        if not entries:
            what = "holds no readable entry" if findings else "is empty"  # the findings say what is wrong
            if state and not findings:
                what = f"holds no {' or '.join(state)} entry"
            click.echo(f"the attic {what} ({attic.attic_dir(store)})", err=True)
        else:
            click.echo(table([(e.stem, format_local(e.when_ts), human_size(e.original_size),
                               human_size(e.tar_size), one_line(e.title)[:60])
                              for e in entries], ["ENTRY (ID.STATE.WHEN)", "WHEN", "SIZE", "STORED", "TITLE"]))
    if fmt != "json":
        report_findings(findings)
    if any(f.severity != "info" for f in findings):
        raise click.exceptions.Exit(errors.PARTIAL)
