"""samctl restore: bring conversations back from the attic."""

from __future__ import annotations

import click

from samctl.cli.common import complete_attic_ids, examples, store_of
from samctl.cli.writeopts import dry_run_option, force_option, format_opt, lock_wait_option, render


@click.command("restore")
@click.argument("ids", metavar="[ID]...", nargs=-1, shell_complete=complete_attic_ids)
@click.option("--as-new", is_flag=True, help="Restore under a fresh id (as the store makes them) and rewrite the "
              "id inside the files, so it can sit beside a conversation that now has the old id.")
@click.option("--entry", metavar="NAME", help="Restore this attic entry (as `samctl attic` lists it, or a unique "
              "prefix of it) instead of the newest one of ID.")
@click.option("--touch", is_flag=True, help="Set the restored files' mtimes to now (Claude Code deletes sessions "
              "older than cleanupPeriodDays, by mtime, when it starts).")
@dry_run_option
@force_option
@lock_wait_option
@format_opt
@examples("samctl restore 20260810_140307", "samctl restore 8B58CBC4 --as-new",
          "samctl restore $(samctl attic --state archived --format jsonl | jq -r .id)",
          "samctl restore --entry 20260810_140307_512.archived.20261001T020000Z")
@click.pass_context
def command(ctx, ids, as_new, entry, touch, dry_run, force, lock_wait, fmt):
    """Put deleted, archived or kept conversations back exactly: bytes, modes and mtimes.

    Takes the newest attic entry of each ID (an id or unique prefix of one in
    the attic). Every hash is checked before anything is placed; a file is
    never replaced, so restoring refuses if a conversation exists again, unless
    --as-new (a kept copy goes back over files that still hold its bytes). An
    attic entry is dropped only after its conversation is back; a kept copy
    (`samctl archive --copy`) stays, as a backup. --touch sets the restored
    files' mtimes to now.
    With several IDs, nothing is done if one of them cannot be found or
    exists again; one that fails on the way is reported and the rest restored.
    """
    from samctl.attic import restore
    from samctl.attic.journal import pending
    from samctl.errors import NotFound, SamctlError, UsageError

    store = store_of(ctx)
    if entry and len(ids) > 1:
        raise UsageError("--entry names one entry: give at most one ID with it")
    # an entry that fails on the way (damaged, a file appeared) is a finding and exit 3, one id or many
    try:
        entries = [restore.find_entry(store, ids[0] if ids else None, entry)] if len(ids) <= 1 else \
            restore.find_entries(store, ids)
    except NotFound as exc:
        if pending(store):  # a move a crash interrupted may be what holds it: say what settles that
            exc.hint = "an interrupted move is pending: `samctl attic --repair` finishes or undoes it; then try again"
        raise
    try:
        report = restore.restore_many(store, entries, as_new=as_new, dry_run=dry_run, force=force,
                                      lock_wait=lock_wait, touch=touch)
    except SamctlError as exc:  # refused before settling anything: an interrupted move stays pending, say so
        if pending(store):
            exc.hint = (f"{exc.hint}; " if exc.hint else "") + "an interrupted move is pending: `samctl attic " \
                "--repair` finishes or undoes it"
        raise
    warning = store.cleanup_warning()
    if warning and not touch and any(it.get("action") in ("restored", "would be restored") for it in report.items):
        from samctl.model import WARNING, Finding

        report.findings.append(Finding("app-cleanup", str(store.conv_dir), warning, WARNING))
    render(report, fmt, same_said="already in the store with the kept copy's bytes")
