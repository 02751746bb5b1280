"""The search query language (issue #22): every operator, every error and its message, hostile strings."""

from __future__ import annotations

import random

import pytest

from samctl import errors
from samctl.search.query import HELP, MAX_TERMS, Query, QueryError, holds_phrase, parse, phrase_terms, title_matches
from samctl.search.text import query_terms, tokens
from samctl.stores import STORES

KINDS = tuple(STORES)


def p(text: str) -> Query:
    return parse(text, stores=KINDS)


def err(text: str) -> str:
    with pytest.raises(QueryError) as e:
        p(text)
    assert e.value.exit_code == errors.USAGE
    return e.value.message


# ------------------------------------------------------------------------------------------ operators


def test_plain_words_are_ranked_as_typed():
    q = p("Portland  budget")
    assert q.words == ("Portland", "budget")
    assert q.ranked_text == "Portland budget"
    assert not q.is_empty()
    assert query_terms(q.ranked_text) == query_terms("portland budget")


def test_required_and_excluded_words():
    q = p("budget +Portland -draft")
    assert (q.words, q.required, q.excluded) == (("budget",), ("Portland",), ("draft",))
    assert q.ranked_text == "budget Portland"  # the excluded word is not ranked


@pytest.mark.parametrize("word", ["spotter-dov", "load-config", "v1.2", "don't", "e-mail", "x-", "caroline's"])
def test_a_hyphen_dot_or_apostrophe_inside_a_word_is_part_of_it(word):
    q = p(f"find {word}")
    assert q.words == ("find", word) and q.excluded == ()


def test_only_a_leading_minus_excludes():
    q = p("load-config -spotter-dov")
    assert q.words == ("load-config",)
    assert q.excluded == ("spotter-dov",)
    # after a closing quote, no whitespace: part of the text, not an operator
    assert p('"a b"-c').words == ("-c",)


def test_phrases_are_required_and_ranked():
    q = p('budget "weekend trip" +"road map" -"old plan"')
    assert q.phrases == ("weekend trip", "road map")
    assert q.excluded_phrases == ("old plan",)
    assert q.ranked_text == "budget weekend trip road map"


def test_a_phrase_ends_at_its_closing_quote():
    q = p('x "a b"c')
    assert q.phrases == ("a b",) and q.words == ("x", "c")
    q = p('say"hello world"')
    assert q.words == ("say",) and q.phrases == ("hello world",)


def test_prefixes_are_folded():
    q = p("Budg* +Zür* -draf* load-conf*")
    assert q.prefixes == ("budg", "load-conf")
    assert q.required_prefixes == ("zur",)
    assert q.excluded_prefixes == ("draf",)
    assert q.ranked_text == ""  # prefixes are expanded by the engine, not tokenised
    assert not q.is_empty()


def test_a_star_inside_or_before_a_word_is_text():
    assert p("5*3 *bold").words == ("5*3", "*bold")


def test_prefix_in_a_script_without_spaces_is_the_word():
    # CJK/Thai are indexed as characters and pairs, which already match inside longer words
    assert p("東京*").words == ("東京",)
    assert p("ภาษา*").words == ("ภาษา",)


def test_cjk_and_thai_words():
    q = p("東京タワー ภาษาไทย 서울")
    assert q.words == ("東京タワー", "ภาษาไทย", "서울")
    assert "東京" in tokens(q.ranked_text)
    assert p('"東京タワー"').phrases == ("東京タワー",)


def test_filters():
    q = p('role:user Role:TOOL in:memories title:trip title:"weekend  trip" store:SAM store:claude_code budget')
    assert q.roles == frozenset({"user", "tool"})
    assert q.where == "memories"
    assert q.titles == ("trip", "weekend  trip")
    assert q.stores == frozenset({"sam", "claude-code"})
    assert q.words == ("budget",)
    assert p("in:all x").where == "all"
    assert p("in:messages in:messages x").where == "messages"  # the same twice is no conflict
    assert p('role:"assistant" x').roles == frozenset({"assistant"})


def test_every_store_kind_is_a_store_filter_value():
    for kind in KINDS:
        assert p(f"x store:{kind}").stores == frozenset({kind})


def test_store_names_are_not_checked_when_not_given():
    assert parse("x store:Whatever").stores == frozenset({"whatever"})


def test_filters_alone_are_an_empty_query():
    q = p("role:user in:messages")
    assert q.is_empty() and q.roles == frozenset({"user"})
    assert p("").is_empty() and p("   \t\n").is_empty()
    assert p("!!! ?").is_empty()  # punctuation: nothing to search for, as a text's tokens drop it


@pytest.mark.parametrize(
    "text", ["http://example.com/x", "C:\\path\\file", "12:30", "foo:bar", "note:", "https://a.b:8080"]
)
def test_an_unknown_filter_name_is_a_plain_word(text):
    assert p(text).words == (text,)


def test_title_star_is_containment():
    assert p("title:budg* x").titles == ("budg",)


# ------------------------------------------------------------------- questions as people type them


@pytest.mark.parametrize(
    "text,words,phrases,prefixes",
    [
        ('budget "weekend', ("budget", "weekend"), (), ()),  # an unbalanced quote is punctuation
        ('"a" "b" "c', ("c",), ("a", "b"), ()),
        (
            'What did Calvin get that is a "masterpiece on wheels?',
            ("What", "did", "Calvin", "get", "that", "is", "a", "masterpiece", "on", "wheels?"),
            (),
            (),
        ),
        ("budget - draft", ("budget", "draft"), (), ()),  # a dash between words
        ("budget -- draft", ("budget", "draft"), (), ()),
        ("budget +", ("budget",), (), ()),
        ("--verbose x", ("verbose", "x"), (), ()),  # a run of signs is punctuation
        ("x +-y", ("x", "y"), (), ()),
        ('x "" "  " "!!!"', ("x",), (), ()),  # quotes holding nothing to search for
        ("x -!!! +?", ("x",), (), ()),
        ("x * -* **", ("x",), (), ()),  # a * that cannot end a prefix
        ("budget** x", ("x",), (), ("budget",)),
        ("a* x", ("a", "x"), (), ()),
        ("foo/bar* x", ("foo/bar", "x"), (), ()),
        ("Is it warm - or cold?", ("Is", "it", "warm", "or", "cold?"), (), ()),
    ],
)
def test_stray_operators_are_read_as_words(text, words, phrases, prefixes):
    q = p(text)
    assert (q.words, q.phrases, q.prefixes) == (words, phrases, prefixes)
    assert q.excluded == q.required == q.excluded_phrases == ()


def test_a_lone_dash_alone_is_an_empty_query():
    assert p("-").is_empty() and p(" + - ").is_empty()


# ------------------------------------------------------------------------------------------ errors


@pytest.mark.parametrize(
    "text,message",
    [
        ("role:bot", "'role:bot' at character 1: use role:user, role:assistant or role:tool"),
        ("x role:", "'role:' at character 3: use role:user, role:assistant or role:tool"),
        ("in:attic", "'in:attic' at character 1: use in:memories, in:messages, in:args or in:all"),
        ("in:memories in:messages", "in:memories (character 1) and in:messages (character 13): choose one"),
        (
            "store:slack",
            "'store:slack' at character 1: samctl reads " + ", ".join(sorted(KINDS)[:-1]) + " or " + sorted(KINDS)[-1],
        ),
        ("store:", "'store:' at character 1: store: needs a store's name"),
        ("title:", "'title:' at character 1: title: needs a word"),
        ('title:""', "'title:\"\"' at character 1: title: needs a word"),
        ("-role:user x", "'-role:user' at character 1: a filter cannot be required or excluded (leave out the -)"),
        ("+title:x", "'+title:x' at character 1: a filter cannot be required or excluded (leave out the +)"),
        ("-budget", "the query only excludes (-word); add a word to search for"),
        ('-"old plan" -draft* role:user', "the query only excludes (-word); add a word to search for"),
    ],
)
def test_errors_say_what_and_where(text, message):
    assert err(text).startswith(message)


def test_a_query_error_is_a_usage_error():
    assert issubclass(QueryError, errors.UsageError)


def test_the_number_of_terms_is_capped():
    assert len(p(" ".join(["w"] * MAX_TERMS)).words) == MAX_TERMS
    for text in (
        " ".join(["w"] * (MAX_TERMS + 1)),
        '"' + "w " * (MAX_TERMS + 1) + '"',
        "a-" * (MAX_TERMS + 1),
        "東" * MAX_TERMS + "東",
        "x " + "role:user " * MAX_TERMS,
    ):
        assert err(text).startswith(f"the query has more than {MAX_TERMS} terms")


def test_a_long_term_in_a_message_is_cut():
    msg = err("role:" + "b" * 100_000)
    assert len(msg) < 200 and "100005 characters" in msg


# ------------------------------------------------------------------------------------------ helpers


def test_phrase_terms_are_the_index_terms_in_order():
    assert phrase_terms("Weekend trips") == tokens("Weekend trips") == ["weekend", "trip"]


@pytest.mark.parametrize(
    "text,phrase,held",
    [
        ("Please Load-Config now", "load config", True),
        ("load config", "Load-Config", True),
        ("Hello, world!", "hello world", True),
        ("Zürich is cold", "zurich IS", True),
        ("don’t go", "don't go", True),
        ("a b c", "a c", False),
        ("weekend trips", "weekend trip", False),  # a phrase is exact: not stemmed
        ("東京タワーに行く", "東京タワー", True),
        ("東京に行くタワー", "東京タワー", False),
        ("x", "!!!", False),
        ("", "a", False),
    ],
)
def test_holds_phrase(text, phrase, held):
    assert holds_phrase(text, phrase) is held


@pytest.mark.parametrize(
    "title,word,held",
    [
        ("Weekend trip to Zürich", "zurich", True),
        ("Weekend  trip", "weekend trip", True),
        ("Weekend trip", "WEEKEND", True),
        ("Weekend trip", "budget", False),
        (None, "x", False),
        ("", "x", False),
    ],
)
def test_title_matches(title, word, held):
    assert title_matches(title, word) is held


def test_help_names_every_operator():
    for token in ("+budget", "-draft", '"weekend trip"', "budg*", "role:user", "in:memories", "title:", "store:"):
        assert token in HELP


# ------------------------------------------------------------------------------------------ hostile strings


def _hostile(rng: random.Random) -> str:
    pools = [
        '"+-*: \t\n\x00',
        "\ud800\udfff\udc00",
        "\u202e\u2066\u200f\u05d0\u05d1\u0627",
        "😀👍🏽\u200d🧑‍💻",
        "e\u0301\u0308\u20dd",
        "東京タワーภาษาไทย서울",
        "abcXYZ019-.'",
        "role:in:title:store:user",
    ]
    n = rng.choice((1, 2, 5, 20, 200))
    return "".join(
        rng.choice(rng.choice(pools)) if rng.random() < 0.9 else chr(rng.randrange(0x110000)) for _ in range(n)
    )


def test_hostile_strings_parse_or_raise_a_query_error():
    rng = random.Random(22)
    samples = [_hostile(rng) for _ in range(3000)]
    samples += [
        "a" * (1 << 20),
        "東" * (1 << 20),
        '"' * (1 << 20),
        '"' + "x" * (1 << 20),
        " " * (1 << 20),
        "\x00" * (1 << 20),
        "-" * (1 << 20),
        "*" * (1 << 20),
        "role:" * (1 << 18),
        "".join(chr(rng.randrange(0x110000)) for _ in range(1 << 20)),
    ]
    for text in samples:
        try:
            q = p(text)
        except QueryError as e:
            assert e.message and "\n" not in e.message and len(e.message) < 400
            continue
        assert isinstance(q, Query)
        query_terms(q.ranked_text)  # what the engine does next must not fail either
        for ph in q.phrases + q.excluded_phrases:
            phrase_terms(ph)
            holds_phrase(text, ph)
        for t in q.titles:
            title_matches(text, t)


TITLES = [
    "Budget for Portland",
    "  budget   FOR\tportland ",
    "Zürich café",
    "STRASSE",
    "Straße plan",
    "",
    None,
    "a\x00budget",
    "line one\nline two",
    "e\u0301cole",
    "école",
    "x\x1cy",
    "tab\there",
    "東京 trip",
    "İstanbul",
    "  東京\u3000 trip  ",
    "24°c\t\tbudget ",
    "°",
    " budget\xa0plan ",
]


@pytest.mark.parametrize(
    "word",
    [
        "budget",
        "budget for",
        "for portland",
        "zurich",
        "café",
        "cafe",
        "strasse",
        "ss",
        "",
        "one line",
        "line two",
        "ecole",
        "école",
        "x y",
        "tab here",
        "東京",
        "istanbul",
        "i̇stanbul",
        "a",
        "budget\x00",
        " ",
        "c budget",
        "東京 trip",
        "budget plan",
        "trip budget",
    ],
)
def test_titles_matching_agrees_with_title_matches(word):
    """The folded-at-once search finds exactly the titles title_matches finds, one by one."""
    from samctl.search.query import title_matches, titles_matching

    assert titles_matching(TITLES, [word]) == {i for i, t in enumerate(TITLES) if title_matches(t, word)}
    both = titles_matching(TITLES, [word, "for"])
    assert both == {i for i, t in enumerate(TITLES) if title_matches(t, word) and title_matches(t, "for")}


PHRASE_TEXTS = [
    "We set the budget deadline for Friday",
    "budget, deadline",
    "the budget's deadline",
    "Budget-Deadline!",
    "budget_deadline",
    "budgetdeadline",
    "budget\n\n--  deadline",
    "a load-config file",
    "Load.Config",
    "東京タワー trip",
    "abc東京",
    "ab-東京",
    "Straße plan",
    "STRASSE PLAN",
    "İstanbul trip",
    "e\u0301cole trip",
    "don't stop",
    "don\u2019t stop",
    "v1.2 release",
    "x budget",
    "",
    "-",
    "budget deadline deadline",
]
PHRASES = [
    "budget deadline",
    "load config",
    "load-config",
    "東京",
    "京タ",
    "abc東",
    "ab 東京",
    "strasse plan",
    "straße plan",
    "istanbul trip",
    "ecole trip",
    "don't stop",
    "v1 2",
    "v1.2 release",
    "budget",
    "--",
    "deadline deadline",
    "b d",
]


@pytest.mark.parametrize("phrase", PHRASES)
def test_phrase_test_agrees_with_holds_phrase(phrase):
    """The regular-expression shortcut never changes the answer, only how fast a text without the phrase fails."""
    from samctl.search.query import holds_phrase, phrase_test

    holds = phrase_test(phrase)
    got = [holds(t) for t in PHRASE_TEXTS]
    assert got == [holds_phrase(t, phrase) for t in PHRASE_TEXTS]
    assert sum(got) >= {"budget deadline": 4, "load config": 2}.get(phrase, 0)  # (the texts do hold some)


@pytest.mark.parametrize("phrase", PHRASES)
def test_a_phrase_tested_on_many_texts_at_once_answers_as_one_by_one(phrase):
    """``many`` folds the texts joined and scans them once: the same answers as each text alone, in any
    order, whatever the texts end or start with (a match that would cross from one text into the next,
    a text holding the separator itself, accents, scripts without spaces)."""
    import random

    from samctl.search.query import PhraseTest, holds_phrase, phrase_test

    test = phrase_test(phrase)
    texts = list(PHRASE_TEXTS) + [
        "budget",
        "deadline budget",
        "... deadline",
        "plan " + PhraseTest.SEP + " strasse",
        "strasse",
        "",
        "é",
        "\u0301deadline",
    ]
    rnd = random.Random(phrase)
    for _ in range(20):
        rnd.shuffle(texts)
        got = test.many(texts)
        assert got == [holds_phrase(t, phrase) for t in texts]
    assert test.many([]) == []


def test_a_match_crossing_into_the_next_text_does_not_hide_its_own():
    """Scanning "deadline" + separator + "deadline deadline" finds one match across the two; the second
    text's own match overlaps it and is still found."""
    from samctl.search.query import phrase_test

    assert phrase_test("deadline deadline").many(["deadline", "deadline deadline"]) == [False, True]
    assert phrase_test("budget deadline").many(["budget", "deadline. budget, deadline"]) == [False, True]
