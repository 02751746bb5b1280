"""The listing caches never change what a read-only command reports, and never land in the store.

- A capped run (``--max-file-size``) does not leave its ``too-large`` verdicts to later runs.
- A cache entry with mistyped fields is rescanned, never trusted (no internal error).
- A mermaid cache cannot put an id that breaks the id rule into a listing.
- A cache folder inside the store is not used: nothing is written there.
- The JSON model's ``size`` is the one ``ls`` reports (mermaid: snapshot + sidecar + log).
"""

from __future__ import annotations

import json
import os

import orjson
import pytest

from samctl.stores.sam.store import _META_KEYS
from tests.conftest import fingerprint

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


def test_sam_cache_checks_every_field_of_the_model_in_its_order():
    from samctl.model import ConversationMeta

    # the fields SAM fills (project, branch and continues always None), in the model's order; the one after
    # them stays at its default
    assert _META_KEYS == tuple(ConversationMeta.__slots__)[: len(_META_KEYS)]
    assert set(ConversationMeta.__slots__[len(_META_KEYS) :]) == {"copied_messages"}


def test_sam_cache_with_a_mistyped_finding_is_rescanned(run, sam_demo, tmp_path, monkeypatch):
    cache = tmp_path / "c"
    monkeypatch.setenv("SAMCTL_CACHE_DIR", str(cache))
    _age(sam_demo)
    run("--root", sam_demo, "ls")
    (path,) = _cache_files(cache, "sam")
    doc = orjson.loads(path.read_bytes())
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
    path.write_bytes(orjson.dumps(doc))
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
