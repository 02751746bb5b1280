"""The one small module every byte samctl reads or writes goes through.

Invariants:
- A name joined onto a root is a single path component: no ``/``, ``\\``, NUL,
  ``.`` or ``..``; callers validate ids against their store's rule first.
- Reads never follow a symlink at the last component (``O_NOFOLLOW``), never
  block on a FIFO (``O_NONBLOCK``), refuse anything that is not a regular file,
  and refuse files larger than the cap *before* reading them.
- Writes go to a temp sibling named ``.<name>.<pid>.<n>.tmp`` (the name
  mermaid's own sweeper knows), are fsynced, renamed over the target, and the
  directory is fsynced.  Files are created 0600, directories 0700.
- Inside ``sync_batch()`` (Linux), those fsyncs are deferred to the batch's
  ``barrier()``, one ``syncfs`` for everything written since: a move of many
  conversations pays for durability a few times, not a dozen times each.
  Until a barrier, writes in a batch may reach the disk in any order.
  A worker process writing for a batch of its parent's (``synced_by_parent``)
  leaves its fsyncs to the parent's barriers: a ``syncfs`` of a file system
  writes out every process's writes on it, and the parent notes the folders.

Documented exceptions (raw ``os`` calls elsewhere): ``cli/__init__._to_devnull`` opens /dev/null; SQLite
files are opened by ``stores/sqlite.py`` (and new ones created by ``stores/sam`` ``create_*_db``).
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import itertools
import os
import stat
import sys
import time
from pathlib import Path

from samctl.errors import FileProblem, UnsafePath

MIB = 1 << 20
SNAPSHOT_CAP = 64 * MIB  # mermaid's own snapshot cap (67,108,864 bytes)
LOG_CAP = 128 * MIB  # mermaid's own event-log cap (134,217,728 bytes)
STALE_TMP_SECONDS = 3600  # mermaid's sweeper rule

FILE_MODE = 0o600
DIR_MODE = 0o700

_tmp_counter = itertools.count()

# Tests set this to a callable(step: str) to inject a failure (raise) or a
# crash (os.kill) at each write step: "tmp-write", "fsync", "rename", "dir-fsync".
fault_hook = None


def step(name: str) -> None:
    if fault_hook is not None:
        fault_hook(name)


def check_component(name: str) -> str:
    """Return ``name`` if it is one safe path component, else raise UnsafePath."""
    if (
        not name
        or name in (".", "..")
        or "/" in name
        or "\\" in name
        or "\0" in name
        or len(name.encode("utf-8", "surrogateescape")) > 255
    ):
        raise UnsafePath(f"unsafe name {name!r}: not a single file name inside the store")
    return name


def child(root: Path, name: str) -> Path:
    """``root / name`` after checking ``name`` is one safe component."""
    return root / check_component(name)


def is_inside(root_real: str, path: str | os.PathLike) -> bool:
    """True if ``path`` resolves (following every symlink) to a place inside ``root_real``."""
    return within(root_real, os.path.realpath(path))


def within(root_real: str, real: str) -> bool:
    """True if the resolved path ``real`` is ``root_real`` or inside it (by their text alone)."""
    return real == root_real or real.startswith(root_real.rstrip(os.sep) + os.sep)


def shown(path) -> str:
    """A path as samctl prints it, one rule for all: relative to the current folder when inside it,
    else absolute (whether it came from --root as typed or from a realpath)."""
    p = os.path.abspath(path)
    try:
        here = os.getcwd().rstrip(os.sep)
    except OSError:  # the current folder was removed
        return p
    if p == here or not here:
        return "." if p == here else p
    return p[len(here) + 1 :] if p.startswith(here + os.sep) else p


def _problem_for_oserror(exc: OSError, path) -> FileProblem:
    if exc.errno == errno.ENOENT:
        return FileProblem("missing", path, "file does not exist")
    if exc.errno == errno.ELOOP:
        return FileProblem("symlink", path, "is a symlink (samctl does not follow symlinks)")
    if exc.errno in (errno.EACCES, errno.EPERM):
        return FileProblem("unreadable", path, "permission denied")
    if exc.errno == errno.EISDIR:
        return FileProblem("not-regular", path, "is a directory, not a file")
    return FileProblem("unreadable", path, f"cannot read: {exc.strerror or exc}")


# What to do about a ``too-large`` file: it is not damaged, only bigger than samctl reads by default.
TOO_LARGE_HINT = "read it with a bigger cap, e.g. `samctl --max-file-size 1G ...`"


def read_capped(path: str | os.PathLike, cap: int) -> bytes:
    """Read a whole regular file of at most ``cap`` bytes.

    Raises FileProblem with code missing/symlink/unreadable/not-regular/too-large.
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        raise _problem_for_oserror(exc, path) from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise FileProblem("not-regular", path, f"is not a regular file ({describe_mode(st.st_mode)})")
        if st.st_size > cap:
            raise FileProblem("too-large", path, f"{st.st_size} bytes is over the {cap}-byte cap")
        chunks = []
        left = cap + 1  # one more than the cap: notices a file that grew while we read
        while left > 0:
            # The whole file in one read (one buffer, no join to copy it); 16 MiB at a time
            # only for what it grew by while we read.
            want = min(left, st.st_size + 1 if not chunks else 1 << 24)
            try:
                b = os.read(fd, want)
            except OSError as exc:
                raise _problem_for_oserror(exc, path) from None
            if not b:
                break
            chunks.append(b)
            left -= len(b)
            if len(b) < want:
                break  # a short read of a regular file is its end: saves a syscall per small file
        data = b"".join(chunks)
        if len(data) > cap:
            raise FileProblem("too-large", path, f"grew past the {cap}-byte cap while being read")
        return data
    finally:
        os.close(fd)


def describe_mode(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISLNK(mode):
        return "a symlink"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    return "a regular file" if stat.S_ISREG(mode) else "an unknown kind of file"


def lstat(path) -> os.stat_result | None:
    try:
        return os.lstat(path)
    except OSError:
        return None


def mode_problem(st: os.stat_result) -> str | None:
    """A one-line reason if a file or folder is open to group/others, else None."""
    perm = stat.S_IMODE(st.st_mode)
    if perm & 0o077:
        want = DIR_MODE if stat.S_ISDIR(st.st_mode) else FILE_MODE
        return f"mode {perm:04o} lets group/others in (want {want:04o})"
    return None


def tighten_mode(path) -> int:
    """chmod a file to 0600 or a folder to 0700 (keeping owner bits); return the new mode."""
    st = os.lstat(path)
    if stat.S_ISLNK(st.st_mode):
        raise UnsafePath(f"{path}: refusing to chmod a symlink")
    new = stat.S_IMODE(st.st_mode) & 0o700
    if stat.S_ISDIR(st.st_mode):
        new |= 0o700
    else:
        new |= 0o600
    os.chmod(path, new, follow_symlinks=False)
    return new


def _skip_fsync() -> bool:
    """True only in samctl's own test suite (tests/conftest.py sets SAMCTL_TEST_NO_FSYNC=1; the tests of
    durability unset it): an fsync there only waits on the disk.  Never set it for real use."""
    return os.environ.get("SAMCTL_TEST_NO_FSYNC") == "1"


def fsync_dir(path) -> None:
    if _skip_fsync():
        return
    if _batch is not None:
        _batch.note_path(path)
        return
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def tmp_name(name: str) -> str:
    return f".{name}.{os.getpid()}.{next(_tmp_counter)}.tmp"


def _temp_sibling(path) -> tuple[str, str]:
    """(the folder of ``path``, a fresh temp name beside it), as strings: no path objects on hot paths."""
    parent, name = os.path.split(os.fspath(path))
    return parent, os.path.join(parent, tmp_name(check_component(name)))


def write_atomic(path: str | os.PathLike, data: bytes, mode: int = FILE_MODE) -> None:
    """Write ``data`` to ``path`` atomically: temp sibling, fsync, rename, dir fsync.

    A crash at any instant leaves either the old file or the new one complete.
    The target's folder must exist; it is not created here.
    """
    parent, tmp = _temp_sibling(path)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, mode)
    try:
        try:
            step("tmp-write")
            view = memoryview(data)
            while view:
                n = os.write(fd, view)
                view = view[n:]
            os.fchmod(fd, mode)  # the umask may have taken bits we want, never adds any
            step("fsync")
            _fsync(fd)
        finally:
            os.close(fd)
        step("rename")
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    step("dir-fsync")
    fsync_dir(parent)


@contextlib.contextmanager
def atomic_writer(path: str | os.PathLike, mode: int = FILE_MODE):
    """``write_atomic`` for output written in pieces: yields a binary file.

    The data appears at ``path`` (fsynced, renamed, folder fsynced) only when
    the ``with`` block ends normally; on any exception the temp is removed and
    the old file, if any, is left as it was.  Built on ``create_temp``,
    ``finish_temp`` and ``commit_temp`` (same fault-injection steps).
    """
    tmp, f = create_temp(path, mode)
    try:
        yield f
        finish_temp(f, mode)
        commit_temp(tmp, path)
    except BaseException:
        f.close()
        discard_temp(tmp)
        raise


def flock_held(path: str | os.PathLike) -> bool:
    """True if some process holds an exclusive or shared ``flock`` on ``path`` right now.  A probe:
    nothing is created or written (a missing file, or one that cannot be opened, is not held)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return True
    finally:
        os.close(fd)  # (releases the lock if the probe took it)
    return False


HELD_LOCKS: set = set()  # the descriptors on which this process holds an flock (``samctl.lock`` adds them)


def unlock(fd: int) -> None:
    """Close ``fd``, a descriptor in ``HELD_LOCKS``: its flock goes with the last descriptor on it."""
    HELD_LOCKS.discard(fd)
    os.close(fd)


def close_inherited_locks() -> None:
    """In a worker forked while its parent held locks: close the worker's copies of those
    descriptors.  The parent's own stay open, so its locks are as they were (an flock goes only
    when every descriptor on it is closed); but a worker that outlives a killed parent holds none,
    and the next samctl does not wait for it."""
    for fd in list(HELD_LOCKS):
        HELD_LOCKS.discard(fd)
        try:
            os.close(fd)
        except OSError:
            pass


def make_private_dir(path: str | os.PathLike, created: list | None = None) -> Path:
    """mkdir -p with 0700 on every folder it creates; an existing folder is left as is.
    ``created``, if given, gets each folder this call made, outermost first."""
    path = Path(path)
    missing = []
    p = path
    while not p.exists():
        missing.append(p)
        p = p.parent
    for p in reversed(missing):
        try:
            os.mkdir(p, DIR_MODE)
        except FileExistsError:
            continue
        os.chmod(p, DIR_MODE)
        if created is not None:
            created.append(p)
    return path


def remove_empty_dirs(folders: list) -> None:
    """Undo ``make_private_dir``'s ``created`` list: each folder goes, innermost first, if it is
    still empty (anything someone put there meanwhile keeps it)."""
    for p in reversed(folders):
        try:
            os.rmdir(p)
        except OSError:
            return


def stale_temps(parent: str | os.PathLike, name: str | None = None, now: float | None = None):
    """Paths of ``.<name>.*.tmp`` temps in ``parent`` older than mermaid's 3600 s rule.

    With ``name`` None, every ``.*.tmp`` temp is considered.
    """
    now = time.time() if now is None else now
    prefix = f".{name}." if name else "."
    out = []
    try:
        entries = list(os.scandir(parent))
    except OSError:
        return out
    for e in entries:
        if e.name.startswith(prefix) and e.name.endswith(".tmp") and len(e.name) > len(prefix) + 4:
            try:
                st = e.stat(follow_symlinks=False)
            except OSError:
                continue
            if stat.S_ISREG(st.st_mode) and now - st.st_mtime >= STALE_TMP_SECONDS:
                out.append(Path(e.path))
    return out


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
    if home and q != p and is_inside(os.path.realpath(home), p) and not _is_dir(home):
        return f"the home folder {home} does not exist"
    if not stat.S_ISDIR(st.st_mode):
        return f"{q} is not a folder"
    if not os.access(q, os.R_OK | os.W_OK | os.X_OK):
        return f"permission denied: {q}"
    return None


# --- pieces for multi-step moves (attic, compact) --------------------------------
# Each function calls ``step`` before the operation that changes the disk, so
# the fault-injection tests can stop a command at every write step.


def create_temp(path: str | os.PathLike, mode: int = FILE_MODE, buffering: int = 1 << 20):
    """Open a fresh temp sibling of ``path`` (``.<name>.<pid>.<n>.tmp``) for writing.

    Returns ``(tmp_path, binary file)`` (unbuffered with ``buffering=0``: use
    ``write_all``).  Finish it with ``finish_temp`` and then ``commit_temp`` (or
    ``discard_temp``); nothing appears at ``path`` before ``commit_temp``.
    """
    _, tmp = _temp_sibling(path)
    step("tmp-write")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, mode)
    return tmp, os.fdopen(fd, "wb", buffering=buffering)


def finish_temp(f, mode: int = FILE_MODE, mtime_ns: int | None = None) -> None:
    """Flush, chmod (and, given ``mtime_ns``, set both times) and fsync a file from ``create_temp``, then close it."""
    try:
        f.flush()
        os.fchmod(f.fileno(), mode)
        if mtime_ns is not None:
            os.utime(f.fileno(), ns=(mtime_ns, mtime_ns))
        step("fsync")
        _fsync(f.fileno())
    finally:
        f.close()


def commit_temp(tmp: str | os.PathLike, path: str | os.PathLike, sync_dir: bool = True) -> None:
    """Rename a finished temp over ``path`` and fsync the folder.

    ``sync_dir=False`` leaves the folder's fsync to the caller's next commit in
    the same folder (one fsync makes both renames durable).  If the rename does
    not happen (it fails, or samctl is stopped just before it), the temp is
    removed: nothing else would remove it.
    """
    try:
        step("rename")
        os.replace(tmp, path)
    except BaseException:
        discard_temp(tmp)
        raise
    if sync_dir:
        step("dir-fsync")
        fsync_dir(os.path.dirname(os.fspath(path)))


def discard_temp(tmp: str | os.PathLike) -> None:
    try:
        os.unlink(tmp)
    except OSError:
        pass


def write_temp(path: str | os.PathLike, data: bytes, mode: int = FILE_MODE) -> Path:
    """A finished (fsynced) temp sibling of ``path`` holding ``data``; not yet renamed."""
    tmp, f = create_temp(path, mode)
    try:
        f.write(data)
        finish_temp(f, mode)
    except BaseException:
        f.close()
        discard_temp(tmp)
        raise
    return tmp


def open_regular(path: str | os.PathLike):
    """Open a regular file for streamed reading (no symlink, no FIFO): ``(file, stat)``.

    Raises FileProblem like ``read_capped``.  For files too big to read whole.
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        raise _problem_for_oserror(exc, path) from None
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        raise FileProblem("not-regular", path, f"is not a regular file ({describe_mode(st.st_mode)})")
    return os.fdopen(fd, "rb", buffering=0), st


def sha256_of(path: str | os.PathLike) -> tuple[int, str]:
    """``(size, sha256 hex)`` of a regular file's bytes, read in 1 MiB pieces; FileProblem like
    ``open_regular``."""
    f, _ = open_regular(path)
    try:
        return sha256_of_file(f)
    finally:
        f.close()


def sha256_of_file(f) -> tuple[int, str]:
    """``(size, sha256 hex)`` of the rest of the open binary file ``f``, read in 1 MiB pieces."""
    import hashlib  # (lazy: not loaded by ls or --help)

    h, n = hashlib.sha256(), 0
    while b := f.read(MIB):
        h.update(b)
        n += len(b)
    return n, h.hexdigest()


# --- raw pieces for callers that hold a file descriptor or pace their own steps ------------
# None of these calls ``step``: a caller that changes a store's files calls it first.


def open_read_fd(path: str | os.PathLike, nofollow: bool = True) -> int:
    """A read-only fd (``O_CLOEXEC``; ``O_NOFOLLOW`` unless told): for fstat/fsync/mmap of a file samctl
    checks itself.  ``O_NONBLOCK``: a FIFO put in the file's place never blocks the open (the caller's
    fstat then finds it is not a regular file; a regular file ignores the flag).  Raises OSError."""
    return os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK | (os.O_NOFOLLOW if nofollow else 0))


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
            return f"{p} is {describe_mode(st.st_mode)}, not a folder"
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


def open_dir_fd(path: str | os.PathLike) -> int:
    """A read-only fd of a folder, for ``*at`` calls relative to it.  Raises OSError."""
    return os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)


def open_lock_file(path: str | os.PathLike, nonblock: bool = False) -> int:
    """A read-write fd of a lock file, created 0600 if missing, never through a symlink (``nonblock``: a FIFO
    put there does not block the open).  Raises OSError."""
    flags = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC | (os.O_NONBLOCK if nonblock else 0)
    return os.open(path, flags, FILE_MODE)


def open_append_fd(path: str | os.PathLike) -> int:
    """A write-only, append-only fd of an existing file, never through a symlink.  Raises OSError."""
    return os.open(path, os.O_WRONLY | os.O_APPEND | os.O_NOFOLLOW | os.O_CLOEXEC)


def make_dir(path: str | os.PathLike) -> None:
    """Create one folder, 0700 (its parent must exist).  Raises OSError (FileExistsError if it is there)."""
    os.mkdir(path, DIR_MODE)


def touch(path: str | os.PathLike) -> None:
    """Set a file's mtime (and atime) to now, never through a symlink.  Raises OSError."""
    step("utime")
    os.utime(path, follow_symlinks=False)


def remove_dir_if_empty(path: str | os.PathLike) -> bool:
    """Remove ``path`` if it is an empty folder; False when it could not be (not empty, gone, refused)."""
    try:
        os.rmdir(path)
    except OSError:
        return False
    return True


def rename(src: str | os.PathLike, dst: str | os.PathLike) -> None:
    """``os.rename`` (same file system; the caller fsyncs the folders).  Raises OSError (EXDEV across)."""
    os.rename(src, dst)


def unlink(path: str | os.PathLike, missing_ok: bool = True) -> bool:
    """Unlink one file, of samctl's own cache (no fault step).  True if it was there; raises other OSErrors."""
    try:
        os.unlink(path)
    except FileNotFoundError:
        if not missing_ok:
            raise
        return False
    return True


def remove(path: str | os.PathLike, missing_ok: bool = True) -> bool:
    """Unlink one file (never a folder, never through a symlink). True if it was there."""
    step("unlink")
    return unlink(path, missing_ok)


def remove_tree(path: str | os.PathLike, sync_parent: bool = True) -> None:
    """rm -r without following symlinks: files first, then folders, bottom up.  A folder without
    write permission for its owner (a read-only sub-folder) is made writable to be emptied: a user
    who is not root could not remove what is in it otherwise."""
    path = Path(path)
    st = lstat(path)
    if st is None:
        return
    if not stat.S_ISDIR(st.st_mode):
        remove(path)
        return
    try:
        _remove_dir_tree(path)
    except PermissionError:
        _owner_may_write(path)
        _remove_dir_tree(path)  # what the first pass removed is gone; this removes the rest
    if sync_parent:
        fsync_dir(path.parent)


def _owner_may_write(top: Path) -> None:
    """Give ``top`` and every folder under it (not through links) u+rwx, each before it is listed,
    so that it can be emptied."""

    def writable(p) -> None:
        st = os.lstat(p)
        if stat.S_ISDIR(st.st_mode) and st.st_mode & 0o700 != 0o700:
            os.chmod(p, stat.S_IMODE(st.st_mode) | 0o700)

    writable(top)
    for dirpath, dirnames, _ in os.walk(top, topdown=True, followlinks=False):
        for d in dirnames:  # (before os.walk lists it)
            writable(os.path.join(dirpath, d))


def _raise(exc: OSError) -> None:
    if not isinstance(exc, FileNotFoundError):  # (gone meanwhile: nothing to remove)
        raise exc


def _remove_dir_tree(path: Path) -> None:
    # a folder that cannot be listed raises (PermissionError), rather than being skipped and left full
    for dirpath, dirnames, filenames in os.walk(path, topdown=False, followlinks=False, onerror=_raise):
        for name in filenames:
            remove(os.path.join(dirpath, name))
        for name in dirnames:
            p = os.path.join(dirpath, name)
            if os.path.islink(p):
                remove(p)
            else:
                step("rmdir")
                os.rmdir(p)
    step("rmdir")
    os.rmdir(path)


def place_new(src: str | os.PathLike, dst: str | os.PathLike, sync_dir: bool = True) -> None:
    """Give the finished file ``src`` the name ``dst`` without ever replacing an existing ``dst``.

    A hard link keeps the inode (bytes, mode, mtime); across file systems the
    bytes are copied to a temp sibling of ``dst`` first.  Raises
    FileExistsError if ``dst`` exists.  ``src`` is left in place.
    """
    step("link")
    try:
        os.link(src, dst, follow_symlinks=False)
    except OSError as exc:
        if exc.errno not in (errno.EXDEV, errno.EPERM, errno.ENOTSUP, errno.EMLINK):
            raise
        st = os.lstat(src)
        with open(src, "rb") as f:
            tmp = write_temp(dst, f.read(), stat.S_IMODE(st.st_mode))
        try:
            os.utime(tmp, ns=(st.st_atime_ns, st.st_mtime_ns))
            step("link")
            os.link(tmp, dst)
        finally:
            discard_temp(tmp)
    if sync_dir:
        fsync_dir(Path(dst).parent)


def move_new(src: str | os.PathLike, dst: str | os.PathLike) -> None:
    """Rename ``src`` to ``dst`` without ever replacing an existing ``dst`` (FileExistsError).

    One ``renameat2(RENAME_NOREPLACE)`` on Linux; where there is none (another
    OS, a file system without it, another device) ``place_new`` then an
    unlink of ``src``.  The caller fsyncs both folders.
    """
    global renameat2
    if renameat2 is _UNSET:
        renameat2 = _load_renameat2()
    if renameat2 is not None:
        step("rename")
        try:
            renameat2(os.fspath(src), os.fspath(dst))
            return
        except OSError as exc:
            if exc.errno not in (errno.EINVAL, errno.ENOSYS, errno.EXDEV, errno.ENOTSUP):
                raise
    place_new(src, dst, sync_dir=False)
    remove(src)


def _libc(name: str):
    """The C library's function ``name`` (errno kept) and ctypes, or (None, None) where there is none."""
    if not sys.platform.startswith("linux"):
        return None, None
    try:
        import ctypes  # (lazy: ctypes: not loaded by ls or --help)

        return getattr(ctypes.CDLL(None, use_errno=True), name), ctypes
    except (OSError, AttributeError):  # an old glibc, or another libc
        return None, None


def _load_renameat2():
    fn, ctypes = _libc("renameat2")
    if fn is None:
        return None
    fn.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    at_fdcwd, noreplace = -100, 1

    def rename_noreplace(src: str, dst: str) -> None:
        if fn(at_fdcwd, os.fsencode(src), at_fdcwd, os.fsencode(dst), noreplace) != 0:
            err = ctypes.get_errno()
            raise OSError(err, os.strerror(err), src, None, dst)

    return rename_noreplace


def create_new(path: str | os.PathLike, mode: int = FILE_MODE):
    """Create ``path`` (which must not exist) for writing, in a folder only samctl uses (staging).

    Returns an unbuffered file (writes go straight to the descriptor: use
    ``write_all``).  Finish it with ``finish_temp``; the caller fsyncs the folder.
    """
    step("tmp-write")
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, mode)
    return os.fdopen(fd, "wb", buffering=0)


def write_all(f, data) -> None:
    """Write every byte of ``data`` to the unbuffered file ``f`` (a raw write may take fewer)."""
    view = memoryview(data)
    while view:
        view = view[f.write(view) :]


# --- durability in batches ------------------------------------------------------------


def _fsync(fd: int) -> None:
    """fsync a file just written, or leave it to the running batch's next barrier."""
    if _batch is not None:
        _batch.note_fd(fd)
    elif not _skip_fsync():
        os.fsync(fd)


def _load_syncfs():
    fn, ctypes = _libc("syncfs")
    if fn is None:
        return None
    fn.argtypes = [ctypes.c_int]

    def syncfs(fd: int) -> None:
        if fn(fd) != 0:
            err = ctypes.get_errno()
            raise OSError(err, os.strerror(err))

    return syncfs


_UNSET = object()
syncfs = _UNSET  # syncfs(fd) for the file system of fd, or None where there is none (set on first use)
renameat2 = _UNSET  # renameat2(src, dst) with RENAME_NOREPLACE, or None where there is none (set on first use)
_batch = None


class SyncBatch:
    """The file systems written to since the last barrier, one open descriptor each.

    While the caller writes, a background thread writes out what is already
    dirty (one ``syncfs`` at a time, after every ``EARLY`` bytes of files
    noted), so a barrier finds little left to wait for: the disk works while
    samctl computes.  Only a barrier's own ``syncfs``, made after the last
    write it covers, promises anything; the early ones are an optimisation,
    and their errors are left for it to report.
    """

    EARLY = 4 << 20  # bytes of files noted between two background writebacks
    EARLY_USEFUL = 0.001  # seconds: a writeback faster than this had nothing to wait for (tmpfs): no more

    def __init__(self):
        self.fds: dict = {}  # st_dev -> fd
        self.folders: set = set()  # folders noted already (a move notes the same few many times)
        self.dirty = False
        self.noted = 0  # bytes of files noted since the last writeback started
        self.early = None  # the running background writeback (a thread), if any
        self.early_on = True

    def note_fd(self, fd: int) -> None:
        st = os.fstat(fd)
        self.dirty = True
        if st.st_dev not in self.fds:
            self.fds[st.st_dev] = os.dup(fd)
        self._count(st.st_size)

    def _count(self, nbytes: int) -> None:
        """``nbytes`` more written: start a background writeback after every ``EARLY`` bytes."""
        self.noted += nbytes
        if self.noted >= self.EARLY and self.early_on and (self.early is None or not self.early.is_alive()):
            self._start_early()

    def _start_early(self) -> None:
        self.noted = 0
        import threading  # (lazy: not loaded by ls or --help)

        self.early = threading.Thread(
            target=self._write_back, args=(list(self.fds.values()),), name="samctl-writeback", daemon=True
        )
        self.early.start()

    def _write_back(self, fds: list) -> None:
        t = time.perf_counter()
        for fd in fds:
            try:
                syncfs(fd)
            except OSError:
                pass  # the barrier's own syncfs reports it
        if time.perf_counter() - t < self.EARLY_USEFUL:
            self.early_on = False

    def _wait_early(self) -> None:
        if self.early is not None:
            self.early.join()
            self.early = None

    def note_path(self, path) -> None:
        self.dirty = True
        if path in self.folders:
            return
        self.folders.add(path)
        try:
            dev = os.stat(path).st_dev
            if dev not in self.fds:
                self.fds[dev] = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
        except OSError:
            pass  # gone already: its parent, noted too, carries the change

    def note_written(self, folder, nbytes: int) -> None:
        """Another process (a worker) wrote ``nbytes`` under ``folder`` for this batch."""
        self.note_path(folder)
        self._count(nbytes)

    def barrier(self) -> None:
        """Everything written in the batch so far is on disk when this returns."""
        step("sync")
        self.flush()

    def flush(self) -> None:
        self._wait_early()
        if self.dirty:
            for fd in self.fds.values():
                syncfs(fd)
            self.dirty = False
            self.noted = 0

    def close(self) -> None:
        self._wait_early()  # it uses the descriptors
        for fd in self.fds.values():
            os.close(fd)
        self.fds.clear()


class _NoBatch:
    """What ``sync_batch`` yields where writes are not deferred: every write fsyncs itself."""

    def barrier(self) -> None:
        step("sync")

    def note_written(self, folder, nbytes: int) -> None:
        pass  # (each of those writes was fsynced by the process that made it)


def batch_defers() -> bool:
    """True inside a ``sync_batch`` whose barriers are ``syncfs`` calls (which write out what
    other processes wrote on that file system too)."""
    return isinstance(_batch, SyncBatch)


class _ByParent:
    """``_batch`` in a worker writing for its parent's batch: nothing to note, nothing to fsync."""

    def note_fd(self, fd: int) -> None:
        pass

    def note_path(self, path) -> None:
        pass


@contextlib.contextmanager
def synced_by_parent(defer: bool):
    """In a worker process: with ``defer`` (the parent's ``batch_defers()``), the block's writes
    are left to the parent's next barrier, which must cover the folders written in (the parent
    notes them: ``note_written``); without, they fsync as usual."""
    global _batch
    before = _batch
    _batch = _ByParent() if defer else None
    try:
        yield
    finally:
        _batch = before


@contextlib.contextmanager
def sync_batch():
    """Defer the fsyncs of the writes in the block to the barriers the caller places.

    Yields an object with ``barrier()``.  The block's last writes are made
    durable when it ends normally.  Without syncfs (not Linux), or inside
    another batch, writes fsync as usual and barriers only mark the step.
    """
    global _batch, syncfs
    if syncfs is _UNSET:
        syncfs = _load_syncfs()
    if _batch is not None or syncfs is None:
        yield _batch or _NoBatch()
        return
    batch = _batch = SyncBatch()
    try:
        yield batch
        batch.flush()
    finally:
        _batch = None
        batch.close()
