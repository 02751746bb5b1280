"""Hostile ChatGPT exports, folder and zip: truncated JSON, unknown types, deep nesting, huge
conversations, invalid UTF-8, NUL, symlinks out of the root, FIFOs, and hostile zips (traversal,
symlink and duplicate members, a bomb by ratio, a file that is no zip).  0 crashes, exit 0 or 3,
0 changed bytes, and check names each problem."""

from __future__ import annotations

import importlib.util
import json
import os
import zipfile
from pathlib import Path

import pytest

from tests.adversarial.readonly_hostile import run_all

REPO = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("make_chatgpt", REPO / "fixtures" / "make_chatgpt.py")
make_chatgpt = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(make_chatgpt)
SINE = "5b1f3c2a-8d4e-4f60-9a7b-0c1d2e3f4a5b"


def _folder(tmp: Path, data: bytes) -> Path:
    root = tmp / "tree" / "export"
    root.mkdir(parents=True)
    (root / "chat.html").write_text("<html></html>")
    (root / "conversations.json").write_bytes(data)
    return root


def _convs(edit=None) -> list:
    c = make_chatgpt.conversations()
    if edit:
        edit(c)
    return c


def _dump(c) -> bytes:
    return json.dumps(c, ensure_ascii=False).encode()


def _deep(c):
    inner = "1"
    for _ in range(5000):
        inner = '{"a":' + inner + "}"
    c[1]["metadata_blob"] = "@DEEP@"
    return inner


FOLDER_CASES = {
    "truncated": (lambda: _dump(_convs())[:-300], {"truncated"}),
    "unknown-types": (
        lambda: _dump(
            _convs(
                lambda c: c[0]["mapping"]["n5"]["message"]["content"].update(content_type="quantum_text", qbits=[1, 2])
            )
        ),
        {"unknown-content"},
    ),
    "deep-nesting": (
        lambda: _dump(_convs(_deep)).replace(b'"@DEEP@"', b'{"a":' * 5000 + b"1" + b"}" * 5000),
        {"too-deep"},
    ),
    "invalid-utf8": (lambda: _dump(_convs()).replace(b"Plot a sine", b"Plot \xff\xfe sine"), {"bad-utf8"}),
    "nul-in-string": (lambda: _dump(_convs()).replace(b"Plot a sine", b"Plot \x00 sine"), {"bad-json"}),
    "nul-between": (lambda: _dump(_convs()).replace(b"},{", b"}\x00,{", 1), set()),
    "traversal-ids": (
        lambda: _dump(_convs(lambda c: c[0].update(id="../../etc/passwd", conversation_id=None))),
        {"bad-id"},
    ),
    "dangling-current-and-cycle": (
        lambda: _dump(_convs(lambda c: (c[0].update(current_node="gone"), c[1]["mapping"]["u1"].update(parent="a2")))),
        {"no-current-node"},
    ),
    "duplicate-ids": (lambda: _dump(_convs(lambda c: c[2].update(conversation_id=SINE))), {"duplicate-id"}),
    "not-an-array": (lambda: b'{"mapping": {}}', {"not-array"}),
    "scalars-and-arrays": (lambda: b'[1, "x", [2], ' + _dump(_convs())[1:], {"not-object"}),
}


@pytest.mark.parametrize("name", sorted(FOLDER_CASES))
def test_hostile_export_folder(tmp_path, name):
    build, expect = FOLDER_CASES[name]
    root = _folder(tmp_path, build())
    run_all(tmp_path / "tree", root, tmp_path / "out", expect, ids=[SINE, "0f9e"])


def test_huge_conversation_over_the_cap(tmp_path):
    c = _convs(lambda c: c[1]["mapping"]["a2"]["message"]["content"].update(parts=["x" * (3 << 19)]))
    root = _folder(tmp_path, _dump(c))
    run_all(tmp_path / "tree", root, tmp_path / "out", set(), ids=[SINE], extra=[["--max-file-size", "1M", "ls"]])
    from tests.adversarial.harness import invoke

    o = invoke(["--root", str(root), "--max-file-size", "1M", "check", "--format", "json"])
    assert o.exit_code == 3 and "too-large" in o.stderr + o.stdout.decode()


def test_symlinks_out_of_the_root(tmp_path):
    outside = tmp_path / "outside.json"
    outside.write_bytes(_dump(_convs()))
    root = tmp_path / "tree" / "export"
    root.mkdir(parents=True)
    (root / "chat.html").write_text("<html></html>")
    (root / "conversations.json").symlink_to(outside)
    run_all(tmp_path / "tree", root, tmp_path / "out", {"symlink"})
    shards = tmp_path / "tree2" / "export"
    shards.mkdir(parents=True)
    (shards / "conversations-000.json").symlink_to(outside)
    run_all(tmp_path / "tree2", shards, tmp_path / "out2", {"symlink"})


def test_fifo_is_not_read(tmp_path):
    root = tmp_path / "tree" / "export"
    root.mkdir(parents=True)
    (root / "chat.html").write_text("<html></html>")
    os.mkfifo(root / "conversations.json")
    run_all(tmp_path / "tree", root, tmp_path / "out", {"not-regular"})


def _zip(path: Path, members, method=zipfile.ZIP_DEFLATED) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path, "w", method) as zf:
        for name, data, attr in members:
            info = zipfile.ZipInfo(name, date_time=(2026, 1, 1, 0, 0, 0))
            info.external_attr, info.compress_type = attr, method
            zf.writestr(info, data)
    return path


REG = 0o100600 << 16
ZIP_CASES = {
    "traversal-member": ([("conversations.json", "@", REG), ("../../evil", b"x", REG)], {"zip-refused"}),
    "absolute-member": ([("conversations.json", "@", REG), ("/etc/evil", b"x", REG)], {"zip-refused"}),
    "symlink-member": ([("conversations.json", "@", REG), ("link", b"/etc/passwd", 0o120777 << 16)], {"zip-refused"}),
    "duplicate-member": ([("conversations.json", "@", REG), ("conversations.json", b"[]", REG)], {"zip-refused"}),
    "bomb-by-ratio": ([("conversations.json", b"[" + b" " * (8 << 20) + b"]", REG)], {"zip-refused"}),
    "truncated-json-member": ([("conversations-000.json", "@cut", REG)], {"truncated"}),
    "shards-and-single": (
        [("conversations.json", "@", REG), ("conversations-000.json", b"[]", REG)],
        {"shards-ignored"},
    ),
}


@pytest.mark.filterwarnings("ignore:Duplicate name")
@pytest.mark.parametrize("name", sorted(ZIP_CASES))
def test_hostile_zip(tmp_path, name):
    members, expect = ZIP_CASES[name]
    whole = _dump(_convs())
    members = [(n, whole if d == "@" else whole[:-250] if d == "@cut" else d, a) for n, d, a in members]
    z = _zip(tmp_path / "tree" / "export.zip", members)
    run_all(tmp_path / "tree", z, tmp_path / "out", expect, ids=[SINE] if "refused" not in str(expect) else [])


def test_not_a_zip_and_a_cut_zip(tmp_path):
    bad = tmp_path / "tree" / "export.zip"
    bad.parent.mkdir()
    bad.write_bytes(b"PK\x03\x04 this is no zip")
    run_all(tmp_path / "tree", bad, tmp_path / "out", {"bad-zip"})
    good = _zip(tmp_path / "tree2" / "export.zip", [("conversations.json", _dump(_convs()), REG)])
    good.write_bytes(good.read_bytes()[:-40])  # the central directory cut
    run_all(tmp_path / "tree2", good, tmp_path / "out2", {"bad-zip"})
