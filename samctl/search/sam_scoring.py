"""SAM's memory retrieval rules, reimplemented exactly: keyword boost, cosine, fallback embedding.

A message's importance score is in ``samctl/importance.py`` (every store's messages have one).

Pure functions, no I/O; numpy is imported only inside ``embed_many``; ``embed(t)`` and
``embed_many([t])[0]`` are bit-identical.  Which section of docs/formats/sam.md each function follows, and
the approximations: see below.

Design notes: docs/search-index.md, "search/sam_scoring.py".
"""

from __future__ import annotations

import math
import struct
import unicodedata
from collections import Counter
from dataclasses import dataclass
from functools import reduce
from itertools import chain
from operator import add, mul

# ---------------------------------------------------------------------------------------------
# Tokenising (sam.md §7.5 step 2, §7.7)

#: Foundation's ``CharacterSet.whitespacesAndNewlines`` as listed in sam.md §7.5 step 2.
SAM_WHITESPACE = (
    "\t\n\x0b\x0c\r \x85\xa0\u1680"
    "\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
    "\u2028\u2029\u202f\u205f\u3000"
)
# Python's str.split()/isspace() set is exactly SAM_WHITESPACE plus U+001C..U+001F
# (tests/core/test_scoring.py checks that claim over every code point).  So when a text
# contains none of those four, the fast C ``str.split()`` splits exactly where SAM does.
_SPLIT_TABLE = {ord(c): " " for c in SAM_WHITESPACE}


def _sam_split(s: str) -> list[str]:
    """Split on SAM's whitespace/newline set, dropping empty strings."""
    if "\x1c" in s or "\x1d" in s or "\x1e" in s or "\x1f" in s:
        return [w for w in s.translate(_SPLIT_TABLE).split(" ") if w]
    return s.split()


def fold(text: str) -> str:
    """Lowercase then NFC-normalise (see the module docstring on canonical equivalence)."""
    low = text.lower()
    if low.isascii():
        return low
    return unicodedata.normalize("NFC", low)


def tokens(text: str) -> set[str]:
    """The token set of sam.md §7.7: lowercase, SAM-whitespace split, tokens of more than 2 characters.

    Punctuation is kept (``"budget."`` is not ``"budget"``).
    """
    return {w for w in _sam_split(fold(text)) if len(w) > 2}


def keyword_boost(query_tokens: set[str], content_tokens: set[str]) -> float:
    """``min(0.5 * |Q & C| / |Q | C|, 0.5)``; 0 when the union is empty (sam.md §7.7)."""
    return _boost(len(query_tokens), len(content_tokens), len(query_tokens & content_tokens))


def _boost(nq: int, nc: int, inter: int) -> float:
    if not inter:  # (also when both sets are empty)
        return 0.0
    return min(0.5 * (inter / (nq + nc - inter)), 0.5)


def text_boost(query_tokens: set[str], text: str) -> float:
    """``keyword_boost(query_tokens, tokens(text))``, in bounded memory for a text of any size."""
    if len(text) <= PIECE:
        return keyword_boost(query_tokens, tokens(text))
    table = word_table(text, watch=query_tokens)
    return _boost(len(query_tokens), int(table.token.sum()), len(table.seen))


# ---------------------------------------------------------------------------------------------
# Long texts, a piece at a time

PIECE = 1 << 18  # characters: a text longer than this is split a piece at a time (``word_table``)


def split_pieces(text: str):
    """``text`` in pieces of about ``PIECE`` characters, each cut just before a space or a newline,
    so that no word spans two pieces and folding (lowercase, NFC) a piece gives the same characters
    as folding the whole text there (neither changes across a space or a newline).  A piece with
    neither grows to the next one (a text without any is one piece)."""
    start, n = 0, len(text)
    while start < n:
        end = start + PIECE
        if end >= n:
            yield text[start:]
            return
        cut = max(text.rfind(" ", start + 1, end), text.rfind("\n", start + 1, end))
        if cut < 0:
            found = [i for i in (text.find(" ", end), text.find("\n", end)) if i >= 0]
            cut = min(found) if found else n
        yield text[start:cut]
        start = cut


@dataclass
class WordTable:
    """The distinct words of a text, as numpy arrays over them (see ``word_table``)."""

    hits: object  # int16 (n, 2): sam.md §7.5 word bucket, stem bucket (64 + stem; -1 for words under 4 characters)
    token: object  # bool (n): a sam.md §7.7 token (more than 2 characters)
    keys: object  # uint64 (n): ``key(word)`` of tokens (0 for other words), or None without ``key``
    seen: set  # the words of ``watch`` that the text holds
    head: str  # the first 102 characters of ``fold(text.strip(SAM_WHITESPACE))`` (trigrams, sam.md §7.5 step 6)


def word_table(text: str, key=None, watch: set = frozenset()) -> WordTable:
    """The distinct words of ``fold(text)`` split as SAM splits it, read a piece at a time
    (``split_pieces``), for texts too long to split at once: a 60 MB message split in one go is a list of
    550 MB of words.  What is held besides the text is one piece's words and 21 bytes per distinct
    word.  Words of different pieces are told apart by Python's 64-bit string hash (two distinct
    words of one text with the same hash would count once: about one chance in 400,000 for a
    text of 10 million distinct words; a text of at most ``PIECE`` characters does not come here)."""
    import numpy as np  # (lazy: numpy: slow to import)

    hs, b1, b2, tok, keys = [], [], [], [], []
    seen: set = set()
    head = ""
    for piece in split_pieces(text.strip(SAM_WHITESPACE)):
        _trim()
        low = fold(piece)
        if len(head) < 102:  # (the folded pieces, end to end, are the folded text)
            head = (head + low[:102])[:102]
        words = list(set(_sam_split(low)))
        del low
        n = len(words)
        hits = list(map(_WORDS.__getitem__, words))
        hs.append(np.fromiter(map(hash, words), dtype=np.int64, count=n))
        b1.append(np.fromiter((h[0] for h in hits), dtype=np.int16, count=n))
        b2.append(np.fromiter((h[-1] if len(h) > 1 else -1 for h in hits), dtype=np.int16, count=n))
        tok.append(np.fromiter(map(len, words), dtype=np.int64, count=n) > 2)
        if key is not None:
            keys.append(np.fromiter((key(w) if len(w) > 2 else 0 for w in words), dtype=np.uint64, count=n))
        if watch:
            seen.update(watch.intersection(words))
    if not hs:
        return WordTable(
            np.zeros((0, 2), np.int16), np.zeros(0, bool), np.zeros(0, np.uint64) if key else None, seen, ""
        )
    _, first = np.unique(np.concatenate(hs), return_index=True)
    del hs
    return WordTable(
        np.stack((np.concatenate(b1)[first], np.concatenate(b2)[first]), axis=1),
        np.concatenate(tok)[first],
        np.concatenate(keys)[first] if key is not None else None,
        seen,
        head,
    )


def _table_counts(table: WordTable):
    """The word and stem hits of ``table`` per bucket: an int64 array of 256."""
    import numpy as np  # (lazy: numpy: slow to import)

    h = table.hits.ravel()
    return np.bincount(h[h >= 0].astype(np.int64), minlength=EMBED_DIM)


# ---------------------------------------------------------------------------------------------
# Vectors


def cosine(a, b) -> float:
    """Cosine similarity as SAM computes it (sam.md §7.7): 0.0 if either vector is empty (or None), the
    lengths differ, or a norm is 0; otherwise ``dot / (|a| * |b|)``, not clamped.

    Sums are accumulated left to right in float64, like SAM's loop.
    """
    if a is None or b is None or len(a) == 0 or len(a) != len(b):
        return 0.0
    a = list(map(float, a))
    b = list(map(float, b))
    # reduce, not sum(): from Python 3.12 sum() of floats is compensated, not left to right.
    dot = reduce(add, map(mul, a, b), 0.0)
    na = reduce(add, map(mul, a, a), 0.0)
    nb = reduce(add, map(mul, b, b), 0.0)
    if na == 0.0 or nb == 0.0:
        return 0.0
    return dot / (math.sqrt(na) * math.sqrt(nb))


def pack_vector(floats) -> bytes:
    """Pack as SAM stores an embedding: n little-endian IEEE-754 float64, no header (sam.md §7.3)."""
    floats = list(floats)
    return struct.pack("<%dd" % len(floats), *floats)


def unpack_vector(blob: bytes) -> list[float]:
    """Inverse of ``pack_vector``.  Raises ValueError if the length is not a multiple of 8."""
    if len(blob) % 8:
        raise ValueError(f"embedding blob of {len(blob)} bytes is not a whole number of float64s")
    return list(struct.unpack("<%dd" % (len(blob) // 8), blob))


def score_memory(query_vec, query_tokens: set[str], mem_vec, mem_content: str) -> float:
    """SAM's retrieval score of one memory row (sam.md §7.7): ``cosine + keyword_boost``.

    ``query_vec``/``mem_vec`` may be None or empty (cosine 0): keyword-only search passes None.
    """
    return cosine(query_vec, mem_vec) + keyword_boost(query_tokens, tokens(mem_content))


# ---------------------------------------------------------------------------------------------
# sam.md §7.5 fallback embedding

_FNV_OFFSET = 0xCBF29CE484222325
_FNV_PRIME = 0x100000001B3
_MASK64 = 0xFFFFFFFFFFFFFFFF


def fnv1a64(data: bytes) -> int:
    """FNV-1a, 64-bit, as an unsigned int in [0, 2**64)."""
    h = _FNV_OFFSET
    for byte in data:
        h = ((h ^ byte) * _FNV_PRIME) & _MASK64
    return h


def stable_hash(s: str) -> int:
    """samctl's stand-in for Swift's ``String.hashValue`` in sam.md §7.5.

    FNV-1a 64 over the UTF-8 bytes of the NFC-normalised string (lone surrogates encoded with
    ``surrogatepass`` so that no ``str`` can make it raise), reinterpreted as a two's complement
    signed 64-bit integer, like Swift's ``Int``.  Why not Python's ``hash``: it is seeded per
    process (PYTHONHASHSEED), so vectors built by one run could not be compared with a query
    embedded by the next, nor on another machine.  FNV-1a is deterministic everywhere, simple,
    and well distributed enough for 64/128 buckets.  NFC makes canonically equivalent strings
    (which Swift treats as equal) hash equal.
    """
    h = fnv1a64(unicodedata.normalize("NFC", s).encode("utf-8", "surrogatepass"))
    return h - (1 << 64) if h >= (1 << 63) else h


#: The hash ``embed`` uses: ``STABLE_HASH(str) -> int`` (signed 64-bit).  Index files should record
#: ``STABLE_HASH_NAME`` so that vectors made with a different hash are never compared.
STABLE_HASH = stable_hash
STABLE_HASH_NAME = "fnv1a64-nfc-utf8"

EMBED_DIM = 256


def _bucket(s: str, mod: int) -> int:
    # Swift: abs(s.hashValue) % mod on Int.  abs(Int.min) traps in Swift; here it is 2**63, and
    # 2**63 % mod == 0 for mod 64/128, so the one value Swift cannot handle maps to bucket 0.
    return abs(STABLE_HASH(s)) % mod


class _WordMemo(dict):
    """word -> its bucket hits: ``(word_bucket,)``, or ``(word_bucket, stem_bucket)`` when the word
    has at least 4 characters (sam.md §7.5 steps 4 and 5).

    A dict with ``__missing__`` instead of ``functools.lru_cache``: a hit is a plain C dict lookup and
    ``map(memo.__getitem__, words)`` keeps the whole loop in C, with no Python frame per word.
    Bounded by ``_trim``.
    """

    __slots__ = ()

    def __missing__(self, word: str) -> tuple[int, ...]:
        if len(word) >= 4:
            v = (_bucket(word, 64), 64 + _STEM[word[:4]])
        else:
            v = (_bucket(word, 64),)
        self[word] = v
        return v


class _StemMemo(dict):
    """4-character stem -> ``abs(h) % 64`` (the 64 offset is added by the caller)."""

    __slots__ = ()

    def __missing__(self, stem: str) -> int:
        v = self[stem] = _bucket(stem, 64)
        return v


class _TriMemo(dict):
    """trigram, as a tuple of 3 one-character strings -> ``128 + abs(h) % 128`` (sam.md §7.5 step 6).

    Tuple keys: ``zip(s, s[1:], s[2:])`` makes them in C, cheaper than 100 string slices.
    """

    __slots__ = ()

    def __missing__(self, tri: tuple[str, str, str]) -> int:
        v = self[tri] = 128 + _bucket("".join(tri), 128)
        return v


class _ValueMemo(dict):
    """(bucket, hit count) -> the bucket's value before normalising.

    Every increment in a region is the same constant and each add is capped, so a bucket hit c
    times holds exactly ``min(c * weight, cap)`` (all exact binary fractions: identical to adding
    one hit at a time as SAM does).
    """

    __slots__ = ()

    def __missing__(self, key: tuple[int, int]) -> float:
        i, c = key
        v = self[key] = min(c * _WEIGHT[i], _CAP[i])
        return v


_MEMO_MAX = 1 << 18  # entries per memo; a memo is cleared (not evicted entry by entry) when exceeded
_WORDS = _WordMemo()
_STEM = _StemMemo()
_TRI = _TriMemo()
_VALUE = _ValueMemo()
_ZERO = [0.0] * 256

# Per-bucket weight and cap (sam.md §7.5 steps 4-6): words 2.0 cap 10 in 0..63, stems 1.5 cap 8 in
# 64..127, trigrams 0.5 cap 5 in 128..255.
_WEIGHT = [2.0] * 64 + [1.5] * 64 + [0.5] * 128
_CAP = [10.0] * 64 + [8.0] * 64 + [5.0] * 128


def _trim() -> None:
    for memo in (_WORDS, _STEM, _TRI, _VALUE):
        if len(memo) > _MEMO_MAX:
            memo.clear()


def _buckets(text: str):
    """The bucket hits of sam.md §7.5 steps 1-6 as an iterator of indexes, or None for blank text.

    ``characters`` are code points of the lowercased, NFC-normalised text (Swift uses grapheme
    clusters; see the module docstring).
    """
    clean = text.strip(SAM_WHITESPACE)
    if not clean:
        return None
    low = fold(clean)
    word_hits = chain.from_iterable(map(_WORDS.__getitem__, set(_sam_split(low))))
    head = low[:102]  # trigrams at the first 100 positions (zip stops at the shortest)
    tri_hits = map(_TRI.__getitem__, zip(head, head[1:], head[2:]))
    return chain(word_hits, tri_hits)


def embed(text: str) -> list[float] | None:
    """The sam.md §7.5 fallback embedding of ``text``: 256 floats, L2-normalised; None for blank text.

    Structure exactly as SAM's (weights, caps, regions, first 100 trigram positions, repeated
    trigrams adding repeatedly); the hash is ``STABLE_HASH``, bucket = ``abs(signed hash) % m``.
    """
    _trim()
    if len(text) > PIECE:
        table = word_table(text)
        if not table.head:
            return None
        head = table.head
        counts = Counter(map(_TRI.__getitem__, zip(head, head[1:], head[2:])))
        for i, c in enumerate(_table_counts(table).tolist()):
            if c:
                counts[i] += c
    else:
        hits = _buckets(text)
        if hits is None:
            return None
        counts = Counter(hits)
    vals = list(map(_VALUE.__getitem__, counts.items()))
    # The sum of squares is exact (multiples of 0.25 below 2**53), so its order cannot matter.
    norm = math.sqrt(sum(map(mul, vals, vals)))
    v = _ZERO.copy()
    for i, x in zip(counts, vals):
        v[i] = x / norm
    return v


def _ascii_trigram_buckets(np, buf, idx):
    """``128 + abs(STABLE_HASH(tri)) % 128`` for the ASCII trigrams ``buf[i:i+3]``, ``i`` in ``idx``.

    FNV-1a 64 over 3 bytes in uint64 arrays (wrapping multiply); for ASCII text NFC is the
    identity and UTF-8 is the bytes themselves, so this equals ``_TRI`` exactly (tested).
    """
    h = np.full(idx.shape, _FNV_OFFSET, dtype=np.uint64)
    prime = np.uint64(_FNV_PRIME)
    for k in range(3):
        h ^= buf[idx + k].astype(np.uint64)
        h *= prime
    # |signed 64-bit value| as an unsigned magnitude (2**63 stays 2**63, see _bucket)
    mag = np.where(h >= np.uint64(1 << 63), ~h + np.uint64(1), h)
    return (mag % np.uint64(128)).astype(np.int64) + 128


def embed_many(texts, chunk: int = 4096):
    """Embed many texts at once: a float32 ``numpy.ndarray`` of shape ``(len(texts), 256)``.

    Row ``i`` equals ``numpy.float32(embed(texts[i]))`` bit for bit (tested); a blank text
    (``embed`` -> None) gives an all-zero row, whose cosine with anything is 0 like SAM's empty
    blob.  Words go through the same memo as ``embed``; trigrams of ASCII text are hashed
    vectorised; counting, capping and normalising are vectorised per chunk of ``chunk`` texts,
    which also bounds the temporary memory.
    """
    import numpy as np  # (lazy: numpy: slow to import)

    texts = list(texts)
    n = len(texts)
    out = np.zeros((n, EMBED_DIM), dtype=np.float32)
    weight = np.array(_WEIGHT)
    cap = np.array(_CAP)
    for start in range(0, n, chunk):
        part = texts[start : start + chunk]
        m = len(part)
        flat: list[int] = []  # bucket hits done in Python, text after text
        lens: list[int] = []  # how many of them belong to each text
        heads: list[str] = []  # ASCII trigram windows (first 102 characters), hashed by numpy
        head_rows: list[int] = []
        extend = flat.extend
        big = []  # (row, word and stem hits per bucket) of texts longer than PIECE
        for row, text in enumerate(part):
            before = len(flat)
            _trim()
            if len(text) > PIECE:  # a piece at a time: no list of all its words (``word_table``)
                table = word_table(text)
                head = table.head
                if head:
                    big.append((row, _table_counts(table)))
            else:
                clean = text.strip(SAM_WHITESPACE)
                low = fold(clean) if clean else ""
                extend(chain.from_iterable(map(_WORDS.__getitem__, set(_sam_split(low)))))
                head = low[:102]
            if head:
                if head.isascii():
                    if len(head) >= 3:
                        heads.append(head)
                        head_rows.append(row)
                else:
                    extend(map(_TRI.__getitem__, zip(head, head[1:], head[2:])))
            lens.append(len(flat) - before)
        rows = np.repeat(np.arange(m, dtype=np.int64), lens)
        cells = rows * EMBED_DIM + np.array(flat, dtype=np.int64)
        if heads:
            buf = np.frombuffer("".join(heads).encode("ascii"), dtype=np.uint8)
            head_len = np.fromiter(map(len, heads), dtype=np.int64, count=len(heads))
            head_start = np.cumsum(head_len) - head_len
            ntri = head_len - 2
            tri_first = np.cumsum(ntri) - ntri
            idx = np.arange(int(ntri.sum()), dtype=np.int64) + np.repeat(head_start - tri_first, ntri)
            tri_rows = np.repeat(np.array(head_rows, dtype=np.int64), ntri)
            cells = np.concatenate((cells, tri_rows * EMBED_DIM + _ascii_trigram_buckets(np, buf, idx)))
        counts = np.bincount(cells, minlength=m * EMBED_DIM).reshape(m, EMBED_DIM)
        for row, c in big:
            counts[row] += c
        vec = np.minimum(counts * weight, cap)
        norm = np.sqrt(np.einsum("ij,ij->i", vec, vec))  # exact sums, so order does not matter
        nz = norm > 0.0
        vec[nz] /= norm[nz, None]
        out[start : start + m] = vec
    return out
