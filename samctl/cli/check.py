"""samctl check: a read-only fsck of the whole store."""

from __future__ import annotations

import click

from samctl import errors
from samctl.cli.common import Number, Options, emit_json, examples, exit_for, format_option, report_findings, \
    stores_of
from samctl.core.check import check


@click.command("check")
@click.option("--fix", is_flag=True, help="Apply safe fixes only: tighten modes to 0600/0700, rebuild "
              "missing or stale mermaid .meta sidecars, trim torn log tails of sessions mermaid does not have "
              "open. Says what it changed.")
@click.option("--lock-wait", type=Number(min=0), default=0, show_default=True, metavar="SECONDS",
              help="With --fix: wait up to SECONDS for another samctl that is writing to this store, then give up "
                   "with exit 5.")
@click.option("--force", is_flag=True, help="With --fix: fix even while the owning app uses the store (SAM "
              "running, a mermaid session open).")
@click.option("--quiet", "-q", is_flag=True,
              help="Leave out info lines (warnings, errors and the summary are still printed).")
@click.option("--all-stores", is_flag=True, help="Check every store samctl finds (samctl stores), not only the "
              "default one (./.mermaid, else SAM's folder); with --fix, the stores samctl only reads are findings.")
@format_option(("text", "json"), "text")
@examples("samctl check", "samctl check --fix", "samctl check --format json | jq '.findings[].code'",
          "samctl check --all-stores")
@click.pass_context
def command(ctx, fix, lock_wait, force, quiet, all_stores, fmt):
    """Check every file of the store and report each problem with a code, path and reason.

    Keeps going after the first problem. Exit 0 when nothing is wrong, 3 when
    something is (info lines do not count). One store: the --root given, else
    ./.mermaid, else SAM's folder; with --all-stores (or several --root) each
    store, and --format json gives {"stores": [...]}, one object per store.
    """
    found: list = []  # stores that could not be opened or used (several stores only)
    stores = stores_of(ctx, found, every=all_stores)
    many = all_stores or len(ctx.find_object(Options).roots) > 1
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
        reports.append({"store": store.name, "root": str(store.conv_dir),
                        "findings": [f.to_dict() for f in report.findings], "fixes": report.fixes,
                        "summary": summary})
        if fmt == "json":
            continue
        for line in report.fixes:
            click.echo(f"fixed: {line}")
        report_findings(report.findings, quiet=quiet)
        parts = [f"{summary['errors']} errors", f"{summary['warnings']} warnings"]
        if summary["info"]:
            parts.append(f"{summary['info']} info")
        if fix:
            parts.append(f"{summary['fixed']} fixed")
        codes = ", ".join(f"{c} {n}" for c, n in summary["by_code"].items())
        click.echo(f"{store.describe()}: " + ", ".join(parts) + (f" ({codes})" if codes else ""), err=True)
    if fmt == "json":
        emit_json({"stores": reports} if many else reports[0])
    report_findings(found, quiet=quiet)
    if problems or exit_for(found):
        raise click.exceptions.Exit(errors.PARTIAL)
