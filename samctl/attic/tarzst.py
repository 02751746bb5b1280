"""The tar.zst of one attic entry: written from a conversation's files (reading it back: ``tarscan``).

What it writes is a POSIX tar (PAX format, as ``tarfile`` writes it: owner 0, no
names, whole-second mtimes, members named relative to the store's conversations
folder) compressed as one zstd frame.  ``Member`` is what a manifest records of each
member.  ``attic/entries.py`` decides where archives go and when they count; this
module only makes them, and holds what making and reading share (names, hashing,
the zstd contexts, the helper thread); ``attic/tarscan.py`` reads and checks them.

Invariants:
- A conversation up to ``SMALL`` bytes is read whole (one read per file), its tar
  built in memory (byte for byte what ``tarfile`` would stream), compressed in
  one call and decompressed again to check it (``build``: it only reads, so it may
  run in a worker process); a bigger one is streamed.  A file that changes while
  it is read raises ``FileChanged``.  (The file is then checked by
  ``tarscan.check_written``.)
- ``zstandard`` and ``tarfile`` are imported only inside the functions that need them.
"""

from __future__ import annotations

import _thread
import hashlib
import os
import stat
import threading
from dataclasses import dataclass
from pathlib import Path

from samctl.errors import FileProblem, UnsafePath
from samctl.fs import filemodes, reading, safepaths, writing
from samctl.stores import store_class

CHUNK = 1 << 20  # reads and writes of big members and streams
_WINDOW_CAP = 1 << 27  # refuse zstd frames asking for more than 128 MiB of window
_THREAD_MIN = 4 << 20  # members at least this big are hashed on a helper thread
SMALL = 8 << 20  # conversations up to this size are archived in memory (one read each, one compression)


@dataclass(slots=True)
class Member:
    """What a manifest records of one tar member (its name relative to the conversations folder)."""

    name: str
    type: str  # "file" or "dir"
    size: int
    sha256: str | None
    mode: int
    mtime_ns: int

    def to_dict(self) -> dict:
        return {
            "name": self.name,
            "type": self.type,
            "size": self.size,
            "sha256": self.sha256,
            "mode": self.mode,
            "mtime_ns": self.mtime_ns,
        }


# --- names ------------------------------------------------------------------------


def member_name(store, p) -> str:
    """The name of ``p`` (a file or folder under the store) in a tar: relative to the conversations folder."""
    sp, conv = str(p), str(store.conv_dir) + "/"
    return sp[len(conv) :] if sp.startswith(conv) else Path(p).relative_to(store.conv_dir).as_posix()


def safe_member_name(name, cid: str, store_name: str) -> bool:
    """True if ``name`` is a plain relative path that can only belong to conversation ``cid``: its first
    component is ``cid`` byte for byte (a case or Unicode variant would restore a second folder)."""
    if not isinstance(name, str) or not name or len(name) > 1024 or "\\" in name or "\0" in name:
        return False
    parts = name.split("/")
    if name.startswith("/") or len(parts) > 16 or any(p in ("", ".", "..") for p in parts):
        return False
    try:
        for p in parts:
            safepaths.check_component(p)
    except UnsafePath:
        return False
    return store_class(store_name).member_belongs(parts, cid)


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


class HashReader:
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


class Sha256:
    """sha256 that hashes big inputs on a helper thread, overlapping (de)compression on another core.

    hashlib releases the GIL for large updates, and so does zstandard, so the
    two run in parallel; small members are hashed inline.
    """

    def __init__(self, size: int):
        self.h = hashlib.sha256()
        self.q = None
        if size >= _THREAD_MIN:
            import queue  # (lazy: queue: not loaded by ls or --help)

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


class FileChanged(Exception):
    """A file changed while it was read into a tar (its path is the message)."""


_helper = None


def helper():
    """The process's one helper thread (an executor), for work that releases the GIL (hashing,
    reading) while the caller's thread decompresses or writes: started once, reused."""
    global _helper
    if _helper is None:
        import concurrent.futures  # (lazy: concurrent: not loaded by ls or --help)

        _helper = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="samctl-helper")
    return _helper


def _forget_helper() -> None:
    global _helper
    _helper = None  # a forked child has no thread behind the parent's executor: it starts its own


os.register_at_fork(after_in_child=_forget_helper)


_contexts: dict = {}


def _context(key, make):
    """The calling thread's zstd context ``key``, made on its first use and kept for the process: a
    fresh one costs its tables' allocation and page faults, several times the compression of a small
    chat.  One per thread: a zstandard context used by two threads at once corrupts its output, and
    work moves between the caller's thread and the helper's as it is tuned."""
    key = (key, _thread.get_ident())
    if key not in _contexts:
        _contexts[key] = make()
    return _contexts[key]


def compressor(level: int, threads: int):
    import zstandard  # (lazy: zstandard: slow to import)

    return _context(("c", level, threads), lambda: zstandard.ZstdCompressor(level=level, threads=threads))


def decompressor():
    import zstandard  # (lazy: zstandard: slow to import)

    return _context("d", lambda: zstandard.ZstdDecompressor(max_window_size=_WINDOW_CAP))


@dataclass
class Written:
    """What ``write`` wrote: the members, the archive's size and sha256, and (built in
    memory) the compressed bytes, to check the file against.  ``tar`` is the tar they
    decompress to, or None once ``build`` has checked that they do."""

    members: list
    size: int
    sha256: str
    compressed: bytes | None = None
    tar: bytes | None = None


def build(store, paths: list, level: int) -> Written:
    """The tar.zst of ``paths`` built in memory, nothing written: compressed in one call, then
    decompressed again and compared with the tar (which is then let go: ``tar`` None), or, should
    that fail, with ``tar`` kept for ``tarscan.check_written`` to say what is wrong.  Reads only:
    lifecycle runs it in worker processes for many small conversations."""
    members, tar = tar_in_memory(store, paths)
    compressed = compressor(level, 0).compress(tar)
    w = Written(members, len(compressed), hashlib.sha256(compressed).hexdigest(), compressed, tar)
    import zstandard  # (lazy: zstandard: slow to import)

    try:
        if decompressor().decompress(compressed, max_output_size=len(tar)) == tar:
            w.tar = None
    except zstandard.ZstdError:
        pass
    return w


def write(store, paths: list, f, level: int, in_memory: bool, total: int, built: Written | None = None) -> Written:
    """Write the tar.zst of ``paths`` (files and folders under the store, ``total`` bytes) to the
    open file ``f``: built in memory (``build``, or ``built`` if given; ``f`` unbuffered), or streamed."""
    if not in_memory:
        return Written(*tar_streamed(store, paths, f, level, total))
    w = built or build(store, paths, level)
    writing.write_all(f, w.compressed)
    return w


def tar_streamed(store, paths: list, f, level: int, total: int | None = None) -> tuple[list, int, str]:
    """Stream the tar of ``paths`` through zstd into ``f``: (members, compressed size, its sha256).
    ``total``: their size, if the caller has it."""
    import tarfile  # (lazy: tarfile: not loaded by ls or --help)

    if total is None:
        total = sum(st.st_size for st in (filemodes.lstat(p) for p in paths) if st is not None)
    threads = -1 if total >= _THREAD_MIN * 2 else 0  # big inputs: every core, like `zstd -T0`
    hw = _HashWriter(f)
    zw = compressor(level, threads).stream_writer(hw, closefd=False)
    members = []
    with tarfile.open(fileobj=zw, mode="w|", format=tarfile.PAX_FORMAT, bufsize=CHUNK, copybufsize=CHUNK) as tf:
        for p in paths:
            members.append(_add(tf, store, Path(p)))
    zw.close()
    return members, hw.n, hw.h.hexdigest()


def tar_in_memory(store, paths: list) -> tuple[list, bytes]:
    """The tar of ``paths``, byte for byte what ``tar_streamed`` would compress: (members, tar)."""
    import tarfile  # (lazy: tarfile: not loaded by ls or --help)

    parts, members = [], []
    offset = 0
    for p in paths:
        sp = str(p)
        rel = member_name(store, p)
        try:
            f, st = reading.open_regular(sp)
        except FileProblem as exc:
            st = filemodes.lstat(sp)
            if exc.code != "not-regular" or st is None or not stat.S_ISDIR(st.st_mode):
                raise
            f = None  # a folder (SAM's conversation folder) is a member too
        mode, mtime = stat.S_IMODE(st.st_mode), int(st.st_mtime)
        if f is None:
            data, typeflag = b"", tarfile.DIRTYPE
            members.append(Member(rel, "dir", 0, None, mode, st.st_mtime_ns))
        else:
            try:
                data = read_exactly(f, st.st_size)
                after = os.fstat(f.fileno())
            finally:
                f.close()
            if len(data) != st.st_size or (after.st_size, after.st_mtime_ns) != (st.st_size, st.st_mtime_ns):
                raise FileChanged(sp)
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
    if len(name) > 100 or not name.isascii() or not (0 <= size < 8**11 and 0 <= mtime < 8**11):
        return None
    h = b"".join(
        (
            name.encode("ascii").ljust(100, b"\0"),
            b"%07o\0" % (mode & 0o7777),
            b"0000000\0" * 2,
            b"%011o\0%011o\0        " % (size, mtime),
            typeflag,
            _USTAR_TAIL,
        )
    )
    return h[:148] + b"%06o\0 " % sum(h) + h[156:]  # the checksum counts its own field as spaces


def read_exactly(f, n: int) -> bytes:
    """Up to ``n`` bytes of ``f`` (fewer only at its end), in as few reads as the kernel allows."""
    chunks = []
    while n > 0:
        b = f.read(n)
        if not b:
            break
        chunks.append(b)
        n -= len(b)
    return chunks[0] if len(chunks) == 1 else b"".join(chunks)


def _tarinfo(store, p: Path):
    """(TarInfo, lstat) of a file or folder of the store, as the tar records it: no owner, whole seconds."""
    import tarfile  # (lazy: tarfile: not loaded by ls or --help)

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
    f, st = reading.open_regular(p)
    try:
        ti.size = st.st_size
        ti.mode = stat.S_IMODE(st.st_mode)
        ti.mtime = int(st.st_mtime)
        r = HashReader(f, st.st_size, Sha256(st.st_size))
        try:
            tf.addfile(ti, r)
        finally:
            r.h.close()
        after = os.fstat(f.fileno())
    finally:
        f.close()
    if r.n != st.st_size or (after.st_size, after.st_mtime_ns) != (st.st_size, st.st_mtime_ns):
        raise FileChanged(str(p))
    return Member(rel, "file", st.st_size, r.h.hexdigest(), ti.mode, st.st_mtime_ns)
