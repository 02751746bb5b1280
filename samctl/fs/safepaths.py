"""Paths and the names joined onto them: one safe component, inside a root, as samctl prints them.

Invariants:
- A name joined onto a root is a single path component: no ``/``, ``\\``, NUL, ``.`` or ``..``, at most
  255 bytes; callers validate ids against their store's rule first.
- ``within``/``is_inside`` compare resolved paths by their text: a sibling folder whose name begins with
  the root's (``/a/bc`` beside ``/a/b``) is not inside it.
"""

from __future__ import annotations

import os
from pathlib import Path

from samctl.errors import UnsafePath


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
