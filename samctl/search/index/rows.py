"""Building rows from sources: SAM memories, messages of conversations, messages of archives.

The store is only read (``Store.source_rows``); ``read_source`` never raises for bad input; blank texts are
not rows; rows come back in source order, with or without worker processes.

Design notes: docs/search-index.md, "search/index/rows.py".
"""

from __future__ import annotations

import math
import os
from collections import Counter
from dataclasses import dataclass, field

from samctl.search import sam_scoring
from samctl.search import text as tx
from samctl.search.calls import call_text
from samctl.search.index.format import (
    ARCHIVED,
    CALL,
    CTYPES,
    FLAG_BASE_DB,
    MEMORY,
    MESSAGE,
    ROLES,
    copy_key,
    dedupe_key,
    encode_text,
    load_numpy,
    lower_ascii,
    meta_dtype,
    row_crc,
    term_key_of,
)
from samctl.search.index.sources import Source
from samctl.stores import workers

CHUNK_SOURCES = 48  # sources per unit of work (and per progress report) at most ...
PARALLEL_MIN_SOURCES = 256  # fewer sources to read than this: no worker processes
CHUNK_BYTES = 4 << 20  # ... or fewer, once their files hold this many bytes
AHEAD = 4  # chunks per worker read ahead, and not yet taken: the workers go on while a segment is
# finished, and what waits is bounded (a chunk holds about twice the bytes of its files)


@dataclass
class Batch:
    """The rows of one source, as Python lists, plus what reading it found."""

    key: str
    flag: int = 0  # meta flags of every row
    findings: list = field(default_factory=list)
    infos: list = field(default_factory=list)  # conversation infos: {"id", "title", "topic", "topic_name"}
    kinds: list = field(default_factory=list)
    roles: list = field(default_factory=list)
    ctypes: list = field(default_factory=list)
    convs: list = field(default_factory=list)
    pos: list = field(default_factory=list)
    dates: list = field(default_factory=list)
    imps: list = field(default_factory=list)
    dims: list = field(default_factory=list)
    refs: list = field(default_factory=list)
    texts: list = field(default_factory=list)

    def add(self, kind, role, ctype, conv, pos, date, imp, dim, ref, text):
        self.kinds.append(kind)
        self.roles.append(role)
        self.ctypes.append(ctype)
        self.convs.append(conv)
        self.pos.append(pos)
        self.dates.append(math.nan if date is None else date)
        self.imps.append(imp)
        self.dims.append(dim)
        self.refs.append(ref)
        self.texts.append(text)


_KIND_CODE = {"memory": MEMORY, "message": MESSAGE, "archived": ARCHIVED, "call": CALL}
_ROLE_CODE = {r: i for i, r in enumerate(ROLES)}
_CTYPE_CODE = {c: i for i, c in enumerate(CTYPES)}


def read_source(store, src: Source) -> Batch:
    """The rows of one source; never raises for bad input (findings say what was wrong)."""
    b = Batch(src.key, FLAG_BASE_DB if src.holds == "memories" and src.conv is None else 0)
    add, roles, ctypes = b.add, _ROLE_CODE, _CTYPE_CODE
    calls = []  # (a message's tool calls come after every other row: a conversation's messages stay adjacent)
    for r in store.source_rows(src, b.findings, b.infos):
        kind = _KIND_CODE[r.kind]
        if kind != MESSAGE or r.text.strip():  # (a message with only tool calls: its calls are its rows)
            add(
                kind,
                roles.get(r.role, 0),
                ctypes.get(r.content_type, 1) if kind == MEMORY else 0,
                r.conversation,
                r.position,
                r.date,
                r.importance,
                r.dimension,
                r.ref,
                r.text,
            )
        if r.calls and kind == MESSAGE:
            calls.append(r)
    for r in calls:
        for name, arguments, cid in r.calls:
            add(
                CALL,
                roles.get(r.role, 0),
                0,
                r.conversation,
                r.position,
                r.date,
                r.importance,
                0,
                cid if isinstance(cid, str) else "",
                call_text(name, arguments),
            )
    for f in b.findings:
        f.conversation = f.conversation or src.conv
    return b


@dataclass
class Chunk:
    """Rows ready for a segment: what a worker sends back (numpy arrays and bytes, picklable)."""

    keys: list
    counts: list
    findings: list
    infos: list
    conv_names: list
    meta: object
    text: bytes | bytearray
    text_len: object
    ltext: bytes | bytearray
    ltext_len: object
    ref: bytes | bytearray
    ref_len: object
    tok_hash: object
    tok_row: object
    tok_tf: object
    vocab: set


def _blob(pieces) -> tuple:
    """(a bytearray of the byte strings ``pieces`` gives, end to end; an int64 array of their lengths).
    Each piece is let go once appended (a generator gives one at a time)."""
    out = bytearray()
    lens = []
    for b in pieces:
        out += b
        lens.append(len(b))
    return out, load_numpy().array(lens, dtype=load_numpy().int64)


def _folded_blob(texts) -> tuple:
    """``_blob`` of the folded form of each text (``encode_text(sam_scoring.fold(t))``), left empty where it
    is the text's UTF-8 with A-Z lowered (``format.lower_ascii``: every ASCII text, and most others),
    which a search makes itself; kept only where folding changes more (a capital outside ASCII, a
    decomposed accent).  A long text is folded and appended a piece at a time (folding does not change
    across the spaces and newlines the pieces are cut at: ``sam_scoring.split_pieces``), so its folded form
    is never held whole besides the blob."""
    out = bytearray()
    lens = []
    for t in texts:
        before = len(out)
        if not t.isascii():
            same = True
            for piece in sam_scoring.split_pieces(t) if len(t) > sam_scoring.PIECE else (t,):
                folded = encode_text(sam_scoring.fold(piece))
                same = same and folded == lower_ascii(encode_text(piece))
                out += folded
            if same:
                del out[before:]
        lens.append(len(out) - before)
    return out, load_numpy().array(lens, dtype=load_numpy().int64)


class _Terms:
    """What a worker remembers between chunks (bounded: ``reset`` when it grows too big): folded word
    -> its term id, or ``-1 - k`` for the k-th compound (a word of several terms); term id -> term,
    and its 64-bit key."""

    LIMIT = 1 << 20

    def __init__(self):
        self.reset()

    def reset(self) -> None:
        self.word: dict = _WordIds(self)
        self.ids: dict = {}
        self.terms: list = []
        self.keys: list = []
        self.compounds: list = []

    def term_id(self, term: str) -> int:
        i = self.ids.get(term)
        if i is None:
            i = self.ids[term] = len(self.terms)
            self.terms.append(term)
            self.keys.append(term_key_of(term))
        return i


class _WordIds(dict):
    __slots__ = ("terms",)

    def __init__(self, terms: _Terms):
        super().__init__()
        self.terms = terms

    def __missing__(self, word: str) -> int:
        t = self.terms
        parts = tx.word_terms(word)
        if len(parts) == 1:
            v = t.term_id(parts[0])
        else:
            v = -1 - len(t.compounds)
            t.compounds.append([t.term_id(p) for p in parts])
        self[word] = v
        return v


_TERMS = _Terms()
FLUSH_WORDS = 1 << 18  # words held as strings at a time before they are made term ids (bounds a chunk's memory)


def _long_text_counts(text: str) -> Counter:
    """Term id -> count in a text longer than ``sam_scoring.PIECE``, a piece at a time: what is held is
    one piece's words and the distinct terms, never a list of all the text's words."""
    out: Counter = Counter()
    for piece in sam_scoring.split_pieces(text):
        found = tx.folded_words(piece)
        if found is None:
            out.update(map(_TERMS.term_id, tx.tokens(piece)))
            continue
        for word, n in Counter(found).items():
            v = _TERMS.word[word]
            for t in (v,) if v >= 0 else _TERMS.compounds[-1 - v]:
                out[t] += n
    return out


def _postings(texts: list[str]):
    """BM25 postings of ``texts``: (term keys uint64, rows int32, counts uint16) sorted by key, rows
    ascending under a key; the number of terms of each row; the terms seen.  The same counts as
    ``Counter(text.tokens(t))`` row by row, computed for all rows at once: words are found per text
    (in C), made term ids through a memo (in C but for new words), and counted by numpy."""
    np = load_numpy()
    if len(_TERMS.ids) > _Terms.LIMIT or len(_TERMS.word) > _Terms.LIMIT:
        _TERMS.reset()
    ids_of = _TERMS.word.__getitem__
    tid_parts, row_parts = [], []
    words: list = []
    runs: list = []  # row, how many of ``words`` are its, row, ...
    grams: list = []  # term ids of the texts in scripts without spaces (their n-grams), and their rows
    gram_rows: list = []
    longs = []  # (row, term id -> count) of the long texts

    def flush():
        if words:
            tid_parts.append(np.fromiter(map(ids_of, words), np.int64, len(words)))
            r = np.array(runs, dtype=np.int64).reshape(-1, 2)
            row_parts.append(np.repeat(r[:, 0], r[:, 1]))
            words.clear()
            runs.clear()

    for i, t in enumerate(texts):
        if len(t) > sam_scoring.PIECE:
            longs.append((i, _long_text_counts(t)))
            continue
        found = tx.folded_words(t)
        if found is None:
            ts = tx.tokens(t)
            grams.extend(map(_TERMS.term_id, ts))
            gram_rows.extend([i] * len(ts))
        else:
            words.extend(found)
            runs += (i, len(found))
            if len(words) >= FLUSH_WORDS:
                flush()
    flush()
    tid = np.concatenate(tid_parts + [np.array(grams, dtype=np.int64)])
    row = np.concatenate(row_parts + [np.array(gram_rows, dtype=np.int64)])
    several = tid < 0
    if several.any():  # compounds: each of their terms, in the compound's row
        lists = [_TERMS.compounds[-1 - k] for k in tid[several].tolist()]
        extra = np.fromiter((x for c in lists for x in c), np.int64)
        row = np.concatenate((row[~several], np.repeat(row[several], [len(c) for c in lists])))
        tid = np.concatenate((tid[~several], extra))
    ntok = np.bincount(row, minlength=len(texts))
    pairs, counts = np.unique((row << 32) | tid, return_counts=True)  # (row-major: rows ascending)
    if longs:
        lp = np.array([(r << 32) | k for r, c in longs for k in c], dtype=np.int64)
        lc = np.array([n for _, c in longs for n in c.values()], dtype=np.int64)
        for r, c in longs:
            ntok[r] = sum(c.values())
        pairs, counts = np.concatenate((pairs, lp)), np.concatenate((counts, lc))
        order = np.argsort(pairs, kind="stable")
        pairs, counts = pairs[order], counts[order]
    terms, which = np.unique(pairs & 0xFFFFFFFF, return_inverse=True)
    keys = np.array([_TERMS.keys[j] for j in terms.tolist()], dtype=np.uint64)[which]
    order = np.argsort(keys, kind="stable")  # (the writer's own stable sort then merges sorted runs)
    vocab = {_TERMS.terms[j] for j in terms.tolist()}
    return (
        keys[order],
        (pairs >> 32).astype(np.int32)[order],
        np.minimum(counts, 0xFFFF).astype(np.uint16)[order],
        np.minimum(ntok, 0xFFFFFFFF),
        vocab,
    )


def process(batches: list[Batch]) -> Chunk:
    """Tokenise and pack the rows of some sources: their meta, blobs and BM25 postings (term key,
    row, count), and the terms seen (for ``prefix*``)."""
    np = load_numpy()
    texts = [t for b in batches for t in b.texts]
    n = len(texts)
    meta = np.zeros(n, dtype=meta_dtype())
    conv_names: dict[str, int] = {}
    convs = [conv_names.setdefault(c, len(conv_names)) for b in batches for c in b.convs]
    for name, col in (
        ("kind", "kinds"),
        ("role", "roles"),
        ("ctype", "ctypes"),
        ("pos", "pos"),
        ("date", "dates"),
        ("imp", "imps"),
        ("dim", "dims"),
    ):
        meta[name] = [x for b in batches for x in getattr(b, col)]
    meta["conv"] = convs
    meta["flags"] = [b.flag for b in batches for _ in b.texts]
    tok_hash, tok_row, tok_tf, meta["ntok"], vocab = _postings(texts)
    names = list(conv_names)
    cstrs = [names[i] for i in convs]
    # The blobs are built text by text: a long text's bytes are never held twice (its UTF-8 and the
    # blob it is joined into), and its folded form is made a piece at a time.
    text, text_len = _blob(encode_text(t) for t in texts)
    ltext, ltext_len = _folded_blob(texts)  # --exact: lowercase, NFC (Swift's canonical equivalence)
    ref, ref_len = _blob(encode_text(r) for b in batches for r in b.refs)
    cols = [meta[k].tolist() for k in ("kind", "role", "ctype", "flags", "pos", "date", "imp", "dim")]
    toff, loff, roff = (np.concatenate(([0], np.cumsum(x))).tolist() for x in (text_len, ltext_len, ref_len))
    dkeys, crcs, copies = [], [], []
    with memoryview(text) as tv, memoryview(ltext) as lv, memoryview(ref) as rv:
        for i, (c, *fields) in enumerate(zip(cstrs, *cols)):
            with tv[toff[i] : toff[i + 1]] as t, lv[loff[i] : loff[i + 1]] as lt, rv[roff[i] : roff[i + 1]] as r:
                dkeys.append(dedupe_key(c, texts[i], t) if fields[0] != MEMORY else 0)
                crcs.append(row_crc(c, *fields, t, lt, r))
                copies.append(copy_key(fields[0], c, fields[4], r, t))
    meta["dkey"] = np.array(dkeys, dtype=np.uint64)
    meta["crc"] = crcs
    meta["copy"] = np.array(copies, dtype=np.uint64)
    return Chunk(
        keys=[b.key for b in batches],
        counts=[len(b.texts) for b in batches],
        findings=[b.findings for b in batches],
        infos=[b.infos for b in batches],
        conv_names=names,
        meta=meta,
        text=text,
        text_len=text_len,
        ltext=ltext,
        ltext_len=ltext_len,
        ref=ref,
        ref_len=ref_len,
        tok_hash=tok_hash,
        tok_row=tok_row,
        tok_tf=tok_tf,
        vocab=vocab,
    )


def _read_part(store, sources: list[Source]) -> Chunk:
    from samctl.search import index  # (lazy: not loaded by ls or --help)

    return process([index.read_source(store, s) for s in sources])


def _bytes_of(src: Source) -> int:
    """The bytes of a source's files, as its signature says ("size:mtime:inode:ctime" per file, "-": none)."""
    sizes = [p.partition(":")[0] for p in (src.sig or "").split("|")]
    return sum(int(n) for n in sizes if n.isdigit())


def read_all(store, sources: list[Source], progress=None, jobs: int | None = None):
    """Chunks for ``sources`` in order, read by worker processes when there are many."""
    chunks, part, held = [], [], 0
    for src in sources:
        part.append(src)
        held += _bytes_of(src)
        if len(part) == CHUNK_SOURCES or held >= CHUNK_BYTES:
            chunks.append(part)
            part, held = [], 0
    if part:
        chunks.append(part)
    total = len(sources)
    if jobs is None:
        jobs = workers.jobs("SAMCTL_INDEX_JOBS" if os.environ.get("SAMCTL_INDEX_JOBS", "").isdigit() else "SAMCTL_JOBS")
    done = rows = 0
    for part, chunk in zip(
        chunks,
        workers.ordered_map(store, _read_part, chunks, jobs if total >= PARALLEL_MIN_SOURCES else 1, ahead=AHEAD),
    ):
        done += len(part)
        rows += len(chunk.meta)
        if progress:
            progress(done, total, rows)
        yield chunk
