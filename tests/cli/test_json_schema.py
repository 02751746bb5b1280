"""Every command's JSON against the schema written in docs/json.md, on every store's fixtures (fixtures/demo)
and on a home with all six stores: the same schema with one store or several (issue #33)."""

from __future__ import annotations

import json
import os
import re
import shutil

import pytest

from tests.cli.test_cross_store import machine  # noqa: F401 - the fixture: a home with every store
from tests.conftest import REPO

DEMO = REPO / "fixtures" / "demo"
STORES = {
    "sam": "SAM",
    "mermaid": "mermaid-project",
    "claude-code": "claude_code",
    "codex": "codex",
    "llm": "llm/logs.db",
    "chatgpt": "chatgpt/chatgpt-export.zip",
}
TYPES = {
    "string": str,
    "integer": int,
    "number": (int, float),
    "boolean": bool,
    "array": list,
    "object": dict,
    "null": type(None),
}


def _schemas() -> dict:
    text = (REPO / "docs" / "json.md").read_text()
    return {name: json.loads(body) for name, body in re.findall(r"```json ([\w-]+)\n(.*?)```", text, re.S)}


SCHEMAS = _schemas()


def _check(value, schema, where="$") -> None:
    """A small JSON Schema subset: type, required, properties, additionalProperties, items, $ref to another
    block."""
    if "$ref" in schema:
        return _check(value, SCHEMAS[schema["$ref"]], where)
    kinds = schema.get("type")
    if kinds:
        kinds = [kinds] if isinstance(kinds, str) else kinds
        ok = any(
            isinstance(value, TYPES[k]) and not (k in ("integer", "number") and isinstance(value, bool)) for k in kinds
        )
        assert ok, f"{where}: {value!r} is not {kinds}"
    if isinstance(value, dict):
        for key in schema.get("required", ()):
            assert key in value, f"{where}: {key} missing"
        props = schema.get("properties", {})
        for key, sub in props.items():
            if key in value:
                _check(value[key], sub, f"{where}.{key}")
        more = schema.get("additionalProperties", True)
        for key in value.keys() - props.keys():
            assert more is not False, f"{where}: {key} is not in docs/json.md"
            if isinstance(more, dict):
                _check(value[key], more, f"{where}.{key}")
    if isinstance(value, list) and "items" in schema:
        for i, item in enumerate(value):
            _check(item, schema["items"], f"{where}[{i}]")


def _copy(tmp_path, kind: str):
    src = DEMO / STORES[kind]
    dst = tmp_path / STORES[kind]
    dst.parent.mkdir(parents=True, exist_ok=True)
    (shutil.copytree if src.is_dir() else shutil.copy)(src, dst)
    return dst


def _json(run, *args, codes=(0, 3)):
    r = run(*args, "--format", "json")
    assert r.exit_code in codes, (args, r.stderr)
    return json.loads(r.stdout)


@pytest.mark.parametrize("kind", sorted(STORES))
def test_every_commands_json_on_each_store(run, tmp_path, kind):
    root = _copy(tmp_path, kind)
    listed = _json(run, "--root", root, "ls")
    _check(listed, SCHEMAS["ls"])
    assert listed and all(r["store"] == kind for r in listed)
    _check(_json(run, "--root", root, "show", listed[0]["id"]), SCHEMAS["show"])
    hits = _json(run, "--root", root, "search", "the", codes=(0, 1, 3))
    _check(hits, SCHEMAS["search"])
    if kind != "sam":  # (store-specific fields only where the store has them)
        assert not any(k in h for h in hits for k in ("cosine", "boost", "dimension", "content_type")), hits[:1]
    _check(_json(run, "--root", root, "check"), SCHEMAS["check"])
    _check(_json(run, "--root", root, "stores"), SCHEMAS["stores"])
    if kind in ("sam", "mermaid", "claude-code", "codex"):  # (the stores with an attic)
        _check(_json(run, "--root", root, "attic"), SCHEMAS["attic"])


def test_the_same_schemas_over_every_store(run, machine):  # noqa: F811
    _check(_json(run, "ls"), SCHEMAS["ls"])
    _check(_json(run, "search", "the"), SCHEMAS["search"])
    _check(_json(run, "check"), SCHEMAS["check"])
    fixed = _json(run, "--all-stores", "check", "--fix")
    _check(fixed, SCHEMAS["check"])
    assert sorted(s["store"] for s in fixed["skipped"]) == ["chatgpt", "claude-code", "codex", "llm"]
    attic = _json(run, "attic")
    _check(attic, SCHEMAS["attic"])
    assert sorted(s["store"] for s in attic["skipped"]) == ["chatgpt", "llm"]
    _check(_json(run, "stores"), SCHEMAS["stores"])


def _jsonl(run, *args, codes=(0, 3)):
    r = run(*args, "--format", "jsonl")
    assert r.exit_code in codes, (args, r.stderr)
    return [json.loads(line) for line in r.stdout.splitlines()]


MOVES = ("sam", "mermaid", "claude-code", "codex")  # (the stores samctl moves to and from its attic)


@pytest.mark.parametrize("kind", sorted(STORES))
def test_the_other_commands_json_on_each_store(run, tmp_path, kind, monkeypatch):
    """stats, export, index, usage, resume, log, recover, rm, archive, restore and compact on one store: the
    schema of docs/json.md, and the same document as over several stores (one store is a list of one)."""
    root = _copy(tmp_path, kind)
    old = 1_700_000_000  # (idle sessions: a file just copied counts as in use for the apps that write them)
    for path in [root, *root.rglob("*")] if root.is_dir() else [root]:
        os.utime(path, (old, old), follow_symlinks=False)
    listed = _json(run, "--root", root, "ls")
    cid = listed[-1]["id"]
    stats = _json(run, "--root", root, "stats")
    _check(stats, SCHEMAS["stats"])
    assert [s["store"] for s in stats["stores"]] == [kind]
    _check(_json(run, "--root", root, "stats", "--by", "month"), SCHEMAS["stats"])
    _check(json.loads(run("--root", root, "export", cid, "--to", "json").stdout), SCHEMAS["export"])
    many = json.loads(run("--root", root, "export", "--all", "--to", "json").stdout)
    _check(many, SCHEMAS["export-many"])
    assert len(many) == len(listed)
    rows = [json.loads(ln) for ln in run("--root", root, "export", cid, "--to", "jsonl").stdout.splitlines()]
    assert rows
    for row in rows:
        _check(row, SCHEMAS["export-jsonl"])
    index = run("--root", root, "index", "--update", "--format", "json")
    if index.exit_code == 2:  # (a store read whole by each search keeps no index: said, nothing printed)
        assert "keeps none for this store" in index.stderr and not index.stdout
    else:
        assert index.exit_code in (0, 3), index.stderr
        doc = json.loads(index.stdout)
        _check(doc, SCHEMAS["index"])
        assert [s["store"] for s in doc["stores"]] == [kind] and doc["stores"][0]["exists"]
    usage = run("--root", root, "usage", "--by", "session", "--breakdown", "--format", "json")
    if usage.exit_code in (0, 3):
        _check(json.loads(usage.stdout), SCHEMAS["usage"])
        for row in _jsonl(run, "--root", root, "usage"):
            _check(row, SCHEMAS["usage-row"])
    else:
        assert usage.exit_code == 2 and not usage.stdout, usage.stderr
    resume = run("--root", root, "resume", cid, "--format", "json")
    if resume.exit_code == 0:
        _check(json.loads(resume.stdout), SCHEMAS["resume"])
    else:
        assert resume.exit_code == 2 and not resume.stdout, resume.stderr
    log = run("--root", root, "log", cid, "--format", "json")
    if log.exit_code in (0, 3) and log.stdout:
        _check(json.loads(log.stdout), SCHEMAS["log"])
        for row in _jsonl(run, "--root", root, "log", cid):
            _check(row, SCHEMAS["log-event"])
    else:
        assert log.exit_code == 2 and not log.stdout, log.stderr
    recover = run("--root", root, "recover", cid, "--dry-run", "--format", "json")
    if recover.exit_code in (0, 3):
        doc = json.loads(recover.stdout)
        _check(doc, SCHEMAS["recover"])
        assert doc["store"] == kind
    else:
        assert recover.exit_code == 2 and not recover.stdout, recover.stderr
    if kind not in MOVES:
        return
    for args in (["rm", cid, "--dry-run"], ["archive", "--copy", cid], ["rm", cid, "--yes"], ["restore", cid]):
        doc = _json(run, "--root", root, *args)
        _check(doc, SCHEMAS["report"])
        assert doc["items"] and {it["store"] for it in doc["items"]} == {kind} and doc["skipped"] == [], args
    compact = _json(run, "--root", root, "compact", "--grace", "0s")
    _check(compact, SCHEMAS["compact"])
    assert [s["store"] for s in compact["stores"]] == [kind] and compact["skipped"] == []


def test_the_other_commands_json_over_every_store(run, machine):  # noqa: F811
    stats = _json(run, "stats", "--by", "store")
    _check(stats, SCHEMAS["stats"])
    assert len(stats["stores"]) == 6
    _check(json.loads(run("export", "--all", "--to", "json").stdout), SCHEMAS["export-many"])
    index = _json(run, "index", "--update")
    _check(index, SCHEMAS["index"])
    assert sorted(s["store"] for s in index["skipped"]) == ["chatgpt"]  # (read whole by each search)
    _check(_json(run, "usage", "--by", "model"), SCHEMAS["usage"])
    _check(_json(run, "resume", "0b7c"), SCHEMAS["resume"])
    _check(_json(run, "log", "20260810_1403"), SCHEMAS["log"])
    _check(_json(run, "recover", "20260810_1403", "--dry-run"), SCHEMAS["recover"])
    # skipped: the stores a filter, or restore's look in the attics, leaves out; ids are looked up everywhere
    for args, skipped in (
        (["rm", "--older-than", "20d", "--all-stores", "--dry-run"], ["chatgpt", "llm"]),
        (["archive", "--copy", "--older-than", "20d", "--all-stores"], ["chatgpt", "llm"]),
        (["rm", "0b7c", "8B58", "--yes"], []),
        (["restore", "0b7c", "8B58"], ["chatgpt", "llm"]),
    ):
        doc = _json(run, *args)
        _check(doc, SCHEMAS["report"])
        assert sorted(it["store"] for it in doc["items"]) == ["claude-code", "sam"] or "--older-than" in args, args
        assert doc["items"] and sorted(s["store"] for s in doc["skipped"]) == skipped, args
    compact = _json(run, "compact", "--all-stores", "--dry-run")
    _check(compact, SCHEMAS["compact"])
    assert sorted(s["store"] for s in compact["stores"]) == ["claude-code", "codex", "mermaid", "sam"]
    assert sorted(s["store"] for s in compact["skipped"]) == ["chatgpt", "llm"]
