"""Reading an attic entry's tar.zst back, every byte checked against its manifest.

Invariants:
- ``check_written``: an archive just written (``tarzst.write``) must read back as
  written: byte for byte (``tarzst.build`` has checked those bytes decompress to the
  tar it built), or, streamed, every member checked again by ``scan``.
- ``scan``: the compressed bytes must match the manifest's size and sha256 before
  anything is decompressed; every member must be a regular file or folder named
  exactly as in the manifest (no absolute names, no ``..``, no links or devices), of
  the manifest's size and sha256; the decompressed stream is capped at what the
  manifest accounts for (and ``ABSOLUTE_CAP``), so a decompression bomb stops early.
  A tar laid out exactly as samctl writes it is read straight from memory
  (``plain_layout``), or, too big for memory, as a stream (``_scan_plain_stream``);
  anything else goes through ``tarfile``, which says what is wrong.  Problems are
  findings, one per problem; nothing is raised for them.
- ``zstandard`` and ``tarfile`` are imported only inside the functions that need them.
"""

from __future__ import annotations

import hashlib
import io
import os

from samctl.attic.entry import Entry
from samctl.attic.tarzst import (
    CHUNK,
    HashReader,
    Member,
    Sha256,
    Written,
    decompressor,
    helper,
    read_exactly,
    safe_member_name,
)
from samctl.errors import SamctlError
from samctl.fs import reading
from samctl.model import ERROR, Finding

PARALLEL_HASH = 256 << 10  # a tar this big is hashed on a helper thread while its files are written
READ_WHOLE = 32 << 20  # archives up to this size are read whole on restore (one read, checked in memory) ...
IN_MEMORY = 32 << 20  # ... and decompressed in memory if their manifest accounts for at most this
ABSOLUTE_CAP = 64 << 30  # never decompress more than this, whatever a manifest says
DECOMPRESS_AHEAD = 8 << 20  # restore decompresses an entry ahead of time if it accounts for at most this


def check_written(entry: Entry, w: Written) -> list:
    """Findings unless the archive file reads back as ``w`` was written: byte for byte, those
    bytes decompressing to the tar built in memory (checked by ``tarzst.build``, or here if
    it kept the tar), or, streamed, every member checked again."""
    return read_back(entry, w.compressed, w.tar) if w.compressed is not None else scan(entry, None)


def read_back(entry: Entry, compressed: bytes, tar: bytes | None) -> list:
    """Findings unless the archive file holds ``compressed`` and (unless ``tar`` is None: that
    was checked where they were made) that decompresses to ``tar``."""
    import zstandard  # (lazy: zstandard: slow to import)

    try:
        back = reading.read_capped(entry.tar_path, len(compressed))
    except SamctlError as exc:
        return [finding(entry, "attic-missing", exc.message)]
    if back != compressed:
        return [finding(entry, "attic-tampered", "the archive on disk is not the bytes written")]
    if tar is None:
        return []
    try:
        ok = decompressor().decompress(back, max_output_size=len(tar)) == tar
    except zstandard.ZstdError as exc:
        return [finding(entry, "attic-corrupt", f"cannot read the archive back: {str(exc)[:160]}")]
    return [] if ok else [finding(entry, "attic-corrupt", "the archive does not decompress to the tar written")]


class _Capped:
    """A reader that refuses to yield more than ``cap`` bytes (the decompression-bomb guard)."""

    def __init__(self, f, cap: int):
        self.f = f
        self.cap = cap
        self.n = 0

    def read(self, n: int = -1) -> bytes:
        if n is None or n < 0:
            n = CHUNK
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


def finding(entry: Entry, code: str, reason: str, severity: str = ERROR) -> Finding:
    return Finding(code, str(entry.tar_path), reason, severity, entry.id)


def read_archive(entry: Entry):
    """``(data, size, sha256)`` of the entry's archive as it is on disk: a small one is read whole
    (``data``: its bytes); a big one is hashed, and ``data`` is the file it was hashed from, opened
    and back at its start, so that what is decompressed is what was hashed, whatever replaces the
    name meanwhile; ``(None, -1, "")`` if it is bigger than it may be.  Raises SamctlError if it
    cannot be read.  (Restore reads the next entry's while it extracts one: the hashing of one
    overlaps the decompression of the other.)"""
    try:
        if entry.tar_size <= READ_WHOLE:
            data = reading.read_capped(entry.tar_path, entry.tar_size)
            return data, len(data), hashlib.sha256(data).hexdigest()
        f, _ = reading.open_regular(entry.tar_path)
        try:
            n, digest = reading.sha256_of_file(f)
            f.seek(0)
        except BaseException:
            f.close()
            raise
        return f, n, digest
    except SamctlError as exc:
        if getattr(exc, "code", None) != "too-large":
            raise
        return None, -1, ""


def read_ahead(entry: Entry):
    """``read_archive(entry)`` and, fourth, the tar it decompresses to, or None: decompressed only
    once the archive is known to match its manifest, and only if that accounts for at most
    ``DECOMPRESS_AHEAD`` bytes (restore's helper thread calls this for the entries after the
    one being written: a bound on what waits in memory)."""
    data, n, digest = read_archive(entry)
    tar = None
    if isinstance(data, bytes) and (n, digest) == (entry.tar_size, entry.tar_sha256):
        cap = decompressed_cap(entry)
        if cap <= DECOMPRESS_AHEAD:
            import zstandard  # (lazy: zstandard: slow to import)

            try:
                tar = _decompress_whole(data, cap)
            except zstandard.ZstdError:
                pass  # scan decompresses it again and says what is wrong
    return data, n, digest, tar


def scan(
    entry: Entry, sink, absolute_cap: int = ABSOLUTE_CAP, check_tar_first: bool = False, archive=None, undo=None
) -> list:
    """Decompress ``entry`` and check every member against the manifest; findings for each problem.

    ``sink(member, ti, chunks)`` (if given) receives each member's content as an
    iterator of chunks; it must consume it. Reading stops at the first problem.
    ``archive`` is ``read_archive(entry)`` or ``read_ahead(entry)`` if the caller has
    it already (or the exception it raised).  ``undo()`` (if given with a sink) removes what the
    sink made: a big tar is then first read by ``_scan_plain_stream``, and read
    again with ``tarfile`` (after ``undo``) if it is not laid out as samctl writes.
    """
    import tarfile  # (lazy: tarfile: not loaded by ls or --help)

    import zstandard  # (lazy: zstandard: slow to import)

    if sum(m.size for m in entry.members) > absolute_cap:
        return [
            finding(
                entry,
                "attic-too-large",
                f"the manifest claims {entry.original_size} bytes, over the {absolute_cap}-byte cap: not decompressed",
            )
        ]
    data = ready = None  # a small archive is read once, whole, and checked and decompressed from memory
    ahead: list = []  # (what read_ahead gave beyond read_archive)
    if check_tar_first:
        try:
            if archive is None:
                archive = read_archive(entry)
            elif isinstance(archive, BaseException):  # what reading it ahead raised: as if raised here
                raise archive
        except SamctlError as exc:
            return [finding(entry, "attic-missing", exc.message)]
        data, n, digest, *ahead = archive
        ready = ahead[0] if ahead else None  # decompressed by read_ahead
        if (n, digest) != (entry.tar_size, entry.tar_sha256):
            if data is not None and not isinstance(data, bytes):
                data.close()
            return [
                finding(
                    entry,
                    "attic-tampered",
                    "the compressed archive does not match its manifest's size and sha256: not decompressed",
                )
            ]
    try:
        # (a big archive checked first: the file it was hashed from)
        f = io.BytesIO(data) if isinstance(data, bytes) else data or reading.open_regular(entry.tar_path)[0]
    except SamctlError as exc:
        return [finding(entry, "attic-missing", exc.message)]
    want = {m.name: m for m in entry.members}
    seen: set[str] = set()
    problems: list = []
    cap = decompressed_cap(entry, absolute_cap)
    try:
        # checked first: the archive matched already, so its bytes are not hashed a second time
        hr = f if check_tar_first else HashReader(f)

        def stream():
            return _Capped(decompressor().stream_reader(hr, read_size=CHUNK, read_across_frames=True), cap)

        if isinstance(data, bytes) and cap <= IN_MEMORY:
            tar = ready if ready is not None and len(ready) <= cap else _decompress_whole(data, cap)
            if tar is None:
                tar = _read_all(stream())
            if plain_layout(tar, entry.members):
                # (an archive read ahead: the helper is busy with the next ones, the hashing stays here)
                return _scan_plain(entry, tar, sink, helper_hashes=not ahead)
            raw = io.BytesIO(tar)  # not samctl's plain layout: the general reader below says what is wrong
        else:
            raw = stream()
            if check_tar_first and (sink is None or undo is not None):
                found = _scan_plain_stream(entry, raw, sink)
                if found is not None:
                    return found
                if sink is not None:
                    undo()
                # read it again from the start, with tarfile: the same file (a new descriptor on it)
                again = io.BytesIO(data) if isinstance(data, bytes) else os.fdopen(os.dup(f.fileno()), "rb", 0)
                f.close()
                f = hr = again
                f.seek(0)
                raw = stream()
        with tarfile.open(fileobj=raw, mode="r|", bufsize=CHUNK) as tf:
            for ti in tf:
                why = _member_problem(entry, ti, want, seen)
                if why:
                    problems.append(finding(entry, why[0], why[1]))
                    break
                seen.add(ti.name)
                m = want[ti.name]
                if m.type == "dir":
                    if sink is not None:
                        sink(m, ti, iter(()))
                    continue
                h = Sha256(m.size)
                src = tf.extractfile(ti)

                def chunks(src=src, h=h):
                    left = m.size
                    while left > 0:
                        b = src.read(min(CHUNK, left))
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
                    problems.append(
                        finding(entry, "attic-tampered", f"{m.name}: content does not match the manifest's sha256")
                    )
                    break
        if not problems:
            missing = sorted(set(want) - seen)
            if missing:
                problems.append(
                    finding(entry, "attic-incomplete", f"members missing from the archive: {', '.join(missing[:5])}")
                )
        if not problems and not check_tar_first:
            while hr.read(CHUNK):
                pass
            if (hr.n, hr.h.hexdigest()) != (entry.tar_size, entry.tar_sha256):
                problems.append(
                    finding(
                        entry, "attic-tampered", "the compressed archive does not match its manifest's size and sha256"
                    )
                )
    except _Bomb:
        problems.append(
            finding(
                entry,
                "attic-bomb",
                f"decompresses to more than the {cap} bytes its manifest accounts for: refused (a decompression bomb?)",
            )
        )
    except _Mismatch as exc:
        problems.append(finding(entry, "attic-tampered", f"{exc}: content does not match the manifest's sha256"))
    except (tarfile.TarError, zstandard.ZstdError, EOFError, OSError, ValueError) as exc:
        problems.append(finding(entry, "attic-corrupt", f"cannot read the archive: {str(exc)[:160]}"))
    finally:
        f.close()
    return problems


def _decompress_whole(data: bytes, cap: int) -> bytes | None:
    """The content of ``data`` in one call, when it is one zstd frame whose header declares a size
    within ``cap`` (zstd holds a frame to its declared size, so that bounds the memory); else None."""
    import zstandard  # (lazy: zstandard: slow to import)

    try:
        size = zstandard.frame_content_size(data)
    except zstandard.ZstdError:
        return None
    if not 0 <= size <= cap:
        return None
    obj = decompressor().decompressobj()
    out = obj.decompress(data)
    return out if obj.eof and not obj.unused_data and len(out) == size else None


def _read_all(reader) -> bytes:
    chunks = []
    while True:
        b = reader.read(CHUNK)
        if not b:
            return b"".join(chunks)
        chunks.append(b)


def plain_layout(tar: bytes, members: list) -> bool:
    """True if ``tar`` is laid out exactly as samctl writes the tar of ``members``: in the
    manifest's order, one plain ustar header each (a regular file or a folder, named and
    sized as the manifest says, with a valid checksum, no PAX or GNU extension), the
    data, and nothing but zeros after the last member.  Anything else, the general
    reader handles (and reports)."""
    off = 0
    for m in members:
        if not _plain_header(tar[off : off + 512], m):
            return False
        size = 0 if m.type == "dir" else m.size
        off += 512 + size + (-size % 512)
    return len(tar) >= off + 1024 and tar.count(0, off) == len(tar) - off


def _plain_header(h: bytes, m: Member) -> bool:
    """True if ``h`` is the plain ustar header samctl writes for ``m`` (see ``plain_layout``)."""
    name = (m.name + "/" if m.type == "dir" else m.name).encode("utf-8", "surrogateescape")
    if (
        len(h) != 512
        or len(name) > 100
        or h[:100] != name.ljust(100, b"\0")
        or h[156:157] != (b"5" if m.type == "dir" else b"0")
        or h[257:265] != b"ustar\x0000"
        or h.count(0, 345, 500) != 155
    ):  # no prefix
        return False
    size = 0 if m.type == "dir" else m.size
    try:
        if h[124:136] != b"%011o\0" % size and int(h[124:136].strip(b"\0 ") or b"0", 8) != size:
            return False
        if _stamp_problem(m, int(h[100:108].strip(b"\0 ") or b"0", 8), int(h[136:148].strip(b"\0 ") or b"0", 8)):
            return False  # (the general reader says what is wrong)
        return int(h[148:156].strip(b"\0 "), 8) == sum(h) - sum(h[148:156]) + 256  # the field counts as spaces
    except ValueError:
        return False


def _stamp_problem(m: Member, mode: int, mtime: float) -> str | None:
    """Why the manifest's mode or mtime of ``m`` is not what its tar header says, or None.  The
    manifest may have fewer mode bits (pack drops setuid and the like), never more; the header's
    mtime is whole seconds."""
    if m.mode & ~mode & 0o7777:
        return f"the manifest gives it mode {m.mode:o}, wider than the archive's {mode & 0o7777:o}"
    if abs(m.mtime_ns / 1e9 - mtime) > 1:
        return "the manifest's mtime is not the archive's"
    return None


def _scan_plain(entry: Entry, tar: bytes, sink, helper_hashes: bool = True) -> list:
    """``_scan`` of a tar that ``plain_layout`` accepted: each member's data is hashed and sunk.

    Small tars are hashed member by member before each is sunk.  In a big one the
    hashing runs on a helper thread while the files are written (both release the
    GIL), unless ``helper_hashes`` is false (the helper is busy reading ahead); a
    mismatch is then found after the writing, and ``unpack`` removes what it
    wrote, as it does for the general reader.
    """
    view = memoryview(tar)
    spans, off = [], 0
    for m in entry.members:
        off += 512
        spans.append((m, view[off : off + m.size]))
        off += m.size + (-m.size % 512)
    digests = None
    if sink is not None and helper_hashes and len(tar) >= PARALLEL_HASH:
        digests = helper().submit(
            lambda: [hashlib.sha256(d).hexdigest() if m.type == "file" else None for m, d in spans]
        )
    for m, data in spans:
        if digests is None and m.type == "file" and hashlib.sha256(data).hexdigest() != m.sha256:
            return [finding(entry, "attic-tampered", f"{m.name}: content does not match the manifest's sha256")]
        if sink is not None:
            sink(m, None, iter((data,) if m.type == "file" else ()))
    if digests is not None:
        for (m, _), digest in zip(spans, digests.result()):
            if m.type == "file" and digest != m.sha256:
                return [finding(entry, "attic-tampered", f"{m.name}: content does not match the manifest's sha256")]
    return []


def _scan_plain_stream(entry: Entry, raw, sink):
    """``scan`` of a big tar read as a stream, while it is laid out as samctl writes it: each
    member's header checked by ``_plain_header`` and its data sunk in chunks as they come
    (hashed on a helper thread), without ``tarfile``'s buffering.  The findings, or None as
    soon as the tar is not laid out so (members before it may have been sunk): the caller
    then reads it again with ``tarfile``.  After the last member, an all-zero, short or
    missing block ends the tar as it does for ``tarfile``; anything else is left to it."""
    for m in entry.members:
        if not _plain_header(read_exactly(raw, 512), m):
            return None
        if m.type == "dir":
            if sink is not None:
                sink(m, None, iter(()))
            continue
        h = Sha256(m.size)
        state = {"short": False}

        def chunks(m=m, h=h):
            left = m.size
            while left > 0:
                b = raw.read(min(CHUNK, left))
                if not b:
                    state["short"] = True
                    return
                left -= len(b)
                h.update(b)
                yield b

        try:
            if sink is not None:
                sink(m, None, chunks())
            else:
                for _ in chunks():
                    pass
        finally:
            h.close()
        if state["short"]:
            return None
        if h.hexdigest() != m.sha256:
            return [finding(entry, "attic-tampered", f"{m.name}: content does not match the manifest's sha256")]
        if len(read_exactly(raw, -m.size % 512)) != -m.size % 512:
            return None
    end = read_exactly(raw, 512)
    return [] if len(end) < 512 or not end.strip(b"\0") else None


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
    why = _stamp_problem(m, ti.mode, ti.mtime)
    if why:
        return "attic-tampered", f"member {name}: {why}"
    return None
