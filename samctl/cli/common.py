"""What every command shares: opening the store, output formats, findings, exit codes.

Commands call one core function each and hand the result to a renderer here;
data goes to stdout, findings and progress to stderr.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import os
import re
import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING

import click
import orjson

from samctl import errors

if TYPE_CHECKING:  # (not imported at start-up: the group makes the Scope)
    from samctl.core.scope import Scope


@dataclass
class Run:
    """Per-run state, on the click context (``ctx.obj``): the ``Scope`` of this run (core/scope.py) and
    the group's options.  Nothing of a run lives in a module global."""

    scope: Scope
    verbose: bool = False


def run_of(ctx: click.Context) -> Run:
    """This run's state; every command runs under the group, which puts it on the context."""
    run = ctx.find_object(Run)
    if run is None:
        raise RuntimeError("no samctl run on this click context")
    return run


def scope_of(ctx: click.Context, need: int = 0, filters: bool = False, limit=None, what: str | None = None):
    """This run's ``Scope``, declared for the command being run: ``need`` (scope.READ, MOVE or REWRITE),
    whether it selects by ``filters``, ``limit(store)`` (a reason it cannot read that store), ``what`` names
    it in messages (default: the command's name)."""
    scope = run_of(ctx).scope
    return scope.declare(what or (ctx.command.name if ctx.command else None) or "this command", need, filters, limit)


def make_scope(roots, named: bool, all_stores: bool, max_file_size, cache: bool):
    """The ``Scope`` of one run (the group callback makes it once)."""
    from samctl.core.scope import Scope
    from samctl.stores.base import Caps

    return Scope(
        roots=tuple(roots),
        named=named,
        all_stores=all_stores,
        cache=cache,
        caps=Caps.uniform(max_file_size) if max_file_size else Caps(),
        note=lambda f: report_findings([f]),
    )


def current_scope():
    """The ``Scope`` of the run under way, or None (outside a command)."""
    ctx = click.get_current_context(silent=True)
    run = ctx.find_object(Run) if ctx is not None else None
    return run.scope if run is not None else None


def suggest(ctx, command: str, cid: str | None = None, store=None, rest: str = "") -> str:
    """A command to paste (``samctl restore ID``), with ``store``'s --root only when it is needed."""
    from samctl.said import Suggestion

    return run_of(ctx).scope.render(Suggestion(command, cid, store, rest))


def shown(text, path: str = "") -> str:
    """A message for a person (samctl.said): each command it suggests rendered by this run's scope, with the
    --root of its store (else of the store ``path`` is in) only when the pasted command needs it."""
    from samctl.said import render

    scope = current_scope()
    return render(text, (lambda s: scope.render(s, path)) if scope is not None else None)


def say_skipped(ctx, skipped, fmt: str = "text") -> list:
    """The stores left out (they cannot do the action): one line each on stderr under -v (never a
    finding); as JSON rows ``{"store", "root", "reason"}`` for the caller's document."""
    rows = [{"store": s.name, "root": str(s.conv_dir), "reason": why} for s, why in skipped]
    ctx_verbose = run_of(ctx).verbose or ctx.params.get("verbose")
    if ctx_verbose and fmt != "json":
        for s, why in skipped:
            click.echo(f"skipped: {s.describe()}: {why}", err=True)
    return rows


def say_failed(outcomes) -> None:
    """One error line (and hint) for each store of several that failed; the others answered."""
    from samctl.cli import report_error

    for o in outcomes:
        if o.status == "failed":
            report_error(errors.SamctlError(f"{o.store.describe()}: {o.reason}", hint=o.hint))


def exit_with(code: int) -> None:
    if code:
        raise click.exceptions.Exit(code)


class Number(click.FloatRange):
    """click.FloatRange that also refuses NaN, which every range check lets through (each comparison
    with NaN is false) and which then matches nothing or waits forever."""

    def convert(self, value, param, ctx):
        rv = super().convert(value, param, ctx)
        if rv != rv:
            self.fail(f"{value} is not a number", param, ctx)
        return rv


@contextlib.contextmanager
def findings_first(findings: list):
    """On an error (no such id, an ambiguous one), print ``findings`` first: a store that could not be
    read may be why nothing matched."""
    try:
        yield
    except errors.SamctlError:
        report_findings(findings)
        findings.clear()
        raise


def format_option(choices=("table", "json", "jsonl"), default="table"):
    stable = [c for c in choices if c.startswith("json")]
    said = " and ".join(stable) + (" are stable interfaces" if len(stable) > 1 else " is a stable interface")
    return click.option(
        "--format",
        "fmt",
        type=click.Choice(choices),
        default=default,
        show_default=True,
        help=f"Output format; {said}.",
    )


# What JSON allows raw in a string but a terminal acts on (DEL, C1 controls, line separators, bidi
# overrides; see render/text.py): written as \uXXXX, the same JSON value.  As UTF-8 these byte
# sequences only ever encode those characters, and outside strings JSON is ASCII.
_RAW_CONTROL = re.compile(rb"\x7f|\xc2[\x80-\x9f]|\xe2\x80[\xa8-\xae]|\xe2\x81[\xa6-\xa9]")


def _escape_controls(data: bytes) -> bytes:
    if b"\x7f" not in data and b"\xc2" not in data and b"\xe2" not in data:
        return data  # (none of those bytes: nothing to escape, and no pattern to run)
    return _RAW_CONTROL.sub(lambda m: b"\\u%04x" % ord(m.group().decode()), data)


def _json(obj, option: int) -> bytes:
    """``obj`` as JSON bytes: orjson, then anything a terminal would act on escaped."""
    return _escape_controls(_json_unescaped(obj, option))


def _json_unescaped(obj, option: int) -> bytes:
    """``_json`` before the escapes (JSON lines escape a whole batch at once: a newline is none of them)."""
    try:
        data = orjson.dumps(obj, option=option)
    except TypeError:  # orjson.JSONEncodeError: a str that is not UTF-8 (a file name), an int past 64 bits
        obj = printable(obj)
        try:
            data = orjson.dumps(obj, option=option)
        except TypeError:
            import json

            indent = 2 if option & orjson.OPT_INDENT_2 else None
            data = json.dumps(
                obj, ensure_ascii=False, indent=indent, default=str, separators=None if indent else (",", ":")
            ).encode("utf-8")
    return data


def printable(obj):
    """``obj`` with every str made valid UTF-8 (iteratively: any depth).

    File names that are not UTF-8 reach Python as surrogate escapes: they are
    shown as ``\\xff`` escapes, and lone surrogates as ``\\ud800``.
    """

    def fix(s):
        if not isinstance(s, str):
            return s
        try:
            s.encode("utf-8")
            return s
        except UnicodeEncodeError:
            try:
                return s.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
            except UnicodeEncodeError:
                return s.encode("utf-8", "backslashreplace").decode("utf-8")

    if not isinstance(obj, (dict, list, tuple)):
        return fix(obj)
    root = {} if isinstance(obj, dict) else []
    stack = [(obj, root)]
    while stack:
        src, dst = stack.pop()
        for k, v in src.items() if isinstance(src, dict) else enumerate(src):
            if isinstance(v, (dict, list, tuple)):
                new = {} if isinstance(v, dict) else []
                stack.append((v, new))
                v = new
            else:
                v = fix(v)
            if isinstance(dst, dict):
                dst[fix(k)] = v
            else:
                dst.append(v)
    return root


def dumps(obj) -> str:
    return _json(obj, orjson.OPT_NON_STR_KEYS).decode()


def emit_json(obj) -> None:
    click.echo(_json(obj, orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS).decode())


def emit_jsonl(rows) -> None:
    """One compact JSON document per line (a row is a value to write, or JSON text already written: orjson
    parsed it, so it is valid UTF-8); written as bytes in batches when stdout has a buffer.  Each row is
    copied into one growing buffer as soon as it is dumped: holding thousands of dumped rows until a join
    costs more than dumping them, since each is a fresh allocation of its own (bench/README.md)."""
    out = sys.stdout
    raw = getattr(out, "buffer", None)
    if raw is None:
        for r in rows:
            out.write(_escape_controls(r.encode()).decode() if type(r) is str else dumps(r))
            out.write("\n")
        out.flush()
        return
    out.flush()  # whatever was written as text goes first
    batch, dumps_row, option = bytearray(), orjson.dumps, orjson.OPT_NON_STR_KEYS
    for r in rows:
        if type(r) is str:  # (a row already written as JSON text: ConversationMeta.json_row)
            batch += r.encode()
        else:
            try:
                batch += dumps_row(r, option=option)
            except TypeError:  # (what _json_unescaped falls back for: this row again, through it)
                batch += _json_unescaped(r, option)
        batch += b"\n"
        if len(batch) >= _BATCH_BYTES:
            raw.write(_escape_controls(bytes(batch)))
            batch.clear()
    if batch:
        raw.write(_escape_controls(bytes(batch)))
    raw.flush()


_BATCH_BYTES = 1 << 20


def report_findings(findings, quiet: bool = False, kinds: bool | None = None) -> None:
    """One line per finding on stderr (info only when not quiet).  The info findings about kinds of records
    samctl does not know (``UNKNOWN_KIND``) only with ``kinds``: by default, under -v."""
    from samctl.model import UNKNOWN_KIND

    if kinds is None:
        ctx = click.get_current_context(silent=True)
        run = run_of(ctx) if ctx is not None else None
        kinds = bool(ctx is not None and ((run is not None and run.verbose) or ctx.params.get("verbose")))
    for f in findings:
        if (quiet or not kinds and f.code in UNKNOWN_KIND) and f.severity == "info":
            continue
        click.echo(f.line(shown(f.reason, path=str(f.path or ""))), err=True)


def exit_for(findings) -> int:
    return errors.PARTIAL if any(f.severity != "info" for f in findings) else errors.OK


def finish(findings) -> None:
    """Exit with PARTIAL if any problem was met, else return normally."""
    code = exit_for(findings)
    if code:
        raise click.exceptions.Exit(code)


def human_size(n) -> str:
    if n is None:
        return "-"
    for unit in ("B", "K", "M", "G", "T"):
        if n < 1024 or unit == "T":
            return f"{n:.0f}{unit}" if unit == "B" else f"{n:.1f}{unit}"
        n /= 1024
    return str(n)


def table(rows, headers, header_pad: int = 2) -> str:
    """``rows`` under ``headers`` as plain text: every cell ``str()``-ed (None empty) and stripped,
    left-aligned, columns two spaces apart, each as wide as its widest cell or its header plus ``header_pad``,
    no line ending in spaces.  A cell must hold no line break (callers pass file text through
    ``render.one_line``).  (The layout of tabulate's "plain" format, which this replaced: it inferred
    a type for every cell, seconds for a 100,000-row ``ls``.)"""
    columns = [[h.strip()] for h in headers]
    for row in rows:
        if len(row) != len(columns):
            raise ValueError(f"a table row has {len(row)} cells for {len(columns)} headers")
        for col, c in zip(columns, row):
            col.append("" if c is None else str(c).strip())
    widths = []
    for col in columns:
        text = "".join(col)
        if "\n" in text or "\r" in text:
            raise ValueError("a table cell holds a line break")
        ascii_only = text.isascii()
        w = (len(col[0]) if ascii_only else display_width(col[0])) + header_pad
        w = max(w, max(map(len if ascii_only else display_width, col[1:]), default=0))
        widths.append((w, ascii_only))
    lines = []
    for i in range(len(columns[0])):
        parts = []
        for col, (w, ascii_only) in zip(columns, widths):
            c = col[i]
            parts.append(c.ljust(w) if ascii_only else c + " " * (w - display_width(c)))
        lines.append("  ".join(parts).rstrip())
    return "\n".join(lines)


def display_width(text: str) -> int:
    """The columns ``text`` takes on a terminal: East Asian wide and full-width characters two,
    combining marks and format characters (zero-width space, joiners) none, the rest one."""
    if text.isascii():
        return len(text)
    others = _NON_ASCII.findall(text)
    return len(text) - len(others) + sum(map(_char_width, others))


_NON_ASCII = re.compile(r"[^\x00-\x7f]")


@functools.lru_cache(maxsize=4096)
def _char_width(ch: str) -> int:
    import unicodedata

    if unicodedata.combining(ch) or unicodedata.category(ch) in ("Mn", "Me", "Cf"):
        return 0
    return 2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1


def examples(*lines):
    """Append an Examples block to a command's help."""

    def deco(f):
        text = "\n\n\b\nExamples:\n" + "\n".join(f"  {ln}" for ln in lines)
        # cleandoc first: the appended block is flush left, so click's own dedent would otherwise keep the
        # docstring's indentation and mangle every paragraph after the first
        f.__doc__ = inspect.cleandoc(f.__doc__ or "") + text
        return f

    return deco


def complete_ids(ctx, param, incomplete):
    """shell_complete callback for conversation ID arguments: ids of the store that start with what was typed.

    Reads --root/SAMCTL_ROOT from the command line being completed.  Never raises and
    never prints: a completion that fails offers nothing.
    """
    return _complete(ctx, incomplete, lambda store: store.all_ids(), _listed_titles)


def complete_logged_ids(ctx, param, incomplete):
    """``complete_ids`` for a command that reads event logs (``log``): nothing for a store without them."""
    return _complete(ctx, incomplete, lambda store: store.all_ids() if store.has_event_logs else [], _listed_titles)


def complete_event_types(ctx, param, incomplete):
    """shell_complete callback for ``log --type``: the event types of the store's logs."""
    try:
        from click.shell_completion import CompletionItem

        store = _completion_stores(ctx)[0]
        return [CompletionItem(t) for t in store.event_types if t.startswith(incomplete or "")]
    except Exception:  # noqa: BLE001 - a completion offers nothing rather than fail
        return []


def _listed_titles(store, ids) -> dict:
    return {m.id: m.title for m in store.list_metas([])}


def complete_attic_ids(ctx, param, incomplete):
    """shell_complete callback for ``restore``: ids of the conversations in the attic (read from its
    file names; titles from the manifests of at most 50).  Never raises and never prints."""
    from samctl.attic import entries as attic

    def ids_in_attic(store) -> list:
        out = set()
        try:  # (of several stores, one without an attic offers nothing; the others still do)
            names = [] if store.read_only else os.listdir(attic.attic_dir(store))
        except OSError:
            names = []
        for name in names:
            parsed = name.endswith(attic.MANIFEST_SUFFIX) and attic.parse_stem(name[: -len(attic.MANIFEST_SUFFIX)])
            if parsed and parsed[1] != "history":
                out.add(parsed[0])
        return sorted(out)

    return _complete(
        ctx,
        incomplete,
        ids_in_attic,
        lambda store, ids: {e.id: e.title for e in attic.list_entries(store, [], want=lambda stem, cid: cid in ids)},
    )


def _complete(ctx, incomplete, ids_of, titles_of) -> list:
    """The ids ``ids_of(store)`` that start with what was typed, with ``titles_of(store, ids)`` as
    their descriptions when there are at most 50 (an id without a title is then left out: a
    scope with no conversation).  Any failure offers nothing: completion must never break a shell."""
    try:
        from click.shell_completion import CompletionItem

        text = incomplete or ""
        found = []
        for store in _completion_stores(ctx):
            want = store.normalize_prefix(text)
            found.append((store, [i for i in ids_of(store) if i.startswith(want) or i.startswith(text)]))
        few = sum(len(ids) for _, ids in found) <= 50
        out = []
        for store, ids in found:
            titles = titles_of(store, set(ids)) if ids and few else {}
            out += [
                CompletionItem(i, help=" ".join((titles.get(i) or "").split())[:60] or None)
                for i in ids
                if i in titles or not titles
            ]
        return out
    except Exception:  # noqa: BLE001 - completion must never break the user's shell
        return []


def _completion_stores(ctx) -> list:
    """The stores whose ids the command being completed would look in: every store found (or each
    --root given), as ``Scope.found`` has them, without printing."""
    from samctl.cli import env_roots
    from samctl.core.scope import Scope

    return Scope(roots=tuple(ctx.find_root().params.get("roots") or ()) or env_roots()).found()


# -- tables that fit the terminal --------------------------------------------------------------------------


def terminal_width() -> int | None:
    """The terminal's width when stdout is one (COLUMNS honoured); None when piped: scripts get every value
    whole."""
    try:
        if not sys.stdout.isatty():
            return None
    except (AttributeError, ValueError):
        return None
    import shutil

    return max(20, shutil.get_terminal_size((80, 24)).columns)


def short_ids(ids, least: int = 8) -> dict:
    """{id: its shortest prefix of at least ``least`` characters that no other id of ``ids`` shares}, as git
    abbreviates."""
    order = sorted(set(ids))
    out = {}
    for i, cid in enumerate(order):
        need = least
        for other in (order[i - 1] if i else None, order[i + 1] if i + 1 < len(order) else None):
            if other is not None:
                n = 0
                while n < min(len(cid), len(other)) and cid[n] == other[n]:
                    n += 1
                need = max(need, n + 1)
        out[cid] = cid[:need]
    return out


def relative_date(ts, now: float | None = None) -> str:
    """``ts`` as "3h ago", "2d ago" (months and years past 60 days); "-" for none."""
    import time

    if ts is None:
        return "-"
    s = (now if now is not None else time.time()) - ts
    if s < 0:
        return "in the future"
    for unit, n in (("y", 365 * 86400), ("mo", 30 * 86400), ("d", 86400), ("h", 3600), ("m", 60)):
        if s >= n and (unit not in ("y", "mo") or s >= 60 * 86400):
            return f"{int(s // n)}{unit} ago"
    return "just now"


def clip(text: str, n: int) -> str:
    """``text`` cut to ``n`` terminal columns, ending with "…" when cut."""
    if display_width(text) <= n:
        return text
    out, used = [], 0
    for ch in text:
        w = display_width(ch)
        if used + w > n - 1:
            break
        out.append(ch)
        used += w
    return "".join(out) + "…"


def fit_table(rows, headers, width: int | None, optional=(), header: bool = True) -> str:
    """``table`` on a terminal of ``width`` columns: the columns named in ``optional`` left out when empty in
    every row, the last column (the title) given what is left and cut with "…", and no line wider than the
    terminal.  ``width`` None (piped): ``table`` as it is."""
    rows = [tuple(r) for r in rows]
    if width is not None:
        keep = [i for i, h in enumerate(headers) if h not in optional or any(r[i] not in (None, "") for r in rows)]
        headers = [headers[i] for i in keep]
        rows = [tuple(r[i] for i in keep) for r in rows]
        fixed = sum(
            max([display_width(h)] + [display_width("" if r[i] is None else str(r[i]).strip()) for r in rows])
            for i, h in enumerate(headers[:-1])
        )
        room = max(8, width - fixed - 2 * (len(headers) - 1))
        rows = [r[:-1] + (clip("" if r[-1] is None else str(r[-1]).strip(), room),) for r in rows]
    text = table(rows, headers, header_pad=0 if width is not None else 2)  # (piped: the layout scripts know)
    if not header:
        text = text.split("\n", 1)[1] if "\n" in text else ""
    if width is not None:
        text = "\n".join(clip(line, width) for line in text.split("\n"))
    return text


def date_option(f):
    return click.option(
        "--date",
        "date_style",
        type=click.Choice(("relative", "iso")),
        default="relative",
        show_default=True,
        help='On a terminal, dates as "3h ago" or as 2026-08-10 14:03 (piped: always the full date).',
    )(f)
