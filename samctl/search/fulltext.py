"""samctl search's default ranking: BM25 with conversation-aware evidence (``bm25.py``) over the index.

``search`` scores every alive row of the given indexes as one corpus (``corpus.IndexCorpus``), keeps
the rows the filters and the query's operators allow, and returns the best as Hits, ordered by score,
then as every search orders (``hits.sort_key``), so an index rebuilt and one refreshed in parts give the
same list.  A phrase is checked on the text of the rows that would be shown, best first, until enough
have it.

Design notes: docs/search-index.md, "search/fulltext.py".
"""

from __future__ import annotations

from samctl.search import bm25, grouped
from samctl.search import text as tx
from samctl.search.calls import is_call_of
from samctl.search.corpus import IndexCorpus, terms_with_prefix
from samctl.search.hits import KIND_ORDER, Hit, sort_key, term_snippet
from samctl.search.index.format import CALL, MEMORY, ROLES, load_numpy
from samctl.search.query import FoldedTitles, phrase_test, title_matches

MAX_TIES = 2000  # rows tied with the last one shown that are still ordered by sort_key
NEIGHBOURS = ((-1, "before"), (1, "after"))


def _word_terms(word: str) -> list[str]:
    """The index terms a word of the query stands for (stop words kept: ``+the`` means it)."""
    return list(dict.fromkeys(tx.tokens(word)))


def search(pairs: list, q, plan, make_hit, scopes: dict, params: bm25.Params = bm25.Params()) -> list[Hit]:
    """The best ``q.limit`` rows of ``pairs`` = [(store, Index)] for ``plan`` (a parsed query), as Hits
    made by ``make_hit(store, index, segment, row, text)``; ``scopes``: id(store) -> the conversations
    --conversation names in it (None: all)."""
    np = load_numpy()
    segments = [seg for _, idx in pairs for seg in idx.segments]
    expand = {p: terms_with_prefix(segments, p) for p in (*plan.prefixes, *plan.required_prefixes)}
    extra = [t for p in (*plan.prefixes, *plan.required_prefixes) for t in expand[p]]
    # (the segments holding none of the ranked terms: rows scoring 0, left out but for their statistics)
    corpus = IndexCorpus(pairs, bm25.ranked_terms(plan.ranked_text, extra))
    if not corpus.size:
        return []
    info: dict = {}
    got = bm25.parts(corpus, plan.ranked_text, params, extra, info)
    score = got["score"]
    masks = [corpus.live]  # (a row scoring > 0 is alive; belt and braces) and what filters and operators keep
    f = _filters(corpus, q, plan, scopes)
    if f is not None:
        masks.append(f)
    for word in plan.required:
        masks += [corpus.holding(t) for t in _word_terms(word)]
    for phrase in plan.phrases:  # a row lacking a word of the phrase cannot hold it
        masks += [corpus.holding(t) for t in _word_terms(phrase)]
    for word in plan.excluded:
        terms = _word_terms(word)
        if terms:
            masks.append(~np.logical_and.reduce([corpus.holding(t) for t in terms]))
    for p in plan.required_prefixes:
        masks.append(_holding_any(corpus, expand[p]))
    for p in plan.excluded_prefixes:
        masks.append(~_holding_any(corpus, corpus.terms_with_prefix(p)))

    def allowed(rows):
        for m in masks:
            rows = rows[m[rows]]
        return rows

    # (more rows than shown: a conversation's run of hits cut, and -l's conversations, come from them)
    limit = q.limit * 2 if q.per_conversation else q.limit
    if q.by_conversation:
        limit = max(q.limit * 10, 100)
    rows, gate, taken = None, grouped.Copies(corpus), []
    floor = info.get("floor", 0)

    def at_least(t: float):
        """``bm25.rows_at_least(score, t)``: among the pool's rows when ``t`` is at or above its floor."""
        if floor > 0 and t >= floor:
            pool = info["pool"]
            return pool[score[pool] >= t]
        return bm25.rows_at_least(score, t)

    if floor > 0:  # the best rows first: enough of them are at or above the pool's cut
        rows = _best_rows(corpus, score, allowed(at_least(floor)), limit, plan, False, gate, taken)
    if rows is None:  # (too few there: the walk goes on below the cut, from where it stopped)
        below = np.flatnonzero((score > 0) & (score < floor) if floor > 0 else score > 0)
        rows = _best_rows(corpus, score, allowed(below), limit, plan, True, gate, taken)
    _meet_copies(corpus, got["own"], score, allowed, rows, gate, at_least)
    rows = [gate.newest(r) for r in rows]  # (a message met in several copies: the newest copy's row)
    terms = set(tx.query_terms(plan.ranked_text)) | set(extra)
    if len(rows) > limit:  # rows tied with the last shown: ordered by sort_key's fields, read cheaply
        rows = sorted(rows, key=lambda r: _key(corpus, score, r))[:limit]
    if q.by_conversation:  # each conversation's best row, best first
        rows = gate.best_of_each(sorted(rows, key=lambda r: _key(corpus, score, r)))[: q.limit]
    counts = _conversation_hits(corpus, score, allowed, rows) if q.by_conversation else None
    hits = []
    for r in rows:
        part, local = corpus.locate(int(r))
        h = make_hit(part.store, part.index, part.seg, local, part.seg.text(local))
        h.score = _shown(score[r])
        h.parts = {k: _shown(v[r]) for k, v in got.items() if k != "score"}
        h.snippet, h.marks = term_snippet(h.text, terms)
        if not h.marks:
            h.context = _context(corpus, got, int(r), terms)
        if counts is not None:
            h.conversation_hits = counts[int(r)]
        hits.append(h)
    hits.sort(key=sort_key)
    hits = grouped.unique(hits)  # (belt and braces: the gate let no copy through)
    if not q.by_conversation:
        hits = grouped.interleave(hits, q.per_conversation)
    return hits[: q.limit]


def _shown(x) -> float:
    """A score (float32) as the float its shortest decimal is: 4.6422052, not 4.642205238342285, digits it
    never had.  Two scores keep their order and their ties: each decimal reads back as its score."""
    return float(str(x))


def _meet_copies(corpus: IndexCorpus, own, score, allowed, rows, gate, at_least) -> None:
    """Show GATE the copies of ROWS that scored too little to be met: a copy of a message has its text
    and its date, so its own score, and scores near it (its neighbours and conversation may differ); the
    rows scoring at least half the least of ROWS with the own score and the date of one of them are
    looked at (own and date compared as arrays first: many rows share an own score, few a date too);
    ``at_least(t)``: the rows scoring at least t."""
    np = corpus.np
    if not rows:
        return
    taken = np.asarray(rows, np.int64)
    pool = at_least(0.5 * float(score[taken].min()))
    pool = pool[np.isin(own[pool], np.unique(own[taken]))]
    at = corpus.dates_at
    pool = pool[np.isin(np.nan_to_num(at(pool), nan=-np.inf), np.nan_to_num(at(np.sort(taken)), nan=-np.inf))]
    pool = allowed(pool[~np.isin(pool, taken)])
    gate.meet(pool[:4096])  # (a bound: copies of a page of hits)


def _conversation_hits(corpus: IndexCorpus, score, allowed, rows) -> dict:
    """Row of ROWS -> how many allowed rows scoring > 0 its conversation (in its store) has."""
    np = corpus.np
    hit = allowed(np.flatnonzero(score > 0))
    code = np.empty(corpus.size, np.int64)  # every row's conversation, numbered over the stores' segments
    names: dict = {}
    for p in corpus.parts:
        for c in p.seg.convs:
            names.setdefault((p.store.name, c), len(names))
        table = np.array([names[(p.store.name, c)] for c in p.seg.convs] or [0], np.int64)
        code[p.start : p.start + p.seg.rows] = table[p.seg.r_conv]
    n = np.bincount(code[hit], minlength=len(names))
    return {int(r): int(n[code[int(r)]]) for r in rows}


def _key(corpus: IndexCorpus, score, r: int) -> tuple:
    """``hits.sort_key`` of the hit row ``r`` would make, without making it (its text, checks, snippet)."""
    part, local = corpus.locate(int(r))
    kind, _role, _ctype, conv = part.seg.row(local)
    return (-float(score[r]), KIND_ORDER[kind], conv, int(part.seg.meta[local]["pos"]), part.seg.ref(local) or "")


def _holding_any(corpus: IndexCorpus, terms: list):
    mask = corpus.np.zeros(corpus.size, bool)
    for t in terms:
        mask |= corpus.holding(t)
    return mask


def _filters(corpus: IndexCorpus, q, plan, scopes: dict):
    """The rows that --in/--since/--until/--min-importance/--conversation and role:/title:/store: keep
    (None: every row)."""
    np = corpus.np
    where = plan.where or q.where or "all"
    if (
        where == "all"
        and q.since is None
        and q.until is None
        and q.min_importance is None
        and not plan.roles
        and not plan.stores
        and not plan.titles
        and not plan.tools
        and all(v is None for v in scopes.values())
    ):
        return None  # (nothing filtered: no pass over every row)
    keep = np.ones(corpus.size, bool)
    if where == "memories":
        keep &= corpus.kind == MEMORY
    elif where == "messages":
        keep &= corpus.kind != MEMORY
    elif where == "args":
        keep &= corpus.kind == CALL
    if plan.tools:  # calls whose text holds a tool's name (then each row shown is checked: _best_rows)
        named = np.zeros(corpus.size, bool)
        for name in plan.tools:
            named |= np.logical_and.reduce([corpus.holding(t) for t in _word_terms(name)] or [named])
        keep &= named & (corpus.kind == CALL)
    if q.since is not None:
        keep &= corpus.date >= q.since
    if q.until is not None:
        keep &= corpus.date <= q.until
    if q.min_importance is not None:
        imp = np.concatenate([p.seg.meta["imp"] for p in corpus.parts])
        keep &= imp >= q.min_importance
    if plan.roles:
        codes = [ROLES.index(r) for r in plan.roles if r in ROLES]
        keep &= np.isin(corpus.role_code, np.array(codes, dtype=np.int8))
    per_part, titled = [], {}
    if any(v is not None for v in scopes.values()) or plan.titles or plan.stores:
        for p in corpus.parts:
            scope = scopes.get(id(p.store))
            convs = p.seg.convs
            wanted = np.ones(len(convs), bool)
            if plan.stores and p.store.name not in plan.stores:
                wanted[:] = False
            if scope is not None:
                wanted &= np.array([c in scope for c in convs], bool)
            if plan.titles and wanted.any():
                if id(p.index) not in titled:
                    titled[id(p.index)] = _titled(p.index, plan.titles)
                at = _table_positions(p.index, p.seg)  # (-1: not in the table)
                held = titled[id(p.index)][at]
                for i in np.flatnonzero(at < 0).tolist():  # (a shared topic: titled after it)
                    held[i] = all(title_matches(p.index.title_of(convs[i]), w) for w in plan.titles)
                wanted &= held
            conv = p.seg.r_conv
            per_part.append(wanted[conv] if len(convs) else np.zeros(p.seg.rows, bool))
        keep &= np.concatenate(per_part)
    return keep


def _titled(index, words: list):
    """Whether the title of each conversation of ``index``'s table holds every one of ``words`` (a bool
    array in the table's order, one more False at its end: the place of a conversation not in it)."""
    np = load_numpy()
    table = _titles(index)
    held = np.zeros(len(table.titles) + 1, bool)
    held[list(table.matching(words))] = True
    return held


def _titles(index) -> FoldedTitles:
    """The titles of ``index``'s conversation table, ready for matching (kept with its manifest)."""
    memo = index.manifest.memo
    if "titles" not in memo:
        ids, titles, folded = index.manifest.ids_titles_folded()
        memo["titles"] = FoldedTitles(titles, folded)
        memo["title positions"] = dict(zip(ids, range(len(ids))))
    return memo["titles"]


def _table_positions(index, seg):
    """Each conversation of segment ``seg``: its position in ``index``'s conversation table, -1 if not
    there (kept with the manifest, by segment)."""
    memo = index.manifest.memo.setdefault("segment positions", {})
    got = memo.get(seg.name)
    if got is None:
        _titles(index)
        where = index.manifest.memo["title positions"]
        np = load_numpy()
        got = memo[seg.name] = np.fromiter((where.get(c, -1) for c in seg.convs), np.int64, len(seg.convs))
    return got


def _best_rows(
    corpus: IndexCorpus, score, cand, limit: int, plan, complete: bool, gate, taken: list | None = None
) -> list[int] | None:
    """Rows of ``cand`` (the rows allowed), best score first: the first ``limit`` whose text holds every
    phrase of the query (and none it excludes), plus the rows tied with the last of them (at most MAX_TIES).

    ``complete`` False: ``cand`` is every allowed row scoring at least some floor; None when they are
    not enough to decide (fewer than ``limit`` found): the rows below the floor could be next.
    ``gate`` (``grouped.Copies``): a copy of a row taken is passed over (and remembered as its copy).
    Rows are met in runs (arrays), each twice as long as the one before, since a message may have
    thousands of copies to pass over; the result is the one of meeting them one at a time.
    ``taken``: the rows a walk over rows scoring more than every row of ``cand`` took (it met every one of
    them, with ``gate``): this walk goes on from there, and adds to it, as one walk over both would."""
    np = corpus.np
    out: list[int] = [] if taken is None else taken
    if not len(cand):
        return out if complete else None
    phrases = [phrase_test(p).many for p in plan.phrases]
    if plan.tools:
        phrases.append(lambda texts: [any(is_call_of(t, name) for name in plan.tools) for t in texts])
    unwanted = [phrase_test(p).many for p in plan.excluded_phrases]
    take = limit * 4 + 64
    at, step = 0, 32
    order = None
    while True:
        if order is None or at >= len(order):
            if order is not None and len(order) >= len(cand):
                break
            n = min(len(cand), max(take, 2 * (len(order) if order is not None else 0)))
            part = cand
            if n < len(cand):  # the best N, and every row tied with the last of them: the rows met before stay
                s = score[cand]  # the first of the order (ties, by row, could otherwise come before them)
                part = cand[s >= np.partition(s, len(s) - n)[len(s) - n]]
            part = part[np.lexsort((part, -score[part]))]
            order, at = part, (at if order is not None else 0)
            if at >= len(order):
                break
        run = order[at : at + step]
        at += len(run)
        step = min(step * 2, 4096)
        ok = np.ones(len(run), bool)
        if phrases or unwanted:
            texts = [_row_text(corpus, x) for x in run.tolist()]
            for holding in phrases:
                ok &= np.array(holding(texts), bool)
            for holding in unwanted:
                ok &= ~np.array(holding(texts), bool)
        ids = gate.ids(run)
        new = np.zeros(len(run), bool)
        passing = np.flatnonzero(ok)
        new[passing[gate.fresh(ids[passing])]] = True
        stop = _stop(score, run, new, out, limit)
        out += gate.commit(run[:stop][ok[:stop]], ids[:stop][ok[:stop]], new[:stop][ok[:stop]])
        if stop < len(run):
            break
    # (only when every row of ``cand`` was seen; and at least one, as ``_stop``'s score rule needs a row taken)
    if not complete and len(out) < max(limit, 1):
        return None
    return out


def _stop(score, run, new, out: list, limit: int) -> int:
    """How many rows of RUN (rows met in order; NEW: those to be taken) are met before the walk stops: at
    a row scoring less than the last one taken once ``limit`` are taken, or once MAX_TIES more are."""
    taking = new.nonzero()[0]
    stop = len(run)
    room = limit + MAX_TIES - len(out)  # (rows still to take before the walk stops)
    if room <= 0:
        return 0
    if len(taking) >= room:
        stop = int(taking[room - 1]) + 1
    need = max(limit, 1)  # (the score rule needs a row taken)
    if len(out) >= need:
        after, least = 0, score[out[-1]]
    elif len(taking) >= need - len(out):
        j = int(taking[need - len(out) - 1])
        after, least = j + 1, score[run[j]]
    else:
        return stop
    below = (score[run[after:stop]] < least).nonzero()[0]
    return after + int(below[0]) if len(below) else stop


def _row_text(corpus: IndexCorpus, r: int) -> str:
    part, local = corpus.locate(r)
    return part.seg.text(local)


def _context(corpus: IndexCorpus, got: dict, r: int, terms: set) -> str | None:
    """When row ``r`` is found by a neighbour's words: "ROLE before/after: matched w1, w2"."""
    best = None
    for step, where in NEIGHBOURS:
        n = corpus.neighbour(r, step)
        if n >= 0:
            s = got["own"][n]
            if s > 0 and (best is None or s > best[0]):
                best = (s, n, where)
    if best is None:
        return "conversation's words" if got["conversation"][r] > 0 else None
    _, n, where = best
    part, local = corpus.locate(n)
    _, role, _, _ = part.seg.row(local)
    words = tx.matched_words(part.seg.text(local), terms, 4)
    return f"{role or 'turn'} {where}: " + ", ".join(words)


__all__ = ["search"]
