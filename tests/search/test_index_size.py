"""Issue #22's size goal: the index on disk is at most twice the text it indexes.  The folded text
(``--exact``, ``--rank sam``'s keyword boost) is stored only for the rows whose folded form is not
their text with its ASCII letters lowered; for every other row a search lowers the text itself."""

from __future__ import annotations

import json
import os
import random

import pytest

from bench import gen_archive as gen
from samctl.search import dispatch as sx
from samctl.search import index as ix
from samctl.search import sam_scoring
from samctl.search.index import rows as ixrows
from samctl.search.index.segment import SegmentWriter
from samctl.stores import open_store
from tests.conftest import fingerprint
from tests.conftest import make_fixtures as mf
from tests.search_helpers import age

# (text, whether its folded form differs from the text with A-Z lowered)
FOLDS = [
    ("Plain ASCII, Upper and lower", False),
    ("", False),
    ("café in zürich, “quoted” — 東京 🙂", False),  # non-ASCII, but nothing to lower or compose
    ("ÉCOLE in Zürich", True),  # a capital outside ASCII
    ("e\u0301cole", True),  # not NFC: folding composes it (3 bytes become 2)
    ("İstanbul", True),  # lowering makes two characters of one
    ("Straße ẞ", True),
    ("lone \ud800 surrogate", False),
]


def _segment(texts):
    b = ixrows.Batch("k")
    for i, t in enumerate(texts):
        b.add(1, 1, 0, "C", i, None, 0.5, 0, f"r{i}", t)
    w = SegmentWriter("/r")
    w.add_chunk(ixrows.process([b]))
    return w.finish()


def test_the_folded_text_is_kept_only_where_lowering_the_text_does_not_give_it():
    chunk = ixrows.process([_batch([t for t, _ in FOLDS])])
    assert [n > 0 for n in chunk.ltext_len.tolist()] == [d for _, d in FOLDS]
    stored = [t for t, d in FOLDS if d]
    assert bytes(chunk.ltext) == b"".join(ix.encode_text(sam_scoring.fold(t)) for t in stored)


def _batch(texts):
    b = ixrows.Batch("k")
    for i, t in enumerate(texts):
        b.add(1, 1, 0, "C", i, None, 0.5, 0, f"r{i}", t)
    return b


def test_rows_holding_folds_as_the_index_folded():
    """Rows of every kind (lowered at query time, folded form stored, empty), any needle: the rows
    found are those whose folded text holds it, as a row-by-row test says."""
    import numpy as np

    rnd = random.Random(11)
    alphabet = ["a", "A", "é", "É", "e\u0301", "E\u0301", "İ", "i", " ", "ß", "ẞ", "b", "1"]
    for _ in range(300):
        texts = ["".join(rnd.choice(alphabet) for _ in range(rnd.randint(0, 6))) for _ in range(rnd.randint(1, 12))]
        seg = _segment(texts)
        mask = np.array([rnd.random() < 0.7 for _ in texts])
        needle = sam_scoring.fold("".join(rnd.choice(alphabet) for _ in range(rnd.randint(1, 3))))
        got = sx._rows_holding(seg, mask, ix.encode_text(needle)).tolist()
        assert got == [i for i, t in enumerate(texts) if mask[i] and needle in sam_scoring.fold(t)], (texts, needle)


def test_rows_holding_lowers_a_long_run_a_window_at_a_time(monkeypatch):
    import numpy as np

    monkeypatch.setattr(sx, "FOLD_WINDOW", 16)  # many windows, and rows longer than one
    texts = ["x" * 40 + "NEEDLE", "needle", "nee", "dle", "ÉCOLE needle", "short", "y" * 17 + "Needle" + "z" * 30]
    seg = _segment(texts)
    got = sx._rows_holding(seg, np.ones(len(texts), dtype=bool), b"needle").tolist()
    assert got == [0, 1, 4, 6]  # "nee" + "dle" runs from one row into the next: neither


@pytest.fixture
def accents(sam_demo):
    cid = "E0000000-0000-4000-8000-0000000000F1"
    ts = "2026-01-02T03:04:05Z"
    texts = ["École", "ÉCOLE du soir", "une e\u0301cole", "PORTLAND école", "İstanbul"]
    msgs = [mf.sam_message(f"A{i:07X}-0000-4000-8000-000000000001", "user", t, ts) for i, t in enumerate(texts)]
    mf._write(
        sam_demo / "conversations" / cid / "conversation.json", mf.sam_dumps(mf.sam_doc(cid, "accents", msgs, ts, ts))
    )
    age(sam_demo)
    return sam_demo


def test_exact_finds_every_case_and_composition_of_an_accented_word(run, accents):
    before = fingerprint(accents)
    r = run("--root", accents, "search", "--exact", "ÉCOLE", "-n", "50", "--format", "json")
    assert r.exit_code == 0, r.stderr
    got = {h["text"]: h["exact"] for h in json.loads(r.stdout)}
    assert got == {
        "École": "whole",
        "ÉCOLE du soir": "substring",
        "une e\u0301cole": "substring",
        "PORTLAND école": "substring",
    }
    assert (
        run("--root", accents, "--no-cache", "search", "--exact", "ÉCOLE", "-n", "50", "--format", "json").stdout
        == r.stdout
    )
    r = run("--root", accents, "search", "--exact", "i̇stanbul", "--format", "json")
    assert r.exit_code == 0 and [h["text"] for h in json.loads(r.stdout)] == ["İstanbul"]
    assert fingerprint(accents) == before


def _size(d) -> int:
    return sum(os.lstat(os.path.join(p, n)).st_size for p, _, names in os.walk(d) for n in names)


def test_the_index_is_at_most_twice_the_text(tmp_path):
    gen.make_mermaid(tmp_path / "m", 150, seed=5, jobs=1, progress=False)
    age(tmp_path / "m")
    store = open_store(str(tmp_path / "m"))
    findings: list = []
    idx = ix.refresh(store, findings, rebuild=True)
    assert findings == []
    text = sum(int(seg.text_off[-1]) for seg in idx.segments)
    assert text > 500_000
    assert _size(ix.index_dir(store)) <= 2 * text  # 2.97x when every row kept its folded text too


BIG = ["budget " * 1000, "budget " * 255 + "x", "budget " * 254, "budget deadline", "deadline " * 70000, "x"]


def _on_disk(tmp_path, texts):
    from samctl.search.index.segment import Segment

    chunk = ixrows.process([_batch(texts)])
    w = SegmentWriter("/r", tmp_path / "seg-0000000a.seg")
    w.add_chunk(chunk)
    info = w.finish()
    return chunk, tmp_path / info["name"], info, lambda: Segment.open(tmp_path / info["name"], "/r", info)


def test_counts_are_a_byte_each_and_255_or_more_are_kept_whole(tmp_path):
    """A posting's count takes one byte; the few of 255 or more keep their count beside (BM25 of a
    long text needs it), on disk and in memory alike."""
    import numpy as np

    chunk, _, _, opened = _on_disk(tmp_path, BIG)
    want = sorted(zip(chunk.tok_hash.tolist(), chunk.tok_row.tolist(), chunk.tok_tf.tolist()))
    assert {1000, 255, 254, 0xFFFF} <= {t for *_, t in want}
    mem = SegmentWriter("/r")
    mem.add_chunk(chunk)
    for seg in (opened(), mem.finish()):
        keys = np.repeat(seg.tok_keys, np.diff(seg.tok_ptr))
        assert sorted(zip(keys.tolist(), seg.posting_rows().tolist(), seg.tfs().tolist())) == want
        assert seg.tok_tf.itemsize == 1 and len(seg.tok_bigp) == 3
        a, b = int(seg.tok_ptr[0]), int(seg.tok_ptr[-1])
        assert seg.tfs(a + 1, b).tolist() == seg.tfs()[a + 1 : b].tolist()


def test_big_counts_out_of_order_are_a_bad_index(tmp_path):
    import orjson

    _, path, info, opened = _on_disk(tmp_path, BIG)
    opened()
    data = bytearray(path.read_bytes())
    hoff, hlen, *_ = ix.TRAILER.unpack_from(data, len(data) - ix.TRAILER.size)
    off, nbytes, *_ = orjson.loads(data[hoff : hoff + hlen])["sections"]["tok_bigp"]
    data[off : off + nbytes] = b"\xff" * nbytes  # every posting -1
    path.write_bytes(bytes(data))
    with pytest.raises(ix.BadIndex, match="big counts"):
        opened()


def test_rows_take_two_bytes_a_posting_in_blocks_of_65536(tmp_path):
    """A posting's row is its low 16 bits; the rest is the block of its (term, block) group: rows
    on either side of a block boundary come back as they went in, on disk and in memory."""
    import numpy as np

    n = 140_000
    rare = {65535: "zanzibar", 65536: "zanzibar", 131071: "quokka", 131072: "quokka marzipan", n - 1: "zanzibar"}
    texts = [rare.get(i, "budget" if i % 3 else "deadline budget") for i in range(n)]
    chunk, _, _, opened = _on_disk(tmp_path, texts)
    mem = SegmentWriter("/r")
    mem.add_chunk(chunk)
    want = sorted(zip(chunk.tok_hash.tolist(), chunk.tok_row.tolist(), chunk.tok_tf.tolist()))
    for seg in (opened(), mem.finish()):
        assert seg.tok_rows.itemsize == 2
        keys = np.repeat(seg.tok_keys, np.diff(seg.tok_ptr))
        assert sorted(zip(keys.tolist(), seg.posting_rows().tolist(), seg.tfs().tolist())) == want
        for term, rows in (
            ("zanzibar", [65535, 65536, n - 1]),
            ("quokka", [131071, 131072]),
            ("marzipan", [131072]),
            ("deadlin", [i for i in range(0, n, 3) if i not in rare]),
            ("nothing", []),
        ):
            got = seg.term_postings(ix.token_key(term))
            assert (got[2].tolist() if got else []) == rows, term


def test_several_needles_lower_the_text_once(monkeypatch):
    """--rank sam looks for each query word: the text is lowered once for all of them."""
    import numpy as np

    texts = ["Budget PORTLAND", "ÉCOLE budget", "trip", "Weekend trip", "nothing"]
    seg = _segment(texts)
    mask = np.ones(len(texts), dtype=bool)
    calls = []
    real = ix.lower_ascii
    monkeypatch.setattr(ix, "lower_ascii", lambda b: calls.append(len(b)) or real(b))
    needles = [b"budget", b"trip", b"portland"]
    got = sx._rows_holding(seg, mask, needles).tolist()
    together = list(calls)
    alone = [sx._rows_holding(seg, mask, nb).tolist() for nb in needles]
    assert got == sorted({r for rows in alone for r in rows}) == [0, 1, 2, 3]
    assert together and len(calls) == 4 * len(together)  # the three needles lowered the text as one does


def test_the_writer_counts_a_row_as_its_meta_record_and_three_offsets():
    from samctl.search.index.format import meta_dtype
    from samctl.search.index.segment import ROW_BYTES

    assert ROW_BYTES == meta_dtype().itemsize + 3 * 8
