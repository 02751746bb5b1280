"""What the index is made of, and what changed since it was built: sources and their signatures.

``discover`` costs one ``lstat`` per file and reads nothing; a source is stale when new or its signature
changed; a racy or passingly unreadable file is indexed without a signature (read again next time).

Design notes: docs/search-index.md, "search/index/sources.py".
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
