"""Every writing command on the trees whose files no writing command may change (``hostile.PROTECTED``):
a SQLite file with its own triggers, views or referencing tables (search --touch, compact's VACUUM,
restore --as-new must refuse it), and a shared-topic scope whose conversation cannot be read (rm, rm
--purge, archive, compact must keep it).  After every command the protected files are byte for byte,
mode and mtime, what they were."""

from __future__ import annotations

import pytest

from tests.adversarial import hostile
from tests.adversarial.harness import TALLY, fingerprint, invoke

CASES = [c for c in hostile.cases() if c.name in hostile.PROTECTED]

SQLITE_STEPS = [
    ("touch", ["search", "budget portland", "--touch", "--force"], True),
    (
        "touch-memories",
        ["search", "budget portland", "--in", "memories", "--rank", "sam", "--threshold", "0", "--touch", "--force"],
        True,
    ),
    ("compact", ["compact", "--force"], True),
    ("check-fix", ["check", "--fix"], True),
    ("rm", ["rm", hostile.SID, "--yes", "--force", "--include-pinned"], False),
    ("restore-as-new", ["restore", hostile.SID, "--as-new", "--force"], False),
    ("restore", ["restore", hostile.SID, "--force"], True),
    ("archive", ["archive", hostile.SID, "--yes", "--force", "--include-pinned"], False),
    ("restore-archived-as-new", ["restore", hostile.SID, "--as-new", "--force"], False),
    ("restore-archived", ["restore", hostile.SID, "--force"], True),
]
SCOPE_STEPS = [
    ("rm", ["rm", hostile.TOPIC, "--yes", "--force"]),
    ("purge", ["rm", "--purge", hostile.TOPIC, "--yes", "--force"]),
    ("archive", ["archive", hostile.TOPIC, "--yes", "--force"]),
    ("rm-empty", ["rm", "--empty", "--yes", "--force"]),
    ("rm-all", ["rm", "--older-than", "0s", "--yes", "--force"]),
    ("compact", ["compact", "--force", "--grace", "0s"]),
    ("check-fix", ["check", "--fix"]),
    ("attic-repair", ["attic", "--repair"]),
]  # (search --touch may write the scope's memories, as SAM does: its database is SAM's exactly)


def run_protected(case, tmp_path) -> None:
    why = case.skip_reason()
    if why:
        pytest.skip(why)
    ctx = hostile.build_case(case, tmp_path / "case")
    failures = []
    try:
        TALLY.trees += 1
        protected = hostile.PROTECTED[case.name]

        def now() -> dict:
            fp = fingerprint(ctx.conv)
            return {rel: fp.get(rel) for rel in protected}

        before = now()
        assert all(before.values()), before
        sqlite = case.category == "sqlite"
        steps = SQLITE_STEPS if sqlite else [(k, a, True) for k, a in SCOPE_STEPS]
        for key, args, compare in steps:
            out = invoke(["--root", str(ctx.root), *case.args, *args])
            TALLY.cases += 1
            label = f"{case.name}: samctl {' '.join(args)}"
            if out.crash or out.exit_code not in (0, 1, 3, 4, 5):
                failures.append(f"{label} -> {out.exit_code}\n{out.crash or out.stderr[-1500:]}")
            if key.startswith("restore") and "as-new" in key and out.exit_code == 0:
                failures.append(f"{label}: restored under a new id, rewriting a database not of SAM's schema")
            if compare and now() != before:
                failures.append(f"{label}: changed {protected}")
                before = now()
    finally:
        hostile.cleanup(ctx)
    assert not failures, "\n\n".join(failures)


@pytest.mark.parametrize("case", [c for c in CASES if c.fast], ids=lambda c: c.name)
def test_protected_fast(case, tmp_path):
    run_protected(case, tmp_path)


@pytest.mark.slow
@pytest.mark.parametrize("case", [c for c in CASES if not c.fast], ids=lambda c: c.name)
def test_protected_full(case, tmp_path):
    run_protected(case, tmp_path)


def test_every_protected_case_is_registered():
    assert {c.name for c in CASES} == set(hostile.PROTECTED)
    assert {c.category for c in CASES} == {"sqlite", "scope"}
