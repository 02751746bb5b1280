"""One attic entry as samctl records it: the archive's name, the manifest's fields, its members."""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass, field
from pathlib import Path

MANIFEST_VERSION = 1
LEVEL = 3  # zstd's own default level
TAR_SUFFIX = ".tar.zst"
MANIFEST_SUFFIX = ".manifest.json"


@dataclass
class Entry:
    """An entry's manifest, read and checked (``attic.load_manifest``), or about to be written."""

    stem: str
    id: str
    state: str
    when: str
    when_ts: float
    store: str
    origin: str
    title: str | None
    members: list
    tar_size: int
    tar_sha256: str
    attic: Path
    level: int = LEVEL
    extra: dict = field(default_factory=dict)

    @functools.cached_property
    def tar_path(self) -> Path:
        return self.attic / (self.stem + TAR_SUFFIX)

    @functools.cached_property
    def manifest_path(self) -> Path:
        return self.attic / (self.stem + MANIFEST_SUFFIX)

    @property
    def original_size(self) -> int:
        return sum(m.size for m in self.members)

    def manifest(self) -> dict:
        d = {
            "samctl_attic": MANIFEST_VERSION,
            "id": self.id,
            "state": self.state,
            "when": self.when,
            "when_ts": self.when_ts,
            "store": self.store,
            "from": self.origin,
            "title": self.title,
            "tar": {
                "name": self.stem + TAR_SUFFIX,
                "size": self.tar_size,
                "sha256": self.tar_sha256,
                "level": self.level,
            },
            "members": [m.to_dict() for m in self.members],
        }
        d.update(self.extra)
        return d

    def to_dict(self) -> dict:
        return {
            "entry": self.stem,
            "id": self.id,
            "state": self.state,
            "when": self.when,
            "title": self.title,
            "store": self.store,
            "from": self.origin,
            "files": [m.name for m in self.members if m.type == "file"],
            "original_bytes": self.original_size,
            "stored_bytes": self.tar_size,
            "path": f"{self.attic}{os.sep}{self.stem}{TAR_SUFFIX}",  # str(tar_path), no path object made
            **{k: v for k, v in self.extra.items() if k in ("updated", "pinned")},
        }
