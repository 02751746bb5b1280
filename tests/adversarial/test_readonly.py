"""Every read-only command on every hostile tree: no traceback, exit 0/3 (2/4 for bad id
arguments), a finding for each hostile item, and not one byte or mtime changed."""

from __future__ import annotations

import os

import pytest

from tests.adversarial import hostile
from tests.adversarial.harness import TALLY, diff, fingerprint, invoke, invoke_subprocess, missing_expectations

ALL = hostile.cases()

GLOBAL = [
    ("check", ["check", "--format", "json"]),
    ("check-text", ["check"]),
    ("ls-jsonl", ["ls", "--format", "jsonl"]),
    ("ls", ["ls"]),
    ("ls-size", ["ls", "--sort", "size", "-r", "--format", "json"]),
    ("stats-json", ["stats", "--format", "json"]),
    ("stats", ["stats"]),
    ("export-all-jsonl", ["export", "--all", "--to", "jsonl"]),
    ("export-all-package", ["export", "--all", "--to", "sam-package"]),
    ("export-all-html", ["export", "--all", "--to", "html", "-o", "{out}"]),
    # export refuses to write into the store it reads, however the path is spelled
    ("export-into-store", ["export", "--all", "--to", "html", "-o", "{conv}/exported"]),
    ("export-into-store-dotdot", ["export", "--all", "--to", "json", "-o", "{conv}/../conversations/x.json"]),
    ("attic", ["attic", "--verify", "--format", "json"]),
    ("attic-list", ["attic"]),
    ("rm-dry-run", ["rm", "--older-than", "1d", "--dry-run"]),
    ("archive-dry-run", ["archive", "--older-than", "1d", "--dry-run", "--include-pinned"]),
    ("compact-dry-run", ["compact", "--dry-run"]),
    ("search", ["search", "budget portland", "--format", "json"]),
    ("search-exact", ["search", "the", "--exact", "--in", "all"]),
    ("search-messages", ["search", "trip weekend", "--in", "messages", "--format", "jsonl"]),
    ("usage-json", ["usage", "--by", "session", "--breakdown", "--format", "json"]),
    ("usage", ["usage", "--by", "block", "--chart"]),
    ("index", ["index", "--format", "json"]),
    ("index-rebuild", ["index", "--rebuild"]),  # the index lives in samctl's cache, never in the store
]
PER_ID = [
    ("show-json", ["show", "{id}", "--format", "json"]),
    ("show", ["show", "{id}", "--no-pager"]),
    ("show-raw", ["show", "{id}", "--raw"]),
    ("show-md", ["show", "{id}", "--format", "markdown", "--all", "--reasoning", "--no-pager"]),
    ("show-at", ["show", "{id}", "--at", "-1", "--no-pager"]),  # (exit 2 too: a conversation with no message)
    ("log", ["log", "{id}"]),
    ("log-json", ["log", "{id}", "--format", "json"]),
    ("recover-dry-run", ["recover", "{id}", "--dry-run"]),
    ("export-md", ["export", "{id}", "--to", "markdown"]),
    ("export-package", ["export", "{id}", "--to", "sam-package"]),
    ("rm-dry-run-id", ["rm", "{id}", "--dry-run", "--include-pinned"]),
    ("restore-dry-run", ["restore", "{id}", "--dry-run"]),
]
HEAVY = {"check", "ls-jsonl", "stats-json", "export-all-jsonl", "show-json", "log-json", "attic", "search"}
PER_ID_EXITS = frozenset({0, 3, 4})  # 4: the hostile item made the conversation unfindable, or no attic entry
# rm/recover/restore --dry-run may refuse (exit 1, one line saying why): a conversation with a FIFO or a
# symlink in it is never moved, one with nothing readable cannot be recovered.
REFUSING = {"recover-dry-run", "rm-dry-run-id", "restore-dry-run"}
BAD_ID_EXITS = frozenset({2, 4})


def _available(args) -> bool:
    from samctl.cli import COMMANDS

    return args[0] in COMMANDS


def commands(case, ctx, out_dir):
    keys = []
    for key, args in GLOBAL:
        if not _available(args):
            continue
        if case.heavy and key not in HEAVY:
            continue
        exits = (
            frozenset({1, 2}) | (case.global_exits - {0, 3})
            if key.startswith("export-into-store")
            else case.global_exits
        )
        if key.startswith("search"):
            exits = exits | {1}  # nothing matches: exit 1, as grep (issue #33)
        if key.startswith("index") and case.category == "cache":
            exits = exits | {1}  # the index lives in the cache folder: without one, index cannot do its job
        keys.append((key, [a.replace("{out}", str(out_dir)).replace("{conv}", str(ctx.conv)) for a in args], exits))
    ids = [case.target] if case.target else []
    for cid in ids:
        for key, args in PER_ID:
            if case.heavy and key not in HEAVY:
                continue
            if key.startswith("log") and case.store != "mermaid":
                continue
            exits = PER_ID_EXITS | {1} if key in REFUSING else PER_ID_EXITS
            exits = exits | {2} if key == "show-at" else exits
            # (an attic that is a link or a file: restore says so as rm does, exit 2 with nothing changed)
            exits = exits | {2} if key == "restore-dry-run" and case.category == "attic" else exits
            keys.append((f"{key}:{cid}", [a.replace("{id}", cid) for a in args], exits))
    for bad in case.bad_ids:
        for key, args in PER_ID:
            if key.startswith("log") and case.store != "mermaid":
                continue
            keys.append((f"{key}:bad", [a.replace("{id}", bad) for a in args], BAD_ID_EXITS))
    return keys


def run_readonly(case, tmp_path, subprocess_sample: bool) -> None:
    why = case.skip_reason()
    if why:
        pytest.skip(why)
    ctx = hostile.build_case(case, tmp_path / "case")
    failures = []
    try:
        TALLY.trees += 1
        before = fingerprint(ctx.case_dir)
        outputs = {}
        for key, args, exits in commands(case, ctx, tmp_path / "export-out"):
            full = ["--root", str(ctx.root), *case.args, *args]
            out = invoke(full, env=ctx.env or None)
            TALLY.cases += 1
            label = f"{case.name}: samctl {' '.join(a[:60] for a in args)[:200]!s}"
            if out.crash:
                TALLY.note("crashes", label)
                failures.append(f"CRASH {label}\n{out.crash}")
            elif out.exit_code not in exits:
                TALLY.note("bad_exits", f"{label} -> {out.exit_code}")
                failures.append(f"EXIT {out.exit_code} (want {sorted(exits)}) {label}\n{out.stderr[-1500:]}")
            outputs[key.split(":")[0]] = out
            after = fingerprint(ctx.case_dir)
            if after != before:
                changes = diff(before, after)
                outside = [c for c in changes if c.startswith("'outside")]
                if outside:
                    TALLY.note("escapes", label)
                if len(outside) != len(changes):
                    TALLY.note("changed", label)
                failures.append(f"CHANGED by {label}:\n  " + "\n  ".join(changes[:20]))
                before = after
        for miss in missing_expectations(case, ctx, outputs):
            TALLY.note("missed", f"{case.name}: {miss}")
            failures.append(f"MISSED {case.name}: {miss}")
        if case.broken_pipe:  # a reader that goes away changes no exit code (issue #20, finding 9)
            for key, args, exits in commands(case, ctx, tmp_path / "export-out-piped"):
                if args[0] == "export" and "-o" in args:
                    continue  # (writes files, not a stream)
                out = invoke_subprocess(["--root", str(ctx.root), *case.args, *args], broken_pipe=True)
                TALLY.cases += 1
                want = outputs[key.split(":")[0]].exit_code
                if out.exit_code != want:
                    label = f"{case.name}: samctl {' '.join(args)[:200]} | (reader gone)"
                    TALLY.note("bad_exits", f"{label} -> {out.exit_code}")
                    failures.append(f"EXIT {out.exit_code} (want {want}, as when read) {label}")
            after = fingerprint(ctx.case_dir)
            if after != before:
                TALLY.note("changed", f"{case.name}: broken pipe")
                failures.append("CHANGED by a broken-pipe run:\n  " + "\n  ".join(diff(before, after)[:20]))
                before = after
        if subprocess_sample:
            for args in (["check"],):  # a real process per tree: what a user's shell sees (ls/show: below)
                out = invoke_subprocess(["--root", str(ctx.root), *case.args, *args], env=ctx.env or None)
                TALLY.cases += 1
                label = f"{case.name}: (subprocess) samctl {' '.join(args)}"
                if out.crash:
                    TALLY.note("crashes", label)
                    failures.append(f"CRASH {label}\n{out.crash}")
                elif out.exit_code not in case.global_exits:
                    TALLY.note("bad_exits", f"{label} -> {out.exit_code}")
                    failures.append(f"EXIT {out.exit_code} {label}\n{out.stderr[-1500:]}")
            after = fingerprint(ctx.case_dir)
            if after != before:
                TALLY.note("changed", f"{case.name}: subprocess sample")
                failures.append("CHANGED by the subprocess sample:\n  " + "\n  ".join(diff(before, after)[:20]))
    finally:
        hostile.cleanup(ctx)
    if failures and os.environ.get("SAMCTL_ADV_LOG"):
        with open(os.environ["SAMCTL_ADV_LOG"], "a") as f:
            f.write("".join(f"### {x}\n" for x in failures))
    assert not failures, "\n\n".join(failures)


def _one_of_each_class(cases):
    """The default run keeps the first case of each class (category, store, broken pipe or not) and marks the
    rest slow: every class is still run by the README's command, every case by .ci/adversarial."""
    seen, params = set(), []
    for c in cases:
        cls = (c.category, c.store, bool(c.broken_pipe))
        params.append(pytest.param(c, id=c.name, marks=() if cls not in seen else pytest.mark.slow))
        seen.add(cls)
    return params


@pytest.mark.parametrize("case", _one_of_each_class([c for c in ALL if c.fast and not c.heavy]))
def test_readonly_fast(case, tmp_path):
    run_readonly(case, tmp_path, subprocess_sample=True)


@pytest.mark.slow
@pytest.mark.parametrize("case", [c for c in ALL if not c.fast or c.heavy], ids=lambda c: c.name)
def test_readonly_full(case, tmp_path):
    run_readonly(case, tmp_path, subprocess_sample=False)


def test_every_category_is_covered():
    want = {
        "traversal",
        "special",
        "size",
        "encoding",
        "structure",
        "sqlite",
        "attic",
        "journal",
        "permissions",
        "cli",
        "baseline",
        "cache",
    }
    assert want <= hostile.categories()
    fast = {c.category for c in ALL if c.fast}
    assert want <= fast | {"permissions"}, want - fast


def test_default_run_keeps_every_class():
    params = _one_of_each_class([c for c in ALL if c.fast and not c.heavy])
    every = {(p.values[0].category, p.values[0].store, bool(p.values[0].broken_pipe)) for p in params}
    default = {(p.values[0].category, p.values[0].store, bool(p.values[0].broken_pipe)) for p in params if not p.marks}
    assert default == every
