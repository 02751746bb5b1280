"""samctl archive: move idle conversations to the attic as archived."""

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


@click.command("archive")
@click.argument("ids", nargs=-1, metavar="[ID]...", shell_complete=complete_ids)
@click.option(
    "--older-than",
    metavar="AGE",
    help="Archive conversations idle for AGE (90d, 2w, 1y): since their last update or, for SAM, their newest message.",
)
@click.option(
    "--keep-last",
    type=click.IntRange(min=0),
    metavar="N",
    help="Never archive the N most recently updated conversations.",
)
@click.option("--title", metavar="TEXT", help="Only conversations whose title contains TEXT (case-insensitive).")
@click.option("--include-pinned", is_flag=True, help="Also archive pinned SAM conversations.")
@click.option(
    "--copy",
    is_flag=True,
    help="Keep a verified copy in the attic and leave the conversation where it "
    "is; a conversation unchanged since its last copy is not copied again, and a new copy replaces the "
    "older one. Asks no confirmation.",
)
@click.option("--quiet", "-q", is_flag=True, help="Say nothing unless something is wrong (for cron).")
@dry_run_option
@yes_option
@force_option
@ignore_unreadable_option
@lock_wait_option
@format_opt
@examples(
    "samctl archive --older-than 90d --dry-run",
    "samctl archive --older-than 90d --keep-last 20 --yes",
    "samctl archive 20260810_140307",
    "samctl archive --copy --older-than 20d --all-stores -q   # crontab: keep before the apps delete",
)
@click.pass_context
def command(
    ctx,
    ids,
    older_than,
    keep_last,
    title,
    include_pinned,
    copy,
    quiet,
    dry_run,
    yes,
    force,
    ignore_unreadable,
    lock_wait,
    fmt,
):
    """Move idle conversations to the attic as archived; `samctl restore` brings them back.

    Archived entries are kept until you remove them (`samctl compact` purges
    only deleted ones). Same safety as `samctl rm`: every hash is checked
    before the originals go, a terminal asks first (--yes for scripts),
    pinned SAM conversations are kept unless --include-pinned, and exit 5 if
    the owning app is using the store.

    With --copy the conversations stay where they are and a verified copy of
    each goes to the attic as a kept entry (never purged by compact), so that
    `samctl restore` can bring back a session the app deleted (Claude Code
    deletes sessions after cleanupPeriodDays).
    Each ID is looked for in every store samctl finds and archived in its
    own; --older-than acts on the one store samctl can write, or with
    --all-stores on each in turn (docs/scope.md).
    """
    from samctl.attic import kept, lifecycle, targets

    if not ids and older_than is None:
        raise click.UsageError("say which conversations: --older-than AGE, or ids")
    age = parse_age(older_than) if older_than is not None else None
    scope = scope_of(ctx, MOVE, filters=not ids)

    def plan(store, ids):
        sel = targets.select(store, ids, age, False, title, include_pinned, keep_last)
        targets.preflight(store, sel, ignore_unreadable=ignore_unreadable)
        targets.keep_live(store, sel, force)
        return sel

    def act(store, sel):
        again = lambda confirmed: targets.matching(
            store,
            confirmed,
            age,
            False,
            title,  # noqa: E731
            include_pinned,
            keep_last,
        )
        how = dict(dry_run=dry_run, force=force, lock_wait=lock_wait, ignore_unreadable=ignore_unreadable, again=again)
        report = (
            kept.keep(store, sel.targets, **how) if copy else lifecycle.remove(store, sel.targets, "archived", **how)
        )
        report.findings[:0] = sel.problems
        return report

    def ask(targets, explicit):
        if not copy and not dry_run and (not explicit or len(targets) > 1):  # (a copy takes nothing away)
            if fmt == "text":
                show_targets(targets, "archive", yes)
            n = len(targets)
            confirm(f"Archive {n} conversation{'s' if n != 1 else ''}?", yes)

    state = "kept" if copy else "archived"

    def hint(items, store) -> str:
        return (
            f"bring one back with: {suggest(ctx, 'restore', 'ID', store)} "
            f"(`{suggest(ctx, 'attic', store=store, rest='--state ' + state)}` lists them)"
        )

    move_all(
        ctx,
        scope,
        targets_of(ctx, scope, ids),
        plan,
        act,
        ask,
        fmt=fmt,
        dry_run=dry_run,
        quiet=quiet,
        hint=hint,
        nothing_said=f"nothing to {'copy' if copy else 'archive'}; nothing was changed",
    )
