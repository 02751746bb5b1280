"""Hits as conversations: one hit per message however many copies of it the store holds, a few hits of
one conversation at a time, and one line per conversation (``search -l``).

A session resumed in Claude Code is a new file holding a copy of the earlier history: the same message
(the same id) in several conversations.  ``Copies`` keeps the first of them a search meets and, among
the copies it meets, answers with the one in the newest conversation (the one whose messages are the
latest).  Invariants: no two hits of one result list have the same ``key``; ``interleave`` and
``per_conversation`` only reorder or choose, they never make a hit.
"""

from __future__ import annotations

import math

from samctl.search.index.format import CTYPES, KINDS, ROLES, BadIndex


def key(store: str, kind: str, conversation: str, position: int, ref: str | None) -> tuple:
    """What makes two hits the same: a message's own id (its copies share it), else where it is."""
    return (store, kind, ref) if ref else (store, kind, conversation, position)


def hit_key(h) -> tuple:
    return key(h.store, h.kind, h.conversation_id, h.position, h.ref)


def unique(hits: list) -> list:
    """HITS without a hit whose ``hit_key`` an earlier one has."""
    seen, out = set(), []
    for h in hits:
        k = hit_key(h)
        if k not in seen:
            seen.add(k)
            out.append(h)
    return out


def interleave(hits: list, run: int) -> list:
    """HITS (best first) with at most RUN of one conversation in a row while another conversation's hit
    is left: then the best of the others comes next.  RUN 0: as they are."""
    if run <= 0 or len(hits) <= run:
        return list(hits)
    left, out = list(hits), []
    conv = lambda h: (h.store, h.conversation_id)
    while left:
        if len(out) >= run and len({conv(h) for h in out[-run:]}) == 1:
            c = conv(out[-1])
            j = next((i for i, h in enumerate(left) if conv(h) != c), 0)
        else:
            j = 0
        out.append(left.pop(j))
    return out


class Copies:
    """A gate over rows met best first: ``take(r)`` is False for a copy of a row already taken;
    ``newest(r)`` the copy of taken row R in the newest conversation among those met."""

    def __init__(self, corpus):
        self.corpus = corpus
        self.first: dict = {}  # key -> the row taken
        self.copies: dict = {}  # row taken -> the other rows met with its key
        self._dates: dict = {}  # ``latest``'s memo
        self._known: dict = {}  # row -> its ``_where``, worked out ahead (``prepare``), until asked for
        self._segment_dates: dict = {}  # id(segment) -> each of its conversations' latest date

    def _where(self, r: int) -> tuple:
        """(row R's ``key``, (its store, its conversation))."""
        got = self._known.pop(r, None)
        if got is not None:
            return got
        part, local = self.corpus.locate(int(r))
        kind, _role, _ctype, conv = part.seg.row(local)
        ref = part.seg.ref(local)
        return key(part.store.name, kind, conv, int(part.seg.meta[local]["pos"]), ref), (part.store.name, conv)

    def knows(self, r: int) -> bool:
        """Whether row R's ``_where`` was worked out ahead."""
        return r in self._known

    def prepare(self, rows) -> None:
        """Work out ``_where`` of ROWS (an array of rows about to be met) at once: the same answers, and
        the same BadIndex for a code out of range, as one row at a time, without a call per field."""
        np = self.corpus.np
        rows = np.asarray(rows, np.int64)
        which = self.corpus.part_numbers(rows)
        for k in np.unique(which).tolist():
            part = self.corpus.parts[k]
            seg, store, mine = part.seg, part.store.name, rows[which == k]
            local = mine - part.start
            m = seg.a["meta"][local]
            kinds, convs = m["kind"], m["conv"]
            if (
                (kinds >= len(KINDS)).any()
                or (m["role"] >= len(ROLES)).any()
                or (m["ctype"] >= len(CTYPES)).any()
                or (convs < 0).any()
                or (convs >= seg.nconvs).any()
            ):
                raise BadIndex(f"{seg.name}: a row has codes out of range")
            names = seg.convs
            for r, kind, c, pos, ref in zip(
                mine.tolist(), kinds.tolist(), convs.tolist(), m["pos"].tolist(), seg.refs(local)
            ):
                conv = names[c]
                self._known[r] = key(store, KINDS[kind], conv, pos, ref), (store, conv)

    def take(self, r: int) -> bool:
        k, _ = self._where(r)
        taken = self.first.get(k)
        if taken is not None:
            self.copies.setdefault(taken, []).append(int(r))
            return False
        self.first[k] = int(r)
        return True

    def best_of_each(self, rows: list) -> list:
        """The first of ROWS of each conversation (of each store), in their order."""
        seen, out = set(), []
        for r in rows:
            conv = self._where(r)[1]
            if conv not in seen:
                seen.add(conv)
                out.append(r)
        return out

    def meet(self, r: int) -> None:
        """Row R, not taken: remembered if it is a copy of a row taken."""
        k, _ = self._where(r)
        taken = self.first.get(k)
        if taken is not None and taken != int(r) and int(r) not in self.copies.get(taken, ()):
            self.copies.setdefault(taken, []).append(int(r))

    def newest(self, r: int) -> int:
        rows = [int(r)] + self.copies.get(int(r), [])
        if len(rows) == 1:
            return int(r)
        # the first copy of the latest conversation date, then of the greatest conversation id (copies as
        # new as each other: not a row number, which depends on how the index was built); as arrays,
        # since a message may have thousands of copies
        np = self.corpus.np
        at = np.asarray(rows, np.int64)
        which = self.corpus.part_numbers(at)
        codes, dates = np.empty(len(at), np.int64), np.empty(len(at))
        parts = np.unique(which).tolist()
        for k in parts:
            part, sel = self.corpus.parts[k], which == k
            seg = part.seg
            codes[sel] = c = seg.r_conv[at[sel] - part.start]  # (in range: the corpus checked every code)
            few = np.unique(c)
            if len(few) <= FEW_CONVERSATIONS:  # (each one's date alone: cheaper than the whole segment's)
                each = np.array([latest(seg, x, self._dates) for x in few.tolist()])
                dates[sel] = each[np.searchsorted(few, c)]
            else:
                dates[sel] = self._conversation_dates(seg)[c]
        at_latest = dates == dates.max()
        names = {
            (k, c): (self.corpus.parts[k].store.name, self.corpus.parts[k].seg.convs[c])
            for k in parts
            for c in np.unique(codes[at_latest & (which == k)]).tolist()
        }
        best = max(names.values())
        chosen = np.zeros(len(at), bool)
        for (k, c), name in names.items():
            if name == best:
                chosen |= (which == k) & (codes == c)
        return rows[int(np.flatnonzero(at_latest & chosen)[0])]

    def _conversation_dates(self, seg):
        """Each conversation's latest date in SEG (``latest`` of every code at once)."""
        got = self._segment_dates.get(id(seg))
        if got is None:
            np = self.corpus.np
            conv = seg.r_conv
            dates = seg.meta["date"]
            ok = seg.alive & (dates == dates)  # (NaN: no date)
            got = self._segment_dates[id(seg)] = np.full(seg.nconvs, -math.inf)
            np.maximum.at(got, conv[ok], dates[ok])
        return got


# Copies in at most this many conversations of a segment: each one's latest date is found alone (a pass
# over the segment's rows each, 0.03 ms for 60,000 rows), else every conversation's at once (0.8 ms).
FEW_CONVERSATIONS = 16


def latest(seg, c: int, memo: dict) -> float:
    """The latest date of the alive rows of conversation C (a code of ``seg.convs``) in SEG, -inf when
    none is known (a conversation's rows are all in one segment); MEMO: (id(seg), c) -> it."""
    got = memo.get((id(seg), c))
    if got is None:
        dates = seg.meta["date"][(seg.r_conv == c) & seg.alive]
        dates = dates[dates == dates]  # (NaN: no date)
        got = memo[(id(seg), c)] = float(dates.max()) if dates.size else -math.inf
    return got


def newest_copies(found: list, memo: dict) -> list:
    """Of FOUND = [(key, segment, row, item)], one entry per key: the copy in the newest conversation
    (its latest date; then the greatest conversation id, as ``Copies.newest``), in the order of the
    first of its copies."""
    groups: dict = {}
    for k, seg, r, item in found:
        groups.setdefault(k, []).append((seg, r, item))
    out = []
    for copies in groups.values():  # (a conversation's latest date is read only where there are copies)
        if len(copies) == 1:
            out.append(copies[0][2])
            continue
        best = max(
            copies, key=lambda x: (latest(x[0], int(x[0].r_conv[x[1]]), memo), x[0].convs[int(x[0].r_conv[x[1]])])
        )
        out.append(best[2])
    return out
