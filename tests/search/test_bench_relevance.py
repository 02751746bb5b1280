"""bench_relevance.py on a tiny made-up file in LoCoMo's format: real archives, read back, searched."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from bench import bench_relevance as br  # noqa: E402

TINY = {
    "speaker_a": "Ann",
    "speaker_b": "Bob",
    "session_1_date_time": "1:56 pm on 8 May, 2023",
    "session_1": [
        {"speaker": "Ann", "dia_id": "D1:1", "text": "Hi Bob! I adopted a puppy yesterday."},
        {"speaker": "Bob", "dia_id": "D1:2", "text": "Wow Ann, what is its name?"},
        {"speaker": "Ann", "dia_id": "D1:3", "text": "Biscuit!", "blip_caption": "a photo of a dog"},
    ],
    "session_2_date_time": "10:00 am on 2 July, 2023",
    "session_2": [
        {"speaker": "Bob", "dia_id": "D2:1", "text": "I went hiking in the Alps."},
        {"speaker": "Ann", "dia_id": "D2:2", "text": "Sounds lovely, Bob."},
    ],
    "session_3_date_time": "10:00 am on 3 July, 2023",
    "qa": [
        {"question": "What is the name of Ann's puppy?", "answer": "Biscuit", "evidence": ["D1:3"], "category": 4},
        {"question": "Where did Bob hike?", "answer": "Alps", "evidence": ["D2:1", "D:11:26"], "category": 1},
        {"question": "Unanswerable?", "evidence": ["D1:1"], "category": 5},
        {"question": "Malformed only", "evidence": ["D8:6; D9:17"], "category": 2},
    ],
}


@pytest.fixture
def tiny(tmp_path):
    f = tmp_path / "data" / "conv-x.json"
    f.parent.mkdir()
    f.write_text(json.dumps(TINY))
    return f


def test_reads_questions_as_the_eval_readme_says(tiny):
    conv = br.read_locomo(tiny)
    assert [len(t) for _, t in conv["sessions"]] == [3, 2]  # session_3 has a date but no turns
    assert conv["sessions"][0][1][2][1] == "Biscuit! [shares a photo of a dog]"
    assert [(q, ev) for q, ev, _ in conv["questions"]] == [
        ("What is the name of Ann's puppy?", {"D1:3"}),
        ("Where did Bob hike?", {"D2:1"}),
    ]


@pytest.mark.parametrize("store", ["sam", "mermaid"])
def test_archives_are_real_trees_samctl_reads(tiny, tmp_path, store, monkeypatch):
    from click.testing import CliRunner

    from samctl.cli import cli

    monkeypatch.setenv("SAMCTL_CACHE_DIR", str(tmp_path / "cache"))
    conv = br.read_locomo(tiny)
    root = tmp_path / store
    if store == "sam":
        root = root / "SAM"
        where = br.write_sam(root, conv)
    else:
        where = br.write_mermaid(root, conv)
    r = CliRunner().invoke(cli, ["--root", str(root), "check"])
    assert r.exit_code == 0, r.output
    corpus, dias = br.read_back(root, where)
    assert dias == ["D1:1", "D1:2", "D1:3", "D2:1", "D2:2"]
    from samctl.search import bm25

    assert dias[bm25.top_k(bm25.score(corpus, "Where did he hike in the Alps?"), 1)[0]] == "D2:1"
    found = br.today(root, "hiking Alps", where, CliRunner(), cli)
    assert found and found[0] == "D2:1"


def test_main_prints_every_retriever(tiny, capsys):
    assert br.main(["--data", str(tiny.parent), "--no-loo"]) == 0
    out = capsys.readouterr().out
    for label in (
        "samctl search (the CLI: default ranking",
        "plain BM25",
        "new ranking",
        "ablation",
        "without addressee",
    ):
        assert label in out
