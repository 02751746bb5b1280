"""Turns in the user's role that the person did not type: what a title must skip.

Coding apps put wrappers and injected context in user turns: a slash command and its output, a notice
about them, a background task's notification, hooks' and system reminders, the environment and
instructions Codex sends first.  A title is the first user turn that is none of these.  The list, by the
text a turn starts with (after leading whitespace):

Claude Code
- ``<command-name>``, ``<command-message>``, ``<command-args>``: a slash command the person ran (``/clear``)
- ``<local-command-stdout>``, ``<local-command-stderr>``, ``<local-command-caveat>``: its output
- ``Caveat: The messages below were generated`` (and any ``Caveat: ``): the notice before local commands
- ``<bash-input>``, ``<bash-stdout>``, ``<bash-stderr>``: a ``!`` shell line and its output
- ``<task-notification>``: a background task or agent finished
- ``<system-reminder>``, ``<user-prompt-submit-hook>``: injected by the app or a hook
- ``[Request interrupted by user``: the marker an interrupt leaves
- ``This session is being continued from a previous conversation``: the summary a compaction writes
- ``Base directory for this skill:``: a skill's instructions, injected when it is used

A ``<system-reminder>…</system-reminder>`` block inside a typed prompt is not part of the title either
(``title_text``).

Codex CLI
- ``<environment_context>``, ``<user_instructions>``, ``# AGENTS.md instructions``, ``<INSTRUCTIONS>``,
  ``<permissions instructions>``, ``<user_shell_command>``, ``<turn_aborted>``, ``<skill>``
"""

from __future__ import annotations

import re

_REMINDER = re.compile(r"<system-reminder>.*?(?:</system-reminder>|\Z)", re.S)

CLAUDE_CODE = (
    "<command-name>",
    "<command-message>",
    "<command-args>",
    "<local-command-stdout>",
    "<local-command-stderr>",
    "<local-command-caveat>",
    "Caveat: ",
    "<bash-input>",
    "<bash-stdout>",
    "<bash-stderr>",
    "<task-notification>",
    "<system-reminder>",
    "<user-prompt-submit-hook>",
    "[Request interrupted by user",
    "This session is being continued from a previous conversation",
    "Base directory for this skill:",
)
CODEX = (
    "<environment_context>",
    "<user_instructions>",
    "# AGENTS.md instructions",
    "<permissions instructions>",
    "<INSTRUCTIONS>",
    "<user_shell_command>",
    "<turn_aborted>",
    "<skill>",
)
PREFIXES = CLAUDE_CODE + CODEX


def injected(text: str) -> bool:
    """Whether a user turn's text is a wrapper or injected context (the list above), not a typed prompt."""
    return text.lstrip().startswith(PREFIXES)


def first_typed(texts) -> str | None:
    """The first of ``texts`` that a person typed (not empty, not injected), or None."""
    for t in texts:
        if t and t.strip() and not injected(t):
            return t
    return None


def title_text(text: str) -> str:
    """A typed prompt as a title reads it: ``<system-reminder>`` blocks the app added to it left out."""
    return _REMINDER.sub(" ", text) if "<system-reminder>" in text else text
