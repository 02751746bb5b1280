"""SAM's scoring rules, reimplemented exactly: importance, keyword boost, cosine, fallback embedding.

Spec references are to ``shared/spec/sam-format.md``:

- ``importance``      §4.5.4 (message importance, plain substring tests)
- ``tokens``          §7.7  (lowercase, SAM whitespace split, tokens of more than 2 characters)
- ``keyword_boost``   §7.7  (min(0.5 * Jaccard, 0.5))
- ``cosine``          §7.7  (0 for empty / different lengths / zero norm; not clamped)
- ``embed``           §7.5  (256-d hashed vector; our own deterministic hash, see ``STABLE_HASH``)
- ``pack_vector``     §7.3, §15.3 (raw little-endian float64, no header)

Invariants:

- Pure functions, no I/O.  This module must not import numpy at import time: the CLI's start-up path
  imports it.  Only ``embed_many`` imports numpy, inside the function.
- ``embed(t)`` and ``embed_many([t])[0]`` are bit-identical (after the float32 cast of the latter).
- Fallback vectors are compatible with SAM's in *format* only: SAM hashes with Swift's per-process
  seeded ``String.hashValue``, which nobody (not even SAM across launches) can reproduce.

Approximations, all documented where they occur:

- Swift counts and slices *grapheme clusters*; we use code points of the NFC-normalised text.  They
  agree for all precomposed text (ASCII, Latin, CJK, most emoji without modifiers/ZWJ sequences).
- Swift string equality is canonical equivalence; NFC-normalising before hashing and before building
  token sets gives the same equivalence classes.
"""

from __future__ import annotations

import math
import struct
import unicodedata
from collections import Counter
from functools import reduce
from itertools import chain
from operator import add, mul

# ---------------------------------------------------------------------------------------------
# §4.5.4 importance

_QUESTION_WORDS = ("what", "which", "how")
_CONSTRAINT_WORDS = (
    "must", "require", "need to", "budget", "limit", "maximum", "minimum", "within", "miles",
    "radius", "constraint",
)  # fmt: skip
_CONFIRM_WORDS = (
    "yes", "proceed", "approved", "confirmed", "agree", "correct", "exactly", "that's right",
    "go ahead",
)  # fmt: skip
_PRIORITY_WORDS = ("focus on", "prioritize", "most important", "critical", "priority", "key requirement")
_ACK_WORDS = ("thanks", "thank you", "ok", "okay", "got it", "sounds good", "perfect", "great")
_ACKS = frozenset(w + end for w in _ACK_WORDS for end in ("", "!", "."))


def importance(text: str, is_user: bool) -> float:
    """SAM's importance score of a message (§4.5.4), exactly, including its float arithmetic.

    Lengths are Swift character counts, approximated by ``len`` (code points), as the spec says.
    """
    lower = text.lower()
    imp = 0.7 if is_user else 0.5
    if not is_user and ("?" in text or any(w in lower for w in _QUESTION_WORDS)):
        imp = max(imp, 0.85)
    if any(w in lower for w in _CONSTRAINT_WORDS):
        imp = max(imp, 0.9)
    if len(text) < 200 and any(w in lower for w in _CONFIRM_WORDS):
        imp = max(imp, 0.85)
    if any(w in lower for w in _PRIORITY_WORDS):
        imp = max(imp, 0.85)
    if len(text) < 50 and lower in _ACKS:
        imp = 0.3
    if is_user and len(text) > 300:
        imp = min(imp + 0.1, 1.0)
    return imp


# ---------------------------------------------------------------------------------------------
# Tokenising (§7.5 step 2, §7.7)

#: Foundation's ``CharacterSet.whitespacesAndNewlines`` as listed in §7.5 step 2.
SAM_WHITESPACE = (
    "\t\n\x0b\x0c\r \x85\xa0\u1680"
    "\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
    "\u2028\u2029\u202f\u205f\u3000"
)
# Python's str.split()/isspace() set is exactly SAM_WHITESPACE plus these four separators
# (tests/core/test_scoring.py checks that claim over every code point).  So when a text
# contains none of them, the fast C ``str.split()`` splits exactly where SAM does.
_PY_ONLY_WHITESPACE = ("\x1c", "\x1d", "\x1e", "\x1f")
_SPLIT_TABLE = {ord(c): " " for c in SAM_WHITESPACE}


def _sam_split(s: str) -> list[str]:
    """Split on SAM's whitespace/newline set, dropping empty strings."""
    if "\x1c" in s or "\x1d" in s or "\x1e" in s or "\x1f" in s:
        return [w for w in s.translate(_SPLIT_TABLE).split(" ") if w]
    return s.split()


def _fold(text: str) -> str:
    """Lowercase then NFC-normalise (see the module docstring on canonical equivalence)."""
    low = text.lower()
    if low.isascii():
        return low
    return unicodedata.normalize("NFC", low)


def tokens(text: str) -> set[str]:
    """The token set of §7.7: lowercase, SAM-whitespace split, tokens of more than 2 characters.

    Punctuation is kept (``"budget."`` is not ``"budget"``).
    """
    return {w for w in _sam_split(_fold(text)) if len(w) > 2}


def keyword_boost(query_tokens: set[str], content_tokens: set[str]) -> float:
    """``min(0.5 * |Q & C| / |Q | C|, 0.5)``; 0 when the union is empty (§7.7)."""
    if not query_tokens and not content_tokens:
        return 0.0
    inter = len(query_tokens & content_tokens)
    if not inter:
        return 0.0
    union = len(query_tokens) + len(content_tokens) - inter
    return min(0.5 * (inter / union), 0.5)


# ---------------------------------------------------------------------------------------------
# Vectors


def cosine(a, b) -> float:
    """Cosine similarity as SAM computes it (§7.7): 0.0 if either vector is empty (or None), the
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
    """Pack as SAM stores an embedding: n little-endian IEEE-754 float64, no header (§7.3)."""
    floats = list(floats)
    return struct.pack("<%dd" % len(floats), *floats)


def unpack_vector(blob: bytes) -> list[float]:
    """Inverse of ``pack_vector``.  Raises ValueError if the length is not a multiple of 8."""
    if len(blob) % 8:
        raise ValueError(f"embedding blob of {len(blob)} bytes is not a whole number of float64s")
    return list(struct.unpack("<%dd" % (len(blob) // 8), blob))


def score_memory(query_vec, query_tokens: set[str], mem_vec, mem_content: str) -> float:
    """SAM's retrieval score of one memory row (§7.7): ``cosine + keyword_boost``.

    ``query_vec``/``mem_vec`` may be None or empty (cosine 0): keyword-only search passes None.
    """
    return cosine(query_vec, mem_vec) + keyword_boost(query_tokens, tokens(mem_content))


# ---------------------------------------------------------------------------------------------
# §7.5 fallback embedding

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
    """samctl's stand-in for Swift's ``String.hashValue`` in §7.5.

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


class _Memo(dict):
    """A dict that computes a missing bucket on first lookup.

    Faster than ``functools.lru_cache`` for this (a hit is a plain C dict lookup, and
    ``map(memo.__getitem__, ...)`` keeps the loop in C); bounded by ``_trim``.
    """

    __slots__ = ("offset", "mod")

    def __init__(self, offset: int, mod: int):
        super().__init__()
        self.offset = offset
        self.mod = mod

    def __missing__(self, key: str) -> int:
        v = self[key] = self.offset + _bucket(key, self.mod)
        return v


_MEMO_MAX = 1 << 18  # entries per memo; cleared (not evicted one by one) when exceeded
_WORD = _Memo(0, 64)  # §7.5 step 4: unique words -> 0..63
_STEM = _Memo(64, 64)  # step 5: 4-character stems -> 64..127
_TRI = _Memo(128, 128)  # step 6: character trigrams -> 128..255
_TRI_SLICES = [slice(k, k + 3) for k in range(100)]

# Per-bucket weight and cap: every increment in a region is the same constant and each add is
# capped, so the value of a bucket hit c times is exactly min(c * weight, cap) (all of these are
# exact binary fractions, so the float result is identical to adding one by one).
_WEIGHT = [2.0] * 64 + [1.5] * 64 + [0.5] * 128
_CAP = [10.0] * 64 + [8.0] * 64 + [5.0] * 128


def _trim() -> None:
    for memo in (_WORD, _STEM, _TRI):
        if len(memo) > _MEMO_MAX:
            memo.clear()


def _buckets(text: str):
    """The bucket hits of §7.5 steps 1-6 as an iterable of indexes, or None for blank text.

    ``characters`` are code points of the lowercased, NFC-normalised text (Swift uses grapheme
    clusters; see the module docstring).
    """
    clean = text.strip(SAM_WHITESPACE)
    if not clean:
        return None
    low = _fold(clean)
    unique = set(_sam_split(low))
    word_hits = map(_WORD.__getitem__, unique)
    stem_hits = [_STEM[w[:4]] for w in unique if len(w) >= 4]
    n = len(low) - 2
    if n > 0:
        tri_hits = map(_TRI.__getitem__, map(low.__getitem__, _TRI_SLICES[: min(n, 100)]))
    else:
        tri_hits = ()
    return chain(word_hits, stem_hits, tri_hits)


def embed(text: str) -> list[float] | None:
    """The §7.5 fallback embedding of ``text``: 256 floats, L2-normalised; None for blank text.

    Structure exactly as SAM's (weights, caps, regions, first 100 trigram positions, repeated
    trigrams adding repeatedly); the hash is ``STABLE_HASH``, bucket = ``abs(signed hash) % m``.
    """
    _trim()
    hits = _buckets(text)
    if hits is None:
        return None
    counts = Counter(hits)
    vals = {i: min(c * _WEIGHT[i], _CAP[i]) for i, c in counts.items()}
    v = [0.0] * EMBED_DIM
    norm = math.sqrt(sum([x * x for x in vals.values()]))  # exact: small multiples of 0.25
    if norm > 0.0:
        for i, x in vals.items():
            v[i] = x / norm
    return v


def embed_many(texts, chunk: int = 4096):
    """Embed many texts at once: a float32 ``numpy.ndarray`` of shape ``(len(texts), 256)``.

    Row ``i`` equals ``numpy.float32(embed(texts[i]))`` bit for bit; a blank text (``embed`` ->
    None) gives an all-zero row (whose cosine with anything is 0, as SAM's empty blob).  The hash
    lookups are Python; counting, capping and normalising are vectorised per chunk of ``chunk``
    texts, which also bounds the temporary memory.
    """
    import numpy as np

    texts = list(texts)
    n = len(texts)
    out = np.zeros((n, EMBED_DIM), dtype=np.float32)
    weight = np.array(_WEIGHT)
    cap = np.array(_CAP)
    for start in range(0, n, chunk):
        part = texts[start : start + chunk]
        m = len(part)
        flat: list[int] = []
        extend = flat.extend
        for row, text in enumerate(part):
            _trim()
            hits = _buckets(text)
            if hits is None:
                continue
            base = row * EMBED_DIM
            extend([base + i for i in hits])
        counts = np.bincount(np.array(flat, dtype=np.int64), minlength=m * EMBED_DIM)
        vec = np.minimum(counts.reshape(m, EMBED_DIM) * weight, cap)
        norm = np.sqrt(np.einsum("ij,ij->i", vec, vec))  # exact sums, so order does not matter
        nz = norm > 0.0
        vec[nz] /= norm[nz, None]
        out[start : start + m] = vec
    return out
