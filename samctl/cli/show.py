"""samctl show: one conversation's transcript."""

from __future__ import annotations

import sys

import click

from samctl.cli.common import Number, complete_ids, emit_json, examples, finish, report_findings, store_for_id
from samctl.render import text as render
from samctl.safetext import safe_text
from samctl.core.load import load_conversation

_COLORS = {"user": "green", "assistant": "cyan", "tool": "yellow", "reasoning": "magenta", "system": "blue"}


def _style(text, tag):
    if tag == "title":
        return click.style(text, bold=True)
    if tag == "dim":
        return click.style(text, dim=True)
    return click.style(text, fg=_COLORS.get(tag), bold=True) if tag in _COLORS else text


@click.command("show")
@click.argument("conversation_id", metavar="ID", shell_complete=complete_ids)
@click.option("--format", "fmt", type=click.Choice(("text", "markdown", "json")), default="text", show_default=True,
              help="text for reading, markdown as export writes it, json (samctl's model; a stable interface).")
@click.option("--reasoning", is_flag=True, help="Show reasoning instead of folding it.")
@click.option("--all", "show_all", is_flag=True, help="Also show what the app's UI hides (system-generated turns, "
              "empty messages).")
@click.option("--min-importance", type=Number(0, 1), metavar="X",
              help="Only messages whose importance (SAM's score, computed where not stored) is at least X.")
@click.option("--raw", is_flag=True, help="Print the stored file exactly as it is on disk.")
@click.option("--pager/--no-pager", default=None, help="Page the output when stdout is a terminal (the default), or never (--no-pager).")
@examples("samctl show 20260810_1403", "samctl show 8B58 --format markdown > trip.md", "samctl show 8B58 --raw | jq .")
@click.pass_context
def command(ctx, conversation_id, fmt, reasoning, show_all, min_importance, raw, pager):
    """Print the transcript of conversation ID (a unique prefix is enough, in any store samctl finds
    unless --root names the stores)."""
    findings: list = []
    store, conversation_id = store_for_id(ctx, conversation_id, findings)
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
        if fmt == "json":
            emit_json(_json_model(conv, show_all, min_importance))
        elif fmt == "markdown":
            # to_markdown is faithful (export writes it to files); on its way to a terminal every control
            # character is escaped, as in the text format (markdown itself adds only newlines)
            _page(safe_text(render.to_markdown(conv, reasoning=True, include_hidden=show_all,
                                                      min_importance=min_importance)), pager)
        else:
            tty = sys.stdout.isatty()
            text = render.to_text(conv, reasoning=reasoning, include_hidden=show_all,
                                  style=_style if tty else render.plain_style, min_importance=min_importance)
            _page(text, pager)
    report_findings(findings)
    finish(findings)


def _json_model(conv, show_all: bool, min_importance) -> dict:
    """samctl's JSON model (README, as ``export --to json``) holding the messages the text and markdown formats
    show: hidden ones only with --all, and only those at --min-importance or above.  ``message_count`` counts
    every stored message, ``exported_messages`` those in ``messages``."""
    msgs = list(render.visible(conv.messages, show_all, min_importance))
    d = conv.to_dict()
    d["messages"] = [m.to_dict() for m in msgs]
    d["message_count"] = len(conv.messages)
    d["exported_messages"] = len(msgs)
    return d


def _page(text: str, pager) -> None:
    if pager is None:
        pager = sys.stdout.isatty()
    if pager:
        click.echo_via_pager(text)
    else:
        click.echo(text, nl=not text.endswith("\n"))
