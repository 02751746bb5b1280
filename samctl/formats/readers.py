"""What the read-only stores of other apps (Claude Code, Codex CLI) share: finding their root, and listing
a folder without following symlinks.

``detect(p)`` says whether a ``--root`` folder is one of theirs; ``open_reader`` builds its Store.  Both are
called from ``samctl.formats.locate``/``open_store`` after the SAM and mermaid rules, so those win.
"""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path

from samctl.core.model import WARNING, Finding

_UUID_JSONL = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\.jsonl\Z")


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


def _claude_projects(p: Path) -> bool:
    """A Claude Code ``projects`` folder: so named, or holding project folders of ``<uuid>.jsonl`` files."""
    if p.name == "projects" and (p.parent.name == ".claude" or (p.parent / "settings.json").exists()
                                 or (p.parent / "history.jsonl").exists()):
        return True
    try:
        with os.scandir(p) as it:
            return any(e.name.startswith("-") and e.is_dir(follow_symlinks=False) and _has_session_files(Path(e.path))
                       for e in it)
    except OSError:
        return False


def detect(p: Path):
    """``(kind, conversations folder, base folder)`` when ``p`` is a Claude Code or Codex CLI folder, else None.

    Claude Code: its config folder (``~/.claude``, ``$CLAUDE_CONFIG_DIR``), its ``projects`` folder, or one
    project folder in it.  Codex: its home (``~/.codex``, ``$CODEX_HOME``), or its ``sessions`` or
    ``archived_sessions`` folder (the home is then the store: both are listed).
    """
    if _is_dir(p / "projects") and (p.name == ".claude" or _claude_projects(p / "projects")):
        return "claude-code", p / "projects", p
    if _claude_projects(p) and p.name == "projects":
        return "claude-code", p, p.parent
    if p.parent.name == "projects" and p.name.startswith("-") and _has_session_files(p):
        return "claude-code", p, p.parent.parent
    if (_is_dir(p / "sessions") or _is_dir(p / "archived_sessions")) and (
            p.name == ".codex" or (p / "session_index.jsonl").exists() or (p / "config.toml").exists()
            or (p / "auth.json").exists() or (p / "history.jsonl").exists()):
        return "codex", p, p
    if p.name in ("sessions", "archived_sessions") and (p.parent.name == ".codex"
                                                        or (p.parent / "session_index.jsonl").exists()):
        return "codex", p.parent, p.parent
    return None


def open_reader(kind: str, conv: Path, base: Path, caps, cache: bool):
    if kind == "claude-code":
        from samctl.formats.claude_code.store import ClaudeCodeStore

        return ClaudeCodeStore(conv, base, caps, cache)
    from samctl.formats.codex.store import CodexStore

    return CodexStore(conv, base, caps, cache)


def scan(folder: str, findings: list | None, what: str = "", root: bool = False) -> list[tuple[str, str, os.stat_result]]:
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
                findings.append(Finding("symlink", p, f"is a symlink{what} (samctl does not follow symlinks)",
                                        WARNING))
            continue
        out.append((n, p, st))
    return out
