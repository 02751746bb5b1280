"""A disposable listing cache per store root, in the user's cache folder.

What ``ls`` would learn by reading and parsing one file per conversation is
kept here, keyed by that file's name and trusted only while its (size,
mtime_ns) are unchanged, so a warm ``ls`` stats files instead of reading them.

Invariants:
- The cache lives in ``fsafe.cache_dir()`` (0700), one 0600 file per (store
  kind, root realpath), written atomically; the store itself is never touched.
- A cache that is unreadable, corrupt, of another version or for another
  root is ignored (and rewritten): deleting it costs only time.
- Entries for files modified in the last RACY_SECONDS are never stored: their
  mtime could still change within the same clock tick (git's "racy clean").
"""

from __future__ import annotations

import hashlib

import orjson

from samctl import fsafe
from samctl.errors import FileProblem

VERSION = 2
RACY_SECONDS = 2.0


class MetaCache:
    def __init__(self, kind: str, root_real: str, enabled: bool = True):
        self.kind = kind
        self.root_real = root_real
        self.enabled = enabled
        key = hashlib.sha256(f"{kind}\0{root_real}".encode("utf-8", "surrogateescape")).hexdigest()[:24]
        self.path = fsafe.cache_dir() / f"{kind}-meta-{key}.json"

    def load(self) -> dict:
        """name -> entry (a list whose first two items are size and mtime_ns); {} when untrusted."""
        if not self.enabled:
            return {}
        try:
            doc = orjson.loads(fsafe.read_capped(self.path, 1 << 31))
        except (FileProblem, orjson.JSONDecodeError):
            return {}
        if (not isinstance(doc, dict) or doc.get("v") != VERSION or doc.get("kind") != self.kind
                or doc.get("root") != self.root_real or not isinstance(doc.get("entries"), dict)):
            return {}
        return doc["entries"]

    def save(self, entries: dict) -> None:
        if not self.enabled:
            return
        try:
            fsafe.make_private_dir(self.path.parent)
            fsafe.write_atomic(self.path, orjson.dumps(
                {"v": VERSION, "kind": self.kind, "root": self.root_real, "entries": entries}))
        except OSError:
            pass  # a cache that cannot be written costs only time

    @staticmethod
    def fresh(entry, st, width: int):
        """``entry`` if it is a list of ``width`` items matching ``st``'s size and mtime_ns, else None."""
        if type(entry) is list and len(entry) == width and entry[0] == st.st_size and entry[1] == st.st_mtime_ns:
            return entry
        return None

    @staticmethod
    def cacheable(st, now_ns: int) -> bool:
        return (now_ns - st.st_mtime_ns) / 1e9 >= RACY_SECONDS
