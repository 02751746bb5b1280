"""Conversations, not only messages (issue 34): a message stored in several copies of a resumed Claude Code
session is one hit, from the newest copy; no hit twice, ever; search -l prints one line per conversation;
the default output shows at most --per-conversation hits of one conversation in a row."""

from __future__ import annotations

import itertools
import json
import shutil
from pathlib import Path

import pytest

from samctl.search.grouped import interleave
from tests.conftest import fingerprint

REPO = Path(__file__).resolve().parents[2]
S1 = "0b7c9d2e-3f41-4a6b-8c9d-0e1f2a3b4c5d"
COPIES = 12


def _resumed(tmp_path) -> tuple[Path, list[str]]:
    """The demo Claude Code store plus COPIES resumed sessions: each a new file holding the first session's
    lines (same uuids), then one line of its own, each copy later than the one before."""
    root = tmp_path / "claude"
    shutil.copytree(REPO / "fixtures" / "demo" / "claude_code", root, symlinks=True)
    proj = root / "projects" / "-home-ana-api"
    lines = (proj / f"{S1}.jsonl").read_text().splitlines()
    last = json.loads([x for x in lines if '"uuid"' in x][-1])
    ids = []
    for i in range(COPIES):
        sid = f"{i + 1:08x}-1111-4111-8111-{i + 1:012x}"
        own = {
            "type": "user",
            "uuid": f"{i + 1:08x}-2222-4222-8222-{i + 1:012x}",
            "parentUuid": last["uuid"],
            "isSidechain": False,
            "userType": "external",
            "sessionId": sid,
            "cwd": "/home/ana/api",
            "timestamp": f"2026-04-{i + 1:02d}T10:00:00.000Z",
            "version": "2.1.51",
            "message": {"role": "user", "content": f"resumed once more, copy {i + 1}"},
        }
        (proj / f"{sid}.jsonl").write_text("\n".join(lines + [json.dumps(own)]) + "\n")
        ids.append(sid)
    return root, ids


def _copied_uuids(root: Path) -> set:
    """The uuids of the lines every copy holds (the first session's own; its sub-agents' are only there)."""
    text = (root / "projects" / "-home-ana-api" / f"{S1}.jsonl").read_text()
    return {json.loads(x)["uuid"] for x in text.splitlines() if '"uuid"' in x}


def _search(run, root, *args):
    r = run("--root", root, "search", "--format", "json", *args)
    assert r.exit_code == 0, (r.exit_code, r.stderr)
    return json.loads(r.stdout)


@pytest.fixture(params=[16, 0], ids=["dates-one-by-one", "dates-of-a-whole-segment"])
def few(request, monkeypatch):
    """Both ways ``Copies.newest`` finds the copies' conversation dates."""
    from samctl.search import grouped

    monkeypatch.setattr(grouped, "FEW_CONVERSATIONS", request.param)


@pytest.mark.parametrize("n", ["6", "100"])
def test_a_message_in_many_copies_is_one_hit_from_the_newest(run, tmp_path, n, few):
    root, ids = _resumed(tmp_path)
    before = fingerprint(root)
    for query in ("login", "timeout test", "mail server fixture"):
        got = _search(run, root, query, "-n", n)
        keys = [(h["kind"], h["id"]) for h in got]
        assert got and len(keys) == len(set(keys)), query  # no hit twice
        # every hit of the copied session comes from its newest copy
        copied = [h for h in got if h["id"] in _copied_uuids(root)]
        assert copied and {h["conversation_id"] for h in copied} == {ids[-1]}, query
        assert all(h["id"] for h in copied)
    # the same with --exact and --rank sam: one hit per message, from the newest copy, and -n hits
    whole = {"--exact": None, "--rank": None}
    for extra in (["--exact"], ["--rank", "sam", "--threshold", "0"]):
        every = _search(run, root, "login", "-n", "1000", *extra)
        whole[extra[0]] = len({(h["kind"], h["id"] or (h["conversation_id"], h["position"])) for h in every})
        got = _search(run, root, "login", "-n", n, *extra)
        keys = [(h["kind"], h["id"] or (h["conversation_id"], h["position"])) for h in got]
        assert got and len(keys) == len(set(keys)) == min(int(n), whole[extra[0]]), extra
        copied = [h for h in got if h["id"] in _copied_uuids(root)]
        assert copied and {h["conversation_id"] for h in copied} == {ids[-1]}, extra
    assert fingerprint(root) == before


def test_copies_as_new_as_each_other_give_the_greatest_conversation_id(run, tmp_path, few):
    """Copies whose conversations end at the same time: the hit comes from the greatest conversation id,
    whatever order the files were written and indexed in (here the greatest is written first)."""
    root = tmp_path / "claude"
    shutil.copytree(REPO / "fixtures" / "demo" / "claude_code", root, symlinks=True)
    proj = root / "projects" / "-home-ana-api"
    text = (proj / f"{S1}.jsonl").read_text()
    ids = [f"{k:08x}-1111-4111-8111-{k:012x}" for k in (0xFE, 0x03, 0x7A, 0x10)]
    for sid in ids:
        (proj / f"{sid}.jsonl").write_text(text.replace(S1, sid))
    for query in ("login", "timeout test"):
        got = _search(run, root, query, "-n", "20")
        copied = [h for h in got if h["id"] in _copied_uuids(root)]
        assert copied and {h["conversation_id"] for h in copied} == {max(ids + [S1])}, query
        assert len({(h["kind"], h["id"]) for h in got}) == len(got)


def test_copy_keys_match_the_keys_of_one_row_at_a_time(tmp_path, monkeypatch):
    """``Copies.ids`` gives two rows the same key exactly when ``_where`` gives them the same key (in any
    order, in runs split anywhere), after a rewrite of the index's segments too, and the key stored for a
    row is ``copy_key`` of its fields; two stores' rows never share one."""
    import numpy as np

    from samctl.search import index as ix
    from samctl.search.corpus import IndexCorpus
    from samctl.search.grouped import Copies
    from samctl.search.index import update as ixupdate
    from samctl.search.index.format import copy_key
    from samctl.stores import open_store

    root, ids = _resumed(tmp_path)
    store = open_store(str(root))
    for rewrite in (False, True):
        if rewrite:  # every segment rewritten from the rows of the last ones (the key travels with them)
            monkeypatch.setattr(ixupdate, "DEAD_FRACTION", 0.0)
            (root / "projects" / "-home-ana-api" / f"{ids[0]}.jsonl").unlink()
        corpus = IndexCorpus([(store, ix.refresh(store, []))])
        rows = np.arange(corpus.size, dtype=np.int64)
        keys = [Copies(corpus)._where(r)[0] for r in rows.tolist()]
        assert len(set(keys)) < len(keys)  # (copies share keys)
        order = np.random.default_rng(5).permutation(rows)
        for runs in (7, len(order) // 3):
            gate = Copies(corpus)
            got = np.concatenate([gate.ids(part) for part in np.array_split(order, runs)])
            number = dict(zip(order.tolist(), got.tolist()))
            for r, s in zip(rows.tolist(), np.random.default_rng(6).permutation(rows).tolist()):
                assert (number[r] == number[s]) == (keys[r] == keys[s])
        for p in corpus.parts:
            seg = p.seg
            for i in range(seg.rows):
                m = seg.a["meta"][i]
                conv, text = seg.convs[int(m["conv"])], seg.text(i).encode()
                want = copy_key(int(m["kind"]), conv, int(m["pos"]), seg.ref(i).encode(), text)
                assert int(seg.r_copy[i]) == int(m["copy"]) == want
    other = IndexCorpus([(store, ix.refresh(store, [])), (open_store(str(root)), ix.refresh(store, []))])
    other.parts[len(other.parts) // 2].store.name = "another"
    half = other.size // 2
    both = Copies(other).ids(np.arange(other.size, dtype=np.int64))
    assert not set(both[:half].tolist()) & set(both[half:].tolist())


def test_conversations_one_line_each(run, tmp_path):
    root, ids = _resumed(tmp_path)
    got = _search(run, root, "login", "-l", "-n", "50")
    convs = [h["conversation_id"] for h in got]
    assert len(convs) == len(set(convs))
    assert got[0]["conversation_id"] == ids[-1] and got[0]["conversation_hits"] > 1
    every = _search(run, root, "login", "-n", "1000", "--per-conversation", "0")
    assert got[0]["conversation_hits"] == sum(h["conversation_id"] == ids[-1] for h in every) or got[0][
        "conversation_hits"
    ] >= sum(h["conversation_id"] == ids[-1] for h in every)
    r = run("--root", root, "search", "login", "-l")
    lines = r.stdout.splitlines()
    assert r.exit_code == 0 and lines[0].split()[:3] == ["SCORE", "HITS", "CONVERSATION"]
    assert len(lines) == 1 + len(_search(run, root, "login", "-l", "-n", "10"))
    assert ids[-1] in lines[1] and "login timeout" in lines[1]


def test_default_output_gives_the_next_conversation_its_turn(run, tmp_path):
    root, _ = _resumed(tmp_path)

    def longest_run(hits):
        return max(len(list(g)) for _, g in itertools.groupby(h["conversation_id"] for h in hits))

    got = _search(run, root, "login", "-n", "8")
    flat = _search(run, root, "login", "-n", "8", "--per-conversation", "0")
    assert [h["score"] for h in flat] == sorted((h["score"] for h in flat), reverse=True)
    assert longest_run(got) <= 3 and longest_run(flat) == 3  # (the newest copy holds the best hits)
    one = _search(run, root, "login", "-n", "8", "--per-conversation", "1")
    assert longest_run(one) == 1 and one[0] == flat[0] and one[1] != flat[1]
    assert len({(h["kind"], h["id"]) for h in one}) == len(one) == 8


class H:
    def __init__(self, conv, store="s"):
        self.conversation_id, self.store = conv, store


def test_interleave():
    hs = [H(c) for c in "aaaaabac"]
    assert "".join(h.conversation_id for h in interleave(hs, 3)) == "aaabaaac"
    assert "".join(h.conversation_id for h in interleave(hs, 0)) == "aaaaabac"
    assert "".join(h.conversation_id for h in interleave([H(c) for c in "aaaaa"], 2)) == "aaaaa"
    assert sorted(map(id, interleave(hs, 1))) == sorted(map(id, hs))


def test_only_rows_that_can_be_copies_are_looked_at(run, tmp_path, monkeypatch):
    """Looking for a hit's copies reads each candidate's id from the index: only rows with a hit's own score
    and date are candidates (many rows share an own score: the same words in a turn of the same length)."""
    from samctl.search import grouped
    from tests.search.test_project import _session

    root = tmp_path / "claude"
    _session(root, str(tmp_path / "work"), "0000000c-1111-4111-8111-000000000003", ["quokka said"] * 300)
    met = []
    real = grouped.Copies.meet
    monkeypatch.setattr(grouped.Copies, "meet", lambda self, rows, ids=None: met.extend(rows) or real(self, rows, ids))
    before = fingerprint(root)
    got = _search(run, root, "quokka", "-n", "5")
    assert len(got) == 5 and len({h["id"] for h in got}) == 5
    assert len(met) < 10, len(met)  # (every other row of the 300 shares the hits' own score, none a date)
    assert fingerprint(root) == before
