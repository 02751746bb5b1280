"""SAM's scoring rules: every test vector of sam.md §4.5.4, §7.5, §7.7 and §15.3."""

from __future__ import annotations

import math
import struct
import subprocess
import sys
import unicodedata
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from samctl.importance import importance
from samctl.search import sam_scoring
from samctl.search.sam_scoring import (
    SAM_WHITESPACE,
    STABLE_HASH,
    cosine,
    embed,
    embed_many,
    fnv1a64,
    keyword_boost,
    pack_vector,
    score_memory,
    tokens,
    unpack_vector,
)

REPO = Path(__file__).resolve().parents[2]
MEM1 = "User wants a weekend trip to Portland within a $500 budget."
MEM2 = "Weather: Saturday 24°C sunny, Sunday 19°C light rain in Portland."


def vec(n, **nz):
    v = [0.0] * n
    for k, x in nz.items():
        v[int(k[1:])] = x
    return v


# --- sam.md §4.5.4 importance --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "is_user, text, expected",
    [
        (True, "Plan a weekend trip to Portland within a $500 budget.", 0.9),
        (True, "thanks!", 0.3),
        (True, "thanks :)", 0.7),
        (False, "ok", 0.3),
        (False, "Okay.", 0.3),
        (False, "Here is the show schedule", 0.85),
        (True, "Yes, go ahead", 0.85),
        (True, "x" * 301, 0.7999999999999999),
        (False, "", 0.5),
        (True, "", 0.7),
    ],
)
def test_importance_spec_vectors(is_user, text, expected):
    assert importance(text, is_user) == expected  # exact, including the float of 0.7 + 0.1


@pytest.mark.parametrize(
    "is_user, text, expected",
    [
        (False, "Is it?", 0.85),  # "?" only counts for non-user messages
        (True, "Is it?", 0.7),
        (False, "WHICH one", 0.85),  # substring tests run on the lowercased text
        (True, "Focus on the museum", 0.85),
        (True, "PRIORITY: food", 0.85),
        (True, "thank you.", 0.3),
        (True, "thank you!!", 0.7),  # exactly one "!" or "."
        (True, " ok", 0.7),  # not trimmed
        (True, "great", 0.3),
        (True, "must " + "x" * 296, 1.0),  # 0.9 + 0.1 for > 300 characters
        (True, "x" * 300, 0.7),
        (False, "x" * 301, 0.5),  # the long-message bonus is for user messages only
    ],
)
def test_importance_rules(is_user, text, expected):
    assert importance(text, is_user) == expected


def test_importance_confirmation_length_boundary():
    assert importance("yes " + "y" * 195, True) == 0.85  # 199 characters
    assert importance("yes " + "y" * 196, True) == 0.7  # 200 characters: not < 200


@given(st.text(), st.booleans())
def test_importance_in_unit_interval(text, is_user):
    assert 0.0 <= importance(text, is_user) <= 1.0


# --- tokens and keyword boost (sam.md §7.7) --------------------------------------------------------------


def test_tokens_of_memory_1():
    assert tokens(MEM1) == {"user", "wants", "weekend", "trip", "portland", "within", "$500", "budget."}


def test_tokens_keep_punctuation_and_drop_short():
    assert tokens("Weather: a to the Portland.") == {"weather:", "the", "portland."}


def test_tokens_split_on_sam_whitespace_only():
    # U+001C..U+001F are whitespace to Python's str.split() but not to Foundation.
    assert tokens("abc\x1cdef ghi") == {"abc\x1cdef", "ghi"}
    assert tokens("abc\x1fdef\u3000ghi\u00a0jkl\u2028mno\x85pqr") == {"abc\x1fdef", "ghi", "jkl", "mno", "pqr"}


def test_python_whitespace_is_sam_whitespace_plus_four_separators():
    # the fast path of sam_scoring._sam_split relies on this exact relation
    py = {chr(c) for c in range(sys.maxunicode + 1) if chr(c).isspace()}
    assert py - set(SAM_WHITESPACE) == {"\x1c", "\x1d", "\x1e", "\x1f"}
    assert set(SAM_WHITESPACE) <= py


@given(st.text(alphabet=st.sampled_from(list("ab \t\x1c\x1d\x1e\x1f\u3000\u2028\x85\u00a0\u200b"))))
def test_sam_split_matches_definition(s):
    expected = []
    cur = ""
    for ch in s:
        if ch in SAM_WHITESPACE:
            if cur:
                expected.append(cur)
            cur = ""
        else:
            cur += ch
    if cur:
        expected.append(cur)
    assert sam_scoring._sam_split(s) == expected


def test_tokens_canonical_equivalence():
    assert tokens("caf\u00e9s") == tokens("cafe\u0301s")


@pytest.mark.parametrize(
    "query, b1, b2",
    [
        ("portland budget", 0.055556, 0.0),
        ("Portland weather Sunday", 0.05, 0.045455),
        ("rain", 0.0, 0.055556),
    ],
)
def test_keyword_boost_spec_vectors(query, b1, b2):
    q = tokens(query)
    assert round(keyword_boost(q, tokens(MEM1)), 6) == b1
    assert round(keyword_boost(q, tokens(MEM2)), 6) == b2


def test_keyword_boost_edges():
    assert keyword_boost(set(), set()) == 0.0
    assert keyword_boost({"abc"}, {"abc"}) == 0.5
    assert keyword_boost({"abc"}, set()) == 0.0
    assert keyword_boost(tokens("portland budget"), tokens(MEM1)) == 0.5 * (1 / 9)


# --- cosine, pack/unpack, sam.md §7.7 full example -------------------------------------------------------


def test_cosine_rules():
    assert cosine([], []) == 0.0
    assert cosine(None, [1.0]) == 0.0
    assert cosine([1.0, 0.0], [1.0]) == 0.0
    assert cosine([0.0, 0.0], [1.0, 0.0]) == 0.0
    assert cosine([1.0, 0.0], [-2.0, 0.0]) == -1.0  # not clamped, can be negative
    assert cosine([3.0, 4.0], [3.0, 4.0]) == pytest.approx(1.0)


def test_cosine_of_spec_vectors():
    m1 = vec(512, i3=0.6, i200=0.8)
    m2 = vec(512, i3=0.8, i401=0.6)
    assert round(cosine(m1, m2), 6) == 0.48


def test_spec_retrieval_example():
    q = vec(512, i3=1.0)
    qt = tokens("portland budget")
    s1 = score_memory(q, qt, vec(512, i3=0.6, i200=0.8), MEM1)
    s2 = score_memory(q, qt, vec(512, i3=0.8, i401=0.6), MEM2)
    assert round(s1, 6) == 0.655556
    assert round(s2, 6) == 0.8
    assert s2 > s1  # order: memory 2, memory 1


def test_score_memory_keyword_only():
    assert score_memory(None, tokens("rain"), None, MEM2) == keyword_boost(tokens("rain"), tokens(MEM2))


@pytest.mark.parametrize(
    "x, hexbytes",
    [
        (0.6, "33 33 33 33 33 33 E3 3F"),
        (0.8, "9A 99 99 99 99 99 E9 3F"),
        (1.0, "00 00 00 00 00 00 F0 3F"),
        (0.125, "00 00 00 00 00 00 C0 3F"),
        (-0.5, "00 00 00 00 00 00 E0 BF"),
    ],
)
def test_pack_worked_bytes(x, hexbytes):
    assert pack_vector([x]) == bytes.fromhex(hexbytes)
    assert unpack_vector(bytes.fromhex(hexbytes)) == [x]


def test_pack_spec_blobs():
    m1 = pack_vector(vec(512, i3=0.6, i200=0.8))
    assert len(m1) == 4096
    assert m1 == bytes.fromhex("0" * 16 * 3 + "333333333333E33F" + "0" * 16 * 196 + "9A9999999999E93F" + "0" * 16 * 311)
    m2 = pack_vector(vec(512, i3=0.8, i401=0.6))
    assert m2 == bytes.fromhex("0" * 16 * 3 + "9A9999999999E93F" + "0" * 16 * 397 + "333333333333E33F" + "0" * 16 * 110)
    assert pack_vector([]) == b""
    assert unpack_vector(b"") == []


def test_unpack_rejects_partial_double():
    with pytest.raises(ValueError):
        unpack_vector(b"\0" * 7)


@given(st.lists(st.floats(allow_nan=False), max_size=64))
def test_pack_round_trip(xs):
    assert unpack_vector(pack_vector(xs)) == xs


# --- the stable hash ------------------------------------------------------------------------------


def test_fnv1a64_reference_values():
    # published FNV-1a 64 test vectors
    assert fnv1a64(b"") == 0xCBF29CE484222325
    assert fnv1a64(b"a") == 0xAF63DC4C8601EC8C
    assert fnv1a64(b"foobar") == 0x85944171F73967E8


def test_stable_hash_is_signed_nfc_fnv():
    assert STABLE_HASH("a") == 0xAF63DC4C8601EC8C - (1 << 64)  # top bit set: negative like Swift's Int
    assert STABLE_HASH("foobar") == 0x85944171F73967E8 - (1 << 64)
    assert STABLE_HASH("caf\u00e9") == STABLE_HASH("cafe\u0301")
    assert STABLE_HASH("\ud800") == STABLE_HASH("\ud800")  # lone surrogates do not raise
    assert sam_scoring.STABLE_HASH_NAME == "fnv1a64-nfc-utf8"


def test_stable_hash_is_stable_across_processes():
    code = "from samctl.search.sam_scoring import STABLE_HASH; print(STABLE_HASH('portland'), STABLE_HASH('wëather'))"
    outs = {
        subprocess.run(
            [sys.executable, "-c", code],
            capture_output=True,
            text=True,
            check=True,
            cwd=REPO,
            env={"PYTHONHASHSEED": seed, "PATH": ""},
        ).stdout
        for seed in ("1", "2")
    }
    assert len(outs) == 1
    assert outs.pop().split() == [str(STABLE_HASH("portland")), str(STABLE_HASH("wëather"))]


def test_bucket_of_int_min_is_zero():
    # Swift's abs(Int.min) traps; ours maps the magnitude 2**63 to bucket 0 and never raises
    assert abs(-(1 << 63)) % 64 == 0 and abs(-(1 << 63)) % 128 == 0


# --- sam.md §7.5 embedding -------------------------------------------------------------------------------


def reference_embed(text):
    """A literal, slow transcription of sam.md §7.5 (steps 1-7) with STABLE_HASH."""
    clean = text.strip(SAM_WHITESPACE)
    if not clean:
        return None
    low = unicodedata.normalize("NFC", clean.lower())
    words = [w for w in sam_scoring._sam_split(low) if w]
    unique = set(words)
    v = [0.0] * 256
    for w in unique:
        i = abs(STABLE_HASH(w)) % 64
        v[i] = min(v[i] + 2.0, 10.0)
    for w in unique:
        if len(w) >= 4:
            i = 64 + abs(STABLE_HASH(w[:4])) % 64
            v[i] = min(v[i] + 1.5, 8.0)
    chars = list(low)
    if len(chars) >= 3:
        for k in range(min(len(chars) - 2, 100)):
            i = 128 + abs(STABLE_HASH("".join(chars[k : k + 3]))) % 128
            v[i] = min(v[i] + 0.5, 5.0)
    norm = math.sqrt(sum(x * x for x in v))
    if norm > 0:
        v = [x / norm for x in v]
    return v


@pytest.mark.parametrize(
    "text",
    [
        "hello",
        "ab",
        "a",
        "abc",
        MEM1,
        MEM2,
        "  Portland\tportland\nPORTLAND  ",
        "the the the the the the the the the the the the",  # a word bucket at its cap
        "aaaa " * 60,  # a trigram repeated past its cap
        " ".join(f"w{i:03d}" for i in range(400)),  # many words, more than 100 trigram positions
        "café crème brûlée naïve — 東京 🎉",
        "abc\x1cdef",
        "x" * 1000,
    ],
)
def test_embed_matches_literal_spec(text):
    assert embed(text) == reference_embed(text)


def test_embed_structure():
    v = embed("hello")
    nz = {i for i, x in enumerate(v) if x}
    # one word (region 0..63), one stem (64..127), three trigrams (128..255)
    assert len([i for i in nz if i < 64]) == 1
    assert len([i for i in nz if 64 <= i < 128]) == 1
    assert 1 <= len([i for i in nz if i >= 128]) <= 3
    assert math.isclose(math.sqrt(sum(x * x for x in v)), 1.0)
    assert embed("ab") == reference_embed("ab")  # too short for a trigram
    assert len(embed("ab")) == 256


@pytest.mark.parametrize("blank", ["", " ", "\n\t", "\u3000\u00a0\u2028"])
def test_embed_blank_is_none(blank):
    assert embed(blank) is None


def test_embed_is_deterministic_and_case_insensitive():
    assert embed("Portland Weather") == embed("portland weather")
    assert embed("portland weather") == embed("portland weather")
    assert embed("caf\u00e9") == embed("cafe\u0301")
    assert embed("portland weather") != embed("portland budget")


def test_embed_ranks_similar_text_higher():
    q = embed("weekend trip to portland")
    assert cosine(q, embed(MEM1)) > cosine(q, embed("quarterly tax filing deadline"))


def test_embed_after_memo_trim_is_unchanged(monkeypatch):
    before = embed(MEM2)
    monkeypatch.setattr(sam_scoring, "_MEMO_MAX", 0)
    assert embed(MEM2) == before  # memos cleared on every call
    assert embed(MEM2) == before


@settings(max_examples=300)
@given(st.text())
def test_embed_never_raises_and_is_unit_or_none(text):
    v = embed(text)
    if v is None:
        assert not text.strip(SAM_WHITESPACE)
    else:
        assert len(v) == 256
        assert all(math.isfinite(x) and x >= 0.0 for x in v)
        assert math.isclose(math.sqrt(sum(x * x for x in v)), 1.0, rel_tol=1e-12)


@settings(max_examples=200)
@given(st.text(max_size=300))
def test_embed_matches_reference_on_any_text(text):
    assert embed(text) == reference_embed(text)


@given(st.text(st.characters(codec="utf-8"), max_size=200))
def test_embed_with_surrogates_never_raises(text):
    embed(text + "\udcff abc")


# --- embed_many -----------------------------------------------------------------------------------

MANY = [
    MEM1,
    MEM2,
    "",
    "   ",
    "ab",
    "abc",
    "x" * 500,
    "café crème brûlée",  # non-ASCII: the Python trigram path
    "ascii head " * 3 + "then ünïcode later",  # ASCII in the first 102 characters only
    "abc\x1cdef ghi",
    "🎉🎉🎉 party",
] + [f"memory number {i} about portland and budgets {i * 7}" for i in range(50)]


def test_embed_many_equals_embed_exactly():
    m = embed_many(MANY)
    assert m.dtype == np.float32 and m.shape == (len(MANY), 256)
    for text, row in zip(MANY, m):
        v = embed(text)
        if v is None:
            assert not row.any()
        else:
            assert np.array_equal(row, np.array(v, dtype=np.float32))


def test_embed_many_chunking_and_empty():
    assert embed_many([]).shape == (0, 256)
    assert np.array_equal(embed_many(MANY, chunk=3), embed_many(MANY))
    assert np.array_equal(embed_many(iter(MANY)), embed_many(MANY))


def test_ascii_trigram_vectorised_hash_matches_memo():
    text = "".join(chr(c) for c in range(128)) * 2
    buf = np.frombuffer(text.encode("ascii"), dtype=np.uint8)
    idx = np.arange(len(text) - 2, dtype=np.int64)
    got = sam_scoring._ascii_trigram_buckets(np, buf, idx)
    want = [128 + abs(STABLE_HASH(text[k : k + 3])) % 128 for k in range(len(text) - 2)]
    assert got.tolist() == want


@settings(max_examples=50, deadline=None)
@given(st.lists(st.text(max_size=150), max_size=8))
def test_embed_many_equals_embed_on_any_texts(texts):
    m = embed_many(texts, chunk=3)
    for text, row in zip(texts, m):
        v = embed(text)
        assert np.array_equal(row, np.zeros(256, np.float32) if v is None else np.array(v, dtype=np.float32))


def test_scoring_import_does_not_import_numpy():
    code = "import sys, samctl.search.sam_scoring as s; s.embed('abc def'); print('numpy' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=REPO).stdout
    assert out.strip() == "False"


def test_pack_is_little_endian_float64():
    assert pack_vector([1.0, -0.5]) == struct.pack("<2d", 1.0, -0.5)
