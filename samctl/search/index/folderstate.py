"""The state of many folders as one digest; the folders packed for ``checked``'s record; and a script
that tells whether a record's folders still have the digest it saved.

``checked`` runs this file as ``python -I -S -B folderstate.py`` to state 10,000 SAM conversation
folders on the other core while the search ranks (in a thread of the search, each ``stat`` waited for
its turn of the GIL against the ranking).  It answers each record's path written to its stdin
(``serve``), so a process that searches again starts no interpreter.  It imports nothing of samctl,
and only modules built into the interpreter (``posix`` rather than ``os``, ``_stat``, ``_operator``)
and ``_blake2``: its start is on the first search's path (``os`` and what it imports took 1.6 ms of
it).  ``checked`` uses its ``digest`` and ``pack``/``unpack``: one definition.

The record (``checked``): one line of JSON (its head: no raw newline, as orjson writes it), then the
packed folders, NUL-separated (a path holds no NUL): the digest, then for each parent folder the count
of its names, the parent and the names, as the file system's bytes.
"""

import posix
import sys
from _operator import attrgetter
from _stat import S_ISREG

try:
    from _blake2 import blake2b  # (what hashlib.blake2b is, without loading OpenSSL)
except ImportError:  # pragma: no cover - a Python built without it
    from hashlib import blake2b

RECORD_CAP = 1 << 30  # bytes: as ``checked.recent`` reads the record


def digest(groups: list) -> str:
    """One digest of the state (mtime, ctime, inode, size) of every folder of ``groups`` = [[parent,
    [name, ...]], ...] (str or bytes), in order: each parent's names are stated through one descriptor
    of it (looked up there alone, not along the whole path), as ``lstat`` would (the last name not
    followed).  A folder that cannot be stated counts as "-"."""
    h = blake2b(digest_size=16)
    get = attrgetter("st_mtime_ns", "st_ctime_ns", "st_ino", "st_size")
    for parent, names in groups:
        try:
            fd = posix.open(parent, posix.O_RDONLY | posix.O_DIRECTORY | getattr(posix, "O_CLOEXEC", 0))
        except OSError:
            h.update(b"-" * len(names))
            continue
        try:
            for name in names:
                try:
                    h.update(b"%d:%d:%d:%d;" % get(posix.stat(name, dir_fd=fd, follow_symlinks=False)))
                except OSError:
                    h.update(b"-")
        finally:
            posix.close(fd)
        h.update(b"/")
    return h.hexdigest()


def pack(saved: str, groups: list) -> bytes:
    """``saved`` (a digest) and ``groups`` (str, as ``checked._folders`` makes them) in the record's form."""
    code, errors = sys.getfilesystemencoding(), sys.getfilesystemencodeerrors()  # (as os.fsencode)
    tokens = [saved.encode("ascii")]
    for parent, names in groups:
        tokens += [b"%d" % len(names), parent.encode(code, errors), *(n.encode(code, errors) for n in names)]
    return b"\0".join(tokens)


def unpack(body: bytes) -> tuple[str, list]:
    """(digest, groups of bytes) of a packed record body; ValueError if it is not one."""
    tokens = body.split(b"\0")
    out, i = [], 1
    while i < len(tokens):
        if not tokens[i].isdigit():
            raise ValueError("not packed folders")
        n = int(tokens[i])
        names = tokens[i + 2 : i + 2 + n]
        if n < 1 or len(names) != n or not all(names):
            raise ValueError("not packed folders")
        out.append([tokens[i + 1], names])
        i += 2 + n
    if not out:
        raise ValueError("no folders")
    return tokens[0].decode("ascii"), out


def answer(record: bytes) -> str:
    """The line "1 DIGEST" when the folders of the record at ``record`` have the digest DIGEST it saved, else
    "0 DIGEST", or "0" when the record cannot be read: the caller compares DIGEST with the one it read
    (the record may have been replaced since)."""
    try:
        # (never through a link; a FIFO put in its place neither blocks the open nor is read)
        flags = posix.O_RDONLY | posix.O_NOFOLLOW | posix.O_NONBLOCK | getattr(posix, "O_CLOEXEC", 0)
        fd = posix.open(record, flags)
        try:
            st = posix.fstat(fd)
            if not S_ISREG(st.st_mode) or st.st_size > RECORD_CAP:
                raise ValueError("not a regular file, or too big")
            raw = posix.read(fd, st.st_size)  # (its size, not the cap: a buffer of the cap is a GiB)
        finally:
            posix.close(fd)
        saved, groups = unpack(raw.partition(b"\n")[2])
        return ("1 " if digest(groups) == saved else "0 ") + saved
    except (OSError, ValueError, IndexError):
        pass
    return "0"


def serve(fd_in: int = 0, fd_out: int = 1) -> int:
    """Answer the requests read from ``fd_in`` until it ends, one line each on ``fd_out``.  A request is
    the folder the record's relative paths are from and the record's path, each ended by a NUL: a
    process that asks again may have changed its folder since this one started."""
    pending = b""
    while chunk := posix.read(fd_in, 1 << 16):
        pending += chunk
        while pending.count(b"\0") >= 2:
            here, record, pending = pending.split(b"\0", 2)
            try:
                posix.chdir(here)
                said = answer(record)
            except OSError:
                said = "0"
            posix.write(fd_out, said.encode("ascii") + b"\n")  # (under PIPE_BUF: written whole)
    return 0


if __name__ == "__main__":
    sys.exit(serve())
