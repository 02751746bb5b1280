"""samctl check: a read-only fsck of the whole store."""

from __future__ import annotations

import click

from samctl import errors
from samctl.cli.common import (
    Number,
    emit_json,
    examples,
    exit_for,
    format_option,
    report_findings,
    say_skipped,
    scope_of,
)
from samctl.core.check import check


@click.command("check")
@click.option(
    "--fix",
    is_flag=True,
    help="Apply safe fixes only: tighten modes to 0600/0700, rebuild "
    "missing or stale mermaid .meta sidecars, trim torn log tails of sessions mermaid does not have "
    "open. Says what it changed.",
)
@click.option(
    "--lock-wait",
    type=Number(min=0),
    default=0,
    show_default=True,
    metavar="SECONDS",
    help="With --fix: wait up to SECONDS for another samctl that is writing to this store, then give up with exit 5.",
)
@click.option(
    "--force",
    is_flag=True,
    help="With --fix: fix even while the owning app uses the store (SAM running, a mermaid session open).",
)
@click.option(
    "--quiet", "-q", is_flag=True, help="Leave out info lines (warnings, errors and the summary are still printed)."
)
@format_option(("text", "json"), "text")
@examples("samctl check", "samctl check --fix", "samctl check --format json | jq '.findings[].code'")
@click.pass_context
def command(ctx, fix, lock_wait, force, quiet, fmt):
    """Check every file of the store and report each problem with a code, path and reason.

    Keeps going after the first problem. Exit 0 when nothing is wrong, 3 when
    something is (info lines do not count). Every store samctl finds (or each
    --root); --fix acts on the one store it can fix, or with --all-stores on
    each (docs/scope.md). --format json: one document, the same with one
    store or several (docs/json.md).
    """
    from samctl.core.scope import READ, REWRITE

    scope = scope_of(ctx, REWRITE if fix else READ, filters=fix, what="check --fix" if fix else "check")
    stores = scope.stores()
    found = scope.findings  # stores that could not be opened or used
    many = len(stores) > 1
    skipped = say_skipped(ctx, scope.skipped, fmt)
    reports = []
    problems = False
    for store in stores:
        try:
            report = check(store, fix=fix, force=force, lock_wait=lock_wait)
        except errors.SamctlError as exc:  # (one store busy or gone: of several, the others are still checked)
            if not many:
                raise
            from samctl.model import ERROR, Finding

            found.append(Finding("not-checked", str(store.conv_dir), exc.message, ERROR))
            continue
        problems = problems or report.problems
        summary = report.summary()
        reports.append(
            {
                "store": store.name,
                "root": str(store.conv_dir),
                "findings": [f.to_dict() for f in report.findings],
                "fixes": report.fixes,
                "summary": summary,
            }
        )
        if fmt == "json":
            continue
        for line in report.fixes:
            click.echo(f"fixed: {line}")
        report_findings(report.findings, quiet=quiet, kinds=True)
        parts = [f"{summary['errors']} errors", f"{summary['warnings']} warnings"]
        if summary["info"]:
            parts.append(f"{summary['info']} info")
        if fix:
            parts.append(f"{summary['fixed']} fixed")
        codes = ", ".join(f"{c} {n}" for c, n in summary["by_code"].items())
        click.echo(f"{store.describe()}: " + ", ".join(parts) + (f" ({codes})" if codes else ""), err=True)
    if fmt == "json":
        emit_json(_document(reports, skipped, found))
    report_findings(found, quiet=quiet, kinds=True)
    if problems or exit_for(found):
        raise click.exceptions.Exit(errors.PARTIAL)


def _document(reports: list, skipped: list, found: list) -> dict:
    """check's JSON (docs/json.md), one shape for one store or several: every finding (each naming its
    store), every fix, the summary over all, and one row per store checked; ``skipped``: the stores
    left out (they cannot be fixed)."""
    total: dict = {"errors": 0, "warnings": 0, "info": 0, "fixed": 0, "by_code": {}}
    for r in reports:
        for k in ("errors", "warnings", "info", "fixed"):
            total[k] += r["summary"].get(k, 0)
        for code, n in r["summary"]["by_code"].items():
            total["by_code"][code] = total["by_code"].get(code, 0) + n
    return {
        "findings": [dict(f, store=r["store"]) for r in reports for f in r["findings"]]
        + [dict(f.to_dict(), store=None) for f in found],
        "fixes": [x for r in reports for x in r["fixes"]],
        "summary": total,
        "stores": reports,
        "skipped": skipped,
    }
