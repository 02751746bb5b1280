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

import click
import orjson

from samctl import errors


@dataclass
class Options:
    root: str | None = None
    max_file_size: int | None = None
    cache: bool = True
    roots: tuple = ()  # every --root given (or SAMCTL_ROOT's); ``root`` is the one when there is one
    _store: object = None

    def caps(self):
        from samctl.stores.base import Caps

        return Caps.uniform(self.max_file_size) if self.max_file_size else Caps()

    def store(self):
        if self._store is None:
            from samctl.stores import open_store

            if len(self.roots) > 1:
                ctx = click.get_current_context(silent=True)
                name = ctx.command.name if ctx is not None and ctx.command else "this command"
                raise errors.UsageError(f"{name} works on one store at a time, and {len(self.roots)} roots were "
                                        "given; nothing was done", hint="give one --root (SAMCTL_ROOT: one path)")
            self._store = store = open_store(self.root, self.caps(), self.cache)
            note_cache(store)
        return self._store


_CACHE_NOTED: set = set()  # the cache notes said in this run (several stores share one cache folder)


def note_cache(store) -> None:
    """Turn the cache off for ``store`` when samctl's cache folder lies in one of its folders, and say
    once per run why a store runs without the cache."""
    if store.use_cache:
        from samctl import fsafe
        from samctl.core.places import store_folder_holding

        what = store_folder_holding(store, fsafe.cache_dir())
        if what is not None:  # e.g. SAMCTL_CACHE_DIR set to the SAM base folder
            store.cache_note = ("cache-in-store", f"samctl's cache folder is inside {what}")
            store.use_cache = False
    if store.cache_note and store.cache_note not in _CACHE_NOTED:
        from samctl import fsafe
        from samctl.model import WARNING, Finding

        _CACHE_NOTED.add(store.cache_note)
        code, why = store.cache_note
        report_findings([Finding(code, str(fsafe.cache_dir()), f"{why}; this run uses no cache (set "
                                 "SAMCTL_CACHE_DIR to a folder samctl may write, outside every store)", WARNING)])


class Number(click.FloatRange):
    """click.FloatRange that also refuses NaN, which every range check lets through (each comparison
    with NaN is false) and which then matches nothing or waits forever."""

    def convert(self, value, param, ctx):
        rv = super().convert(value, param, ctx)
        if rv != rv:
            self.fail(f"{value} is not a number", param, ctx)
        return rv


_ROOT_ARG = ""  # " --root PATH" (shell-quoted) when the store was named on the command line


def remember_root(roots) -> None:
    """Called once per invocation: the ``--root`` values given on the command line (none: ``()``)."""
    global _ROOT_ARG
    import shlex

    from samctl.safetext import safe_text

    _CACHE_NOTED.clear()
    _COVERED.clear()
    # quoted for a shell, and escaped for the terminal it is printed on (a control character in it
    # makes the suggestion unpasteable, but never reaches the terminal raw)
    if isinstance(roots, str):
        roots = (roots,)
    _ROOT_ARG = "".join(f" --root {safe_text(shlex.quote(r), lines=False)}" for r in roots or ())


_COVERED: list = []  # (real root, " --root PATH") of each store when a command covers several


def _root_arg(path: str) -> str:
    """`` --root PATH`` naming the store that holds ``path``, when a command covers several stores (each
    suggestion must act on its own store, not on the default one); else this run's own ``--root``."""
    if path and _COVERED:
        real = os.path.realpath(path.split("!", 1)[0])  # (a member of an export zip: "export.zip!name")
        for root, arg in _COVERED:
            if real == root or real.startswith(root.rstrip(os.sep) + os.sep):
                return arg
    return _ROOT_ARG


def pasteable(text: str, whole: bool = False, path: str = "") -> str:
    """``text`` with every samctl command it suggests given the same ``--root`` as this run, so a
    pasted suggestion acts on the same store.  Suggestions are the backquoted spans
    (`` `samctl recover ID` ``), or, with ``whole``, all of ``text`` (a line samctl wrote itself:
    "undo with: samctl restore ID"); the rest may quote the user's input, which is left alone.
    (SAMCTL_ROOT and the default store need nothing: the pasted command finds them again.)  ``path``:
    what the text is about (a finding's), naming its store's root when a command covers several."""
    root_arg = _root_arg(path)
    if not root_arg or "samctl " not in text:
        return text
    from samctl.cli import COMMANDS

    command = re.compile(r"\bsamctl (?=(?:%s)\b|--(?!root))" % "|".join(COMMANDS))

    def add(s: str) -> str:
        return command.sub(lambda m: f"samctl{root_arg} ", s)
    return add(text) if whole else re.sub(r"`[^`\n]*`", lambda m: add(m[0]), text)


def store_of(ctx: click.Context):
    """The one store a command works on: the --root given, else ./.mermaid, else SAM's folder."""
    store = ctx.find_object(Options).store()
    if store.read_only or store.moves_only:
        refuse_on_read_only(store, ctx)
    return store


def stores_of(ctx: click.Context, findings: list, every: bool = True, gate: bool = True) -> list:
    """The stores a command covers (issue #23): each --root given (or SAMCTL_ROOT's); with none, every
    store samctl finds on the machine (``stores.found_stores``) when ``every``, else the default one.
    One root (or the default store) is exactly ``store_of``: its errors are raised as before.  Of
    several, one that cannot be opened, or that this command cannot use (a read-only store for a
    writing command: ``refuse_on_read_only``), is a finding and the others still answer; exit 4
    (NotFound) only when no store at all is found.  In the registry's order (./.mermaid, SAM's, the
    other apps'), then the config file's roots; or the roots as given.  ``gate=False``: of several, every
    store that opens, read-only ones too (the command says what it cannot do where: ``recover``)."""
    from samctl.model import WARNING, Finding
    from samctl.stores import found_stores, where_looked

    opts = ctx.find_object(Options)
    if len(opts.roots) == 1 or (not opts.roots and not every):
        return [store_of(ctx)]
    failed: list = []
    found = found_stores(findings, opts.caps(), opts.cache, failed, places=list(opts.roots) or None)
    if not found:
        if len(failed) == 1:  # the one place there is: its own error, as with --root
            findings.pop()
            report_findings(findings)  # (a config file that is not TOML)
            findings.clear()
            raise failed[0]
        if failed:
            report_findings(findings)
            findings.clear()
            raise errors.NotFound(f"no store could be read: {len(failed)} places, none of them a store samctl "
                                  "can read (see above)", hint="`samctl stores` shows what samctl finds")
        raise errors.NotFound(f"no store found: samctl looked in {where_looked()}",
                              hint="point samctl at one with --root PATH or SAMCTL_ROOT, or list stores with "
                                   "no fixed place (mermaid projects, exports) as roots = [...] in that file")
    out = []
    for store in found:
        if gate and (store.read_only or store.moves_only):
            try:
                refuse_on_read_only(store, ctx)
            except errors.UsageError as exc:
                findings.append(Finding("read-only", str(store.conv_dir), exc.message, WARNING))
                continue
        note_cache(store)
        out.append(store)
    if len(out) > 1:
        import shlex

        from samctl.safetext import safe_text

        _COVERED[:] = [(s.root_real, f" --root {safe_text(shlex.quote(str(s.conv_dir)), lines=False)}") for s in out]
    return out


def several_stores(ctx: click.Context, all_stores: bool) -> bool:
    """Whether a command of one store covers several: ``--all-stores``, or more than one --root."""
    return bool(all_stores) or len(ctx.find_object(Options).roots) > 1


def store_for_id(ctx: click.Context, text: str, findings: list):
    """``(store, text)`` for a command given one conversation id or prefix (``show``): with one store,
    that store and the text as typed (resolved later, as before); with several, the one store whose
    conversation it names, and its whole id (``stores.resolve.resolve_across``)."""
    stores = stores_of(ctx, findings)
    if len(stores) == 1:
        return stores[0], text
    from samctl.stores.resolve import resolve_across

    with findings_first(findings):
        return resolve_across(stores, text)


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


# What a read-only store (another app's: Claude Code, Codex CLI, llm, a ChatGPT export) cannot do: the
# commands that write (the attic too: such a store has none), the options that make a command write, and
# the commands whose reading is store-specific today.
_WRITING = ("rm", "restore", "archive", "attic", "recover", "compact")
_WRITING_OPTIONS = {"check": "fix", "search": "touch"}
_UNSUPPORTED = ("log",)
_REWRITING = ("recover",)  # what a store samctl only moves (``moves_only``) refuses: these rewrite its files


def refuse_on_read_only(store, ctx) -> None:
    """The one gate for read-only stores, where every command gets its store, before any id is resolved or
    anything opened: a writing command (or --fix, --touch) and what cannot read the store yet are refused
    with one line and a usage error (exit 2): the request cannot be carried out on this kind of store at
    all, so retrying, unlike a failure (exit 1), would never help.  A store samctl only moves
    (``moves_only``) takes rm, archive, restore, attic and compact, and refuses what would rewrite its files."""
    if ctx is None:
        return
    name = ctx.command.name if ctx.command else ""
    option = _WRITING_OPTIONS.get(name)
    if store.moves_only and not store.read_only:
        if name in _REWRITING or (option and ctx.params.get(option)):
            what = f"{name} --{option}" if option and ctx.params.get(option) else name
            raise errors.UsageError(f"{store.describe()}: samctl only moves its files to and from the attic, and "
                                    f"{what} would rewrite them; nothing was done",
                                    hint="rm, archive (--copy) and restore move them; ls, show, export and check read")
    elif name in _WRITING or (option and ctx.params.get(option)):
        what = f"{name} --{option}" if option and ctx.params.get(option) else name
        raise errors.UsageError(f"{store.describe()}: samctl only reads it, and {what} writes; nothing was done",
                                hint="read it with ls, show, export, stats or check")
    if name in _UNSUPPORTED:
        raise errors.UsageError(f"{name} does not read {store.name} stores yet; nothing was done",
                                hint="use ls, show or export (e.g. `samctl export --to jsonl` piped to grep)")


def format_option(choices=("table", "json", "jsonl"), default="table"):
    stable = [c for c in choices if c.startswith("json")]
    said = " and ".join(stable) + (" are stable interfaces" if len(stable) > 1 else " is a stable interface")
    return click.option("--format", "fmt", type=click.Choice(choices), default=default, show_default=True,
                        help=f"Output format; {said}.")


# What JSON allows raw in a string but a terminal acts on (DEL, C1 controls, line separators, bidi
# overrides; see render/text.py): written as \uXXXX, the same JSON value.  As UTF-8 these byte
# sequences only ever encode those characters, and outside strings JSON is ASCII.
_RAW_CONTROL = re.compile(rb"\x7f|\xc2[\x80-\x9f]|\xe2\x80[\xa8-\xae]|\xe2\x81[\xa6-\xa9]")


def _escape_controls(data: bytes) -> bytes:
    return _RAW_CONTROL.sub(lambda m: b"\\u%04x" % ord(m.group().decode()), data)


def _json(obj, option: int) -> bytes:
    """``obj`` as JSON bytes: orjson, then anything a terminal would act on escaped."""
    try:
        data = orjson.dumps(obj, option=option)
    except TypeError:  # orjson.JSONEncodeError: a str that is not UTF-8 (a file name), an int past 64 bits
        obj = printable(obj)
        try:
            data = orjson.dumps(obj, option=option)
        except TypeError:
            import json

            indent = 2 if option & orjson.OPT_INDENT_2 else None
            data = json.dumps(obj, ensure_ascii=False, indent=indent, default=str,
                              separators=None if indent else (",", ":")).encode("utf-8")
    return _escape_controls(data)


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
    """One compact JSON document per line; written as bytes in batches when stdout has a buffer."""
    out = sys.stdout
    raw = getattr(out, "buffer", None)
    if raw is None:
        for r in rows:
            out.write(dumps(r))
            out.write("\n")
        out.flush()
        return
    out.flush()  # whatever was written as text goes first
    batch: list = []
    for r in rows:
        batch.append(_json(r, orjson.OPT_NON_STR_KEYS))
        if len(batch) == 4096:
            batch.append(b"")
            raw.write(b"\n".join(batch))
            batch.clear()
    if batch:
        batch.append(b"")
        raw.write(b"\n".join(batch))
    raw.flush()


def report_findings(findings, quiet: bool = False) -> None:
    """One line per finding on stderr (info only when not quiet)."""
    for f in findings:
        if quiet and f.severity == "info":
            continue
        click.echo(pasteable(f.line(), path=str(f.path or "")), err=True)


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


def table(rows, headers) -> str:
    """``rows`` under ``headers`` as plain text: every cell ``str()``-ed (None empty) and stripped,
    left-aligned, columns two spaces apart, each as wide as its widest cell or its header plus two,
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
        w = len(col[0]) + 2 if ascii_only else display_width(col[0]) + 2
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
    return _complete(ctx, incomplete, lambda store: store.all_ids() if store.has_event_logs else [],
                     _listed_titles)


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

    return _complete(ctx, incomplete, ids_in_attic, lambda store, ids: {
        e.id: e.title for e in attic.list_entries(store, [], want=lambda stem, cid: cid in ids)})


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
            out += [CompletionItem(i, help=" ".join((titles.get(i) or "").split())[:60] or None) for i in ids
                    if i in titles or not titles]
        return out
    except Exception:  # noqa: BLE001 - completion must never break the user's shell
        return []


# The commands that, without --root, cover every store samctl finds (the others: the default store).
EVERY_STORE = ("ls", "show", "export", "stats", "stores")


def _completion_stores(ctx) -> list:
    """The stores the command being completed would cover (``stores_of``, without printing)."""
    from samctl.cli import env_roots
    from samctl.stores import found_stores, open_store

    roots = ctx.find_root().params.get("roots") or env_roots()
    every = ctx.command is not None and (ctx.command.name in EVERY_STORE or ctx.params.get("all_stores"))
    if len(roots) == 1 or (not roots and not every):
        return [open_store(roots[0] if roots else None, cache=True)]
    return found_stores([], places=list(roots) or None)
