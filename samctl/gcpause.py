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
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
