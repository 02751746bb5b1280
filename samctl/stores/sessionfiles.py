"""Another app's sessions, one file each (Claude Code, Codex CLI), as samctl moves them to and from its attic.

- The attic lives in samctl's own data folder, ``<data>/attic/<store kind>/<key of the root>/`` (``<data>``:
  ``userdirs.data_dir()``; 0700 folders, 0600 files), and samctl's lock in ``<data>/locks/<kind>/<key>/``:
  never in the app's folders, which the app lists and cleans.  The key is the conversations folder's real
  path, made readable, plus a hash of it.
- A session's files are its file, plus what the store's ``companions`` adds (Claude Code: the folder of
  the same name beside it, with the session's sub-agent transcripts and tool results; Codex: a ``.zst``
  twin).  Only regular files and folders with plain UTF-8 names move; anything else is a FileProblem.
- Neither app has a lock: a session is live when one of its files changed in the last
  ``live_seconds()`` (``SAMCTL_LIVE_MINUTES``, default 10) or, on Linux, a process holds one of its files
  open (read from ``/proc/<pid>/fd``; processes samctl may not look at are not seen; macOS: mtime only).
- Nothing here rewrites a file: ``purge`` removes the session's files; a restore puts them back as they
  were (no ``--as-new``: samctl does not re-identify another app's sessions).
"""

from __future__ import annotations

import math
import os
import re
import stat
import sys
import time
from pathlib import Path

from samctl.errors import FileProblem, NotFound, SamctlError, UnsafePath, UsageError
from samctl.fs import filemodes, removing, safepaths, syncing, userdirs
from samctl.said import Suggestion, said

LIVE_MINUTES = 10.0
MAX_LIVE_MINUTES = 10_000_000.0  # (19 years: any larger value counts as this, never as "inf minutes")
FD_BUDGET = 200_000  # /proc/*/fd links read at most per look: past that, what was seen so far counts
MAX_DEPTH = 16  # path components of a member name (the attic's own limit)


def live_seconds() -> float:
    """How recently a session must have been written to count as live (``SAMCTL_LIVE_MINUTES``)."""
    try:
        minutes = float(os.environ.get("SAMCTL_LIVE_MINUTES", LIVE_MINUTES))
    except ValueError:
        minutes = LIVE_MINUTES
    if not (math.isfinite(minutes) and minutes >= 0):
        minutes = LIVE_MINUTES
    return min(minutes, MAX_LIVE_MINUTES) * 60  # (a huge value means "always live", said in finite minutes)


def root_key(real: str) -> str:
    """A folder name for a store root: its path made readable, plus a hash that tells roots apart."""
    import hashlib  # (lazy: ls and --help never load it)

    raw = real.encode("utf-8", "surrogateescape")
    slug = re.sub(r"[^A-Za-z0-9._-]+", "-", raw.decode("ascii", "replace")).strip("-.")[-80:].lstrip("-.")
    return f"{slug or 'root'}-{hashlib.sha256(raw).hexdigest()[:12]}"


def open_paths(paths) -> set:
    """The ``paths`` (real paths) some process holds open, where the platform tells (Linux: the links
    in ``/proc/<pid>/fd``); an empty set elsewhere, or for processes samctl may not look at."""
    wanted = set(paths)
    found: set = set()
    if not wanted or not sys.platform.startswith("linux"):
        return found
    try:
        pids = [n for n in os.listdir("/proc") if n.isdigit()]
    except OSError:
        return found
    budget = FD_BUDGET
    for pid in pids:
        folder = f"/proc/{pid}/fd"
        try:
            fds = os.listdir(folder)
        except OSError:  # gone, or another user's
            continue
        for fd in fds:
            budget -= 1
            if budget < 0:
                return found
            try:
                target = os.readlink(f"{folder}/{fd}")
            except OSError:
                continue
            if target in wanted:
                found.add(target)
    return found


class KeptSessions:
    """A mixin (list it before Store) for the one-file-per-session stores of other apps that samctl
    moves (rm, archive, archive --copy, restore) but never rewrites.  The store gives ``index()``,
    ``raw_path``, ``member_belongs`` and, if a session has more files, ``companions``."""

    read_only = False
    moves_only = True
    _twins: dict = {}  # id -> another file of the same id (``index()`` fills it): such a session never moves

    # where samctl keeps its own files for this store -----------------------------------
    def _samctl_place(self, what: str) -> Path:
        """``<data>/<what>/<kind>/<key>``; UnsafePath if a folder on the way (from samctl's data folder
        down) is a symlink, another user's, or open to others' writes (``userdirs.own_folder_problem``): no
        link leads samctl's attic among the app's files, and no other user's files into samctl's attic."""
        data = userdirs.data_dir()
        place = data / what / self.name / root_key(self.root_real)
        why = userdirs.own_folder_problem(data, place)
        if why is not None:
            raise UnsafePath(
                f"samctl's data folder cannot be used: {why}; nothing was done",
                hint="samctl keeps its attic in a folder of its own (0700, yours, no links): move "
                "the odd one out of the way, or set XDG_DATA_HOME elsewhere",
            )
        return place

    def attic_folder(self) -> Path:
        return self._samctl_place("attic")

    def lock_folder(self) -> Path:
        """samctl's lock folder for this store; UnsafePath when samctl's data folder is inside the app's
        folder (every writing command takes the lock first, so none writes there; reading commands read on)."""
        data = userdirs.data_dir()
        app = os.path.realpath(self.base)
        if any(
            safepaths.is_inside(app, p) or safepaths.is_inside(self.root_real, p) for p in (data, self.attic_folder())
        ):
            raise UnsafePath(
                f"samctl's data folder {data} is inside {self.app_name}'s folder {self.base}: its "
                "attic would be among the app's files; nothing was done",
                hint="set XDG_DATA_HOME to a folder outside it",
            )
        return self._samctl_place("locks")

    def forget_listing(self) -> None:
        self._index = None
        self._stats = {}

    # the files of a session ---------------------------------------------------------------
    def companions(self, path: Path) -> list[Path]:
        """Other files and folders that belong to the session whose file is ``path`` (none here)."""
        return []

    def conversation_files(self, cid: str, refs=None, stats: dict | None = None) -> list[Path]:
        """The session's file first, then its companions (folders before what is in them);
        FileProblem for anything that is not a regular file or folder, or not plainly named."""
        path = self.raw_path(cid)
        twin = self._twins.get(cid)
        if twin is not None:  # moving one would show the other, and restoring it would then be refused
            raise FileProblem(
                "duplicate-id",
                path,
                said(
                    f"{self.unit} {cid} is also in {twin}; samctl moves a {self.unit} "
                    "only while one file holds its id (`",
                    Suggestion("check"),
                    "` lists them)",
                ),
            )
        conv = str(self.conv_dir) + os.sep
        out = []
        for p in [path, *self.companions(path)]:
            st = filemodes.lstat(p)
            if st is None:
                if p == path:
                    raise NotFound(f"no {self.unit} {cid} in {self.conv_dir}")
                continue
            if not (stat.S_ISREG(st.st_mode) or stat.S_ISDIR(st.st_mode)):
                raise FileProblem(
                    "not-regular",
                    p,
                    f"{p} is {filemodes.describe_mode(st.st_mode)}; samctl moves only regular files and folders",
                )
            name = str(p)[len(conv) :] if str(p).startswith(conv) else None
            parts = name.split("/") if name else []
            try:
                name.encode("utf-8")
                if not 0 < len(parts) <= MAX_DEPTH:
                    raise UnsafePath("too deep")
                for part in parts:
                    safepaths.check_component(part)
            except (AttributeError, UnicodeEncodeError, UnsafePath):
                raise FileProblem(
                    "bad-name",
                    p,
                    f"{p}: samctl moves only files named in plain UTF-8 inside "
                    f"{self.conv_dir}, at most {MAX_DEPTH} folders deep",
                ) from None
            if not self.member_belongs(parts, cid):
                raise FileProblem(
                    "bad-name",
                    p,
                    f"{p} is not named by the {self.unit} id {cid} exactly "
                    "(samctl names every file by the id, in lowercase)",
                )
            out.append(p)
            if stats is not None:
                stats[p] = st
        return out

    @staticmethod
    def _tree(folder: Path) -> list[Path]:
        """``folder`` and everything under it, folders before their contents (never through a link).
        Walked without recursion, and only ``MAX_DEPTH`` folders deep: a deeper tree is a FileProblem
        (samctl never moves it: the attic names no member deeper), whatever depth the folder has."""
        out: list[Path] = []
        todo = [(folder, 0)]
        while todo:
            p, depth = todo.pop()
            out.append(p)
            st = filemodes.lstat(p)
            if st is None or not stat.S_ISDIR(st.st_mode):
                continue
            if depth >= MAX_DEPTH:
                raise FileProblem(
                    "too-deep",
                    p,
                    f"{p} holds folders more than {MAX_DEPTH} deep below {folder}; samctl moves only shallower trees",
                )
            try:
                names = sorted(os.listdir(p))
            except OSError as exc:
                raise FileProblem("unreadable", p, f"cannot list {p}: {exc.strerror}") from None
            todo += [(p / n, depth + 1) for n in reversed(names)]
        return out

    # liveness --------------------------------------------------------------------------------
    def live_sessions(self, ids) -> list[str]:
        """The ids among ``ids`` with a file written in the last ``live_seconds()``, or held open by a process."""
        ids = list(ids)
        horizon = time.time() - live_seconds()
        live, files = set(), {}
        for cid in ids:
            stats: dict = {}
            try:
                self.conversation_files(cid, stats=stats)
            except (SamctlError, OSError):
                continue  # (not in the store: nothing of it is being written)
            mine = {p: st for p, st in stats.items() if stat.S_ISREG(st.st_mode)}
            # files only: a folder's mtime also moves when samctl itself removes or places a file in it
            if any(st.st_mtime > horizon for st in mine.values()):
                live.add(cid)
            else:
                files[cid] = {os.path.realpath(p) for p in mine}
        if files:
            held = open_paths(set().union(*files.values()))
            live |= {cid for cid, paths in files.items() if paths & held}
        return [cid for cid in ids if cid in live]

    def held_open(self, paths) -> set:
        """The ``paths`` (real paths) some process holds open, where the platform tells (samctl itself holds
        no session file open when it asks)."""
        return open_paths(paths)

    def live_note(self) -> str:
        return (
            f"{self.app_name} may be writing this {self.unit}: changed in the last {live_seconds() / 60:g} minutes, "
            "or open in a running process"
        )

    def session_is_live(self, cid: str) -> bool:
        return bool(self.live_sessions([cid]))

    def busy_reason(self, ids=()) -> tuple[str, str] | None:
        live = self.live_sessions(ids)
        if not live:
            return None
        minutes = f"{live_seconds() / 60:g}"
        more = f" and {len(live) - 3} more" if len(live) > 3 else ""
        return (
            f"{self.app_name} may be writing {', '.join(live[:3])}{more}: changed in the last {minutes} "
            "minutes, or open in a running process",
            f"wait until it has been idle {minutes} minutes (SAMCTL_LIVE_MINUTES), or pass --force",
        )

    def maintenance_folders(self) -> list[Path]:
        return []  # compact never touches the app's own files

    # lifecycle ------------------------------------------------------------------------------------
    def purge(self, cid: str, refs=None) -> list[str]:
        """Remove the session's files (the file first: the app no longer lists it), then its folders if empty."""
        stats: dict = {}
        paths = self.conversation_files(cid, stats=stats)
        removed = []
        for p in paths:
            if not stat.S_ISDIR(stats[p].st_mode) and removing.remove(p):
                removed.append(str(p))
        for p in sorted((p for p in paths if stat.S_ISDIR(stats[p].st_mode)), key=lambda p: -len(p.parts)):
            if removing.remove_dir_if_empty(p):
                removed.append(str(p))
        syncing.fsync_dir(paths[0].parent)
        return removed

    def identity_files(self, cid: str) -> list[str]:
        """Where the session's file is now, if the store has it (another folder than the entry's counts)."""
        p = self.index().get(cid) if self.valid_id(cid) else None
        conv = str(self.conv_dir) + os.sep
        return [p[len(conv) :]] if p is not None and p.startswith(conv) else []

    def _no_new_ids(self):
        return UsageError(
            f"samctl does not give {self.app_name} {self.unit}s new ids; nothing was restored",
            hint="restore it under its own id (without --as-new)",
        )

    def new_id(self, taken=None, like: str | None = None) -> str:
        raise self._no_new_ids()

    def retarget(self, folder: Path, names: list[str], old: str, new: str) -> dict:
        raise self._no_new_ids()

    def renamed_member(self, name: str, old: str, new: str) -> str:
        raise self._no_new_ids()
