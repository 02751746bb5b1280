"""One view across stores (issue #23): without --root (or SAMCTL_ROOT) ls, show, export and stats cover every
store samctl finds on the machine; --root, repeatable, narrows to those roots; the commands that write or
judge keep one store (./.mermaid, else SAM's folder) unless `check --all-stores`.

The machine: a home with SAM, Claude Code, Codex and llm where each app keeps them, and a mermaid project and
a ChatGPT export named in samctl's config file; the current folder is empty."""

from __future__ import annotations

import json
import os
import shutil
import time

import pytest

from tests.conftest import REPO, fingerprint

DEMO = REPO / "fixtures" / "demo"
KINDS = ["chatgpt", "claude-code", "codex", "llm", "mermaid", "sam"]
# one conversation of each store kind: (store, an id prefix unique across the machine, its title)
ONE_OF_EACH = [
    ("sam", "8B58", "Portland weekend trip"),
    ("mermaid", "20260810_1403", "Fix the flaky test"),
    ("claude-code", "0b7c", "login timeout"),
    ("codex", "019c4a2e", "auth test failures"),
    ("llm", "01kzr0smm0w4j8n2t6y1b5e9ka", "Summarise instead"),
    ("chatgpt", "0f9e", "What is the speed of light?"),
]


@pytest.fixture
def machine(tmp_path, monkeypatch):
    home = tmp_path / "home"
    shutil.copytree(DEMO / "SAM", home / "Library" / "Application Support" / "SAM")
    shutil.copytree(DEMO / "claude_code", home / ".claude")
    shutil.copytree(DEMO / "codex", home / ".codex")
    (home / ".config" / "io.datasette.llm").mkdir(parents=True)
    shutil.copy(DEMO / "llm" / "logs.db", home / ".config" / "io.datasette.llm" / "logs.db")
    shutil.copytree(DEMO / "mermaid-project", tmp_path / "proj")
    shutil.copy(DEMO / "chatgpt" / "chatgpt-export.zip", tmp_path / "export.zip")
    (home / ".config" / "samctl").mkdir()
    (home / ".config" / "samctl" / "config.toml").write_text(
        f'roots = ["{tmp_path / "proj"}", "{tmp_path / "export.zip"}"]\n'
    )
    for top in (home, tmp_path / "proj"):  # private, as the apps make them (check finds nothing then)
        for dirpath, dirnames, filenames in os.walk(top):
            os.chmod(dirpath, 0o700)
            for name in filenames:
                os.chmod(os.path.join(dirpath, name), 0o600)
    old = time.time() - 3 * 86400  # idle sessions, whenever the checkout was made: not "changed in the last 10
    for top in (home / ".claude", home / ".codex"):  # minutes" (live), as files just checked out would be
        for dirpath, _, filenames in os.walk(top):
            for name in filenames:
                os.utime(os.path.join(dirpath, name), (old, old))
    (tmp_path / "cwd").mkdir()
    monkeypatch.chdir(tmp_path / "cwd")
    monkeypatch.setenv("HOME", str(home))
    return tmp_path


def _tree(tmp):
    return {p: fingerprint(tmp / p) for p in ("home", "proj")} | {"zip": (tmp / "export.zip").read_bytes()}


def _everything(tmp):
    """The machine's bytes and samctl's data folder (the attics of Claude Code and Codex)."""
    return _tree(tmp) | {"data": fingerprint(os.environ["XDG_DATA_HOME"])}


def _ids(run, parts, tmp) -> set:
    """The ids ``ls`` lists in the store at ``tmp / parts``."""
    r = run("--root", tmp.joinpath(*parts), "ls", "--format", "json")
    return {x["id"] for x in json.loads(r.stdout or "[]")}


def _ls(run, *args):
    r = run(*args, "ls", "--format", "json")
    return r, json.loads(r.stdout or "[]")


# -- ls -------------------------------------------------------------------------------------------------------


def test_ls_lists_every_store_in_one_order_with_a_store_field(run, machine):
    before = _tree(machine)
    r, rows = _ls(run)
    assert r.exit_code == 0, r.stderr
    assert sorted({x["store"] for x in rows}) == KINDS
    single = sum(
        len(_ls(run, "--root", root)[1])
        for root in (
            machine / "home" / "Library" / "Application Support" / "SAM",
            machine / "proj",
            machine / "home" / ".claude",
            machine / "home" / ".codex",
            machine / "home" / ".config" / "io.datasette.llm",
            machine / "export.zip",
        )
    )
    assert len(rows) == single
    recency = [x["last_activity"] for x in rows]
    assert recency == sorted(recency, reverse=True)
    assert _tree(machine) == before


def test_ls_table_names_each_rows_store(run, machine):
    r = run("ls")
    assert r.exit_code == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0].split()[:7] == ["ID", "CREATED", "UPDATED", "MSGS", "SIZE", "PIN", "STORE"]
    assert {kind for kind in KINDS if any(f"  {kind}  " in ln for ln in lines[1:])} == set(KINDS)


@pytest.mark.parametrize("sort", ["updated", "created", "title", "messages", "size"])
def test_limit_and_sort_apply_to_the_merged_list(run, machine, sort):
    _, every = _ls(run)
    rows = json.loads(run("ls", "--sort", sort, "--format", "json").stdout)
    # (created is each store's own text; its order is checked by the single-store tests)
    key = {
        "updated": lambda x: x["last_activity"],
        "created": lambda x: 0,
        "title": lambda x: x["title"].casefold(),
        "messages": lambda x: x["message_count"] or 0,
        "size": lambda x: x["size"] or 0,
    }[sort]
    assert [key(x) for x in rows] == sorted(map(key, rows), reverse=sort != "title")
    assert len(rows) == len(every) and len({x["store"] for x in rows}) == len(KINDS)
    top = json.loads(run("ls", "--sort", sort, "-n", "4", "--format", "json").stdout)
    assert [x["id"] for x in top] == [x["id"] for x in rows[:4]]
    rev = [json.loads(ln) for ln in run("ls", "--sort", sort, "-r", "-n", "3", "--format", "jsonl").stdout.splitlines()]
    assert [key(x) for x in rev] == sorted(map(key, rows), reverse=sort == "title")[:3]
    assert all("store" in x for x in rev)


def test_root_repeated_or_listed_in_samctl_root_narrows_to_those_stores(run, machine):
    sam = machine / "home" / "Library" / "Application Support" / "SAM"
    r, rows = _ls(run, "--root", machine / "proj", "--root", sam)
    assert r.exit_code == 0, r.stderr
    assert {x["store"] for x in rows} == {"mermaid", "sam"} and len(rows) == 6
    r2 = run("ls", "--format", "json", env={"SAMCTL_ROOT": f"{machine / 'proj'}{os.pathsep}{sam}"})
    assert r2.exit_code == 0 and json.loads(r2.stdout) == rows
    assert (
        run("--root", sam, "ls", "--format", "json", env={"SAMCTL_ROOT": str(machine / "proj")}).stdout
        == _ls(run, "--root", sam)[0].stdout
    )  # --root wins over SAMCTL_ROOT, as before


def test_one_root_is_exactly_that_store_as_before(run, machine):
    r, rows = _ls(run, "--root", machine / "home" / ".codex")
    assert r.exit_code == 0 and {x["store"] for x in rows} == {"codex"} and len(rows) == 6
    bad = run("--root", machine / "nothing-here", "ls")
    assert bad.exit_code == 4 and "no such folder" in bad.stderr


def test_a_store_that_cannot_be_read_is_a_finding_and_the_others_answer(run, machine):
    (machine / "broken.zip").write_bytes(b"PK\x03\x04 not really a zip")
    (machine / "nostore").mkdir()
    (machine / "home" / ".config" / "samctl" / "config.toml").write_text(
        f'roots = ["{machine / "proj"}", "{machine / "broken.zip"}", "{machine / "nostore"}"]\n'
    )
    before = _tree(machine)
    r, rows = _ls(run)
    assert r.exit_code == 3, r.stderr
    assert "store-unreadable" in r.stderr and str(machine / "nostore") in r.stderr
    assert str(machine / "broken.zip") in r.stderr
    assert sorted({x["store"] for x in rows}) == ["claude-code", "codex", "llm", "mermaid", "sam"]
    assert _tree(machine) == before


def test_a_root_of_several_that_is_no_store_is_a_finding(run, machine):
    r, rows = _ls(run, "--root", machine / "proj", "--root", machine / "nothing-here")
    assert r.exit_code == 3 and "no such folder" in r.stderr
    assert {x["store"] for x in rows} == {"mermaid"}


def test_no_store_at_all_is_exit_4_saying_where_it_looked(run, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for args in (["ls"], ["show", "8b58"], ["export", "--all", "--to", "jsonl"], ["stats"]):
        r = run(*args)
        assert r.exit_code == 4, (args, r.stderr)
        assert "no store found" in r.stderr and ".claude" in r.stderr and ".codex" in r.stderr, r.stderr
        assert "config.toml" in r.stderr and "--root" in r.stderr and r.stdout == ""


def test_one_place_that_cannot_be_opened_and_nothing_else_is_its_own_error(run, tmp_path, monkeypatch):
    (tmp_path / "home" / ".codex").mkdir(parents=True)  # Codex's folder, but no sessions in it
    (tmp_path / "home" / ".codex" / "notes.txt").write_text("hi")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)
    r = run("ls")
    assert r.exit_code == 4 and r.stderr.splitlines()[0].startswith("samctl: error: "), r.stderr


# -- show and export: ids across stores ------------------------------------------------------------------------


@pytest.mark.parametrize("kind,prefix,title", ONE_OF_EACH)
def test_show_finds_an_id_in_any_store(run, machine, kind, prefix, title):
    r = run("show", prefix, "--format", "json")
    assert r.exit_code == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["store"] == kind and doc["title"].startswith(title)
    assert run("show", prefix, "--no-pager").exit_code == 0


@pytest.mark.parametrize("fmt", ["markdown", "html", "json", "jsonl", "sam-package"])
@pytest.mark.parametrize("kind,prefix,title", ONE_OF_EACH)
def test_export_works_for_a_conversation_of_every_store(run, machine, kind, prefix, title, fmt):
    before = _tree(machine)
    out = machine / "out" / f"one.{fmt}"
    r = run("export", prefix, "--to", fmt, "-o", out)
    assert r.exit_code == 0, r.stderr
    data = out.read_text()
    if fmt == "jsonl":
        assert {json.loads(ln)["store"] for ln in data.splitlines()} == {kind}
    elif fmt == "json":
        assert json.loads(data)["store"] == kind and json.loads(data)["title"].startswith(title)
    elif fmt == "sam-package":
        assert json.loads(data)
    else:
        assert title.split()[0] in data
    assert _tree(machine) == before


def test_export_several_ids_of_several_stores_and_all(run, machine):
    r = run("export", "0b7c", "019c4a2e", "C2A1", "--to", "jsonl")
    assert r.exit_code == 0, r.stderr
    stores = [json.loads(ln)["store"] for ln in r.stdout.splitlines()]
    assert list(dict.fromkeys(stores)) == ["claude-code", "codex", "sam"]
    r = run("export", "--all", "--to", "html", "-o", machine / "site")
    assert r.exit_code == 0, r.stderr
    _, rows = _ls(run)
    assert len(list((machine / "site").glob("*.html"))) == len(rows) + 1  # and index.html
    index = (machine / "site" / "index.html").read_text()
    assert all(kind in index for kind in KINDS)
    pkg = run("export", "--all", "--since", "2026-08-01", "--to", "sam-package")
    assert pkg.exit_code == 0, pkg.stderr
    assert json.loads(pkg.stdout)


def test_an_ambiguous_prefix_lists_the_candidates_with_their_stores(run, machine):
    before = _tree(machine)
    for args in (["show", "5"], ["export", "5", "--to", "json"]):
        r = run(*args)
        assert r.exit_code == 2, r.stderr
        line = r.stderr.splitlines()[0]
        assert "'5' is ambiguous: 3 conversations match" in line, line
        for cid, kind in (("5d1e7f20", "claude-code"), ("5973b6c0", "codex"), ("5b1f3c2a", "chatgpt")):
            assert cid in line and f"({kind})" in line.split(cid, 1)[1][:60], line
        assert r.stdout == ""
    assert _tree(machine) == before


def test_an_id_in_no_store_is_not_found_naming_where_it_looked(run, machine):
    r = run("show", "20991231_1")
    assert r.exit_code == 4 and "no conversation matches '20991231_1'" in r.stderr
    bad = run("show", "not/an/id")
    assert bad.exit_code == 2 and "is not a conversation id or id prefix" in bad.stderr


def test_show_with_an_unreadable_store_still_shows_and_says_so(run, machine):
    (machine / "nostore").mkdir()
    (machine / "home" / ".config" / "samctl" / "config.toml").write_text(f'roots = ["{machine / "nostore"}"]\n')
    r = run("show", "0b7c", "--format", "json")
    assert r.exit_code == 3 and json.loads(r.stdout)["store"] == "claude-code"
    assert "store-unreadable" in r.stderr


# -- stats, check, and the commands that keep one store ---------------------------------------------------------


def test_stats_covers_every_store(run, machine):
    r = run("stats", "--format", "json")
    assert r.exit_code == 0, r.stderr
    assert sorted(s["store"] for s in json.loads(r.stdout)["stores"]) == KINDS
    one = run("stats", machine / "proj", "--format", "json")
    assert [s["store"] for s in json.loads(one.stdout)["stores"]] == ["mermaid"]


def test_check_covers_every_store_in_one_json_shape(run, machine):
    r = run("check", "--format", "json")
    assert r.exit_code == 0, r.stderr
    assert sorted(s["store"] for s in json.loads(r.stdout)["stores"]) == KINDS  # (issue #33: every store)
    assert isinstance(json.loads(r.stdout)["findings"], list)  # (the README's jq '.findings[].code')
    every = run("check", "--all-stores", "--format", "json")
    assert every.exit_code == 0, every.stderr
    assert sorted(s["store"] for s in json.loads(every.stdout)["stores"]) == KINDS
    text = run("check", "--all-stores")
    assert text.exit_code == 0 and sum("errors," in ln for ln in text.stderr.splitlines()) == len(KINDS)


def test_check_fix_all_stores_fixes_what_it_may_and_says_which_stores_it_only_reads(run, machine):
    before = {p: fingerprint(machine / "home" / p) for p in (".claude", ".codex")}
    r = run("check", "--all-stores", "--fix", "--format", "json")
    assert r.exit_code == 0, r.stderr  # (issue #33: the stores it cannot fix are skipped, not findings)
    doc = json.loads(r.stdout)
    assert sorted(s["store"] for s in doc["stores"]) == ["mermaid", "sam"]
    reasons = [s["reason"] for s in doc["skipped"]]
    assert sum("samctl only reads it, and check --fix writes" in x for x in reasons) == 2  # llm, chatgpt
    assert sum("check --fix would rewrite them" in x for x in reasons) == 2  # Claude Code, Codex
    assert {p: fingerprint(machine / "home" / p) for p in (".claude", ".codex")} == before


def test_index_shows_the_index_of_each_root(run, machine):
    sam = machine / "home" / "Library" / "Application Support" / "SAM"
    before = _tree(machine)
    r = run("--root", machine / "proj", "--root", sam, "index")
    assert r.exit_code == 0 and r.stderr.count("== ") == 2 and r.stdout.count("index:") == 2, r.stderr
    assert _tree(machine) == before


def test_a_suggested_command_works_as_pasted_without_root(run, machine):
    # (issue #33: an id is looked up in every store, so the bare suggestion acts on the finding's store)
    conv = machine / "proj" / ".mermaid" / "conversations"
    (conv / "20260810_140307_512.json").write_text('{"broken')
    r = run("show", "20260810_1403", "--no-pager")
    assert r.exit_code == 3, r.stderr
    assert "`samctl recover 20260810_140307_512`" in r.stderr, r.stderr
    pasted = run("recover", "20260810_140307_512", "--dry-run")
    assert pasted.exit_code in (0, 3) and "20260810_140307_512" in pasted.stdout, pasted.stderr


def test_completion_offers_the_ids_of_every_store_a_command_covers(run, machine):
    from click.testing import CliRunner

    from samctl.cli import cli

    def complete(words, cword, env=None):
        env = {"_SAMCTL_COMPLETE": "bash_complete", "COMP_WORDS": words, "COMP_CWORD": str(cword), **(env or {})}
        return CliRunner().invoke(cli, [], env=env, prog_name="samctl").stdout.split()

    assert complete("samctl show 5", 2) == [
        "plain,5d1e7f20-8a9b-4c3d-9e8f-7a6b5c4d3e2f",
        "plain,5973b6c0-94b8-487b-a530-2aeb6098ae0e",
        "plain,5b1f3c2a-8d4e-4f60-9a7b-0c1d2e3f4a5b",
    ]
    assert complete(f"samctl --root {machine / 'proj'} show 2026081", 4) == [
        "plain,20260810_140307_512",
        "plain,20260812_091500_004",
    ]
    assert complete("samctl rm 5", 2) == complete("samctl show 5", 2)  # (issue #33: every command, every store)
    two = f"{machine / 'proj'}{os.pathsep}{machine / 'home' / '.codex'}"
    assert complete("samctl export 2", 2, {"SAMCTL_ROOT": two}) == [
        "plain,20260810_140307_512",
        "plain,20260812_091500_004",
        "plain,20260901_170000_250",
    ]


def test_candidates_name_the_folder_only_where_two_stores_of_one_kind_match(run, machine):
    shutil.copytree(machine / "proj", machine / "proj2")
    (machine / "home" / ".config" / "samctl" / "config.toml").write_text(
        f'roots = ["{machine / "proj"}", "{machine / "proj2"}"]\n'
    )
    r = run("show", "20260810_1403")
    assert r.exit_code == 2, r.stderr
    assert f"20260810_140307_512 (mermaid at {machine / 'proj' / '.mermaid' / 'conversations'})" in r.stderr
    assert f"20260810_140307_512 (mermaid at {machine / 'proj2' / '.mermaid' / 'conversations'})" in r.stderr
    one = run("show", "019c")  # several of one store: its kind only
    assert one.exit_code == 2 and "3 conversations match" in one.stderr, one.stderr
    assert one.stderr.splitlines()[0].count("(codex)") == 3 and " at " not in one.stderr.splitlines()[0]


@pytest.mark.skipif(
    __import__("tests.unprivileged").unprivileged.skip_reason() is not None, reason="no unprivileged user"
)
def test_a_store_folder_samctl_may_not_read_is_a_finding_and_the_others_answer():
    from tests import unprivileged as nobody

    work = nobody.workdir()
    try:
        home = work / "home"
        shutil.copytree(DEMO / "SAM", home / "Library" / "Application Support" / "SAM")
        shutil.copytree(DEMO / "codex", home / ".codex")
        nobody.give(work)
        os.chmod(home / ".codex", 0)
        before = fingerprint(home / "Library"), fingerprint(home / ".codex")  # (samctl's cache goes in home)
        r = nobody.run(["ls", "--format", "json"], home, cwd=work)
        assert r.returncode == 3, r.stderr
        assert "store-unreadable: home/.codex: permission denied: home/.codex" in r.stderr, r.stderr  # (cwd: work)
        assert {x["store"] for x in json.loads(r.stdout)} == {"sam"}
        alone = nobody.run(["--root", home / ".codex", "ls"], home, cwd=work)  # one store: its error, as before
        assert alone.returncode == 4 and "permission denied" in alone.stderr
        assert (fingerprint(home / "Library"), fingerprint(home / ".codex")) == before
    finally:
        nobody.cleanup(work)


def test_hostile_config_roots_and_usual_places_are_findings_never_a_crash(run, machine, monkeypatch):
    # was: "internal error: RuntimeError: Could not determine home directory" (exit 1) from ~nosuchuser, in
    # every command that looks for stores (samctl stores too); the same bad place named twice, two findings
    shutil.rmtree(machine / "home" / ".claude")
    os.mkfifo(machine / "home" / ".claude")
    os.symlink(machine / "loop", machine / "loop")
    (machine / "home" / ".config" / "samctl" / "config.toml").write_text(
        'roots = ["~nosuchuser-samctl/x", "/tmp/a\\u0000b", "", "/dev/null", "%s", "%s"]\n'
        % (machine / "home" / ".claude", machine / "loop")
    )
    before = _tree(machine) | {"claude": os.lstat(machine / "home" / ".claude").st_mtime_ns}
    for args in (
        ["ls"],
        ["stores"],
        ["show", "0b7c"],
        ["export", "--all", "--to", "jsonl"],
        ["stats"],
        ["check", "--all-stores"],
    ):
        r = run(*args)
        assert r.exit_code == (4 if args[0] == "show" else 3), (args, r.stderr)
        assert "internal error" not in r.stderr and "Traceback" not in r.stderr, (args, r.stderr)
        assert r.stderr.count("bad-config") == 3 and "~nosuchuser-samctl/x" in r.stderr, (args, r.stderr)
        assert r.stderr.count(f"{machine / 'home' / '.claude'}: is not a folder") == 1, (args, r.stderr)
        assert "symlink loop" in r.stderr and "/dev/null: is not a folder" in r.stderr, (args, r.stderr)
    assert _tree(machine) | {"claude": os.lstat(machine / "home" / ".claude").st_mtime_ns} == before


def test_no_home_folder_to_look_in_leaves_the_current_project(run, machine, monkeypatch):
    # HOME unset and no password entry (a container's arbitrary uid): expanduser raises RuntimeError
    import pathlib

    def no_home(self):
        if str(self).startswith("~"):
            raise RuntimeError("Could not determine home directory.")
        return self

    monkeypatch.setattr(pathlib.Path, "expanduser", no_home)
    monkeypatch.chdir(machine / "proj")
    r, rows = _ls(run)
    assert r.exit_code == 0, r.stderr
    assert {x["store"] for x in rows} == {"mermaid"}
    assert run("check").exit_code == 0
    monkeypatch.chdir(machine / "cwd")
    for args in (["ls"], ["check"]):
        r = run(*args)
        assert r.exit_code == 4 and "no store found" in r.stderr, (args, r.stderr)


@pytest.mark.parametrize("fmt", ["markdown", "html"])
def test_one_id_in_two_stores_exports_to_two_files(run, machine, fmt):
    # was: the second conversation's file replaced the first's (both named <id>.md), one of them lost
    shutil.copytree(machine / "proj", machine / "proj2")
    conv = machine / "proj2" / ".mermaid" / "conversations"
    (machine / "home" / ".config" / "samctl" / "config.toml").write_text(
        f'roots = ["{machine / "proj"}", "{machine / "proj2"}"]\n'
    )
    r = run("export", "--all", "--to", fmt, "-o", machine / "out")
    assert r.exit_code == 0, r.stderr
    _, rows = _ls(run)
    files = sorted(p.name for p in (machine / "out").iterdir() if p.name != "index.html")
    assert len(files) == len(rows) and f"20260810_140307_512-2.{'md' if fmt == 'markdown' else 'html'}" in files
    assert conv.exists()


def test_check_fix_all_stores_goes_on_past_a_busy_store(run, machine, monkeypatch):
    # was: SAM running ended the whole run with exit 5 at SAM's turn, the stores after it never checked
    monkeypatch.setenv("SAMCTL_ASSUME_SAM_RUNNING", "1")
    r = run("check", "--all-stores", "--fix", "--format", "json")
    assert r.exit_code == 3, r.stderr
    assert "not-checked" in r.stderr and "SAM is running" in r.stderr
    assert [s["store"] for s in json.loads(r.stdout)["stores"]] == ["mermaid"]
    sam = machine / "home" / "Library" / "Application Support" / "SAM"
    one = run("--root", sam, "check", "--fix")  # one store: busy, as before
    assert one.exit_code == 5


# -- search ---------------------------------------------------------------------------------------------------


def _search(run, *args, code=0):
    r = run("search", *args, "--format", "json", "-n", "200")
    assert r.exit_code == code, (r.exit_code, r.stderr)
    return r, json.loads(r.stdout or "[]")


def test_search_ranks_every_store_in_one_list(run, machine):
    before = _tree(machine)
    r, hits = _search(run, "test", "--per-conversation", "0")  # (best first: no conversation's run cut)
    assert {h["store"] for h in hits} >= {"mermaid", "claude-code", "codex"}
    assert [h["score"] for h in hits] == sorted((h["score"] for h in hits), reverse=True)
    assert _tree(machine) == before  # (the indexes live in the cache)


@pytest.mark.parametrize("kind, prefix, title", ONE_OF_EACH)
def test_search_finds_a_conversation_of_every_store(run, machine, kind, prefix, title):
    r, hits = _search(run, title, f"store:{kind}")
    assert hits and {h["store"] for h in hits} == {kind}
    assert any(h["conversation_id"].lower().startswith(prefix.lower()) for h in hits)


def test_statistics_are_over_the_union_of_the_stores(run, machine):
    """A word rare in one store but common in the union weighs as the union says: the score a row gets
    searched alone (one --root) differs from the one it gets among every store."""
    _, together = _search(run, "test")
    mermaid_root = str(machine / "proj")
    alone = json.loads(run("--root", mermaid_root, "search", "test", "--format", "json", "-n", "200").stdout)
    key = lambda h: (h["conversation_id"], h["position"])  # noqa: E731
    both = {key(h): h["score"] for h in together if h["store"] == "mermaid"}
    assert both and any(abs(both[key(h)] - h["score"]) > 1e-9 for h in alone if key(h) in both)


def test_search_says_which_store_it_could_not_read(run, machine):
    (machine / "broken.zip").write_bytes(b"PK\x03\x04 not really a zip")
    (machine / "home" / ".config" / "samctl" / "config.toml").write_text(
        f'roots = ["{machine / "proj"}", "{machine / "broken.zip"}"]\n'
    )
    r, hits = _search(run, "test", code=3)
    assert hits and str(machine / "broken.zip") in r.stderr and "not a readable zip" in r.stderr


def test_show_opens_a_hit_of_a_read_only_store_at_its_message(run, machine):
    _, hits = _search(run, "speed of light", "store:chatgpt")
    h = hits[0]
    r = run("show", h["conversation_id"], "--at", str(h["position"]), "--no-pager")
    assert r.exit_code == 0 and h["text"].splitlines()[0][:30] in r.stdout
