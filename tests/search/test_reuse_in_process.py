"""A process that searches again (browse, a bench) maps each segment once and reuses the per-row arrays
of a corpus; whatever changed since is read again, and the answers are those of a new process."""

from __future__ import annotations

import os
import time

import pytest

from bench import gen_archive as gen
from samctl.search import corpus as corpus_mod
from samctl.search import dispatch as sx
from samctl.search import index as ix
from samctl.search.index import opened
from samctl.stores import open_store
from tests.search_helpers import age


@pytest.fixture
def tree(tmp_path, monkeypatch):
    monkeypatch.setenv("SAMCTL_DEBUG", "1")
    gen.make_mermaid(tmp_path / "m", 30, seed=5, jobs=1, progress=False)
    age(tmp_path / "m")
    monkeypatch.setattr(opened, "_OPENED", {})
    monkeypatch.setattr(corpus_mod, "_STATIC", [])
    return tmp_path / "m"


def _hits(root, texts=("budget", "quokka deadline", "role:user portland", "title:portland", "title:summary budget")):
    out = []
    for text in texts:
        findings: list = []
        q = sx.SearchQuery(text=text, threshold=-10.0, limit=1000)
        out.append([(h.conversation_id, h.position, h.score) for h in sx.search(open_store(str(root)), q, findings)])
        assert findings == []
    return out


def _fresh(root):
    """The hits a new process would give: nothing kept from earlier searches."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(opened, "_OPENED", {})
        mp.setattr(corpus_mod, "_STATIC", [])
        return _hits(root)


def test_segments_are_mapped_once_and_each_open_has_its_own_alive_rows(tree):
    _hits(tree)
    a = ix.open_index(open_store(str(tree)))
    b = ix.open_index(open_store(str(tree)))
    assert a.segments and [s.a for s in a.segments] == [s.a for s in b.segments]
    assert all(x.a is y.a and x is not y for x, y in zip(a.segments, b.segments))
    with pytest.raises(ValueError):  # (the alive rows of a manifest are shared, never changed)
        a.segments[0].alive[:] = False
    a.segments[0].alive = a.segments[0].alive & False  # (what one open's rows are does not reach another's)
    assert b.segments[0].alive.all()


def test_a_manifest_written_in_place_is_checked_again(tree):
    _hits(tree)
    store = open_store(str(tree))
    path = ix.index_dir(store) / "manifest"
    raw = bytearray(path.read_bytes())
    raw[20] ^= 0xFF  # (in its head: the checksum no longer matches)
    path.write_bytes(bytes(raw))
    with pytest.raises(ix.BadIndex):
        ix.open_index(store)


def test_a_segment_written_in_place_is_checked_again(tree):
    """Same name and size, another header: the open fails as in a new process (the index is rebuilt)."""
    _hits(tree)
    store = open_store(str(tree))
    seg = ix.index_dir(store) / ix.open_index(store).segments[0].name
    raw = bytearray(seg.read_bytes())
    raw[-20] ^= 0xFF  # (in the trailer: the header's checksum)
    seg.write_bytes(bytes(raw))
    with pytest.raises(ix.BadIndex):
        ix.open_index(store)


def test_the_corpus_arrays_are_reused_only_for_the_same_alive_rows(tree):
    want = _hits(tree)
    assert all(want)  # (each query finds something: titles too)
    store = open_store(str(tree))
    pairs = [(store, ix.open_index(store))]
    first = corpus_mod.IndexCorpus(pairs)
    names = [s.name for s in pairs[0][1].segments]
    assert corpus_mod.IndexCorpus([(store, ix.open_index(store))]).live is first.live  # (reused)
    assert _hits(tree) == want
    # a third of the sessions saved again: their rows die, new ones are added
    conv = tree / ".mermaid" / "conversations"
    t = time.time() - 1800
    for p in sorted(conv.iterdir())[::3]:
        p.write_bytes(p.read_bytes())
        os.utime(p, (t, t))
    got = _hits(tree)
    now = ix.open_index(store).segments
    assert [s.name for s in now] != names or any(s.dead_rows is not None for s in now)
    assert corpus_mod.IndexCorpus([(store, ix.open_index(store))]).live is not first.live
    assert got == _fresh(tree) and [[(c, p) for c, p, _ in hits] for hits in got] == [
        [(c, p) for c, p, _ in hits] for hits in want
    ]


def test_a_row_dead_in_a_segment_kept_makes_new_arrays(tree):
    """The same segments with one more dead row (a refresh that only marks rows dead): not reused."""
    _hits(tree)
    store = open_store(str(tree))

    def corpus(dead):
        idx = ix.open_index(store)
        seg = idx.segments[0]
        seg.alive = seg.alive.copy()
        seg.alive[dead], seg.all_alive = False, False
        return corpus_mod.IndexCorpus([(store, idx)])

    first = corpus([0])
    assert corpus([0]).live is first.live
    again = corpus([0, 1])
    assert again.live is not first.live and not again.live[1] and first.live[1]
    assert again.length[1] == 0 and first.length[1] > 0


def test_searches_in_several_threads_at_once_give_the_answers_of_one(tree):
    """What a process keeps is shared by its threads: searches running at once each give the hits a
    search alone gives (and none fails: a failure would be taken for a broken index)."""
    from concurrent.futures import ThreadPoolExecutor

    want = _fresh(tree)
    with ThreadPoolExecutor(4) as pool:
        got = list(pool.map(lambda _: _hits(tree), range(8)))
    assert all(g == want for g in got)
