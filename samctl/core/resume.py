"""resume: the app's own command to go back into a conversation, as the store declares it
(``Store.resume_command``)."""

from __future__ import annotations

import shlex


def resume_of(store, meta) -> dict | None:
    """``{"argv", "command", "cwd"}`` (``command``: the argv as one shell line; ``cwd``: the folder to run it
    in, or None), or None when the app has no resume command."""
    got = store.resume_command(meta)
    if got is None:
        return None
    argv, cwd = got
    return {"argv": list(argv), "command": shlex.join(argv), "cwd": cwd}


def resume_line(resume: dict) -> str:
    """The command as one line to paste: ``cd DIR && CMD`` when it has a folder."""
    if resume.get("cwd"):
        return f"cd {shlex.quote(resume['cwd'])} && {resume['command']}"
    return resume["command"]
