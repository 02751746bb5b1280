"""What the index is made of, and what changed since it was built: sources and their signatures.

Data model
----------
A **source** (``Source``) is what one unit of rows is read from: a file, or for mermaid a
conversation's snapshot + log.  Its key names it in the manifest::

    <folder>/conversation.json   sam-conv       <folder>/memory.db   sam-mem
    <folder>/context_archive.db  sam-arch       @base/memory.db      sam-base-mem
    conversations.json           sam-legacy     <mermaid id>         mermaid

Its signature is ``size:mtime_ns:inode:ctime_ns`` per file, ``-`` for an absent one, joined by ``|``.

Invariants
----------
- ``discover`` runs before every search, so it costs one ``lstat`` per file and little else (the
  SAM loop stats relative to the conversations folder and builds ``Source`` tuples directly); it
  never reads a file, and reports one it cannot stat, or that is not a regular file, as a finding
  instead of a source.
- A source is stale (``stale``) when it is new or its signature differs from the manifest's; a
  source the manifest lists without a signature (None) is always stale.  Sources no longer
  discovered are removed, limited to ``scope`` when one is given.
- A file modified less than ``RACY_SECONDS`` ago (``Source.trusted`` False), or one that could not
  be read for a passing reason (``TRANSIENT_CODES``), is indexed with no signature: read again next
  time.
"""

from __future__ import annotations

import os
import re
import stat
import time
from typing import TYPE_CHECKING, NamedTuple

from samctl import fsafe
from samctl.core.model import ERROR, Finding
from samctl.errors import NotFound

if TYPE_CHECKING:
    from samctl.core.index.manifest import Manifest

RACY_SECONDS = 2.0
TRANSIENT_CODES = frozenset({"db-locked", "db-hot-journal", "unreadable", "missing",
                             "too-large"})  # (over this run's --max-file-size: the next may read it)

_UUID = re.compile(r"[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}\Z")
SAM_FILES = (("conversation.json", "sam-conv"), ("memory.db", "sam-mem"), ("context_archive.db", "sam-arch"))


class Source(NamedTuple):
    key: str  # "<folder>/memory.db", "<mermaid id>", "@base/memory.db", "conversations.json"
    kind: str  # sam-conv, sam-mem, sam-arch, sam-base-mem, sam-legacy, mermaid
    paths: tuple
    sig: str  # "size:mtime_ns:inode:ctime_ns" per path, "-" for an absent one, joined by "|"
    conv: str | None  # the conversation/scope its rows belong to (None: each row says)
    trusted: bool = True  # False: modified within RACY_SECONDS; read it again next time


def _unstattable(path: str, exc: OSError, conv) -> Finding:
    return Finding("unreadable", path, f"cannot stat: {exc.strerror}", ERROR, conv)


def _not_regular(path: str, mode: int, conv) -> Finding:
    return Finding("not-regular", path, f"is {fsafe.describe_mode(mode)}, not a file", ERROR, conv)


def _utf8(name: str) -> bool:
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:  # a file name that is not UTF-8 (surrogate-escaped)
        return False
    return True


def discover(store, findings: list, scope: set | None = None) -> dict[str, Source]:
    """Every source of the store (or of the conversations/scopes in ``scope``), by key.

    This runs before every search, so it is one ``lstat`` per file and little else.
    """
    now = time.time_ns()
    racy_ns = int(RACY_SECONDS * 1e9)
    out: dict[str, Source] = {}
    lstat = os.lstat
    isreg = stat.S_ISREG

    def sig_of(path, conv):
        """(signature part, racy) of one file; None when absent or not a regular file (a finding)."""
        try:
            st = lstat(path)
        except FileNotFoundError:
            return None
        except OSError as exc:
            findings.append(_unstattable(path, exc, conv))
            return None
        if not isreg(st.st_mode):
            findings.append(_not_regular(path, st.st_mode, conv))
            return None
        return f"{st.st_size}:{st.st_mtime_ns}:{st.st_ino}:{st.st_ctime_ns}", now - st.st_mtime_ns < racy_ns

    def add(key, kind, paths, conv):
        parts = [sig_of(p, conv) for p in paths]
        if any(parts):
            out[key] = Source(key, kind, tuple(paths), "|".join(x[0] if x else "-" for x in parts), conv,
                              not any(x[1] for x in parts if x))

    conv_dir = str(store.conv_dir)
    if store.name == "sam":
        try:
            with os.scandir(conv_dir) as it:
                entries = sorted(e.name for e in it if e.is_dir(follow_symlinks=False))
        except OSError as exc:
            raise NotFound(f"cannot list {conv_dir}: {exc.strerror}") from None
        make = tuple.__new__
        match = _UUID.match
        sep = os.sep
        files = [(sep + f, "/" + f, kind) for f, kind in SAM_FILES]
        statat = os.stat
        try:  # stat relative to the folder: the kernel walks two path components instead of all of them
            dirfd = os.open(conv_dir, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        except OSError as exc:
            raise NotFound(f"cannot open {conv_dir}: {exc.strerror}") from None
        odd = False
        try:
            for name in entries:
                if not match(name):
                    odd = odd or name != "backups"
                    continue
                path = conv_dir + sep + name
                cid = name.upper()
                if scope is not None and cid not in scope:
                    continue
                for fsuffix, ksuffix, kind in files:
                    key = name + ksuffix
                    try:  # the hot loop of every search: one lstat, then a string
                        st = statat(key, dir_fd=dirfd, follow_symlinks=False)
                    except FileNotFoundError:
                        continue
                    except OSError as exc:
                        findings.append(_unstattable(path + fsuffix, exc, cid))
                        continue
                    if not isreg(st.st_mode):
                        findings.append(_not_regular(path + fsuffix, st.st_mode, cid))
                        continue
                    # tuple.__new__: a Source without the NamedTuple constructor's cost (20,000 per search)
                    out[key] = make(Source, (key, kind, (path + fsuffix,),
                                             f"{st.st_size}:{st.st_mtime_ns}:{st.st_ino}:{st.st_ctime_ns}",
                                             cid, now - st.st_mtime_ns >= racy_ns))
        finally:
            os.close(dirfd)
        if odd:  # a conversation.json in a folder not named by a UUID: SAM loads it (spec §5.3), ls lists it
            for cid, name in store.odd_folders().items():
                if not _utf8(name):
                    continue  # a key the index manifest (JSON) cannot hold; ls reports such a folder
                if (scope is None or cid in scope) and f"{cid}/conversation.json" not in out:
                    add(f"{name}/conversation.json", "sam-conv", [conv_dir + sep + name + sep + "conversation.json"],
                        cid)
        add("@base/memory.db", "sam-base-mem", [os.path.join(str(store.base), "memory.db")], None)
        add("conversations.json", "sam-legacy", [os.path.join(conv_dir, "conversations.json")], None)
    else:
        from samctl.formats.mermaid.decode import MERMAID_ID_RE

        try:
            names = os.listdir(conv_dir)
        except OSError as exc:
            raise NotFound(f"cannot list {conv_dir}: {exc.strerror}") from None
        ids = sorted({n.rpartition(".")[0] for n in names
                      if n.endswith((".json", ".jsonl")) and MERMAID_ID_RE.match(n.rpartition(".")[0])})
        for cid in ids:
            if scope is None or cid in scope:
                add(cid, "mermaid", [os.path.join(conv_dir, cid + ".json"), os.path.join(conv_dir, cid + ".jsonl")],
                    cid)
    return out


def stale(manifest: Manifest | None, current: dict[str, Source], scope: set | None):
    """(keys to read again, keys to drop) for the sources in scope."""
    known = manifest.sig_map() if manifest else {}
    changed = [k for k, s in current.items() if (sig := known.get(k)) is None or sig != s.sig]
    if scope is None:
        removed = [k for k in known if k not in current]
    else:
        convs = manifest.conv_map() if manifest else {}
        removed = [k for k, c in convs.items() if k not in current and (c is None or c in scope)]
    return changed, removed
