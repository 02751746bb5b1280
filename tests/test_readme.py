"""The README is a front page that must stay true: every link in it and in docs/ resolves (to a file, and to
a heading where it names one), and every command of its shell session runs on the bundled demo archive."""

from __future__ import annotations

import os
import re
import shlex
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from samctl.cli import cli

TOP = Path(__file__).resolve().parent.parent
PAGES = [TOP / "README.md", TOP / "bench" / "README.md", *sorted((TOP / "docs").rglob("*.md"))]
LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^```.*?^```", re.S | re.M)


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: lowercase, punctuation but '-' and '_' dropped, spaces to '-'."""
    text = re.sub(r"[`*]", "", heading.strip().lower())
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def _anchors(page: Path) -> set[str]:
    text = FENCE.sub("", page.read_text(encoding="utf-8"))
    return {_slug(m.group(1)) for m in re.finditer(r"^#+\s+(.*)$", text, re.M)}


def _links(page: Path):
    text = FENCE.sub("", page.read_text(encoding="utf-8"))
    text = re.sub(r"`[^`\n]*`", "", text)  # code spans are not links
    for m in LINK.finditer(text):
        yield m.group(1)


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(TOP)))
def test_every_relative_link_resolves(page):
    broken = []
    for target in _links(page):
        if re.match(r"^[a-z]+:", target):  # http:, https:, mailto:
            continue
        path, _, anchor = target.partition("#")
        dest = (page.parent / path).resolve() if path else page
        if not dest.exists():
            broken.append(f"{target}: no such file")
        elif anchor and dest.suffix == ".md" and anchor not in _anchors(dest):
            broken.append(f"{target}: no heading '{anchor}' in {dest.name}")
    assert not broken, f"{page.name}: " + "; ".join(broken)


def _session_commands() -> list[str]:
    """The `$ samctl ...` lines of the README's shell session (```console blocks)."""
    text = (TOP / "README.md").read_text(encoding="utf-8")
    cmds = []
    for block in re.findall(r"^```console\n(.*?)^```", text, re.S | re.M):
        cmds += [line[2:] for line in block.splitlines() if line.startswith("$ samctl ")]
    return cmds


def test_readme_shows_a_shell_session():
    cmds = _session_commands()
    assert len(cmds) >= 4, cmds
    for verb in ("stores", "ls", "search", "show"):
        assert any(c.split()[1] == verb for c in cmds), f"the README's session has no `samctl {verb}`"


@pytest.mark.parametrize("line", _session_commands())
def test_readme_session_command_runs(line, tmp_path, monkeypatch):
    """Each command of the session, on a copy of the demo archive named as the quick start names it."""
    demo = tmp_path / "demo"
    shutil.copytree(TOP / "fixtures" / "demo", demo, symlinks=True)
    roots = (TOP / "fixtures" / "demo-roots.txt").read_text(encoding="utf-8").strip()
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("SAMCTL_ROOT", roots.replace("fixtures/demo", str(demo)))
    for var in ("CLAUDE_CONFIG_DIR", "CODEX_HOME", "LLM_USER_PATH"):
        monkeypatch.delenv(var, raising=False)
    argv = shlex.split(line)[1:]
    result = CliRunner().invoke(cli, argv, prog_name="samctl", catch_exceptions=False)
    assert result.exit_code == 0, f"{line}: exit {result.exit_code}\n{result.stderr}"
    assert result.stdout.strip(), f"{line}: printed nothing"
    assert os.path.isdir(demo)
