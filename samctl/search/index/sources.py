"""What the index is made of, and what changed since it was built: sources and their signatures.

Data model
----------
A **source** (``Source``, samctl/stores/sources.py) is what one unit of rows is read from: a file,
or for mermaid a conversation's snapshot + log.  The store finds them (``Store.search_sources``) and
reads their rows (``Store.source_rows``); its key names it in the manifest.  Its signature is
``size:mtime_ns:inode:ctime_ns`` per file, ``-`` for an absent one, joined by ``|``.

Invariants
----------
- ``discover`` runs before every search, so it costs one ``lstat`` per file and little else; it
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

from typing import TYPE_CHECKING

from samctl.stores.sources import Source

if TYPE_CHECKING:
    from samctl.search.index.manifest import Manifest


def discover(store, findings: list, scope: set | None = None) -> dict[str, Source]:
    """Every source of the store (or of the conversations/scopes in ``scope``), by key (the store's
    ``search_sources``: one ``lstat`` per file, as it runs before every search)."""
    return store.search_sources(findings, scope)


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
