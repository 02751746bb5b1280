"""The fault-injection point every step that changes the disk passes through.

Each writing function calls ``step(name)`` just before the operation it names ("tmp-write", "fsync",
"rename", "dir-fsync", "link", "unlink", "rmdir", "utime", "sync"), so that the tests can make a command
fail or crash at every write step and check what is left.  With no hook set, ``step`` does nothing.
"""

from __future__ import annotations

# Tests set this to a callable(step: str) to inject a failure (raise) or a
# crash (os.kill) at each write step: "tmp-write", "fsync", "rename", "dir-fsync".
fault_hook = None


def step(name: str) -> None:
    if fault_hook is not None:
        fault_hook(name)
