"""The search tokenizer: Porter stems, accents, stop words, hyphens, CJK/Thai n-grams, hostile text."""

from __future__ import annotations

import re
import sqlite3

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from samctl.search.index import rows
from samctl.search.text import (
    ascii_folds,
    date_terms,
    fold,
    fold_whole,
    folded_words,
    kept_alone,
    query_dates,
    query_terms,
    stem,
    tokens,
    words,
)

# Porter (1980) and his reference vocabulary: word -> stem
PORTER = """caresses caress ponies poni ties ti caress caress cats cat feed feed agreed agre plastered plaster
bled bled motoring motor sing sing conflated conflat troubled troubl sized size hopping hop tanned tan falling fall
hissing hiss fizzed fizz failing fail filing file happy happi sky sky relational relat conditional condit
rational ration valenci valenc hesitanci hesit digitizer digit conformabli conform radicalli radic differentli
differ vileli vile analogousli analog vietnamization vietnam predication predic operator oper feudalism feudal
decisiveness decis hopefulness hope callousness callous formaliti formal sensitiviti sensit sensibiliti sensibl
triplicate triplic formative form formalize formal electriciti electr electrical electr hopeful hope goodness good
revival reviv allowance allow inference infer airliner airlin gyroscopic gyroscop adjustable adjust defensible
defens irritant irrit replacement replac adjustment adjust dependent depend adoption adopt homologou homolog
communism commun activate activ angulariti angular homologous homolog effective effect bowdlerize bowdler
probate probat rate rate cease ceas controll control roll roll generalizations gener oscillators oscil""".split()


@pytest.mark.parametrize("word,expected", list(zip(PORTER[::2], PORTER[1::2])))
def test_porter_reference_words(word, expected):
    assert stem(word) == expected


def _fts5_porter():
    try:
        con = sqlite3.connect(":memory:")
        con.execute("CREATE VIRTUAL TABLE t USING fts5(x, tokenize='porter ascii')")
        con.execute("CREATE VIRTUAL TABLE v USING fts5vocab(t, 'row')")
        return con
    except sqlite3.OperationalError:
        return None


def test_stems_agree_with_sqlite_fts5_porter():
    """The same stems as FTS5's porter tokenizer, over every word of the README and docs/ (thousands)."""
    con = _fts5_porter()
    if con is None:
        pytest.skip("this SQLite has no FTS5")
    from pathlib import Path

    top = Path(__file__).resolve().parents[2]
    text = " ".join(p.read_text(encoding="utf-8") for p in [top / "README.md", *sorted((top / "docs").glob("*.md"))])
    text = text.lower()
    words = sorted(set(re.findall(r"\b[a-z]+\b", text)))
    assert len(words) > 1000
    wrong = []
    for w in words:
        con.execute("DELETE FROM t")
        con.execute("INSERT INTO t VALUES (?)", (w,))
        got = [r[0] for r in con.execute("SELECT term FROM v")]
        if got != [stem(w)]:
            wrong.append((w, got, stem(w)))
    assert wrong == []


def test_short_and_non_ascii_words_are_not_stemmed():
    assert stem("is") == "is"
    assert stem("naïve") == "naïve"
    assert stem("v2") == "v2"


def test_accents_and_case_fold():
    assert fold("Zürich CAFÉ São Ångström") == "zurich cafe sao angstrom"
    assert tokens("Café in ZÜRICH") == tokens("cafe in zurich")
    assert fold("Straße") == "strasse"


def test_kana_voicing_and_hangul_survive_folding():
    assert fold("がっこう") == "がっこう"  # the voicing mark is not an accent
    assert fold("한국어") == "한국어"  # precomposed Hangul stays precomposed


def test_stop_words_kept_in_text_dropped_from_longer_queries():
    assert "the" in tokens("the budget")
    assert query_terms("What is the budget?") == ["budget"]
    assert query_terms("the of") == ["the", "of"]  # a query of only stop words keeps them
    assert query_terms("to be or not to be") == ["to", "be", "or", "not", "to", "be"]


def test_stemmed_variants_match():
    assert query_terms("camping trips") == ["camp", "trip"]
    assert set(query_terms("camping trips")) <= set(tokens("we camped on a trip"))
    assert set(query_terms("painting")) <= set(tokens("She paints landscapes"))


def test_possessives_and_contractions():
    assert tokens("Caroline's dog") == [stem("caroline"), "dog"]
    assert "don't" in tokens("I don't know")


def test_inner_hyphen_keeps_whole_parts_and_join():
    t = tokens("ask spotter-dov about load-config")
    for term in ("spotter-dov", "spotter", "dov", "load-config", "load", "config", "loadconfig"):
        assert term in t
    assert set(query_terms("spotter-dov")) <= set(t)
    assert set(query_terms("destress")) <= set(tokens("running helps me de-stress"))


def test_cjk_and_thai_as_character_ngrams():
    t = tokens("我住在東京タワーの近く")
    assert "東京" in t and "タワ" in t and "東" in t
    assert set(query_terms("東京")) <= set(t)
    assert set(query_terms("東")) <= set(t)  # one character alone is found too
    assert set(query_terms("한국어")) <= set(tokens("저는 한국어를 공부해요"))
    assert set(query_terms("ภาษาไทย")) <= set(tokens("ฉันเรียนภาษาไทยทุกวัน"))
    assert "tokyo" in tokens("東京 tokyo")  # mixed scripts split where the script changes


@pytest.mark.parametrize(
    "text",
    [
        "",
        "\x00",
        "a\x00b",
        "\ud800",
        "😀🎉 emoji",
        "שלום עולם",
        "مرحبا بالعالم",
        "-",
        "+",
        '"',
        "x" * 100_000,
        "\u200f\u202e reversed",
        "ﷺ",
        "Ⅻ ½",
    ],
)
def test_hostile_text_never_raises(text):
    tokens(text)
    query_terms(text)


def test_date_terms():
    assert date_terms(1688169600) == [stem("july"), "2023", "2023-07-01"]  # 2023-07-01T00:00Z
    assert date_terms(None) == [] and date_terms(float("nan")) == [] and date_terms(1e30) == []
    assert set(query_terms("in July 2023")) <= set(date_terms(1688169600))


def test_query_dates_spelled_out_days():
    assert query_dates("What did Nate cook on 9 November, 2022?") == ["2022-11-09"]
    assert query_dates("between August 11 and August 15 2023") == ["2023-08-15"]
    assert query_dates("the 1st of Feb 2024, or Dec 31st, 1999") == ["2024-02-01", "1999-12-31"]
    assert query_dates("on 45 May 2023, in May 2023, 7 2023") == []
    assert "2022-11-09" in query_terms("on 9 November, 2022")
    assert set(query_dates("9 November, 2022")) <= set(date_terms(1667995200))  # 2022-11-09T12:00Z


def test_apostrophes_inside_names_and_possessives():
    assert tokens("O'Brien's guitar") == ["obrien", "guitar"]
    assert set(query_terms("obrien")) <= set(tokens("O\u2019Brien"))  # typographic apostrophe too


def test_marks_inside_words_do_not_split_them():
    assert tokens("हिन्दी भाषा") == ["हिन्दी", "भाषा"]  # Devanagari vowel signs are marks, not separators
    assert tokens("مَرْحَبًا") == ["مرحبا"]  # Arabic short vowels folded like accents
    assert tokens("שָׁלוֹם") == ["שלום"]  # Hebrew points too


def test_underscored_identifiers_stay_whole():
    assert "load_config" in tokens("call load_config() now")


HOSTILE_TEXTS = [
    "Plan a weekend trip to Portland within a $500 budget.",
    "spotter-dov load-config v1.2 don't it's e.g. U.S.A.",
    "Caroline\u2019s LGBTQ support group",
    "Zürich café naïve ÉCOLE",
    "東京タワーに行きました budget 予算",
    "งบประมาณการเดินทาง",
    "the the THE The",
    "   ",
    "a-b-c a.b.c 'quoted' -dash- _under_score_",
    "x" * 300,
    "مرحبا بالعالم שלום",
    "emoji 🙂 budget🚀trip",
    "NUL\x00byte tab\tnew\nline",
    "İstanbul Straße ﬁle ½ Ｆｕｌｌ",
    "cafe\u0301 x\u0301\u0327y \u0301lead",
    "\ud800 lone surrogate",
    "spotter-dov spotter dov spotterdov",
]


def _expected(texts):
    """Row by row: Counter(tokens(text)), the definition of a row's postings."""
    from collections import Counter

    from samctl.search.index.format import term_key_of

    return [{term_key_of(t): n for t, n in Counter(tokens(x)).items()} for x in texts]


def _postings_by_row(texts):
    keys, rws, tfs, ntok, vocab = rows._postings(texts)
    got = [{} for _ in texts]
    for k, r, n in zip(keys.tolist(), rws.tolist(), tfs.tolist()):
        assert k not in got[r]
        got[r][k] = n
    assert list(keys) == sorted(keys)  # filed by key
    return got, ntok, vocab


@pytest.mark.parametrize("text", HOSTILE_TEXTS)
def test_postings_of_one_text_are_the_counts_of_its_tokens(text):
    got, ntok, vocab = _postings_by_row([text])
    assert got == _expected([text])
    assert ntok.tolist() == [len(tokens(text))]
    assert vocab == set(tokens(text))


def test_postings_of_many_texts_at_once_are_those_of_each_row():
    texts = HOSTILE_TEXTS * 3 + ["budget budget trip", "Trip"]
    got, ntok, vocab = _postings_by_row(texts)
    assert got == _expected(texts)
    assert ntok.tolist() == [len(tokens(t)) for t in texts]
    assert vocab == {t for x in texts for t in tokens(x)}


@pytest.mark.parametrize("piece", [1 << 18, 16])
def test_postings_across_a_flush_and_a_reset_of_the_memo(monkeypatch, piece):
    from samctl.search import sam_scoring

    monkeypatch.setattr(sam_scoring, "PIECE", piece)  # (16: most texts are long ones, counted a piece at a time)
    monkeypatch.setattr(rows, "FLUSH_WORDS", 3)
    monkeypatch.setattr(rows._Terms, "LIMIT", 4)
    texts = HOSTILE_TEXTS + ["one two three four five six seven", "spotter-dov budget"]
    for _ in range(2):  # (the second time, the memo is past its limit and starts again)
        got, ntok, _ = _postings_by_row(texts)
        assert got == _expected(texts)
        assert ntok.tolist() == [len(tokens(t)) for t in texts]


_FOLDABLE = st.sampled_from(
    sorted(ascii_folds())
    + sorted(kept_alone())
    + list("aZ9 -'.\u00e9\u0301\u0327\u00df\u4e00\u0130\u2019\u210b\u0345\u1100\u1161\u11a8\u0b47\u0b3e\u3099\u00a0")
)


@settings(max_examples=500, deadline=None)
@given(st.lists(_FOLDABLE, max_size=40).map("".join))
def test_folding_character_by_character_is_folding_the_whole(text):
    """``fold``'s fast path (each character folded alone) against folding the whole text."""
    assert fold(text) == fold_whole(text)
    found = words(text)
    if any(gram for _, gram in found):  # (a script without spaces, 一 or a Hangul jamo: its terms are n-grams)
        assert folded_words(text) is None
    else:
        assert folded_words(text) == [w for w, _ in found]


@settings(max_examples=500, deadline=None)
@given(st.text(st.characters(max_codepoint=0x7F), max_size=60) | st.text("aZ9_ -'.\t", max_size=60))
def test_ascii_words_are_found_as_the_unicode_pattern_finds_them(text):
    """``folded_words`` reads an ASCII text with a pattern of its own: the words are ``words``'s."""
    assert folded_words(text) == [w for w, _ in words(text)]


def test_every_character_folded_alone_to_ascii_is_its_fold():
    assert len(ascii_folds()) > 900
    for ch, f in ascii_folds().items():
        assert f.isascii() and f == fold_whole(ch) == f.lower()
    assert "\u210b" not in ascii_folds() and fold("\u210b") == fold_whole("\u210b") == "H"  # (ℋ: NFKD gives a capital)


def test_characters_kept_alone_are_kept_beside_any_neighbour():
    """Each of ``kept_alone`` stays as it is, and leaves its neighbours as they are, when the whole text is
    folded: after and before a letter, an accent, a Hangul jamo, an Indic vowel sign, another of them."""
    kept = kept_alone()
    assert len(kept) > 4000 and {"°", "€", "—", "→", "😀", "\u200d", "\ufe0f"} <= kept
    around = ["a", "E", "\u00e9", "\u0301", "\u1100", "\u1161", "\u0b47", "\u0b3e", "\u3099", "°", "1", " "]
    for ch in sorted(kept):
        assert fold_whole(ch) == ch and not words(ch)
        for n in around:
            for text in (n + ch, ch + n, n + ch + n):
                assert fold_whole(text) == fold_whole(text.replace(ch, "|")).replace("|", ch), (ch, n)
