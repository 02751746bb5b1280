"""The commands samctl suggests (undo hints, error hints, finding hints) can be pasted as they
are: when the store was named with --root, the suggestion names it too; with SAMCTL_ROOT or the
default store it needs nothing."""

from __future__ import annotations

import shlex

MERMAID_ID = "20260812_091500_004"


def test_rm_undo_hint_repeats_root_and_works_when_pasted(run, mermaid_demo):
    r = run("--root", mermaid_demo, "rm", MERMAID_ID)
    assert r.exit_code == 0, r.stderr
    hint = next(x for x in r.stderr.splitlines() if x.startswith("undo with: "))
    assert hint.startswith(f"undo with: samctl --root {shlex.quote(str(mermaid_demo))} restore {MERMAID_ID}; ")
    argv = shlex.split(hint.removeprefix("undo with: ").split(";")[0])[1:]
    back = run(*argv)
    assert back.exit_code == 0, back.stderr
    assert (mermaid_demo / ".mermaid" / "conversations" / f"{MERMAID_ID}.json").exists()


def test_a_root_with_spaces_is_quoted(run, mermaid_demo, tmp_path):
    spaced = tmp_path / "my project"
    mermaid_demo.rename(spaced)
    r = run("--root", spaced, "archive", MERMAID_ID)
    assert r.exit_code == 0, r.stderr
    assert f"samctl --root '{spaced}' restore ID" in r.stderr


def test_with_samctl_root_the_hint_stays_short(run, mermaid_demo):
    r = run("rm", MERMAID_ID, env={"SAMCTL_ROOT": str(mermaid_demo)})
    assert r.exit_code == 0, r.stderr
    assert f"undo with: samctl restore {MERMAID_ID};" in r.stderr


def test_error_hints_and_findings_name_the_root(run, mermaid_demo):
    log = mermaid_demo / ".mermaid" / "conversations" / f"{MERMAID_ID}.jsonl"
    with open(log, "ab") as f:
        f.write(b'{"seq": 99, "torn')
    r = run("--root", mermaid_demo, "log", MERMAID_ID)
    assert r.exit_code == 3
    assert f"`samctl --root {shlex.quote(str(mermaid_demo))} recover {MERMAID_ID}`" in r.stderr
    e = run("--root", mermaid_demo, "restore", MERMAID_ID)  # not in the attic: an error with a hint
    assert e.exit_code != 0 and "--root" in e.stderr


def test_a_suggestion_is_structure_rendered_once_with_its_root():
    """Lower layers write a suggested command as a Suggestion (samctl.said); the cli renders it with the --root
    of its store, and no text is ever searched for "`samctl " to rewrite."""
    import pickle

    from samctl.core.scope import Scope
    from samctl.said import Suggestion, render, said

    s = Scope(roots=("/x",), named=True)
    msg = said("another samctl is writing; run `", Suggestion("attic --repair"), "`")
    assert msg == "another samctl is writing; run `samctl attic --repair`"  # (as plain text: no --root)
    assert render(msg, s.render) == "another samctl is writing; run `samctl --root /x attic --repair`"
    assert render(pickle.loads(pickle.dumps(msg)), s.render) == render(msg, s.render)  # (from a worker process)
    prose = "the file says `samctl ls` and samctl is fine"  # (text from a file, or plain prose: as it is)
    assert render(prose, s.render) == prose
    assert render(said("x ", msg, " y"), Scope().render) == "x another samctl is writing; run `samctl attic --repair` y"
    import samctl.core.scope as scope

    assert not hasattr(scope.Scope, "paste")  # (the text replace is gone)


def test_the_users_own_words_are_not_rewritten(run, sam_demo):
    r = run("--root", sam_demo, "show", "samctl ls")
    assert r.exit_code == 2 and "'samctl ls'" in r.stderr


def test_a_cap_hint_gets_the_root_too(run, mermaid_demo):
    r = run("--root", mermaid_demo, "--max-file-size", "2K", "show", "20260810_140307_512")
    assert f"`samctl --root {mermaid_demo} --max-file-size 1G ...`" in r.stderr


def test_a_root_with_control_characters_never_reaches_the_terminal_raw(run, mermaid_demo, tmp_path):
    odd = tmp_path / "p\x1b]0;PWNED\x07X"
    mermaid_demo.rename(odd)
    r = run("--root", odd, "restore", MERMAID_ID)
    assert r.exit_code == 4 and "--root" in r.stderr
    assert "\x1b" not in r.stderr and "\x07" not in r.stderr


def test_a_search_hit_suggests_show_with_its_own_store_s_root(run, mermaid_demo, sam_demo):
    """Over several named stores, a hit's `show` command names the root of the store it came from only, so it
    pastes as it is and stays short."""
    r = run("--root", sam_demo, "--root", mermaid_demo, "search", "flaky")
    assert r.exit_code == 0, r.stderr
    shows = [x.strip() for x in r.stdout.splitlines() if x.strip().startswith("samctl ") and " show " in x]
    assert shows, r.stdout
    for line in shows:
        assert line.startswith(f"samctl --root {shlex.quote(str(mermaid_demo))} show "), line
        assert str(sam_demo) not in line
    argv = shlex.split(shows[0])[1:]
    assert run(*argv, "--no-pager").exit_code == 0


def test_search_like_hints_name_the_root(run, sam_demo):
    """search's own hints (an unknown memory, a bad memory id) are suggestions too: pasted, they find the store."""
    root = shlex.quote(str(sam_demo))
    for like in ("0000aaaa", "zz"):
        r = run("--root", sam_demo, "search", "--like", like)
        assert r.exit_code in (2, 4), r.stderr
        assert f"`samctl --root {root} search QUERY --in memories --format json`" in r.stderr, r.stderr
