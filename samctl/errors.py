"""Exit codes and the exceptions that carry them.

This module is the one place the exit-code table lives; the CLI maps every
SamctlError to its ``exit_code`` and the README/man pages document the table.
The core raises these errors; it never prints and never calls ``sys.exit``.
"""

from __future__ import annotations

OK = 0  # done, nothing wrong found
FAILED = 1  # the command could not do its job
USAGE = 2  # usage error (click's own)
PARTIAL = 3  # done, but some files were corrupt or skipped, or check found problems
NOT_FOUND = 4  # no such conversation, no store at the root, or a store folder samctl may not read
BUSY = 5  # the owning app is using the store, or another samctl holds the lock
INTERRUPTED = 130  # Ctrl-C

EXIT_CODES = [
    (OK, "done, nothing wrong found"),
    (FAILED, "failed: the command could not do its job; search: nothing matches (as grep)"),
    (USAGE, "usage error: a bad option, argument or id"),
    (PARTIAL, "partial: done, but some files were corrupt or skipped, or check found problems"),
    (NOT_FOUND, "not found: no such conversation, no store at the root, or permission denied on a store folder"),
    (BUSY, "busy: the owning app is using the store, or another samctl holds the lock"),
    (INTERRUPTED, "interrupted"),
]


class SamctlError(Exception):
    """An error meant for a person: what happened, and (in ``hint``) what to do next."""

    exit_code = FAILED

    def __init__(self, message: str, hint: str | None = None):
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __reduce__(self):
        # Whole, attributes and all, across a pickle (a worker process hands errors back that
        # way): the default rebuilds from ``args`` alone, which loses the hint, and cannot call
        # a subclass whose __init__ takes other arguments (FileProblem) at all.
        return _rebuild, (type(self), self.args, dict(self.__dict__))


def _rebuild(cls, args: tuple, state: dict) -> SamctlError:
    e = cls.__new__(cls)
    Exception.__init__(e, *args)
    e.__dict__.update(state)
    return e


class Terminated(BaseException):
    """SIGTERM arrived (``timeout``, a service manager, ``kill``): raised where samctl is, so that
    what it was writing is cleaned up as for Ctrl-C; then samctl dies of the signal (``cli.main``).
    Not an Exception: nothing that handles errors may swallow it."""


class UsageError(SamctlError):
    exit_code = USAGE


class NotFound(SamctlError):
    exit_code = NOT_FOUND


class Denied(NotFound):
    """A store folder this user may not read (the store's own, or one conversation's)."""

    def __init__(self, path, hint: str | None = None):
        super().__init__(f"permission denied: {path}", hint)
        self.path = str(path)


class Busy(SamctlError):
    exit_code = BUSY


class UnsafePath(SamctlError):
    """A path or id that would leave the store root, or is not a plain file."""

    exit_code = USAGE


class FileProblem(SamctlError):
    """A single file could not be used; ``code`` is the finding code it maps to."""

    def __init__(self, code: str, path, message: str):
        super().__init__(message)
        self.code = code
        self.path = path
