"""The index is cut into segments of about ``SEGMENT_BYTES`` (between sources), by a build and by
every rewrite, so that what samctl holds in memory while indexing does not grow with the store;
and the results are those of one segment."""

from __future__ import annotations

import os
import shutil
import time

import pytest

from bench import gen_archive as gen
from samctl.search import dispatch as sx
from samctl.search import index as ix
from samctl.search.index import rows as ixrows
from samctl.search.index import update as ixupdate
from samctl.stores import open_store
from tests.search_helpers import age

CAP = 48 << 10  # about 35 messages a segment: a 40-conversation tree needs several


@pytest.fixture
def tree(tmp_path):
    gen.make_mermaid(tmp_path / "m", 40, seed=3, jobs=1, progress=False)
    age(tmp_path / "m")
    return tmp_path / "m"


def _results(root, texts=("budget", "quokka deadline", "café")):
    out = []
    for text in texts:
        for exact in (False, True):
            findings: list = []
            q = sx.SearchQuery(text=text, threshold=-10.0, limit=100000, exact=exact)
            out.append(
                [(h.kind, h.conversation_id, h.ref, h.score) for h in sx.search(open_store(str(root)), q, findings)]
            )
            assert findings == []
    return out


def _change(paths, seconds_ago: float = 1800) -> None:
    """Save ``paths`` again, dated long enough ago to be trusted (only their signatures change)."""
    t = time.time() - seconds_ago
    for p in paths:
        p.write_bytes(p.read_bytes())
        os.utime(p, (t, t))


def _one_segment_results(root):
    """The results of an index built in one segment, then that index gone again."""
    d = ix.index_dir(open_store(str(root)))
    shutil.rmtree(d, ignore_errors=True)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(ixupdate, "SEGMENT_BYTES", 1 << 30)
        got = _results(root)
    assert len(ix.open_index(open_store(str(root))).segments) == 1
    shutil.rmtree(d)
    return got


def _check_layout(root, cap, chunk_bytes, older=()):
    """Every segment (but those named in ``older``) is at most ``cap`` plus what was added before
    the cut was seen, every source's rows are in one segment, and every byte matches its checksum."""
    idx = ix.open_index(open_store(str(root)))
    for entry in idx.manifest.segments:
        assert entry["name"] in older or entry["size"] <= cap + chunk_bytes, (entry["size"], cap)
    rows = {s.name: s.rows for s in idx.segments}
    for key, e in idx.manifest.sources().items():
        if e["seg"] is not None:
            assert 0 <= e["start"] < e["end"] <= rows[e["seg"]], key
    st = ix.state(open_store(str(root)), verify=True)
    assert st["problems"] == [], st["problems"]
    return idx


def test_a_build_is_cut_between_sources_and_finds_the_same(tree, monkeypatch):
    want = _one_segment_results(tree)
    monkeypatch.setattr(ixupdate, "SEGMENT_BYTES", CAP)
    monkeypatch.setattr(ixrows, "CHUNK_SOURCES", 1)  # a cut may come after any source
    assert _results(tree) == want
    idx = _check_layout(tree, CAP, 64 << 10)
    assert len(idx.segments) >= 4


def test_a_chunk_is_cut_by_the_bytes_of_its_files_too(tree, monkeypatch):
    from samctl.search.index.sources import discover

    store = open_store(str(tree))
    sources = list(discover(store, []).values())
    sizes = [ixrows._bytes_of(s) for s in sources]
    assert all(n == sum(os.path.getsize(p) for p in s.paths if os.path.exists(p)) for n, s in zip(sizes, sources))
    whole = [c.keys for c in ixrows.read_all(store, sources, jobs=1)]
    assert [len(k) for k in whole] == [min(ixrows.CHUNK_SOURCES, len(sources))] * (len(whole) == 1)
    monkeypatch.setattr(ixrows, "CHUNK_BYTES", min(sizes))  # (every source holds as many bytes or more)
    cut = [c.keys for c in ixrows.read_all(store, sources, jobs=1)]
    assert sum(cut, []) == sum(whole, []) and [len(k) for k in cut] == [1] * len(sources)


def test_rewrites_stay_cut_and_find_the_same(tree, monkeypatch):
    monkeypatch.setattr(ixupdate, "SEGMENT_BYTES", CAP)
    monkeypatch.setattr(ixrows, "CHUNK_SOURCES", 1)
    _results(tree)
    first = {s.name for s in ix.open_index(open_store(str(tree))).segments}
    conv = tree / ".mermaid" / "conversations"
    # the sessions of the first half change: their segments decay and are rewritten, cut again
    _change(sorted(conv.iterdir())[:60])
    got = _results(tree)
    idx = _check_layout(tree, CAP, 64 << 10)
    names = {s.name for s in idx.segments}
    assert names != first and not names <= first  # rewritten, not only added to
    assert got == _one_segment_results(tree)


def _alive_postings(root) -> list:
    """Every posting of the alive rows of ``root``'s index as (term key, conversation, ref, text, count),
    sorted; and each segment's own order checked: by key, a key's rows ascending (what ``term_postings``
    and the block numbers rely on)."""
    import numpy as np

    idx = ix.open_index(open_store(str(root)))
    out = []
    for seg in idx.segments:
        rows = seg.posting_rows()
        keys = np.repeat(seg.tok_keys, np.diff(seg.tok_ptr))
        assert np.all((keys[1:] > keys[:-1]) | ((keys[1:] == keys[:-1]) & (rows[1:] > rows[:-1])))
        tfs = seg.tfs()
        for k, r, t in zip(keys.tolist(), rows.tolist(), tfs.tolist()):
            if seg.alive[r]:
                out.append((k, seg.convs[int(seg.r_conv[r])], seg.ref(r), seg.text(r), t))
    return sorted(out)


def test_a_rewrite_keeps_the_postings_of_a_build(tree, monkeypatch):
    """The segments a rewrite makes (pieces of several decayed segments, cut again) hold the postings a
    build from nothing holds for the same rows, each in a segment's order."""
    monkeypatch.setattr(ixupdate, "SEGMENT_BYTES", CAP)
    monkeypatch.setattr(ixrows, "CHUNK_SOURCES", 1)
    monkeypatch.setattr(ixupdate, "DEAD_FRACTION", 0.05)
    store = open_store(str(tree))
    before = {s.name for s in ix.refresh(store, []).segments}
    _change(sorted((tree / ".mermaid" / "conversations").glob("*.json"))[::3])
    after = {s.name for s in ix.refresh(store, []).segments}  # (not a search: it would rebuild a bad index)
    assert len(before - after) >= 3  # several segments rewritten
    got = _alive_postings(tree)
    shutil.rmtree(ix.index_dir(store))
    ix.refresh(store, [])
    assert got == _alive_postings(tree)


def test_a_source_bigger_than_a_segment_goes_alone(tree, monkeypatch):
    monkeypatch.setattr(ixupdate, "SEGMENT_BYTES", 512)  # smaller than any session
    monkeypatch.setattr(ixrows, "CHUNK_SOURCES", 1)
    got = _results(tree)
    idx = ix.open_index(open_store(str(tree)))
    per_seg: dict = {}
    for e in idx.manifest.sources().values():
        if e["seg"] is not None:
            per_seg.setdefault(e["seg"], []).append(e)
    assert len(per_seg) == len(idx.segments) == 40 and all(len(v) == 1 for v in per_seg.values())
    # a rewrite of decayed segments keeps one session a segment
    conv = tree / ".mermaid" / "conversations"
    _change(sorted(conv.iterdir())[:9])
    assert _results(tree) == got
    idx = ix.open_index(open_store(str(tree)))
    assert len(idx.segments) == 40


def test_small_segments_are_merged_up_to_the_cap(tree, monkeypatch):
    """Refreshes that each read a few sessions leave small segments; once there are too many they
    are merged, into segments no bigger than the cap."""
    monkeypatch.setattr(ixupdate, "SEGMENT_BYTES", 1 << 30)
    monkeypatch.setattr(ixupdate, "DEAD_FRACTION", 0.3)  # (the big segment is not to decay here)
    _results(tree)
    (base,) = [s.name for s in ix.open_index(open_store(str(tree))).segments]
    cap = 256 << 10  # a session is far under half of it: each refresh leaves a small segment
    monkeypatch.setattr(ixupdate, "SEGMENT_BYTES", cap)
    monkeypatch.setattr(ixrows, "CHUNK_SOURCES", 1)
    conv = tree / ".mermaid" / "conversations"
    snaps = sorted(conv.glob("*.json"))
    merged = False
    for i in range(ix.MAX_SEGMENTS + 4):
        _change([snaps[i]], 1800 - i)
        _results(tree, texts=("budget",))
        idx = _check_layout(tree, cap, 64 << 10, older={base})
        sizes = [e["size"] for e in idx.manifest.segments if e["name"] != base]
        assert base in {s.name for s in idx.segments}  # 10 of 40 sessions dead: not decayed, not rewritten
        assert len([n for n in sizes if n < cap // 2]) <= ix.MAX_SEGMENTS - 1
        merged |= len(sizes) < i + 1
    assert merged
    assert _results(tree) == _one_segment_results(tree)


def _entry(name: str, rows: int, dead: int, size: int = 40 << 20) -> dict:
    return {"name": name, "rows": rows, "size": size, "dead": [[0, dead]] if dead else []}


def test_decayed_segments_are_rewritten_a_few_a_refresh_most_decayed_first():
    rows = 1000
    segs = [_entry(f"s{i}", rows, 105 + 10 * i) for i in range(6)]  # all past DEAD_FRACTION (0.1)
    segs.append(_entry("fresh", rows, 90))  # not decayed
    got = ixupdate._to_rewrite(segs)
    assert got == {"s5", "s4", "s3", "s2"} and ixupdate.REWRITE_AT_ONCE == 4
    segs.append(_entry("rotten", rows, 310))  # past ROTTEN_FRACTION: rewritten whatever the rest
    segs.append(_entry("rotten2", rows, 400))
    assert ixupdate._to_rewrite(segs) == {"rotten2", "rotten", "s5", "s4"}
    rotten = [_entry(f"r{i}", rows, 301 + i) for i in range(6)]
    assert ixupdate._to_rewrite(segs + rotten) == {"rotten2", "rotten"} | {f"r{i}" for i in range(6)}
    assert ixupdate._to_rewrite([_entry("a", rows, 100), _entry("b", rows, 0)]) == set()  # (10%: not past it)


def test_segments_that_decay_together_are_rewritten_over_several_refreshes(tree, monkeypatch):
    """Sessions changed all over the store decay every segment at once; the refreshes that follow rewrite
    them a few at a time, and every search finds what a build from nothing finds."""
    monkeypatch.setattr(ixupdate, "SEGMENT_BYTES", CAP)
    monkeypatch.setattr(ixrows, "CHUNK_SOURCES", 1)
    monkeypatch.setattr(ixupdate, "REWRITE_AT_ONCE", 2)
    store = open_store(str(tree))
    built = {s.name for s in ix.refresh(store, []).segments}
    snaps = sorted((tree / ".mermaid" / "conversations").glob("*.json"))
    _change(snaps[::4])  # a session in four: most segments past DEAD_FRACTION
    idx = ix.refresh(store, [])
    left = built & {s.name for s in idx.segments}
    assert len(left) == len(built) - 2
    waiting = [e for e in idx.manifest.segments if e["name"] in left and ixupdate._to_rewrite([e])]
    assert waiting  # decayed too, left for the refreshes that follow
    for i in range(3):
        _change([snaps[1 + 4 * i]], 1700 - i)  # (a refresh with nothing to read writes nothing)
        now = built & {s.name for s in ix.refresh(store, []).segments}
        assert now < left
        left = now
    assert _results(tree) == _one_segment_results(tree)


def test_index_compact_drops_every_superseded_row_and_finds_the_same(tree, monkeypatch, run):
    """``samctl index --compact``: segments with any dead row rewritten, the small ones merged, nothing read
    again; the answers those of a build; a second run has nothing left to do."""
    import json

    monkeypatch.setattr(ixupdate, "SEGMENT_BYTES", 1 << 30)
    store = open_store(str(tree))
    ix.refresh(store, [])
    snaps = sorted((tree / ".mermaid" / "conversations").glob("*.json"))
    for i in range(3):  # three refreshes of a session each: a few dead rows, three small segments
        _change([snaps[7 * i]], 1700 - i)
        ix.refresh(store, [])
    before = json.loads(run("--root", tree, "index", "--format", "json").stdout)["stores"][0]
    assert 0 < before["dead"] < 0.1 * sum(before["rows"].values())  # (below what a refresh compacts)
    want = _results(tree)
    files = {p.name: p.stat().st_mtime_ns for p in snaps}
    r = run("--root", tree, "index", "--compact")
    assert r.exit_code == 0, r.stderr
    assert before["segments"] == 4
    assert f"compacted: 4 segments rewritten, {before['dead']:,} superseded rows dropped" in r.stderr
    after = json.loads(run("--root", tree, "index", "--format", "json").stdout)["stores"][0]
    assert after["dead"] == 0 and after["segments"] == 1 and after["stale"] == []
    assert sum(after["rows"].values()) == sum(before["rows"].values())
    assert {p.name: p.stat().st_mtime_ns for p in snaps} == files  # (the store only read)
    assert _results(tree) == want == _one_segment_results(tree)
    r = run("--root", tree, "index", "--compact", "--format", "json")
    assert r.exit_code == 0 and json.loads(r.stdout)["stores"][0]["compacted"] == {"segments": 0, "superseded_rows": 0}
    from tests.cli.test_json_schema import SCHEMAS, _check

    _check(json.loads(r.stdout), SCHEMAS["index"])


def test_index_compact_with_rebuild_is_a_usage_error(tree, run):
    r = run("--root", tree, "index", "--compact", "--rebuild")
    assert r.exit_code == 2 and "give --compact or --rebuild, not both" in r.stderr
    assert not ix.index_dir(open_store(str(tree))).exists()


def _index_files(d) -> dict:
    return {p.name: p.read_bytes() for p in d.iterdir() if p.name != "lock"}


def _small_cap_index(tree, monkeypatch):
    """(the index folder, its files) of ``tree`` indexed in segments of ``CAP``."""
    monkeypatch.setattr(ixupdate, "SEGMENT_BYTES", CAP)
    monkeypatch.setattr(ixrows, "CHUNK_SOURCES", 1)
    store = open_store(str(tree))
    ix.refresh(store, [])
    d = ix.index_dir(store)
    return d, _index_files(d)


def test_a_build_that_fails_between_segments_leaves_the_index_as_it_was(tree, monkeypatch):
    d, before = _small_cap_index(tree, monkeypatch)
    conv = tree / ".mermaid" / "conversations"
    _change(sorted(conv.glob("*.json"))[:30])  # enough for several new segments
    real = ixupdate.SegmentWriter.finish
    calls = []

    def finish(self):
        calls.append(self.name)
        if len(calls) == 3:
            raise OSError(28, "No space left on device")
        return real(self)

    monkeypatch.setattr(ixupdate.SegmentWriter, "finish", finish)
    with pytest.raises(ix.BadIndex, match="No space left on device"):
        ix.refresh(open_store(str(tree)), [])
    assert len(calls) == 3
    assert _index_files(d) == before  # the two finished segments are gone again, the third's temp too


def test_a_refresh_that_reads_a_few_files_does_not_rewrite_the_big_segment(tree, monkeypatch):
    """A small segment of a few sessions decays as soon as one of them is saved again: it is
    rewritten alone; the big segment that holds the rest is left as it is."""
    _results(tree)
    (base,) = [s.name for s in ix.open_index(open_store(str(tree))).segments]
    conv = tree / ".mermaid" / "conversations"
    snaps = sorted(conv.glob("*.json"))
    for i in range(12):
        _change(snaps[i % 3 : i % 3 + 2], 1800 - i)  # two of three "active" sessions, again and again
        _results(tree, texts=("budget",))
        assert base in {s.name for s in ix.open_index(open_store(str(tree))).segments}
    assert _results(tree) == _one_segment_results(tree)


def test_a_rewrite_that_fails_leaves_the_index_as_it_was(tree, monkeypatch):
    d, before = _small_cap_index(tree, monkeypatch)
    conv = tree / ".mermaid" / "conversations"
    _change(sorted(conv.glob("*.json"))[::2])  # every other session: its segments decay
    real = ixupdate._rewrite

    def failing(*args):
        monkeypatch.setattr(ixupdate.SegmentWriter, "finish", lambda self: (_ for _ in ()).throw(OSError(28, "full")))
        return real(*args)

    monkeypatch.setattr(ixupdate, "_rewrite", failing)
    with pytest.raises(ix.BadIndex, match="full"):
        ix.refresh(open_store(str(tree)), [])
    assert _index_files(d) == before  # the refresh's new segments are gone again, the rewrite's temps too


def _conv_lengths_row_by_row(corpus):
    """Each conversation's length and whether it has an alive message, counted from its rows one by one."""
    lens, has = [0.0] * corpus.groups, [False] * corpus.groups
    for i, g in enumerate(corpus.group.tolist()):
        if g >= 0:
            lens[g] += float(corpus.length[i])
            has[g] = True
    return lens, has


def test_conversation_lengths_kept_per_segment_are_those_of_its_alive_rows(tree, monkeypatch):
    """BM25's conversation lengths come from each segment's c_len/c_msgs, less what the rows that died
    since held: row by row, the same."""
    from samctl.search.corpus import IndexCorpus

    monkeypatch.setattr(ixupdate, "SEGMENT_BYTES", CAP)
    monkeypatch.setattr(ixrows, "CHUNK_SOURCES", 1)
    monkeypatch.setattr(ixupdate, "DEAD_FRACTION", 1.0)  # (segments with dead rows stay as they are)
    monkeypatch.setattr(ixupdate, "MAX_SEGMENTS", 1000)
    _results(tree)
    for round_ in range(2):
        store = open_store(str(tree))
        idx = ix.open_index(store)
        corpus = IndexCorpus([(store, idx)])
        lens, has = corpus.lengths("conv")
        assert (lens.tolist(), has.tolist()) == _conv_lengths_row_by_row(corpus)
        whole = [s.dead_rows is None for s in idx.segments]
        if round_ == 0:
            assert all(whole) and len(whole) >= 4
            # a few sessions saved again: their old rows die in their segments (kept: not rewritten)
            conv = tree / ".mermaid" / "conversations"
            _change(sorted(conv.glob("*.json"))[:2])
            _results(tree)
        else:
            assert not all(whole)  # (both ways were compared)


def _conv_postings_by_bincount(corpus, term):
    """A term's conversations and summed counts, by the definition: a bincount over every conversation."""
    np = corpus.np
    rows, tfs = corpus.postings("text", term)
    g = corpus.group[rows]
    tf = np.bincount(g[g >= 0], weights=tfs[g >= 0], minlength=corpus.groups)
    keys = np.flatnonzero(tf)
    return keys.tolist(), tf[keys].tolist()


@pytest.mark.parametrize("order", ["as built", "groups renumbered out of row order"])
def test_conversation_postings_are_the_bincount_of_their_rows(tree, monkeypatch, order):
    """``IndexCorpus._conv`` sums runs of one conversation (groups are numbered in row order), with dead
    rows among them; with groups out of row order it counts them all, as the definition does."""
    from samctl.search.corpus import IndexCorpus

    monkeypatch.setattr(ixupdate, "SEGMENT_BYTES", CAP)
    monkeypatch.setattr(ixrows, "CHUNK_SOURCES", 1)
    monkeypatch.setattr(ixupdate, "DEAD_FRACTION", 1.0)
    _results(tree)
    _change(sorted((tree / ".mermaid" / "conversations").glob("*.json"))[:3])
    _results(tree)
    store = open_store(str(tree))
    idx = ix.open_index(store)
    assert any(s.dead_rows is not None for s in idx.segments)
    corpus = IndexCorpus([(store, idx)])
    if order != "as built":
        np = corpus.np
        perm = np.random.default_rng(5).permutation(corpus.groups).astype(corpus.group.dtype)
        corpus.group = np.where(corpus.group >= 0, perm[corpus.group], -1).astype(corpus.group.dtype)
    checked = 0
    for term in ("budget", "the", "quokka", "deadline", "portland", "zzznothing"):
        want = _conv_postings_by_bincount(corpus, term)
        keys, tfs = corpus.postings("conv", term)
        assert (keys.tolist(), tfs.tolist()) == want and keys.dtype == corpus.np.int64
        checked += len(want[0])
    assert checked > 50


@pytest.mark.parametrize("dense", [0, 1 << 30], ids=["through the map", "records read"])
def test_dates_of_some_rows_are_those_of_every_rows_dates(tree, monkeypatch, dense):
    """``IndexCorpus.dates_at`` reads a few rows' dates from their segments: the same values (NaN where
    a row has none) as the whole joined array gives, at the edges of every segment too, whether it
    gathers them through the segment's map or reads the records of their stretch (many rows); asked by
    a second search over the same arrays, it answers from every row's dates, read once and kept."""
    from samctl.search import corpus as corpus_module
    from samctl.search.corpus import IndexCorpus
    from samctl.search.index import segment as segment_module
    from samctl.search.index.segment import Segment

    monkeypatch.setattr(segment_module, "DENSE", dense)
    reads: list = []
    real_read = Segment.read
    monkeypatch.setattr(Segment, "read", lambda self, name, a, b: reads.append(name) or real_read(self, name, a, b))

    monkeypatch.setattr(ixupdate, "SEGMENT_BYTES", CAP)
    monkeypatch.setattr(ixrows, "CHUNK_SOURCES", 1)
    _results(tree)
    store = open_store(str(tree))
    corpus = IndexCorpus([(store, ix.open_index(store))])
    np = corpus.np
    assert len(corpus.parts) >= 4
    edges = [p.start for p in corpus.parts] + [p.start + p.seg.rows - 1 for p in corpus.parts]
    picks = np.random.default_rng(3).choice(corpus.size, 40, replace=False)
    every = np.concatenate([p.seg.a["meta"]["date"] for p in corpus.parts])
    assert not np.isnan(every).all()
    for rows in (np.unique(np.r_[edges, picks]), np.arange(corpus.size), np.zeros(0, np.int64)):
        rows = rows.astype(np.int64)
        corpus_module._STATIC.clear()  # (a first call over these arrays)
        reads.clear()
        first = IndexCorpus([(store, ix.open_index(store))])
        assert np.array_equal(first.dates_at(rows), every[rows], equal_nan=True)
        assert np.array_equal(first.dates_at(rows[::2]), every[rows[::2]], equal_nan=True)  # (one search, twice)
        assert ("meta" in reads) == (bool(dense) and len(rows) > 0) and "dates" not in first.memo
    again = IndexCorpus([(store, ix.open_index(store))])
    assert "dates" not in again.memo
    reads.clear()
    assert np.array_equal(again.dates_at(picks[:5].astype(np.int64)), every[picks[:5]], equal_nan=True)
    assert "dates" in again.memo and reads == ["meta"] * len(again.parts)
    assert np.array_equal(again.dates_at(np.sort(picks).astype(np.int64)), every[np.sort(picks)], equal_nan=True)


PRUNE_QUERIES = (
    "budget",
    "quokka",
    "zanzibar deadline",
    "quokka marzipan budget",
    "budg*",
    "+budget portland",
    "budget -portland",
    '"budget deadline"',
    "role:user quokka",
    "the",
    "what is the budget",
    "budget march 2026",
    "nonexistentword",
    "zanz* -quokka",
)


def _ranked(stores, text, prune: bool):
    """The ranked results of ``text`` over ``stores`` (a list: one corpus), every part of every score,
    with the segments that hold none of its terms left out (``prune``) or not."""
    from samctl.search import corpus as corpus_mod
    from samctl.search.query import parse

    with pytest.MonkeyPatch.context() as mp:
        if not prune:
            real = corpus_mod.IndexCorpus.__init__
            mp.setattr(corpus_mod.IndexCorpus, "__init__", lambda self, indexes, terms=None: real(self, indexes))
        left_out = []
        real_init = corpus_mod.IndexCorpus.__init__

        def init(self, indexes, terms=None):
            real_init(self, indexes, terms)
            left_out.append(len(self._left_out))

        mp.setattr(corpus_mod.IndexCorpus, "__init__", init)
        q = sx.SearchQuery(text=text, limit=50)
        hits = sx.search(stores, q, [], plan=parse(text, stores=("mermaid", "sam")))
    return [(h.kind, h.conversation_id, h.ref, h.position, h.score, sorted(h.parts.items())) for h in hits], left_out


def test_segments_without_the_query_terms_are_left_out_and_rank_the_same(tree, monkeypatch):
    """A segment that holds none of the ranked terms is left out of the rows, its statistics still counted:
    every result, score and part of a score is the same, bit for bit, in segments with dead rows too, and
    over two stores searched together (a store the words are not in costs no pass over its rows)."""
    from fixtures import make_fixtures

    monkeypatch.setattr(ixupdate, "SEGMENT_BYTES", CAP)
    monkeypatch.setattr(ixrows, "CHUNK_SOURCES", 1)
    monkeypatch.setattr(ixupdate, "DEAD_FRACTION", 1.0)
    monkeypatch.setattr(ixupdate, "MAX_SEGMENTS", 1000)
    _results(tree)
    conv = tree / ".mermaid" / "conversations"
    _change(sorted(conv.glob("*.json"))[:3])  # (dead rows in their segments)
    _results(tree)
    sam = tree.parent / "SAM"
    make_fixtures.build_demo_sam(sam)
    age(sam)
    pruned_somewhere = False
    for stores in ([open_store(str(tree))], [open_store(str(tree)), open_store(str(sam))]):
        for text in PRUNE_QUERIES:
            want, _ = _ranked(stores, text, prune=False)
            got, left_out = _ranked(stores, text, prune=True)
            assert got == want, text
            pruned_somewhere |= any(left_out)
            if text == "nonexistentword":
                assert want == []
    assert pruned_somewhere
