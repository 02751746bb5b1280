"""What every store module provides.

A Store is bound to one root on disk.  It validates ids before building any
path, reads only through samctl.fsafe, and reports every problem it meets as a
Finding instead of raising, except when the caller asked for one thing that
cannot be had (then a SamctlError).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from samctl import fsafe


@dataclass
class Caps:
    """Size caps for reads; ``--max-file-size`` sets all three to one value."""

    snapshot: int = fsafe.SNAPSHOT_CAP
    log: int = fsafe.LOG_CAP
    other: int = fsafe.SNAPSHOT_CAP

    @classmethod
    def uniform(cls, n: int) -> "Caps":
        return cls(n, n, n)


class Store:
    name = "?"
    id_rule = ""  # one line for error messages
    read_only = False  # another app's store that samctl only reads: writing commands refuse (cli/common.py)

    def __init__(self, conv_dir: Path, base: Path, caps: Caps | None = None, cache: bool = True):
        self.conv_dir = Path(conv_dir)
        self.base = Path(base)
        self.caps = caps or Caps()
        self.root_real = str(Path(conv_dir).resolve())
        # A cache folder inside the store would put samctl's files among the app's, and make a
        # read-only command write there: such a run uses no cache (the CLI says so).
        self.cache_in_store = cache and fsafe.is_inside(self.root_real, fsafe.cache_dir())
        self.use_cache = cache and not self.cache_in_store

    # ids -------------------------------------------------------------
    def valid_id(self, text: str) -> bool:
        raise NotImplementedError

    def prefix_ok(self, text: str) -> bool:
        """True if ``text`` could be the start of a valid id (nothing else is tried)."""
        raise NotImplementedError

    def normalize_prefix(self, text: str) -> str:
        return text

    def all_ids(self) -> list[str]:
        raise NotImplementedError

    def has_id(self, cid: str) -> bool:
        """True if ``cid`` is one of ``all_ids()``; a store answers without listing where it can
        (a whole id typed in a store of 100,000 needs a few lstat calls, not the folder's listing)."""
        return cid in self.all_ids()

    def holds_conversation(self, cid: str) -> bool:
        """False for an id of ``all_ids`` with no conversation file (SAM: a memory scope, a folder
        left empty); an id prefix matching it and one real conversation names the conversation."""
        return True

    # reading ------------------------------------------------------------
    def list_metas(self, findings: list) -> list:
        """Every listed conversation's ConversationMeta, newest first (``model.recency``, stable)."""
        raise NotImplementedError

    def load(self, cid: str, findings: list):
        raise NotImplementedError

    def raw_path(self, cid: str) -> Path:
        raise NotImplementedError

    def raw_part(self, cid: str, path: Path) -> bytes | None:
        """When ``path`` (``raw_path(cid)``) holds other conversations too: ``cid``'s part of it."""
        return None

    def check(self, findings: list, fix: bool = False, force: bool = False) -> list[str]:
        """Append every finding to ``findings``; with ``fix``, return what was changed (``force``:
        also what the owning app is using, where the store can tell per conversation)."""
        raise NotImplementedError

    def describe(self) -> str:
        return f"{self.name} store at {self.conv_dir}"
