"""The commands samctl suggests (undo hints, error hints, finding hints) can be pasted as they
are: when the store was named with --root, the suggestion names it too; with SAMCTL_ROOT or the
default store it needs nothing."""

from __future__ import annotations

import shlex
import subprocess
import sys

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


def test_prose_that_mentions_samctl_is_left_alone():
    code = (
        "from samctl.core.scope import Scope; s = Scope(roots=('/x',), named=True);"
        "print(s.paste('another samctl is writing; run `samctl attic --repair`'))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out == "another samctl is writing; run `samctl --root /x attic --repair`\n"


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
