"""samctl's disposable search index: one per store root, in the user's cache folder.

Data model
----------
::

    <cache>/search-<store>-<sha256(root realpath)[:24]>/        0700
        manifest     b"SAMCTLIX" | u32 version | u32 crc32(body) | body (JSON)                0600
        seg-*.seg    immutable segments, written to a temp sibling, fsynced, renamed         0600
        lock         flock'ed by the one process that changes the index

A **row** is one searchable text: a SAM memory, a message of a conversation, or a message of a
SAM ``context_archive.db`` chunk ("archived"); a **segment** holds rows and everything a query
needs about them; the **manifest** lists the segments and every **source** (a file, or for
mermaid a conversation's snapshot + log) with its signature and the rows it produced.

The parts, each with its own data model and invariants:

- ``format``    where the index lives, version and magic numbers, row codes, the ``meta`` record,
                the section table, token and dedupe keys, ``BadIndex``;
- ``segment``   writing, opening (checked) and verifying a segment;
- ``manifest``  the manifest's on-disk form, its checked reading, dead and alive rows;
- ``sources``   discovery of the sources (stat only) and change detection;
- ``rows``      building rows from sources (memories, messages, archives), in worker processes
                when there are many;
- ``opened``    the opened ``Index`` and ``state`` (``samctl index``);
- ``update``    refresh, compaction, hidden archived copies, clean-up, ``invalidate``;
- ``memory``    the index built in memory one part at a time, for a search without it
                (``--no-index``).

The query path (candidate selection, mat-vec, token map) is ``samctl.search.retrieve``.

Invariants
----------
- Never trusted: magic, version, root, hash names, crc32 of the manifest body and of each segment
  header, file sizes, section bounds, shapes and offsets are checked on every open; anything
  wrong means "no index" and a silent rebuild.  ``state(verify=True)`` also checks every byte.
- The store is only read (sources through ``memorydb``/the stores' loaders, read-only).
- Writers hold ``lock``; readers take no lock (segments never change, the manifest is replaced
  atomically).
- numpy is imported only inside functions (``samctl --help`` must not import it).

This module is the facade: it re-exports the names the rest of samctl, its tests and benchmarks
use, and nothing else; ``read_source`` is looked up here by the readers of ``rows``, so replacing
it here takes effect.
"""

from samctl import fsafe
from samctl.search.index.format import (FLAG_BASE_DB, INDEX_VERSION, MEMORY, TRAILER, BadIndex, encode_text, load_numpy, index_dir,
                                      row_crc, row_crc_head, token_key)
from samctl.search.index.manifest import write_manifest_bytes
from samctl.search.index.opened import open_index, state
from samctl.search.index.rows import read_source
from samctl.search.index.sources import discover
from samctl.search.index.update import MAX_SEGMENTS, invalidate, refresh

__all__ = [
    "FLAG_BASE_DB", "INDEX_VERSION", "MAX_SEGMENTS", "MEMORY", "TRAILER", "BadIndex", "encode_text", "load_numpy",
    "discover", "fsafe", "index_dir", "invalidate", "open_index", "read_source", "refresh", "row_crc", "row_crc_head", "state",
    "token_key", "write_manifest_bytes",
]
