"""Messages that suggest a samctl command, carried as structure (docs/scope.md).

A lower layer (a store, the attic, core) that tells the user what to run next writes the command as a
``Suggestion`` (command, id, store) inside a ``Said``: a ``str`` whose value is the message with each
command as ``samctl COMMAND [ID] [REST]``, and whose ``parts`` keep the commands apart from the prose.
Everything that reads a message as text (tests, JSON, ``in``) sees that plain value.  The cli renders
the parts once (``render``), each command with its store's ``--root`` only when the pasted command would
not find the store by itself; it never rewrites the text.

Invariants: ``str(said) == "".join(plain parts)``; a ``Said`` joined to other text (``+``, an f-string)
is plain text from then on (its commands without ``--root``: still correct, only less helpful).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Suggestion:
    """A command samctl suggests (``restore ID``): ``command`` with its options before the id, ``rest``
    after it; ``store`` the store it is about (None: the store the message's path is in, else the run's)."""

    command: str  # "restore", "attic --repair", "show"
    id: str | None = None
    store: object = field(default=None, compare=False)
    rest: str = ""  # what follows the id ("--at 12")

    def words(self, root_arg: str = "") -> str:
        """``samctl [ROOT_ARG] COMMAND [ID] [REST]``."""
        return " ".join(p for p in ("samctl", root_arg, self.command, self.id or "", self.rest) if p)


class Said(str):
    """A message holding suggested commands: the plain text as a ``str``, the pieces in ``parts``."""

    parts: tuple

    def __new__(cls, *parts):
        flat: list = []
        for p in parts:  # (a Said among the parts: its own parts, so its commands stay structured)
            flat.extend(p.parts if isinstance(p, Said) else (p,))
        parts = tuple(p for p in flat if p != "")
        self = super().__new__(cls, "".join(p.words() if isinstance(p, Suggestion) else str(p) for p in parts))
        self.parts = parts
        return self

    def __reduce__(self):  # (a worker process hands findings back by pickle: the parts go too)
        return (Said, self.parts)


def said(*parts) -> Said:
    """A message of text and ``Suggestion`` parts, e.g. ``said("run ", Suggestion("compact"), " to clear them")``."""
    return Said(*parts)


def render(text, command: Callable[[Suggestion], str] | None = None) -> str:
    """``text`` for a person: each suggested command of a ``Said`` as ``command(suggestion)`` gives it
    (default: as typed, without ``--root``); any other text as it is."""
    if not isinstance(text, Said) or command is None:
        return str(text) if text is not None else ""
    return "".join(command(p) if isinstance(p, Suggestion) else str(p) for p in text.parts)


# What to do about a ``too-large`` file (samctl.fs's word, as a suggestion): it is not damaged, only bigger than
# samctl reads by default.
BIGGER_CAP = Said("read it with a bigger cap, e.g. `", Suggestion("--max-file-size 1G ..."), "`")
