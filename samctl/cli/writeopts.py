"""What the commands that move or destroy conversations share: the safety options,
the confirmation, and how a lifecycle report is printed."""

from __future__ import annotations

import functools
import inspect
import sys

import click

from samctl import errors
from samctl.cli.common import Number, emit_json, human_size, pasteable, report_findings

FORMATS = click.Choice(("text", "json"))


def lock_wait_option(f):
    return click.option("--lock-wait", type=Number(min=0), default=0, show_default=True,
                        metavar="SECONDS", help="Wait up to SECONDS for another samctl that is writing to this "
                        "store, then give up with exit 5.")(f)


def force_option(f):
    return click.option("--force", is_flag=True, help="Go ahead even if the owning app seems to be using the "
                        "store (SAM running; a mermaid session's scratch lock held).")(f)


def ignore_unreadable_option(f):
    return click.option("--ignore-unreadable", is_flag=True, help="SAM: remove a memory scope even while some "
                        "conversation cannot be read (it might use that scope; by default the scope is kept).")(f)


def dry_run_option(f):
    return click.option("--dry-run", "-n", is_flag=True, help="Only list what would be done; change nothing.")(f)


def yes_option(f):
    return click.option("--yes", "-y", is_flag=True, help="Do not ask for confirmation (for scripts).")(f)


def all_stores_option(what: str):
    """``--all-stores`` for a command that finds conversations by id (restore, recover) or lists the attic:
    ``what`` it does in every store samctl finds, said in its help."""
    return click.option("--all-stores", is_flag=True, help=f"{what} every store samctl finds (samctl stores), "
                        "not only the default one (./.mermaid, else SAM's folder); several --root do the same "
                        "for those roots.")


def each_store(f):
    """``--all-stores`` for a command that acts on one store: run it once per store samctl finds (or
    per ``--root`` given, when several are), each under its own lock and checks, a line naming each
    store on stderr.  Stores it cannot act on (read-only ones, unreadable ones) are findings (exit
    3) and the others still run.  Exit: the first failure of a store that is not a partial result
    (1, 2, 4, 5), else 3 if any store had a partial result, else 0.  Filters with --format json
    (one document of one store) go with one store.  Ids: the command is called once and resolves
    them across the stores itself (``by_id``)."""

    takes_ids = "ids" in inspect.signature(f).parameters

    @click.option("--all-stores", is_flag=True, help="Run on every store samctl finds (samctl stores), each in "
                  "turn, not only the default one (./.mermaid, else SAM's folder); for filters such as "
                  "--older-than, from cron." + (" Each ID is looked for in every store and acted on in its own."
                                                if takes_ids else ""))
    @functools.wraps(f)
    def run(*args, all_stores=False, **kwargs):
        from samctl.cli.common import Options, remember_root, stores_of

        ctx = click.get_current_context()
        opts = ctx.find_object(Options)
        if not all_stores and len(opts.roots) <= 1:
            return f(*args, **kwargs)
        name = ctx.command.name
        if kwargs.get("ids"):  # (each id in its own store: ``by_id``)
            return f(*args, **kwargs)
        if kwargs.get("fmt") == "json":
            raise errors.UsageError(f"{name} --format json reports on one store", hint="give one --root")
        found: list = []
        stores = stores_of(ctx, found, every=True)
        report_findings(found)
        codes = [errors.PARTIAL] if any(x.severity != "info" for x in found) else []
        for store in stores:
            click.echo(f"== {store.describe()}", err=True)
            opts._store, opts.root = store, str(store.conv_dir)
            remember_root(str(store.conv_dir))  # (a suggested command names this store)
            try:
                f(*args, **kwargs)
                codes.append(errors.OK)
            except click.exceptions.Exit as exc:
                codes.append(exc.exit_code)
            except errors.SamctlError as exc:
                from samctl.cli import report_error

                report_error(exc)
                codes.append(exc.exit_code)
        failed = [c for c in codes if c not in (errors.OK, errors.PARTIAL)]
        code = failed[0] if failed else (errors.PARTIAL if errors.PARTIAL in codes else errors.OK)
        if code:
            raise click.exceptions.Exit(code)

    return run


def by_id(ctx, ids, plan, act, ask, *, fmt: str, dry_run: bool, quiet: bool = False, purge: bool = False,
          nothing_said: str = "nothing matches; nothing was changed", hint=None) -> None:
    """rm or archive of ``ids`` over several stores (issue #23): each id or unique prefix is resolved among
    the conversations of every store (with ``purge``, their attics' too), an ambiguous one listing its
    candidates with their stores (exit 2), one found nowhere exit 4, one in a store this command cannot
    change refused as it is there (exit 2): all before anything changes.  Then ``plan(store, ids)`` (a
    ``Selection``; it may refuse, still before anything changes) in each store, ``ask(targets, explicit)``
    once for all of them, and ``act(store, selection)`` (a ``Report``) in each store in turn: one store
    failing on the way (busy, exit 5) is reported and the others still act.  A store that cannot be read
    is a finding (exit 3).  One report, each item naming its ``store``; ``hint(items)``: the line under it."""
    from samctl.attic.lifecycle import Report
    from samctl.cli.common import exit_for, findings_first, stores_of

    found: list = []
    stores = stores_of(ctx, found, gate=False)
    with findings_first(found):
        plans = [(store, plan(store, cids)) for store, cids in _ids_by_store(ctx, stores, ids, purge, found)]
    sels = [sel for _, sel in plans]
    kept = [k for sel in sels for k in say_kept(sel, "json" if quiet else fmt)]
    targets = [t for sel in sels for t in sel.targets]
    problems = [p for sel in sels for p in sel.problems]
    code = exit_for(found)
    if not targets:
        if quiet and not problems and fmt == "text":
            report_findings(found)
        else:
            nothing(fmt, dry_run, kept, nothing_said, None, problems + found)
        if code:
            raise click.exceptions.Exit(code)
        return
    ask(targets, all(sel.explicit for sel in sels))
    merged = Report(dry_run=dry_run, kept=kept, findings=list(found))
    for store, sel in plans:
        if not sel.targets:
            merged.findings += sel.problems
            continue
        try:
            with findings_first(found if len(plans) == 1 else []):
                report = act(store, sel)
        except errors.SamctlError as exc:
            if len(plans) == 1:
                raise
            from samctl.cli import report_error  # (lazy: the package imports this module)

            report_error(exc)  # (of several stores, one busy: the others still act, as restore does)
            code = code if code not in (errors.OK, errors.PARTIAL) else exc.exit_code
            continue
        merged.items += [dict(it, store=store.name) for it in report.items]
        merged.findings += report.findings
        merged.repaired += report.repaired
    try:
        render(merged, fmt, hint(merged.items) if hint and merged.items else None, quiet=quiet)
    except click.exceptions.Exit as exc:
        code = code or exc.exit_code
    if code:
        raise click.exceptions.Exit(code)


def _ids_by_store(ctx, stores, ids, purge: bool, found: list) -> list:
    """[(store, its whole ids)] for the texts ``ids`` resolved across ``stores`` (with ``purge``, a
    store's attic ids too: an attic that cannot be listed is a finding in ``found``), in the stores'
    order; a store the command cannot change refuses here."""
    from samctl.attic import entries as atticmod
    from samctl.attic.lifecycle import attic_view
    from samctl.cli.common import refuse_on_read_only
    from samctl.stores.resolve import resolve_many_across

    if purge:
        for s in stores:  # (lists the attic's names, reads no manifest)
            if not s.read_only:
                atticmod.list_entries(s, found, want=lambda stem, cid: False)
    views = [attic_view(s, set(s.all_ids()) | atticmod.named_ids(s, atticmod.STATES), both=True)
             if purge and not s.read_only else s for s in stores]
    of = {id(v): s for v, s in zip(views, stores)}
    wanted: dict = {}
    for view, cid in resolve_many_across(views, ids):
        wanted.setdefault(id(of[id(view)]), []).append(cid)
    out = [(s, wanted[id(s)]) for s in stores if id(s) in wanted]
    for s, _ in out:
        if s.read_only or s.moves_only:  # (rm's or archive's own refusal there: exit 2)
            refuse_on_read_only(s, ctx)
    return out


def format_opt(f):
    return click.option("--format", "fmt", type=FORMATS, default="text", show_default=True,
                        help="json is a stable interface.")(f)


def stdin_is_tty() -> bool:
    try:
        return sys.stdin.isatty()
    except (AttributeError, ValueError):
        return False


def confirm(question: str, yes: bool) -> None:
    """Ask on a terminal; refuse (usage error) when no one can answer and --yes was not given."""
    if yes:
        return
    if not stdin_is_tty():
        raise errors.UsageError(f"{question[0].lower() + question[1:]}: refusing without confirmation",
                                hint="pass --yes to confirm from a script, or --dry-run to see the list first")
    if not click.confirm(question, default=False, err=True):
        click.echo("nothing was changed", err=True)
        raise click.exceptions.Exit(errors.FAILED)


def say_kept(sel, fmt: str) -> list:
    """What a filter found and left alone, as ``Report.kept``; on stderr in the text format (the json
    format carries it)."""
    kept = [{"id": cid, "reason": why} for cid, why in sel.skipped]
    if fmt != "json":
        for k in kept:
            click.echo(f"kept: {k['id']}: {k['reason']}", err=True)
    return kept


def nothing(fmt: str, dry_run: bool, kept: list, message: str, store=None, problems: list = ()) -> None:
    """Nothing selected: the json format still prints a report (empty ``items``), a script reads it.
    ``problems`` (``Selection.problems``): what was chosen but cannot be moved, exit 3.  Nothing is
    written, so an interrupted move is not settled: said, with what settles it."""
    from samctl.attic.lifecycle import Report
    from samctl.attic.journal import pending

    report = Report(dry_run=dry_run, kept=kept,
                    findings=list(problems) + (pending(store) if store is not None else []))
    if fmt == "json":
        emit_json(report.to_dict())
    else:
        click.echo("nothing was changed" if problems else message, err=True)
        report_findings(report.findings)
    if problems:
        raise click.exceptions.Exit(errors.PARTIAL)


def show_targets(targets, verb: str, yes: bool) -> None:
    """The list a confirmation asks about, for the person who will answer: not with --yes (a
    script; the results list them again), nor without a terminal (the command refuses)."""
    if yes or not stdin_is_tty():
        return
    for t in targets:
        pin = " (pinned)" if t.pinned else ""
        click.echo(f"{verb}: {t.id}  {_one_line(t.title)}{pin}", err=True)


def _one_line(text) -> str:
    from samctl.safetext import one_line

    return one_line(text)[:80]


def render(report, fmt: str, undo_hint: str | None = None, quiet: bool = False,
           same_said: str = "unchanged since the newest kept copy") -> None:
    """Print a lifecycle report and exit with its code: 3 if a conversation it was given could not be
    moved, purged or restored (a problem of that conversation, even when it was the only one; the
    command's own failures are raised before and exit 1).  ``quiet``: only problems (text format).
    Conversations left as they were (``unchanged``) are one count on stderr, not a line each."""
    if fmt == "json":
        emit_json(report.to_dict())
    elif not quiet:
        for line in report.repaired:
            click.echo(f"repaired: {line}", err=True)
        same = [it for it in report.items if it.get("action") == "unchanged"]
        for it in report.items:
            if it in same:
                continue
            extra = ""
            if it.get("new_id"):
                extra = f" as {it['new_id']}"
            if it.get("entry") and it.get("action") in ("deleted", "archived", "kept"):
                extra = f" -> {it['entry']} ({human_size(it.get('bytes'))} -> {human_size(it.get('stored'))})"
            click.echo(f"{it['action']}: {it.get('restored_from') or it['id']}{extra}  {_one_line(it.get('title'))}")
        if same:
            what = same[0]["id"] if len(same) == 1 else f"{len(same)} conversations"
            click.echo(f"{same_said}: {what}", err=True)
        if undo_hint and len(same) < len(report.items) and not report.dry_run:
            click.echo(pasteable(undo_hint, whole=True), err=True)
    report_findings(report.findings, quiet=quiet and fmt != "json")
    if report.failed:
        raise click.exceptions.Exit(errors.PARTIAL)
