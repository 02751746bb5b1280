"""A disposable listing cache per store root, in the user's cache folder.

Disposable: one 0600 file per (store kind, root) in the cache folder, ignored when unreadable, damaged or
changed since samctl wrote it (it begins with the CRC-32 of the rest), foreign, or made under other caps or
another time zone; an entry is trusted only while its file's (size, mtime_ns) match, and racy files are
never stored.  The store is never touched.

Design notes: docs/stores.md, "stores/metacache.py".
"""

from __future__ import annotations

import hashlib
import os
import time
import zlib

import orjson

from samctl.errors import FileProblem
from samctl.fs import reading, userdirs, writing

VERSION = 11  # 4: a mermaid sidecar row's created carries the writer's offset; 5: SAM rows' active_ts and shared topic;
# 6: one-file-each rows carry project, branch, continues, copied messages and model; 7: SAM rows carry the model;
# 8: mermaid rows carry the git branch; 9: a SAM row's meta is a list in the model's field order; 10: sealed;
# 11: a SAM row carries its ls JSON row
RACY_SECONDS = 2.0


def _zone() -> list:
    """This process's time zone, as far as it shapes a row (a mermaid id is read in local time)."""
    return [os.environ.get("TZ"), time.timezone, time.altzone, *time.tzname]


# A cache begins with the CRC-32 of everything after its first field, as eight hex digits: one that was cut
# short, damaged or edited since samctl wrote it is ignored as a whole, so what samctl wrote is all a store
# reads (a SAM listing then needs no check of each field's type).  It stays one JSON document.
_SEAL = b'{"sum":"'
_SEALED_FROM = len(_SEAL) + 10  # (the digits and '",')


def seal(doc: dict) -> bytes:
    """``doc`` (a non-empty dict, without the key "sum") as a cache file's bytes."""
    rest = memoryview(orjson.dumps(doc))[1:]
    return b'%s%08x",%s' % (_SEAL, zlib.crc32(rest), rest)


def is_sealed(data: bytes) -> bool:
    """Whether ``data`` is a cache file's bytes as ``seal`` made them."""
    digits = data[len(_SEAL) : _SEALED_FROM - 2]
    return (
        data[: len(_SEAL)] == _SEAL
        and data[_SEALED_FROM - 2 : _SEALED_FROM] == b'",'
        and digits == b"%08x" % zlib.crc32(memoryview(data)[_SEALED_FROM:])
    )


class MetaCache:
    def __init__(self, kind: str, root_real: str, enabled: bool = True, caps=None):
        self.kind = kind
        self.root_real = root_real
        self.enabled = enabled
        self.caps = [caps.snapshot, caps.log, caps.other] if caps is not None else None
        key = hashlib.sha256(f"{kind}\0{root_real}".encode("utf-8", "surrogateescape")).hexdigest()[:24]
        self.path = userdirs.cache_dir() / f"{kind}-meta-{key}.json"
        self.stamp = None  # the folder stamp saved with the entries, if any (set by load)
        self.extra = None  # what the store saved beside the stamp (set by load)

    def load(self) -> dict:
        """name -> entry (a list whose first two items are size and mtime_ns); {} when untrusted."""
        if not self.enabled:
            return {}
        try:
            data = reading.read_capped(self.path, 1 << 31)
            if not is_sealed(data):
                return {}
            doc = orjson.loads(data)
        except (FileProblem, orjson.JSONDecodeError):
            return {}
        if (
            not isinstance(doc, dict)
            or doc.get("v") != VERSION
            or doc.get("kind") != self.kind
            or doc.get("root") != self.root_real
            or doc.get("caps") != self.caps
            or doc.get("zone") != _zone()
            or not isinstance(doc.get("entries"), dict)
        ):
            return {}
        stamp = doc.get("folder")
        if type(stamp) is list and len(stamp) == 4 and all(type(x) is int for x in stamp):
            self.stamp, self.extra = stamp, doc.get("extra")
        return doc["entries"]

    def save(self, entries: dict, stamp: list | None = None, extra=None) -> None:
        """Write ``entries``; ``stamp`` (from ``folder_stamp``) and ``extra`` are kept only together."""
        if not self.enabled:
            return
        doc = {
            "v": VERSION,
            "kind": self.kind,
            "root": self.root_real,
            "caps": self.caps,
            "zone": _zone(),
            "entries": entries,
        }
        if stamp is not None:
            doc["folder"], doc["extra"] = stamp, extra
        try:
            data = seal(doc)
            writing.make_private_dir(self.path.parent)
            writing.write_atomic(self.path, data)
        except (OSError, orjson.JSONEncodeError):  # JSONEncodeError: a file name that is not UTF-8
            pass  # a cache that cannot be written costs only time

    @staticmethod
    def folder_stamp(st) -> list:
        """What changes whenever a name in the folder is created, removed or renamed, or the
        folder is replaced or chmod'ed: [mtime_ns, ctime_ns, inode, device]."""
        return [st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_dev]

    @staticmethod
    def fresh(entry, st, width: int):
        """``entry`` if it is a list of ``width`` items matching ``st``'s size and mtime_ns, else None."""
        if type(entry) is list and len(entry) == width and entry[0] == st.st_size and entry[1] == st.st_mtime_ns:
            return entry
        return None

    @staticmethod
    def cacheable(st, now_ns: int) -> bool:
        return (now_ns - st.st_mtime_ns) / 1e9 >= RACY_SECONDS
