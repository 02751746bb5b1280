"""The ChatGPT-export reader: the array scan (samctl.stores.chatgpt.scan), the decoder (decode) and the
zip checks, on the demo export and on broken input: each broken case checks its finding code and that
the rest still reads."""

import copy
import importlib.util
import io
import json
import zipfile
from pathlib import Path

import pytest

from samctl.stores.base import Caps
from samctl.stores.chatgpt import decode, scan
from samctl.stores.chatgpt.store import ChatgptStore, zip_problems

REPO = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("make_chatgpt", REPO / "fixtures" / "make_chatgpt.py")
make_chatgpt = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(make_chatgpt)

SINE = "5b1f3c2a-8d4e-4f60-9a7b-0c1d2e3f4a5b"


def _items(data: bytes, cap=1 << 30, chunk=None, monkeypatch=None):
    if chunk:
        monkeypatch.setattr(scan, "CHUNK", chunk)
    end = scan.End()
    out = list(scan.iter_items(io.BytesIO(data).read, cap, end))
    return out, end.problem


@pytest.mark.parametrize("chunk", [1, 2, 3, 7, 64, 1 << 20])
def test_scan_splits_the_array_at_any_buffer_size(chunk, monkeypatch):
    convs = make_chatgpt.conversations()
    convs[0]["title"] = 'tricky "]}{[\\ title'
    data = json.dumps(convs, indent=1, ensure_ascii=False).encode()
    items, problem = _items(data, chunk=chunk, monkeypatch=monkeypatch)
    assert problem is None
    assert [json.loads(i.data) for i in items] == convs


def test_scan_truncated_keeps_what_came_before():
    data = json.dumps(make_chatgpt.conversations()).encode()
    items, problem = _items(data[: len(data) - 200])
    assert problem[0] == "truncated" and len(items) == 2


def test_scan_cap_skips_one_conversation_and_reads_the_rest():
    convs = make_chatgpt.conversations()
    data = json.dumps(convs).encode()
    cap = len(json.dumps(convs[2])) + 10
    items, problem = _items(data, cap=cap)
    assert [i.problem and i.problem[0] for i in items] == ["too-large", "too-large", None]
    assert json.loads(items[2].data) == convs[2] and problem is None


@pytest.mark.parametrize(
    "data,code",
    [
        (b"", "not-array"),
        (b'{"a": 1}', "not-array"),
        (b'"x"', "not-array"),
        (b"[1, 2]", None),
        (b"[]", None),
        (b"\xef\xbb\xbf[]", None),
    ],
)
def test_scan_not_an_array(data, code):
    assert (_items(data)[1] or (None,))[0] == code


def test_scan_deep_nesting_is_a_counter_not_recursion():
    data = b"[" + b'{"a":' * 100_000 + b"1" + b"}" * 100_000 + b"]"
    items, problem = _items(data)
    assert problem is None and len(items) == 1
    # deeper than values.MAX_DEPTH: skipped by the scan (the counter), never parsed
    assert items[0].data is None and items[0].problem[0] == "too-deep"


def test_current_branch_and_other_branches():
    doc = make_chatgpt.conversations()[0]
    findings = []
    conv = decode.conversation(doc, SINE, "x", findings)
    shown = [m for m in conv.messages if not m.hidden]
    assert [m.id for m in shown] == ["n1", "n2", "n2r", "n3", "n4", "n5"]
    other = [m for m in conv.messages if m.hidden]
    assert [(m.id, m.kind) for m in other] == [("n2b", "other-branch/text")]
    assert [m.id for m in conv.messages].index("n2b") < [m.id for m in conv.messages].index("n2")
    assert shown[1].role == "reasoning" and shown[3].tool_calls[0].name == "python"
    assert shown[4].role == "tool" and shown[4].tool_name == "python"
    assert shown[0].attachments[0]["url"].startswith("sediment://") and conv.model == "o3"
    assert findings == []


def test_hidden_custom_instructions_null_title_and_unknown_content():
    doc = make_chatgpt.conversations()[1]
    findings = []
    conv = decode.conversation(doc, doc["id"], "x", findings)
    assert conv.meta.title == "What is the speed of light?"
    assert conv.messages[0].hidden and conv.messages[0].role == "system"
    assert [f.code for f in findings] == ["unknown-content"]
    assert "super_widget" in conv.messages[-1].content


@pytest.mark.parametrize(
    "change,code",
    [
        (lambda d: d.update(current_node="nope"), "no-current-node"),
        (lambda d: d["mapping"]["n0"].update(parent="n5"), "parent-cycle"),
        (lambda d: d.update(mapping=[1, 2]), "no-mapping"),
        (lambda d: d["mapping"]["n1"]["message"]["author"].update(role="narrator"), "unknown-role"),
    ],
)
def test_broken_trees_are_findings(change, code):
    doc = copy.deepcopy(make_chatgpt.conversations()[0])
    change(doc)
    findings = []
    conv = decode.conversation(doc, SINE, "x", findings)
    assert code in [f.code for f in findings]
    assert conv.meta.id == SINE


def test_ids_old_exports_and_bad_ids():
    assert decode.conv_id({"conversation_id": SINE.upper()}) == SINE
    assert decode.conv_id({"id": "../../etc"}) is None
    findings = []
    assert decode.from_bytes(b'{"id": "../x", "mapping": {}}', "x", findings) is None
    assert [f.code for f in findings] == ["bad-id"]


def test_invalid_utf8_is_replaced_and_reported():
    doc = json.dumps(make_chatgpt.conversations()[0]).encode().replace(b"Plot a sine", b"Plot \xff sine")
    findings = []
    conv = decode.from_bytes(doc, "x", findings)
    assert conv.meta.title == "Plot \ufffd sine wave" and [f.code for f in findings] == ["bad-utf8"]


def _zip(path, members):
    with zipfile.ZipFile(path, "w") as zf:
        for name, data, attr in members:
            info = zipfile.ZipInfo(name)
            info.external_attr = attr
            zf.writestr(info, data)
    return path


@pytest.mark.parametrize(
    "name,attr,why",
    [
        ("../evil.json", 0o600 << 16, "unsafe name"),
        ("/abs.json", 0o600 << 16, "unsafe name"),
        ("C:/x.json", 0o600 << 16, "unsafe name"),
        ("link", (0o120777 << 16), "symlink"),
    ],
)
def test_hostile_zip_members_refuse_the_zip(tmp_path, name, attr, why):
    data = json.dumps(make_chatgpt.conversations()).encode()
    z = _zip(tmp_path / "x.zip", [("conversations.json", data, 0o600 << 16), (name, b"x", attr)])
    store = ChatgptStore(z, tmp_path)
    findings = []
    assert store.list_metas(findings) == []
    assert [f.code for f in findings] == ["zip-refused"] and why in findings[0].reason


def test_zip_duplicates_and_bombs_are_refused():
    a = zipfile.ZipInfo("conversations.json")
    a.file_size, a.compress_size = 10, 10
    b = zipfile.ZipInfo("conversations.json")
    b.file_size, b.compress_size = 10, 10
    assert any("twice" in p for p in zip_problems([a, b]))
    bomb = zipfile.ZipInfo("conversations.json")
    bomb.file_size, bomb.compress_size = 1 << 30, 1 << 20 // 2
    assert any("zip bomb" in p for p in zip_problems([bomb]))
    huge = zipfile.ZipInfo("conversations.json")
    huge.file_size, huge.compress_size = 1 << 40, 1 << 36
    assert any("limit" in p for p in zip_problems([huge]))


def test_damaged_zip_member_reads_as_cut(tmp_path):
    data = json.dumps(make_chatgpt.conversations()).encode()
    z = _zip(tmp_path / "x.zip", [("conversations.json", data, 0o600 << 16)])
    raw = bytearray(z.read_bytes())
    i = raw.index(b'"Plot a sine')
    raw[i + 3] ^= 0xFF  # stored, not deflated: the bytes change and the CRC no longer matches
    z.write_bytes(bytes(raw))
    findings = []
    metas = ChatgptStore(z, tmp_path).list_metas(findings)
    assert [f.code for f in findings] == ["unreadable"] and "Bad CRC" in findings[0].reason
    assert len(metas) == 0  # (zipfile checks the CRC at the member's end: nothing before is kept either)


def test_demo_folder_and_zip_list_the_same(tmp_path):
    make_chatgpt.write_demo(tmp_path)
    a = ChatgptStore(tmp_path / "export", tmp_path / "export")
    z = tmp_path / "chatgpt-export.zip"
    b = ChatgptStore(z, tmp_path)
    fa, fb = [], []
    assert [(m.id, m.title) for m in a.list_metas(fa)] == [(m.id, m.title) for m in b.list_metas(fb)]
    assert fa == fb == []
    assert len(a.list_metas([])) == 3


def test_cap_from_max_file_size(tmp_path):
    make_chatgpt.write_demo(tmp_path)
    s = ChatgptStore(tmp_path / "export", tmp_path / "export", Caps.uniform(2000))
    findings = []
    assert len(s.list_metas(findings)) == 1
    assert [f.code for f in findings] == ["too-large", "too-large"]


@pytest.mark.parametrize("kind", ["folder", "zip"])
def test_loads_after_a_listing_do_not_rescan_the_export(tmp_path, monkeypatch, kind):
    """export --all loads every listed conversation: each must be read at its offset (a zip member from
    one spool), not found by scanning the whole export again (quadratic on a 300 MB export)."""
    make_chatgpt.write_demo(tmp_path)
    z = tmp_path / "chatgpt-export.zip"
    store = ChatgptStore(z, tmp_path) if kind == "zip" else ChatgptStore(tmp_path / "export", tmp_path / "export")
    metas = store.list_metas([])
    scans = []
    real = scan.iter_items
    monkeypatch.setattr(scan, "iter_items", lambda *a, **k: scans.append(1) or real(*a, **k))
    for m in metas:
        conv = store.load(m.id, [])
        assert conv.meta.id == m.id and conv.messages
    assert scans == []
    assert json.loads(store.raw_part(SINE, None))["id"] == SINE
