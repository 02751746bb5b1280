"""Tool calls labelled as the apps show them (samctl/toollabel.py), whatever the arguments hold."""

import pytest

from samctl.injected import first_typed, injected, title_text
from samctl.toollabel import duration_text, tool_label


@pytest.mark.parametrize(
    "name,args,label",
    [
        ("Bash", {"command": "git status", "description": "Show status"}, "Bash(git status)"),
        ("Edit", {"file_path": "src/app.py", "old_string": "a", "new_string": "b"}, "Edit(src/app.py)"),
        ("Read", '{"file_path": "/etc/hosts", "limit": 5}', "Read(/etc/hosts)"),
        ("Grep", {"pattern": "TODO", "path": "src"}, "Grep(TODO)"),
        ("shell", '{"command": ["git", "commit", "-m", "fix it"], "workdir": "/w"}', "shell(git commit -m 'fix it')"),
        ("shell", {"command": ["bash", "-lc", "ls -la | head"]}, "shell(ls -la | head)"),
        ("exec_command", '{"cmd": "pytest -q"}', "exec_command(pytest -q)"),
        ("local_shell", {"type": "exec", "command": ["grep", "-rn", "x y", "."]}, "local_shell(grep -rn 'x y' .)"),
        (
            "apply_patch",
            "*** Begin Patch\n*** Update File: a.py\n-x\n+y\n*** Add File: b.py\n*** End Patch",
            "apply_patch(a.py, b.py)",
        ),
        ("TodoWrite", {"todos": [{"content": "a"}, {"content": "b"}]}, "TodoWrite(2 items)"),
        ("weather", {"city": "Lyon"}, "weather(Lyon)"),
        ("add", {"a": 2, "b": 3}, "add"),
        ("t", "[" * 100_000, "t(" + "[" * 96 + "…)"),
        ("t", None, "t"),
        ("Bash", {"command": "echo a\n\necho b"}, "Bash(echo a echo b)"),
    ],
)
def test_labels(name, args, label):
    assert tool_label(name, args) == label


def test_a_label_is_one_clipped_line():
    got = tool_label("Bash", {"command": "x" * 500}, width=40)
    assert len(got) == 40 and got.endswith("…)") and "\n" not in got


def test_durations_read_as_codex_shows_them():
    assert [duration_text(s) for s in (0.25, 5.6, 42.4, 125)] == ["0.2s", "5.6s", "42s", "2m 5s"]


def test_injected_turns_and_titles():
    for text in (
        "<command-name>/clear</command-name>",
        "  <local-command-stdout>x</local-command-stdout>",
        "<task-notification>\n<task-id>b7636e2</task-id>",
        "Caveat: The messages below were generated",
        "<system-reminder>x</system-reminder>",
        "<environment_context>",
        "[Request interrupted by user]",
    ):
        assert injected(text), text
    assert not injected("Fix the <command-name> parser")
    assert first_typed(["", "<command-name>/model</command-name>", "  ", "Explain X", "later"]) == "Explain X"
    assert (
        " ".join(title_text("Review this\n<system-reminder>\nnoise\n</system-reminder>\nplease").split())
        == "Review this please"
    )
