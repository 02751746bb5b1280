"""The attic: where samctl keeps what it removes, archives, or compacts away.

Layout (``<store.base>/samctl-attic/``, 0700; SAM: next to ``conversations/``,
mermaid: inside ``.mermaid/``; neither app ever lists it)::

    <id>.<state>.<stamp>.tar.zst          one zstandard-compressed POSIX tar per entry
    <id>.<state>.<stamp>.manifest.json    its manifest (0600): the entry's commit record
    .journal/<stem>.json                  a move in progress (see core/lifecycle.py)
    .staging/                             private scratch space for extraction and removal

``state`` is ``deleted`` (``samctl rm``), ``archived`` (``samctl archive``) or
``history`` (an event log ``samctl compact`` replaced by a fresh backfill);
``stamp`` is the UTC time of the move (``20260901T170000Z``, ``-N`` added on a
collision).  Tar member names are relative to the store's conversations
folder (mermaid ``<id>.json``; SAM ``<UUID>/`` and ``<UUID>/memory.db``).

The manifest records, per member, its type (file or dir), size, sha256, mode
and mtime_ns, plus the entry's id, state, when, where from, title, and the
size and sha256 of the compressed tar.

Invariants:
- An entry exists only once its manifest exists.  The tar is written first
  (temp, fsync, rename), re-read and checked against the hashes taken while
  reading the originals, and only then is the manifest written (atomically).
  A tar without a manifest is the debris of an interrupted move.
- Extraction never trusts the tar: the compressed bytes must match the
  manifest's sha256 before anything is decompressed; every member must be a
  regular file or folder named exactly as in the manifest (no absolute
  names, no ``..``, no links or devices), of the manifest's size and sha256;
  the decompressed stream is capped at what the manifest accounts for (and
  an absolute cap), so a decompression bomb stops early.  Any problem is an
  ``AtticProblem`` carrying findings, and nothing is placed anywhere.
- ``zstandard`` is imported only inside the functions that need it.
"""

from __future__ import annotations

import functools
import hashlib
import io
import os
import stat
import time
from dataclasses import dataclass, field
from pathlib import Path

import orjson

from samctl import fsafe
from samctl.core.model import ERROR, WARNING, Finding
from samctl.errors import FileProblem, SamctlError, UnsafePath

ATTIC = "samctl-attic"
JOURNAL = ".journal"
STAGING = ".staging"
STATES = ("deleted", "archived", "history")
MANIFEST_VERSION = 1
LEVEL = 3  # zstd's own default level
ABSOLUTE_CAP = 64 << 30  # never decompress more than this, whatever a manifest says
MANIFEST_CAP = 16 << 20
TAR_SUFFIX = ".tar.zst"
MANIFEST_SUFFIX = ".manifest.json"
_CHUNK = 1 << 20
_WINDOW_CAP = 1 << 27  # refuse zstd frames asking for more than 128 MiB of window
_THREAD_MIN = 4 << 20  # members at least this big are hashed on a helper thread
_SMALL = 8 << 20  # conversations up to this size are archived in memory (one read each, one compression)
_PARALLEL_HASH = 1 << 20  # a tar this big is hashed on a helper thread while its files are written
_READ_WHOLE = 32 << 20  # archives up to this size are read whole on restore (one read, checked in memory) ...
_IN_MEMORY = 32 << 20  # ... and decompressed in memory if their manifest accounts for at most this


class AtticProblem(SamctlError):
    """An attic entry that cannot be used; ``findings`` says why, one line each."""

    def __init__(self, message: str, findings: list | None = None, hint: str | None = None):
        super().__init__(message, hint)
        self.findings = findings or []


@dataclass(slots=True)
class Member:
    name: str
    type: str  # "file" or "dir"
    size: int
    sha256: str | None
    mode: int
    mtime_ns: int

    def to_dict(self) -> dict:
        return {"name": self.name, "type": self.type, "size": self.size, "sha256": self.sha256,
                "mode": self.mode, "mtime_ns": self.mtime_ns}


@dataclass
class Entry:
    stem: str
    id: str
    state: str
    when: str
    when_ts: float
    store: str
    origin: str
    title: str | None
    members: list
    tar_size: int
    tar_sha256: str
    attic: Path
    level: int = LEVEL
    extra: dict = field(default_factory=dict)

    @functools.cached_property
    def tar_path(self) -> Path:
        return self.attic / (self.stem + TAR_SUFFIX)

    @functools.cached_property
    def manifest_path(self) -> Path:
        return self.attic / (self.stem + MANIFEST_SUFFIX)

    @property
    def original_size(self) -> int:
        return sum(m.size for m in self.members)

    def manifest(self) -> dict:
        d = {
            "samctl_attic": MANIFEST_VERSION, "id": self.id, "state": self.state, "when": self.when,
            "when_ts": self.when_ts, "store": self.store, "from": self.origin, "title": self.title,
            "tar": {"name": self.stem + TAR_SUFFIX, "size": self.tar_size, "sha256": self.tar_sha256,
                    "level": self.level},
            "members": [m.to_dict() for m in self.members],
        }
        d.update(self.extra)
        return d

    def to_dict(self) -> dict:
        return {"entry": self.stem, "id": self.id, "state": self.state, "when": self.when, "title": self.title,
                "store": self.store, "from": self.origin, "files": [m.name for m in self.members if m.type == "file"],
                "original_bytes": self.original_size, "stored_bytes": self.tar_size,
                "path": str(self.tar_path), **{k: v for k, v in self.extra.items() if k in ("updated", "pinned")}}


# --- where ------------------------------------------------------------------------

def attic_dir(store) -> Path:
    return store.base / ATTIC


def ensure_attic(store) -> Path:
    """The attic folder (created 0700), with its journal and staging folders."""
    p = attic_dir(store)
    st = fsafe.lstat(p)
    if st is not None and (stat.S_ISLNK(st.st_mode) or not stat.S_ISDIR(st.st_mode)):
        raise UnsafePath(f"{p} is {fsafe.describe_mode(st.st_mode)}, not samctl's attic folder",
                         hint="move it out of the way; samctl never writes through a symlink")
    fsafe.make_private_dir(p)
    if stat.S_IMODE(os.lstat(p).st_mode) != fsafe.DIR_MODE:
        os.chmod(p, fsafe.DIR_MODE)
    for sub in (JOURNAL, STAGING):
        fsafe.make_private_dir(p / sub)
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
    while stem in taken or any(os.path.lexists(f"{a}/{stem}{s}") for s in (TAR_SUFFIX, MANIFEST_SUFFIX)) \
            or os.path.lexists(f"{a}/{JOURNAL}/{stem}.json"):
        n += 1
        stem = f"{base}-{n}"
    return stem


def parse_stem(stem: str) -> tuple[str, str, str] | None:
    parts = stem.split(".")
    if len(parts) != 3 or parts[1] not in STATES:
        return None
    return parts[0], parts[1], parts[2]


# --- names ------------------------------------------------------------------------

def member_name(store, p) -> str:
    """The name of ``p`` (a file or folder under the store) in a tar: relative to the conversations folder."""
    sp, conv = str(p), str(store.conv_dir) + "/"
    return sp[len(conv):] if sp.startswith(conv) else Path(p).relative_to(store.conv_dir).as_posix()


def safe_member_name(name, cid: str, store_name: str) -> bool:
    """True if ``name`` is a plain relative path that can only belong to conversation ``cid``."""
    if not isinstance(name, str) or not name or len(name) > 1024 or "\\" in name or "\0" in name:
        return False
    parts = name.split("/")
    if name.startswith("/") or len(parts) > 16 or any(p in ("", ".", "..") for p in parts):
        return False
    try:
        for p in parts:
            fsafe.check_component(p)
    except UnsafePath:
        return False
    if store_name == "mermaid":
        return len(parts) == 1 and name in (f"{cid}.json", f"{cid}.meta", f"{cid}.jsonl")
    return parts[0].upper() == cid.upper()


# --- packing ----------------------------------------------------------------------

class _HashWriter:
    def __init__(self, f):
        self.f = f
        self.h = hashlib.sha256()
        self.n = 0

    def write(self, b) -> int:
        self.h.update(b)
        self.n += len(b)
        return self.f.write(b)

    def flush(self) -> None:
        self.f.flush()


class _HashReader:
    def __init__(self, f, limit: int | None = None, h=None):
        self.f = f
        self.h = h if h is not None else hashlib.sha256()
        self.n = 0
        self.limit = limit

    def read(self, n: int = -1) -> bytes:
        if self.limit is not None:
            left = self.limit - self.n
            if left <= 0:
                return b""
            n = left if n is None or n < 0 else min(n, left)
        b = self.f.read(n)
        self.h.update(b)
        self.n += len(b)
        return b


class _Sha256:
    """sha256 that hashes big inputs on a helper thread, overlapping (de)compression on another core.

    hashlib releases the GIL for large updates, and so does zstandard, so the
    two run in parallel; small members are hashed inline.
    """

    def __init__(self, size: int):
        self.h = hashlib.sha256()
        self.q = None
        if size >= _THREAD_MIN:
            import queue
            import threading

            self.q = queue.Queue(8)
            self.t = threading.Thread(target=self._run, daemon=True)
            self.t.start()

    def _run(self) -> None:
        while True:
            b = self.q.get()
            if b is None:
                return
            self.h.update(b)

    def update(self, b) -> None:
        if self.q is None:
            self.h.update(b)
        else:
            self.q.put(b)

    def close(self) -> None:
        if self.q is not None:
            self.q.put(None)
            self.t.join()
            self.q = None

    def hexdigest(self) -> str:
        self.close()
        return self.h.hexdigest()


class Changed(SamctlError):
    """A file changed while samctl read it (the app, or another writer, is using it)."""


class _Changed(Exception):
    pass


_contexts: dict = {}


def _context(key, make):
    """The zstd context ``key``, made on first use and kept for the process: a fresh one costs
    its tables' allocation and page faults, several times the compression of a small chat."""
    if key not in _contexts:
        _contexts[key] = make()
    return _contexts[key]


def _compressor(level: int, threads: int):
    import zstandard

    return _context(("c", level, threads), lambda: zstandard.ZstdCompressor(level=level, threads=threads))


def _decompressor():
    import zstandard

    return _context("d", lambda: zstandard.ZstdDecompressor(max_window_size=_WINDOW_CAP))


def pack(store, cid: str, state: str, paths: list, info: dict | None = None, level: int | None = None,
         now: float | None = None, stem: str | None = None, commit: bool = True, attic: Path | None = None,
         total: int | None = None) -> Entry:
    """Archive ``paths`` (files and folders under the store) as one attic entry.

    The tar is written (temp, fsync, rename), re-read and verified against the
    hashes taken while reading the originals; the manifest is written last
    (with ``commit=False`` it is not: the caller commits with ``commit_entry``,
    after making the tar durable).  If an original changes while it is read,
    or anything fails, what was written is removed and the error raised
    (``SamctlError`` for a change).  A caller moving many passes the ``attic``
    it ensured and the ``total`` size of ``paths`` it has seen.

    Up to ``_SMALL`` bytes the tar is built in memory and compressed in one
    call; it is verified by reading the file back: the bytes must be those
    written, and they must decompress to exactly the tar built from the
    originals (whose hashes the manifest holds).  Bigger conversations are
    streamed, and verified by decompressing and hashing every member again.
    """
    if state not in STATES:
        raise ValueError(state)
    level = LEVEL if level is None else level
    attic = attic or ensure_attic(store)
    now = time.time() if now is None else now
    stem = stem or new_stem(attic, cid, state, now)
    tar_path = attic / (stem + TAR_SUFFIX)
    if total is None:
        total = sum(st.st_size for st in (fsafe.lstat(p) for p in paths) if st is not None)
    tmp, f = fsafe.create_temp(tar_path, buffering=0 if total <= _SMALL else 1 << 20)
    try:
        if total <= _SMALL:
            members, tar = _tar_in_memory(store, paths)
            compressed = _compressor(level, 0).compress(tar)
            fsafe.write_all(f, compressed)
            tar_size, tar_sha256 = len(compressed), hashlib.sha256(compressed).hexdigest()
        else:
            members, tar_size, tar_sha256 = _tar_streamed(store, paths, f, level)
        fsafe.finish_temp(f)
        fsafe.commit_temp(tmp, tar_path, sync_dir=False)  # the manifest's commit fsyncs the folder
    except BaseException as exc:
        f.close()
        fsafe.discard_temp(tmp)
        if isinstance(exc, _Changed):
            raise Changed(f"{exc}: it changed while samctl was archiving it; nothing was moved",
                              hint="make sure the app is not using it, then try again") from None
        raise
    entry = Entry(stem=stem, id=cid, state=state, when=iso(now), when_ts=now, store=store.name,
                  origin=str(store.conv_dir), title=(info or {}).get("title"), members=members,
                  tar_size=tar_size, tar_sha256=tar_sha256, attic=attic, level=level,
                  extra={k: v for k, v in (info or {}).items() if k != "title"})
    try:
        if total <= _SMALL:
            problems = _read_back(entry, compressed, tar)
        else:
            problems = _scan(entry, sink=None)
        if problems:
            raise AtticProblem(f"the archive of {cid} did not read back as written; nothing was moved", problems)
    except BaseException:
        fsafe.remove(tar_path)
        raise
    if commit:
        commit_entry(entry)
    return entry


def _tar_streamed(store, paths: list, f, level: int) -> tuple[list, int, str]:
    """Stream the tar of ``paths`` through zstd into ``f``: (members, compressed size, its sha256)."""
    import tarfile

    total = sum(st.st_size for st in (fsafe.lstat(p) for p in paths) if st is not None)
    threads = -1 if total >= _THREAD_MIN * 2 else 0  # big inputs: every core, like `zstd -T0`
    hw = _HashWriter(f)
    zw = _compressor(level, threads).stream_writer(hw, closefd=False)
    members = []
    with tarfile.open(fileobj=zw, mode="w|", format=tarfile.PAX_FORMAT, bufsize=_CHUNK, copybufsize=_CHUNK) as tf:
        for p in paths:
            members.append(_add(tf, store, Path(p)))
    zw.close()
    return members, hw.n, hw.h.hexdigest()


def _tar_in_memory(store, paths: list) -> tuple[list, bytes]:
    """The tar of ``paths``, byte for byte what ``_tar_streamed`` would compress: (members, tar)."""
    import tarfile

    parts, members = [], []
    offset = 0
    for p in paths:
        sp = str(p)
        rel = member_name(store, p)
        try:
            f, st = fsafe.open_regular(sp)
        except FileProblem as exc:
            st = fsafe.lstat(sp)
            if exc.code != "not-regular" or st is None or not stat.S_ISDIR(st.st_mode):
                raise
            f = None  # a folder (SAM's conversation folder) is a member too
        mode, mtime = stat.S_IMODE(st.st_mode), int(st.st_mtime)
        if f is None:
            data, typeflag = b"", tarfile.DIRTYPE
            members.append(Member(rel, "dir", 0, None, mode, st.st_mtime_ns))
        else:
            try:
                data = _read_exactly(f, st.st_size)
                after = os.fstat(f.fileno())
            finally:
                f.close()
            if len(data) != st.st_size or (after.st_size, after.st_mtime_ns) != (st.st_size, st.st_mtime_ns):
                raise _Changed(sp)
            typeflag = tarfile.REGTYPE
            members.append(Member(rel, "file", st.st_size, hashlib.sha256(data).hexdigest(), mode, st.st_mtime_ns))
        header = _ustar_header(rel, typeflag, mode, len(data), mtime)
        if header is None:  # a name or number a plain header cannot hold: PAX headers, as TarFile writes them
            ti, _ = _tarinfo(store, Path(p))
            ti.size, ti.mode, ti.mtime = len(data), mode, mtime
            header = ti.tobuf(tarfile.PAX_FORMAT, "utf-8", "surrogateescape")
        pad = -len(data) % tarfile.BLOCKSIZE
        parts += (header, data, b"\0" * pad)
        offset += len(header) + len(data) + pad
    end = tarfile.BLOCKSIZE * 2
    end += -(offset + end) % tarfile.RECORDSIZE  # the closing blocks, filled up to a record like tar -b20
    parts.append(b"\0" * end)
    return members, b"".join(parts)


_USTAR_TAIL = b"\0" * 100 + b"ustar\x0000" + b"\0" * (32 + 32 + 8 + 8 + 155 + 12)  # linkname ... padding


def _ustar_header(name: str, typeflag: bytes, mode: int, size: int, mtime: int) -> bytes | None:
    """``TarInfo.tobuf(PAX_FORMAT)`` of a member without owner or link, when that is one plain
    ustar block (an ASCII name of at most 100 characters, numbers that fit); else None."""
    if typeflag == b"5":
        name += "/"
    if len(name) > 100 or not name.isascii() or not (0 <= size < 8 ** 11 and 0 <= mtime < 8 ** 11):
        return None
    h = b"".join((name.encode("ascii").ljust(100, b"\0"), b"%07o\0" % (mode & 0o7777), b"0000000\0" * 2,
                  b"%011o\0%011o\0        " % (size, mtime), typeflag, _USTAR_TAIL))
    return h[:148] + b"%06o\0 " % sum(h) + h[156:]  # the checksum counts its own field as spaces


def _read_exactly(f, n: int) -> bytes:
    """Up to ``n`` bytes of ``f`` (fewer only at its end), in as few reads as the kernel allows."""
    chunks = []
    while n > 0:
        b = f.read(n)
        if not b:
            break
        chunks.append(b)
        n -= len(b)
    return chunks[0] if len(chunks) == 1 else b"".join(chunks)


def _read_back(entry: Entry, compressed: bytes, tar: bytes) -> list:
    """Findings unless the archive file holds ``compressed`` and that decompresses to ``tar``."""
    import zstandard

    try:
        back = fsafe.read_capped(entry.tar_path, len(compressed))
    except SamctlError as exc:
        return [_finding(entry, "attic-missing", exc.message)]
    if back != compressed:
        return [_finding(entry, "attic-tampered", "the archive on disk is not the bytes written")]
    try:
        ok = _decompressor().decompress(back, max_output_size=len(tar)) == tar
    except zstandard.ZstdError as exc:
        return [_finding(entry, "attic-corrupt", f"cannot read the archive back: {str(exc)[:160]}")]
    return [] if ok else [_finding(entry, "attic-corrupt", "the archive does not decompress to the tar written")]


def commit_entry(entry: Entry) -> None:
    """Write the manifest of a packed entry: from now on the entry exists.  On failure
    the entry's files are removed and the error raised."""
    try:
        fsafe.write_atomic(entry.manifest_path, orjson.dumps(entry.manifest(), option=orjson.OPT_INDENT_2))
    except BaseException:
        fsafe.remove(entry.manifest_path)  # the commit record first, should it have made it
        fsafe.remove(entry.tar_path)
        raise


def _tarinfo(store, p: Path):
    """(TarInfo, lstat) of a file or folder of the store, as the tar records it: no owner, whole seconds."""
    import tarfile

    st = os.lstat(p)
    ti = tarfile.TarInfo(member_name(store, p))
    ti.mode = stat.S_IMODE(st.st_mode)
    ti.mtime = int(st.st_mtime)
    ti.uid = ti.gid = 0
    ti.uname = ti.gname = ""
    if stat.S_ISDIR(st.st_mode):
        ti.type = tarfile.DIRTYPE
    return ti, st


def _add(tf, store, p: Path) -> Member:
    ti, st = _tarinfo(store, p)
    rel = ti.name
    if stat.S_ISDIR(st.st_mode):
        tf.addfile(ti)
        return Member(rel, "dir", 0, None, ti.mode, st.st_mtime_ns)
    f, st = fsafe.open_regular(p)
    try:
        ti.size = st.st_size
        ti.mode = stat.S_IMODE(st.st_mode)
        ti.mtime = int(st.st_mtime)
        r = _HashReader(f, st.st_size, _Sha256(st.st_size))
        try:
            tf.addfile(ti, r)
        finally:
            r.h.close()
        after = os.fstat(f.fileno())
    finally:
        f.close()
    if r.n != st.st_size or (after.st_size, after.st_mtime_ns) != (st.st_size, st.st_mtime_ns):
        raise _Changed(str(p))
    return Member(rel, "file", st.st_size, r.h.hexdigest(), ti.mode, st.st_mtime_ns)


# --- reading back -------------------------------------------------------------------

class _Capped:
    """A reader that refuses to yield more than ``cap`` bytes (the decompression-bomb guard)."""

    def __init__(self, f, cap: int):
        self.f = f
        self.cap = cap
        self.n = 0

    def read(self, n: int = -1) -> bytes:
        if n is None or n < 0:
            n = _CHUNK
        b = self.f.read(min(n, self.cap - self.n + 1))
        self.n += len(b)
        if self.n > self.cap:
            raise _Bomb(self.cap)
        return b


class _Bomb(Exception):
    pass


def decompressed_cap(entry: Entry, absolute_cap: int = ABSOLUTE_CAP) -> int:
    """The most bytes the tar stream may hold: members, their headers and padding, the end blocks."""
    return min(absolute_cap, sum(m.size + 511 for m in entry.members) + 3072 * len(entry.members) + 20 * 512 * 2)


def tar_digest(entry: Entry) -> tuple[int, str]:
    f, st = fsafe.open_regular(entry.tar_path)
    try:
        h = hashlib.sha256()
        n = 0
        while True:
            b = f.read(_CHUNK)
            if not b:
                break
            h.update(b)
            n += len(b)
    finally:
        f.close()
    return n, h.hexdigest()


def _finding(entry: Entry, code: str, reason: str, severity: str = ERROR) -> Finding:
    return Finding(code, str(entry.tar_path), reason, severity, entry.id)


def read_archive(entry: Entry):
    """``(data or None, size, sha256)`` of the entry's archive as it is on disk: a small one is read
    whole (``data``), a big one only hashed; ``(None, -1, "")`` if it is bigger than it may be.
    Raises SamctlError if it cannot be read.  (Restore reads the next entry's while it
    extracts one: the hashing of one overlaps the decompression of the other.)"""
    try:
        if entry.tar_size <= _READ_WHOLE:
            data = fsafe.read_capped(entry.tar_path, entry.tar_size)
            return data, len(data), hashlib.sha256(data).hexdigest()
        return (None, *tar_digest(entry))
    except SamctlError as exc:
        if getattr(exc, "code", None) != "too-large":
            raise
        return None, -1, ""


def _scan(entry: Entry, sink, absolute_cap: int = ABSOLUTE_CAP, check_tar_first: bool = False,
          archive=None) -> list:
    """Decompress ``entry`` and check every member against the manifest; findings for each problem.

    ``sink(member, ti, chunks)`` (if given) receives each member's content as an
    iterator of chunks; it must consume it. Reading stops at the first problem.
    ``archive`` is ``read_archive(entry)`` if the caller has it already (or the
    SamctlError it raised).
    """
    import tarfile

    import zstandard

    if sum(m.size for m in entry.members) > absolute_cap:
        return [_finding(entry, "attic-too-large", f"the manifest claims {entry.original_size} bytes, over the "
                                                    f"{absolute_cap}-byte cap: not decompressed")]
    data = None  # a small archive is read once, whole, and checked and decompressed from memory
    if check_tar_first:
        try:
            if archive is None:
                archive = read_archive(entry)
            elif isinstance(archive, SamctlError):
                raise archive
        except SamctlError as exc:
            return [_finding(entry, "attic-missing", exc.message)]
        data, n, digest = archive
        if (n, digest) != (entry.tar_size, entry.tar_sha256):
            return [_finding(entry, "attic-tampered", "the compressed archive does not match its manifest's "
                                                       "size and sha256: not decompressed")]
    try:
        f = io.BytesIO(data) if data is not None else fsafe.open_regular(entry.tar_path)[0]
    except SamctlError as exc:
        return [_finding(entry, "attic-missing", exc.message)]
    want = {m.name: m for m in entry.members}
    seen: set[str] = set()
    problems: list = []
    cap = decompressed_cap(entry, absolute_cap)
    try:
        hr = _HashReader(f)
        raw = _Capped(_decompressor().stream_reader(hr, read_size=_CHUNK, read_across_frames=True), cap)
        if data is not None and cap <= _IN_MEMORY:
            tar = _decompress_whole(data, cap)
            if tar is None:
                tar = _read_all(raw)
            if _plain_layout(tar, entry.members):
                return _scan_plain(entry, tar, sink)
            raw = io.BytesIO(tar)  # not samctl's plain layout: the general reader below says what is wrong
        with tarfile.open(fileobj=raw, mode="r|", bufsize=_CHUNK) as tf:
            for ti in tf:
                why = _member_problem(entry, ti, want, seen)
                if why:
                    problems.append(_finding(entry, why[0], why[1]))
                    break
                seen.add(ti.name)
                m = want[ti.name]
                if m.type == "dir":
                    if sink is not None:
                        sink(m, ti, iter(()))
                    continue
                h = _Sha256(m.size)
                src = tf.extractfile(ti)

                def chunks(src=src, h=h):
                    left = m.size
                    while left > 0:
                        b = src.read(min(_CHUNK, left))
                        if not b:
                            raise tarfile.ReadError("unexpected end of data")
                        left -= len(b)
                        h.update(b)
                        yield b

                try:
                    if sink is not None:
                        ok = sink(m, ti, _verified(chunks(), h, m))
                    else:
                        for _ in _verified(chunks(), h, m):
                            pass
                        ok = True
                finally:
                    h.close()
                if ok is False:
                    problems.append(_finding(entry, "attic-tampered", f"{m.name}: content does not match the "
                                                                      "manifest's sha256"))
                    break
        if not problems:
            missing = sorted(set(want) - seen)
            if missing:
                problems.append(_finding(entry, "attic-incomplete", f"members missing from the archive: "
                                                                    f"{', '.join(missing[:5])}"))
        if not problems and not check_tar_first:
            while hr.read(_CHUNK):
                pass
            if (hr.n, hr.h.hexdigest()) != (entry.tar_size, entry.tar_sha256):
                problems.append(_finding(entry, "attic-tampered", "the compressed archive does not match its "
                                                                  "manifest's size and sha256"))
    except _Bomb:
        problems.append(_finding(entry, "attic-bomb", f"decompresses to more than the {cap} bytes its manifest "
                                                      "accounts for: refused (a decompression bomb?)"))
    except _Mismatch as exc:
        problems.append(_finding(entry, "attic-tampered", f"{exc}: content does not match the manifest's sha256"))
    except (tarfile.TarError, zstandard.ZstdError, EOFError, OSError, ValueError) as exc:
        problems.append(_finding(entry, "attic-corrupt", f"cannot read the archive: {str(exc)[:160]}"))
    finally:
        f.close()
    return problems


def _decompress_whole(data: bytes, cap: int) -> bytes | None:
    """The content of ``data`` in one call, when it is one zstd frame whose header declares a size
    within ``cap`` (zstd holds a frame to its declared size, so that bounds the memory); else None."""
    import zstandard

    try:
        size = zstandard.frame_content_size(data)
    except zstandard.ZstdError:
        return None
    if not 0 <= size <= cap:
        return None
    obj = _decompressor().decompressobj()
    out = obj.decompress(data)
    return out if obj.eof and not obj.unused_data and len(out) == size else None


def _read_all(reader) -> bytes:
    chunks = []
    while True:
        b = reader.read(_CHUNK)
        if not b:
            return b"".join(chunks)
        chunks.append(b)


def _plain_layout(tar: bytes, members: list) -> bool:
    """True if ``tar`` is laid out exactly as samctl writes the tar of ``members``: in the
    manifest's order, one plain ustar header each (a regular file or a folder, named and
    sized as the manifest says, with a valid checksum, no PAX or GNU extension), the
    data, and nothing but zeros after the last member.  Anything else, the general
    reader handles (and reports)."""
    off = 0
    for m in members:
        h = tar[off:off + 512]
        name = (m.name + "/" if m.type == "dir" else m.name).encode("utf-8", "surrogateescape")
        if (len(h) != 512 or len(name) > 100 or h[:100] != name.ljust(100, b"\0")
                or h[156:157] != (b"5" if m.type == "dir" else b"0")
                or h[257:265] != b"ustar\x0000" or h.count(0, 345, 500) != 155):  # no prefix
            return False
        size = 0 if m.type == "dir" else m.size
        try:
            if h[124:136] != b"%011o\0" % size and int(h[124:136].strip(b"\0 ") or b"0", 8) != size:
                return False
            if int(h[148:156].strip(b"\0 "), 8) != sum(h) - sum(h[148:156]) + 256:  # the field counts as spaces
                return False
        except ValueError:
            return False
        off += 512 + size + (-size % 512)
    return len(tar) >= off + 1024 and tar.count(0, off) == len(tar) - off


def _scan_plain(entry: Entry, tar: bytes, sink) -> list:
    """``_scan`` of a tar that ``_plain_layout`` accepted: each member's data is hashed and sunk.

    Small tars are hashed member by member before each is sunk.  In a big one the
    hashing runs on a helper thread while the files are written (both release the
    GIL); a mismatch is then found after the writing, and ``unpack`` removes what
    it wrote, as it does for the general reader.
    """
    view = memoryview(tar)
    spans, off = [], 0
    for m in entry.members:
        off += 512
        spans.append((m, view[off:off + m.size]))
        off += m.size + (-m.size % 512)
    digests = None
    if sink is not None and len(tar) >= _PARALLEL_HASH:
        import concurrent.futures

        pool = concurrent.futures.ThreadPoolExecutor(1)
        digests = pool.submit(lambda: [hashlib.sha256(d).hexdigest() if m.type == "file" else None
                                       for m, d in spans])
        pool.shutdown(wait=False)
    for m, data in spans:
        if digests is None and m.type == "file" and hashlib.sha256(data).hexdigest() != m.sha256:
            return [_finding(entry, "attic-tampered", f"{m.name}: content does not match the manifest's sha256")]
        if sink is not None:
            sink(m, None, iter((data,) if m.type == "file" else ()))
    if digests is not None:
        for (m, _), digest in zip(spans, digests.result()):
            if m.type == "file" and digest != m.sha256:
                return [_finding(entry, "attic-tampered", f"{m.name}: content does not match the manifest's sha256")]
    return []


class _Mismatch(Exception):
    pass


def _verified(chunks, h, m: Member):
    """Yield the chunks; after the last one, raise _Mismatch unless the sha256 matches."""
    yield from chunks
    if h.hexdigest() != m.sha256:
        raise _Mismatch(m.name)


def _member_problem(entry: Entry, ti, want: dict, seen: set):
    name = ti.name
    if not safe_member_name(name, entry.id, entry.store):
        return "attic-unsafe", f"member {name[:80]!r} is not a plain name inside the conversation: refused"
    if ti.issym() or ti.islnk():
        return "attic-unsafe", f"member {name} is a link: refused"
    if ti.ischr() or ti.isblk() or ti.isfifo() or getattr(ti, "sparse", None) is not None:
        return "attic-unsafe", f"member {name} is a device, FIFO or sparse file: refused"
    if not (ti.isreg() or ti.isdir()):
        return "attic-unsafe", f"member {name} is not a regular file or folder: refused"
    if name not in want:
        return "attic-tampered", f"member {name} is not in the manifest: refused"
    if name in seen:
        return "attic-tampered", f"member {name} appears twice: refused"
    m = want[name]
    if (m.type == "dir") != ti.isdir():
        return "attic-tampered", f"member {name} is not the kind of file the manifest says"
    if m.type == "file" and ti.size != m.size:
        return "attic-tampered", f"member {name} is {ti.size} bytes, the manifest says {m.size}"
    return None


def verify(entry: Entry, absolute_cap: int = ABSOLUTE_CAP) -> list:
    """Every problem of ``entry`` (empty list if it reads back exactly as its manifest says)."""
    return _scan(entry, None, absolute_cap, check_tar_first=True)


def unpack(entry: Entry, dest: Path, absolute_cap: int = ABSOLUTE_CAP, archive=None) -> list[str]:
    """Extract ``entry`` into the private folder ``dest``, verifying everything first or on the way.

    ``dest`` holds none of the entry's top-level names (other entries' members
    may be there).  Files get their manifest modes and mtimes.  On any problem
    what was extracted is removed again and AtticProblem raised.  Returns the
    member names in order.
    """
    names: list[str] = []
    base = str(dest)

    def sink(m: Member, ti, chunks) -> bool:
        target = f"{base}/{m.name}"  # a safe member name: plain components, checked by _scan
        if m.type == "dir":
            os.mkdir(target, fsafe.DIR_MODE)
            names.append(m.name)
            return True
        parent = os.path.dirname(target)
        if parent != base and not os.path.isdir(parent):
            fsafe.make_private_dir(parent)  # a member whose folder stayed in the store (a shared scope)
        f = fsafe.create_new(target)  # the staging folder is private: no temp name needed
        try:
            for b in chunks:
                fsafe.write_all(f, b)
            fsafe.finish_temp(f, m.mode, m.mtime_ns)
        except BaseException:
            f.close()
            raise
        names.append(m.name)
        return True

    problems = _scan(entry, sink, absolute_cap, check_tar_first=True, archive=archive)
    if problems:
        for top in sorted({m.name.split("/")[0] for m in entry.members}):
            fsafe.remove_tree(dest / top, sync_parent=False)
        raise AtticProblem(f"attic entry {entry.stem} is damaged or not samctl's; nothing was restored", problems,
                           hint="`samctl attic --verify` lists what is wrong with each entry")
    apply_metadata(entry, dest, dirs_only=True)  # files got theirs as written; folders' mtimes go last
    return names


def apply_metadata(entry: Entry, dest: Path, renames: dict | None = None, dirs_only: bool = False) -> None:
    """Give the extracted members (in ``dest``) their manifest modes and mtimes, folders last."""
    renames = renames or {}
    for m in sorted(entry.members, key=lambda m: (m.type == "dir", -m.name.count("/"))):
        if dirs_only and m.type != "dir":
            continue
        p = dest.joinpath(*renames.get(m.name, m.name).split("/"))
        os.chmod(p, m.mode)
        os.utime(p, ns=(m.mtime_ns, m.mtime_ns), follow_symlinks=False)


# --- listing -----------------------------------------------------------------------

def load_manifest(store, path: Path) -> Entry:
    """The Entry of one manifest file; AtticProblem if it is not a valid samctl manifest."""
    stem = path.name[: -len(MANIFEST_SUFFIX)]
    parsed = parse_stem(stem)

    def bad(reason: str):
        return AtticProblem(f"{path}: {reason}", [Finding("attic-bad-manifest", str(path), reason)])

    if parsed is None:
        raise bad("the name is not <id>.<state>.<stamp>.manifest.json")
    try:
        d = orjson.loads(fsafe.read_capped(path, MANIFEST_CAP))
    except SamctlError as exc:
        raise bad(exc.message) from None
    except orjson.JSONDecodeError as exc:
        raise bad(f"not valid JSON: {str(exc)[:120]}") from None
    try:
        if d.get("samctl_attic") != MANIFEST_VERSION:
            raise ValueError(f"unknown manifest version {d.get('samctl_attic')!r}")
        cid, state, _ = parsed
        if d["id"] != cid or d["state"] != state or not store.valid_id(cid):
            raise ValueError("id or state differs from the file name, or the id breaks the store's rule")
        if d["store"] != store.name:
            raise ValueError(f"written for a {d['store']} store, this is a {store.name} store")
        tar = d["tar"]
        if tar["name"] != stem + TAR_SUFFIX:
            raise ValueError("names another archive")
        members = []
        for m in d["members"]:
            mem = Member(m["name"], m["type"], int(m["size"]), m["sha256"], int(m["mode"]), int(m["mtime_ns"]))
            if mem.type not in ("file", "dir") or not 0 <= mem.size <= ABSOLUTE_CAP or not 0 <= mem.mode <= 0o7777:
                raise ValueError(f"member {str(mem.name)[:60]!r} has a bad type, size or mode")
            if not safe_member_name(mem.name, cid, store.name):
                raise ValueError(f"member name {str(mem.name)[:60]!r} is not a plain name inside the conversation")
            if mem.type == "file" and not (isinstance(mem.sha256, str) and len(mem.sha256) == 64):
                raise ValueError(f"member {mem.name} has no sha256")
            members.append(mem)
        if len({m.name for m in members}) != len(members) or not members:
            raise ValueError("members are missing or repeated")
        if not 0 <= int(tar["size"]) <= ABSOLUTE_CAP:
            raise ValueError("the archive's recorded size is out of range")
        known = {"samctl_attic", "id", "state", "when", "when_ts", "store", "from", "title", "tar", "members"}
        return Entry(stem=stem, id=cid, state=state, when=str(d["when"]), when_ts=float(d["when_ts"]),
                     store=d["store"], origin=str(d["from"]), title=d.get("title"), members=members,
                     tar_size=int(tar["size"]), tar_sha256=str(tar["sha256"]), attic=path.parent,
                     level=int(tar.get("level", LEVEL)), extra={k: v for k, v in d.items() if k not in known})
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise bad(f"not a samctl attic manifest: {str(exc)[:160]}") from None


def list_entries(store, findings: list, states=STATES) -> list[Entry]:
    """Every committed entry, oldest first; a finding for each manifest or archive that is not right.

    Cheap checks only (the manifest parses, the archive exists with the
    recorded size); ``verify`` decompresses and checks every hash.
    """
    attic = attic_dir(store)
    st = fsafe.lstat(attic)
    if st is None:
        return []
    if stat.S_ISLNK(st.st_mode) or not stat.S_ISDIR(st.st_mode):
        findings.append(Finding("attic-unsafe", str(attic), f"is {fsafe.describe_mode(st.st_mode)}, not samctl's "
                                "attic folder: not read (samctl never follows a link there)"))
        return []
    try:
        names = os.listdir(attic)
    except OSError as exc:
        findings.append(Finding("attic-unreadable", str(attic), f"cannot list the attic: {exc.strerror}"))
        return []
    entries = []
    tars = {n[: -len(TAR_SUFFIX)] for n in names if n.endswith(TAR_SUFFIX)}
    stems = set()
    for n in sorted(names):
        if not n.endswith(MANIFEST_SUFFIX):
            continue
        stems.add(n[: -len(MANIFEST_SUFFIX)])
        try:
            e = load_manifest(store, attic / n)
        except AtticProblem as exc:
            findings.extend(exc.findings)
            continue
        st = fsafe.lstat(e.tar_path)
        if st is None:
            findings.append(_finding(e, "attic-missing", "the manifest's archive is missing"))
            continue
        if not stat.S_ISREG(st.st_mode) or st.st_size != e.tar_size:
            findings.append(_finding(e, "attic-tampered", f"the archive is {st.st_size} bytes, the manifest says "
                                                          f"{e.tar_size}"))
            continue
        for p, pst in ((e.tar_path, st), (e.manifest_path, fsafe.lstat(e.manifest_path))):
            why = fsafe.mode_problem(pst) if pst is not None else None
            if why:  # the attic holds whole conversations: it must stay private
                findings.append(Finding("attic-mode", str(p), why, WARNING, e.id))
        if e.state in states:
            entries.append(e)
    journal = attic / JOURNAL
    for stem in sorted(tars - stems):
        pending = fsafe.lstat(journal / (stem + ".json")) is not None
        findings.append(Finding("attic-incomplete", str(attic / (stem + TAR_SUFFIX)),
                                "an archive without a manifest, left by an interrupted move; "
                                "`samctl attic --repair` removes it", WARNING if pending else WARNING))
    entries.sort(key=lambda e: (e.when_ts, e.stem))
    return entries


def drop(entry: Entry) -> None:
    """Remove an entry: the manifest first (the entry stops existing), then its archive."""
    fsafe.remove(entry.manifest_path)
    fsafe.remove(entry.tar_path)
    fsafe.fsync_dir(entry.attic)


def attic_ids(store, states=("deleted", "archived")) -> list[str]:
    return sorted({e.id for e in list_entries(store, [], states)})
