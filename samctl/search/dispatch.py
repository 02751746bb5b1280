"""samctl search: SAM's memory retrieval and message search over a whole store (docs/formats/sam.md §7.7, §11).

A result and its score are the same with or without the index and equal to a row-by-row evaluation
(candidates are rescored exactly, in float64); ties by (kind, conversation id, position).  Nothing here
writes into a store: ``touch`` is called by the CLI after checking SAM is not running.

Design notes: docs/search-index.md, "search/dispatch.py".
"""

from __future__ import annotations

import bisect
import math
import os
import re
import shutil
import tempfile
import unicodedata
from dataclasses import dataclass, replace
from pathlib import Path

from samctl.errors import FileProblem, NotFound, UsageError
from samctl.model import ERROR, INFO, Finding
from samctl.safetext import quoted
from samctl.said import Suggestion, said
from samctl.search import grouped, halves, heap, sam_scoring
from samctl.search import index as ix
from samctl.search.hits import (  # noqa: F401
    KIND_ORDER,
    RESCORE_MARGIN,
    Hit,
    SearchQuery,
    excerpt,
    find_ci,
    folded_find,
    snippet,
    sort_key,
)
from samctl.stores.resolve import Listed, resolve_id

WHERE = ("memories", "messages", "args", "all")
EPS = 1e-4  # bound on |float32 approximate score - exact score|, with a wide margin
_UUID_PREFIX = re.compile(r"[0-9A-Fa-f-]{1,36}\Z")
_TEMPLATE = "00000000-0000-0000-0000-000000000000"
_UUID = re.compile(r"[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}\Z")


def _check(store, q: SearchQuery) -> str:
    if q.like and q.exact:
        raise UsageError("--like and --exact do not go together", hint="--exact is a plain substring search")
    if not q.like and not q.text.strip():
        raise UsageError("nothing to search for", hint="give a QUERY, or --like MEMORY_ID")
    where = q.where or ("memories" if q.like else "all")
    if where not in WHERE:
        raise UsageError(f"--in {where!r}: use memories, messages, args or all")
    if q.like:
        if not store.has_memories:
            raise UsageError(
                f"--like compares the stored vectors of SAM memories; this is a {store.name} store",
                hint="use a SAM store",
            )
        if where != "memories":
            raise UsageError(
                "--like compares stored memory vectors; messages have none", hint="leave out --in, or use --in memories"
            )
        if not _UUID_PREFIX.match(q.like) or not _UUID.match(q.like + _TEMPLATE[len(q.like) :]):
            raise UsageError(
                f"{q.like!r} is not a memory id or id prefix",
                hint=said(
                    "memory ids are UUIDs; `",
                    Suggestion("search", rest="QUERY --in memories --format json"),
                    "` shows them",
                ),
            )
    if q.limit < 0:
        raise UsageError("--limit must be 0 or more")
    return where


def resolve_scope(store, texts) -> set | None:
    """The conversation ids (and, for SAM, their shared-topic scopes) that ``--conversation`` names."""
    if not texts:
        return None
    scope = set()
    view = Listed(store)  # the store listed once, however many texts
    for t in texts:
        cid = resolve_id(view, t)
        scope.add(cid)
        topic = store.memory_scope_of(cid)
        if topic:
            scope.add(topic)
    return scope


def search(
    stores, q: SearchQuery, findings: list, progress=None, plan=None, notes: list | None = None, within=None
) -> list[Hit]:
    """The hits of ``q`` in ``stores`` (one store, or a list: ranked together, statistics over all of
    them), best first.  Bad files become ``findings``; raises UsageError/NotFound.  ``plan``: the
    parsed query (``search.query``) for the default ranking.  ``notes``: where the lines to say on
    stderr about how the query was read go (a quoted phrase found nowhere, searched as words).
    ``within`` (--project): id(store) -> the only conversation ids whose rows may be hits (a store
    not in it has none); the other rows still count in the statistics, but are never ranked, so a
    conversation with few hits is never crowded out by others."""
    heap.keep_freed_memory()  # (arrays of a value per row, made and dropped: their pages kept for the next)
    stores = list(stores) if isinstance(stores, (list, tuple)) else [stores]
    if q.like and len(stores) > 1:
        stores = [s for s in stores if s.has_memories] or stores[:1]  # (the error names the first)
    where = [_check(s, q) for s in stores][0]
    scopes = _scopes(stores, q.conversations)
    stores = [s for s in stores if id(s) in scopes]
    hits_in = scopes if within is None else _within(scopes, within)  # (what may be a hit; scopes: what to refresh)
    if not any(v is None or v for v in hits_in.values()):
        return []
    if q.like:
        from samctl.search import like  # (lazy: not loaded by ls or --help)

        return _merged([like.search_like(s, q, scopes[id(s)], findings) for s in stores], q, sort_key)
    if q.limit == 0:
        return []
    if q.exact or q.rank == "sam":

        def one(store):
            scope = scopes[id(store)]
            return _with_indexes(
                [store],
                q,
                findings,
                progress,
                lambda pairs: _best(*_candidates(store, pairs[0][1], q, where, hits_in[id(store)]), q),
                scope,
            )

        return grouped.unique(_merged([one(s) for s in stores], q, _exact_order if q.exact else sort_key))
    from samctl.search import fulltext  # (lazy: numpy-heavy, not loaded by ls or --help)
    from samctl.search.query import Query  # (lazy: as ranked)

    plan = plan or Query(words=(q.text,))

    def answer(pairs):
        hits = fulltext.search(pairs, q, plan, _hit, hits_in)
        if hits or not plan.phrases:
            return hits
        # a quoted phrase people remember is often not word for word what was said: one found nowhere
        # is searched as its words, and a line says so
        loose = replace(plan, words=plan.words + plan.phrases, phrases=())
        if notes is not None:
            said = ", ".join(quoted(p) for p in plan.phrases)
            notes.append(
                f"note: no match for the phrase{'s' if len(plan.phrases) > 1 else ''} {said} word for "
                f"word; searched for {'their' if len(plan.phrases) > 1 else 'its'} words"
            )
        return fulltext.search(pairs, q, loose, _hit, hits_in)

    return _with_indexes(stores, q, findings, progress, answer)


def _scopes(stores: list, texts) -> dict:
    """id(store) -> what ``--conversation`` names in it (None: the whole store), for the stores where
    it names something; NotFound when it names nothing in any."""
    if not texts:
        return {id(s): None for s in stores}
    out, missing = {}, None
    for s in stores:
        try:
            out[id(s)] = resolve_scope(s, texts)
        except NotFound as exc:
            missing = missing or exc
    if not out:
        raise missing
    return out


def _within(scopes: dict, within: dict) -> dict:
    """id(store) -> the conversations whose rows may be hits: those of ``scopes`` (None: all) that
    ``within`` keeps too."""
    out = {}
    for k, scope in scopes.items():
        keep = set(within.get(k, ()))
        out[k] = keep if scope is None else scope & keep
    return out


def _merged(lists: list, q: SearchQuery, key) -> list[Hit]:
    """The hits of several stores in one order, the first ``limit``."""
    if len(lists) == 1:
        return lists[0]
    return sorted((h for hits in lists for h in hits), key=key)[: q.limit]


def _exact_order(h: Hit):
    return _exact_key(h.exact == "whole", -math.inf if h.date_ts is None else h.date_ts, h)


def _with_indexes(stores: list, q: SearchQuery, findings: list, progress, answer, scope: set | None = None):
    """``answer([(store, index), ...])`` with every store's index up to date: for ``scope`` (--exact and
    --rank sam of one store), else whole (BM25 needs every row's statistics, whatever
    ``--conversation``); without the cache (``--no-index``), indexes built in temporary folders removed
    afterwards.  Indexes that cannot be used (``answer`` finds one broken, too) are rebuilt once; if
    that fails too, the search is made on temporary ones."""
    attempt, quick = 0, True
    while attempt < 3:
        local: list = []
        tmps: list = []
        pairs = []
        pending: list | None = [] if quick else None  # last full checks trusted while their folders are stated
        try:
            for store in stores:
                disk = q.use_index and store.use_cache and attempt < 2
                if not disk:
                    tmps.append(tempfile.mkdtemp(prefix="samctl-search-"))
                pairs.append(
                    (
                        store,
                        ix.refresh(
                            store,
                            local,
                            scope=scope,
                            rebuild=attempt == 1,
                            progress=progress,
                            home=None if disk else Path(tmps[-1]),
                            pending=pending,
                            # (several stores: ranking them hides a child's start)
                            child_check=len(stores) > 1,
                        ),
                    )
                )
            # (a child stating folders on the other core: the ranking's passes in this thread alone)
            with halves.one_thread(any(p.stating for p in pending or ())):
                hits = answer(pairs)
        except (ix.BadIndex, IndexError, ValueError, KeyError, UnicodeDecodeError, OSError) as exc:
            for p in pending or ():
                p.holds()  # (its thread finished before a rebuild forks workers)
            if len(tmps) == len(stores) or os.environ.get("SAMCTL_DEBUG") == "1":
                raise
            if attempt == 1 and _samctls_own(exc, pairs, stores):
                raise
            attempt += 1
            continue  # an index that cannot be used: rebuild it, then do without
        finally:
            for tmp in tmps:
                shutil.rmtree(tmp, ignore_errors=True)
        if pending and not all(p.holds() for p in pending):
            quick = False  # a folder changed since the last full check: check fully, search again
            continue
        findings.extend(local)
        for store, idx in pairs:
            _note_replaced(store, idx, findings)
        return hits
    raise AssertionError("unreachable")  # pragma: no cover


def _samctls_own(exc: Exception, pairs: list, stores: list) -> bool:
    """Whether an error on indexes just rebuilt is a bug of samctl's, not of the indexes: one that is
    no index's (not BadIndex or OSError), with every index opened and every byte of it matching its
    checksum.  Building them again in temporary folders would write the same bytes and fail the same
    way: one more full build of every store before the error is shown."""
    if isinstance(exc, (ix.BadIndex, OSError)) or len(pairs) != len(stores):
        return False
    try:
        for _, idx in pairs:
            idx.manifest.check()
            if any(seg.verify() for seg in idx.segments):
                return False
    except (ix.BadIndex, OSError, ValueError):
        return False
    return True


def _note_replaced(store, idx, findings: list) -> None:
    if idx.replaced:
        findings.append(
            Finding(
                "index-replaced",
                str(ix.index_dir(store)),
                f"the search index of an older samctl ({idx.replaced >> 20} MiB) was replaced",
                INFO,
            )
        )


def _masks(idx, q: SearchQuery, where: str, scope: set | None):
    """(segment, mask of the rows the filters keep) for every segment with at least one."""
    np = ix.load_numpy()
    for seg in idx.segments:
        if not seg.rows:
            continue
        meta = seg.meta
        mask = seg.alive
        if scope is not None:
            wanted = [i for i, c in enumerate(seg.convs) if c in scope]
            if not wanted:
                continue
            mask = mask & np.isin(meta["conv"], np.array(wanted, dtype=np.int32))
        if where == "memories":
            mask = mask & (meta["kind"] == ix.MEMORY)
        elif where == "messages":
            mask = mask & (meta["kind"] != ix.MEMORY)
        elif where == "args":
            mask = mask & (meta["kind"] == ix.CALL)
        if q.rank == "sam" and not q.exact:  # (SAM's own retrieval scores memories and messages: no tool calls)
            mask = mask & (meta["kind"] != ix.CALL)
        if q.since is not None:
            mask = mask & (meta["date"] >= q.since)
        if q.until is not None:
            mask = mask & (meta["date"] <= q.until)
        if q.min_importance is not None:
            mask = mask & (meta["imp"] >= q.min_importance)
        yield seg, mask


@dataclass
class _Candidates:
    """Rows chosen for a closer look (``hits``: each as a Hit, not yet scored exactly), with the key
    they were chosen by (``keys``: the approximate score; with ``--exact``, the order of the results
    itself, ``_exact_key``)."""

    keys: object  # numpy array (float32 scores) or a list of _exact_key tuples
    hits: list

    def cut(self, limit: int) -> _Candidates:
        if isinstance(self.keys, list):  # --exact: a total order, so exactly the first ``limit``
            keep = sorted(range(len(self.keys)), key=self.keys.__getitem__)[:limit]
            return _Candidates([self.keys[i] for i in keep], [self.hits[i] for i in keep])
        np = ix.load_numpy()
        ((_, rows, keys),) = _cut([(None, np.arange(len(self.hits)), self.keys)], limit)
        return _Candidates(keys, [self.hits[i] for i in rows.tolist()])


def _candidates(store, idx, q: SearchQuery, where: str, scope) -> tuple[_Candidates, int]:
    """(the candidates of ``idx`` for ``q``, already cut, how many there were before the cut)."""
    return (_exact_candidates if q.exact else _scored_candidates)(store, idx, q, where, scope)


def _best(cands: _Candidates, total: int, q: SearchQuery) -> list[Hit]:
    """The results, with their snippets: the candidates that the cut of all ``total`` keeps (a cut
    keeps what a cut of its output keeps: ``_cut``), scored exactly, at or over the threshold, best
    first, the first ``limit``; with --exact, the first ``limit`` in ``_exact_key`` order."""
    if q.exact:
        out = cands.cut(q.limit).hits
        needle = sam_scoring.fold(q.text)
        for h in out:
            text = h.text if h.text.isascii() else unicodedata.normalize("NFC", h.text)  # (what matched)
            i = find_ci(text, needle)
            if i < 0:  # lowercasing and NFC do not commute for a few letters (Greek with perispomeni)
                i = folded_find(text, needle)
            h.snippet = excerpt(text, max(i, 0), len(needle) if i >= 0 else 0)
        return out
    if total > q.limit + RESCORE_MARGIN:
        cands = cands.cut(q.limit)
    qv, qt = sam_scoring.embed(q.text), sam_scoring.tokens(q.text)
    hits = []
    for h in cands.hits:  # each candidate's score, exactly
        h.cosine = sam_scoring.cosine(qv, sam_scoring.embed(h.text)) if qv is not None else 0.0
        h.boost = sam_scoring.text_boost(qt, h.text)
        h.score = h.cosine + h.boost
        if h.score >= q.threshold:
            hits.append(h)
    hits = sorted(hits, key=sort_key)[: q.limit]
    for h in hits:
        h.snippet = snippet(h.text, q.text)
    return hits


def _cut(found: list, limit: int) -> list:
    """The candidates worth scoring exactly, of ``found`` = [(segment, rows, approximate scores)]:
    the best ``limit`` and everything within 2 ``EPS`` of the last of them; if that is still more
    than ``RESCORE_MARGIN`` beyond the limit (many near-ties), the best approximations.

    A cut of the union of cuts keeps what one cut of the whole keeps: the best ``limit`` of the
    whole are among the best of their part, so the last of them, and with it every value the
    whole's cut keeps, is the same; what a part's cut dropped is below that.  So segments can be
    cut one by one, and a cut of a cut changes nothing.  This needs a row's approximate score to be
    the same however the rows are split (``_scored_candidates``, which embeds a chunk at a time)."""
    np = ix.load_numpy()
    total = sum(len(r) for _, r, _ in found)
    allscores = np.concatenate([s for _, _, s in found])
    kth = np.partition(allscores, total - limit)[total - limit]
    cut = kth - 2 * EPS
    picked = []
    for seg, rows, s in found:
        k = s >= cut
        picked.append((seg, rows[k], s[k]))
    found = picked
    total = sum(len(r) for _, r, _ in found)
    if total > limit + RESCORE_MARGIN:  # many near-ties: the best approximations win
        allscores = np.concatenate([s for _, _, s in found])
        cut = np.partition(allscores, total - limit - RESCORE_MARGIN)[total - limit - RESCORE_MARGIN]
        found = [(seg, rows[s >= cut], s[s >= cut]) for seg, rows, s in found]
    return found


EXACT_COPIES = 4096  # --exact: at most this many rows beyond the limit are looked at for copies of a message
SAM_CHUNK = 1 << 15  # rows embedded at a time by --rank sam (256 float32 each: 32 MiB)


def _scored_candidates(store, idx, q: SearchQuery, where: str, scope) -> tuple[_Candidates, int]:
    """--rank sam: every row the filters keep, scored as SAM scores a memory (cosine of the hash
    embeddings + the keyword boost), the embeddings made here a chunk at a time (the index keeps no
    vectors).  The boost is computed exactly where it can be non-zero: in the rows whose folded
    text holds one of the query's words (a word the row has, its folded text holds)."""
    np = ix.load_numpy()
    qv = sam_scoring.embed(q.text)
    qt = sam_scoring.tokens(q.text)
    q32 = np.array(qv, dtype=np.float32) if qv is not None else None
    needles = [ix.encode_text(t) for t in sorted(qt)]
    floor = q.threshold - EPS
    found = []  # (segment, rows, approximate scores)
    for seg, mask in _masks(idx, q, where, scope):
        rows = np.flatnonzero(mask)
        score = np.zeros(len(rows), dtype=np.float32)
        if q32 is not None:
            for a in range(0, len(rows), SAM_CHUNK):
                part = rows[a : a + SAM_CHUNK].tolist()
                vecs = sam_scoring.embed_many([seg.text(r) for r in part])
                score[a : a + len(part)] = _dots(vecs, q32)
        if needles:
            with_word = _rows_holding(seg, mask, needles)
            at = np.searchsorted(rows, with_word)
            for i, r in zip(at.tolist(), with_word.tolist()):
                score[i] += sam_scoring.text_boost(qt, seg.text(r))
        keep = score >= floor
        found.append((seg, rows[keep], score[keep]))
    total = sum(len(r) for _, r, _ in found)
    limit = q.limit
    while True:  # (copies of a message, which score alike, count once: the cut widened until enough)
        cut = _cut(found, limit) if total > limit + RESCORE_MARGIN else found
        rows = [(seg, r, approx) for seg, rs, ap in cut for r, approx in zip(rs.tolist(), ap.tolist())]
        one = grouped.newest_copies(
            [((int(seg.meta[r]["kind"]), seg.ref(r) or (id(seg), r)), seg, r, (seg, r, a)) for seg, r, a in rows],
            {},
        )
        if len(one) >= q.limit or cut is found:
            break
        limit *= 4
    keys = np.array([a for _, _, a in one], dtype=np.float32)
    hits = [_hit(store, idx, seg, r, seg.text(r)) for seg, r, _ in one]
    return _Candidates(keys, hits), total


def _hit(store, idx, seg, r: int, text: str) -> Hit:
    """Row ``r`` of ``seg`` as a result, once its crc32 says it is as it was indexed (else BadIndex,
    and the search rebuilds the index and runs again)."""
    kind, role, ctype, conv = seg.row(r)
    m = seg.meta[r]
    date = float(m["date"])
    got = ix.row_crc_head(
        conv,
        int(m["kind"]),
        int(m["role"]),
        int(m["ctype"]),
        int(m["flags"]),
        int(m["pos"]),
        date,
        float(m["imp"]),
        int(m["dim"]),
        seg.size("text", r),
        seg.size("ltext", r),
    )
    for blob in ("text", "ltext", "ref"):  # (read in place: a long text is not copied to be checked)
        got = seg.crc(blob, r, got)
    if got != int(m["crc"]):
        raise ix.BadIndex(f"{seg.name}: row {r} does not match its checksum")
    h = Hit(
        kind=kind,
        conversation_id=conv,
        title=idx.title_of(conv),
        ref=seg.ref(r) or None,
        position=int(m["pos"]),
        date_ts=None if math.isnan(date) else date,
        importance=float(m["imp"]),
        text=text,
        store=store.name,
    )
    if kind == "memory":
        h.content_type = ctype or None
        h.dimension = int(m["dim"])
        h.source = store.memory_db(None if int(m["flags"]) & ix.FLAG_BASE_DB else conv)
    else:
        h.role = role or None
    return h


DOTS_CHUNK = 1 << 16  # rows per piece of the approximate scores, computed by several threads
_dots_pool = None


def _forget_dots_pool() -> None:
    global _dots_pool
    _dots_pool = None  # a forked child has no threads behind the parent's pool


os.register_at_fork(after_in_child=_forget_dots_pool)


def _dots(vectors, q):
    """``vectors @ q`` (float32), row by row with einsum rather than BLAS: a row's value must not
    depend on where it sits or how many rows there are (BLAS's can differ in the last bit), or
    near-ties would be cut differently depending on how the rows are chunked and segmented.  Big
    matrices are split among threads (einsum lets go of the GIL): faster than BLAS's one call."""
    np = ix.load_numpy()
    if len(vectors) < 2 * DOTS_CHUNK:
        return np.einsum("ij,j->i", vectors, q)
    global _dots_pool
    if _dots_pool is None:
        import concurrent.futures  # (lazy: concurrent: not loaded by ls or --help)

        _dots_pool = concurrent.futures.ThreadPoolExecutor(
            min(os.cpu_count() or 1, 4), thread_name_prefix="samctl-dots"
        )
    out = np.empty(len(vectors), dtype=np.float32)

    def piece(a: int) -> None:
        np.einsum("ij,j->i", vectors[a : a + DOTS_CHUNK], q, out=out[a : a + DOTS_CHUNK])

    list(_dots_pool.map(piece, range(0, len(vectors), DOTS_CHUNK)))
    return out


def _exact_candidates(store, idx, q: SearchQuery, where: str, scope) -> tuple[_Candidates, int]:
    """The rows holding the folded query, found in each segment's folded blob (``_rows_holding``);
    which of them can be among the first ``limit`` is decided on numpy arrays of their keys, and
    only those become Hits (a common word in 150,000 messages made 90,000 Hits: 8 s)."""
    np = ix.load_numpy()
    needle = sam_scoring.fold(q.text)  # as the index folds every text (rows.process)
    nb = ix.encode_text(needle)
    found = []  # (segment, rows)
    for seg, mask in _masks(idx, q, where, scope):
        rows = _rows_holding(seg, mask, nb)
        if len(rows):
            found.append((seg, rows))
    total = sum(len(rows) for _, rows in found)
    if not total:
        return _Candidates([], []), 0
    names = sorted({c for seg, _ in found for c in seg.convs})
    rank = {c: i for i, c in enumerate(names)}
    cols = []  # per segment: whole, date, kind, conversation rank, position (``_exact_key`` but the id)
    for seg, rows in found:
        flen = np.diff(seg.ltext_off)[rows]
        flen = np.where(flen > 0, flen, np.diff(seg.text_off)[rows])  # (the folded form, kept or made here)
        meta = seg.meta[rows]
        date = meta["date"]
        conv = np.array([rank[c] for c in seg.convs] or [0], dtype=np.int64)[meta["conv"]]  # (bad codes: IndexError)
        cols.append(
            (flen == len(nb), np.where(np.isnan(date), -np.inf, date), meta["kind"].astype(np.int64), conv, meta["pos"])
        )
    whole, date, kind, conv, pos = (np.concatenate(c) for c in zip(*cols))
    keys = (pos, conv, kind, -date, ~whole)  # np.lexsort sorts by the last first
    order = np.lexsort(keys)
    # the first ``limit`` messages, each counted once however many copies (a resumed session's) hold it,
    # and every row of the last one's (whole, date, kind): the copies of a message share those, so all
    # its copies are met and the newest can be chosen
    starts = [0]
    for _, rows in found:
        starts.append(starts[-1] + len(rows))
    seen: set = set()
    picked, block = [], None
    for j in order.tolist():
        here = (bool(whole[j]), float(date[j]), int(kind[j]))
        if (len(seen) >= q.limit and here != block) or len(picked) >= q.limit + EXACT_COPIES:
            break
        s = bisect.bisect_right(starts, j) - 1
        seg, r = found[s][0], int(found[s][1][j - starts[s]])
        k = (here[2], seg.ref(r))
        if not k[1]:  # where it is; a call's text too (a message's calls share its place)
            k = (here[2], (seg.convs[int(seg.r_conv[r])], int(pos[j]), seg.text(r) if here[2] == ix.CALL else ""))
        seen.add(k)
        picked.append((k, seg, r, j))
        block = here
    one = grouped.newest_copies([(k, seg, r, (seg, r, j)) for k, seg, r, j in picked], {})

    # of those, the first ``limit`` in the results' order and every row tied with the last of them (only
    # the id tells those apart): Hits are made of these only
    def tie(x):
        j = x[2]
        return (not whole[j], -float(date[j]), int(kind[j]), int(conv[j]), int(pos[j]))

    one.sort(key=tie)
    if len(one) > q.limit:
        last = tie(one[q.limit - 1])
        one = one[: q.limit] + [x for x in one[q.limit :] if tie(x) == last]
    hits, hkeys = [], []
    for seg, r, j in one:
        h = _hit(store, idx, seg, r, seg.text(r))
        h.exact = "whole" if whole[j] else "substring"
        hits.append(h)
        hkeys.append(_exact_key(bool(whole[j]), float(date[j]), h))
    return _Candidates(hkeys, hits).cut(q.limit), total


FOLD_WINDOW = 1 << 18  # bytes of text lowered at a time by ``_rows_holding`` (a longer row: the row);
# small, so that the allocator reuses its buffers: a large window is fresh pages from the kernel each time


def _rows_holding(seg, mask, nb):
    """The rows of ``seg`` that ``mask`` keeps whose folded text holds ``nb`` (bytes, or a list of
    them: any of them), ascending.

    A row's folded text is its section ``ltext`` where that is not empty, else its text lowered here
    (``ix.lower_ascii``: the index keeps a folded form only where that is not it), a window of
    ``FOLD_WINDOW`` bytes of rows at a time, once for every needle.  A match that runs from one row
    into the next counts for neither."""
    np = ix.load_numpy()
    needles = [nb] if isinstance(nb, (bytes, bytearray)) else list(nb)
    kept = np.diff(seg.ltext_off) > 0
    mask = np.asarray(mask, dtype=bool)
    stored = _find_in_runs(seg, "ltext", mask & kept, needles, False)
    # (a needle without ASCII letters matches the text where it matches it lowered: nothing to lower)
    lower = any(n.upper() != n for n in needles)
    lowered = _find_in_runs(seg, "text", mask & ~kept, needles, lower)
    return np.unique(np.array(stored + lowered, dtype=np.int64))


def _find_in_runs(seg, kind: str, mask, needles: list, lower: bool) -> list:
    """The rows ``mask`` keeps whose bytes of the blob ``kind`` hold one of ``needles``, lowered first
    if ``lower`` (a row may come once for each needle).  Searched run by run of the rows kept (a
    conversation's rows are together), a window of rows at a time read with ``Segment.blob_bytes`` (never
    the whole blob mapped at once: its pages would count as the process's memory), with ``find``;
    after a match, the search goes on at the end of its row."""
    np = ix.load_numpy()
    if not mask.any():
        return []
    off = seg.offsets(kind).tolist()
    m = np.concatenate(([0], mask.astype(np.int8), [0]))
    edges = np.flatnonzero(np.diff(m)).tolist()
    out: list = []
    for a, b in zip(edges[0::2], edges[1::2]):
        while a < b:  # a window of rows at a time (a longer row: the row)
            c = max(a + 1, bisect.bisect_right(off, off[a] + FOLD_WINDOW, a + 1, b + 1) - 1)
            hay = seg.blob_bytes(kind, off[a], off[c])
            if lower:
                hay = ix.lower_ascii(hay)
            for nb in needles:
                _find_rows(hay, -off[a], off, a, c, nb, out)
            a = c
    return out


def _find_rows(hay, base: int, off: list, a: int, b: int, nb: bytes, out: list) -> None:
    """Appends to ``out`` the rows ``a`` to ``b`` (exclusive) whose bytes, ``hay[base + off[r]:
    base + off[r + 1]]``, hold ``nb``."""
    end = base + off[b]
    n = len(nb)
    p = hay.find(nb, base + off[a], end)
    while p != -1:
        r = bisect.bisect_right(off, p - base, a, b + 1) - 1
        stop = base + off[r + 1]
        if p + n <= stop:
            out.append(r)
            p = hay.find(nb, stop, end)
        else:
            p = hay.find(nb, p + 1, end)


def _exact_key(whole: bool, date: float, h: Hit) -> tuple:
    """The order of --exact results: whole matches first, then newest, then as every result is ordered."""
    return (not whole, -date, KIND_ORDER[h.kind], h.conversation_id, h.position, h.ref or "")


# ---------------------------------------------------------------------------------------------
# --touch


def touch(store, hits: list[Hit], findings: list | None = None) -> int:
    """SAM's retrieval side effect for the returned memories: ``access_count + 1``,
    ``last_accessed = now`` (docs/formats/sam.md §7.7 step 3), one short transaction per memory.db.  The caller holds
    samctl's store lock and has checked that SAM is not running.  A memory.db that cannot or must
    not be written (``Store.touch_memories``) is left as it is: an error in ``findings`` (raised
    when no list is given); the others are still touched."""
    by_file: dict[str, list[str]] = {}
    for h in hits:
        if h.kind == "memory" and h.source and h.ref:
            by_file.setdefault(h.source, []).append(h.ref)
    done = 0
    for path, ids in sorted(by_file.items()):
        try:
            done += store.touch_memories(path, ids)
        except FileProblem as exc:
            if findings is None:
                raise
            findings.append(Finding(exc.code, path, f"{exc.message}; its memories were not touched", ERROR))
    return done


__all__ = ["SearchQuery", "Hit", "search", "touch", "excerpt", "snippet", "resolve_scope", "UsageError", "NotFound"]
