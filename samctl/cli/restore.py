"""samctl restore: bring a conversation back from the attic."""

from __future__ import annotations

import click

from samctl.cli.common import examples, store_of
from samctl.cli.writeopts import dry_run_option, force_option, format_opt, lock_wait_option, render


@click.command("restore")
@click.argument("id_", metavar="[ID]", required=False)
@click.option("--as-new", is_flag=True, help="Restore under a fresh id (as the store makes them) and rewrite the "
              "id inside the files, so it can sit beside a conversation that now has the old id.")
@click.option("--entry", metavar="NAME", help="Restore this attic entry (as `samctl attic` lists it) instead of "
              "the newest one of ID.")
@dry_run_option
@force_option
@lock_wait_option
@format_opt
@examples("samctl restore 20260810_140307", "samctl restore 8B58CBC4 --as-new",
          "samctl restore --entry 20260810_140307_512.archived.20261001T020000Z")
@click.pass_context
def command(ctx, id_, as_new, entry, dry_run, force, lock_wait, fmt):
    """Put a deleted or archived conversation back exactly: bytes, modes and mtimes.

    Takes the newest attic entry of ID (an id or unique prefix of one in the
    attic). Every hash is checked before anything is placed; a file is never
    replaced, so restoring refuses if the conversation exists again, unless
    --as-new. The attic entry is dropped only after the conversation is back.
    """
    from samctl.core import lifecycle

    store = store_of(ctx)
    e = lifecycle.find_entry(store, id_, entry)
    report = lifecycle.restore(store, e, as_new=as_new, dry_run=dry_run, force=force, lock_wait=lock_wait)
    render(report, fmt)
