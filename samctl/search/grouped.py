"""Hits as conversations: one hit per message however many copies of it the store holds, a few hits of
one conversation at a time, and one line per conversation (``search -l``).

A session resumed in Claude Code is a new file holding a copy of the earlier history: the same message
(the same id) in several conversations.  ``Copies`` keeps the first of them a search meets and, among
the copies it meets, answers with the one in the newest conversation (the one whose messages are the
latest).  Invariants: no two hits of one result list have the same ``key``; ``interleave`` and
``per_conversation`` only reorder or choose, they never make a hit.
"""

from __future__ import annotations

import functools
import hashlib
import math


def key(store: str, kind: str, conversation: str, position: int, ref: str | None, text: str = "") -> tuple:
    """What makes two hits the same: a message's own id (its copies share it), else where it is, and for a
    call its text (the calls of a message share its place)."""
    if ref:
        return (store, kind, ref)
    return (store, kind, conversation, position, text) if kind == "call" else (store, kind, conversation, position)


def hit_key(h) -> tuple:
    return key(h.store, h.kind, h.conversation_id, h.position, h.ref, h.text)


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
    """A gate over rows met best first, a run (an array) at a time: ``fresh`` marks the rows of a run that
    are the first of their message, ``commit`` takes them and remembers the others as copies of the row
    taken; ``newest(r)`` is the copy of taken row R in the newest conversation among those met.  A message
    may have thousands of copies, so rows are handled as arrays and each distinct key read once."""

    def __init__(self, corpus):
        self.corpus = corpus
        self.first: dict = {}  # copy key (``ids``) -> the row taken
        self.copies: dict = {}  # row taken -> arrays of the other rows met with its key
        self._dates: dict = {}  # ``latest``'s memo
        self._segment_dates: dict = {}  # id(segment) -> each of its conversations' latest date

    def _where(self, r: int) -> tuple:
        """(row R's ``key``, (its store, its conversation))."""
        part, local = self.corpus.locate(int(r))
        kind, _role, _ctype, conv = part.seg.row(local)
        ref = part.seg.ref(local)
        text = part.seg.text(local) if kind == "call" and not ref else ""
        return key(part.store.name, kind, conv, int(part.seg.meta[local]["pos"]), ref, text), (part.store.name, conv)

    def ids(self, rows):
        """The copy key of each of ROWS (an int64 array of corpus rows) as an int64 array: the index's
        ``copy_key`` mixed with its store's name, so two rows have the same one when ``key`` gives them the
        same key (or, about 1 in 2**64 per pair, two messages' keys collide: one is not shown)."""
        np = self.corpus.np
        rows = np.asarray(rows, np.int64)
        out = np.empty(len(rows), np.uint64)
        which = self.corpus.part_numbers(rows)
        for k in np.unique(which).tolist():
            part = self.corpus.parts[k]
            at = np.flatnonzero(which == k)
            out[at] = part.seg.r_copy[rows[at] - part.start] ^ np.uint64(_salt(part.store.name))
        return out.view(np.int64)

    def fresh(self, ids):
        """A mask over IDS (the copy keys of rows met, in order): the first row of each key not taken."""
        np = self.corpus.np
        out = np.zeros(len(ids), bool)
        if len(ids):
            distinct, at = np.unique(ids, return_index=True)
            out[at[[i not in self.first for i in distinct.tolist()]]] = True
        return out

    def commit(self, rows, ids, taken) -> list[int]:
        """Take the rows of ROWS where TAKEN (a ``fresh`` mask) is True; remember the others as copies."""
        got = rows[taken].tolist()
        self.first.update(zip(ids[taken].tolist(), got))
        self.meet(rows[~taken], ids[~taken])
        return got

    def meet(self, rows, ids=None) -> None:
        """ROWS (an array of rows not taken; IDS their ``ids``) remembered where they are copies of a row
        taken."""
        np = self.corpus.np
        if not len(rows):
            return
        ids = self.ids(rows) if ids is None else ids
        order = np.argsort(ids, kind="stable")
        ids, rows = ids[order], rows[order]
        cuts = np.flatnonzero(ids[1:] != ids[:-1]) + 1
        for i, same in zip(ids[np.r_[0, cuts]].tolist(), np.split(rows, cuts)):
            taken = self.first.get(i)
            if taken is not None:
                self.copies.setdefault(taken, []).append(same)

    def best_of_each(self, rows: list) -> list:
        """The first of ROWS of each conversation (of each store), in their order."""
        seen, out = set(), []
        for r in rows:
            conv = self._where(r)[1]
            if conv not in seen:
                seen.add(conv)
                out.append(r)
        return out

    def newest(self, r: int) -> int:
        """The copy of taken row R to show: of the copies met, the first in the conversation of the latest
        date, then of the greatest id (copies as new as each other: not a row number, which depends on how
        the index was built)."""
        np = self.corpus.np
        if not self.copies.get(int(r)):
            return int(r)
        # (a row met twice is the same row: its first place is the one that counts, so no dedupe)
        at = np.concatenate([np.array([int(r)], np.int64), *self.copies[int(r)]])
        which = self.corpus.part_numbers(at)
        codes, dates = np.empty(len(at), np.int64), np.empty(len(at))
        parts = np.unique(which).tolist()
        for k in parts:
            part, sel = self.corpus.parts[k], which == k
            seg = part.seg
            codes[sel] = c = seg.r_conv[at[sel] - part.start]  # (in range: the corpus checked every code)
            if id(seg) in self._segment_dates:  # (every conversation's already found: no need to count them)
                dates[sel] = self._segment_dates[id(seg)][c]
                continue
            few = np.unique(c)
            if len(few) <= FEW_CONVERSATIONS:  # (each one's date alone: cheaper than the whole segment's)
                each = np.array([latest(seg, x, self._dates) for x in few.tolist()])
                dates[sel] = each[np.searchsorted(few, c)]
            else:
                dates[sel] = self._conversation_dates(seg)[c]
        at_latest = dates == dates.max()
        best, chosen = None, np.zeros(len(at), bool)
        for k in parts:
            here = at_latest & (which == k)
            if here.any():
                part = self.corpus.parts[k]
                c = _greatest(part.seg, codes[here])
                name = (part.store.name, part.seg.convs[c])
                if best is None or name > best:
                    best, chosen = name, np.zeros(len(at), bool)
                if name == best:
                    chosen |= (which == k) & (codes == c)
        return int(at[np.flatnonzero(at_latest & chosen)[0]])

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


@functools.cache
def _salt(store: str) -> int:
    """A store's 64-bit mix for its rows' copy keys (the same key in two stores: two messages)."""
    return int.from_bytes(hashlib.blake2b(store.encode("utf-8", "surrogatepass"), digest_size=8).digest(), "little")


def _greatest(seg, codes) -> int:
    """Of CODES (conversations of SEG, an array), the one of the greatest id; many are compared by their
    places in the segment's ids sorted (``Segment.conversation_ranks``)."""
    if len(codes) <= FEW_CONVERSATIONS:
        return max(codes.tolist(), key=seg.convs.__getitem__)
    rank = seg.conversation_ranks()
    return int(codes[rank[codes].argmax()])


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
