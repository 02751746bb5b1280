"""samctl search --like MEMORY_ID: "more like this" over the stored vectors (sam.md §7.7 note).

The stored vector of that memory is the query vector, compared only with stored vectors of the
same length (a 4,096-byte Apple vector only with other 4,096-byte rows), ``cosine`` as SAM
computes it; the keyword part uses QUERY, or the memory's own text.  Stored vectors are read from
the memory databases, which the index does not copy: each is read once, scored with numpy, and
only the best ``limit + RESCORE_MARGIN`` rows are kept and scored again exactly.

Read-only, like the rest of search (``search/dispatch.py``, which hands ``--like`` queries here).
"""

from __future__ import annotations

import heapq
import math

from samctl.errors import PARTIAL, NotFound, SamctlError, UsageError
from samctl.said import Suggestion, said
from samctl.search import index as ix
from samctl.search import sam_scoring
from samctl.search.hits import RESCORE_MARGIN, Hit, SearchQuery, snippet, sort_key


def _memory_sources(store, scope, findings):
    srcs = ix.discover(store, findings, scope)
    return [s for s in srcs.values() if s.holds == "memories"]


class _SeedUnread(SamctlError):
    """``--like``'s memory was not found, and some memory databases could not be read."""

    exit_code = PARTIAL


def _find_seed(store, like: str, sources):
    """(id, blob, content, conversation id, path) of the memory ``like`` names (id or unique prefix)."""
    lo = like.upper()
    seen, unread = {}, []
    for src in sources:
        for mid, blob, content, cid in store.memories_by_prefix(src.paths[0], src.conv, lo, unread):
            if isinstance(mid, str):
                seen.setdefault(mid.upper(), (mid, blob, content, src.conv or str(cid).upper(), src.paths[0]))
    if not seen and unread:  # it may be in a file that could not be read: not "no such memory"
        raise _SeedUnread(
            f"no readable memory {like}; {len(unread)} memory database(s) could not be read: "
            + "; ".join(f.line() for f in unread[:3]),
            hint=said("try again once SAM is idle, or see `", Suggestion("check", None, store), "`"),
        )
    if not seen:
        raise NotFound(
            f"no memory {like} in {store.conv_dir}",
            hint=said(
                "memory ids are listed by `",
                Suggestion("search", None, store, "QUERY --in memories --format json"),
                "`",
            ),
        )
    if len(seen) > 1:
        some = ", ".join(sorted(seen)[:5])
        raise UsageError(f"{like!r} is ambiguous: {len(seen)} memories match ({some})", hint="type more of the id")
    mid, blob, content, cid, path = next(iter(seen.values()))
    if not isinstance(blob, bytes) or not blob or len(blob) % 8:
        raise UsageError(
            f"memory {mid} has no usable stored vector ({len(blob) if isinstance(blob, bytes) else 0} bytes)",
            hint="--like needs a memory with an embedding",
        )
    vec = sam_scoring.unpack_vector(blob)
    if not all(map(math.isfinite, vec)):
        raise UsageError(f"memory {mid} has NaN or infinity in its stored vector")
    return mid, blob, content if isinstance(content, str) else "", cid, path


def search_like(store, q: SearchQuery, scope, findings: list) -> list[Hit]:
    """The hits of ``q`` (``q.like`` set): ``search`` hands it over after checking the query and scope."""
    np = ix.load_numpy()
    disc: list = []
    sources = _memory_sources(store, scope, disc)
    mid, blob, content, _cid, _path = _find_seed(store, q.like, _memory_sources(store, None, []) if scope else sources)
    findings.extend(disc)
    qvec = np.frombuffer(blob, dtype="<f8")
    qnorm = float(np.sqrt(qvec @ qvec))
    length = len(blob)
    qtext = q.text if q.text.strip() else content
    qt = sam_scoring.tokens(qtext)
    size = q.limit + RESCORE_MARGIN
    heap: list = []  # (approximate score, tiebreak, row info), the best ``size``
    seq = 0
    for src in sources:
        rows = []
        for row in store.memory_rows(src.paths[0], findings, src.conv):
            if row.id.upper() == mid.upper():
                continue
            ts = row.created_ts
            if q.since is not None and (ts is None or ts < q.since):
                continue
            if q.until is not None and (ts is None or ts > q.until):
                continue
            if q.min_importance is not None and row.importance < q.min_importance:
                continue
            rows.append(row)
        if not rows:
            continue
        cos = np.zeros(len(rows))
        same = [i for i, r in enumerate(rows) if r.embedding and len(r.embedding) == length]
        if same and qnorm > 0:
            mat = np.frombuffer(b"".join(rows[i].embedding for i in same), dtype="<f8").reshape(len(same), -1)
            norms = np.sqrt(np.einsum("ij,ij->i", mat, mat))
            dots = mat @ qvec
            with np.errstate(divide="ignore", invalid="ignore"):
                c = np.where(norms > 0, dots / (norms * qnorm), 0.0)
            cos[same] = c
        for r, c in zip(rows, cos.tolist()):
            approx = c + sam_scoring.text_boost(qt, r.content)
            if approx < q.threshold - 1e-9:
                continue
            seq += 1
            item = (approx, -seq, (r, src))
            if len(heap) < size:
                heapq.heappush(heap, item)
            elif item > heap[0]:
                heapq.heapreplace(heap, item)
    qlist = sam_scoring.unpack_vector(blob)
    hits = []
    for _, _, (r, src) in heap:
        cos = sam_scoring.cosine(qlist, r.vector()) if r.embedding and len(r.embedding) == length else 0.0
        boost = sam_scoring.text_boost(qt, r.content)
        score = cos + boost
        if score < q.threshold:
            continue
        conv = src.conv or r.conversation_id.upper()
        hits.append(
            Hit(
                kind="memory",
                conversation_id=conv,
                title="",
                ref=r.id,
                position=r.rowid,
                date_ts=r.created_ts,
                importance=r.importance,
                text=r.content,
                score=score,
                cosine=cos,
                boost=boost,
                content_type=r.content_type,
                dimension=r.dimension,
                store=store.name,
                source=src.paths[0],
            )
        )
    hits.sort(key=sort_key)
    hits = hits[: q.limit]
    titles = _titles(store, {h.conversation_id for h in hits})
    for h in hits:
        h.title = titles.get(h.conversation_id, "")
        h.snippet = snippet(h.text, qtext)
    return hits


def _titles(store, ids: set) -> dict:
    """Titles for a few conversation/scope ids: from their conversation.json, else from the index."""
    out = {}
    rest = set()
    for cid in ids:
        try:
            conv = store.load(cid, [])
        except Exception:  # noqa: BLE001 - a scope without conversation.json
            conv = None
        if conv is not None:
            out[cid] = conv.meta.title
        else:
            rest.add(cid)
    if rest and store.use_cache:
        try:
            idx = ix.open_index(store)
        except ix.BadIndex:
            idx = None
        for cid in rest:
            if idx is not None:
                out[cid] = idx.title_of(cid)
    return out
