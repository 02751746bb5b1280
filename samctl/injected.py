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

Codex CLI
- ``<environment_context>``, ``<user_instructions>``, ``# AGENTS.md instructions``, ``<INSTRUCTIONS>``,
  ``<permissions instructions>``, ``<user_shell_command>``, ``<turn_aborted>``, ``<skill>``
"""

from __future__ import annotations

CLAUDE_CODE = ("<command-name>", "<command-message>", "<command-args>", "<local-command-stdout>",
               "<local-command-stderr>", "<local-command-caveat>", "Caveat: ", "<bash-input>", "<bash-stdout>",
               "<bash-stderr>", "<task-notification>", "<system-reminder>", "<user-prompt-submit-hook>",
               "[Request interrupted by user", "This session is being continued from a previous conversation")
CODEX = ("<environment_context>", "<user_instructions>", "# AGENTS.md instructions", "<permissions instructions>",
         "<INSTRUCTIONS>", "<user_shell_command>", "<turn_aborted>", "<skill>")
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
