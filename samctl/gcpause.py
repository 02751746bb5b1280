"""Pausing Python's cyclic garbage collector around bulk work."""

from __future__ import annotations

import gc
from contextlib import contextmanager


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
        if gc.get_freeze_count() == 0:
            gc.freeze()
            gc.unfreeze()
        if was_enabled:
            gc.enable()
