"""A store's identity (issue #31, findings 6, 17 and 20): an llm database is the store, not its folder;
overlapping roots of one kind are one store."""

import json
import os
import shutil
import sqlite3

import pytest

from tests.cli.readonly_stores import demo_copy
from tests.conftest import fingerprint


def _db_with_word(src, dest, word):
    shutil.copy(src, dest)
    with sqlite3.connect(dest) as c:
        c.execute("UPDATE responses SET prompt = prompt || ?", (" " + word,))
    os.utime(dest, (1e9, 1e9))  # (not written moments ago: the index's quick path may trust it)
    return dest


@pytest.fixture
def dbs(tmp_path):
    src = demo_copy(tmp_path, "llm") / "logs.db"
    folder = tmp_path / "dbs"
    folder.mkdir()
    a = _db_with_word(src, folder / "a.db", "aardvarkword")
    b = _db_with_word(src, folder / "b.db", "zanzibarword")
    return a, b


def test_two_databases_in_one_folder_are_two_stores(run, dbs, monkeypatch):
    a, b = dbs
    monkeypatch.delenv("SAMCTL_INDEX_RECHECK")  # (a search trusts its index's last full check, as for a user)
    before = fingerprint(a.parent)
    assert run("--root", a, "search", "aardvarkword").exit_code == 0  # builds a.db's index first
    r = run("--root", b, "search", "zanzibarword", "--format", "json")
    assert r.exit_code == 0, r.stderr
    assert json.loads(r.stdout), "b.db answered from a.db's index"
    r = run("--root", b, "search", "aardvarkword", "--format", "json")
    assert r.exit_code == 1 and json.loads(r.stdout) == []  # (nothing found: 1, as grep)
    assert fingerprint(a.parent) == before


def test_config_roots_list_every_database(run, dbs, tmp_path, monkeypatch):
    a, b = dbs
    conf = tmp_path / "conf"
    (conf / "samctl").mkdir(parents=True)
    (conf / "samctl" / "config.toml").write_text(f'roots = ["{a}", "{b}"]\n')
    monkeypatch.setenv("XDG_CONFIG_HOME", str(conf))
    r = run("ls", "--format", "json")
    assert r.exit_code == 0, r.stderr
    rows = json.loads(r.stdout)
    assert len(rows) == 12  # 6 in each
    r = run("stores", "--format", "json")
    assert r.exit_code == 0, r.stderr
    assert len([s for s in json.loads(r.stdout) if s.get("store", s.get("name")) == "llm"]) == 2, r.stdout


def test_database_outside_llms_folder_leaves_its_folder_the_users(run, dbs, tmp_path, monkeypatch):
    home = tmp_path / "h"
    home.mkdir()
    db = home / "my.db"
    shutil.copy(dbs[0], db)
    monkeypatch.setenv("SAMCTL_CACHE_DIR", str(home / ".cache" / "samctl"))
    r = run("--root", db, "index")
    assert r.exit_code == 0, r.stderr
    assert "cache" not in r.stderr
    r = run("--root", db, "search", "aardvarkword")
    assert r.exit_code == 0 and "cache-in-store" not in r.stderr
    r = run("--root", db, "export", "--all", "-o", home / "exports")
    assert r.exit_code == 0, r.stderr
    assert len(os.listdir(home / "exports")) >= 6


def test_export_into_llms_own_folder_still_refused(run, tmp_path):
    llm = demo_copy(tmp_path, "llm")
    before = fingerprint(llm)
    r = run("--root", llm / "logs.db", "export", "--all", "-o", llm / "out")
    assert r.exit_code == 2 and "export never writes there" in r.stderr, r.stderr
    assert fingerprint(llm) == before


def test_overlapping_roots_are_one_store(run, tmp_path, monkeypatch):
    cc = demo_copy(tmp_path, "claude_code")
    project = sorted((cc / "projects").iterdir())[0]
    both = run("--root", cc, "--root", project, "ls", "--format", "json")
    assert both.exit_code == 0, both.stderr
    alone = run("--root", cc, "ls", "--format", "json")
    ids = [x["id"] for x in json.loads(both.stdout)]
    assert ids == [x["id"] for x in json.loads(alone.stdout)] and len(ids) == len(set(ids))
    full = next(x["id"] for x in json.loads(alone.stdout) if (project / (x["id"] + ".jsonl")).exists())
    r = run("--root", project, "--root", cc, "show", full)
    assert r.exit_code == 0, r.stderr
    assert "ambiguous" not in r.stderr
    r = run("--root", cc, "--root", project, "search", "the", "--format", "json")
    assert r.exit_code in (0, 3), r.stderr
    keys = [(h["id"], h.get("message_index", h.get("index"))) for h in json.loads(r.stdout)]
    assert len(keys) == len(set(keys))
