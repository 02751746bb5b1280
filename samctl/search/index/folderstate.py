"""The state of many folders as one digest, and a script that tells whether a record's folders still
have the digest it saved.

``checked.Recent`` runs this file as ``python -I -S -B folderstate.py RECORD`` to state 10,000 SAM
conversation folders on the other core while the search ranks: in a thread of the search, each
``stat`` waited for its turn of the GIL against the ranking, and the check took twice as long as alone
(a search of 10,000 SAM conversations: 38 ms, 10 of them ranking).  So this module imports nothing of
samctl, only the standard library, and ``checked`` uses its ``digest`` too: one definition.
"""

from __future__ import annotations

import hashlib
import json
import operator
import os
import sys

RECORD_CAP = 1 << 30  # bytes: as ``checked.recent`` reads the record


def digest(groups: list) -> str:
    """One digest of the state (mtime, ctime, inode, size) of every folder of ``groups`` = [[parent,
    [name, ...]], ...], in order: each parent's names are stated through one descriptor of it (looked
    up there alone, not along the whole path), as ``lstat`` would (the last name not followed).  A
    folder that cannot be stated counts as "-"."""
    h = hashlib.blake2b(digest_size=16)
    get = operator.attrgetter("st_mtime_ns", "st_ctime_ns", "st_ino", "st_size")
    for parent, names in groups:
        try:
            fd = os.open(parent, os.O_RDONLY | os.O_DIRECTORY | getattr(os, "O_CLOEXEC", 0))
        except OSError:
            h.update(b"-" * len(names))
            continue
        try:
            for name in names:
                try:
                    h.update(b"%d:%d:%d:%d;" % get(os.stat(name, dir_fd=fd, follow_symlinks=False)))
                except OSError:
                    h.update(b"-")
        finally:
            os.close(fd)
        h.update(b"/")
    return h.hexdigest()


def main(argv: list) -> int:
    """Write "1 DIGEST" when the folders of the record ``argv[1]`` (``checked``'s JSON) have the digest
    DIGEST it saved, else "0 DIGEST", or "0" when the record cannot be read: the caller compares
    DIGEST with the one it read (the record may have been replaced since)."""
    out = "0"
    try:
        with open(argv[1], "rb") as f:
            raw = f.read(RECORD_CAP + 1)
        r = json.loads(raw) if len(raw) <= RECORD_CAP else None
        saved = r["digest"]
        if isinstance(saved, str):
            out = ("1 " if digest(r["folders"]) == saved else "0 ") + saved
    except (OSError, ValueError, KeyError, TypeError, IndexError):
        pass
    sys.stdout.write(out)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
