"""samctl browse: a terminal browser over every archive, with search as you type.

Textual is an optional extra (``pip install 'samctl[tui]'``): this module imports it only inside the
command, after checking it is there, so ``samctl --help`` and every other command never load it.
"""

from __future__ import annotations

import sys

import click

from samctl.cli.common import examples, report_findings, scope_of
from samctl.errors import SamctlError, UsageError
from samctl.said import Suggestion, said


def textual_missing() -> bool:
    """Whether Textual cannot be imported (found, not imported: the listing starts before it loads)."""
    from importlib.util import find_spec

    try:
        return find_spec("textual") is None
    except (ImportError, ValueError):
        return True


def stores_in_scope(ctx, findings: list) -> list:
    """The stores browse covers: the same as `samctl ls` (each --root, else every store found)."""
    scope = scope_of(ctx)
    stores = scope.stores()
    findings.extend(scope.findings)
    return stores


@click.command("browse")
@examples("samctl browse", "samctl --root ~/proj browse")
@click.pass_context
def command(ctx):
    """Browse every conversation in a terminal: filter as you type, search the index as you type,
    read transcripts, export, move to the attic and restore.

    Without --root, of every store samctl finds (samctl stores), as `samctl ls`. The keys are in
    the footer; ? lists them all. Needs the optional extra: pip install 'samctl[tui]'.
    """
    if textual_missing():
        raise SamctlError(
            "samctl browse needs Textual, an optional extra; nothing was done", hint="pip install 'samctl[tui]'"
        )
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        raise UsageError(
            "samctl browse needs a terminal (its input and output); nothing was done",
            hint=said(
                "in a pipe or a script, `",
                Suggestion("ls"),
                "`, `",
                Suggestion("search"),
                "` and `",
                Suggestion("show"),
                "` say the same",
            ),
        )
    findings: list = []
    stores = stores_in_scope(ctx, findings)
    from samctl.tui import firstrows, preload, prepaint

    first = firstrows.load(stores)  # (the newest rows of the last run: painted before this run's listing)
    painted = prepaint.paint(first, len(stores))  # (by samctl, while Textual is imported)
    pre = preload.start(stores)  # (listing in a child while Textual is imported: before any thread)
    app = None
    try:
        from samctl.tui.app import BrowseApp  # (Textual: only here, once it is known to be installed)

        app = BrowseApp(stores, findings, preload=pre, first=first, prepainted=painted is not None)
        app.run()
    finally:
        if painted is not None:
            painted.restore(screen_taken=app is not None and app.screen_taken)
        if pre is not None:
            pre.close()
    report_findings([f for f in app.findings if f.severity == "error"])
    if app.return_code:
        raise SamctlError("the browser stopped with an error")
