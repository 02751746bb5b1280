"""samctl compact: the maintenance command for cron."""

from __future__ import annotations

import sys
import time

import click

from samctl.cli import size_option
from samctl.cli.common import (
    emit_json,
    examples,
    exit_with,
    human_size,
    report_findings,
    run_of,
    say_failed,
    say_skipped,
    scope_of,
)
from samctl.cli.writeopts import dry_run_option, force_option, format_opt, ignore_unreadable_option, lock_wait_option
from samctl.core.scope import MOVE, Outcome
from samctl.safetext import safe_text
from samctl.timeparse import parse_age


@click.command("compact")
@click.option(
    "--grace",
    metavar="AGE",
    default="30d",
    show_default=True,
    help="Purge deleted attic entries (not ones that were pinned), and remove samctl's .bak/.torn copies, older "
    "than AGE.",
)
@click.option(
    "--log-threshold",
    metavar="SIZE",
    default="64M",
    show_default=True,
    callback=size_option,
    help="Rewrite mermaid logs larger than SIZE (half mermaid's 128 MiB cap by default).",
)
@dry_run_option
@force_option
@ignore_unreadable_option
@lock_wait_option
@click.option("--quiet", "-q", is_flag=True, help="Say nothing unless something is wrong.")
@click.option("--verbose", "-v", is_flag=True, help="One line per action, and what was left alone and why.")
@format_opt
@examples(
    "samctl compact",
    "samctl compact --dry-run -v",
    "samctl compact --grace 7d --lock-wait 60 -q",
    "0 3 * * *  samctl compact --all-stores -q   # crontab",
)
@click.pass_context
def command(ctx, grace, log_threshold, dry_run, force, ignore_unreadable, lock_wait, quiet, verbose, fmt):
    """Keep the store and its attic healthy; safe to run from cron.

    In one pass: finish moves a crash interrupted; purge deleted attic
    entries past the grace period (not pinned ones: rm --purge
    --include-pinned; not SAM memory scopes a conversation uses, or might:
    see --ignore-unreadable); for mermaid sessions that are not in use (an open
    session is left alone, even with --force), cut torn log tails (kept in a .torn file) and rewrite logs over the
    threshold into a compressed history segment in the attic plus a fresh log
    that mermaid reads as its own backfill; remove stale temp files (by the
    store's own rule) and old .bak/.torn copies; VACUUM SAM's memory
    databases. Ends with one summary, bytes before and after. Exit 3 if
    something was wrong, 5 if the app or another samctl is busy.
    """
    from samctl.attic.compact import CompactOptions

    scope = scope_of(ctx, MOVE, filters=True)
    verbose = verbose or run_of(ctx).verbose  # (-v anywhere on the line is the group's)
    stores = scope.stores()
    opts = CompactOptions(
        grace=parse_age(grace),
        log_threshold=log_threshold,
        dry_run=dry_run,
        force=force,
        lock_wait=lock_wait,
        ignore_unreadable=ignore_unreadable,
    )
    several = len(stores) != 1 or scope.several
    skipped = say_skipped(ctx, scope.skipped, fmt)
    if several:
        outcomes = scope.run(lambda s: _one(s, opts, fmt, quiet, verbose, dry_run, several=True), stores)
        say_failed(outcomes)
    else:  # (one store: its errors raised as they always were)
        outcomes = [Outcome(stores[0], "done", value=_one(stores[0], opts, fmt, quiet, verbose, dry_run, False))]
    reports = [(o.store, o.value) for o in outcomes if o.status == "done"]
    if fmt == "json":
        emit_json(_document(reports, skipped, dry_run, scope.findings))
    else:
        report_findings(scope.findings, quiet=quiet)
    exit_with(scope.exit_code(outcomes, partial=any(_problems(rep) for _, rep in reports)))


def _document(reports: list, skipped: list, dry_run: bool, found: list) -> dict:
    """compact's JSON (docs/json.md), one shape for one store or several: every action, repair and finding
    (each naming its store), the counts and bytes over all, one row per store compacted, and the stores
    left out (``skipped``: samctl cannot write them)."""
    counts: dict = {}
    for _, rep in reports:
        for kind, n in rep.counts().items():
            counts[kind] = counts.get(kind, 0) + n
    return {
        "dry_run": dry_run,
        "actions": [dict(a, store=store.name) for store, rep in reports for a in rep.actions],
        "repaired": [line for _, rep in reports for line in rep.repaired],
        "findings": [dict(f.to_dict(), store=store.name) for store, rep in reports for f in rep.findings]
        + [dict(f.to_dict(), store=None) for f in found],
        "counts": counts,
        "bytes_before": sum(rep.bytes_before for _, rep in reports),
        "bytes_after": sum(rep.bytes_after for _, rep in reports),
        "stores": [
            {
                "store": store.name,
                "root": str(store.conv_dir),
                "counts": rep.counts(),
                "bytes_before": rep.bytes_before,
                "bytes_after": rep.bytes_after,
            }
            for store, rep in reports
        ],
        "skipped": skipped,
    }


def _problems(rep) -> list:
    # (a dry run that the real run's refusal would stop says so, and exits 0 as every dry run does)
    return [f for f in rep.findings if f.severity != "info" and f.code != "busy"]


def _one(store, opts, fmt, quiet, verbose, dry_run, several):
    """compact of one store, its report printed (text; the json document is the caller's)."""
    from samctl.attic.compact import compact

    if several and fmt == "text" and (verbose or not quiet):
        click.echo(f"== {store.describe()}", err=True)
    progress = _Progress() if fmt == "text" and not quiet and _stderr_is_tty() else None
    try:
        rep = compact(store, opts, progress)
    finally:
        if progress:
            progress.clear()
    if fmt != "json":
        for line in rep.repaired:
            if not quiet:
                click.echo(f"repaired: {line}", err=True)
        if verbose:
            for a in rep.actions:
                size = (
                    f" ({human_size(a['bytes_before'])} -> {human_size(a['bytes_after'])})"
                    if a["bytes_before"] or a["bytes_after"]
                    else ""
                )
                if "log_after" in a:  # the parts: what the log becomes, and what its old bytes take in the attic
                    size = (
                        f" (log {human_size(a['bytes_before'])} -> {human_size(a['log_after'])}, history segment "
                        f"{human_size(a['history'])})"
                    )
                click.echo(
                    safe_text(
                        f"{'would ' if dry_run else ''}{a['kind']}: {a['path']}{size} {a['detail']}".rstrip(),
                        lines=False,
                    )
                )
        for f in rep.findings:
            if f.severity != "info" or verbose:
                click.echo(f.line(), err=True)
        if rep.actions and not quiet or verbose:
            click.echo(_summary(rep, store))
    return rep


_NAMES = {
    "purge-entry": ("attic entry purged", "attic entries purged"),
    "rewrite-log": ("log rewritten", "logs rewritten"),
    "trim-tail": ("torn tail cut", "torn tails cut"),
    "remove-temp": ("stale temp removed", "stale temps removed"),
    "remove-backup": ("old .bak/.torn removed",) * 2,
    "vacuum": ("database vacuumed", "databases vacuumed"),
}


def _summary(rep, store) -> str:
    counts = rep.counts()
    parts = [f"{n} {_NAMES.get(k, (k, k))[n != 1]}" for k, n in counts.items()] or ["nothing to do"]
    head = "compact (dry run): " + ("would do " if counts else "") if rep.dry_run else "compact: "
    return (
        f"{head}{', '.join(parts)}; {store.describe()} and attic: {human_size(rep.bytes_before)} -> "
        f"{human_size(rep.bytes_after)}{' (estimated)' if rep.dry_run else ''}"
    )


def _stderr_is_tty() -> bool:
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):
        return False


class _Progress:
    """One self-overwriting line on stderr, at most ten times a second (terminals only)."""

    def __init__(self):
        self.last = 0.0
        self.shown = False

    def __call__(self, done: int, total: int, what: str) -> None:
        now = time.monotonic()
        if now - self.last < 0.1 and done < total:
            return
        self.last = now
        sys.stderr.write(f"\rcompact: {done}/{total} {what[:40]:<40}")
        sys.stderr.flush()
        self.shown = True

    def clear(self) -> None:
        if self.shown:
            sys.stderr.write("\r" + " " * 60 + "\r")
            sys.stderr.flush()
