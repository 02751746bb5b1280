"""samctl rm: move conversations to the attic (restorable), or --purge them for good."""

from __future__ import annotations

import click

from samctl.cli.common import complete_ids, examples, scope_of, suggest
from samctl.cli.writeopts import (
    confirm,
    dry_run_option,
    force_option,
    format_opt,
    ignore_unreadable_option,
    lock_wait_option,
    move_all,
    show_targets,
    targets_of,
    yes_option,
)
from samctl.core.scope import MOVE
from samctl.timeparse import parse_age


@click.command("rm")
@click.argument("ids", nargs=-1, metavar="[ID]...", shell_complete=complete_ids)
@click.option(
    "--older-than",
    metavar="AGE",
    help="Select conversations idle for AGE (30d, 12h, 2w): since their last update or, for SAM, their newest message.",
)
@click.option(
    "--empty", is_flag=True, help="Select conversations without messages (SAM: not pinned, not using shared data)."
)
@click.option("--title", metavar="TEXT", help="Select conversations whose title contains TEXT (case-insensitive).")
@click.option(
    "--purge",
    is_flag=True,
    help="Remove for good, with the owning app's own delete semantics (also "
    "the conversation's attic entries). Cannot be undone.",
)
@click.option("--include-pinned", is_flag=True, help="Also remove pinned SAM conversations.")
@dry_run_option
@yes_option
@force_option
@ignore_unreadable_option
@lock_wait_option
@format_opt
@examples(
    "samctl rm 20260810_140307",
    "samctl rm --older-than 180d --title scratch --dry-run",
    "samctl rm --empty --yes",
    "samctl rm --purge 8B58CBC4",
)
@click.pass_context
def command(
    ctx, ids, older_than, empty, title, purge, include_pinned, dry_run, yes, force, ignore_unreadable, lock_wait, fmt
):
    """Move conversations to the attic, where `samctl restore` can bring them back.

    Name them by id (or unique prefix), or select them with --older-than,
    --empty and --title (filters combine; with ids they narrow the ids).
    Every file of a conversation goes into one compressed archive whose
    hashes are checked before the originals are removed. Acting on more than
    one conversation, selecting by a filter, or purging asks for confirmation
    on a terminal (--yes for scripts). Pinned SAM conversations are kept unless
    --include-pinned. Exit 5 if the owning app is using the store.
    Each ID is looked for in every store samctl finds and removed in its
    own; filters act on the one store samctl can write, or with --all-stores
    on each in turn (docs/scope.md).
    """
    from samctl.attic import entries as attic

    scope = scope_of(ctx, MOVE, filters=not ids)
    age = parse_age(older_than) if older_than is not None else None

    def plan(store, ids):
        return _plan(store, ids, age, empty, title, purge, include_pinned, ignore_unreadable, force)

    def act(store, sel):
        return _act(store, sel, age, empty, title, purge, include_pinned, dry_run, force, lock_wait, ignore_unreadable)

    def ask(targets, explicit):
        if not dry_run and (purge or not explicit or len(targets) > 1):
            if fmt == "text":
                show_targets(targets, "purge" if purge else "delete", yes)
            n = len(targets)
            what = f"{n} conversation{'s' if n != 1 else ''}"
            confirm(f"Purge {what} for good (this cannot be undone)?" if purge else f"Move {what} to the attic?", yes)

    def undo(items, store) -> str:  # (restore looks for the id in every store's attic)
        return (
            f"undo with: {suggest(ctx, 'restore', items[0]['id'], store)}"
            + (f" (and the others by id; `{suggest(ctx, 'attic', store=store)}` lists them)" if len(items) > 1 else "")
            + (f"; the attic is {attic.attic_dir(store)}" if store is not None else "")
        )

    move_all(
        ctx,
        scope,
        targets_of(ctx, scope, ids, purge),
        plan,
        act,
        ask,
        fmt=fmt,
        dry_run=dry_run,
        hint=None if purge else undo,
    )


def _plan(store, ids, age, empty, title, purge, include_pinned, ignore_unreadable, force):
    """What rm would take from ``store`` (nothing changes): the selection, checked, live sessions a filter
    found set aside (named ones are refused by the move unless ``force``)."""
    from samctl.attic import targets

    if purge:
        sel = _purge_selection(store, ids, age, empty, title, include_pinned)
    else:
        sel = targets.select(store, ids, age, empty, title, include_pinned)
    targets.preflight(store, sel, purge, ignore_unreadable)
    targets.keep_live(store, sel, force)
    return sel


def _act(store, sel, age, empty, title, purge, include_pinned, dry_run, force, lock_wait, ignore_unreadable):
    """Move (or purge) ``sel``'s targets in ``store``: the report, the selection's problems first."""
    from samctl.attic import lifecycle, targets

    def again(confirmed):  # under the lock: another samctl may have taken some while this one waited
        return targets.matching(store, confirmed, age, empty, title, include_pinned, attic_too=purge)

    if purge:
        report = lifecycle.purge(
            store,
            sel.targets,
            dry_run=dry_run,
            force=force,
            lock_wait=lock_wait,
            ignore_unreadable=ignore_unreadable,
            again=again,
        )
    else:
        report = lifecycle.remove(
            store,
            sel.targets,
            "deleted",
            dry_run=dry_run,
            force=force,
            lock_wait=lock_wait,
            ignore_unreadable=ignore_unreadable,
            again=again,
        )
    report.findings[:0] = sel.problems
    return report


def _purge_selection(store, ids, age, empty, title, include_pinned):
    """Store conversations through the usual selection; ids only in the attic are purged from there."""
    from samctl.attic import lifecycle, targets
    from samctl.errors import NotFound

    if not ids:
        sel = targets.select(store, ids, age, empty, title, include_pinned)
        lifecycle.keep_pinned_entries(store, sel, include_pinned)
        return sel
    try:
        resolved = lifecycle.resolve_for_purge(store, ids)
    except NotFound:  # the attic, if it cannot be listed, may be where it is: said first
        from samctl.attic import entries as atticmod
        from samctl.cli.common import report_findings

        found: list = []
        atticmod.list_entries(store, found, want=lambda stem, cid: False)
        report_findings(found)
        raise
    in_store = set(store.all_ids())
    sel = (
        targets.select(store, [i for i in resolved if i in in_store], age, empty, title, include_pinned)
        if any(i in in_store for i in resolved)
        else targets.Selection(explicit=True)
    )
    lifecycle.keep_pinned_entries(store, sel, include_pinned)
    sel.targets += lifecycle.attic_targets(store, [cid for cid in resolved if cid not in in_store], include_pinned)
    return sel
