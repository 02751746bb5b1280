"""Wrong types at every field and depth bombs, for every store registered in ``records.TARGETS``.

The normal run takes a small fixed sample of each class for each store (a few seconds); the whole sweep
(every field of every record, every value) is marked slow and run by ``.ci/adversarial``.  A crash is an
exception escaping a store's reading methods or the renderers, or an ``internal-error`` finding.
"""

from __future__ import annotations

import random
import shutil

import pytest

from tests.adversarial import records as R
from tests.adversarial.harness import TALLY

STORES = sorted(R.TARGETS)
KINDS = {"types": R.type_mutations, "depth": R.depth_mutations}


def _mutations(store: str, kind: str, tmp_path):
    t = R.TARGETS[store]
    root = R.copy_fixture(t, tmp_path / "orig")
    recs = t.records(root)
    shutil.rmtree(tmp_path / "orig")
    return t, [(i, m) for i, r in enumerate(recs) for m in KINDS[kind](r)]


def _run(t, i, mutation, dest) -> str | None:
    label, path, value = mutation
    root = R.copy_fixture(t, dest)
    try:
        t.records(root)[i].put(path, value)
    except R.Skip:
        shutil.rmtree(dest)
        return None
    TALLY.cases += 1
    crash = R.exercise(root)
    if crash is None and t.archive is not None:  # the same mutation inside the app's archive
        TALLY.cases += 1
        packed = t.archive(root)
        crash = R.exercise(packed)
        packed.unlink()
    shutil.rmtree(dest)
    if crash:
        TALLY.note("crashes", f"{t.store}: {label}")
        return f"{label}:\n{crash}"
    return None


def _sample(muts: list, n: int) -> list:
    """``n`` mutations spread over the records and fields (fixed seed: the same cases every run)."""
    return random.Random(31).sample(muts, min(n, len(muts)))


@pytest.mark.parametrize("kind", sorted(KINDS))
@pytest.mark.parametrize("store", STORES)
def test_sample(store, kind, tmp_path):
    t, muts = _mutations(store, kind, tmp_path)
    assert muts, f"{store}: no {kind} mutations: the generator found no record"
    crashes = [c for n, (i, m) in enumerate(_sample(muts, 8)) if (c := _run(t, i, m, tmp_path / f"m{n}"))]
    assert crashes == [], crashes[0]


@pytest.mark.slow
@pytest.mark.parametrize("kind", sorted(KINDS))
@pytest.mark.parametrize("store", STORES)
def test_sweep(store, kind, tmp_path):
    t, muts = _mutations(store, kind, tmp_path)
    crashes = [c for n, (i, m) in enumerate(muts) if (c := _run(t, i, m, tmp_path / f"m{n}"))]
    assert crashes == [], f"{len(crashes)} of {len(muts)}; first: {crashes[0]}"


def test_every_store_is_registered():
    """A new store gets these generators by registering its demo fixture here."""
    from samctl.stores import STORES as REGISTRY

    assert set(R.TARGETS) == set(REGISTRY)


@pytest.mark.slow
@pytest.mark.parametrize("store", STORES)
def test_what_parsing_builds_is_capped(store, tmp_path):
    """48 MiB of empty objects (under every default cap, 1.3 GB once parsed) in a record samctl parses:
    ls and check stay under 600 MB and report it."""
    t = R.TARGETS[store]
    root = R.copy_fixture(t, tmp_path / "s")
    label = R.put_build_bomb(t, root)
    for cmd in (["ls"], ["check"]):
        TALLY.cases += 1
        code, peak, err = R.peak_rss_mb(["--root", str(root), *cmd])
        assert b"Traceback" not in err and b"internal error" not in err, (label, err[-1500:])
        assert code in (0, 3) and peak < 600, (label, cmd, code, peak, err[-600:])
