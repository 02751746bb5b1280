"""BM25 ranking over small hand-made conversations whose right order is obvious."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest

from samctl.search import bm25
from samctl.search.bm25 import BASELINE, Corpus, Message, Params, search, top_k

JULY, MARCH = 1688212800.0, 1678190400.0  # 2023-07-01 12:00Z, 2023-03-07 12:00Z


def corpus(*conversations) -> Corpus:
    c = Corpus()
    for conv in conversations:
        c.add_conversation(conv)
    return c


def rows(c, query, params=Params(), k=10):
    return [r for r, _ in search(c, query, k, params)]


def test_baseline_is_okapi_bm25_by_hand():
    c = corpus(["apple banana", "apple apple cherry date", "banana"])
    got = bm25.score(c, "apple", BASELINE)
    n, df, avgdl = 3, 2, (2 + 4 + 1) / 3
    idf = math.log(1 + (n - df + 0.5) / (df + 0.5))

    def part(tf, dl):
        return idf * tf * 2.2 / (tf + 1.2 * (0.25 + 0.75 * dl / avgdl))

    assert got == pytest.approx([part(1, 2), part(2, 4), 0.0])


@pytest.mark.parametrize("query", ["budget", "budget hotel the", "thanks Mel the trip", "zanzibar budget review"])
def test_terms_add_up_in_their_order_as_one_score_each(query):
    """Several terms' BM25: each key's parts added in the terms' order from the first, bit for bit as
    by hand (a term's part: w x idf x tf x (k1 + 1) / (tf + norm), in scores: ``bm25.SCORE``); weights
    (a name's) included."""
    c = _corpus_of(7)
    terms = bm25.ranked_terms(query)
    weights = {"mel": 0.5}
    lens, _live = c.lengths("text")
    n = int(np.count_nonzero(_live))
    mean = float(lens.sum()) / n
    want = np.zeros(lens.size, bm25.SCORE)
    seen = np.zeros(lens.size, bool)
    for t in dict.fromkeys(terms):
        keys, tfs = c.postings("text", t)
        if not keys.size:
            continue
        idf = np.log(1 + (n - keys.size + 0.5) / (keys.size + 0.5))
        norm = (BASELINE.k1 * (1 - BASELINE.b + BASELINE.b * lens / mean)).astype(bm25.SCORE)
        tf = tfs.astype(bm25.SCORE)
        part = bm25.SCORE(weights.get(t, 1.0) * idf) * tf * bm25.SCORE(BASELINE.k1 + 1) / (tf + norm[keys])
        want[keys] = np.where(seen[keys], want[keys] + part, part)
        seen[keys] = True
    got = bm25.bm25(c, "text", terms, BASELINE, weights)
    assert got.tolist() == want.tolist()
    assert np.count_nonzero(got)


def test_rare_word_beats_common_word():
    c = corpus(["the budget for the trip", "budget budget meeting", "a quokka at the zoo", "budget again"])
    assert rows(c, "budget quokka", BASELINE)[0] == 2


def test_stems_and_accents_match():
    c = corpus(["We went camping in Zürich", "nothing here", "another line"])
    assert rows(c, "camp zurich", BASELINE) == [0]
    assert rows(c, "camp zurich")[0] == 0  # (its neighbours follow, by the context they give)


def test_stop_words_only_query_finds_them_and_longer_query_ignores_them():
    c = corpus(["to be or not to be", "the budget", "something else"])
    assert 0 in rows(c, "to be", BASELINE)
    assert rows(c, "what is the budget", BASELINE) == [1]


def test_nothing_matching_gives_nothing():
    c = corpus(["alpha", "beta"])
    assert search(c, "gamma") == []
    assert search(c, "") == []
    assert search(Corpus(), "alpha") == []


def test_a_reply_is_found_by_the_question_it_answers():
    conv = [
        "What did you name your new puppy?",
        "We called him Biscuit!",
        "Nice weather today.",
        "I fed the neighbours' cat.",
        "The shop was closed.",
    ]
    c = corpus(conv)
    order = rows(c, "puppy name")
    assert order[:2] == [0, 1]  # the turn that says it first, then its reply
    assert rows(c, "puppy name", BASELINE) == [0]  # plain BM25 never finds the reply


def test_neighbours_never_cross_conversations():
    c = corpus(["quokka sighting"], ["unrelated first turn", "second"])
    s = bm25.score(c, "quokka")
    assert s[1] == 0 and s[2] == 0


def test_date_field_prefers_the_month_asked_for():
    c = corpus([Message("we went hiking", "user", MARCH)], [Message("we went hiking", "user", JULY)])
    assert rows(c, "hiking in July")[0] == 1
    assert rows(c, "hiking in March")[0] == 0
    assert rows(c, "hiking 2023") == [0, 1]  # a tie: by row


def test_conversation_level_evidence_breaks_ties():
    a = ["I adopted a dog", "filler one", "the shelter was big", "filler two", "filler three", "filler four"]
    b = ["I adopted a dog", "filler five", "filler six", "filler seven", "filler eight", "filler nine"]
    c = corpus(b, a)
    p = replace(Params(), addressee=0)
    assert rows(c, "dog shelter adopted", p)[0] == 6  # the dog turn of the conversation that also has the shelter


def test_addressee_favours_the_side_a_name_calls():
    # the assistant keeps calling the user "Mel": a question about Mel favours the user's turns
    conv = []
    for i in range(12):
        conv.append(Message(f"I went running on day {i}", "user"))
        conv.append(Message(f"Great job Mel, running {i} is fun", "assistant"))
    c = corpus(conv)
    flat = replace(Params(), diversify=0)  # (diversity depends on the other rows' scores)
    s0 = bm25.parts(c, "Mel running", replace(flat, addressee=0))["score"]
    s1 = bm25.parts(c, "Mel running", flat)["score"]
    assert np.all(s1[0::2] > s0[0::2]) and np.all(s1[1::2] == s0[1::2])
    few = corpus(conv[:8])  # "mel" in fewer rows than addressee_min_rows: no side is inferred
    assert bm25.parts(few, "Mel running")["addressee"].max() == 0


def test_a_name_weighs_less_in_the_text_than_a_topic_word():
    # "mel" names the user (the assistant says it, the user never): in the text BM25 it counts
    # name_weight, since the turns that say it are the other side's; "running" counts fully
    conv = []
    for i in range(12):
        conv.append(Message(f"I went running on day {i}", "user"))
        conv.append(Message(f"Great job Mel, running {i} is fun", "assistant"))
    c = corpus(conv)
    p = Params()
    want = bm25.bm25(c, "text", ["run"], p) + p.name_weight * bm25.bm25(c, "text", ["mel"], p)
    assert p.name_weight < 1
    assert bm25.parts(c, "Mel running")["own"] == pytest.approx(want)
    assert bm25.parts(c, "Mel running", BASELINE)["own"] == pytest.approx(bm25.bm25(c, "text", ["mel", "run"]))


def test_a_topic_one_side_talks_about_more_is_no_name():
    # the user talks about pottery far more than the assistant does: "pottery" names nobody, so a
    # question about Mel's pottery favours Mel's (the user's) turns only, never the assistant's
    conv = []
    for i in range(12):
        conv.append(Message(f"My pottery class {i} was fun", "user"))
        conv.append(Message(f"Great job Mel{', nice pottery' if i < 2 else ''}", "assistant"))
    c = corpus(conv)
    a = bm25.parts(c, "Mel pottery")["addressee"]
    assert np.all(a[0::2] > 0) and np.all(a[1::2] == 0)
    assert a[1::2].max() == 0 and bm25.parts(c, "pottery")["addressee"].max() == 0


def test_diversity_lets_another_conversation_in():
    # one conversation says "quokka" in every other turn, so its context lifts all its turns; the one
    # turn of another conversation that says it comes before the first one's turns that only border one
    big = [f"{'we saw a quokka' if i % 2 else 'nice'} day {i}" for i in range(16)]
    c = corpus(big, ["filler one", "a quokka and other words", "filler two"])
    other, bordering = 17, [r for r in range(16) if r % 2 == 0]
    order = rows(c, "quokka", k=19)
    assert all(order.index(other) < order.index(r) for r in bordering)
    flat = rows(c, "quokka", replace(Params(), diversify=0), k=19)
    assert all(flat.index(other) > flat.index(r) for r in bordering[1:])  # without it, after them all
    p = bm25.parts(c, "quokka")
    assert p["diversity"].max() == 0 and p["diversity"][other] == 0
    assert sorted(p["score"][r] > 0 for r in range(19)) == sorted(p["score"] > 0)


def test_diversity_does_not_depend_on_row_numbers(monkeypatch):
    # two conversations whose rows tie; with a pool smaller than their rows, which rows are in it must
    # not depend on which conversation was indexed first (a refresh renumbers rows)
    monkeypatch.setattr(bm25, "DIVERSIFY_POOL", 6)
    a, b = [f"quokka alpha {i}" for i in range(12)], [f"quokka beta {i}" for i in range(12)]
    ab, ba = bm25.score(corpus(a, b), "quokka"), bm25.score(corpus(b, a), "quokka")
    assert ab[:12].tolist() == pytest.approx(ba[12:].tolist()) and ab[12:].tolist() == pytest.approx(ba[:12].tolist())
    assert bm25.parts(corpus(a, b), "quokka")["diversity"].min() < 0


def test_statistics_are_global_at_query_time_refresh_equals_rebuild():
    a = ["alpha beta", "gamma delta budget"]
    b_old = ["budget review", "old text about quokkas"]
    b_new = ["budget review again", "new text about zanzibar budget", "third"]
    cc = ["delta budget epsilon"]
    refreshed = corpus(a, b_old, cc)
    refreshed.remove_conversation(1)
    refreshed.add_conversation(b_new)
    rebuilt = corpus(a, cc, b_new)
    texts_r = a + ["-"] * len(b_old) + cc + b_new
    texts_b = a + cc + b_new
    for q in ("budget", "zanzibar budget", "quokkas", "delta", "alpha budget review"):
        sr, sb = bm25.score(refreshed, q), bm25.score(rebuilt, q)
        got_r = sorted((texts_r[r], round(sr[r], 12)) for r in range(len(texts_r)) if sr[r] > 0)
        got_b = sorted((texts_b[r], round(sb[r], 12)) for r in range(len(texts_b)) if sb[r] > 0)
        assert got_r == got_b, q
    assert bm25.score(refreshed, "quokkas").max() == 0  # the removed text is gone from every statistic


def test_top_k_order_ties_and_zeros():
    s = np.array([0.0, 2.0, 1.0, 2.0, 0.0, 3.0])
    assert top_k(s, 10).tolist() == [5, 1, 3, 2]
    assert top_k(s, 2).tolist() == [5, 1]
    assert top_k(s, 0).tolist() == []
    assert top_k(np.zeros(3), 5).tolist() == []


@pytest.mark.parametrize("q", ["\x00", "😀", "-", '"', "x" * 1_000_000, "שלום", '+a -b "c* d:e'])
def test_hostile_queries_never_raise(q):
    c = corpus(["hello world", "שלום"])
    search(c, q)


def test_parts_add_up():
    c = corpus(
        [
            Message("We went camping in July", "user", JULY),
            Message("Camping is fun, Mel", "assistant", JULY),
            Message("The tent leaked", "user", JULY),
        ]
    )
    p = bm25.parts(c, "When did we go camping in July?")
    base = p["own"] + p["date"] + p["context"] + p["conversation"]
    assert p["score"] == pytest.approx(base + p["addressee"] + p["diversity"] + p["reply"])
    assert top_k(p["score"], 1).tolist() == [0]


def test_a_spelled_out_day_finds_that_day():
    day1, day2 = 1667995200.0, 1668081600.0  # 2022-11-09 and 2022-11-10, noon UTC
    c = corpus([Message("I cooked dinner", "user", day2)], [Message("I cooked dinner", "user", day1)])
    assert rows(c, "What did Nate cook on 9 November, 2022?")[0] == 1
    assert rows(c, "What did Nate cook on November 10th, 2022?")[0] == 0


def test_frozen_arrays_rank_exactly_like_the_corpus(tmp_path):
    c = corpus(
        [Message("We went camping in July, Mel", "assistant", JULY), Message("camping with kids", "user", JULY)],
        [Message("budget for the trip", "user", MARCH), Message("the trip to 東京", "assistant", MARCH)],
        ["quokka", "zanzibar budget"],
    )
    c.remove_conversation(2)
    c.add_conversation(["zanzibar again", "budget camping"])
    frozen = bm25.FrozenCorpus.from_corpus(c)
    for name, a in frozen.arrays.items():  # memory-mapped from disk, as an index would be
        np.save(tmp_path / f"{name}.npy", a)
    mapped = bm25.FrozenCorpus({n: np.load(tmp_path / f"{n}.npy", mmap_mode="r") for n in frozen.arrays}, frozen.vocab)
    for q in ("camping in July", "budget trip", "東京", "quokka", "zanzibar", "Mel camping", "", "nothing"):
        want = bm25.score(c, q)
        assert bm25.score(frozen, q).tolist() == pytest.approx(want.tolist(), rel=1e-6)
        assert bm25.score(mapped, q).tolist() == pytest.approx(want.tolist(), rel=1e-6)


def _context_by_gathers(base, same, p, lengths=None):
    """The neighbour evidence as first written: every row's neighbours gathered by row number, each
    share x the pair's damping (earlier row's x later row's) when ``lengths`` are given, the share made
    a score (``bm25.SCORE``) before it is multiplied by the neighbour's."""
    n = base.size
    idx = np.arange(n)
    prev = np.where(same, idx - 1, -1)
    nxt = np.full(n, -1)
    nxt[:-1] = np.where(same[1:], idx[1:], -1)
    b = np.append(base, base.dtype.type(0))
    prev2, next2 = np.append(prev, -1)[prev], np.append(nxt, -1)[nxt]
    d = np.append(np.ones(n) if lengths is None else np.minimum(1.0, p.ctx_len / np.maximum(lengths, 1.0)), 1.0)
    out = np.zeros(n, bm25.SCORE)
    for w, j in ((p.prev, prev), (p.next, nxt), (p.prev2, prev2), (p.next2, next2)):
        lo, hi = np.minimum(idx, j), np.maximum(idx, j)
        c = np.full(n, w) if lengths is None else w * (d[lo] * d[hi])
        out += np.where(j >= 0, c.astype(bm25.SCORE) * b[j], bm25.SCORE(0))
    return out


@pytest.mark.parametrize("damped", [False, True])
@pytest.mark.parametrize("evidence", [0.001, 0.05, 0.5])
@pytest.mark.parametrize("linked", [0.8, 0.04])
def test_neighbour_evidence_is_the_same_sparse_or_dense(evidence, linked, damped):
    """Few rows with evidence, or few rows with a neighbour (SAM's memories have none), take the sparse
    path, the others the dense one: both equal the gathers, bit for bit, long rows damped or not."""
    rng = np.random.default_rng(7)
    n = 5000
    same = rng.random(n) < linked
    same[0] = False
    same[n - 1] = True  # (the last row linked: the row after it does not exist)
    base = np.where(rng.random(n) < evidence, rng.random(n) * 5, 0.0).astype(bm25.SCORE)
    base[[0, 1, n - 1]] = [1.5, 0.0, 2.5]  # the ends
    lengths = rng.integers(0, 200, n).astype(np.uint32) if damped else None
    want = _context_by_gathers(base, same, Params(), lengths)
    nz = int(np.count_nonzero(base))
    assert bm25._context(base, same, Params(), nz, {}, lengths).tolist() == want.tolist()
    if damped:  # (damping changes the figures)
        assert want.tolist() != _context_by_gathers(base, same, Params()).tolist()


@pytest.mark.parametrize("cut", [1, 2, 3, 2500, 4997, 4998, 4999])
def test_neighbour_evidence_of_a_slice_of_rows_is_that_of_the_whole(cut):
    """``_context_rows`` over [0, cut) and [cut, n) (what two threads each do) gives every row what one
    pass gives it, bit for bit, wherever the cut falls (near the ends included)."""
    rng = np.random.default_rng(cut)
    n = 5000
    same = rng.random(n) < 0.8
    same[0] = False
    base = np.where(rng.random(n) < 0.5, rng.random(n) * 5, 0.0).astype(bm25.SCORE)
    want = _context_by_gathers(base, same, Params())
    shares = bm25._shares(same, Params(), {})
    out = np.full(n, np.nan, bm25.SCORE)
    bm25._context_rows(base, shares, out, 0, cut)
    bm25._context_rows(base, shares, out, cut, n)
    assert out.tolist() == want.tolist()


def _corpus_of(seed: int, conversations: int = 300) -> Corpus:
    rng = np.random.default_rng(seed)
    words = "budget deadline portland hotel trip review the a zanzibar Mel Ana".split()
    c = Corpus()
    for _ in range(conversations):
        c.add_conversation(
            [
                Message(" ".join(rng.choice(words, rng.integers(1, 80))), role=("user", "assistant")[i % 2])
                for i in range(int(rng.integers(1, 12)))
            ]
        )
    return c


@pytest.mark.parametrize("block", [None, 7, 64])
@pytest.mark.parametrize("query", ["budget", "zanzibar hotel", "thanks Mel the trip", "review"])
def test_parts_are_the_same_in_two_halves_or_one(query, block, monkeypatch):
    """Every part of every row, computed in one pass or in two threads (each half of the rows, a block
    of ``block`` rows at a time, None: the half at once): bit for bit."""
    from samctl.search import halves

    corpus = _corpus_of(3)
    monkeypatch.setattr(halves, "MIN_ROWS", 1 << 62)
    monkeypatch.setattr(halves, "BLOCK", 1 << 62)
    one = bm25.parts(corpus, query)
    monkeypatch.setattr(halves, "MIN_ROWS", 1)
    monkeypatch.setattr(halves, "BLOCK", block)
    two = bm25.parts(_corpus_of(3), query)
    assert one.keys() == two.keys()
    for k in one:
        assert np.asarray(one[k]).tolist() == np.asarray(two[k]).tolist(), k
    assert np.count_nonzero(one["context"]) and np.count_nonzero(one["reply"])


@pytest.mark.parametrize("query", ["budget", "zanzibar hotel", "thanks Mel the trip", "quokka", "quokka trip"])
def test_the_pool_holds_every_row_scoring_at_least_its_floor(query, monkeypatch):
    """``info["pool"]``: the rows diversity weighed, sorted; after it, those scoring at least any t at or
    above ``info["floor"]`` are every row that does (the search takes them there, not from every row),
    a rare word's (ranked on its conversations alone: rows of the whole corpus) too."""
    monkeypatch.setattr(bm25, "DIVERSIFY_POOL", 25)
    c = _corpus_of(3, 400)
    for i in (5, 170, 333):  # a rare word: ranked on these conversations' rows alone
        c.add_conversation([Message("the quokka trip", role="user"), Message("a quokka, Mel", role="assistant")])
    subsets = []
    real = bm25.subset.evidence_rows
    monkeypatch.setattr(bm25.subset, "evidence_rows", lambda *a: subsets.append(real(*a)) or subsets[-1])
    info: dict = {}
    s = bm25.parts(c, query, info=info)["score"]
    assert (subsets[0] is not None) == (query == "quokka")
    pool, floor = info["pool"], info["floor"]
    assert floor > 0 and pool.tolist() == sorted(set(pool.tolist()))
    for t in (floor, floor * 1.01, (floor + s.max()) / 2, s.max()):
        assert pool[s[pool] >= t].tolist() == np.flatnonzero(s >= t).tolist() == bm25.rows_at_least(s, t).tolist()


def test_one_thread_keeps_every_pass_of_this_thread_in_it(monkeypatch):
    """Within ``halves.one_thread()`` a pass's blocks all run in the calling thread (nested, and with a
    false argument inside, still); outside, and in another thread meanwhile, the second half goes to
    the pool's thread.  The blocks' results come in the rows' order either way."""
    import threading

    from samctl.search import halves

    monkeypatch.setattr(halves, "MIN_ROWS", 1)
    monkeypatch.setattr(halves, "BLOCK", 4)
    me = threading.get_ident()

    def threads(n=64):
        got = halves.run(n, lambda a, b: (a, threading.get_ident()))
        assert [a for a, _ in got] == list(range(0, n // 2, 4)) + list(range(n // 2, n, 4))
        return {t for _, t in got}

    assert len(threads()) == 2
    with halves.one_thread():
        assert threads() == {me}
        with halves.one_thread(False):
            assert threads() == {me}
        assert threads() == {me}
        other: list = []
        t = threading.Thread(target=lambda: other.append(len(threads())))
        t.start()
        t.join()
        assert other == [2]
    with halves.one_thread(False):
        assert len(threads()) == 2
    assert len(threads()) == 2


def test_halves_work_in_a_forked_child():
    """A pool's thread does not survive a fork: a child makes its own (no wait for a thread that is not there)."""
    import multiprocessing

    from samctl.search import halves

    def job(lo, hi, out):
        out[lo:hi] = np.arange(lo, hi)

    out = np.zeros(1 << 19)
    halves.run(out.size, lambda a, b: job(a, b, out))  # (the parent's thread made)
    assert out.tolist() == list(range(out.size))
    ctx = multiprocessing.get_context("fork")
    with ctx.Pool(1) as pool:
        assert pool.apply_async(_halves_in_child).get(timeout=60) == (1 << 19) * ((1 << 19) - 1) // 2


def _halves_in_child() -> int:
    from samctl.search import halves

    out = np.zeros(1 << 19)
    halves.run(out.size, lambda a, b: out.__setitem__(slice(a, b), np.arange(a, b)))
    return int(out.sum())


@pytest.mark.parametrize("query", ["zanzibar", "zanzibar quokka", "quokka 7", "thanks zanzibar"])
def test_a_rare_word_ranked_on_its_conversations_alone_scores_as_over_every_row(query, monkeypatch):
    """``subset.py``: the rows of the conversations holding a query word, ranked alone with the whole
    corpus's statistics, get every part of every row as ranking every row gives them, bit for bit;
    removed conversations (rows of none) and rows of a word in no conversation included."""
    from samctl.search import subset

    def corpus():
        rng = np.random.default_rng(5)
        words = "budget deadline portland hotel trip review the a Mel Ana".split()
        c = Corpus()
        for _ in range(600):
            n = int(rng.integers(1, 12))
            c.add_conversation(
                [
                    Message(" ".join(rng.choice(words, rng.integers(1, 60))), ("user", "assistant")[i % 2])
                    for i in range(n)
                ]
            )
        for g in rng.choice(600, 60, replace=False):
            c.remove_conversation(int(g))
        for i in range(30):  # (rare words in a few conversations, among others' rows)
            c.add_conversation(
                [Message("budget trip"), Message(f"zanzibar quokka {i % 9}"), Message("thanks Mel", role="assistant")]
            )
            c.add_conversation([Message(" ".join(rng.choice(words, 20)))])
        return c

    every = corpus()
    real = subset.evidence_rows
    monkeypatch.setattr(subset, "evidence_rows", lambda *a: None)
    want = bm25.parts(every, query)
    monkeypatch.setattr(subset, "evidence_rows", real)
    few = corpus()
    rows = subset.evidence_rows(few, bm25.ranked_terms(query), True)
    assert rows is not None and 0 < rows.size * subset.FEW <= few.size
    got = bm25.parts(few, query)
    for k in want:
        assert np.asarray(got[k]).tolist() == np.asarray(want[k]).tolist(), k
    assert np.count_nonzero(want["score"]) and np.count_nonzero(want["context"])
    assert np.count_nonzero(want["conversation"]) and np.count_nonzero(want["reply"])
