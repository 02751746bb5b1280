"""The journal of moves in progress, and repair: finishing or undoing what a crash interrupted.

Every move and log rewrite has a journal record before its first change, dropped after its last; ``repair``
(run first by every writing command, under the lock) rolls each move forward or back, and leaves a conflict
for a person.

Design notes: docs/attic.md, "attic/journal.py".
"""

from __future__ import annotations

import errno
import hashlib
import os
import stat
from pathlib import Path

import orjson

from samctl.attic import entries as atticmod
from samctl.attic import tarzst
from samctl.errors import SamctlError, UnsafePath
from samctl.fs import faults, filemodes, reading, removing, safepaths, syncing, writing
from samctl.lock import held_by_another
from samctl.model import INFO, WARNING, Finding
from samctl.said import Said, Suggestion, said

# --- journal records ---------------------------------------------------------------------

BATCH_PREFIX = "batch."
MOVES = ("out", "restore", "copy")  # the ops a batch record may hold (copy: archive --copy, nothing leaves the store)


def journal_path(attic: Path, name: str) -> Path:
    """The record ``name``: an entry's stem (a log rewrite) or ``batch.<first stem>`` (a batch of moves)."""
    return attic / atticmod.JOURNAL / f"{name}.json"


def write_journal(attic: Path, name: str, record: dict) -> None:
    writing.write_atomic(journal_path(attic, name), orjson.dumps(record))


def drop_journal(attic: Path, name: str) -> None:
    removing.remove(journal_path(attic, name))


def write_batch(attic: Path, moves: list[dict]) -> str:
    """Record the moves of one batch (each ``{"op": "out" or "restore", "stem": ..., ...}``); its name."""
    name = BATCH_PREFIX + moves[0]["stem"]
    write_journal(attic, name, {"op": "batch", "moves": moves})
    return name


def _moves_of(rec, name: str) -> list[dict]:
    """The moves a record holds, each checked to name a well-formed entry; ValueError otherwise."""
    if rec["op"] == "batch":
        moves = rec["moves"]
        if type(moves) is not list or not moves or not name.startswith(BATCH_PREFIX):
            raise ValueError("not a batch record")
        if not all(type(m) is dict and m.get("op") in MOVES for m in moves):
            raise ValueError("a move of unknown kind")
    else:
        moves = [rec]
        if rec["stem"] != name:
            raise ValueError("names another entry")
    for m in moves:
        if type(m["stem"]) is not str or atticmod.parse_stem(m["stem"]) is None:
            raise ValueError("names no entry")
    return moves


def sha256_file(p) -> str | None:
    """The sha256 of a regular file's bytes, or None if it cannot be read as one."""
    try:
        return reading.sha256_of(p)[1]
    except SamctlError:
        return None


# --- placing restored files ---------------------------------------------------------------


def placement_order(pairs):
    def key(pair):
        n, m = pair
        if m.type == "dir":
            return (0, n.count("/"), n)
        return (1 + (n.endswith(".meta")) + (n.endswith(".json")), 0, n)

    return sorted(pairs, key=key)


def place(store, entry: atticmod.Entry, staging: Path, names: list, conv_st=None) -> list[str]:
    """Move each staged member to its store name (never replacing anything), folders' modes and
    mtimes last.  A name None is a member that is not placed (a SQLite ``-wal`` that ``retarget``'s
    write merged into its database).

    Returns the names of members whose target already held other bytes (not placed).
    ``conv_st``: the lstat of the conversations folder's real path, if the caller has it.
    """
    conflicts = []
    conv, stage = str(store.conv_dir), str(staging)
    touched = {conv}
    # the conversations folder itself may be a symlink the user chose (check reports it); below it, never
    conv_st = conv_st or filemodes.lstat(store.root_real)
    for n, m in placement_order([(n, m) for n, m in zip(names, entry.members) if n is not None]):
        dst, src = f"{conv}/{n}", f"{stage}/{n}"
        if not _make_parents(conv, n, touched):  # a symlink (or file) where a folder should be: never write through
            conflicts.append(n)
            continue
        if m.type == "dir":
            if filemodes.lstat(dst) is None:
                faults.step("mkdir")
                writing.make_dir(dst)
            continue
        parent = os.path.dirname(dst) if "/" in n else conv
        pst = filemodes.lstat(parent) if parent != conv else conv_st
        if pst is None or not stat.S_ISDIR(pst.st_mode):
            conflicts.append(n)
            continue
        try:
            writing.move_new(src, dst)
        except (FileExistsError, FileNotFoundError):
            st = filemodes.lstat(dst)
            if st is None:
                raise  # the staged copy is gone and nothing is in its place
            sst = filemodes.lstat(src)
            # placed before a crash: moved (the staging copy is private, only this moves it out), or
            # linked by an older samctl
            if (
                sst is None
                or (sst.st_ino, sst.st_dev) == (st.st_ino, st.st_dev)
                or sha256_file(src) == sha256_file(dst)
            ):
                continue
            conflicts.append(n)
            continue
        touched.add(parent)
    for n, m in zip(names, entry.members):
        p = f"{conv}/{n}"
        st = filemodes.lstat(p) if m.type == "dir" and n is not None else None
        if st is not None and stat.S_ISDIR(st.st_mode):  # never through a link someone put there
            os.chmod(p, m.mode)
            os.utime(p, ns=(m.mtime_ns, m.mtime_ns), follow_symlinks=False)
    for d in sorted(touched, key=lambda p: -p.count("/")):
        syncing.fsync_dir(d)
    return conflicts


def _make_parents(conv: str, name: str, touched: set) -> bool:
    """Make the missing folders above the member ``name`` under ``conv`` (0700: the app's own folders,
    such as a Claude Code project folder the app removed once it was empty); False if one of them is
    there but not a folder (never written through).  ``touched`` gets each folder whose listing changed."""
    p = conv
    for part in name.split("/")[:-1]:
        parent, p = p, f"{p}/{part}"
        st = filemodes.lstat(p)
        if st is None:
            faults.step("mkdir")
            writing.make_dir(p)
            touched.add(parent)
        elif not stat.S_ISDIR(st.st_mode):
            return False
    return True


# --- repair -----------------------------------------------------------------------------------


def pending_ids(store) -> list[str]:
    """The conversation ids the journal's records name (what a repair would touch); read-only,
    best effort: an unreadable record names none."""
    journal = atticmod.attic_dir(store) / atticmod.JOURNAL
    out: list[str] = []
    try:
        atticmod.check_attic_folders(store)
        names = sorted(n for n in os.listdir(journal) if n.endswith(".json"))
    except (OSError, UnsafePath):
        return out
    for n in names:
        try:
            moves = _moves_of(orjson.loads(reading.read_capped(journal / n, 1 << 24)), n[: -len(".json")])
        except (SamctlError, orjson.JSONDecodeError, KeyError, TypeError, ValueError):
            continue
        for m in moves:
            if m.get("op") == "copy":  # (settling a copy never touches the store)
                continue
            for key in ("id", "new_id"):
                if isinstance(m.get(key), str) and store.valid_id(m[key]) and m[key] not in out:
                    out.append(m[key])
    return out


def pending(store) -> list:
    """Findings for moves a crash interrupted (read-only; ``repair`` finishes them); an attic folder
    that is a link is a finding, and is not read."""
    attic = atticmod.attic_dir(store)
    out = []
    try:
        atticmod.check_attic_folders(store)
    except UnsafePath as exc:
        return [Finding("attic-unsafe", str(attic), exc.message)]
    try:
        names = sorted(os.listdir(attic / atticmod.JOURNAL))
    except OSError:
        return out
    records = [n for n in names if n.endswith(".json")]
    if records and held_by_another(store):  # a running samctl's moves: in progress, not interrupted
        return [
            Finding(
                "attic-in-progress", str(attic / atticmod.JOURNAL / n), "another samctl is moving this right now", INFO
            )
            for n in records
        ]
    for n in records:
        out.append(
            Finding(
                "attic-interrupted",
                str(attic / atticmod.JOURNAL / n),
                said(
                    "a move was interrupted; `",
                    Suggestion("attic --repair"),
                    "` (or any writing samctl command) finishes it",
                ),
                WARNING,
            )
        )
    return out


SETTLE = said("`", Suggestion("attic --repair"), "` (or any writing samctl command) finishes or undoes it")


def pending_moves(store) -> list:
    """``check``'s findings for the moves a crash interrupted (read-only): one ``pending-move``
    error per move, naming the conversation it holds half in the store and half in the attic,
    with the command that settles it (until then ``recover`` is no answer for that conversation:
    settling it finishes the move, and would undo such a rebuild).  While another samctl holds
    the lock its moves are in progress, not interrupted: an info line each."""
    attic = atticmod.attic_dir(store)
    try:
        atticmod.check_attic_folders(store)
        journal = attic / atticmod.JOURNAL
        names = sorted(n for n in os.listdir(journal) if n.endswith(".json"))
    except UnsafePath as exc:
        return [Finding("attic-unsafe", str(attic), exc.message)]
    except OSError:
        return []
    if names and held_by_another(store):
        return [
            Finding("attic-in-progress", str(journal / n), "another samctl is moving this right now", INFO)
            for n in names
        ]
    what = {"out": "move to the attic", "restore": "restore", "log": "log rewrite (compact)"}
    out = []
    for n in names:
        path = str(journal / n)
        try:
            moves = _moves_of(orjson.loads(reading.read_capped(journal / n, 1 << 24)), n[: -len(".json")])
        except (SamctlError, orjson.JSONDecodeError, KeyError, TypeError, ValueError):
            out.append(
                Finding("pending-move", path, said("an unreadable journal record of an interrupted move; ", SETTLE))
            )
            continue
        for m in moves:
            cid = m.get("new_id") if m.get("op") == "restore" and m.get("new_id") != m.get("id") else m.get("id")
            cid = cid if isinstance(cid, str) and store.valid_id(cid) else None
            if m.get("op") == "copy":  # the original never moved: only the attic has something to settle
                out.append(
                    Finding(
                        "pending-move",
                        path,
                        said(
                            f"an interrupted copy of {cid or 'a conversation'} to the attic (the original is untouched); ",
                            SETTLE,
                        ),
                        WARNING,
                    )
                )
                continue
            out.append(
                Finding(
                    "pending-move",
                    path,
                    said(
                        f"an interrupted {what.get(m.get('op'), 'move')} of {cid or 'a conversation'} holds it half done; ",
                        SETTLE,
                    ),
                    conversation=cid,
                )
            )
    return out


def repair(store, full: bool = False) -> list[str]:
    """Finish or undo every interrupted move (caller holds samctl's lock); one line per action.

    Every interrupted move leaves a journal record or a staging folder, so
    without ``full`` nothing else is looked at when there are none; ``full``
    (``attic --repair``, ``compact``) also sweeps archives without a manifest
    and stale temps in the attic, whatever left them.
    """
    attic = atticmod.attic_dir(store)
    if atticmod.check_attic_folders(store)[attic] is None:  # (UnsafePath, before anything is listed, if a link)
        return []
    if not full and not _has_entries(attic / atticmod.JOURNAL) and not _has_entries(attic / atticmod.STAGING):
        return []
    done: list[str] = []
    journal = attic / atticmod.JOURNAL
    try:
        records = sorted(n for n in os.listdir(journal) if n.endswith(".json"))
    except OSError:
        records = []
    keep_staging, keep_stems = set(), set()
    for n in records:
        path, name = journal / n, n[: -len(".json")]
        try:
            moves = _moves_of(orjson.loads(reading.read_capped(path, 1 << 24)), name)
        except (SamctlError, orjson.JSONDecodeError, KeyError, TypeError, ValueError):
            done.append(f"ignored an unreadable journal record {path}")
            continue
        left = []
        for rec in moves:
            if not _known(store, rec):  # perhaps a newer samctl's: its record and files are left alone
                done.append(f"ignored journal record {n} (unknown operation {rec['op']!r})")
                line = None
            else:
                try:
                    line = _repair_one(store, attic, rec)
                except OSError as exc:  # (a folder it may not write, ...): this move waits, the rest go on
                    line = Left(
                        f"{rec.get('id')}: an interrupted move cannot be finished yet "
                        f"({exc.strerror}: {exc.filename}); it stays in the journal"
                    )
            if line is None or isinstance(line, Left):
                left.append(rec)
                keep_stems.add(rec["stem"])
                keep_staging.add(f"{rec['stem']}.trash")
                keep_staging.add(str(rec.get("staging", "")).split("/")[0])
            if line is not None:
                done.append(line)
        if not left:
            drop_journal(attic, name)
        elif len(left) < len(moves):
            write_journal(attic, name, {"op": "batch", "moves": left})
    # debris: staging copies and archives nobody refers to
    staging = attic / atticmod.STAGING
    try:
        leftovers = sorted(n for n in os.listdir(staging) if n not in keep_staging)
    except OSError:
        leftovers = []
    for n in leftovers:
        try:
            removing.remove_tree(staging / n)
            done.append(f"removed leftover staging copy {n}")
        except OSError as exc:
            done.append(Left(f"could not remove leftover staging copy {n} ({exc.strerror}: {exc.filename})"))
    try:
        names = os.listdir(attic)
    except OSError:
        names = []
    for n in sorted(names):
        if n.endswith(atticmod.TAR_SUFFIX):
            stem = n[: -len(atticmod.TAR_SUFFIX)]
            if filemodes.lstat(attic / (stem + atticmod.MANIFEST_SUFFIX)) is None and stem not in keep_stems:
                removing.remove(attic / n)
                done.append(f"removed {n}: an archive whose move never completed")
    # Only samctl writes the journal, and under the lock we hold: a temp there is a crash's, whatever its age.
    for p in writing.stale_temps(attic) + writing.stale_temps(journal, now=float("inf")):
        removing.remove(p)
    return done


def _known(store, rec: dict) -> bool:
    return rec["op"] in MOVES or (rec["op"] == "log" and store.has_event_logs and store.valid_id(str(rec.get("id"))))


class Left(Said):
    """What ``_repair_one`` says about a move it leaves in the journal (for a person, or a later run),
    or the sweep about debris it could not remove: not done, so a finding (``settle``)."""


def settle(store, full: bool = False) -> tuple[list[str], list]:
    """``repair``, its lines split: (what it did, an error finding for each thing it had to leave).
    Every command that repairs first reports both, so what is stuck is never a quiet exit 0."""
    lines = repair(store, full)
    where = str(atticmod.attic_dir(store))
    return (
        [line for line in lines if not isinstance(line, Left)],
        [Finding("attic-left", where, line) for line in lines if isinstance(line, Left)],
    )


def settle_first(store) -> tuple[list[str], list]:
    """``settle``, for the writing commands whose own work needs no attic (recover, check --fix,
    search --touch): an attic folder that is not samctl's (a link, a file) is a finding for them,
    not a refusal (nothing in it is read)."""
    try:
        return settle(store)
    except UnsafePath as exc:
        return [], [Finding("attic-unsafe", str(atticmod.attic_dir(store)), exc.message)]


def _repair_one(store, attic: Path, rec: dict) -> str | None:
    """Settle one interrupted move or log rewrite (``_known``): a line saying what was done, or None
    (or a ``Left`` line saying why) to leave it."""
    op, stem = rec["op"], rec["stem"]
    if op == "out":
        return _repair_out(store, attic, stem, rec)
    if op == "restore":
        return _repair_restore(store, attic, stem, rec)
    if op == "copy":
        return _repair_copy(store, attic, stem, rec)
    return repair_log(store, attic, stem, rec)


def _has_entries(folder: Path) -> bool:
    try:
        with os.scandir(folder) as it:
            return any(True for _ in it)
    except OSError:
        return False


def _repair_out(store, attic: Path, stem: str, rec: dict) -> str | None:
    cid = rec.get("id")
    manifest = attic / (stem + atticmod.MANIFEST_SUFFIX)
    trash = attic / atticmod.STAGING / f"{stem}.trash"
    if filemodes.lstat(manifest) is None:
        removing.remove(attic / (stem + atticmod.TAR_SUFFIX))
        return f"{cid}: undid an interrupted move to the attic (the store copy was never touched)"
    try:
        entry = atticmod.load_manifest(store, manifest)
    except atticmod.AtticProblem:
        # A manifest cut short by a power loss before the batch's barrier made it durable:
        # the originals were not touched yet (they go only after that barrier).
        files = rec.get("files")
        parsed = atticmod.parse_stem(stem)
        if (
            parsed
            and type(files) is list
            and files
            and all(type(n) is str and tarzst.safe_member_name(n, parsed[0], store.name) for n in files)
            and all(filemodes.lstat(store.conv_dir.joinpath(*n.split("/"))) is not None for n in files)
        ):
            removing.remove(manifest)
            removing.remove(attic / (stem + atticmod.TAR_SUFFIX))
            return (
                f"{cid}: undid an interrupted move to the attic (its manifest was cut short; the store copy is whole)"
            )
        return None  # leave it for a person: `samctl attic` reports the bad manifest
    problems = atticmod.verify(entry)
    leftovers = [(m, store.conv_dir.joinpath(*m.name.split("/"))) for m in entry.members]
    for m, p in leftovers:  # a move that set files aside (another app's session) first puts them back
        q = aside_name(p, stem)
        if m.type == "file" and filemodes.lstat(q) is not None:
            put_back(p, q)
            syncing.fsync_dir(p.parent)
    present = [(m, p) for m, p in leftovers if filemodes.lstat(p) is not None]
    if problems:
        if all(m.type == "dir" or filemodes.lstat(p) is not None for m, p in leftovers):
            atticmod.drop(entry)
            return f"{cid}: the interrupted move left a damaged archive; it was removed, the store copy is whole"
        return None  # neither copy is whole: leave everything for a person (attic lists the finding)
    changed = [m.name for m, p in present if m.type == "file" and sha256_file(p) != m.sha256]
    if changed:  # used since (a stuck move, the app kept writing): the store's copy is the newer one
        if all(m.type == "dir" or filemodes.lstat(p) is not None for m, p in leftovers):
            atticmod.drop(entry)  # nothing of it was removed yet: the move is undone, whole in the store
            return (
                f"{cid}: undid an interrupted move to the attic: {', '.join(changed[:3])} changed since it "
                "was archived, so the store's newer copy stays and the attic's older one was dropped"
            )
        return Left(
            f"{cid}: an interrupted move cannot be finished: {', '.join(changed[:3])} changed since it was "
            f"archived, and other files are only in the attic ({entry.stem}); both are kept for a person"
        )
    for m, p in present:
        if m.type == "file":
            removing.remove(p)
    for m, p in sorted(present, key=lambda mp: -mp[0].name.count("/")):
        if m.type == "dir":
            removing.remove_dir_if_empty(p)
    syncing.fsync_dir(store.conv_dir)
    if filemodes.lstat(trash) is not None:
        removing.remove_tree(trash)
    return f"{cid}: finished an interrupted move to the attic ({entry.stem})"


PUT_BACK_TRIES = 100  # rounds of gathering what an appender wrote to a recreated file (each a few syscalls)


def aside_name(p: Path, stem: str) -> Path:
    """Where a move sets another app's session file ``p`` aside before dropping it (lifecycle._remove_watched):
    a hidden name in its folder that the app never opens."""
    return p.with_name(f".{p.name}.{stem}.moving")


def put_back(p: Path, q: Path) -> None:
    """The set-aside file ``q`` back at ``p``.  If ``p`` was created meanwhile (an appender that reopens
    by name), its bytes are appended to ``q`` (they came after ``q``'s: the session as the app wrote
    it, in one file) and it goes, until ``p`` is free and ``q`` is linked there (never over a file)."""
    for _ in range(PUT_BACK_TRIES):
        try:
            os.link(q, p)  # (fails if p exists: nothing there is ever replaced)
            os.unlink(q)
            return
        except FileExistsError:
            pass
        except OSError as exc:
            if exc.errno not in (errno.EPERM, errno.EOPNOTSUPP, errno.EMLINK):
                raise
            if not os.path.lexists(p):  # (a file system without hard links)
                os.rename(q, p)
                return
        later = q.with_name(q.name + ".later")
        os.rename(p, later)  # (p free again; a writer holding it open writes on into ``later``)
        with open(later, "rb") as src, open(q, "ab") as dst:
            dst.write(src.read())
            dst.flush()
            os.fsync(dst.fileno())
        os.unlink(later)
    raise SamctlError(
        f"{p} kept being written while samctl put it back; the rest of it is in {q}",
        hint=f"append {q} to {p} once the app is idle",
    )


def _repair_copy(store, attic: Path, stem: str, rec: dict) -> str:
    """Settle an interrupted ``archive --copy``: the store was never touched, so only the attic is put
    right.  A new entry that is not committed, or does not verify, goes; one that verifies stays, and
    the older kept entries the record names go (as the copy would have done next)."""
    cid = rec.get("id")
    manifest, tar = attic / (stem + atticmod.MANIFEST_SUFFIX), attic / (stem + atticmod.TAR_SUFFIX)
    if filemodes.lstat(manifest) is None:
        removing.remove(tar)
        return f"{cid}: undid an interrupted copy to the attic (the original was never touched)"
    try:
        entry = atticmod.load_manifest(store, manifest)
    except atticmod.AtticProblem:  # cut short by a power loss: never committed
        removing.remove(manifest)
        removing.remove(tar)
        return f"{cid}: undid an interrupted copy to the attic (its manifest was cut short; the original is whole)"
    if atticmod.verify(entry):
        atticmod.drop(entry)
        return f"{cid}: an interrupted copy left a damaged archive; it was removed (the original is whole)"
    drops = rec.get("drops")
    for old in drops if type(drops) is list else []:
        parsed = atticmod.parse_stem(old) if type(old) is str else None
        if parsed is None or parsed[:2] != (entry.id, "kept") or old == stem:
            continue  # (only this conversation's older kept copies, never what a tampered record names)
        removing.remove(attic / (old + atticmod.MANIFEST_SUFFIX))
        removing.remove(attic / (old + atticmod.TAR_SUFFIX))
    syncing.fsync_dir(attic)
    return f"{cid}: finished an interrupted copy to the attic ({stem})"


def _repair_restore(store, attic: Path, stem: str, rec: dict) -> str | None:
    manifest = attic / (stem + atticmod.MANIFEST_SUFFIX)
    cid = rec.get("id")
    if filemodes.lstat(manifest) is not None:
        names = rec.get("names")
        parts = str(rec.get("staging", "")).split("/")
        try:
            entry = atticmod.load_manifest(store, manifest)
            staging = attic.joinpath(atticmod.STAGING, *map(safepaths.check_component, parts))
        except (atticmod.AtticProblem, UnsafePath):
            return Left(
                f"{cid}: an interrupted restore cannot be finished (its manifest or record is damaged); "
                "left for a person: `",
                Suggestion("attic"),
                "` says what is wrong",
            )
        if entry.state == "kept" and filemodes.lstat(staging) is None and _all_placed(store, entry, names):
            # a kept copy stays once restored: its staging copy went, only the record was left
            return f"{cid}: finished an interrupted restore (its kept copy stays in the attic)"
        if (
            type(names) is not list
            or len(names) != len(entry.members)
            or filemodes.lstat(staging) is None
            or not all(
                n is None or type(n) is str and tarzst.safe_member_name(n, str(rec.get("new_id")), store.name)
                for n in names
            )
        ):
            return Left(
                f"{cid}: an interrupted restore cannot be finished (its journal record is damaged); left for a person"
            )
        conflicts = place(store, entry, staging, names)
        if conflicts:  # the move waits in the journal for the person its message spoke to
            return Left(
                f"{cid}: an interrupted restore is waiting: {', '.join(conflicts[:3])} hold other bytes; "
                "move them aside, then run `",
                Suggestion("attic --repair"),
                "`",
            )
        try:
            if entry.state != "kept":  # (a kept copy is a backup: it stays once restored)
                atticmod.drop(entry)
        except OSError as exc:
            return Left(
                f"{cid}: is restored, but its attic entry {stem} cannot be removed yet "
                f"({exc.strerror}); a later repair removes it"
            )
    else:
        removing.remove(attic / (stem + atticmod.TAR_SUFFIX))
    return f"{cid}: finished an interrupted restore"  # the staging copy goes with the record's other debris


def _all_placed(store, entry, names) -> bool:
    """True if every file of ``entry`` is in the store under its name in ``names`` with the entry's bytes."""
    if type(names) is not list or len(names) != len(entry.members):
        return False
    for n, m in zip(names, entry.members):
        if m.type != "file":
            continue
        if type(n) is not str or not tarzst.safe_member_name(n, entry.id, store.name):
            return False
        if sha256_file(store.conv_dir.joinpath(*n.split("/"))) != m.sha256:
            return False
    return True


def repair_log(store, attic: Path, stem: str, rec: dict) -> str | None:
    """Settle an interrupted log rewrite (journal op ``log``) without ever losing the old log.

    What is on disk decides, not sizes (mermaid may have appended since):
    the history segment is dropped only when the log still starts with the
    old log's bytes and the segment holds exactly those (the log has every
    old event); when the log starts with the new log's bytes the swap
    happened and the segment is kept; anything else (no log, other bytes, a
    record or segment that does not say) keeps it too.  None (the record is
    left for a person) when the record names another entry.
    """
    cid = str(rec.get("id"))
    parsed = atticmod.parse_stem(stem)
    if parsed is None or parsed[:2] != (cid, "history"):
        return None  # never drop an entry a (tampered) record points at that is not this log's history
    manifest, tar = attic / (stem + atticmod.MANIFEST_SUFFIX), attic / (stem + atticmod.TAR_SUFFIX)
    for p in writing.stale_temps(store.conv_dir, f"{cid}.jsonl", now=float("inf")):  # at any age
        removing.remove(p)  # our own unfinished new log (mermaid never writes its log through a temp)
    if filemodes.lstat(manifest) is None:
        removing.remove(tar)
        return (
            f"{cid}: undid an interrupted log rewrite: its history segment was not committed (or was "
            "already dropped), so the log holds the old events"
        )
    head, size = _log_head(store.event_log_path(cid), rec)
    if head == "new":
        grown = size - rec["new_size"]
        since = f", with {grown} bytes appended since" if grown else ""
        return (
            f"{cid}: finished an interrupted log rewrite: the log is the new one{since}; the old log is kept as {stem}"
        )
    why = "the log is neither the old one nor the new one"
    if head == "old":
        try:
            entry = atticmod.load_manifest(store, manifest)
        except atticmod.AtticProblem:
            entry = None
        if entry is not None and [(m.size, m.sha256) for m in entry.members] == [(rec["old_size"], rec["old_sha256"])]:
            atticmod.drop(entry)
            return (
                f"{cid}: undid an interrupted log rewrite: the log still holds the old log (it was never "
                f"replaced, or was put back), so its history segment {stem} was dropped"
            )
        why = "the segment is not the old log the record describes"
    return f"{cid}: kept the history segment {stem} of an interrupted log rewrite: {why}"


def _log_head(path: Path, rec: dict) -> tuple[str | None, int]:
    """("new" or "old" if the log starts with the bytes the record describes, else None; its size)."""
    sizes, shas = (rec.get("new_size"), rec.get("old_size")), (rec.get("new_sha256"), rec.get("old_sha256"))
    if not all(type(n) is int and n >= 0 for n in sizes) or not all(type(h) is str for h in shas):
        return None, 0
    try:
        f, st = reading.open_regular(path)
    except SamctlError:
        return None, 0
    try:
        for which, n, sha in (("new", sizes[0], shas[0]), ("old", sizes[1], shas[1])):  # new first: it keeps
            if _head_sha256(f.fileno(), n) == sha:
                return which, st.st_size
    finally:
        f.close()
    return None, st.st_size


def _head_sha256(fd: int, n: int) -> str | None:
    """The sha256 of the first ``n`` bytes of ``fd``; None if it holds fewer."""
    h, off = hashlib.sha256(), 0
    while off < n:
        b = os.pread(fd, min(reading.MIB, n - off), off)
        if not b:
            return None
        h.update(b)
        off += len(b)
    return h.hexdigest()
