"""Issue #20 finding 8: one huge message.  Long texts are split a piece at a time
(``sam_scoring.word_table``): the results must be those of the whole text, and what a search holds must
stay a small multiple of the text, not the ~10x that a list of all its words costs."""

from __future__ import annotations

import tracemalloc

import pytest

from samctl.search import sam_scoring
from samctl.search.index import rows
from samctl.search.index.format import token_key

TEXTS = [
    "Budget deadline Portland  weekend\ninvoice the a of portland. BUDGET " * 40,
    "café Zürich São ΣΑΣ σοφός ΟΔΟΣ İstanbul straße\u0301 e\u0301 \u1f00\u0345 " * 30,
    "x\x1cy\x1dz\x1e budget\x1f portland\tand\u00a0nbsp\u2028line\u3000ideo " * 40,
    "nospaceatall" * 50,
    "  \n leading and trailing blanks  " * 20 + "   \n ",
    "a b c dd ee fff gggg hhhhh " * 60,
]


@pytest.mark.parametrize("text", TEXTS)
@pytest.mark.parametrize("piece", [7, 64, 333])
def test_pieces_give_the_whole_texts_results(monkeypatch, text, piece):
    q = sam_scoring.tokens("budget portland ΟΔΟΣ café straße\u0301 gggg")
    whole = (
        sam_scoring.embed(text),
        sam_scoring.embed_many([text, "short budget"]),
        sam_scoring.text_boost(q, text),
        sam_scoring.tokens(text),
    )
    monkeypatch.setattr(sam_scoring, "PIECE", piece)
    assert "".join(sam_scoring.split_pieces(text)) == text
    assert sam_scoring.embed(text) == whole[0]
    assert (sam_scoring.embed_many([text, "short budget"]) == whole[1]).all()
    assert sam_scoring.text_boost(q, text) == whole[2]
    table = sam_scoring.word_table(text, key=token_key)
    assert int(table.token.sum()) == len(whole[3])
    assert sorted(table.keys[table.token].tolist()) == sorted(token_key(t) for t in whole[3])


def test_rows_of_a_long_text_are_those_of_the_whole(monkeypatch):
    text = TEXTS[0] + TEXTS[1]

    def chunk():
        b = rows.Batch("k")
        b.add(1, 1, 0, "C", 0, None, 0.5, 0, "r", text)
        b.add(1, 1, 0, "C", 1, None, 0.5, 0, "s", "second budget row")
        return rows.process([b])

    whole = chunk()
    monkeypatch.setattr(sam_scoring, "PIECE", 50)
    split = chunk()
    assert split.meta.tobytes() == whole.meta.tobytes()
    assert sorted(zip(split.tok_row.tolist(), split.tok_hash.tolist(), split.tok_tf.tolist())) == sorted(
        zip(whole.tok_row.tolist(), whole.tok_hash.tolist(), whole.tok_tf.tolist())
    )
    assert split.vocab == whole.vocab
    assert split.text == whole.text and split.ltext == whole.ltext


def _peak(fn) -> int:
    tracemalloc.start()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


PIECE_COST = 32 << 18  # what splitting one piece of 256 K characters holds (its words), with room


def test_a_long_text_is_not_split_at_once():
    """The old code split the whole text into a list of words: about 10 bytes per byte of text
    (a 60 MB message cost 1.2 GB).  Now: a piece's words and 21 bytes per distinct word."""
    text = " ".join(["budget deadline portland weekend the a of"] * (3 << 20 >> 5))  # ~4 MiB
    for fn in (lambda: sam_scoring.embed(text), lambda: sam_scoring.embed_many([text])):
        assert _peak(fn) < PIECE_COST + len(text)  # the old code: 10 times the text
    b = rows.Batch("k")
    b.add(1, 1, 0, "C", 0, None, 0.5, 0, "r", text)
    assert _peak(lambda: rows.process([b])) < PIECE_COST + 3 * len(text)  # its blobs, the folded text
    assert _peak(lambda: sam_scoring.text_boost({"budget"}, text)) < PIECE_COST + len(text)


def test_a_segment_in_memory_holds_its_texts_once():
    """``--no-index`` builds segments in memory: their text blobs were joined, then copied again
    by ``tobytes`` (two extra copies of every text of a part)."""
    from samctl.search.index.segment import SegmentWriter

    b = rows.Batch("k")
    b.add(1, 1, 0, "C", 0, None, 0.5, 0, "r", "x" * (1 << 20))
    w = SegmentWriter("/root")
    w.add_chunk(rows.process([b]))
    seg = w.finish()
    buf, base = seg.bufs["text"]
    import numpy as np

    assert np.frombuffer(buf, dtype=np.uint8).ctypes.data == seg.a["text"].ctypes.data  # the same bytes
    assert seg.text(0) == "x" * (1 << 20)


def test_the_snippet_of_a_long_text_is_found_without_lowercasing_it_whole():
    from samctl.search import dispatch as sx
    from samctl.search.hits import find_ci

    text = "Budget " * (5 * sam_scoring.PIECE // 7) + "the PORTLAND plan " + "weekend " * 1000
    want = text.lower().find("portland")
    assert find_ci(text, "portland") == want
    assert find_ci(text, "nowhere") == -1
    assert _peak(lambda: sx.snippet(text, "portland")) < len(text)  # the old code: a lowercased copy
