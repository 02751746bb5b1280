"""Pausing Python's cyclic garbage collector around bulk work."""

from __future__ import annotations

import gc
from contextlib import contextmanager

_keep_frozen = False  # set once in a process whose frozen objects must stay frozen


def keep_frozen() -> None:
    """Mark this process as one whose frozen objects stay frozen (a forked worker: its parent froze
    what it held before forking).  ``gc.get_freeze_count`` walks every frozen object, so asking
    it at each pause would cost the parent's whole heap each time."""
    global _keep_frozen
    _keep_frozen = True


@contextmanager
def gc_paused():
    """Run the block with the cyclic collector off (restored after, even on error).

    For code that builds hundreds of thousands of small acyclic containers (a
    parsed log, a listing of every conversation): the collector would rescan
    them again and again as they pile up and could free none of them, since
    reference counting already frees everything they hold.

    On the way out, everything alive is moved to the oldest generation
    (``freeze`` then ``unfreeze``, both O(1)): otherwise the first collection
    after re-enabling would walk every object the block built, only to find
    them all alive, and walk them again a generation later.  They stay
    collectable: the next full collection, which runs as rarely as it would
    anyway, still sees them.  A process that froze objects itself (a
    pre-forking server) is left alone: unfreezing would undo its freeze.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if not _keep_frozen and gc.get_freeze_count() == 0:
            gc.freeze()
            gc.unfreeze()
        if was_enabled:
            gc.enable()
