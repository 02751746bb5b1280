"""stores/workers.py: results in the order of the parts, whether in workers or here, and never
more than a few parts handed to the workers ahead of the caller."""

from __future__ import annotations

import concurrent.futures
import os

import pytest

from samctl.stores import open_store, workers


def _square(store, part):
    return [(x * x, os.getpid(), store.name) for x in part]


def test_results_come_back_in_order_from_workers(mermaid_demo):
    store = open_store(str(mermaid_demo))
    parts = [[i, i + 1] for i in range(0, 60, 2)]
    here = list(workers.ordered_map(store, _square, parts, n_jobs=1))
    there = list(workers.ordered_map(store, _square, parts, n_jobs=2))
    assert (
        [[v for v, _, _ in r] for r in there]
        == [[v for v, _, _ in r] for r in here]
        == [[i * i, (i + 1) * (i + 1)] for i in range(0, 60, 2)]
    )
    assert {pid for r in here for _, pid, _ in r} == {os.getpid()}
    assert os.getpid() not in {pid for r in there for _, pid, _ in r}
    assert {name for r in there for _, _, name in r} == {"mermaid"}  # each worker has the store


def test_few_parts_or_one_job_stay_here(mermaid_demo):
    store = open_store(str(mermaid_demo))
    for n_jobs, parts in ((1, [[1]] * 10), (2, [[1]])):
        assert {pid for r in workers.ordered_map(store, _square, parts, n_jobs=n_jobs) for _, pid, _ in r} == {
            os.getpid()
        }


def _nested(store, part):
    """What a worker gets when the work it does maps over parts again (a listing inside a check, say)."""
    return [
        (os.getpid(), [pid for r in workers.ordered_map(store, _square, [[1], [2], [3]], n_jobs=2) for _, pid, _ in r])
        for _ in part
    ]


def test_a_worker_never_starts_workers_of_its_own(mermaid_demo):
    """A worker that started its own pool would start as many workers again: the inner map runs in the worker."""
    store = open_store(str(mermaid_demo))
    out = [x for r in workers.ordered_map(store, _nested, [[0], [1], [2]], n_jobs=2) for x in r]
    assert len(out) == 3
    for worker, inner in out:
        assert worker != os.getpid() and inner == [worker] * 3


@pytest.fixture
def submitted(monkeypatch) -> list:
    """What the pools of the test submit (their arguments), as they submit it."""
    out = []
    real = concurrent.futures.ProcessPoolExecutor.submit

    def counting(self, *args, **kw):
        out.append(args)
        return real(self, *args, **kw)

    monkeypatch.setattr(concurrent.futures.ProcessPoolExecutor, "submit", counting)
    return out


def test_parts_are_handed_out_a_few_at_a_time(mermaid_demo, submitted):
    store = open_store(str(mermaid_demo))
    it = workers.ordered_map(store, _square, [[i] for i in range(40)], n_jobs=2)
    for taken in range(1, 6):
        next(it)
        assert len(submitted) <= taken + workers.AHEAD * 2
    assert len(list(it)) == 35 and len(submitted) == 40


def test_ahead_bounds_what_is_given_out(mermaid_demo, submitted):
    it = workers.ordered_map(open_store(str(mermaid_demo)), _square, [[i] for i in range(40)], n_jobs=2, ahead=5)
    next(it)
    assert 5 * 2 <= len(submitted) <= 1 + 5 * 2
    assert len(list(it)) == 39


def _collected(store, part):
    """What the worker's collector tracks of the objects the parent made before the fork: the marker
    objects the parent holds, if the collector still sees them (frozen: it does not)."""
    import gc

    return [sum(1 for o in gc.get_objects() if type(o) is _Marker) for _ in part]


class _Marker:
    pass


def test_the_parents_objects_are_frozen_while_workers_fork_and_thawed_after(mermaid_demo):
    """Python's collector writes into each object it tracks: forked workers that collect the parent's
    objects copy their pages.  They are frozen while the workers start (the workers' collector leaves
    them alone), and the parent's collector has them back once the workers run."""
    import gc

    held = [_Marker() for _ in range(1000)]
    out = [
        n for r in workers.ordered_map(open_store(str(mermaid_demo)), _collected, [[0], [1], [2]], n_jobs=2) for n in r
    ]
    assert out == [0, 0, 0]  # (in the workers: frozen, out of the collector's sight)
    assert gc.get_freeze_count() == 0 and sum(1 for o in gc.get_objects() if type(o) is _Marker) == len(held)


def test_jobs_from_the_environment(monkeypatch):
    monkeypatch.setenv("SAMCTL_JOBS", "3")
    assert workers.jobs() == 3
    monkeypatch.setenv("SAMCTL_JOBS", "0")
    assert workers.jobs() == 1
    monkeypatch.setenv("SAMCTL_JOBS", "lots")
    assert 1 <= workers.jobs() <= workers.MAX_JOBS


def _fail_on_three(store, part):
    from samctl.errors import FileProblem

    if 3 in part:
        raise FileProblem("too-large", "/x/3.json", "simulated: over the cap")
    return part


def test_an_error_in_a_worker_reaches_the_caller_whole(mermaid_demo):
    from samctl.errors import FileProblem

    store = open_store(str(mermaid_demo))
    for n_jobs in (1, 2):
        it = workers.ordered_map(store, _fail_on_three, [[i] for i in range(8)], n_jobs=n_jobs)
        assert [next(it) for _ in range(3)] == [[0], [1], [2]]
        with pytest.raises(FileProblem) as exc:
            next(it)
        assert (exc.value.code, exc.value.path, exc.value.message) == (
            "too-large",
            "/x/3.json",
            "simulated: over the cap",
        )


class _TwoArgs(Exception):
    """An exception that pickles but cannot be rebuilt (its __init__ wants two arguments)."""

    def __init__(self, a, b):
        super().__init__(f"{a} and {b}")


def _fail_oddly(store, part):
    if 2 in part:
        raise _TwoArgs("this", "that")
    return part


def test_an_error_that_cannot_come_back_whole_is_named_not_a_broken_pool(mermaid_demo):
    store = open_store(str(mermaid_demo))
    it = workers.ordered_map(store, _fail_oddly, [[i] for i in range(6)], n_jobs=2)
    assert [next(it) for _ in range(2)] == [[0], [1]]
    with pytest.raises(RuntimeError, match=r"^_TwoArgs: this and that$"):
        next(it)
    here = workers.ordered_map(store, _fail_oddly, [[i] for i in range(6)], n_jobs=1)
    with pytest.raises(_TwoArgs):  # (in one process it is itself)
        list(here)


def test_errors_survive_a_pickle():
    import pickle

    from samctl.attic.entries import AtticProblem
    from samctl.errors import Busy, FileProblem, SamctlError

    for e in (
        SamctlError("m", hint="h"),
        Busy("b", hint="wait"),
        FileProblem("bad-json", "/p", "why"),
        AtticProblem("gone", ["f1", "f2"], hint="repair"),
    ):
        e.hint = e.hint or "given later"
        back = pickle.loads(pickle.dumps(e))
        assert type(back) is type(e) and back.args == e.args and back.__dict__ == e.__dict__
        assert str(back) == str(e) and back.exit_code == e.exit_code


_KILLED_PARENT = r"""
import os, sys, time
sys.path.insert(0, sys.argv[3])
from samctl.search.index.update import _writer_lock
from samctl.lock import store_lock
from samctl.stores import open_store, workers
import sleepy

store = open_store(sys.argv[1])
with store_lock(store), _writer_lock(__import__("pathlib").Path(sys.argv[2])):
    for _ in workers.ordered_map(store, sleepy.sleep_and_say, [[sys.argv[3]]] * 8, n_jobs=2):
        pass
"""

_SLEEPY = """
import os, time

def sleep_and_say(store, part):
    with open(os.path.join(part[0], f"worker-{os.getpid()}"), "w"):
        pass
    time.sleep(120)
"""


def _gone(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"  # a zombie no one has reaped yet is gone too
    except FileNotFoundError:
        return True


def _until(check, seconds: float = 20.0) -> bool:
    """Poll ``check`` until it holds or ``seconds`` pass (a deadline for liveness, not a speed test)."""
    import time

    deadline = time.monotonic() + seconds
    while not check():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def _free(path) -> bool:
    import fcntl

    fd = os.open(path, os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return True
    except BlockingIOError:
        return False
    finally:
        os.close(fd)


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="reads /proc to see the workers")
@pytest.mark.parametrize("sig", ["SIGKILL", "SIGTERM"])
def test_workers_of_a_killed_samctl_exit_and_hold_no_lock(mermaid_demo, tmp_path, sig):
    """`timeout` (SIGTERM: Python's default is to die at once, no cleanup) or `kill -9` in the middle
    of a listing or an index build: the workers must not live on, waiting for work forever, holding
    the store's lock or the index's writer lock (the next samctl would wait for them)."""
    import signal
    import subprocess
    import sys

    from samctl.lock import samctl_dir

    (tmp_path / "sleepy.py").write_text(_SLEEPY)
    (tmp_path / "parent.py").write_text(_KILLED_PARENT)
    index = tmp_path / "index"
    index.mkdir()
    child = subprocess.Popen(
        [sys.executable, str(tmp_path / "parent.py"), str(mermaid_demo), str(index), str(tmp_path)],
        cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
    )
    try:
        assert _until(lambda: len(list(tmp_path.glob("worker-*"))) == 2, 60), "the workers never started"
        pids = [int(p.name.split("-")[1]) for p in tmp_path.glob("worker-*")]
        store_lock_file = samctl_dir(open_store(str(mermaid_demo))) / "lock"
        assert not _free(store_lock_file) and not _free(index / "lock")
        child.send_signal(getattr(signal, sig))
        child.wait(30)
        assert _until(lambda: _free(store_lock_file) and _free(index / "lock")), "a worker still holds a lock"
        assert _until(lambda: all(_gone(p) for p in pids)), "the workers outlived samctl"
    finally:
        child.kill()
        child.wait()
        for p in tmp_path.glob("worker-*"):
            try:
                os.kill(int(p.name.split("-")[1]), signal.SIGKILL)
            except ProcessLookupError:
                pass


def _die_on_two(store, part):
    import signal

    if 2 in part:
        os.kill(os.getpid(), signal.SIGKILL)  # as the OOM killer would
    return part


def test_a_worker_that_dies_is_an_error_that_says_so(mermaid_demo):
    from samctl.errors import SamctlError

    store = open_store(str(mermaid_demo))
    it = workers.ordered_map(store, _die_on_two, [[i] for i in range(6)], n_jobs=2)
    with pytest.raises(SamctlError) as exc:
        list(it)
    assert type(exc.value) is SamctlError and exc.value.exit_code == 1
    assert exc.value.message == "a worker process stopped before it finished its work (killed, or out of memory?)"
    assert "run the command again" in exc.value.hint and "SAMCTL_JOBS=1" in exc.value.hint


def test_a_worker_death_seen_by_a_submit_is_the_same_error(mermaid_demo, monkeypatch):
    """The pool can learn of a dead worker before its result is asked for: the next submit raises then
    (seen in CI when the killed worker's part was among the first), and it says the same."""
    import concurrent.futures
    from concurrent.futures.process import BrokenProcessPool

    from samctl.errors import SamctlError

    real, calls = concurrent.futures.ProcessPoolExecutor.submit, []

    def submit(self, *a, **k):
        calls.append(1)
        if len(calls) == 5:  # (the first after the four given out ahead)
            raise BrokenProcessPool("A child process terminated abruptly")
        return real(self, *a, **k)

    monkeypatch.setattr(concurrent.futures.ProcessPoolExecutor, "submit", submit)
    store = open_store(str(mermaid_demo))
    with pytest.raises(SamctlError) as exc:
        list(workers.ordered_map(store, _die_on_two, [[i + 10] for i in range(8)], n_jobs=2))
    assert exc.value.message == "a worker process stopped before it finished its work (killed, or out of memory?)"
    assert len(calls) == 5


def _pause_costs(store, part):
    """In a worker: whether a pause asks gc for its freeze count (a walk of every frozen object)."""
    import gc

    from samctl.gcpause import gc_paused

    frozen = gc.get_freeze_count()
    real, calls = gc.get_freeze_count, []
    gc.get_freeze_count = lambda: calls.append(1) or real()
    try:
        with gc_paused():
            pass
    finally:
        gc.get_freeze_count = real
    return [(frozen > 0, len(calls), gc.get_freeze_count() == frozen)]


def test_a_workers_pauses_do_not_walk_the_parents_frozen_heap(mermaid_demo):
    # the parent's objects are frozen when the workers fork; counting them at every pause made a
    # check's cost per session grow with the archive
    out = [
        x
        for r in workers.ordered_map(open_store(str(mermaid_demo)), _pause_costs, [[0], [1], [2]], n_jobs=2)
        for x in r
    ]
    assert out == [(True, 0, True)] * 3
