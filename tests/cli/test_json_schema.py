"""Every command's JSON against the schema written in docs/json.md, on every store's fixtures (fixtures/demo)
and on a home with all six stores: the same schema with one store or several (issue #33)."""

from __future__ import annotations

import json
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
    return {name: json.loads(body) for name, body in re.findall(r"```json (\w+)\n(.*?)```", text, re.S)}


SCHEMAS = _schemas()


def _check(value, schema, where="$") -> None:
    """A small JSON Schema subset: type, required, properties, items, $ref to another block."""
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
        for key, sub in schema.get("properties", {}).items():
            if key in value:
                _check(value[key], sub, f"{where}.{key}")
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
