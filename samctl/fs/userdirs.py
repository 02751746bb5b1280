"""The user's folders samctl keeps its own files in: the cache folder and the data folder (the attic of
the stores whose app's folders samctl never writes in), and whether they are samctl's own.

Invariants:
- Nothing here creates a folder; ``cache_unusable`` and ``own_folder_problem`` only look.
- A folder samctl keeps files in is a real folder (no symlink on the way), the user's own, and not
  writable by group or others; samctl never makes a missing home folder.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from samctl.fs import filemodes, safepaths


def cache_dir() -> Path:
    """samctl's disposable cache folder (not created here; ``cache_unusable`` says whether it can be).

    ``SAMCTL_CACHE_DIR`` wins; then ``XDG_CACHE_HOME/samctl``; then the
    platform's user cache folder.
    """
    env = os.environ.get("SAMCTL_CACHE_DIR")
    if env:
        return Path(env)
    xdg = os.environ.get("XDG_CACHE_HOME")
    if xdg:
        return Path(xdg) / "samctl"
    try:
        home = Path.home()
    except RuntimeError:  # no HOME and no password entry: no cache folder (cache_unusable says so)
        return Path("/nonexistent") / ".cache" / "samctl"
    if _is_dir(home / "Library" / "Caches"):
        return home / "Library" / "Caches" / "samctl"
    return home / ".cache" / "samctl"


def data_dir() -> Path:
    """samctl's own data folder (not created here): ``XDG_DATA_HOME/samctl``, else
    ``~/.local/share/samctl`` (on macOS too: one rule, and a folder neither app looks in).  It holds the
    attic of the stores whose app's folders samctl never writes in (Claude Code, Codex CLI)."""
    xdg = os.environ.get("XDG_DATA_HOME")
    if xdg and os.path.isabs(xdg):  # (the XDG rule: a relative value is ignored)
        return Path(xdg) / "samctl"
    try:
        home = Path.home()
    except RuntimeError:  # no HOME and no password entry: a place that cannot be made (the command says so)
        return Path("/nonexistent") / ".local" / "share" / "samctl"
    return home / ".local" / "share" / "samctl"


def _is_dir(path) -> bool:
    try:
        return stat.S_ISDIR(os.stat(path).st_mode)
    except OSError:  # an unreadable or missing home is not a crash: the cache is just not there
        return False


def first_closed(path) -> Path:
    """The first folder on ``path`` (from /) that this user may not enter, else ``path`` itself:
    where a PermissionError about ``path`` comes from."""
    p = Path(os.path.abspath(path))
    for q in [*reversed(p.parents), p]:
        if not os.access(q, os.X_OK):
            return q
    return p


def cache_unusable(path) -> str | None:
    """Why samctl cannot keep its cache in the folder ``path``, or None if it can: the folder is
    one samctl may list and write, or can be made (``make_private_dir``) below a folder it may
    write, which is not above the home folder (samctl never makes a missing home).  Creates nothing."""
    p = q = Path(os.path.abspath(path))
    while True:
        try:
            st = os.stat(q)
            break
        except (FileNotFoundError, NotADirectoryError):
            if q == q.parent:
                return f"{p} cannot be made"
            q = q.parent
        except PermissionError:
            return f"permission denied: {first_closed(q)}"
        except OSError as exc:
            return f"{q}: {(exc.strerror or str(exc)).lower()}"
    home = os.environ.get("HOME")
    if home and q != p and safepaths.is_inside(os.path.realpath(home), p) and not _is_dir(home):
        return f"the home folder {home} does not exist"
    if not stat.S_ISDIR(st.st_mode):
        return f"{q} is not a folder"
    if not os.access(q, os.R_OK | os.W_OK | os.X_OK):
        return f"permission denied: {q}"
    return None


def own_folder_problem(top: str | os.PathLike, path: str | os.PathLike | None = None) -> str | None:
    """Why the folders from ``top`` (samctl's cache or data folder) down to ``path`` (default: ``top``)
    are not samctl's own, or None: each one that exists must be a real folder (not a symlink), owned by
    this user, and not writable by group or others; another user could otherwise put links or files
    there that samctl would read, write through, or delete.  What does not exist yet is fine (samctl
    makes it 0700).  Reads nothing else."""
    top = Path(os.path.abspath(top))
    path = Path(os.path.abspath(path)) if path is not None else top
    if path != top and top not in path.parents:
        return f"{path} is not inside {top}"
    chain = [top, *(top / part for part in _parts_between(top, path))]
    uid = os.geteuid()
    for p in chain:
        try:
            st = os.lstat(p)
        except FileNotFoundError:
            return None
        except OSError as exc:
            return f"{p}: {(exc.strerror or str(exc)).lower()}"
        if stat.S_ISLNK(st.st_mode):
            return f"{p} is a symlink (samctl's own folders are never reached through one)"
        if not stat.S_ISDIR(st.st_mode):
            return f"{p} is {filemodes.describe_mode(st.st_mode)}, not a folder"
        if st.st_uid != uid:
            return f"{p} belongs to another user (uid {st.st_uid})"
        if st.st_mode & 0o022:
            return f"{p} is writable by {'others' if st.st_mode & 0o002 else 'its group'} (mode {stat.S_IMODE(st.st_mode):o})"
    return None


def _parts_between(top: Path, path: Path) -> list:
    out = []
    p = path
    while p != top:
        out.append(p.name)
        p = p.parent
    return list(reversed(out))
