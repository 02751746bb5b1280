"""The rows of one or more opened indexes as one corpus for ranking (``search/bm25.py``'s interface).

Rows are numbered across every segment of every index in turn.  Statistics (how many rows hold a
term, lengths, their mean) are over the alive rows of the whole union, computed at query time, so an
index refreshed in parts, one rebuilt from scratch and several stores searched together rank alike.
Neighbours (``same[i]``: row i-1 is row i's previous turn) are the adjacent messages of the same
conversation in the same source; conversation groups hold messages only (a memory or an archived copy
has none).

Design notes: docs/search-index.md, "search/corpus.py".
"""

from __future__ import annotations

import bisect
import functools
import re
import threading

from samctl.search.index.format import MESSAGE, ROLES, BadIndex, load_numpy, token_key

_ROLE_SIDE = {"user": 0, "assistant": 1}  # rank.ROLES: 0 user, 1 assistant, 2 anything else
_ISO_DAY = re.compile(r"\d{4}-\d{2}-\d{2}\Z")
_YEAR = re.compile(r"\d{4}\Z")


class Part:
    """One segment of one index: where its rows start in the corpus, and whose they are."""

    __slots__ = ("store", "index", "seg", "start")

    def __init__(self, store, index, seg, start: int):
        self.store, self.index, self.seg, self.start = store, index, seg, start


@functools.lru_cache(maxsize=4096)  # (a month's name is found by stemming: per term, once)
def _date_like(term: str) -> bool:
    """Whether ``term`` is one the date field holds (a month's name, a year, an ISO day): ``_date``'s rule."""
    from samctl.search import text as tx  # (lazy: as in _date)

    return bool(tx.month_of(term) or _YEAR.match(term) or _ISO_DAY.match(term))


def terms_with_prefix(segments, prefix: str, cap: int = 512) -> list[str]:
    """Index terms (of any of ``segments``) that start with ``prefix``, at most ``cap`` of them, sorted."""
    found: set = set()
    for seg in segments:
        terms = seg.terms()
        i = bisect.bisect_left(terms, prefix)
        while i < len(terms) and terms[i].startswith(prefix) and len(found) < cap:
            found.add(terms[i])
            i += 1
    return sorted(found)[:cap]


class _Static:
    """The per-row arrays of a list of parts that no query changes (see ``_static``)."""

    def __init__(self, parts: list, size: int):
        np = load_numpy()
        self.keys = [p.seg.a for p in parts]  # (held, so that ``is`` never matches a new segment at an old address)
        self.alive = [None if p.seg.all_alive else p.seg.alive for p in parts]
        self.memo: dict = {}
        cat = lambda xs, dt: np.concatenate(xs).astype(dt, copy=False) if xs else np.zeros(0, dt)
        segs = [p.seg for p in parts]
        self.live = cat([s.alive for s in segs], bool)
        self.kind = cat([s.r_kind for s in segs], np.uint8)
        self.role_code = cat([s.r_role for s in segs], np.uint8)
        # (integers, 0 where dead: sums of them are exact, so BM25 sees what float64 lengths gave it;
        # each segment's written in place, times its alive rows where some are not: one pass, not three)
        self.length = np.empty(size, np.uint32)
        for p in parts:
            lengths = self.length[p.start : p.start + p.seg.rows]
            if p.seg.all_alive:
                lengths[:] = p.seg.r_len
            else:
                np.multiply(p.seg.r_len, p.seg.alive, out=lengths)
        self.group = np.empty(size, np.int32 if size < 1 << 31 else np.int64)  # (half the traffic)
        base = 0
        for p in parts:
            s, c = p.seg, p.seg.r_conv
            if len(c) and (int(c.min()) < 0 or int(c.max()) >= s.nconvs):
                raise BadIndex(f"{s.name}: conversation codes out of range")
            np.add(c, base, out=self.group[p.start : p.start + s.rows])
            base += s.nconvs
        self.groups = base
        np.putmask(self.group, (self.kind != MESSAGE) | ~self.live, -1)  # groups hold alive messages only
        # same[i]: row i-1 is row i's previous turn (a conversation's rows are adjacent in its segment;
        # group numbers never span segments)
        self.same = np.zeros(size, bool)
        if size > 1:
            np.equal(self.group[1:], self.group[:-1], out=self.same[1:])
            self.same[1:] &= self.group[1:] >= 0
        if size and int(self.role_code.max()) >= len(ROLES):
            raise BadIndex("role codes out of range")
        # 2 less 2 for a user's row, less 1 for an assistant's: comparisons and subtractions of whole
        # arrays (a gather through a table, or a masked assignment, costs far more per code)
        self.role = np.full(size, 2, np.int8)
        for name, v in _ROLE_SIDE.items():
            hit = (self.role_code == ROLES.index(name)).view(np.int8)
            for _ in range(2 - v):
                self.role -= hit

    def serves(self, parts: list) -> bool:
        """Whether these arrays are those of ``parts``: the same segments (the very arrays mapped), in
        the same order, with the same alive rows."""
        np = load_numpy()
        if len(parts) != len(self.keys):
            return False
        for p, a, alive in zip(parts, self.keys, self.alive):
            if p.seg.a is not a or (alive is None) != p.seg.all_alive:
                return False
            if alive is not None and not np.array_equal(alive, p.seg.alive):
                return False
        return True


# The arrays of the last corpora built in this process, newest last: a process that searches again
# (browse, a bench) over the same segments and alive rows reuses them and what was derived from them.
_STATIC: list = []
_KEPT_STATIC = 2
_STATIC_LOCK = threading.Lock()  # (searches in several threads share the list)


def _static(parts: list, size: int) -> _Static:
    with _STATIC_LOCK:
        for i, got in enumerate(_STATIC):
            if got.serves(parts):
                _STATIC.append(_STATIC.pop(i))
                return got
        got = _Static(parts, size)
        _STATIC.append(got)
        del _STATIC[:-_KEPT_STATIC]
        return got


class IndexCorpus:
    """``postings``/``lengths``/``rows``/``size`` over the alive rows of ``indexes`` = [(store, Index)].

    With ``terms`` (a query's ranked terms), a segment that holds none of them is left out of the rows:
    every row of it would score 0 (a conversation's rows are all in one segment, so its conversation
    score is 0 too), and no row scoring 0 is a result.  What it adds to the statistics (alive rows and
    their lengths, dated rows, conversations and their lengths) is still counted (``background``), as
    integers, so every score is the same, bit for bit, as over every row.  Not with a date-like term,
    whose postings come from every row's date.  (Several stores searched together: the stores a query's
    words are not in cost no pass over their rows.)"""

    def __init__(self, indexes: list, terms=None):
        np = self.np = load_numpy()
        self.parts: list[Part] = []
        self._left_out: list = []
        keys = None
        if terms is not None:
            terms = list(dict.fromkeys(terms))
            if terms and not any(map(_date_like, terms)):
                keys = [np.uint64(token_key(t)) for t in terms]
        at = 0
        for store, idx in indexes:
            for seg in idx.segments:
                if not seg.rows:
                    continue
                if keys is not None and not any(seg.holds_term(k) for k in keys):
                    self._left_out.append(seg)
                    continue
                self.parts.append(Part(store, idx, seg, at))
                at += seg.rows
        self.size = at
        self._bg: dict = {}
        self.starts = [p.start for p in self.parts]
        self._post: dict = {}
        self._asked_dates = False
        got = _static(self.parts, self.size)
        self.live, self.kind, self.role_code, self.length = got.live, got.kind, got.role_code, got.length
        self.group, self.groups, self.same, self.role = got.group, got.groups, got.same, got.role
        self.memo = got.memo  # (what is derived from these arrays alone: kept while they are)
        self._lens = got.memo.setdefault("lengths", {})

    def neighbour(self, r: int, step: int) -> int:
        """Row ``r``'s turn ``step`` (-1 before, 1 after) in its conversation, or -1."""
        n = r + step
        if not 0 <= n < self.size:
            return -1
        return n if self.same[max(r, n)] else -1

    @property
    def date(self):
        """Every row's date (Unix seconds, NaN: none): read only by a query that needs it."""
        if "dates" not in self.memo:
            np = self.np
            # (each segment's records read, not gathered through the map: see ``Segment.read``)
            got = [p.seg.read("meta", 0, p.seg.rows)["date"] for p in self.parts]
            self.memo["dates"] = np.concatenate(got) if got else np.zeros(0)
        return self.memo["dates"]

    def dates_at(self, rows):
        """The dates of ``rows`` (sorted corpus row numbers), without joining every segment's in the first
        search over these arrays; from the second search, every row's are read once (a stretch of records
        at a time, the dates kept: 8 of their 60 bytes) and kept with the arrays, for a process that
        searches again (browse)."""
        np = self.np
        memo = self.memo
        if not self._asked_dates:  # (searches that asked, counted once each)
            self._asked_dates = True
            memo["searches asking dates"] = memo.get("searches asking dates", 0) + 1
        if "dates" in memo or memo["searches asking dates"] > 1:
            return self.date[rows]
        out = np.empty(len(rows))
        bounds = np.searchsorted(rows, [p.start for p in self.parts] + [self.size])
        for p, a, b in zip(self.parts, bounds[:-1], bounds[1:]):
            if a < b:
                out[a:b] = p.seg.records(rows[a:b] - p.start)["date"]
        return out

    # -- bm25.py's interface
    def rows(self):
        return self.same, self.group, self.role

    def keys(self, fld: str) -> int:
        return self.groups if fld == "conv" else self.size

    def lengths(self, fld: str):
        if fld not in self._lens:
            np = self.np
            if fld == "text":
                self._lens[fld] = (self.length, self.live)
            elif fld == "date":
                dated = self.live & ~np.isnan(self.date)
                self._lens[fld] = (np.where(dated, 3.0, 0.0), dated)
            else:  # conv: one document per conversation (its alive messages)
                lens, has = zip(*map(self._conv_lengths, (p.seg for p in self.parts))) if self.parts else ((), ())
                self._lens[fld] = (
                    np.concatenate(lens) if lens else np.zeros(0),
                    np.concatenate(has) if has else np.zeros(0, bool),
                )
        return self._lens[fld]

    def _conv_lengths(self, s):
        """(length, has alive messages) of each conversation of segment ``s``: as written (c_len, c_msgs),
        less what its dead rows held (sums of integers: exact)."""
        np = self.np
        size, msgs = s.c_len, s.c_msgs.astype(np.int64)
        if s.dead_rows is not None:
            rows = s.dead_rows[s.r_kind[s.dead_rows] == MESSAGE]
            c = s.r_conv[rows]
            size = size - np.bincount(c, weights=s.r_len[rows], minlength=s.nconvs)
            msgs -= np.bincount(c, minlength=s.nconvs)
        return size, msgs > 0

    def background(self, fld: str) -> tuple:
        """(keys, their summed length) of field ``fld`` in the segments left out: what BM25's statistics
        count beside ``lengths(fld)`` (integers, summed exactly)."""
        if fld not in self._bg:
            np = self.np
            n, total = 0, 0
            for s in self._left_out:
                if fld == "text":
                    alive = s.alive
                    n += int(np.count_nonzero(alive))
                    total += int(s.r_len.sum(dtype=np.uint64) if s.all_alive else s.r_len[alive].sum(dtype=np.uint64))
                elif fld == "date":
                    dated = int(np.count_nonzero(s.alive & ~np.isnan(s.meta["date"])))
                    n, total = n + dated, total + 3 * dated
                else:
                    size, has = self._conv_lengths(s)
                    n += int(np.count_nonzero(has))
                    total += int(size.sum())  # (as lengths("conv").sum() counts them: 0 where none alive)
            self._bg[fld] = (n, total)
        return self._bg[fld]

    def postings(self, fld: str, term: str):
        key = (fld, term)
        if key not in self._post:
            self._post[key] = (self._text if fld == "text" else self._date if fld == "date" else self._conv)(term)
        return self._post[key]

    # -- the fields
    def _text(self, term: str):
        np = self.np
        k = np.uint64(token_key(term))
        rows, tfs = [], []
        for p in self.parts:
            seg = p.seg
            got = seg.term_postings(k)
            if got is not None:
                a, b, r = got
                if len(r) and (int(r.min()) < 0 or int(r.max()) >= seg.rows):
                    raise BadIndex(f"{seg.name}: postings point past the rows")
                if seg.all_alive:  # (no dead or hidden row: nothing to take out)
                    rows.append(r + p.start)  # (int64 already)
                    tfs.append(seg.tfs(a, b))
                else:
                    keep = seg.alive[r]
                    rows.append(r[keep] + p.start)
                    tfs.append(seg.tfs(a, b)[keep])
        if not rows:
            return np.empty(0, np.int64), np.empty(0, np.float32)
        # (counts below 2^16: exact as the float32 the scores are, ``bm25.SCORE``)
        return np.concatenate(rows), np.concatenate(tfs).astype(np.float32)

    def _conv(self, term: str):
        np = self.np
        rows, tfs = self.postings("text", term)
        # each conversation's count summed (integers: exact in any order); a row of none (-1) in bin 0
        tf = np.bincount(self.group.take(rows, mode="wrap") + 1, weights=tfs, minlength=self.groups + 1)[1:]
        keys = np.flatnonzero(tf)
        return keys, tf[keys]

    def _date(self, term: str):
        """Rows whose date's terms (``text.date_terms``: month stem, year, ISO day) include ``term``."""
        np = self.np
        from samctl.search import text as tx  # (lazy: only a query with a date-like word gets here)

        month = tx.month_of(term)
        if not (month or _YEAR.match(term) or _ISO_DAY.match(term)):
            return np.empty(0, np.int64), np.empty(0, np.float64)
        if "ymd" not in self.memo:
            ok = self.live & ~np.isnan(self.date) & (np.abs(np.nan_to_num(self.date)) < 1e11)
            days = np.floor(np.where(ok, self.date, 0) / 86400).astype("datetime64[D]")
            y = days.astype("datetime64[Y]").astype(np.int64) + 1970
            m = days.astype("datetime64[M]").astype(np.int64) % 12 + 1
            d = (days - days.astype("datetime64[M]")).astype(np.int64) + 1
            self.memo["ymd"] = (ok, y, m, d)
        ok, y, m, d = self.memo["ymd"]
        if month:
            hit = ok & (m == month)
        elif _YEAR.match(term):
            hit = ok & (y == int(term))
        else:
            yy, mm, dd = (int(x) for x in term.split("-"))
            hit = ok & (y == yy) & (m == mm) & (d == dd)
        rows = np.flatnonzero(hit)
        return rows, np.ones(len(rows))

    # -- helpers for search
    def locate(self, row: int) -> tuple[Part, int]:
        """(the part holding corpus row ``row``, its row number there)."""
        p = self.parts[bisect.bisect_right(self.starts, row) - 1]
        return p, row - p.start

    def part_numbers(self, rows):
        """For an int64 array of corpus rows, the number in ``parts`` of the part holding each (``locate``
        of many rows at once)."""
        return self.np.searchsorted(self.np.asarray(self.starts, self.np.int64), rows, side="right") - 1

    def terms_with_prefix(self, prefix: str, cap: int = 512) -> list[str]:
        """Index terms (of any part) that start with ``prefix``, at most ``cap`` of them, sorted."""
        return terms_with_prefix((p.seg for p in self.parts), prefix, cap)

    def holding(self, term: str):
        """A bool mask of the rows holding ``term``."""
        mask = self.np.zeros(self.size, bool)
        mask[self.postings("text", term)[0]] = True
        return mask
