"""What a conversation's project is called, and which projects a ``--project`` spec picks.

A project is the folder a conversation was held in (``ConversationMeta.project``), or None.  Pure functions
of text and the current folder: they read nothing on disk.
"""

from __future__ import annotations

import os


def project_matcher(spec: str):
    """A test of a conversation's project against ``spec``: a folder (it holds a ``/``, or is ``.``, ``..``
    or ``~...``) matches the projects at it and below it, as Claude Code's ``/resume`` lists the current
    folder's sessions (``ls --here`` is the current folder); any other text is a project's short name (its
    folder's last part, case-insensitive).  A conversation without a project never matches."""
    if "/" in spec or spec in (".", "..") or spec.startswith("~") or (os.sep != "/" and os.sep in spec):
        roots = {os.path.normpath(os.path.abspath(os.path.expanduser(spec)))}
        roots.add(os.path.realpath(next(iter(roots))))

        def under(project):
            if not project:
                return False
            p = os.path.normpath(project)
            return any(p == r or p.startswith(r.rstrip(os.sep) + os.sep) for r in roots)

        return under
    name = spec.casefold()
    return lambda project: bool(project) and project_name(project).casefold() == name


def project_name(project: str | None) -> str:
    """A project's short name: the last part of its folder ("" for none)."""
    return os.path.basename(os.path.normpath(project)) if project else ""
