"""samctl's disposable search index: one per store root, in the user's cache folder.

Files: ``manifest``, immutable ``seg-*.seg`` segments and a ``lock``.  Never trusted (checked on every open;
anything wrong is a silent rebuild); the store is only read; writers hold ``lock``, readers take none; numpy
is imported only inside functions.  This module is the facade: it re-exports the package's names.

Design notes: docs/search-index.md, "search/index/__init__.py".
"""

from samctl.search.index.format import (
    CALL,
    FLAG_BASE_DB,
    INDEX_VERSION,
    MEMORY,
    TRAILER,
    BadIndex,
    encode_text,
    index_dir,
    load_numpy,
    lower_ascii,
    row_crc,
    row_crc_head,
    token_key,
)
from samctl.search.index.manifest import write_manifest_bytes
from samctl.search.index.opened import open_index, state
from samctl.search.index.rows import read_source
from samctl.search.index.sources import discover
from samctl.search.index.update import MAX_SEGMENTS, invalidate, refresh

__all__ = [
    "CALL",
    "FLAG_BASE_DB",
    "INDEX_VERSION",
    "MAX_SEGMENTS",
    "MEMORY",
    "TRAILER",
    "BadIndex",
    "encode_text",
    "load_numpy",
    "discover",
    "index_dir",
    "invalidate",
    "lower_ascii",
    "open_index",
    "read_source",
    "refresh",
    "row_crc",
    "row_crc_head",
    "state",
    "token_key",
    "write_manifest_bytes",
]
