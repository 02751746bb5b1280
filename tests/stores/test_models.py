"""The model of a conversation is declared by its store's decoder into the listing (``ConversationMeta.model``),
the same one ``show`` gives: ``stats --by model`` groups by it for every store that records one (issue #35)."""

from __future__ import annotations

import json
import shutil
from collections import Counter
from pathlib import Path

import pytest

from tests.conftest import fingerprint

DEMO = Path(__file__).resolve().parents[2] / "fixtures" / "demo"

# the models each demo store records (SAM: settings.selectedModel; ChatGPT: the current branch's last
# model_slug, else default_model_slug; Claude Code: the last assistant message.model; Codex: the last
# turn_context model; llm: the conversation's model column, else its responses' or its thread's turns').
# Not mermaid: its listing reads the .meta sidecars, which name no model (the snapshot's model_name is
# show's); reading every snapshot to list would undo mermaid's fast listing.
EXPECTED = {
    "SAM": {"github_copilot/gpt-4.1": 3},
    "chatgpt/chatgpt-export.zip": {"gpt-4o": 1, "o3": 1, "(unknown)": 1},
    "claude_code": {"claude-sonnet-4-5-20250929": 2},
    "codex": {"gpt-5.1-codex": 1, "(unknown)": 5},
    "llm": {"gpt-5.5": 2, "claude-3.5-haiku": 1, "gpt-4.1-mini": 1, "gpt-4o-mini": 1, "gpt-3.5-turbo": 1},
}


@pytest.mark.parametrize("store", sorted(EXPECTED))
def test_stats_by_model_is_the_model_show_gives(run, tmp_path, store):
    root = tmp_path / "demo"
    shutil.copytree(DEMO, root, symlinks=True)
    before = fingerprint(root)
    where = root / store
    r = run("--root", where, "stats", "--by", "model", "--format", "json")
    assert r.exit_code == 0, r.stderr
    groups = {g["key"]: g["conversations"] for g in json.loads(r.stdout)["groups"]}
    assert groups == EXPECTED[store]
    rows = [json.loads(x) for x in run("--root", where, "ls", "--format", "jsonl").stdout.splitlines()]
    shown = Counter(
        json.loads(run("--root", where, "show", x["id"], "--format", "json").stdout)["model"] or "(unknown)"
        for x in rows
    )
    assert dict(shown) == groups
    again = run("--root", where, "stats", "--by", "model", "--format", "json")  # from the listing cache
    assert {g["key"]: g["conversations"] for g in json.loads(again.stdout)["groups"]} == groups
    assert fingerprint(root) == before
