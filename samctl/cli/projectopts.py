"""--project and --here, the same two options on ls, search, stats and export (the filter is core's:
``core.listing.project_matcher``)."""

from __future__ import annotations

import os

import click

from samctl.errors import UsageError


def project_options(f):
    """Add ``--project NAME|PATH`` and ``--here`` to a command (its parameters ``project`` and ``here``)."""
    f = click.option(
        "--here",
        is_flag=True,
        help="Only sessions of the current folder and the folders below it (as /resume lists them).",
    )(f)
    return click.option(
        "--project",
        metavar="NAME|PATH",
        help="Only sessions of a project: its short name (the folder's last part, as ls shows it) "
        "or a folder (that folder and below).",
    )(f)


def project_spec(project: str | None, here: bool) -> str | None:
    """What core's project filter takes: the folder of --here, the text of --project, or None."""
    if here and project:
        raise UsageError("--here and --project name two projects; give one")
    if here:
        try:
            return os.getcwd()
        except OSError as exc:
            raise UsageError(f"--here: the current folder cannot be read ({exc.strerror})") from None
    return project
