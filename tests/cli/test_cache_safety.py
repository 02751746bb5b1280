"""The listing caches never change what a read-only command reports, and never land in the store.

- A capped run (``--max-file-size``) does not leave its ``too-large`` verdicts to later runs.
- A cache changed since samctl wrote it (its seal broken) is ignored as a whole, and written again.
- A cache entry with mistyped fields is rescanned, never trusted (no internal error); SAM's rows carry the
  types its listing trusts, since it checks the seal, not each field.
- A mermaid cache cannot put an id that breaks the id rule into a listing.
- A cache folder inside the store is not used: nothing is written there.
- The JSON model's ``size`` is the one ``ls`` reports (mermaid: snapshot + sidecar + log).
"""

from __future__ import annotations

import json
import os

import orjson
import pytest

from samctl.model import ConversationMeta, listed_json
from samctl.stores.metacache import is_sealed
from samctl.stores.sam.store import _META_KEYS
from tests.conftest import fingerprint, resealed

SAM_BIG = "8B58CBC4-ACA7-4811-AE66-C01921690310"  # 4832 bytes: over a 4K cap
SAM_IDS = {"C2A1F0E4-3B5D-4E6F-8A9B-0C1D2E3F4A5B", SAM_BIG, "D3B2A1C0-9F8E-4D7C-AB6A-5F4E3D2C1B0A"}
MERMAID_IDS = {"20260901_170000_250", "20260812_091500_004", "20260810_140307_512"}


def _age(root, when=1.7e9):
    """Every file and folder under ``root`` old enough to be cached (fresh ones never are: racy mtimes)."""
    for dirpath, dirnames, files in os.walk(root):
        for name in files + dirnames:
            os.utime(os.path.join(dirpath, name), (when, when), follow_symlinks=False)


def _ids(result) -> set:
    return {json.loads(x)["id"] for x in result.stdout.splitlines()}


def _cache_files(cache, kind):
    return sorted(cache.glob(f"{kind}-meta-*.json"))


def _sam_cache_after_ls(run, root, tmp_path, monkeypatch):
    """(the path, the document) of SAM's listing cache after an ls of ``root``, its files aged to be cached."""
    cache = tmp_path / "c"
    monkeypatch.setenv("SAMCTL_CACHE_DIR", str(cache))
    _age(root)
    run("--root", root, "ls")
    (path,) = _cache_files(cache, "sam")
    return path, orjson.loads(path.read_bytes())


# --- a cache changed since samctl wrote it is ignored as a whole ---------------------------------


def _same_json_other_bytes(data: bytes) -> bytes:
    return orjson.dumps(orjson.loads(data), option=orjson.OPT_INDENT_2)


def _a_title_changed(data: bytes) -> bytes:
    """The first letter of a title the cache holds, its case swapped: still valid JSON, with the same sizes
    and times, so only the seal tells."""
    sam = data.find(b'["sam","')
    if sam >= 0:  # a SAM row's meta: ["sam","<id>","<title>",...
        at = data.index(b'","', sam + len(b'["sam","')) + 3
    else:  # mermaid's listing, in columns
        at = data.index(b'"titles":["') + len(b'"titles":["')
    assert data[at : at + 1].isalpha()
    return data[:at] + bytes([data[at] ^ 0x20]) + data[at + 1 :]


@pytest.mark.parametrize(
    "change",
    [
        lambda data: data[: len(data) // 2],  # cut short
        lambda data: data + b" ",
        _same_json_other_bytes,  # the same document, written by something else
        _a_title_changed,
        lambda data: data.replace(b'{"sum":"', b'{"sum":"0', 1)[:-1],
    ],
    ids=["cut-short", "a-byte-more", "same-json-other-bytes", "a-title-changed", "seal-shifted"],
)
@pytest.mark.parametrize("kind", ["sam", "mermaid"])
def test_a_cache_changed_since_samctl_wrote_it_is_ignored_and_written_again(
    run, sam_demo, mermaid_demo, tmp_path, monkeypatch, kind, change
):
    root = sam_demo if kind == "sam" else mermaid_demo
    cache = tmp_path / "c"
    monkeypatch.setenv("SAMCTL_CACHE_DIR", str(cache))
    _age(root)
    want = run("--root", root, "--no-cache", "ls", "--format", "jsonl")
    run("--root", root, "ls")
    (path,) = _cache_files(cache, kind)
    data = path.read_bytes()
    assert is_sealed(data) and orjson.loads(data)["entries"]
    changed = change(data)
    assert changed != data and not is_sealed(changed)
    path.write_bytes(changed)
    before = fingerprint(root)
    got = run("--root", root, "ls", "--format", "jsonl")
    assert (got.exit_code, got.stderr, got.stdout) == (0, "", want.stdout)
    assert is_sealed(path.read_bytes())  # written again, whole
    assert fingerprint(root) == before


def test_a_resealed_change_is_read_as_written(run, sam_demo, tmp_path, monkeypatch):
    """The other side of the seal: an entry changed and sealed again is trusted (so the test above shows that
    the seal, not a rescan of every file, is what kept the change out)."""
    path, doc = _sam_cache_after_ls(run, sam_demo, tmp_path, monkeypatch)
    entry = doc["entries"][SAM_BIG]
    entry[2][_META_KEYS.index("title")] = "Sealed again"
    entry[6] = orjson.dumps(dict(orjson.loads(entry[6]), title="Sealed again")).decode()  # (its ls row too)
    path.write_bytes(resealed(doc))
    got = run("--root", sam_demo, "ls", "--format", "jsonl")
    assert {json.loads(x)["id"]: json.loads(x)["title"] for x in got.stdout.splitlines()}[SAM_BIG] == "Sealed again"


# --- the cache does not carry one run's caps into the next -------------------------------


def _capped_then_plain(run, root, cache, kind, cap, big, everyone) -> None:
    """A capped ls leaves ``big`` out (too-large); a plain one after it lists everyone (exit 0); a warm
    capped run says what a cold one says; and none of them changes the tree."""
    before = fingerprint(root)
    capped = run("--root", root, "--max-file-size", cap, "ls", "--format", "jsonl")
    assert capped.exit_code == 3 and "too-large" in capped.stderr
    assert _ids(capped) == everyone - {big}
    assert _cache_files(cache, kind)
    plain = run("--root", root, "ls", "--format", "jsonl")
    assert (plain.exit_code, plain.stderr) == (0, "")
    assert _ids(plain) == everyone
    again = run("--root", root, "--max-file-size", cap, "ls", "--format", "jsonl")
    cold = run("--root", root, "--no-cache", "--max-file-size", cap, "ls", "--format", "jsonl")
    assert (again.exit_code, again.stdout, again.stderr) == (cold.exit_code, cold.stdout, cold.stderr)
    assert fingerprint(root) == before


def test_sam_capped_ls_does_not_hide_a_conversation_from_a_later_ls(run, sam_demo, tmp_path, monkeypatch):
    cache = tmp_path / "c"
    monkeypatch.setenv("SAMCTL_CACHE_DIR", str(cache))
    _age(sam_demo)
    _capped_then_plain(run, sam_demo, cache, "sam", "4K", SAM_BIG, SAM_IDS)


@pytest.mark.parametrize("age_folder", [True, False], ids=["folder-stamp", "per-file"])
def test_mermaid_capped_ls_does_not_hide_a_conversation_from_a_later_ls(
    run, mermaid_demo, tmp_path, monkeypatch, age_folder
):
    cache = tmp_path / "c"
    monkeypatch.setenv("SAMCTL_CACHE_DIR", str(cache))
    conv = mermaid_demo / ".mermaid" / "conversations"
    (conv / "20260810_140307_512.meta").unlink()  # listed from its snapshot, which is over 1K
    if age_folder:
        _age(mermaid_demo)  # the folder's stamp is saved: the whole listing is trusted next time
    else:
        _age(conv)
        os.utime(conv, None)  # a racy folder: only the per-file entries are saved
    _capped_then_plain(run, mermaid_demo, cache, "mermaid", "1K", "20260810_140307_512", MERMAID_IDS)


# --- a SAM cache entry with mistyped fields is rescanned -------------------------------------

BAD_FIELDS = [
    ("title", None),
    ("model", 3),
    ("active_ts", "x"),
    ("title", 5),
    ("updated_ts", "x"),
    ("created_ts", [1]),
    ("message_count", "many"),
    ("message_count", True),
    ("message_count", 2.5),
    ("pinned", "yes"),
    ("pinned", 1),
    ("size", "big"),
    ("created", 7),
    ("updated", {}),
    ("store", "mermaid"),
    ("id", None),
    ("id", "\x1b]0;x\x07"),
    ("path", 3),
]


@pytest.mark.parametrize(
    "tamper",
    [
        lambda meta: meta.append(None),  # a field too many
        lambda meta: meta.pop(),  # one too few
        lambda meta: meta.clear(),
    ],
)
def test_sam_cache_with_a_meta_of_another_width_is_rescanned(run, sam_demo, tmp_path, monkeypatch, tamper):
    cache = tmp_path / "c"
    monkeypatch.setenv("SAMCTL_CACHE_DIR", str(cache))
    _age(sam_demo)
    want = run("--root", sam_demo, "ls", "--format", "jsonl")
    (path,) = _cache_files(cache, "sam")
    doc = orjson.loads(path.read_bytes())
    for entry in doc["entries"].values():
        tamper(entry[2])
    path.write_bytes(orjson.dumps(doc))
    got = run("--root", sam_demo, "ls", "--format", "jsonl")
    assert (got.exit_code, got.stderr, got.stdout) == (0, "", want.stdout)
    assert run("--root", sam_demo, "show", SAM_BIG).exit_code == 0  # (cached_title reads the rows too)


@pytest.mark.parametrize("field,value", BAD_FIELDS, ids=[f"{f}={v!r}" for f, v in BAD_FIELDS])
def test_sam_cache_with_mistyped_fields_is_rescanned(run, sam_demo, tmp_path, monkeypatch, field, value):
    cache = tmp_path / "c"
    monkeypatch.setenv("SAMCTL_CACHE_DIR", str(cache))
    _age(sam_demo)
    assert run("--root", sam_demo, "ls").exit_code == 0
    (path,) = _cache_files(cache, "sam")
    doc = orjson.loads(path.read_bytes())
    assert len(doc["entries"]) == 3
    for entry in doc["entries"].values():
        entry[2][_META_KEYS.index(field)] = value  # (a row's meta: a list in the model's field order)
    path.write_bytes(orjson.dumps(doc))
    before = fingerprint(sam_demo)
    for args in (
        [("ls", "--format", "jsonl")]
        + [("ls", "--format", "jsonl", "--sort", k) for k in ("updated", "created", "title", "messages", "size")]
        + [("stats",)]
    ):
        want = run("--root", sam_demo, "--no-cache", *args)
        path.write_bytes(orjson.dumps(doc))  # poisoned again for each command (a run rewrites it)
        got = run("--root", sam_demo, *args)
        assert (got.exit_code, got.stderr) == (0, ""), (args, got.stderr)
        assert got.stdout == want.stdout, args
    assert fingerprint(sam_demo) == before


_OPT_STR, _OPT_NUM = (str, type(None)), (int, float, type(None))
# The types SAM's listing takes each cached field to have (it sorts, adds and prints by them).
_SCAN_TYPES = {
    "store": (str,),
    "id": (str,),
    "title": (str,),
    "created": _OPT_STR,
    "updated": _OPT_STR,
    "created_ts": _OPT_NUM,
    "updated_ts": _OPT_NUM,
    "message_count": (int, type(None)),
    "size": (int, type(None)),
    "pinned": (bool,),
    "path": (str,),
    "active_ts": _OPT_NUM,
    "project": (type(None),),
    "branch": (type(None),),
    "continues": (type(None),),
    "model": _OPT_STR,
}
ODD_DOCS = [
    {"id": 5, "title": 7, "created": 1.5, "updated": None, "messages": {"a": 1}, "isPinned": "yes"},
    {"title": None, "created": "yesterday", "updated": "2026-13-45T99:00:00Z", "messages": [1, "x", None]},
    {"messages": [{"timestamp": 3, "isFromUser": "no", "content": 5}], "settings": {"model": 9}},
    {"isPinned": 1, "messages": None, "title": ["a"], "settings": "gpt"},
    [],
    "text",
]


def test_sam_scan_gives_each_field_the_type_the_listing_trusts(sam_broken, tmp_path):
    from samctl.stores import open_store
    from tests.conftest import make_fixtures

    base, _ = sam_broken
    demo = tmp_path / "demo" / "SAM"
    make_fixtures.build_demo_sam(demo)
    odd = tmp_path / "odd" / "conversations"
    for i, doc in enumerate(ODD_DOCS):
        folder = odd / f"0000000{i}-0000-4000-8000-000000000000"
        folder.mkdir(parents=True)
        (folder / "conversation.json").write_bytes(orjson.dumps(doc))
    assert tuple(_SCAN_TYPES) == _META_KEYS
    rows = 0
    for root in (demo, base, odd.parent):
        store = open_store(str(root))
        for p in sorted(store.conv_dir.glob("*/conversation.json")):
            st = os.lstat(p)
            if not os.path.isfile(p):
                continue
            row = store._scan(str(p), st, p.parent.name)
            if row[2] is None:
                continue
            rows += 1
            assert len(row[2]) == len(_META_KEYS), p
            for key, value in zip(_META_KEYS, row[2]):
                assert type(value) in _SCAN_TYPES[key], (p, key, value)
            assert row[3] is None or (type(row[3]) is list and [type(x) for x in row[3]] == [str, str])
            assert row[4] is None or type(row[4]) is str
            assert row[5] is None or type(row[5]) is int
            # its ls row: what ls writes of the meta the row makes (the meta's own JSON, key for key)
            meta = ConversationMeta(*row[2])
            assert type(row[6]) is str and row[6] == listed_json(meta)
            assert orjson.loads(row[6]) == orjson.loads(orjson.dumps(meta.to_dict("message_count")))
    assert rows >= len(ODD_DOCS) + 4


def test_sam_cache_checks_every_field_of_the_model_in_its_order():
    # the fields SAM fills (project, branch and continues always None), in the model's order; the one after
    # them stays at its default
    assert _META_KEYS == tuple(ConversationMeta.__slots__)[: len(_META_KEYS)]
    assert set(ConversationMeta.__slots__[len(_META_KEYS) :]) == {"copied_messages", "json_row"}


def test_sam_cache_with_a_mistyped_finding_is_rescanned(run, sam_demo, tmp_path, monkeypatch):
    path, doc = _sam_cache_after_ls(run, sam_demo, tmp_path, monkeypatch)
    for entry in doc["entries"].values():
        entry[3] = [1, None]
    path.write_bytes(orjson.dumps(doc))
    r = run("--root", sam_demo, "ls", "--format", "jsonl")
    assert (r.exit_code, r.stderr) == (0, "") and _ids(r) == SAM_IDS


@pytest.mark.parametrize("age_folder", [True, False], ids=["folder-stamp", "per-file"])
def test_mermaid_cache_ids_must_keep_the_id_rule(run, mermaid_demo, tmp_path, monkeypatch, age_folder):
    cache = tmp_path / "c"
    monkeypatch.setenv("SAMCTL_CACHE_DIR", str(cache))
    conv = mermaid_demo / ".mermaid" / "conversations"
    if age_folder:
        _age(mermaid_demo)
    else:
        _age(conv)
        os.utime(conv, None)
    want = run("--root", mermaid_demo, "--no-cache", "ls", "--format", "jsonl")
    run("--root", mermaid_demo, "ls")
    (path,) = _cache_files(cache, "mermaid")
    doc = orjson.loads(path.read_bytes())
    evil = "\x1b]0;owned\x07"
    if age_folder:
        assert doc["extra"] is not None
        doc["extra"]["ids"] = [evil] * len(doc["extra"]["ids"])
    else:
        assert doc.get("extra") is None
        for entry in doc["entries"].values():
            if entry[2] is not None:
                entry[2][0] = evil
    path.write_bytes(resealed(doc))
    got = run("--root", mermaid_demo, "ls", "--format", "jsonl")
    assert (got.exit_code, got.stdout, got.stderr) == (0, want.stdout, "")


# --- a cache folder inside the store is not used ------------------------------------------


def _sam_commands():
    return [
        ("ls",),
        ("ls", "--format", "json"),
        ("show", "8B58", "--no-pager"),
        ("stats",),
        ("search", "--exact", "pong"),
        ("search", "budget"),
        ("export", "D3B2", "--to", "json"),
    ]


@pytest.mark.parametrize("where", ["conversations", "conversations/sub", "dotdot", "symlink"])
def test_sam_cache_folder_inside_the_store_is_not_written(run, sam_demo, tmp_path, monkeypatch, where):
    if where == "symlink":
        (tmp_path / "link").symlink_to(sam_demo / "conversations")
        cache = tmp_path / "link" / "cache"
    elif where == "dotdot":
        cache = sam_demo / "conversations" / ".." / "conversations" / "x"
    else:
        cache = sam_demo / where
    monkeypatch.setenv("SAMCTL_CACHE_DIR", str(cache))
    _age(sam_demo)
    before = fingerprint(sam_demo)
    for args in _sam_commands():
        r = run("--root", sam_demo, *args)
        assert r.exit_code == 0, (args, r.stderr)
        warnings = [ln for ln in r.stderr.splitlines() if "cache" in ln]
        assert len(warnings) == 1 and warnings[0].startswith("warning: "), (args, r.stderr)
        assert fingerprint(sam_demo) == before, args
    # --no-cache asks for no cache: nothing to warn about
    r = run("--root", sam_demo, "--no-cache", "ls")
    assert (r.exit_code, r.stderr) == (0, "")


def test_mermaid_cache_folder_inside_the_store_is_not_written(run, mermaid_demo, tmp_path, monkeypatch):
    monkeypatch.setenv("SAMCTL_CACHE_DIR", str(mermaid_demo / ".mermaid" / "conversations"))
    _age(mermaid_demo)
    before = fingerprint(mermaid_demo)
    for args in [("ls",), ("show", "20260901", "--no-pager"), ("search", "--exact", "deadline"), ("stats",)]:
        r = run("--root", mermaid_demo, *args)
        assert r.exit_code == 0, (args, r.stderr)
        assert sum("cache" in ln for ln in r.stderr.splitlines()) == 1, r.stderr
        assert fingerprint(mermaid_demo) == before, args


def test_cache_folder_beside_the_store_is_used(run, sam_demo, tmp_path, monkeypatch):
    cache = tmp_path / "SAM-cache"  # a name that starts like the store's: not inside it
    monkeypatch.setenv("SAMCTL_CACHE_DIR", str(cache))
    _age(sam_demo)
    r = run("--root", sam_demo, "ls")
    assert (r.exit_code, r.stderr) == (0, "")
    assert _cache_files(cache, "sam")


# --- the JSON model's size is the listing's ---------------------------------------------------


def test_mermaid_json_model_size_is_the_bytes_of_its_own_files(run, mermaid_demo):
    conv = mermaid_demo / ".mermaid" / "conversations"
    listed = {
        json.loads(x)["id"]: json.loads(x)["size"]
        for x in run("--root", mermaid_demo, "ls", "--format", "jsonl").stdout.splitlines()
    }
    for cid, size in listed.items():
        own = sum(
            os.path.getsize(conv / f"{cid}.{ext}")
            for ext in ("json", "meta", "jsonl")
            if (conv / f"{cid}.{ext}").exists()
        )
        assert size == own
        shown = run("--root", mermaid_demo, "show", cid, "--format", "json", "--no-pager")
        assert shown.exit_code == 0 and json.loads(shown.stdout)["size"] == own
        exported = run("--root", mermaid_demo, "export", cid, "--to", "json")
        assert exported.exit_code == 0 and json.loads(exported.stdout)["size"] == own


def test_mermaid_json_model_size_of_a_session_folded_from_its_log(run, mermaid_demo):
    conv = mermaid_demo / ".mermaid" / "conversations"
    cid = "20260810_140307_512"
    (conv / f"{cid}.json").write_text("{")
    own = sum(os.path.getsize(conv / f"{cid}.{ext}") for ext in ("json", "meta", "jsonl"))
    shown = run("--root", mermaid_demo, "show", cid, "--format", "json", "--no-pager")
    assert json.loads(shown.stdout)["size"] == own


def test_a_warm_sam_ls_writes_what_a_cold_one_writes_from_any_spelling_of_the_root(
    run, sam_demo, tmp_path, monkeypatch
):
    """A cached row's ls JSON is written only for a meta whose fields it was made from: not where the root
    is spelled another way (another path) or a folder's name is not its id as the file gives it."""
    monkeypatch.setenv("SAMCTL_CACHE_DIR", str(tmp_path / "c"))
    conv = sam_demo / "conversations"
    (conv / SAM_BIG).rename(conv / SAM_BIG.lower())
    other = tmp_path / "other"
    other.symlink_to(sam_demo)
    _age(sam_demo)
    before = fingerprint(sam_demo)
    for root in (sam_demo, other, sam_demo):
        want = run("--root", root, "--no-cache", "ls", "--format", "jsonl")
        assert want.exit_code == 0 and f'"path":"{root}' in want.stdout
        for _ in range(2):  # the run that fills the cache, then one that reads it
            got = run("--root", root, "ls", "--format", "jsonl")
            assert (got.exit_code, got.stderr, got.stdout) == (0, want.stderr, want.stdout)
    assert fingerprint(sam_demo) == before


def test_a_warm_sam_listing_gives_its_metas_their_cached_ls_rows(sam_demo, tmp_path, monkeypatch):
    from samctl.stores import open_store

    monkeypatch.setenv("SAMCTL_CACHE_DIR", str(tmp_path / "c"))
    _age(sam_demo)
    cold = open_store(str(sam_demo)).list_metas([])
    warm = open_store(str(sam_demo)).list_metas([])
    assert warm == cold and {m.id for m in warm} == SAM_IDS
    assert all(m.json_row is not None and m.json_row == listed_json(m) for m in warm)
