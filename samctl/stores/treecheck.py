"""Checks every store's fsck shares: modes (with the safe --fix) and symlinks.

Both never follow a symlink: a link is reported, never chmodded or read through.
"""

from __future__ import annotations

import os
import stat

from samctl.fs import filemodes, safepaths
from samctl.model import WARNING, Finding


def symlink(root_real: str, p: str, findings: list) -> None:
    """A finding for the symlink at ``p``: an error when it leads out of the root."""
    try:
        target = os.readlink(p)
    except OSError:
        target = "?"
    if not safepaths.is_inside(root_real, p):
        findings.append(
            Finding("symlink-escape", p, f"symlink leads out of the store (-> {target[:80]}); never followed")
        )
    else:
        findings.append(Finding("symlink", p, f"symlink (-> {target[:80]}); samctl does not follow symlinks", WARNING))


def mode(p, st, findings: list, fixes: list, fix: bool, cid=None) -> None:
    """A finding when ``p`` is open to group/others; with ``fix``, tighten it and say so instead."""
    if st is None:
        return
    why = filemodes.mode_problem(st)
    if why is None:
        return
    if fix:
        try:
            new = filemodes.tighten_mode(p)
            fixes.append(f"{p}: mode {stat.S_IMODE(st.st_mode):04o} -> {new:04o}")
            return
        except OSError as exc:
            why += f" (could not fix: {exc.strerror})"
    findings.append(Finding("mode", str(p), why, WARNING, cid))


def root(store, findings: list, fixes: list, fix: bool) -> None:
    """The conversations folder itself.

    A symlink on the way to it (``conversations/`` or the folders of the store
    above it) is reported and followed, as the owning app follows it; the mode
    checked (and fixed) is the mode of the folder it leads to, never the link's.
    """
    for p in root_symlinks(store):
        try:
            target = os.readlink(p)
        except OSError:
            target = "?"
        findings.append(
            Finding(
                "root-symlink",
                str(p),
                f"is a symlink (-> {target[:120]}): the store lives at "
                f"{store.root_real}; samctl follows it there, as the app does",
                WARNING,
            )
        )
    try:
        st = os.stat(store.root_real)
    except OSError as exc:
        findings.append(Finding("unreadable", str(store.conv_dir), f"cannot stat the folder: {exc.strerror}"))
        return
    mode(store.root_real, st, findings, fixes, fix)


def root_symlinks(store) -> list:
    """The symlinks among the folders the store consists of: ``conversations/`` (and mermaid's
    ``.mermaid/``), not the project or base folder the user named."""
    return [p for p in store.own_folders() if os.path.islink(p)]
