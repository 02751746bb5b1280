"""What the read-only stores of other apps (Claude Code, Codex CLI) share: finding their root, and listing
a folder without following symlinks.

``detect(p)`` says whether a ``--root`` folder is one of theirs (``samctl.stores.locate`` asks it after
the mermaid rules and before SAM's); the registry (``samctl.stores.STORES``) builds its Store.
"""

from __future__ import annotations

import os
import re
import stat
import time
from pathlib import Path

from samctl.errors import FileProblem, NotFound
from samctl.model import WARNING, ConversationMeta, Finding, recency

_UUID_JSONL = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\.jsonl\Z")


_UUID_TEMPLATE = "00000000-0000-0000-0000-000000000000"
_UUID_PREFIX_RE = re.compile(r"[0-9a-fA-F-]{1,36}\Z")


class UuidPrefixes:
    """Ids that are UUIDs (Claude Code's sessions, Codex's threads), typed as a prefix in any case, with
    dashes only where a UUID has them.  A mixin: list it before Store."""

    def prefix_ok(self, text: str) -> bool:
        if not isinstance(text, str) or not _UUID_PREFIX_RE.match(text):
            return False
        return all((c == "-") == (t == "-") for c, t in zip(text, _UUID_TEMPLATE))

    def normalize_prefix(self, text: str) -> str:
        return text.lower()


class OneFileEach:
    """A store whose conversations are one file each, found by ``index()`` (id -> path): ids, membership
    and the raw file from that index.  ``unit`` names a conversation in messages ("session")."""

    unit = "conversation"

    def all_ids(self) -> list[str]:
        return sorted(self.index())

    def has_id(self, cid: str) -> bool:
        return self.valid_id(cid) and cid in self.index()

    def raw_path(self, cid: str) -> Path:
        if not self.valid_id(cid):
            raise FileProblem("bad-id", cid, f"invalid {self.unit} id")
        p = self.index().get(cid)
        if p is None:
            raise NotFound(f"no {self.unit} {cid} in {self.conv_dir}")
        return Path(p)

    def source_path(self, cid: str) -> str:
        """``raw_path`` of a listed conversation as the index holds it (a str): search's discovery names
        every file of the store, and a ``Path`` made and formatted again for each cost a third of it."""
        p = self.index().get(cid)
        return p if p is not None else str(self.raw_path(cid))


def _is_dir(p: Path) -> bool:
    try:
        return stat.S_ISDIR(os.lstat(p).st_mode)
    except OSError:
        return False


def _has_session_files(p: Path) -> bool:
    try:
        with os.scandir(p) as it:
            return any(_UUID_JSONL.match(e.name) for e in it)
    except OSError:
        return False


def _named_by(var: str, p: Path) -> bool:
    """True if the app's own variable (``CLAUDE_CONFIG_DIR``, ``CODEX_HOME``) names the folder ``p``."""
    v = os.environ.get(var)
    try:
        return bool(v) and os.path.realpath(os.path.expanduser(v)) == os.path.realpath(p)
    except (RuntimeError, ValueError):
        return False


def _has_attic(kind: str, conv: Path) -> bool:
    """True if samctl keeps an attic for the store whose conversations folder is ``conv``: samctl moved
    sessions out of that place, which stays a store however few it still holds (the undo needs it)."""
    from samctl.fs import userdirs  # (lazy: only a folder no other rule claimed asks)
    from samctl.stores.sessionfiles import root_key  # (lazy: as above)

    try:
        return os.path.lexists(userdirs.data_dir() / "attic" / kind / root_key(os.path.realpath(conv)))
    except (OSError, ValueError):
        return False


def _claude_home(p: Path) -> bool:
    """Claude Code's config folder by its place: ``.claude``, the one ``$CLAUDE_CONFIG_DIR`` names, or
    one holding its ``settings.json`` or ``history.jsonl`` (never by the sessions still in it)."""
    return (
        p.name == ".claude"
        or _named_by("CLAUDE_CONFIG_DIR", p)
        or (p / "settings.json").exists()
        or (p / "history.jsonl").exists()
    )


def _claude_projects(p: Path) -> bool:
    """A Claude Code ``projects`` folder: so named in Claude Code's folder, or holding project folders of
    ``<uuid>.jsonl`` files, or one samctl keeps an attic for."""
    if p.name == "projects" and _claude_home(p.parent):
        return True
    if _has_attic("claude-code", p):
        return True
    try:
        with os.scandir(p) as it:
            return any(
                e.name.startswith("-") and e.is_dir(follow_symlinks=False) and _has_session_files(Path(e.path))
                for e in it
            )
    except OSError:
        return False


def _codex_home(p: Path) -> bool:
    return (
        p.name == ".codex"
        or _named_by("CODEX_HOME", p)
        or (p / "session_index.jsonl").exists()
        or (p / "config.toml").exists()
        or (p / "auth.json").exists()
        or (p / "history.jsonl").exists()
        or _has_attic("codex", p)
    )


def detect(p: Path):
    """``(kind, conversations folder, base folder)`` when ``p`` is a Claude Code or Codex CLI folder, else None.

    Claude Code: its config folder (``~/.claude``, ``$CLAUDE_CONFIG_DIR``), its ``projects`` folder, or one
    project folder in it.  Codex: its home (``~/.codex``, ``$CODEX_HOME``), or its ``sessions`` or
    ``archived_sessions`` folder (the home is then the store: both are listed).  Each is known by its place
    (its name, the app's variable, the app's own files beside it, or samctl's attic for it), never only by
    the sessions still in it: a folder whose last session samctl moved stays the store its undo names.
    """
    if _is_dir(p / "projects") and (_claude_home(p) or _claude_projects(p / "projects")):
        return "claude-code", p / "projects", p
    if p.name == "projects" and _claude_projects(p):
        return "claude-code", p, p.parent
    if (
        p.parent.name == "projects"
        and p.name.startswith("-")
        and (_has_session_files(p) or _claude_home(p.parent.parent) or _has_attic("claude-code", p))
    ):
        return "claude-code", p, p.parent.parent
    if (_is_dir(p / "sessions") or _is_dir(p / "archived_sessions")) and _codex_home(p):
        return "codex", p, p
    if p.name in ("sessions", "archived_sessions") and (
        p.parent.name == ".codex"
        or (p.parent / "session_index.jsonl").exists()
        or _named_by("CODEX_HOME", p.parent)
        or _has_attic("codex", p.parent)
    ):
        return "codex", p.parent, p.parent
    return None


def scan(
    folder: str, findings: list | None, what: str = "", root: bool = False
) -> list[tuple[str, str, os.stat_result]]:
    """``(name, path, lstat)`` of every entry of ``folder`` (sorted by name); symlinks are reported (when
    ``findings`` is given) and left out, never followed, and so is ``folder`` itself when it is one (unless
    it is the store's ``root``, which the user named).  A folder that cannot be listed is empty."""
    out = []
    if not root:
        try:
            st = os.lstat(folder)
        except OSError:
            return out
        if not stat.S_ISDIR(st.st_mode):
            if stat.S_ISLNK(st.st_mode) and findings is not None:
                findings.append(Finding("symlink", folder, "is a symlink (samctl does not follow symlinks)", WARNING))
            return out
    try:
        names = sorted(os.listdir(folder))
    except OSError:
        return out
    for n in names:
        p = os.path.join(folder, n)
        try:
            st = os.lstat(p)
        except OSError:
            continue
        if stat.S_ISLNK(st.st_mode):
            if findings is not None:
                findings.append(Finding("symlink", p, f"is a symlink{what} (samctl does not follow symlinks)", WARNING))
            continue
        out.append((n, p, st))
    return out


def cached_metas(store, items, read_meta, findings: list, title_of=None) -> list:
    """The listing of ``items`` (``(id, path, lstat)``, one file per conversation), newest first, through
    samctl's listing cache: a file whose size and mtime match its cache entry is not read again.

    ``read_meta(id)`` -> ``(ConversationMeta or None, findings)`` reads one file; a file it reports an error
    for is never cached (it is read again next time), and one with no message is cached as such and not
    listed.  ``title_of(id)``, if given, names a title that wins over the file's (Codex's
    ``session_index.jsonl``, which changes without the rollout changing, so it is applied after the cache).
    """
    from samctl.stores.metacache import MetaCache  # (lazy: locate imports this module for every command)

    cache = MetaCache(store.name, store.root_real, store.use_cache, store.caps)
    old = cache.load()
    fresh: dict = {}
    now = time.time_ns()
    prefix = str(store.conv_dir) + os.sep
    metas = []
    for cid, path, st in items:
        key = path[len(prefix) :] if path.startswith(prefix) else path
        entry = MetaCache.fresh(old.get(key), st, 3)
        if entry is not None and not (entry[2] is None or _row_ok(entry[2], cid)):
            entry = None
        if entry is None:
            meta, errors = read_meta(cid)
            findings.extend(errors)
            row = (
                None
                if meta is None or not meta.message_count
                else [
                    meta.id,
                    meta.title,
                    meta.created,
                    meta.updated,
                    meta.created_ts,
                    meta.updated_ts,
                    meta.message_count,
                    meta.size,
                    meta.project,
                    meta.branch,
                    meta.continues,
                    meta.copied_messages,
                    meta.model,
                ]
            )
            if not errors and meta is not None and MetaCache.cacheable(st, now):
                fresh[key] = [st.st_size, st.st_mtime_ns, row]
        else:
            fresh[key] = entry
            row = entry[2]
        if row is not None:
            title = (title_of(cid) if title_of else None) or row[1]
            metas.append(
                ConversationMeta(
                    store.name,
                    row[0],
                    title,
                    row[2],
                    row[3],
                    row[4],
                    row[5],
                    row[6],
                    row[7],
                    False,
                    path,
                    project=row[8],
                    branch=row[9],
                    continues=row[10],
                    copied_messages=row[11],
                    model=row[12],
                )
            )
    if fresh != old:
        cache.save(fresh)
    metas.sort(key=recency, reverse=True)
    return metas


_NUM = (int, float, type(None))


def _row_ok(row, cid: str) -> bool:
    """A cached row has the types a read gives it and the id of the file it is keyed by (a corrupt or
    hostile cache is only read again)."""
    return (
        type(row) is list
        and len(row) == 13
        and row[0] == cid
        and type(row[1]) is str
        and type(row[2]) in (str, type(None))
        and type(row[3]) in (str, type(None))
        and type(row[4]) in _NUM
        and type(row[5]) in _NUM
        and type(row[6]) is int
        and type(row[7]) is int
        and all(type(x) in (str, type(None)) for x in row[8:11])
        and type(row[11]) is int
        and type(row[12]) in (str, type(None))
    )
