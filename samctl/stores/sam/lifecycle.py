"""What removing, purging and re-identifying a SAM conversation means (sam.md §2, §5.6, §7.1, §7.6).

- A conversation is its folder ``CONV/<UUID>/``: ``conversation.json``,
  ``memory.db``, ``context_archive.db``, ``ltm.json``, ``kv_store.json``,
  leftovers.  SAM's delete removes ``conversation.json`` and then the whole
  folder; it never removes a shared-topic scope (another folder).
- A folder that is a shared-topic memory scope still referenced by another
  conversation (``settings.useSharedData`` with that ``sharedTopicId``) is
  never removed: a scope without ``conversation.json`` is refused outright;
  if a conversation's own folder is also another's scope, its ``memory.db``
  (and the folder) stay.
- Pinned conversations are protected by the caller (``--include-pinned``).
- ``new_id`` is a fresh uppercase UUID; ``retarget`` renames a staged folder
  and rewrites ``id``/``sessionId`` in ``conversation.json`` (SAM's strict
  writer) and ``conversation_id`` in ``memory.db``/``context_archive.db``.
"""

from __future__ import annotations

import os
import stat
import uuid
from pathlib import Path

import orjson

from samctl.errors import FileProblem, NotFound, SamctlError
from samctl.fs import faults, filemodes, reading, removing, safepaths, syncing, writing
from samctl.said import Suggestion, said
from samctl.stores.sam import decode, sqlitefile

SCOPE_FILES = ("memory.db", "memory.db-journal", "memory.db-wal", "memory.db-shm")
PRIMARY = "conversation.json"


def shared_topic(data: bytes) -> str | None:
    """See ``SamStore.shared_topic``."""
    try:
        doc = orjson.loads(data)
    except orjson.JSONDecodeError:
        return None
    return decode.shared_topic_id(doc) if isinstance(doc, dict) else None


def conversation_files(store, cid: str, refs: dict | None = None, stats: dict | None = None) -> list[Path]:
    """The folder (first, when it goes too) and every file and sub-folder of ``cid``.

    Raises NotFound, or SamctlError when the folder must not move (a scope
    still in use, a conversation that lives only in the legacy file, a symlink
    or special file inside).  ``stats``, if given, gets each returned path's
    lstat result.
    """
    stats = {} if stats is None else stats
    cid = cid.upper()
    folder = store.folder(cid)
    st = filemodes.lstat(folder)
    if st is None:
        if cid in store.legacy_docs([]):
            raise SamctlError(
                f"{cid} lives only in the legacy conversations.json; samctl does not rewrite that file",
                hint="open SAM once so it migrates the legacy file, then try again",
            )
        raise NotFound(f"no conversation {cid} in {store.conv_dir}")
    if stat.S_ISLNK(st.st_mode) or not stat.S_ISDIR(st.st_mode):
        raise FileProblem(
            "not-regular",
            folder,
            f"{folder} is {filemodes.describe_mode(st.st_mode)}, not a folder; samctl does not move it",
        )
    if refs is None:
        unreadable: list = []
        refs = store.topic_refs(unreadable)
    else:
        unreadable = list(getattr(refs, "unreadable", ()))
    users = refs.get(cid, set()) - {cid}
    has_primary = filemodes.lstat(folder / PRIMARY) is not None
    if users and not has_primary:
        some = ", ".join(sorted(users)[:3])
        raise SamctlError(
            f"{cid} is the shared-topic memory scope of {some}; it is never removed while in use",
            hint=said(
                "purge the conversations that use it first (`",
                Suggestion("rm --purge", "ID"),
                "`): one in the attic can be restored, and needs its memories back",
            ),
        )
    unknown = [u for u in unreadable if u != cid]
    if unknown and not has_primary:
        # a conversation that cannot be read may keep its memories here: nothing may call this scope unused
        raise SamctlError(
            f"{cid} may be the shared-topic memory scope of a conversation that cannot be read "
            f"({unreadable_names(unknown)}); it is not removed while that is so",
            hint=said(
                "`",
                Suggestion("check"),
                "` says what is wrong with them (`",
                Suggestion("recover", "ID"),
                "` may help); --ignore-unreadable removes the scope anyway",
            ),
        )
    out: list[Path] = [folder] if not users else []
    if not users:
        stats[folder] = st
    for dirpath, dirnames, filenames in os.walk(folder, followlinks=False):
        dirnames.sort()
        for name in sorted(dirnames) + sorted(filenames):
            p = Path(dirpath) / name
            pst = filemodes.lstat(p)
            if pst is None:
                continue
            if stat.S_ISDIR(pst.st_mode):
                out.append(p)
                stats[p] = pst
            elif stat.S_ISREG(pst.st_mode):
                if users and Path(dirpath) == folder and name in SCOPE_FILES:
                    continue  # another conversation's memories: they stay
                out.append(p)
                stats[p] = pst
            else:
                raise FileProblem(
                    "not-regular",
                    p,
                    said(
                        f"{p} is {filemodes.describe_mode(pst.st_mode)}; samctl moves only files and folders (see `",
                        Suggestion("check"),
                        "`)",
                    ),
                )
    return out


def unreadable_names(ids: list) -> str:
    """The conversations whose scope cannot be known, for a message: the first three, then a count."""
    more = f" and {len(ids) - 3} more" if len(ids) > 3 else ""
    return ", ".join(sorted(ids)[:3]) + more


def new_id(store, taken=None) -> str:
    taken = set(store.all_ids()) if taken is None else set(taken)
    while True:
        cid = str(uuid.uuid4()).upper()
        if cid not in taken:
            return cid


def retarget(store, folder: Path, names: list[str], old: str, new: str) -> dict:
    """Rewrite a staged copy of ``old`` (member names relative to ``folder``) as conversation ``new``.

    Returns {old name: new name}.
    """
    from samctl.stores.sam import encode  # (lazy: not loaded by ls or --help)

    old_dir = names[0].split("/", 1)[0]
    top = safepaths.child(folder, old_dir)
    conv = top / PRIMARY
    if filemodes.lstat(conv) is not None:
        try:
            doc = orjson.loads(reading.read_capped(conv, 1 << 31))
            if not isinstance(doc, dict):
                raise ValueError("not an object")
            if isinstance(doc.get("id"), str) and doc["id"].upper() == old.upper():
                doc["id"] = new
            if isinstance(doc.get("sessionId"), str) and doc["sessionId"].upper() == old.upper():
                doc["sessionId"] = new
            data = encode.conversation_bytes(doc)
        except (orjson.JSONDecodeError, ValueError, TypeError) as exc:
            raise SamctlError(
                f"cannot restore {old} under a new id: its conversation.json cannot be rewritten ({str(exc)[:120]})",
                hint=said("restore it under its own id, then `", Suggestion("recover"), "` it"),
            ) from None
        writing.write_atomic(conv, data)
    for db, table in (("memory.db", "conversation_memories"), ("context_archive.db", "context_archives")):
        p = top / db
        if filemodes.lstat(p) is not None:
            _retarget_db(p, table, old, new)
    new_top = safepaths.child(folder, new)
    faults.step("rename")
    writing.rename(top, new_top)
    # writing a database merges its -wal into it and removes the -wal (and -shm): those are not placed
    renamed = {n: new + n[len(old_dir) :] for n in names}
    return {
        n: None
        if n.rsplit("/", 1)[-1] in _DB_SIDECARS and filemodes.lstat(folder.joinpath(*to.split("/"))) is None
        else to
        for n, to in renamed.items()
    }


_DB_SIDECARS = {f"{db}-{s}" for db in ("memory.db", "context_archive.db") for s in ("wal", "shm", "journal")}


def _retarget_db(path: Path, table: str, old: str, new: str) -> None:
    """Rewrite ``conversation_id`` in a staged database.  One that is not SAM's exactly (a trigger,
    another table, not a database: ``sqlitefile.write_transaction``) refuses the whole restore of
    this conversation under a new id, rather than bring it back with memories under the old id."""
    st = filemodes.lstat(path)
    if st is not None and stat.S_ISREG(st.st_mode) and st.st_size == 0:
        return  # an empty database SAM fills on its next open: nothing to rewrite
    try:
        with sqlitefile.write_transaction(path, table, timeout=0) as db:
            db.execute(f'UPDATE "{table}" SET conversation_id = ? WHERE upper(conversation_id) = ?', (new, old.upper()))
    except FileProblem as exc:
        raise SamctlError(
            f"cannot restore {old} under a new id: {path.name}: {exc.message}",
            hint="restore it under its own id (without --as-new)",
        ) from None
    except sqlitefile.SQLITE_ERRORS as exc:
        raise SamctlError(
            f"cannot restore {old} under a new id: {path.name} cannot be rewritten ({exc})",
            hint="restore it under its own id (without --as-new)",
        ) from None


def purge(store, cid: str, refs: dict | None = None) -> list[str]:
    """Delete ``cid`` for good as SAM does: conversation.json, then the folder (never a scope in use)."""
    files = conversation_files(store, cid, refs)
    folder = store.folder(cid)
    removed = []
    primary = folder / PRIMARY
    if filemodes.lstat(primary) is not None:
        removing.remove(primary)
        removed.append(str(primary))
    if files and files[0] == folder:
        removing.remove_tree(folder)
        removed.append(str(folder))
    else:
        for p in reversed(files):
            st = filemodes.lstat(p)
            if st is None:
                continue
            if stat.S_ISDIR(st.st_mode):
                removing.remove_dir_if_empty(p)
            else:
                removing.remove(p)
            removed.append(str(p))
        syncing.fsync_dir(folder)
    syncing.fsync_dir(store.conv_dir)
    return removed
