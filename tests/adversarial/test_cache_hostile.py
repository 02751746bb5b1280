"""Hostile cache and data folders, for every store (issue #31, findings 4, 5, 7, 12, 13): a FIFO at every
path samctl opens in its cache (manifest, segments, the ``checked`` record, the lock, listing caches), the
index folder a symlink into the store, the cache or data folder another user's or open to others' writes,
and a folder ~1,200 deep in the store.  Each store registered in ``STORES`` with a demo tree gets them:
0 crashes, 0 hangs, exit 0 or 3, nothing written, read or deleted through a link, nothing moved."""

from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path

import pytest

from tests.adversarial.harness import REPO, TALLY, fingerprint, invoke

DEMO = REPO / "fixtures" / "demo"
# store kind -> (demo folder, the root inside the copy, a word its conversations hold)
ROOTS = {
    "sam": ("SAM", "", "the"),
    "mermaid": ("mermaid-project", "", "the"),
    "claude-code": ("claude_code", "", "the"),
    "codex": ("codex", "", "the"),
    "llm": ("llm", "", "the"),
    "chatgpt": ("chatgpt", "chatgpt-export.zip", "the"),
}
MOVABLE = {"claude-code", "codex", "sam", "mermaid"}


def _every_store_has_a_case():
    from samctl.stores import STORES

    assert set(STORES) <= set(ROOTS), f"add the new store's demo root to ROOTS: {set(STORES) - set(ROOTS)}"


_every_store_has_a_case()


def _copy(tmp_path: Path, kind: str) -> Path:
    folder, inner, _ = ROOTS[kind]
    dest = tmp_path / "tree" / folder
    shutil.copytree(DEMO / folder, dest, symlinks=True)
    for dirpath, dirnames, filenames in os.walk(dest):  # idle: past every live window
        for n in dirnames + filenames:
            os.utime(os.path.join(dirpath, n), (1e9, 1e9), follow_symlinks=False)
    return dest / inner if inner else dest


def _run(argv: list, expect=(0, 3)):
    TALLY.cases += 1
    o = invoke(argv)
    if o.crash is not None:
        TALLY.note("crashes", f"{argv}: {o.crash[-300:]}")
    assert o.crash is None, f"{argv}: {o.crash}"
    if o.exit_code not in expect:
        TALLY.note("bad_exits", f"{argv}: exit {o.exit_code}")
    assert o.exit_code in expect, f"{argv}: exit {o.exit_code}: {o.stderr[-800:]}"
    return o


def _cache() -> Path:
    return Path(os.environ["SAMCTL_CACHE_DIR"])


def _warm(root: Path, word: str) -> None:
    _run(["--root", root, "ls"])
    _run(["--root", root, "search", word])
    _run(["--root", root, "index", "--update"], expect=(0, 2, 3))  # (2: a store samctl keeps no cache for)


def _cache_file(role: str) -> Path | None:
    """The file of ``role`` in the cache as it is now (every one the index and listing caches open)."""
    files = sorted(p for p in _cache().rglob("*") if p.is_file() and not p.is_symlink())
    pick = {
        "manifest": lambda p: p.name == "manifest",
        "checked": lambda p: p.name == "checked",
        "lock": lambda p: p.name == "lock",
        "segment": lambda p: p.suffix == ".seg",
        "listing": lambda p: p.name.endswith(".json") and "-meta-" in p.name,
    }[role]
    return next((p for p in files if pick(p)), None)


ROLES = ["manifest", "checked", "lock", "segment", "listing"]


# --- FIFOs at every path samctl opens in its cache ------------------------------------------------


@pytest.mark.parametrize("kind", [k for k in ROOTS if k != "chatgpt"])  # (no cache for an export)
def test_a_fifo_at_every_cache_path_never_hangs(tmp_path, kind):
    root = _copy(tmp_path, kind)
    word = ROOTS[kind][2]
    TALLY.trees += 1
    tree_before = fingerprint(root)
    tried = 0
    for role in ROLES:
        _warm(root, word)
        p = _cache_file(role)
        if p is None:
            continue
        tried += 1
        p.unlink()
        os.mkfifo(p, 0o600)
        try:
            for argv in (["ls"], ["search", word], ["index"], ["check"], ["search", word]):
                _run(["--root", root, *argv])
        finally:
            if os.path.lexists(p) and stat.S_ISFIFO(os.lstat(p).st_mode):
                p.unlink()
    assert tried >= 3, "the cache holds fewer kinds of file than the case expects"
    assert fingerprint(root) == tree_before


def test_the_folder_state_child_never_blocks_on_a_fifo(tmp_path):
    from samctl.search.index import folderstate

    fifo = tmp_path / "checked"
    os.mkfifo(fifo, 0o600)
    assert folderstate.answer(os.fsencode(fifo)) == "0"
    link = tmp_path / "link"
    os.symlink(fifo, link)
    assert folderstate.answer(os.fsencode(link)) == "0"


# --- the index folder a symlink (into the store) ---------------------------------------------------


@pytest.mark.parametrize("kind", [k for k in ROOTS if k != "chatgpt"])
def test_a_symlinked_index_folder_is_never_written_read_or_cleaned(tmp_path, kind):
    from samctl.search import index as ix
    from samctl.stores import open_store

    root = _copy(tmp_path, kind)
    word = ROOTS[kind][2]
    _warm(root, word)
    d = ix.index_dir(open_store(str(root)))
    assert d.is_dir()
    target = tmp_path / "victim"
    target.mkdir()
    (target / "precious.seg").write_bytes(b"not samctl's")
    (target / "manifest").write_bytes(b"not samctl's either")
    shutil.rmtree(d)
    os.symlink(target, d)
    TALLY.trees += 1
    before, tree_before = fingerprint(target), fingerprint(root)
    o = _run(["--root", root, "search", word])
    assert "cache-unsafe" in o.stderr and "symlink" in o.stderr, o.stderr
    _run(["--root", root, "search", "--format", "json", word])
    _run(["--root", root, "index"])
    _run(["--root", root, "index", "--rebuild"], expect=(0, 1, 3))
    if fingerprint(target) != before:
        TALLY.note("escapes", f"{kind}: wrote through the index folder's link")
    assert fingerprint(target) == before and fingerprint(root) == tree_before
    assert d.is_symlink()


# --- the cache or data folder not samctl's own --------------------------------------------------------


@pytest.mark.parametrize("kind", [k for k in ROOTS if k != "chatgpt"])
@pytest.mark.parametrize("how", ["world-writable", "group-writable", "symlink"])
def test_a_cache_folder_open_to_others_is_not_used(tmp_path, kind, how, monkeypatch):
    root = _copy(tmp_path, kind)
    cache = tmp_path / "cache"
    cache.mkdir(mode=0o700)
    if how == "symlink":
        real = tmp_path / "real-cache"
        real.mkdir(mode=0o700)
        cache.rmdir()
        os.symlink(real, cache)
    else:
        os.chmod(cache, 0o777 if how == "world-writable" else 0o770)
    monkeypatch.setenv("SAMCTL_CACHE_DIR", str(cache))
    TALLY.trees += 1
    before = fingerprint(cache.resolve())
    for argv in (["ls"], ["search", ROOTS[kind][2]]):
        o = _run(["--root", root, *argv])
        assert "cache-unusable" in o.stderr, o.stderr
    assert fingerprint(cache.resolve()) == before


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to make a folder another user's")
def test_a_cache_folder_of_another_user_is_not_used(tmp_path, monkeypatch):
    root = _copy(tmp_path, "mermaid")
    cache = tmp_path / "cache"
    cache.mkdir(mode=0o700)
    os.chown(cache, 65534, 65534)
    monkeypatch.setenv("SAMCTL_CACHE_DIR", str(cache))
    o = _run(["--root", root, "ls"])
    assert "cache-unusable" in o.stderr and "another user" in o.stderr
    assert list(cache.iterdir()) == []


@pytest.mark.parametrize("kind", sorted(k for k in MOVABLE if k in ("claude-code", "codex")))
@pytest.mark.parametrize("how", ["world-writable", "symlink-attic"])
def test_a_data_folder_open_to_others_refuses_every_move(tmp_path, kind, how):
    root = _copy(tmp_path, kind)
    data = Path(os.environ["XDG_DATA_HOME"]) / "samctl"
    data.mkdir(mode=0o700, exist_ok=True)
    if how == "world-writable":
        os.chmod(data, 0o777)
    else:
        elsewhere = root / "stash"
        elsewhere.mkdir()
        os.symlink(elsewhere, data / "attic")
    ids = [m["id"] for m in __import__("orjson").loads(_run(["--root", root, "ls", "--format", "json"]).stdout)]
    TALLY.trees += 1
    before = fingerprint(root)
    for argv in (["rm", "--yes", ids[0]], ["archive", "--copy", ids[0]], ["archive", "--yes", ids[0]]):
        o = _run(["--root", root, "--no-cache", *argv], expect=(2,))
        assert "data folder cannot be used" in o.stderr, o.stderr
    assert fingerprint(root) == before


# --- a folder ~1,200 deep in the store -----------------------------------------------------------------


def _deep(folder: Path, levels: int = 1200) -> None:
    folder.mkdir(exist_ok=True)
    here = os.open(folder, os.O_RDONLY)
    for _ in range(levels):
        os.mkdir("d", dir_fd=here)
        nxt = os.open("d", os.O_RDONLY, dir_fd=here)
        os.close(here)
        here = nxt
    os.close(os.open("f", os.O_WRONLY | os.O_CREAT, 0o600, dir_fd=here))
    os.close(here)


def _undeep(folder: Path) -> None:
    p = folder
    while (p / "d").is_dir():
        p = p / "d"
    for f in p.iterdir():
        f.unlink()
    while p != folder:
        p.rmdir()
        p = p.parent


@pytest.mark.parametrize("kind", [k for k in ROOTS if k != "chatgpt"])
def test_a_folder_1200_deep_in_the_store_crashes_nothing(tmp_path, kind):
    from samctl.stores import open_store

    root = _copy(tmp_path, kind)
    store = open_store(str(root))
    conv = store.conv_dir if store.conv_dir.is_dir() else store.conv_dir.parent
    deep = conv / "deep"
    _deep(deep)
    TALLY.trees += 1
    try:
        ids = [m["id"] for m in __import__("orjson").loads(_run(["--root", root, "ls", "--format", "json"]).stdout)]
        for argv in (["check"], ["search", "the"], ["stats"]):
            _run(["--root", root, *argv])
        if kind in MOVABLE and ids:
            for argv in (["rm", "--dry-run", ids[-1]], ["archive", "--copy", "--force", ids[-1]]):
                _run(["--root", root, *argv], expect=(0, 1, 3))  # (1: SAM's pinned conversation)
        assert (deep / "/".join(["d"] * 1200) / "f").exists()
    finally:
        _undeep(deep)
