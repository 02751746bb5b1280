"""The samctl command line: a click group whose commands live one per module.

Commands are imported only when used, so ``samctl --help`` and ``samctl ls``
never import numpy or zstandard.  Every SamctlError becomes one line on
stderr (plus a hint) and its exit code; no traceback reaches a user unless
SAMCTL_DEBUG=1.
"""

from __future__ import annotations

import importlib
import io
import os
import re
import sys

import click

from samctl import __version__, errors

# command name -> (module, one-line help shown by `samctl --help`)
COMMANDS = {
    "ls": ("samctl.cli.ls", "List conversations, newest first."),
    "show": ("samctl.cli.show", "Print one conversation's transcript."),
    "check": ("samctl.cli.check", "Check the whole store for problems (read-only unless --fix)."),
    "log": ("samctl.cli.log", "Show a mermaid session's event log."),
    "recover": ("samctl.cli.recover", "Bring back a conversation that is missing, corrupt, or behind its log."),
    "export": ("samctl.cli.export", "Export conversations as Markdown, HTML, JSON, JSONL or SAM packages."),
    "stats": ("samctl.cli.stats", "Counts, sizes, the largest conversations and activity per month."),
    "completion": ("samctl.cli.completion", "Print the shell completion script (bash, zsh, fish)."),
    "rm": ("samctl.cli.rm", "Move conversations to the attic (restorable), or --purge them for good."),
    "restore": ("samctl.cli.restore", "Bring a conversation back from the attic, exactly as it was."),
    "archive": ("samctl.cli.archive", "Move idle conversations to the attic as archived."),
    "attic": ("samctl.cli.attic", "List the attic (removed, archived, history); verify or repair it."),
    "compact": ("samctl.cli.compact", "Maintenance for cron: purge old attic entries, shrink big logs, clean up."),
    "search": ("samctl.cli.search", "Search memories and messages, best first (SAM's scoring), or --exact."),
    "index": ("samctl.cli.index", "Show the state of the search index; --update or --rebuild it."),
    "usage": ("samctl.cli.usage", "Tokens and estimated cost by day, week, month, session, project, model or block."),
    "resume": ("samctl.cli.resume", "Print (or --exec) the app's own command to resume a session."),
    "stores": ("samctl.cli.stores", "List every store samctl finds on this machine, and what it can do."),
    "browse": ("samctl.cli.browse", "Browse every archive in a terminal: filter, search as you type, read, act."),
}


# The group's options a user may give after the command name too (as `gh -R`): name -> takes a value
GLOBAL_OPTIONS = {
    "--root": True,
    "--max-file-size": True,
    "--no-cache": False,
    "--all-stores": False,
    "--verbose": False,
    "-v": False,
}


def hoist_globals(args: list) -> list:
    """``args`` with the group's options found after the command name moved before it (``samctl ls --root
    X`` is ``samctl --root X ls``).  Words after ``--`` are never moved, nor the value of an option."""
    args = list(args)
    i = 0
    while i < len(args) and args[i].startswith("-") and args[i] != "--":  # the group's own options
        name = args[i].split("=", 1)[0]
        i += 2 if GLOBAL_OPTIONS.get(name) and "=" not in args[i] else 1
    if i >= len(args) or args[i] == "--":
        return args
    head, rest, moved = args[:i], args[i:], []
    out, j = [rest[0]], 1
    while j < len(rest):
        word = rest[j]
        if word == "--":
            out += rest[j:]
            break
        name = word.split("=", 1)[0]
        if name in GLOBAL_OPTIONS:
            takes = GLOBAL_OPTIONS[name] and "=" not in word
            moved += rest[j : j + 2] if takes else [word]
            j += 2 if takes else 1
            continue
        out.append(word)
        j += 1
    return head + moved + out


class SamctlGroup(click.Group):
    def list_commands(self, ctx):
        return sorted(COMMANDS)

    def get_command(self, ctx, name):
        if name not in COMMANDS:
            return None
        module = importlib.import_module(COMMANDS[name][0])
        return module.command

    def parse_args(self, ctx, args):
        return super().parse_args(ctx, hoist_globals(args))

    def resolve_command(self, ctx, args):
        name = args[0] if args else ""
        if name and name not in COMMANDS and not name.startswith("-"):
            import difflib

            near = difflib.get_close_matches(name, list(COMMANDS), n=1, cutoff=0.5)
            raise click.UsageError(f"no command {name!r}" + (f"; did you mean {near[0]}?" if near else ""))
        return super().resolve_command(ctx, args)

    def make_context(self, info_name, args, parent=None, **extra):
        try:
            return super().make_context(info_name, args, parent, **extra)
        except click.UsageError as exc:
            _usage_error(exc)

    def format_commands(self, ctx, formatter):
        rows = [(name, COMMANDS[name][1]) for name in self.list_commands(ctx)]
        with formatter.section("Commands"):
            formatter.write_dl(rows)

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except click.UsageError as exc:  # (a command's options: parsed here)
            _usage_error(exc)
        except errors.SamctlError as exc:
            report_error(exc)
            ctx.exit(exc.exit_code)
        except KeyboardInterrupt:
            click.echo("samctl: interrupted", err=True)
            ctx.exit(errors.INTERRUPTED)
        except BrokenPipeError:
            # (stdout and stderr never raise it under main(): _guard_streams.) A pipe the command wrote
            # to itself, an export into a FIFO whose reader went away: the job was not done
            _quiet_broken_pipe()
            _say_quietly("samctl: error: broken pipe: the reader went away before everything was written")
            ctx.exit(errors.FAILED)
        except (click.exceptions.Exit, click.ClickException, click.exceptions.Abort):
            raise
        except Exception as exc:  # noqa: BLE001 - the last line of defence: no tracebacks
            if os.environ.get("SAMCTL_DEBUG") == "1":
                raise
            from samctl.safetext import safe_text

            click.echo(safe_text(f"samctl: internal error: {type(exc).__name__}: {exc}", lines=False), err=True)
            click.echo(
                "hint: this is a bug in samctl; rerun with SAMCTL_DEBUG=1 for the traceback and report it", err=True
            )
            ctx.exit(errors.FAILED)


def _usage_error(exc, hint=None) -> None:
    """A usage error in samctl's one style: ``samctl: error: ...``, ``hint: ...``, exit 2."""
    from samctl.safetext import safe_text

    message = exc.format_message()
    if isinstance(exc, click.exceptions.NoSuchOption):
        message = f"no such option: {exc.option_name}"
        if exc.possibilities and not hint:
            import difflib

            near = difflib.get_close_matches(exc.option_name, exc.possibilities, n=1, cutoff=0) or sorted(
                exc.possibilities
            )
            hint = f"did you mean {near[0]}?"
    elif "; did you mean " in message:
        message, near = message.split("; did you mean ")
        hint = hint or f"did you mean {near}"
    elif " Did you mean" in message:
        message = message.split(" Did you mean")[0]
    command = exc.ctx.command_path if exc.ctx is not None else "samctl"
    click.echo(safe_text(f"samctl: error: {message}", lines=False), err=True)
    click.echo(
        safe_text(f"hint: {hint}" if hint else f"hint: `{command} --help` lists the options", lines=False), err=True
    )
    sys.exit(errors.USAGE)


def report_error(exc: errors.SamctlError) -> None:
    # messages quote file names and file text: never a control character to the terminal
    from samctl.cli.common import shown
    from samctl.safetext import safe_text

    click.echo(safe_text(f"samctl: error: {shown(exc.message)}", lines=False), err=True)
    if exc.hint:  # (a hint of several lines, e.g. the candidates of an ambiguous prefix: each line made safe)
        for line in f"hint: {shown(exc.hint)}".split("\n"):
            click.echo(safe_text(line, lines=False), err=True)


def _quiet_broken_pipe() -> None:
    # The reader went away: nothing more goes to that stdout (nor a failed flush at exit).
    try:
        _to_devnull(sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):
        pass


def _say_quietly(text: str) -> None:
    try:
        click.echo(text, err=True)
    except (OSError, ValueError):
        pass


def _to_devnull(fd: int) -> None:
    devnull = os.open(os.devnull, os.O_WRONLY)  # (samctl.fs exception: /dev/null, no file of samctl's)
    try:
        os.dup2(devnull, fd)
    finally:
        os.close(devnull)


class _PipeSafe(io.RawIOBase):
    """A standard stream's descriptor that a reader going away cannot stop (``samctl check | head -1``):
    on a broken pipe it is pointed at /dev/null and the command goes on to its end, so it exits with
    the code of its result, as when everything is read, and prints nothing more there. The other
    stream is not touched (with ``2>&1`` it is the same pipe, and breaks on its own next write).
    Closing it never closes the descriptor (RawIOBase's own close only marks it closed)."""

    def __init__(self, fd: int):
        super().__init__()
        self.fd = fd

    def writable(self) -> bool:
        return True

    def fileno(self) -> int:
        return self.fd

    def isatty(self) -> bool:
        return os.isatty(self.fd)

    def write(self, b) -> int:
        try:
            return os.write(self.fd, b)
        except BrokenPipeError:
            _to_devnull(self.fd)
            return len(b)


def _guard_streams() -> None:
    """Put ``_PipeSafe`` under ``sys.stdout`` and ``sys.stderr``, keeping their encoding and buffering."""
    for name in ("stdout", "stderr"):
        old = getattr(sys, name)
        try:
            fd = old.fileno()
            old.flush()
        except (AttributeError, OSError, ValueError):  # no real stream (embedded, closed): leave it
            continue
        new = io.TextIOWrapper(
            io.BufferedWriter(_PipeSafe(fd)),
            encoding=old.encoding,
            errors=old.errors,
            line_buffering=old.line_buffering,
            write_through=old.write_through,
        )
        _REPLACED.append(old)  # kept: the last reference going would close the descriptor under the new one
        setattr(sys, name, new)


_REPLACED: list = []


_SIZE = re.compile(r"([0-9]+)\s*(?:([kmg])(?:i?b)?|b)?", re.I)  # 64M, 64MB, 64MiB, 64 mib, 1048576, 1048576B


def _parse_size(text: str) -> int:
    """Bytes of a size like ``64M``, ``64MiB`` or ``1048576`` (binary units: K, M, G are 1024-based)."""
    m = _SIZE.fullmatch(text.strip())
    if m is None or int(m.group(1)) <= 0:
        from samctl.safetext import quoted

        raise click.BadParameter(f"{quoted(text)} is not a size like 64M, 64MiB or 1048576")
    return int(m.group(1)) << {None: 0, "k": 10, "m": 20, "g": 30}[m.group(2) and m.group(2).lower()]


def size_option(ctx, param, value):
    """Click callback: ``_parse_size`` of an option's value (None stays None), errors naming the option."""
    return None if value is None else _parse_size(value)


@click.group(
    "samctl", cls=SamctlGroup, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100}
)
@click.option(
    "--root",
    "roots",
    multiple=True,
    metavar="PATH",
    help="A store: a SAM base folder, a SAM conversations folder, a mermaid project folder, "
    "or a .mermaid/conversations folder; read-only: ~/.claude or ~/.codex (or a folder in them), "
    "llm's logs.db, a ChatGPT export (.zip or folder). Repeatable. Default: every store samctl "
    "finds (samctl stores); a command that writes and selects by filters acts on the one it can "
    "write (docs/scope.md). Also SAMCTL_ROOT (several separated by ':'). Before or after the "
    "command name.",
)
@click.option(
    "--all-stores",
    is_flag=True,
    help="A command that writes and selects by filters (--older-than) "
    "acts on every store samctl finds, in turn; the stores it cannot act on are skipped.",
)
@click.option("--verbose", "-v", is_flag=True, help="Also say which stores were skipped, and why.")
@click.option(
    "--max-file-size",
    metavar="SIZE",
    default=None,
    callback=size_option,
    help="Refuse to read files larger than SIZE (e.g. 64M). Default: mermaid's own caps "
    "(64 MiB snapshots, 128 MiB logs).",
)
@click.option("--no-cache", is_flag=True, help="Do not read or write samctl's disposable caches.")
@click.version_option(__version__, prog_name="samctl")
@click.pass_context
def cli(ctx, roots, all_stores, verbose, max_file_size, no_cache):
    """samctl: list, read, search, recover, export and maintain the conversation
    archives of SAM and mermaid-cli.

    \b
    Examples:
      samctl ls --since 7d
      samctl show 20260810
      samctl --root ~/proj check
    """
    from samctl.cli.common import Run, make_scope

    named = bool(roots)  # (only roots of the command line are repeated in a suggestion: SAMCTL_ROOT stays set)
    roots = roots or env_roots()
    if os.environ.get("NO_COLOR"):  # no-color.org: click's echo then strips styles, as it does off a terminal
        ctx.color = False
    ctx.obj = Run(scope=make_scope(roots, named, all_stores, max_file_size, not no_cache), verbose=verbose)


def env_roots() -> tuple:
    """The roots SAMCTL_ROOT names: one path, or several separated by ``os.pathsep`` (as PATH; empty
    parts are ignored)."""
    return tuple(p for p in os.environ.get("SAMCTL_ROOT", "").split(os.pathsep) if p)


def main() -> None:
    """The ``samctl`` program.  SIGTERM is handled as Ctrl-C is: what samctl was writing is cleaned
    up (temp files removed, worker processes stopped, a move left for repair as a crash would leave
    it), then samctl dies of the signal, so whoever sent it sees that it worked."""
    import signal

    signal.signal(signal.SIGTERM, _terminated)
    _guard_streams()
    try:
        cli.main(prog_name="samctl")
    except errors.Terminated:
        for stream, text in ((sys.stdout, ""), (sys.stderr, "samctl: terminated\n")):
            try:
                stream.write(text)
                stream.flush()  # (what was printed before the signal is not lost with the process)
            except (OSError, ValueError):
                pass
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGTERM)


def _terminated(signum, frame) -> None:
    import signal

    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # a second SIGTERM ends samctl at once
    raise errors.Terminated()
