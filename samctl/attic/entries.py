"""The attic: where samctl keeps what it removes, archives, or compacts away.

An entry (``<id>.<state>.<stamp>.tar.zst`` plus its manifest, in ``samctl-attic/``) exists only once its
manifest does; extraction never trusts the tar (hashes, names, sizes, a decompression cap) and places
nothing on any problem.

Design notes: docs/attic.md, "attic/entries.py".
"""

from __future__ import annotations

import os
import stat
import time
from pathlib import Path

import orjson

from samctl.attic import (
    ATTIC,  # noqa: F401 - the attic's own name, used here and by its callers
    tarscan,
    tarzst,
)
from samctl.attic import attic_dir as attic_folder
from samctl.attic.entry import LEVEL, MANIFEST_SUFFIX, MANIFEST_VERSION, TAR_SUFFIX, Entry  # noqa: F401 - the attic's names
from samctl.attic.tarscan import ABSOLUTE_CAP, finding
from samctl.attic.tarzst import Member, safe_member_name
from samctl.errors import SamctlError, UnsafePath
from samctl.fs import filemodes, reading, removing, syncing, writing
from samctl.model import WARNING, Finding
from samctl.said import Suggestion, said

JOURNAL = ".journal"
STAGING = ".staging"
STATES = ("deleted", "archived", "history", "kept")
RESTORABLE = ("deleted", "archived", "kept")  # a history segment is compact's copy of an old log, not a conversation
MANIFEST_CAP = 16 << 20
PERMISSIONS = {"file": 0o777, "dir": 0o2777}  # mode bits a manifest may record: a folder's setgid (inherited
# from its parent on Linux) is put back as it was; setuid, sticky, or setgid on a file never
TIME_T = 2**63  # os.utime takes an mtime whose seconds fit a 64-bit time_t
WHEN_LIMIT = 253402300800.0  # 10000-01-01T00:00Z: every time samctl records is before it


class AtticProblem(SamctlError):
    """An attic entry that cannot be used; ``findings`` says why, one line each."""

    def __init__(self, message: str, findings: list | None = None, hint: str | None = None):
        super().__init__(message, hint)
        self.findings = findings or []


# --- where ------------------------------------------------------------------------


def attic_dir(store) -> Path:
    return attic_folder(store)


def check_attic_folders(store) -> dict:
    """The lstat (or None: missing) of the attic and its journal and staging folders; UnsafePath if
    one of them is a symlink or not a folder.  Everything that lists, writes or removes in them
    asks first: samctl never reads, writes or deletes through a link someone put there."""
    p = attic_dir(store)
    out = {}
    for folder in (p, p / JOURNAL, p / STAGING):
        st = filemodes.lstat(folder)
        if st is not None and (stat.S_ISLNK(st.st_mode) or not stat.S_ISDIR(st.st_mode)):
            raise UnsafePath(
                f"{folder} is {filemodes.describe_mode(st.st_mode)}, not samctl's attic folder; nothing was changed",
                hint="move it out of the way: samctl keeps its attic in a "
                "folder of its own and never reads or writes through a link there",
            )
        out[folder] = st
    return out


def ensure_attic(store) -> Path:
    """The attic folder (created 0700), with its journal and staging folders; UnsafePath if one of
    them is a symlink or not a folder (``check_attic_folders``)."""
    p = attic_dir(store)
    for folder, st in check_attic_folders(store).items():
        if st is None:
            writing.make_private_dir(folder)
        elif folder == p and stat.S_IMODE(st.st_mode) != filemodes.DIR_MODE:
            os.chmod(p, filemodes.DIR_MODE)
    return p


def stamp(now: float) -> str:
    return time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(now))


def iso(now: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(now)) + f".{int(now * 1e6) % 1000000:06d}Z"


def new_stem(attic: Path, cid: str, state: str, now: float, taken=()) -> str:
    """A name for a new entry: no file in the attic or its journal has it, nor is it in ``taken``."""
    base = f"{cid}.{state}.{stamp(now)}"
    stem = base
    n = 1
    a = str(attic)
    while (
        stem in taken
        or any(os.path.lexists(f"{a}/{stem}{s}") for s in (TAR_SUFFIX, MANIFEST_SUFFIX))
        or os.path.lexists(f"{a}/{JOURNAL}/{stem}.json")
    ):
        n += 1
        stem = f"{base}-{n}"
    return stem


def parse_stem(stem: str) -> tuple[str, str, str] | None:
    parts = stem.split(".")
    if len(parts) != 3 or parts[1] not in STATES:
        return None
    return parts[0], parts[1], parts[2]


class Changed(SamctlError):
    """A file changed while samctl read it (the app, or another writer, is using it)."""


def pack(
    store,
    cid: str,
    state: str,
    paths: list,
    info: dict | None = None,
    level: int | None = None,
    now: float | None = None,
    stem: str | None = None,
    attic: Path | None = None,
    total: int | None = None,
    built=None,
) -> Entry:
    """Archive ``paths`` (files and folders under the store) as one attic entry.

    The tar is written (temp, fsync, rename), re-read and verified against
    the hashes taken while reading the originals; the manifest is written
    last (``commit_entry``).  If an original changes while it is read, or
    anything fails, what was written is removed and the error raised
    (``SamctlError`` for a change).  A caller moving many passes the ``attic``
    it ensured and the ``total`` size of ``paths`` it has seen, and may pass what
    ``build`` made of ``paths`` (a ``tarzst.Written``, or the error it met) as
    ``built``.  (How the tar is built and checked: ``attic/tarzst.py``, ``attic/tarscan.py``.)
    """
    if state not in STATES:
        raise ValueError(state)
    level = LEVEL if level is None else level
    attic = attic or ensure_attic(store)
    now = time.time() if now is None else now
    stem = stem or new_stem(attic, cid, state, now)
    tar_path = attic / (stem + TAR_SUFFIX)
    if total is None:
        total = sum(st.st_size for st in (filemodes.lstat(p) for p in paths) if st is not None)
    in_memory = total <= tarzst.SMALL
    if isinstance(built, BaseException):
        _reraise(built)
    tmp, f = writing.create_temp(tar_path, buffering=0 if in_memory else 1 << 20)
    try:
        written = tarzst.write(store, paths, f, level, in_memory, total, built)
        writing.finish_temp(f)
        writing.commit_temp(tmp, tar_path, sync_dir=False)  # the manifest's commit fsyncs the folder
    except BaseException as exc:
        f.close()
        writing.discard_temp(tmp)
        _reraise(exc)
    for m in written.members:  # (a conversation's file with special bits: archived, and restored, without them)
        m.mode &= PERMISSIONS[m.type]
    entry = Entry(
        stem=stem,
        id=cid,
        state=state,
        when=iso(now),
        when_ts=now,
        store=store.name,
        origin=str(store.conv_dir),
        title=(info or {}).get("title"),
        members=written.members,
        tar_size=written.size,
        tar_sha256=written.sha256,
        attic=attic,
        level=level,
        extra={k: v for k, v in (info or {}).items() if k != "title"},
    )
    try:
        problems = tarscan.check_written(entry, written)
        if problems:
            raise AtticProblem(
                f"the archive of {cid} did not read back as written ({problems[0].reason}); nothing was moved", problems
            )
    except BaseException:
        removing.remove(tar_path)
        raise
    commit_entry(entry)
    return entry


def _reraise(exc: BaseException):
    """Raise ``exc`` again; a file that changed while it was read (``FileChanged``) as the
    SamctlError that tells the user."""
    if isinstance(exc, tarzst.FileChanged):
        raise Changed(
            f"{exc}: it changed while samctl was archiving it; nothing was moved",
            hint="make sure the app is not using it, then try again",
        ) from None
    raise exc


def build(store, item: tuple):
    """What ``pack`` is to write for ``item`` = (paths, their total size, level): a ``tarzst.Written``
    (built in memory), None (too big for memory: ``pack`` streams it), or the error met reading
    them.  Reads only; run in worker processes for many small conversations (``attic/lifecycle.py``)."""
    paths, total, level = item
    if total > tarzst.SMALL:
        return None
    try:
        return tarzst.build(store, paths, level)
    except (SamctlError, OSError, tarzst.FileChanged) as exc:
        return exc


def commit_entry(entry: Entry) -> None:
    """Write the manifest of a packed entry: from now on the entry exists.  On failure
    the entry's files are removed and the error raised."""
    try:
        writing.write_atomic(entry.manifest_path, orjson.dumps(entry.manifest(), option=orjson.OPT_INDENT_2))
    except BaseException:
        removing.remove(entry.manifest_path)  # the commit record first, should it have made it
        removing.remove(entry.tar_path)
        raise


def verify(entry: Entry, absolute_cap: int = ABSOLUTE_CAP) -> list:
    """Every problem of ``entry`` (empty list if it reads back exactly as its manifest says)."""
    return tarscan.scan(entry, None, absolute_cap, check_tar_first=True)


def unpack(entry: Entry, dest: Path, absolute_cap: int = ABSOLUTE_CAP, archive=None) -> list[str]:
    """Extract ``entry`` into the private folder ``dest``, verifying everything first or on the way.

    ``dest`` holds none of the entry's top-level names (other entries' members
    may be there).  Files get their manifest modes and mtimes; folders stay 0700
    (``place`` gives them theirs once the files are out: a user who is not root
    cannot move a file out of a read-only folder).  On any problem
    what was extracted is removed again and AtticProblem raised.  Returns the
    member names in order.
    """
    names: list[str] = []
    base = str(dest)

    def sink(m: Member, ti, chunks) -> bool:
        target = f"{base}/{m.name}"  # a safe member name: plain components, checked by _scan
        if m.type == "dir":
            writing.make_dir(target)
            names.append(m.name)
            return True
        parent = os.path.dirname(target) if "/" in m.name else base
        if parent != base and not os.path.isdir(parent):
            writing.make_private_dir(parent)  # a member whose folder stayed in the store (a shared scope)
        f = writing.create_new(target)  # the staging folder is private: no temp name needed
        try:
            for b in chunks:
                writing.write_all(f, b)
            writing.finish_temp(f, m.mode, m.mtime_ns)
        except BaseException:
            f.close()
            raise
        names.append(m.name)
        return True

    def undo() -> None:  # what was extracted goes (dest holds no other entry's top-level names)
        for top in sorted({m.name.split("/")[0] for m in entry.members}):
            removing.remove_tree(dest / top, sync_parent=False)
        names.clear()

    problems = tarscan.scan(entry, sink, absolute_cap, check_tar_first=True, archive=archive, undo=undo)
    if problems:
        undo()
        raise AtticProblem(
            f"attic entry {entry.stem} is damaged or not samctl's; nothing was restored",
            problems,
            hint=said("`", Suggestion("attic --verify"), "` lists what is wrong with each entry"),
        )
    return names


def apply_metadata(entry: Entry, dest: Path, renames: dict | None = None) -> None:
    """Give the extracted files (in ``dest``) their manifest modes and mtimes (folders: ``place``)."""
    renames = renames or {}
    for m in entry.members:
        name = renames.get(m.name, m.name)
        if m.type == "dir" or name is None:  # (None: merged away by retarget)
            continue
        p = dest.joinpath(*name.split("/"))
        os.chmod(p, m.mode)
        os.utime(p, ns=(m.mtime_ns, m.mtime_ns), follow_symlinks=False)


# --- listing -----------------------------------------------------------------------

_KNOWN = frozenset(("samctl_attic", "id", "state", "when", "when_ts", "store", "from", "title", "tar", "members"))


def load_manifest(store, path: Path | str, data: bytes | None = None, attic: Path | None = None) -> Entry:
    """The Entry of one manifest file (its bytes ``data``, if the caller read them; ``attic``, its
    folder, if the caller has it as a path already); AtticProblem if it is not a valid samctl manifest."""
    stem = os.path.basename(path)[: -len(MANIFEST_SUFFIX)]
    parsed = parse_stem(stem)

    def bad(reason: str):
        return AtticProblem(f"{path}: {reason}", [Finding("attic-bad-manifest", str(path), reason)])

    if parsed is None:
        raise bad("the name is not <id>.<state>.<stamp>.manifest.json")
    try:
        d = orjson.loads(reading.read_capped(path, MANIFEST_CAP) if data is None else data)
    except SamctlError as exc:
        raise bad(exc.message) from None
    except orjson.JSONDecodeError as exc:
        raise bad(f"not valid JSON: {str(exc)[:120]}") from None
    try:
        if d.get("samctl_attic") != MANIFEST_VERSION:
            raise ValueError(f"unknown manifest version {d.get('samctl_attic')!r}")
        cid, state, _ = parsed
        if d["id"] != cid or d["state"] != state or not store.valid_id(cid) or store.normalize_prefix(cid) != cid:
            # (SAM: uppercase, as samctl names every entry; a lowercase one would restore a second folder)
            raise ValueError("id or state differs from the file name, or the id breaks the store's rule")
        if d["store"] != store.name:
            raise ValueError(f"written for a {d['store']} store, this is a {store.name} store")
        tar = d["tar"]
        if tar["name"] != stem + TAR_SUFFIX:
            raise ValueError("names another archive")
        members = []
        for m in d["members"]:
            mem = Member(m["name"], m["type"], int(m["size"]), m["sha256"], int(m["mode"]), int(m["mtime_ns"]))
            if (
                mem.type not in ("file", "dir")
                or not 0 <= mem.size <= ABSOLUTE_CAP
                or mem.mode & ~PERMISSIONS[mem.type]
                or not -TIME_T <= mem.mtime_ns // 10**9 < TIME_T
            ):
                raise ValueError(f"member {str(mem.name)[:60]!r} has a bad type, size, mode or mtime")
            if not safe_member_name(mem.name, cid, store.name):
                raise ValueError(f"member name {str(mem.name)[:60]!r} is not a plain name inside the conversation")
            if mem.type == "file" and not (isinstance(mem.sha256, str) and len(mem.sha256) == 64):
                raise ValueError(f"member {mem.name} has no sha256")
            members.append(mem)
        if len({m.name for m in members}) != len(members) or not members:
            raise ValueError("members are missing or repeated")
        if not 0 <= int(tar["size"]) <= ABSOLUTE_CAP:
            raise ValueError("the archive's recorded size is out of range")
        when_ts = float(d["when_ts"])
        if not 0 <= when_ts < WHEN_LIMIT:  # also false for nan
            raise ValueError(f"when_ts {str(d['when_ts'])[:30]} is not a time samctl records")
        return Entry(
            stem=stem,
            id=cid,
            state=state,
            when=str(d["when"]),
            when_ts=when_ts,
            store=d["store"],
            origin=str(d["from"]),
            title=d.get("title"),
            members=members,
            tar_size=int(tar["size"]),
            tar_sha256=str(tar["sha256"]),
            attic=Path(os.path.dirname(path)) if attic is None else attic,
            level=int(tar.get("level", LEVEL)),
            extra={k: v for k, v in d.items() if k not in _KNOWN},
        )
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise bad(f"not a samctl attic manifest: {str(exc)[:160]}") from None


def _attic_names(store, findings: list) -> tuple[Path, list[str]] | None:
    """The attic and its file names, or None (with a finding if it is not samctl's folder or unreadable)."""
    attic = attic_dir(store)
    st = filemodes.lstat(attic)
    if st is None:
        return None
    if stat.S_ISLNK(st.st_mode) or not stat.S_ISDIR(st.st_mode):
        findings.append(
            Finding(
                "attic-unsafe",
                str(attic),
                f"is {filemodes.describe_mode(st.st_mode)}, not samctl's "
                "attic folder: not read (samctl never follows a link there)",
            )
        )
        return None
    try:
        return attic, os.listdir(attic)
    except OSError as exc:
        findings.append(Finding("attic-unreadable", str(attic), f"cannot list the attic: {exc.strerror}"))
        return None


def _wanted(name: str, states, want) -> bool:
    """Whether ``list_entries`` with ``want`` reads the manifest or archive ``name`` (by the name alone)."""
    for suffix in (MANIFEST_SUFFIX, TAR_SUFFIX):
        if name.endswith(suffix):
            stem = name[: -len(suffix)]
            parsed = parse_stem(stem)
            return parsed is not None and parsed[1] in states and want(stem, parsed[0])
    return False


def list_entries(store, findings: list, states=STATES, want=None, want_bytes=None) -> list[Entry]:
    """Every committed entry, oldest first; a finding for each manifest or archive that is not right.

    Cheap checks only (the manifest parses, the archive exists with the
    recorded size); ``verify`` decompresses and checks every hash.  With
    ``want(stem, id)``, only the entries whose file names it accepts are read
    (and reported on): finding one conversation's entries in an attic of
    100,000 reads a few manifests, not every one.  With ``want_bytes(data)``,
    only the manifests whose bytes it accepts are parsed and checked (the
    others are skipped unreported: a cheap search of many).
    """
    listed = _attic_names(store, findings)
    if listed is None:
        return []
    attic, names = listed
    if want is not None:
        names = [n for n in names if _wanted(n, states, want)]
    entries = []
    tars = {n[: -len(TAR_SUFFIX)] for n in names if n.endswith(TAR_SUFFIX)}
    stems = set()
    base = str(attic) + os.sep  # (string paths: an attic of 100,000 entries builds no path objects)
    for n in sorted(names):
        if not n.endswith(MANIFEST_SUFFIX):
            continue
        stem = n[: -len(MANIFEST_SUFFIX)]
        stems.add(stem)
        try:
            data = None
            if want_bytes is not None:
                try:
                    data = reading.read_capped(base + n, MANIFEST_CAP)
                except SamctlError:
                    data = None  # (load_manifest says what is wrong with it)
                if data is not None and not want_bytes(data):
                    continue
            e = load_manifest(store, base + n, data, attic)
        except AtticProblem as exc:
            findings.extend(exc.findings)
            continue
        tar = base + stem + TAR_SUFFIX
        st = filemodes.lstat(tar)
        if st is None:
            findings.append(finding(e, "attic-missing", "the manifest's archive is missing"))
            continue
        if not stat.S_ISREG(st.st_mode) or st.st_size != e.tar_size:
            findings.append(
                finding(e, "attic-tampered", f"the archive is {st.st_size} bytes, the manifest says {e.tar_size}")
            )
            continue
        for p, pst in ((tar, st), (base + n, filemodes.lstat(base + n))):
            why = filemodes.mode_problem(pst) if pst is not None else None
            if why:  # the attic holds whole conversations: it must stay private
                findings.append(Finding("attic-mode", p, why, WARNING, e.id))
        if e.state in states:
            entries.append(e)
    journal = attic / JOURNAL
    for stem in sorted(tars - stems):
        pending = filemodes.lstat(journal / (stem + ".json")) is not None
        findings.append(
            Finding(
                "attic-incomplete",
                str(attic / (stem + TAR_SUFFIX)),
                said(
                    "an archive without a manifest, left by an interrupted move; `",
                    Suggestion("attic --repair"),
                    "` removes it",
                ),
                WARNING if pending else WARNING,
            )
        )
    entries.sort(key=lambda e: (e.when_ts, e.stem))
    return entries


def drop(entry: Entry) -> None:
    """Remove an entry: the manifest first (the entry stops existing), then its archive."""
    removing.remove(entry.manifest_path)
    removing.remove(entry.tar_path)
    syncing.fsync_dir(entry.attic)


def named_ids(store, states=RESTORABLE) -> set[str]:
    """The ids the attic's manifests are named for, in ``states``, by their file names alone.

    For resolving what a user typed without reading every manifest; whether an
    entry is right is ``list_entries``'s to say (a damaged one's id is here).
    """
    listed = _attic_names(store, [])
    if listed is None:
        return set()
    out = set()
    for n in listed[1]:
        if n.endswith(MANIFEST_SUFFIX):
            parsed = parse_stem(n[: -len(MANIFEST_SUFFIX)])
            if parsed is not None and parsed[1] in states and store.valid_id(parsed[0]):
                out.add(parsed[0])
    return out
