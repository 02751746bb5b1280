"""Generate man pages (roff) from the click commands.

    python -m samctl.cli.manpages man/

writes ``samctl.1`` and one ``samctl-<command>.1`` per command.  A test
regenerates them and fails when ``man/`` is out of date.  Output is
deterministic (no dates), so the pages only change when the commands do.
"""

from __future__ import annotations

import inspect
import sys
from pathlib import Path

import click

from samctl import __version__, errors


def _esc(text: str) -> str:
    out = text.replace("\\", "\\e").replace("-", "\\-")
    lines = []
    for ln in out.splitlines():
        if ln.startswith((".", "'")):
            ln = "\\&" + ln
        lines.append(ln)
    return "\n".join(lines)


def _split_examples(text: str) -> tuple[str, list[str]]:
    """(help without its Examples block, the example lines) for help written with ``examples``."""
    keep, examples = [], []
    for block in inspect.cleandoc(text or "").split("\n\n"):
        body = block.strip("\n").lstrip("\b").strip("\n")
        if block.strip("\n").startswith("\b") and body.startswith("Examples:"):
            examples += [ln.strip() for ln in body.splitlines()[1:] if ln.strip()]
        else:
            keep.append(block)
    return "\n\n".join(keep), examples


def _examples(lines: list[str]) -> str:
    body = "\n".join(_esc(ln) for ln in lines)
    return f".RS 4\n.nf\n{body}\n.fi\n.RE"


def _help_paragraphs(text: str) -> list[str]:
    """click help text -> roff paragraphs; ``\\b`` blocks stay verbatim."""
    out = []
    for block in (text or "").strip().split("\n\n"):
        block = block.strip("\n")
        if block.startswith("\b"):
            out.append(".nf\n" + _esc(block[1:].strip("\n")) + "\n.fi")
        else:
            out.append(_esc(" ".join(ln.strip() for ln in block.splitlines())))
    return out


def _options(cmd: click.Command, ctx: click.Context) -> list[str]:
    out = []
    for p in cmd.get_params(ctx):
        if not isinstance(p, click.Option):
            continue  # arguments are in the synopsis; click 8.5 gives them empty help records
        rec = p.get_help_record(ctx)
        if not rec:
            continue
        out.append(f".TP\n.B {_esc(rec[0])}\n{_esc(rec[1])}")
    return out


EXIT_STATUS = "\n".join(f".TP\n.B {code}\n{_esc(text)}" for code, text in errors.EXIT_CODES)


def page(name: str, cmd: click.Command, ctx: click.Context, see_also: list[str]) -> str:
    title = name.upper()
    short = cmd.get_short_help_str(limit=80)
    usage = " ".join(cmd.collect_usage_pieces(ctx))
    description, examples = _split_examples(cmd.help or "")
    parts = [
        f'.TH {_esc(title)} 1 "" "samctl {__version__}" "samctl manual"',
        ".SH NAME",
        f"{_esc(name)} \\- {_esc(short)}",
        ".SH SYNOPSIS",
        f".B {_esc(name.replace('-', ' '))}\n{_esc(usage)}",
        ".SH DESCRIPTION",
        "\n.PP\n".join(_help_paragraphs(description)),
        ".SH OPTIONS",
        "\n".join(_options(cmd, ctx)),
        *([".SH EXAMPLES", _examples(examples)] if examples else []),
        ".SH EXIT STATUS",
        EXIT_STATUS,
        ".SH ENVIRONMENT",
        ".TP\n.B SAMCTL_ROOT\nThe store, as \\-\\-root.\n.TP\n.B SAMCTL_CACHE_DIR\n"
        "Where samctl keeps its disposable caches and search index (else XDG_CACHE_HOME/samctl).\n"
        ".TP\n.B NO_COLOR\nSet and not empty: no colours or bold, also on a terminal.\n"
        ".TP\n.B SAMCTL_JOBS\nWorker processes for a search index build, for check without \\-\\-fix, for a "
        "listing with 2,000 or more files to read, and to read and compress what rm and archive move, or "
        "extract what restore brings back, 64 conversations or more (default: the cores, at most 4; 1: none).\n"
        ".TP\n.B SAMCTL_INDEX_JOBS\nThe same for index builds only (it wins over SAMCTL_JOBS there).\n"
        ".TP\n.B SAMCTL_DEBUG\n1: an unexpected error prints its traceback.",
        ".SH SEE ALSO",
        ", ".join(f"\\fB{_esc(s)}\\fR(1)" for s in see_also),
        ".PP\nThe rules in full, in the source tree's docs/ folder: scope.md and roots.md (which stores a command "
        "covers), commands.md, query.md, json.md, exit\\-codes.md, other\\-assistants.md, usage.md, attic.md, "
        "recovery.md, environment.md.",
    ]
    return "\n".join(parts) + "\n"


def render_all() -> dict[str, str]:
    from samctl.cli import cli

    # The contexts the real command line builds (help_option_names -h/--help and all): click caches
    # each command's help option, so pages made with other settings would depend on test order.
    root_ctx = click.Context(cli, info_name="samctl", **cli.context_settings)
    names = cli.list_commands(root_ctx)
    pages = {"samctl.1": page("samctl", cli, root_ctx, [f"samctl-{n}" for n in names])}
    for n in names:
        cmd = cli.get_command(root_ctx, n)
        ctx = click.Context(cmd, info_name=n, parent=root_ctx)
        pages[f"samctl-{n}.1"] = page(f"samctl-{n}", cmd, ctx, ["samctl"])
    return pages


def main(argv: list[str]) -> int:
    dest = Path(argv[1] if len(argv) > 1 else "man")
    dest.mkdir(parents=True, exist_ok=True)
    pages = render_all()
    for old in dest.glob("samctl*.1"):
        if old.name not in pages:
            old.unlink()
    for name, text in pages.items():
        (dest / name).write_text(text, encoding="utf-8")
    print(f"wrote {len(pages)} pages to {dest}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
