"""samctl completion: click's scripts, and conversation ids completed from the store."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from samctl.cli import cli
from samctl.cli.common import complete_ids

SAM_ID = "8B58CBC4-ACA7-4811-AE66-C01921690310"


@pytest.mark.parametrize(
    "shell, marker",
    [
        ("bash", "complete -o nosort -F _samctl_completion samctl"),
        ("zsh", "#compdef samctl"),
        ("fish", "complete --no-files --command samctl"),
    ],
)
def test_scripts(run, shell, marker):
    r = run("completion", shell)
    assert r.exit_code == 0 and marker in r.stdout and "_SAMCTL_COMPLETE" in r.stdout


def test_unknown_shell_is_a_usage_error(run):
    r = run("completion", "tcsh")
    assert r.exit_code == 2 and "'tcsh' is not one of 'bash', 'zsh', 'fish'" in r.stderr


def _complete(words: str, cword: int, shell: str = "bash", env=None):
    env = {"_SAMCTL_COMPLETE": f"{shell}_complete", "COMP_WORDS": words, "COMP_CWORD": str(cword), **(env or {})}
    r = CliRunner().invoke(cli, [], env=env, prog_name="samctl")
    return r


def test_ids_complete_for_show_and_export(sam_demo, mermaid_demo):
    r = _complete(f"samctl --root {mermaid_demo} show 2026081", 4)
    assert r.exit_code == 0 and r.stdout.split() == ["plain,20260810_140307_512", "plain,20260812_091500_004"]
    r = _complete(f"samctl --root {sam_demo} export 8b", 4)  # SAM ids complete whatever the case typed
    assert r.stdout.split() == [f"plain,{SAM_ID}"]
    r = _complete("samctl export C2", 2, env={"SAMCTL_ROOT": str(sam_demo)})
    assert r.stdout.split() == ["plain,C2A1F0E4-3B5D-4E6F-8A9B-0C1D2E3F4A5B"]


def test_zsh_gets_titles_as_descriptions(sam_demo):
    r = _complete(f"samctl --root {sam_demo} show 8", 4, shell="zsh")
    assert r.stdout.split("\n")[:3] == ["plain", SAM_ID, "Portland weekend trip"]


def test_memory_only_scopes_are_not_offered(sam_demo):
    r = _complete(f"samctl --root {sam_demo} show 5E", 4)  # a shared-topic folder, no conversation.json
    assert r.stdout.strip() == ""


@pytest.mark.parametrize(
    "words, cword",
    [
        ("samctl --root /no/such/place show 8", 4),
        ("samctl --root {root}/conversations/x show", 4),
        ("samctl --root {root} export ../../etc", 4),
    ],
)
def test_completion_never_fails(tmp_path, words, cword):
    r = _complete(words.replace("{root}", str(tmp_path)), cword)
    assert r.exit_code == 0 and r.stdout.strip() == "" and "Traceback" not in (r.stderr or "")


def test_complete_ids_returns_nothing_on_any_problem():
    assert complete_ids(None, None, "8B") == []
    assert complete_ids(object(), None, None) == []


def test_help_shows_examples(run):
    r = run("completion", "--help")
    assert r.exit_code == 0 and 'eval "$(samctl completion bash)"' in r.stdout


@pytest.mark.parametrize("command", ["log", "recover", "rm", "archive"])
def test_every_command_that_takes_an_id_completes_it(mermaid_demo, command):
    r = _complete(f"samctl --root {mermaid_demo} {command} 2026081", 4)
    assert r.exit_code == 0 and r.stdout.split() == ["plain,20260810_140307_512", "plain,20260812_091500_004"]


def test_restore_completes_the_ids_in_the_attic(run, mermaid_demo):
    assert _complete(f"samctl --root {mermaid_demo} restore 2026", 4).stdout.strip() == ""  # empty attic
    assert run("--root", mermaid_demo, "rm", "20260812_091500_004").exit_code == 0
    r = _complete(f"samctl --root {mermaid_demo} restore 2026", 4)
    assert r.exit_code == 0 and r.stdout.split() == ["plain,20260812_091500_004"]
    r = _complete(f"samctl --root {mermaid_demo} restore 2026", 4, shell="zsh")
    assert r.stdout.split("\n")[:2] == ["plain", "20260812_091500_004"]
    assert r.stdout.split("\n")[2].startswith("Add a --json flag to the report command")  # its title


def test_log_completes_mermaid_ids_only(sam_demo, mermaid_demo):
    """log reads mermaid event logs; SAM ids would be refused (exit 2), so none are offered."""
    assert _complete(f"samctl --root {sam_demo} log 8b", 4).stdout.strip() == ""
    r = _complete(f"samctl --root {mermaid_demo} log 20260810", 4)
    assert r.stdout.split() == ["plain,20260810_140307_512"]
