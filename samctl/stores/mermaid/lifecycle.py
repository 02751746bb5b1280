"""What removing, purging and re-identifying a mermaid session means (mermaid.md §1, §1.1, §7).

- The files that move together are ``<id>.json``, ``<id>.meta`` and
  ``<id>.jsonl`` (those that exist).  ``.conflict`` siblings are not part of
  the session: mermaid's own delete keeps them, and so does samctl.
- ``purge`` is mermaid's ``delete_conversation``: the snapshot must go (the
  only step whose failure is an error), then the sidecar and log best-effort,
  then the scratch folder best-effort unless a live process holds its lock.
- ``new_id`` is what mermaid would name a session created now
  (``%Y%m%d_%H%M%S_%3f`` local time), bumped by a millisecond until unused.
- ``retarget`` rewrites staged copies so they belong to another id: the
  snapshot's ``id``, the sidecar's ``id`` and the log's ``started.session_id``;
  every other byte of the log is kept.
"""

from __future__ import annotations

import os
import stat
import tempfile
import time
from pathlib import Path

import orjson

from samctl.errors import FileProblem, SamctlError
from samctl.fs import filemodes, reading, removing, safepaths, syncing, writing
from samctl.said import Suggestion, said
from samctl.stores.mermaid import decode, encode

EXTS = ("json", "meta", "jsonl")


def conversation_files(store, cid: str, stats: dict | None = None) -> list[Path]:
    """The session's files that exist; FileProblem if one is not a regular file (a link, a FIFO, ...).

    ``stats``, if given, gets each returned path's lstat result.
    """
    out = []
    snapshot = store.path(cid, "json")  # checks the id once: the names differ only in a fixed extension
    for p in (snapshot.with_suffix(f".{e}") for e in EXTS):
        st = filemodes.lstat(p)
        if st is None:
            continue
        if not stat.S_ISREG(st.st_mode):
            raise FileProblem(
                "not-regular",
                p,
                said(
                    f"{p} is {filemodes.describe_mode(st.st_mode)}; samctl moves only regular files (see `",
                    Suggestion("check"),
                    "`)",
                ),
            )
        out.append(p)
        if stats is not None:
            stats[p] = st
    return out


def new_id(store, taken=None, now: float | None = None, like: str | None = None) -> str:
    """A free id for a session made now: mermaid's creation wall clock, in local time, or, for a
    copy of a session whose sidecar ``updated_at`` (``like``) is in another zone, in that zone's
    offset, so that the listing (which reads the id in that offset) shows when the copy was made."""
    taken = set(store.all_ids()) if taken is None else set(taken)
    t = time.time() if now is None else now
    offset = decode.foreign_offset(like) if isinstance(like, str) else None
    for _ in range(100000):
        ms = int(round(t * 1000))
        wall = time.localtime(ms // 1000) if offset is None else time.gmtime(ms // 1000 + offset)
        cid = time.strftime("%Y%m%d_%H%M%S", wall) + f"_{ms % 1000:03d}"
        if cid not in taken and decode.valid_id(cid):
            return cid
        t += 0.001
    raise SamctlError("could not find a free session id")  # pragma: no cover


def retarget(store, folder: Path, names: list[str], old: str, new: str) -> dict:
    """Rewrite the staged files ``names`` (in ``folder``) of session ``old`` as session ``new``.

    Returns {old name: new name}.  Raises SamctlError when the snapshot cannot
    be read (its id could not be changed, so the copy would not be valid).
    """
    renames = {}
    for name in names:
        ext = name[len(old) + 1 :]
        src = safepaths.child(folder, name)
        dst = safepaths.child(folder, f"{new}.{ext}")
        data = reading.read_capped(src, 1 << 31)
        if ext == "json":
            try:
                doc = orjson.loads(data)
                decode.check_snapshot(doc)
            except (orjson.JSONDecodeError, decode.Rejected) as exc:
                raise SamctlError(
                    f"cannot restore {old} under a new id: its snapshot is not readable ({exc})",
                    hint=said("restore it under its own id, then `", Suggestion("recover"), "` it"),
                ) from None
            doc["id"] = new
            data = encode.snapshot_bytes(doc)
        elif ext == "meta":
            try:
                meta = orjson.loads(data)
                if not isinstance(meta, dict):
                    raise ValueError("not an object")
            except (orjson.JSONDecodeError, ValueError):
                meta = None
            if meta is not None:
                meta["id"] = new
                data = encode.meta_bytes(meta)
        elif ext == "jsonl":
            data = _retarget_log(data, old, new)
        writing.write_atomic(dst, data)
        if dst != src:
            removing.remove(src)
        renames[name] = dst.name
    return renames


def _retarget_log(data: bytes, old: str, new: str) -> bytes:
    end = data.find(b"\n")
    first, rest = (data, b"") if end < 0 else (data[:end], data[end:])
    try:
        env = orjson.loads(first)
        ev = env["event"]
        if ev.get("type") != "started" or ev.get("session_id") != old:
            return data
    except (orjson.JSONDecodeError, TypeError, KeyError, AttributeError):
        return data
    ev["session_id"] = new
    line = encode.log_line_bytes(env)
    return line[:-1] + rest if rest else line[:-1]


def purge(store, cid: str) -> list[str]:
    """Delete ``cid`` for good as mermaid does (mermaid.md §7); the paths removed."""
    removed = []
    snap = store.path(cid, "json")
    st = filemodes.lstat(snap)
    if st is not None and stat.S_ISDIR(st.st_mode):
        raise FileProblem("not-regular", snap, "is a folder, not a snapshot; not removed")
    try:
        if removing.remove(snap):
            removed.append(str(snap))
    except OSError as exc:
        raise SamctlError(f"cannot remove {snap}: {exc.strerror}") from None
    for ext in ("meta", "jsonl"):
        p = store.path(cid, ext)
        try:
            if filemodes.lstat(p) is not None and not stat.S_ISDIR(filemodes.lstat(p).st_mode) and removing.remove(p):
                removed.append(str(p))
        except OSError:
            pass
    syncing.fsync_dir(store.conv_dir)
    scratch = scratch_dir(store, cid)
    if scratch is not None and not store.session_is_live(cid):
        try:
            removing.remove_tree(scratch)
            removed.append(str(scratch))
        except OSError:
            pass
    return removed


def scratch_dir(store, cid: str) -> Path | None:
    """The session's scratch folder if it exists and is safely ours (not through a symlink), else None."""
    lock = store.scratch_lock_path(cid)
    top = Path(tempfile.gettempdir()) / f"mermaid-{os.getuid()}"
    st_top = filemodes.lstat(top)
    if st_top is None or not stat.S_ISDIR(st_top.st_mode) or st_top.st_uid != os.getuid():
        return None
    folder = lock.parent
    p = folder
    while p != top:  # every folder between the top and the scratch dir must be a real folder
        st = filemodes.lstat(p)
        if st is None or not stat.S_ISDIR(st.st_mode):
            return None
        p = p.parent
    return folder
