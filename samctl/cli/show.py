"""samctl show: one conversation's transcript."""

from __future__ import annotations

import contextlib
import os
import shlex
import shutil
import sys

import click

from samctl.cli.common import (
    Number,
    complete_ids,
    emit_json,
    examples,
    findings_first,
    finish,
    report_findings,
    scope_of,
)
from samctl.core.load import load_conversation
from samctl.errors import UsageError
from samctl.render import text as render
from samctl.safetext import safe_text

_COLORS = {"user": "green", "assistant": "cyan", "tool": "yellow", "reasoning": "magenta", "system": "blue"}


def _style(text, tag):
    if tag == "title":
        return click.style(text, bold=True)
    if tag == "dim":
        return click.style(text, dim=True)
    return click.style(text, fg=_COLORS.get(tag), bold=True) if tag in _COLORS else text


@click.command("show")
@click.argument("conversation_id", metavar="ID", shell_complete=complete_ids)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(("text", "markdown", "json")),
    default="text",
    show_default=True,
    help="text for reading, markdown as export writes it, json (samctl's model; a stable interface).",
)
@click.option("--reasoning", is_flag=True, help="Show reasoning instead of folding it.")
@click.option(
    "--all",
    "show_all",
    is_flag=True,
    help="Also show what the app's UI hides (system-generated turns, empty messages).",
)
@click.option(
    "--min-importance",
    type=Number(0, 1),
    metavar="X",
    help="Only messages whose importance (SAM's score, computed where not stored) is at least X.",
)
@click.option("--raw", is_flag=True, help="Print the stored file exactly as it is on disk.")
@click.option(
    "--pager/--no-pager",
    default=None,
    help="Page the output when stdout is a terminal (the default), or never (--no-pager).",
)
@click.option(
    "--at",
    "at",
    type=int,
    metavar="POSITION",
    help="Open at the message at POSITION, as search reports it (0 is the first stored message, -1 the "
    "last). The pager (less or more) opens the whole transcript scrolled there; anywhere else the "
    "output starts there (json: the messages from there on).",
)
@examples(
    "samctl show 20260810_1403",
    "samctl show 8B58 --format markdown > trip.md",
    "samctl show 8B58 --raw | jq .",
    "samctl show 8B58 --at 12",
)
@click.pass_context
def command(ctx, conversation_id, fmt, reasoning, show_all, min_importance, raw, pager, at):
    """Print the transcript of conversation ID (a unique prefix is enough, in any store samctl finds
    unless --root names the stores).

    --at POSITION opens it at one message: on a terminal the pager (less or more) shows the whole
    transcript scrolled to that message; piped, or through another pager, the output is the title,
    a line saying how many messages come before, and the transcript from that message on. The
    message at POSITION is shown even when --all or --min-importance would leave it out.
    """
    if raw and at is not None:
        raise UsageError("--at does not apply to --raw (the stored file, byte for byte)")
    scope = scope_of(ctx)
    findings = scope.findings
    with findings_first(findings):
        [(store, conversation_id)] = scope.resolve([conversation_id])
    if raw:
        from samctl.core.load import raw_bytes

        data = raw_bytes(store, conversation_id, findings)
        if data is not None:
            out = sys.stdout.buffer
            out.write(data)
            out.flush()
        report_findings(findings)
        finish(findings)
        return
    conv = load_conversation(store, conversation_id, findings)
    if conv is not None:
        if at is not None:
            at = _position(conv, at)
        starts: dict = {}
        if fmt == "json":
            emit_json(_json_model(conv, show_all, min_importance, at))
        elif fmt == "markdown":
            # to_markdown is faithful (export writes it to files); on its way to a terminal every control
            # character is escaped, as in the text format (markdown itself adds only newlines)
            text = safe_text(
                render.to_markdown(
                    conv, reasoning=True, include_hidden=show_all, min_importance=min_importance, at=at, starts=starts
                )
            )
            _page(text, pager, at, starts, f"_{_before(conv, at)}_")
        else:
            tty = sys.stdout.isatty()
            style = _style if tty else render.plain_style
            text = render.to_text(
                conv,
                reasoning=reasoning,
                include_hidden=show_all,
                style=style,
                min_importance=min_importance,
                at=at,
                starts=starts,
            )
            _page(text, pager, at, starts, style(_before(conv, at), "dim"))
    report_findings(findings)
    finish(findings)


def _position(conv, at: int) -> int:
    """The index in the conversation's messages of POSITION (negative: from the end, -1 the last); the
    numbering is the one search reports (``sources.Row.position``: the index among every stored message)."""
    n = len(conv.messages)
    if not -n <= at < n:
        cid = conv.meta.id
        raise UsageError(
            f"position {at}: conversation {cid} has {n} messages (0..{n - 1})"
            if n
            else f"position {at}: conversation {cid} has no messages"
        )
    return at % n


def _before(conv, at: int) -> str:
    """The line that stands for the messages before ``at`` when the output starts there."""
    return (
        f"({at} earlier message{'s' if at != 1 else ''} not shown; samctl show {conv.meta.id} shows "
        f"{'them' if at != 1 else 'it'})"
    )


def _json_model(conv, show_all: bool, min_importance, at: int | None = None) -> dict:
    """samctl's JSON model (README, as ``export --to json``) holding the messages the text and markdown formats
    show: hidden ones only with --all, and only those at --min-importance or above.  ``message_count`` counts
    the messages shown by default (as ``ls`` counts them), ``stored_messages`` every stored message, hidden
    ones included, ``exported_messages`` those in ``messages``.  With --at: the messages from that
    position on (that one always), and ``at``, its position."""
    msgs = [m for i, m in render.shown(conv.messages, show_all, min_importance, at) if at is None or i >= at]
    d = conv.to_dict()
    d["messages"] = [m.to_dict() for m in msgs]
    d["message_count"] = sum(1 for _ in render.visible(conv.messages, False))
    d["stored_messages"] = len(conv.messages)
    d["exported_messages"] = len(msgs)
    if at is not None:
        d["at"] = at
    return d


def _page(text: str, pager, at: int | None = None, starts: dict | None = None, before: str = "") -> None:
    """Print TEXT, through the pager when asked or on a terminal.  With ``at``, a pager that can start at a
    line (less, more: ``+N``) opens the whole text at the line where message ``at`` starts (``starts``);
    otherwise the output is the header, ``before`` and the text from that message on."""
    if pager is None:
        pager = sys.stdout.isatty()
    argv = _pager_argv() if pager else None
    # as git: less quits when the text fits one screen (F), keeps colours (R) and the screen (X), unless LESS
    # says otherwise; SAMCTL_PAGER, else PAGER, names the pager
    with (
        _environ("LESS", os.environ.get("LESS") or "FRX"),
        _environ("PAGER", shlex.join(argv) if argv else os.environ.get("PAGER")),
    ):
        if at is not None and starts is not None:
            line = starts[at]
            if argv and os.path.basename(argv[0]) in ("less", "more"):
                with _environ("PAGER", shlex.join(argv + [f"+{line}"])):
                    click.echo_via_pager(text)
                return
            lines = text.split("\n")
            text = "\n".join(lines[: min(starts.values()) - 1] + ([before, ""] if at else []) + lines[line - 1 :])
        if pager:
            click.echo_via_pager(text)
            return
    if not pager:
        click.echo(text, nl=not text.endswith("\n"))


def _pager_argv() -> list[str] | None:
    """The pager ``click.echo_via_pager`` runs (its rule: PAGER split as a shell would, else less, found on
    PATH; none when stdin or stdout is not a terminal, or TERM is dumb without a PAGER).  A PAGER that
    cannot be split is a usage error here, where click would fail with its own ValueError."""
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        return None
    name = "SAMCTL_PAGER" if os.environ.get("SAMCTL_PAGER") else "PAGER"
    try:
        argv = shlex.split(os.environ.get(name, ""))
    except ValueError as exc:
        raise UsageError(
            f"{name} is not a command line: {str(exc).lower()} in {os.environ.get(name)!r}",
            f"fix {name}, or use --no-pager",
        ) from None
    if not argv:
        if os.environ.get("TERM") in ("dumb", "emacs"):
            return None
        argv = ["less"]
    path = shutil.which(argv[0])
    return [path, *argv[1:]] if path else None


@contextlib.contextmanager
def _environ(name: str, value: str | None):
    old = os.environ.get(name)
    if value is None:  # (nothing to set: left as it is)
        yield
        return
    os.environ[name] = value
    try:
        yield
    finally:
        if old is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = old
