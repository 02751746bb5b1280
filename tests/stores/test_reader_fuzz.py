"""Whatever bytes sit where a snapshot, sidecar or conversation.json should be,
every read-only command answers with findings and exit 0/3: never a
traceback, never a changed byte."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from samctl.cli import cli
from tests.conftest import fingerprint, make_fixtures

SPEC = Path(__file__).resolve().parents[2] / "fixtures" / "spec"
MERMAID_SNAPSHOT = (SPEC / "20260810_140307_512.json").read_bytes()
MERMAID_META = (SPEC / "20260810_140307_512.meta").read_bytes()
SAM_DOC = (SPEC / "sam_8B58CBC4-ACA7-4811-AE66-C01921690310.json").read_bytes()

json_leaf = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False),
    st.text(max_size=30),
)
json_value = st.recursive(
    json_leaf, lambda c: st.lists(c, max_size=4) | st.dictionaries(st.text(max_size=8), c, max_size=4), max_leaves=12
)


def _paths(doc, prefix=()):
    yield prefix
    if isinstance(doc, dict):
        for k, v in doc.items():
            yield from _paths(v, prefix + (k,))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            yield from _paths(v, prefix + (i,))


@st.composite
def mutated(draw, original: bytes):
    """A valid document broken one way: a field replaced or removed, truncation,
    NUL bytes, invalid UTF-8, deep nesting or a huge string."""
    how = draw(st.sampled_from(["replace", "delete", "truncate", "nul", "utf8", "deep", "huge", "random"]))
    if how in ("replace", "delete"):
        doc = json.loads(original)
        paths = [p for p in _paths(doc) if p]
        path = draw(st.sampled_from(paths))
        parent = doc
        for k in path[:-1]:
            parent = parent[k]
        if how == "delete":
            del parent[path[-1]]
        else:
            parent[path[-1]] = draw(json_value)
        return json.dumps(doc, indent=2).encode(), False  # may still load: optional fields
    if how == "truncate":
        return original[: draw(st.integers(0, len(original) - 1))], True
    if how == "nul":
        i = draw(st.integers(0, len(original)))
        return original[:i] + b"\x00" * draw(st.integers(1, 64)) + original[i:], True
    if how == "utf8":
        i = draw(st.integers(0, len(original)))
        bad = draw(st.sampled_from([b"\xff", b"\xc3", b"\xed\xa0\x80", b"\xfe\xff"]))
        return original[:i] + bad + original[i:], True
    if how == "deep":
        n = draw(st.integers(100, 100_000))
        return b"[" * n + b"]" * n, True
    if how == "huge":
        return b'{"id": "' + b"x" * draw(st.integers(1 << 16, 1 << 22)) + b'"}', True
    return draw(st.binary(max_size=300)), True


def _check_commands(root: Path, cid: str, broken: bool) -> None:
    runner = CliRunner()
    before = fingerprint(root)
    for args in (["ls", "--format", "jsonl"], ["show", cid, "--format", "json"], ["check", "--format", "json"]):
        r = runner.invoke(cli, ["--root", str(root), "--no-cache", *args], catch_exceptions=False)
        assert r.exit_code in (0, 3), (args, r.exit_code, r.stderr)
        assert "Traceback" not in r.stderr and "internal error" not in r.stderr, r.stderr
        if args[0] == "check" and broken:
            assert r.exit_code == 3
    assert fingerprint(root) == before


SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(case=mutated(MERMAID_SNAPSHOT))
def test_mermaid_snapshot_fuzz(case):
    data, must_break = case
    with tempfile.TemporaryDirectory() as d:
        project = Path(d) / "p"
        make_fixtures.build_demo_mermaid(project)
        conv = project / ".mermaid" / "conversations"
        (conv / "20260810_140307_512.json").write_bytes(data)
        (conv / "20260810_140307_512.json").chmod(0o600)
        _check_commands(project, "20260810_140307_512", broken=must_break)


@SETTINGS
@given(case=mutated(MERMAID_META))
def test_mermaid_meta_fuzz(case):
    data, _ = case
    with tempfile.TemporaryDirectory() as d:
        project = Path(d) / "p"
        make_fixtures.build_demo_mermaid(project)
        conv = project / ".mermaid" / "conversations"
        (conv / "20260810_140307_512.meta").write_bytes(data)
        (conv / "20260810_140307_512.meta").chmod(0o600)
        _check_commands(project, "20260810_140307_512", broken=False)


@SETTINGS
@given(case=mutated(SAM_DOC))
def test_sam_conversation_fuzz(case):
    data, must_break = case
    with tempfile.TemporaryDirectory() as d:
        base = Path(d) / "SAM"
        make_fixtures.build_demo_sam(base)
        p = base / "conversations" / "8B58CBC4-ACA7-4811-AE66-C01921690310" / "conversation.json"
        p.write_bytes(data)
        p.chmod(0o600)
        _check_commands(base, "8B58CBC4", broken=must_break)
