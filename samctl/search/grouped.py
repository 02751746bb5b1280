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
    """A gate over rows met best first, a run (an array) at a time: ``fresh`` marks the rows of a run that
    are the first of their message, ``commit`` takes them and remembers the others as copies of the row
    taken; ``newest(r)`` is the copy of taken row R in the newest conversation among those met.  A message
    may have thousands of copies, so rows are handled as arrays and each distinct key read once."""

    def __init__(self, corpus):
        self.corpus = corpus
        self._numbers: dict = {}  # key -> its number (``ids``)
        self.first: dict = {}  # key number -> the row taken
        self.copies: dict = {}  # row taken -> arrays of the other rows met with its key
        self._dates: dict = {}  # ``latest``'s memo
        self._segment_dates: dict = {}  # id(segment) -> each of its conversations' latest date

    def _where(self, r: int) -> tuple:
        """(row R's ``key``, (its store, its conversation))."""
        part, local = self.corpus.locate(int(r))
        kind, _role, _ctype, conv = part.seg.row(local)
        ref = part.seg.ref(local)
        return key(part.store.name, kind, conv, int(part.seg.meta[local]["pos"]), ref), (part.store.name, conv)

    def ids(self, rows):
        """The number of each of ROWS' ``key`` (an int64 array of corpus rows; the same number, the same
        key), each distinct key decoded once however many rows hold it; BadIndex for a row whose codes or
        ref offsets are out of range, as ``_where``."""
        np = self.corpus.np
        rows = np.asarray(rows, np.int64)
        out = np.empty(len(rows), np.int64)
        which = self.corpus.part_numbers(rows)
        for k in np.unique(which).tolist():
            part = self.corpus.parts[k]
            at = np.flatnonzero(which == k)
            if len(at) < FEW_ROWS:  # (their keys made one by one: the arrays' passes cost more for a few)
                out[at] = self._few_ids(part.seg, part.store.name, rows[at] - part.start)
            else:
                out[at] = self._segment_ids(part.seg, part.store.name, rows[at] - part.start)
        return out

    def _few_ids(self, seg, store: str, local) -> list[int]:
        m = seg.a["meta"][local]
        kinds, convs = m["kind"], m["conv"]
        _check_codes(seg, kinds, m["role"], m["ctype"], convs)
        names = seg.convs
        return self._number(
            key(store, KINDS[kind], names[c], pos, ref)
            for kind, c, pos, ref in zip(kinds.tolist(), convs.tolist(), m["pos"].tolist(), seg.refs(local))
        )

    def _number(self, keys) -> list[int]:
        """The number of each of KEYS (a new key gets the next one)."""
        number = self._numbers.setdefault
        return [number(k, len(self._numbers)) for k in keys]

    def _segment_ids(self, seg, store: str, local):
        np = self.corpus.np
        m = seg.a["meta"]  # (each field gathered alone: a copy of whole records costs 15 times more)
        kinds, convs, pos = seg.r_kind[local], seg.r_conv[local], m["pos"][local]
        _check_codes(seg, kinds, m["role"][local], m["ctype"][local], convs)
        blob = seg.a["ref"]
        a, b = seg.ref_bounds(local)
        lengths = b - a
        out = np.empty(len(local), np.int64)
        for n in np.unique(lengths).tolist():
            at = np.flatnonzero(lengths == n)
            if n == 0:  # no id of its own: where it is
                cols = np.stack([kinds[at].astype(np.int64), convs[at].astype(np.int64), pos[at]], 1)
                first, inverse = _same_rows(np, cols.view(np.uint8))
                keys = [key(store, KINDS[kd], seg.convs[c], p, None) for kd, c, p in cols[first].tolist()]
            elif n <= GATHERED_REF:  # (each row's kind and ref bytes as one row of a matrix)
                both = np.empty((len(at), n + 1), np.uint8)
                both[:, 0] = kinds[at]
                both[:, 1:] = blob[a[at][:, None] + np.arange(n)]
                first, inverse = _same_rows(np, both)
                keys = [
                    key(store, KINDS[v[0]], "", 0, v[1:].decode("utf-8", "surrogatepass"))
                    for v in map(bytes, both[first])
                ]
            else:  # (a long ref: its rows one by one rather than a matrix of its length)
                keys = [
                    key(store, KINDS[kd], "", 0, bytes(blob[x : x + n]).decode("utf-8", "surrogatepass"))
                    for kd, x in zip(kinds[at].tolist(), a[at].tolist())
                ]
                inverse = np.arange(len(at))
            numbers = np.array(self._number(keys), np.int64)
            out[at] = numbers[inverse.ravel()]
        return out

    def fresh(self, ids):
        """A mask over IDS (the key numbers of rows met, in order): the first row of each key not taken."""
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
        np = self.corpus.np
        if not self.copies.get(int(r)):
            return int(r)
        at = np.concatenate([np.array([int(r)], np.int64), *self.copies[int(r)]])
        _, once = np.unique(at, return_index=True)
        at = at[np.sort(once)]  # (each row once, in the order met)
        # the first copy of the latest conversation date, then of the greatest conversation id (copies as
        # new as each other: not a row number, which depends on how the index was built)
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
                c = max(np.unique(codes[here]).tolist(), key=part.seg.convs.__getitem__)
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


# Fewer rows than this of one segment have their keys made one by one (``_few_ids``), more as arrays:
# the arrays' passes cost about 40 us a segment whatever the rows, a key made alone about 1 us.
FEW_ROWS = 16

# A ref of at most this many bytes is compared as a fixed-size value with the other rows' of its length
# (a matrix of rows x bytes); a longer one (no store writes one) is decoded row by row.
GATHERED_REF = 128


def _splitmix(n: int) -> tuple:
    """N odd 64-bit weights, always the same (SplitMix64 from 34): ``_same_rows``'s hash of a row."""
    out, x, mask = [], 34, (1 << 64) - 1
    for _ in range(n):
        x = (x + 0x9E3779B97F4A7C15) & mask
        z = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & mask
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & mask
        out.append((z ^ (z >> 31)) | 1)
    return tuple(out)


_WEIGHTS = _splitmix(GATHERED_REF + 1)  # (a ref's bytes and its kind; or a row's kind, conversation, place)

# Copies in at most this many conversations of a segment: each one's latest date is found alone (a pass
# over the segment's rows each, 0.03 ms for 60,000 rows), else every conversation's at once (0.8 ms).
FEW_CONVERSATIONS = 16


def _check_codes(seg, kinds, roles, ctypes, convs) -> None:
    """BadIndex unless every code of the rows given (arrays) names a kind, role, content type and
    conversation of SEG, as ``Segment.row`` asks of one row."""
    if (
        (kinds >= len(KINDS)).any()
        or (roles >= len(ROLES)).any()
        or (ctypes >= len(CTYPES)).any()
        or (convs < 0).any()
        or (convs >= seg.nconvs).any()
    ):
        raise BadIndex(f"{seg.name}: a row has codes out of range")


def _same_rows(np, m):
    """(the first row of each distinct row of M, a uint8 matrix; the number of each row's among them):
    rows hashed to one integer each and the hashes' equals checked byte for byte (a sort of integers,
    not of byte strings); two distinct rows of one hash, never seen, fall back to comparing the bytes."""
    if m.shape[1] <= len(_WEIGHTS):
        weights = np.array(_WEIGHTS[: m.shape[1]], np.uint64)
        _, first, inverse = np.unique(m.astype(np.uint64) @ weights, True, True)
        if (m == m[first[inverse]]).all():
            return first, inverse
    _, first, inverse = np.unique(np.ascontiguousarray(m).view(f"V{m.shape[1]}").ravel(), True, True)
    return first, inverse


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
