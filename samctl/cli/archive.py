"""samctl archive: move idle conversations to the attic as archived."""

from __future__ import annotations

import click

from samctl.cli.common import complete_ids, examples, several_stores, store_of
from samctl.cli.writeopts import by_id, confirm, dry_run_option, each_store, force_option, format_opt, \
    ignore_unreadable_option, lock_wait_option, nothing, render, say_kept, show_targets, yes_option
from samctl.timeparse import parse_age


@click.command("archive")
@click.argument("ids", nargs=-1, metavar="[ID]...", shell_complete=complete_ids)
@click.option("--older-than", metavar="AGE",
              help="Archive conversations idle for AGE (90d, 2w, 1y): since their last update or, for SAM, their newest "
                   "message.")
@click.option("--keep-last", type=click.IntRange(min=0), metavar="N", help="Never archive the N most recently "
              "updated conversations.")
@click.option("--title", metavar="TEXT", help="Only conversations whose title contains TEXT (case-insensitive).")
@click.option("--include-pinned", is_flag=True, help="Also archive pinned SAM conversations.")
@click.option("--copy", is_flag=True, help="Keep a verified copy in the attic and leave the conversation where it "
              "is; a conversation unchanged since its last copy is not copied again, and a new copy replaces the "
              "older one. Asks no confirmation.")
@click.option("--quiet", "-q", is_flag=True, help="Say nothing unless something is wrong (for cron).")
@dry_run_option
@yes_option
@force_option
@ignore_unreadable_option
@lock_wait_option
@format_opt
@examples("samctl archive --older-than 90d --dry-run", "samctl archive --older-than 90d --keep-last 20 --yes",
          "samctl archive 20260810_140307",
          "samctl --root ~/.claude/projects archive --copy --older-than 20d -q   # crontab: keep before the app deletes")
@click.pass_context
@each_store
def command(ctx, ids, older_than, keep_last, title, include_pinned, copy, quiet, dry_run, yes, force,
            ignore_unreadable, lock_wait, fmt):
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
    With --all-stores (or several --root), each ID is looked for in every
    store and archived in its own; filters then run on each store in turn.
    """
    from samctl.attic import lifecycle

    across = bool(ids) and several_stores(ctx, ctx.params.get("all_stores"))
    store = None if across else store_of(ctx)
    if not ids and older_than is None:
        raise click.UsageError("say which conversations: --older-than AGE, or ids")
    age = parse_age(older_than) if older_than is not None else None

    def plan(store, ids):
        sel = lifecycle.select(store, ids, age, False, title, include_pinned, keep_last)
        lifecycle.preflight(store, sel, ignore_unreadable=ignore_unreadable)
        lifecycle.keep_live(store, sel, force)
        return sel

    def act(store, sel):
        again = lambda confirmed: lifecycle.matching(store, confirmed, age, False, title,  # noqa: E731
                                                     include_pinned, keep_last)
        how = dict(dry_run=dry_run, force=force, lock_wait=lock_wait, ignore_unreadable=ignore_unreadable,
                   again=again)
        report = lifecycle.keep(store, sel.targets, **how) if copy else \
            lifecycle.remove(store, sel.targets, "archived", **how)
        report.findings[:0] = sel.problems
        return report

    def ask(targets, explicit):
        if not copy and not dry_run and (not explicit or len(targets) > 1):  # (a copy takes nothing away)
            if fmt == "text":
                show_targets(targets, "archive", yes)
            n = len(targets)
            confirm(f"Archive {n} conversation{'s' if n != 1 else ''}?", yes)

    every = " --all-stores" if ctx.params.get("all_stores") else ""
    state = "kept" if copy else "archived"
    hint = f"bring one back with: samctl restore ID{every if across else ''} (`samctl attic" \
           f"{every if across else ''} --state {state}` lists them)"
    if across:
        return by_id(ctx, ids, plan, act, ask, fmt=fmt, dry_run=dry_run, quiet=quiet, hint=lambda items: hint,
                     nothing_said=f"nothing to {'copy' if copy else 'archive'}; nothing was changed")
    sel = plan(store, ids)
    kept = say_kept(sel, "json" if quiet else fmt)
    if not sel.targets:
        if quiet and not sel.problems and fmt == "text":
            return
        nothing(fmt, dry_run, kept, f"nothing to {'copy' if copy else 'archive'}; nothing was changed", store,
                sel.problems)
        return
    ask(sel.targets, sel.explicit)
    report = act(store, sel)
    report.kept = kept
    render(report, fmt, hint, quiet=quiet)
