"""A tool call's one-line label as the coding apps show it: ``Bash(git status)``, ``Edit(src/app.py)``,
``shell(git diff --stat)``.

A bottom module (no samctl imports), so render and search can both use it.  Invariants: never raises on
any arguments (a JSON string, a dict, anything); the label is one line (whitespace runs folded) of at most
``width`` characters; a call whose main argument cannot be told is its tool name alone.
"""

from __future__ import annotations

import json
import shlex

# The argument the app shows for a tool, in the order tried: Claude Code's tools name theirs
# (command, file_path, pattern, url, ...); Codex's shell gives an argv array (``command``), exec_command a
# string (``cmd``); MCP and other tools fall back to the first of these keys they have.
MAIN_KEYS = (
    "command",
    "cmd",
    "file_path",
    "notebook_path",
    "pattern",
    "path",
    "url",
    "query",
    "description",
    "prompt",
    "skill",
    "subject",
    "name",
)
# A shell wrapper Codex puts around a command line (``["bash", "-lc", "git status"]``): shown as the line.
_SHELLS = ("bash", "sh", "zsh", "/bin/bash", "/bin/sh", "/bin/zsh", "/usr/bin/bash", "/usr/bin/zsh")


def parsed(arguments):
    """``arguments`` as a value: a JSON string parsed (a string that is not JSON stays as it is)."""
    if isinstance(arguments, str):
        try:
            return json.loads(arguments)
        except (ValueError, RecursionError):
            return arguments
    return arguments


def shell_line(argv) -> str | None:
    """A command array as one shell line (``shlex.join``); ``[bash, -lc, LINE]`` as LINE; None if not an argv."""
    if not isinstance(argv, list) or not argv or not all(isinstance(a, str) for a in argv):
        return None
    if len(argv) == 3 and argv[0] in _SHELLS and argv[1] in ("-c", "-lc", "-l"):
        return argv[2]
    return shlex.join(argv)


def patch_files(patch: str) -> list[str]:
    """The files an ``apply_patch`` body names (``*** Update File: PATH`` and its Add/Delete siblings)."""
    out = []
    for line in patch.splitlines():
        for head in ("*** Update File: ", "*** Add File: ", "*** Delete File: "):
            if line.startswith(head):
                out.append(line[len(head) :].strip())
    return out


def main_argument(name: str, arguments) -> str | None:
    """The argument that says what the call did, as text, or None."""
    value = parsed(arguments)
    if isinstance(value, str):
        files = patch_files(value) if "*** Begin Patch" in value else []
        return ", ".join(files) if files else (value if name != "apply_patch" else None)
    if not isinstance(value, dict):
        return shell_line(value)
    if isinstance(value.get("type"), str) and value.get("type") == "exec":  # local_shell_call's action
        line = shell_line(value.get("command"))
        if line:
            return line
    for key in MAIN_KEYS:
        v = value.get(key)
        if isinstance(v, str) and v.strip():
            if key in ("cmd", "command") and "*** Begin Patch" in v:
                return ", ".join(patch_files(v)) or None
            return v
        line = shell_line(v)
        if line:
            return line
    if len(value) == 1:  # a tool of one argument: that argument
        (only,) = value.values()
        if isinstance(only, (str, int, float)) and not isinstance(only, bool):
            return str(only)
    if isinstance(value.get("todos"), list):
        return f"{len(value['todos'])} items"
    if isinstance(value.get("plan"), list):
        return f"{len(value['plan'])} steps"
    return None


def tool_label(name: str, arguments, width: int = 100) -> str:
    """``Name(main argument)`` on one line, clipped to ``width`` characters (``…``); ``Name`` alone when
    there is no main argument."""
    name = " ".join(str(name).split()) or "?"
    try:
        arg = main_argument(name, arguments)
    except (TypeError, ValueError, RecursionError):
        arg = None
    if not arg:
        return name[:width]
    arg = " ".join(arg.split())
    room = max(8, width - len(name) - 2)
    if len(arg) > room:
        arg = arg[: room - 1] + "…"
    return f"{name}({arg})"


def duration_text(seconds: float) -> str:
    """A wall time as Codex shows it: ``0.3s``, ``12s``, ``2m 5s``."""
    if seconds < 10:
        return f"{seconds:.1f}s"
    if seconds < 60:
        return f"{seconds:.0f}s"
    m, s = divmod(int(seconds + 0.5), 60)
    return f"{m}m {s}s"
