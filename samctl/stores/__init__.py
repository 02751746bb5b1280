"""The store registry, and detection: which store lives at a path, and the Store object for it.

Accepted ``--root`` values (README "Choosing the store"; docs/ARCHITECTURE.md): a SAM base folder, a SAM
``conversations`` folder, a mermaid project folder, a ``.mermaid/conversations`` folder, or a read-only
store's root (``readers.detect``, ``_reader_store``).  Without one: ``./.mermaid/conversations`` if
present, else SAM's default location.
"""

from __future__ import annotations

import errno
import importlib
import os
import re
from pathlib import Path

from samctl.errors import Denied, FileProblem, NotFound
from samctl.fs import reading, safepaths, userdirs
from samctl.model import ERROR, Finding
from samctl.stores.base import Caps, Store

SAM_DEFAULT_BASE = Path("~/Library/Application Support/SAM")
_UUID_NAME = re.compile(r"[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}\Z")
_MERMAID_NAME = re.compile(r"[0-9]{8}_[0-9]{6}_[0-9]{3}\.(json|meta|jsonl)\Z")


def _looks_like_sam_conversations(p: Path) -> bool:
    if (p / "active-conversation.json").exists() or (p / "conversations.json").exists():
        return True
    try:
        with os.scandir(p) as it:
            for e in it:
                if _UUID_NAME.match(e.name) and e.is_dir(follow_symlinks=False):
                    return True
    except PermissionError:
        raise  # a folder samctl may not list: locate says so
    except OSError:
        return False
    return False


def _looks_like_mermaid_conversations(p: Path) -> bool:
    try:
        with os.scandir(p) as it:
            return any(_MERMAID_NAME.match(e.name) for e in it)
    except PermissionError:
        raise
    except OSError:
        return False


def locate(root: str | None) -> tuple[str, Path, Path]:
    """(store name, conversations folder, base folder) for a ``--root`` value.

    Raises NotFound (exit 4) for no store, and for a folder on the way that samctl may not
    read ("permission denied: PATH"): every command then says the same one line.
    """
    try:
        kind, conv, base = _locate(root)
        if not os.access(conv, os.R_OK | (os.X_OK if os.path.isdir(conv) else 0)):  # (a file root: llm's db, a zip)
            raise PermissionError(errno.EACCES, "Permission denied", str(conv))
    except PermissionError as exc:
        raise denied(exc.filename) from None
    # every path printed from here on is built on these: printed by safepaths.shown's one rule
    return kind, Path(safepaths.shown(conv)), Path(safepaths.shown(base))


def denied(path) -> Denied:
    """The error for a store path samctl may not read: names the first folder on ``path`` that
    samctl may not enter, else ``path`` itself (a folder it may enter but not list, or a file)."""
    return Denied(
        safepaths.shown(userdirs.first_closed(path or ".")),
        hint="samctl needs to read the store's folders; check their owner and mode (ls -ld), "
        "or run samctl as the user who owns them",
    )


def _locate(root: str | None) -> tuple[str, Path, Path]:
    if root is None:
        try:
            here = Path.cwd() / ".mermaid" / "conversations"
        except FileNotFoundError:  # the current folder was removed: it holds no project
            here = Path("/nonexistent")
        if here.is_dir():
            return "mermaid", here, here.parent
        try:
            sam = SAM_DEFAULT_BASE.expanduser()
        except RuntimeError:  # no home folder (HOME unset, no password entry): no SAM folder either
            sam = SAM_DEFAULT_BASE
        if sam.is_absolute() and (sam / "conversations").is_dir():
            return "sam", sam / "conversations", sam
        raise NotFound(
            f"no store found: neither ./.mermaid/conversations nor {sam}/conversations exists",
            hint="point samctl at one with --root PATH or SAMCTL_ROOT",
        )
    p = Path(root).expanduser()
    try:
        os.stat(p)
    except OSError as exc:
        if exc.errno in (errno.EACCES, errno.EPERM):
            raise PermissionError(exc.errno, exc.strerror, str(p)) from None
        what = "symlink loop" if exc.errno == errno.ELOOP else "no such folder"
        raise NotFound(f"{root}: {what}", hint="check the path given with --root or SAMCTL_ROOT") from None
    other = _reader_store(p)  # (before SAM's rules: an export folder holds a conversations.json too)
    if other is not None:
        return other
    if not p.is_dir():
        raise NotFound(f"{root}: is not a folder", hint="--root takes a folder")
    if (p / ".mermaid" / "conversations").is_dir():
        return "mermaid", p / ".mermaid" / "conversations", p / ".mermaid"
    if p.name == "conversations" and p.parent.name == ".mermaid":
        return "mermaid", p, p.parent
    if p.name == ".mermaid" and (p / "conversations").is_dir():
        return "mermaid", p / "conversations", p
    from samctl.stores import readers  # (lazy: other apps' stores (read-only): Claude Code, Codex CLI)

    if (found := readers.detect(p)) is not None:
        return found
    if (p / "conversations").is_dir() and _looks_like_sam_base(p):
        return "sam", p / "conversations", p
    if _looks_like_sam_conversations(p):
        return "sam", p, p.parent
    if _looks_like_mermaid_conversations(p):
        return "mermaid", p, p.parent
    if p.name == "conversations" and p.parent.name == "SAM":
        return "sam", p, p.parent
    raise NotFound(
        f"{root}: not a store samctl reads",
        hint="give a SAM base folder (…/Application Support/SAM) or its conversations folder, a mermaid project "
        "folder (or its .mermaid, or .mermaid/conversations), ~/.claude or ~/.codex (or a folder in them), "
        "llm's logs.db, or a ChatGPT export (.zip or folder)",
    )


# Names an llm folder or a ChatGPT export folder holds (a split export's first shard, or its manifest).
_READER_NAMES = (
    "logs.db",
    "conversations.json",
    "export_manifest.json",
    "conversations-000.json",
    "conversations-001.json",
    "conversations-0.json",
    "conversations-1.json",
)


def _reader_store(p: Path):
    """An llm ``logs.db`` (its folder or the file) or a ChatGPT export (folder or ``.zip``): read-only
    stores.  Tried first: an export folder holds a ``conversations.json``, as SAM's legacy
    folder does.  Returns locate's tuple, the file itself as the second item for a file root.  Their
    modules are imported only when a name says it may be one (every command locates its store)."""
    if not (p.name.lower().endswith((".db", ".zip")) or any(os.path.lexists(p / n) for n in _READER_NAMES)):
        return None
    from samctl.stores.chatgpt.store import looks_like_export  # (lazy: import cycle)
    from samctl.stores.llm.store import looks_like_llm  # (lazy: import cycle)

    db = looks_like_llm(p)
    if db is not None:
        return "llm", db if db == p else p, p.parent if db == p else p
    export = looks_like_export(p)
    if export is not None:
        return "chatgpt", p, p.parent if export[0] == "zip" else p
    return None


def _looks_like_sam_base(p: Path) -> bool:
    conv = p / "conversations"
    return (
        p.name == "SAM"
        or (p / "shared_memory.db").exists()
        or (p / "memory.db").exists()
        or _looks_like_sam_conversations(conv)
        or not any(True for _ in _safe_iterdir(conv))
    )


def _safe_iterdir(p: Path):
    try:
        yield from os.scandir(p)
    except PermissionError:
        raise
    except OSError:
        return


# Every store samctl reads: its name -> (module, class).  Adding a store is one line here (and its
# detection in ``locate``).  Modules are imported on first use, so start-up stays light.
STORES = {
    "mermaid": ("samctl.stores.mermaid.store", "MermaidStore"),
    "sam": ("samctl.stores.sam.store", "SamStore"),
    "claude-code": ("samctl.stores.claude_code.store", "ClaudeCodeStore"),
    "codex": ("samctl.stores.codex.store", "CodexStore"),
    "llm": ("samctl.stores.llm.store", "LlmStore"),
    "chatgpt": ("samctl.stores.chatgpt.store", "ChatgptStore"),
}


# Export formats a store package writes for conversations of any store: --to name -> module.
EXPORTERS = {
    "sam-package": "samctl.stores.sam.export",
}


def exporter(fmt: str):
    """The module that writes ``fmt`` (``package_for(store, conv, findings, exported_at)``, ``bulk(...)``)."""
    return importlib.import_module(EXPORTERS[fmt])


def store_class(name: str) -> type[Store]:
    """The Store class registered as ``name`` (KeyError for a name samctl does not know)."""
    module, cls = STORES[name]
    return getattr(importlib.import_module(module), cls)


def open_store(root: str | None, caps: Caps | None = None, cache: bool = True) -> Store:
    kind, conv, base = locate(root)
    return store_class(kind)(conv, base, caps, cache)


def config_path() -> Path:
    """samctl's config file: ``$XDG_CONFIG_HOME/samctl/config.toml``, else ``~/.config/samctl/config.toml``."""
    path = Path(os.environ.get("XDG_CONFIG_HOME") or "~/.config") / "samctl" / "config.toml"
    try:
        return path.expanduser()
    except RuntimeError:  # no home folder to find it in (HOME unset, no password entry): as written
        return path


def config_roots(findings: list) -> list[Path]:
    """The ``roots = [...]`` of samctl's config file (``config_path``): mermaid projects, exports, any
    store with no fixed place.  A file that is not TOML, or whose ``roots`` is not a list of strings,
    is a finding."""
    path = config_path()
    if not path.is_absolute():  # (no home folder to find it in)
        return []
    try:
        data = reading.read_capped(path, 1 << 20)
    except FileProblem as exc:
        if exc.code != "missing":
            findings.append(Finding(exc.code, str(path), exc.message, ERROR))
        return []
    try:
        import tomllib  # (lazy: only samctl stores reads the config)
    except ModuleNotFoundError:  # Python 3.10
        import tomli as tomllib  # (lazy: only samctl stores reads the config)
    try:
        roots = tomllib.loads(data.decode("utf-8")).get("roots", [])
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        findings.append(Finding("bad-config", str(path), f"not TOML: {str(exc)[:160]}", ERROR))
        return []
    if not isinstance(roots, list) or not all(isinstance(r, str) for r in roots):
        findings.append(Finding("bad-config", str(path), "roots must be a list of paths (strings)", ERROR))
        return []
    out = []
    for r in roots:
        try:
            if not r or "\0" in r:
                raise ValueError("an empty path or one holding NUL")
            out.append(Path(r).expanduser())
        except (RuntimeError, ValueError) as exc:  # ~nosuchuser: RuntimeError
            findings.append(
                Finding("bad-config", str(path), f"roots: {r!r} is not a path samctl can use: {exc}"[:300], ERROR)
            )
    return out


def found_stores(
    findings: list, caps: Caps | None = None, cache: bool = True, failed: list | None = None, places: list | None = None
) -> list[Store]:
    """Every store on this machine samctl can find: each registered kind's usual place
    (``Store.default_roots``) that exists, then the config file's roots; each once (by its folder).
    A place that exists but cannot be opened as a store is a finding (its error also goes to
    ``failed``), and the others still count.  ``places`` (the --root values given) replaces the search."""
    if places is None:
        places = [p for name in STORES for p in _default_roots(name) if os.path.lexists(p)]
        places += config_roots(findings)
    out: dict[str, Store] = {}
    tried: set = set()
    for p in places:
        if os.path.abspath(p) in tried:  # (a usual place also listed in the config file: one finding)
            continue
        tried.add(os.path.abspath(p))
        try:
            store = open_store(str(p), caps, cache)
        except NotFound as exc:
            findings.append(Finding("store-unreadable", safepaths.shown(str(p)), exc.message, ERROR))
            if failed is not None:
                failed.append(exc)
            continue
        out.setdefault(store.root_real, store)
    return _outermost(list(out.values()))


def _outermost(stores: list) -> list:
    """``stores`` less each one that lies inside another of its kind (a Claude Code project folder listed
    beside ``~/.claude``): the outer store holds all it holds, so it is one store, listed and searched once,
    and a full id is never ambiguous between the two."""
    return [
        s
        for s in stores
        if not any(
            o is not s
            and o.name == s.name
            and o.root_real != s.root_real
            and safepaths.within(o.root_real, s.root_real)
            for o in stores
        )
    ]


def _default_roots(name: str) -> list:
    """``default_roots`` of a kind, or none when there is no home folder to find them in (HOME unset and
    no password entry: ``expanduser`` raises RuntimeError)."""
    try:
        return store_class(name).default_roots()
    except RuntimeError:
        return []


def where_looked() -> str:
    """The places ``found_stores`` looks, in words (for "no store found")."""
    usual = [str(p) for name in STORES for p in _default_roots(name)]
    return ", ".join(dict.fromkeys(["./.mermaid/conversations", *usual])) + f", and the roots listed in {config_path()}"
