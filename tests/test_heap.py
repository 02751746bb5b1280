"""keep_freed_memory: on glibc, arrays made and dropped in turn reuse their pages instead of faulting
new ones in each time; elsewhere it does nothing and says so."""

import os
import subprocess
import sys

import pytest

from samctl.search import heap

LOOP = """
import resource, sys
import numpy as np
from samctl.search import heap
if sys.argv[1] == "kept":
    assert heap.keep_freed_memory()
xs = [np.ones(1 << 20) for _ in range(4)]  # (the first round: pages faulted in either way)
del xs
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(10):  # four 8 MiB arrays alive at once, then all freed: what a query does, smaller
    xs = [np.ones(1 << 20) for _ in range(4)]
    del xs
print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
"""


def _faults(mode: str) -> int:
    out = subprocess.run([sys.executable, "-c", LOOP, mode], capture_output=True, text=True, check=True)
    return int(out.stdout)


@pytest.mark.skipif(
    not (os.confstr("CS_GNU_LIBC_VERSION") or "").startswith("glibc") if hasattr(os, "confstr") else True,
    reason="glibc's malloc only",
)
def test_freed_arrays_are_reused_not_faulted_in_again():
    default, kept = _faults("default"), _faults("kept")
    assert kept * 4 < default, (kept, default)


def test_without_glibc_it_does_nothing_and_says_so(monkeypatch):
    monkeypatch.setattr(heap, "_done", [])
    monkeypatch.setattr(heap.os, "confstr", lambda name: None)
    assert heap.keep_freed_memory() is False
    assert heap.keep_freed_memory() is False  # (decided once)
