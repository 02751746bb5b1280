"""gc_paused: the collector is off inside, restored after, and what was built is aged, not lost."""

import gc

import pytest

from samctl.gcpause import gc_paused


def test_collector_is_off_inside_and_restored_after_even_on_error():
    assert gc.isenabled()
    with pytest.raises(RuntimeError):
        with gc_paused():
            assert not gc.isenabled()
            raise RuntimeError("boom")
    assert gc.isenabled()
    gc.disable()
    try:
        with gc_paused():
            pass
        assert not gc.isenabled()  # it was off before: it stays off
    finally:
        gc.enable()


def test_what_the_block_built_goes_to_the_oldest_generation_and_stays_collectable():
    class Node:
        pass

    with gc_paused():
        built = [{"i": i} for i in range(1000)]
        cycle = Node()
        cycle.me = cycle
    assert gc.get_count()[0] < 100  # the young generation was emptied, not left to rescan
    assert gc.is_tracked(built) and gc.get_freeze_count() == 0
    assert any(o is built for o in gc.get_objects(generation=2))
    del cycle
    assert gc.collect() >= 1  # the cycle made inside is still collected


def test_a_process_that_froze_objects_keeps_them_frozen():
    gc.freeze()
    try:
        frozen = gc.get_freeze_count()
        with gc_paused():
            [{} for _ in range(100)]
        assert gc.get_freeze_count() == frozen
    finally:
        gc.unfreeze()
