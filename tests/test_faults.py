"""Nothing is lost: rm, archive, restore and compact stopped at every write step.

For each scenario and each N = 1, 2, ... until the command completes, a fresh
copy of a fixture tree is made and the command runs in a forked child whose
``samctl.fs.faults.fault_hook`` fires at the Nth write step: a real SIGKILL of
the child, an injected exception, or a SIGTERM (which samctl's entry point
handles: it cleans up, so no temp file of its own may be left, then dies of
the signal).  Then, in the parent:

1. right away, every conversation is complete in the store or in a committed
   attic entry (whose archive verifies), byte for byte (for compact: its log
   folds to the same conversation, and the original log bytes are kept in a
   history segment or a ``.torn`` file);
2. after ``samctl attic --repair`` (which every writing command also runs
   first), every conversation is in exactly one place, nothing half-moved is
   left, ``samctl check`` and ``samctl attic`` find nothing wrong.
"""

from __future__ import annotations

import hashlib
import itertools
import os
import shutil
import signal
import sqlite3
import sys
import time
from pathlib import Path

import make_fixtures
import orjson
import pytest
import zstandard  # noqa: F401  (loaded before forking, so children start fast)
from click.testing import CliRunner

import samctl.attic.compact  # noqa: F401
import samctl.attic.lifecycle  # noqa: F401
import samctl.attic.restore  # noqa: F401
import samctl.cli
from samctl.attic import entries as attic
from samctl.attic import journal as repair
from samctl.cli import cli
from samctl.fs import faults
from samctl.stores import open_store
from samctl.stores.mermaid import eventlog
from tests.cli.test_compact import long_session

MID = "20260810_140307_512"
SID = "8B58CBC4-ACA7-4811-AE66-C01921690310"
API = "D3B2A1C0-9F8E-4D7C-AB6A-5F4E3D2C1B0A"
KILLED, INJECTED = 200, 201


class Injected(Exception):
    pass


def _old(paths, seconds=7200):
    t = time.time() - seconds
    for p in paths:
        os.utime(p, (t, t))


# --- the fixture trees ---------------------------------------------------------------


def _mermaid(root: Path) -> Path:
    make_fixtures.build_demo_mermaid(root)
    return root


def _sam(root: Path) -> Path:
    make_fixtures.build_demo_sam(root)
    return root


def _compact_mermaid(root: Path) -> Path:
    make_fixtures.build_demo_mermaid(root)
    c = root / ".mermaid" / "conversations"
    long_session(c, n=40)
    with open(c / f"{MID}.jsonl", "ab") as f:
        f.write(b'{"event":{"message":{"content":"torn')
    (c / f".{MID}.json.4242.0.tmp").write_bytes(b"{")
    (c / f"{MID}.json.20200101T000000Z.bak").write_bytes(b"old copy")
    for p in c.iterdir():
        os.chmod(p, 0o600)
    _old(c.iterdir(), 60 * 86400)
    return root


def _compact_sam(root: Path) -> Path:
    make_fixtures.build_demo_sam(root)
    folder = root / "conversations" / SID
    db = sqlite3.connect(folder / "memory.db")
    db.executemany(
        "insert into conversation_memories values (?,?,?,?,?,?,?,?,?,?)",
        [
            (
                f"00000000-0000-4000-8000-{i:012d}",
                SID,
                "filler",
                "message",
                b"\0" * 2048,
                0.5,
                "2026-08-10T14:02:12.345",
                0,
                "2026-08-10T14:02:12.345",
                None,
            )
            for i in range(50)
        ],
    )
    db.commit()
    db.execute("delete from conversation_memories where content = 'filler'")
    db.commit()
    db.close()
    (folder / "kv_store.json.tmp").write_bytes(b"{}")
    os.chmod(folder / "kv_store.json.tmp", 0o600)
    _old([folder / "kv_store.json.tmp"])
    return root


def _after_rm(build, cid):
    def b(root: Path) -> Path:
        build(root)
        r = CliRunner().invoke(cli, ["--root", str(root), "rm", cid])
        assert r.exit_code == 0, r.output
        return root

    return b


def _after_rm_all(build):
    def b(root: Path) -> Path:
        build(root)
        ids = open_store(str(root)).all_ids()
        r = CliRunner().invoke(cli, ["--root", str(root), "rm", "--yes", *ids])
        assert r.exit_code == 0, r.output
        return root

    return b


MERMAID_IDS = ["20260810_140307_512", "20260812_091500_004", "20260901_170000_250"]
CLAUDE = "0b7c9d2e-3f41-4a6b-8c9d-0e1f2a3b4c5d"  # a Claude Code session with a subagents folder
CODEX = "019c4a2e-7b1d-7c3e-9f20-1a2b3c4d5e6f"
DEMO = Path(make_fixtures.__file__).resolve().parent / "demo"


def _app_tree(name: str):
    """A copy of the demo tree of another app (Claude Code, Codex CLI), every file 40 days old (not live)."""

    def b(root: Path) -> Path:
        shutil.copytree(DEMO / name, root)
        _old(list(root.rglob("*")), 40 * 86400)
        return root

    return b


_claude, _codex = _app_tree("claude_code"), _app_tree("codex")


def _after(build, *argv, then=None):
    """``build``, then the command ``argv`` (and ``then(root)``, another app's doing)."""

    def b(root: Path) -> Path:
        build(root)
        r = CliRunner().invoke(cli, ["--root", str(root), *argv])
        assert r.exit_code == 0, r.output
        if then:
            then(root)
        return root

    return b


def _claude_changed(root: Path) -> None:
    p = next(root.rglob(f"{CLAUDE}.jsonl"))
    with open(p, "ab") as f:
        f.write(b'{"type":"summary","summary":"later","leafUuid":"x"}\n')
    _old([p], 40 * 86400)


def _claude_deleted(root: Path) -> None:  # Claude Code's cleanup
    p = next(root.rglob(f"{CLAUDE}.jsonl"))
    p.unlink()
    shutil.rmtree(p.parent / CLAUDE)


SCENARIOS = {
    "rm-mermaid": (_mermaid, ["rm", MID]),
    "rm-sam": (_sam, ["rm", SID]),
    "archive-mermaid": (_mermaid, ["archive", "--older-than", "1d", "--keep-last", "1", "--yes"]),
    "archive-sam": (_sam, ["archive", "--older-than", "1d", "--yes"]),
    "restore-mermaid": (_after_rm(_mermaid, MID), ["restore", MID]),
    "restore-sam": (_after_rm(_sam, SID), ["restore", SID]),
    "rm-many-mermaid": (_mermaid, ["rm", "--yes", *MERMAID_IDS]),
    "restore-many-mermaid": (_after_rm_all(_mermaid), ["restore", *MERMAID_IDS]),
    # the archives read and compressed in worker processes (lifecycle._built) while the command writes
    "rm-many-mermaid-in-workers": (_mermaid, ["rm", "--yes", *MERMAID_IDS]),
    "rm-many-sam-in-workers": (_sam, ["rm", "--yes", SID, API]),
    "restore-many-mermaid-in-workers": (_after_rm_all(_mermaid), ["restore", *MERMAID_IDS]),
    "compact-mermaid": (_compact_mermaid, ["compact", "--log-threshold", "16K"]),
    "compact-sam": (_compact_sam, ["compact"]),
    # another app's sessions (#23): their attic is in samctl's data folder
    "rm-claude": (_claude, ["rm", CLAUDE]),
    "archive-claude": (_claude, ["archive", "--older-than", "1d", "--yes"]),
    "restore-claude": (_after(_claude, "rm", CLAUDE), ["restore", CLAUDE]),
    "rm-codex": (_codex, ["rm", CODEX]),
    "restore-codex": (_after(_codex, "rm", CODEX), ["restore", CODEX]),
    "copy-claude": (_claude, ["archive", "--copy", "--older-than", "1d"]),
    "copy-again-claude": (
        _after(_claude, "archive", "--copy", "--older-than", "1d", then=_claude_changed),
        ["archive", "--copy", "--older-than", "1d"],
    ),
    "restore-kept-claude": (
        _after(_claude, "archive", "--copy", CLAUDE, then=_claude_deleted),
        ["restore", CLAUDE, "--touch"],
    ),
    "copy-mermaid": (_mermaid, ["archive", "--copy", "--older-than", "1d"]),
    # restore's path across stores (an id resolved over the attics, then restored in its store), given one store
    "restore-all-stores-codex": (_after(_codex, "rm", CODEX), ["restore", CODEX[:8], "--all-stores"]),
    # rm's path across stores (an id resolved over the stores, then moved to its store's attic), given one store
    "rm-all-stores-codex": (_codex, ["rm", CODEX[:8], "--all-stores"]),
}


def _copytree(src: Path, dst: Path) -> None:
    """A copy of a tree and of its attic: for another app's store that is in samctl's data folder, under
    a name made from the root's path (the copy's own)."""
    shutil.copytree(src, dst, symlinks=True)
    a, b = open_store(str(src)), open_store(str(dst))
    if a.attic_folder() is not None:
        for old, new in ((a.attic_folder(), b.attic_folder()), (a.lock_folder(), b.lock_folder())):
            if old.exists():
                shutil.copytree(old, new, symlinks=True)


# --- what "intact" means ----------------------------------------------------------------


def _conv(root: Path) -> Path:
    return open_store(str(root)).conv_dir


def _digest(p: Path, semantic: bool):
    data = p.read_bytes()
    if semantic and p.name.endswith(".jsonl"):
        read = eventlog.parse_log(data)
        doc = eventlog.fold(read.events) if read.usable else None
        return (
            "fold:"
            + hashlib.sha256(
                orjson.dumps({k: v for k, v in (doc or {}).items() if k != "compactions"}, option=orjson.OPT_SORT_KEYS)
            ).hexdigest()
        )
    if semantic and p.name.endswith(".db"):
        db = sqlite3.connect(f"file:{p}?mode=ro", uri=True)
        rows = sorted(map(repr, db.execute("select * from conversation_memories")))
        db.close()
        return "rows:" + hashlib.sha256("\n".join(rows).encode()).hexdigest()
    return hashlib.sha256(data).hexdigest()


def _store_copy(root: Path, cid: str, semantic: bool) -> dict:
    """{member name: digest} of the conversation's files in the store (empty if none)."""
    store = open_store(str(root))
    out = {}
    try:
        paths = store.conversation_files(cid) if cid in store.all_ids() else []
    except Exception:  # noqa: BLE001 - a half-moved folder can confuse the lister; the caller decides
        paths = []
    for p in paths:
        if p.is_file() and not (semantic and p.name.endswith((".tmp", ".bak", ".torn"))):  # clean-up may take these
            out[p.relative_to(store.conv_dir).as_posix()] = _digest(p, semantic)
    return out


def _attic_copies(root: Path, cid: str, states=("deleted", "archived")) -> list[dict]:
    store = open_store(str(root))
    out = []
    for e in attic.list_entries(store, [], states):
        if e.id == cid and attic.verify(e) == []:
            out.append({m.name: m.sha256 for m in e.members if m.type == "file"})
    return out


def _attic_semantic(root: Path, cid: str, tmp: Path) -> list[dict]:
    """As ``_store_copy(..., semantic=True)``, of each verified attic entry of ``cid`` (extracted)."""
    store = open_store(str(root))
    out = []
    for e in attic.list_entries(store, [], ("deleted", "archived")):
        if e.id != cid:
            continue
        dest = tmp / f"extract-{e.stem}"
        dest.mkdir(mode=0o700)
        try:
            names = attic.unpack(e, dest)
        except attic.AtticProblem:
            shutil.rmtree(dest)
            continue
        out.append(
            {
                n: _digest(dest / n, True)
                for n in names
                if (dest / n).is_file() and not n.endswith((".tmp", ".bak", ".torn"))
            }
        )
        shutil.rmtree(dest)
    return out


def _conversations(root: Path) -> dict:
    store = open_store(str(root))
    sem = {}
    for cid in store.all_ids():
        try:
            store.conversation_files(cid)
        except Exception:  # noqa: BLE001 - shared scopes are not conversations that move
            continue
        sem[cid] = (_store_copy(root, cid, False), _store_copy(root, cid, True))
    for e in attic.list_entries(store, [], ("deleted", "archived", "kept")):
        m = {x.name: x.sha256 for x in e.members if x.type == "file"}
        sem.setdefault(e.id, (m, None))
    return sem


def _history_holds(root: Path, cid: str, data: bytes, tmp: Path) -> bool:
    store = open_store(str(root))
    want = hashlib.sha256(data).hexdigest()
    return any(
        e.id == cid and e.members[0].sha256 == want and attic.verify(e) == []
        for e in attic.list_entries(store, [], ("history",))
    )


def _check_intact(root: Path, before: dict, originals: dict, tmp: Path, exactly_one: bool) -> None:
    for cid, (exact, semantic) in before.items():
        in_store = _store_copy(root, cid, False)
        in_store_sem = _store_copy(root, cid, True)
        in_attic = [a for a in _attic_copies(root, cid) if a == exact]
        kept = _attic_copies(root, cid, ("kept",))  # archive --copy's: a backup beside the store's copy
        store_whole = in_store == exact or (semantic is not None and in_store_sem == semantic)
        if not store_whole and not in_attic and semantic is not None:  # moved on after compact changed it
            in_attic = [a for a in _attic_semantic(root, cid, tmp) if a == semantic]
        assert store_whole or in_attic or exact in kept, f"{cid} is not complete anywhere: store has {sorted(in_store)}"
        if exactly_one:
            assert not (store_whole and in_attic), f"{cid}: in the store and in the attic ({len(in_attic)})"
            assert len(in_attic) <= 1 and len(kept) <= 1, (cid, len(in_attic), len(kept))
            if not store_whole:
                assert in_store == {}, f"{cid}: leftovers in the store: {sorted(in_store)}"
    conv = _conv(root)
    for name, data in originals.items():  # compact: a changed log keeps its old bytes somewhere
        p = conv / name
        now = p.read_bytes() if p.exists() else b""
        if now == data:
            continue
        cut = data.rfind(b"\n") + 1
        if now == data[:cut] and any(t.read_bytes() == data[cut:] for t in conv.glob(f"{name}.*.torn")):
            continue
        assert _history_holds(root, name.split(".")[0], data, tmp) or _history_holds(
            root, name.split(".")[0], data[:cut], tmp
        ), f"{name}: old log bytes are gone"


# --- the driver -----------------------------------------------------------------------------


def _run_child(args: list, n: int, mode: str, shared: Path | None = None) -> int:
    """Run the command in a forked child stopped at its Nth write step.  With ``shared`` (a file),
    the steps are counted across the child and its worker processes, and whichever reaches the
    Nth is stopped: a worker killed, or raising, fails the command, which is then stopped too."""
    pid = os.fork()
    if pid == 0:  # the child: run the command, stop it at the Nth write step
        code = 99
        try:
            count = 0

            def hook(step):
                nonlocal count
                if shared is None:
                    count += 1
                else:  # each step appends a byte: where it lands is its number, whoever took it
                    fd = os.open(shared, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
                    try:
                        os.write(fd, b".")
                        count = os.lseek(fd, 0, os.SEEK_CUR)
                    finally:
                        os.close(fd)
                if count == n:
                    if mode == "kill":
                        os.kill(os.getpid(), signal.SIGKILL)
                    if mode == "term":  # as `timeout` ends it: samctl cleans up, then dies of the signal
                        os.kill(os.getpid(), signal.SIGTERM)
                        return
                    raise Injected(step)

            faults.fault_hook = hook
            null = os.open(os.devnull, os.O_WRONLY)
            os.dup2(null, 1)
            os.dup2(null, 2)
            sys.stdout = sys.stderr = open(os.devnull, "w")
            try:
                if mode == "term":
                    sys.argv = ["samctl", *args]
                    samctl.cli.main()  # the program's entry point, with its SIGTERM handler
                else:
                    cli.main(args, prog_name="samctl", standalone_mode=True)
                code = 0
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else 1
            if shared is not None:
                count = os.path.getsize(shared) if os.path.exists(shared) else 0
            code = INJECTED if count >= n else code
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    if os.WIFSIGNALED(status):
        assert os.WTERMSIG(status) == (signal.SIGTERM if mode == "term" else signal.SIGKILL)
        return KILLED
    return os.WEXITSTATUS(status)


def _temps(root: Path) -> set:
    return {str(p.relative_to(root)) for p in root.rglob("*.tmp")}


@pytest.fixture(autouse=True)
def _no_real_fsync(monkeypatch):
    """A killed process loses nothing the kernel already has; fsync only matters for power loss, which
    this test does not simulate.  Skipping it keeps hundreds of runs fast; every hook still fires."""
    monkeypatch.setattr(os, "fsync", lambda fd: None)


@pytest.fixture(scope="module")
def shared_data(tmp_path_factory) -> Path:
    """samctl's data folder for the whole module: a template's attic there (Claude Code, Codex) is found by
    every test that copies it (``_copytree``)."""
    return tmp_path_factory.mktemp("faults-data")


@pytest.fixture(autouse=True)
def _shared_data(shared_data, monkeypatch):
    monkeypatch.setenv("XDG_DATA_HOME", str(shared_data))


@pytest.fixture(scope="module")
def templates(tmp_path_factory, shared_data):
    out = {}
    with pytest.MonkeyPatch.context() as mp:  # (a module fixture is set up before the per-test environment)
        mp.setenv("XDG_DATA_HOME", str(shared_data))
        mp.setenv("SAMCTL_CACHE_DIR", str(tmp_path_factory.mktemp("faults-cache")))
        for name, (build, _) in SCENARIOS.items():
            root = tmp_path_factory.mktemp("tpl") / name
            build(root)
            out[name] = root
    return out


_real_build = samctl.attic.entries.build


_real_stage_one = samctl.attic.restore._stage_one


def _note_where() -> None:
    """Leave a file named for the parent of the process this runs in."""
    open(os.path.join(os.environ["FAULTS_BUILT_IN"], f"built-{os.getppid()}"), "w").close()


def _build_noting(store, item):  # (module level: a worker finds it by name)
    _note_where()
    return _real_build(store, item)


def _stage_one_noting(store, item):
    _note_where()
    return _real_stage_one(store, item)


# The README's test command runs one case of each class (every command, store and way of stopping, and
# the worker path); .ci/run runs every scenario in every mode (-m slow).
FAST_STOPS = {
    ("rm-mermaid", "kill"),
    ("archive-sam", "raise"),
    ("restore-claude", "term"),
    ("compact-mermaid", "kill"),
    ("copy-again-claude", "raise"),
    ("restore-many-mermaid-in-workers", "kill"),
    ("rm-all-stores-codex", "term"),
}
STOPS = [
    pytest.param(s, m, marks=() if (s, m) in FAST_STOPS else pytest.mark.slow, id=f"{s}-{m}")
    for s in SCENARIOS
    for m in ("kill", "raise", "term")
]


@pytest.mark.parametrize("scenario, mode", STOPS)
def test_stopped_at_every_write_step(scenario, mode, templates, tmp_path, monkeypatch):
    if scenario.endswith("in-workers"):  # (the forked command, and its workers, inherit these)
        monkeypatch.setattr(samctl.attic.lifecycle, "PARALLEL_PACK", 2)
        monkeypatch.setattr(samctl.attic.lifecycle, "PACK_PART", 1)
        monkeypatch.setattr(samctl.attic.entries, "build", _build_noting)
        monkeypatch.setattr(samctl.attic.restore, "PARALLEL_STAGE", 2)
        monkeypatch.setattr(samctl.attic.restore, "STAGE_PART", 1)
        monkeypatch.setattr(samctl.attic.restore, "_stage_one", _stage_one_noting)
        monkeypatch.setenv("SAMCTL_JOBS", "2")
        monkeypatch.setenv("FAULTS_BUILT_IN", str(tmp_path))
    template = templates[scenario]
    args = SCENARIOS[scenario][1]
    before = _conversations(template)
    if scenario.startswith("restore"):
        # the conversation's content is what went into the attic
        before = {cid: (exact, None) for cid, (exact, _) in before.items()}
    originals = {}
    if scenario == "compact-mermaid":
        originals = {p.name: p.read_bytes() for p in _conv(template).glob("*.jsonl")}
    runner = CliRunner()
    for n in itertools.count(1):
        assert n < 400, "the command never completed"
        root = tmp_path / f"{n}"
        _copytree(template, root)
        shared = tmp_path / f"{n}.steps" if scenario.endswith("in-workers") else None
        code = _run_child(["--root", str(root), *args], n, mode, shared)
        stopped = code in (KILLED, INJECTED)
        if mode == "term" and stopped:  # cleaned up on the way out: no temp file of samctl's is left
            assert _temps(root) <= _temps(template), (n, _temps(root) - _temps(template))
        _check_intact(root, before, originals, tmp_path, exactly_one=not stopped)
        if stopped:
            r = runner.invoke(cli, ["--root", str(root), "attic", "--repair"])
            assert r.exit_code == 0, (n, r.output)
            _check_intact(root, before, originals, tmp_path, exactly_one=True)
            if scenario.startswith("compact"):  # an interrupted clean-up is simply run again
                r = runner.invoke(cli, ["--root", str(root), *args])
                assert r.exit_code == 0, (n, r.output)
                _check_intact(root, before, originals, tmp_path, exactly_one=True)
        r = runner.invoke(cli, ["--root", str(root), "check"])
        assert r.exit_code == 0, (n, r.output)
        r = runner.invoke(cli, ["--root", str(root), "attic"])
        assert r.exit_code == 0, (n, r.output)
        shutil.rmtree(root)
        if not stopped:
            assert code == 0, (n, code)
            assert n > 2  # the hook really was reached on the way
            break
    # a worker's parent is the command (forked from this process), not this process
    assert any(int(p.name.split("-")[1]) != os.getpid() for p in tmp_path.glob("built-*")) == scenario.endswith(
        "in-workers"
    )


# --- after a kill, every other command (issue 20, finding 6) ----------------------------------------------

AFTER = {  # command: (its arguments, given the scenario's conversation; the exit codes it may give)
    "check": (lambda cid: ["check"], {0, 3}),
    "check --fix": (lambda cid: ["check", "--fix"], {0, 3}),
    "recover": (lambda cid: ["recover", cid], {0, 3, 4}),
    "rm": (lambda cid: ["rm", "--older-than", "0d", "--yes"], {0, 3}),
    "archive": (lambda cid: ["archive", "--older-than", "0d", "--yes"], {0, 3}),
    "restore": (lambda cid: ["restore", cid], {0, 1, 4}),
    "compact": (lambda cid: ["compact"], {0, 3}),
    "attic --repair": (lambda cid: ["attic", "--repair"], {0}),
    "ls": (lambda cid: ["ls"], {0, 3}),
    "show": (lambda cid: ["show", cid], {0, 3, 4}),
}
READ_ONLY = ("check", "ls", "show")
REWRITING = ("check --fix", "recover")  # what a store samctl only moves refuses (exit 2)


def _journal(root: Path) -> list:
    from samctl.attic import attic_dir

    return sorted((attic_dir(open_store(str(root))) / ".journal").glob("*.json"))


def every_command_after_a_kill(scenario: str, tmp_path: Path, every: int = 1) -> int:
    """Kill ``scenario``'s command (SIGKILL) at every ``every``-th write step; on each tree that
    leaves, run each command of ``AFTER`` on its own copy: no crash, an exit code it may give,
    nothing lost; a read-only one changes nothing and ``check`` reports a pending move; a writing
    one settles the pending move first (or, acting on nothing, says it is pending).  Returns the
    number of killed trees tried."""
    build, args = SCENARIOS[scenario]
    template = tmp_path / "template"
    build(template)
    store = open_store(str(template))
    cid = {"mermaid": MID, "sam": SID, "claude-code": CLAUDE, "codex": CODEX}[store.name]
    before = _conversations(template)
    if scenario.startswith("restore"):
        before = {c: (exact, None) for c, (exact, _) in before.items()}
    originals = (
        {p.name: p.read_bytes() for p in _conv(template).glob("*.jsonl")} if scenario == "compact-mermaid" else {}
    )
    runner, tried = CliRunner(), 0
    for n in itertools.count(1, every):
        assert n < 400, "the command never completed"
        killed = tmp_path / f"k{n}"
        _copytree(template, killed)
        if _run_child(["--root", str(killed), *args], n, "kill") != KILLED:
            return tried
        tried += 1
        pending = bool(_journal(killed))
        held = cid in repair.pending_ids(open_store(str(killed)))
        for name, (argv, exits) in AFTER.items():
            root = tmp_path / f"k{n}-{name.replace(' ', '')}"
            _copytree(killed, root)
            fp = _fingerprint(root) if name in READ_ONLY else None
            r = runner.invoke(cli, ["--root", str(root), *argv(cid)])
            where = f"{scenario} killed at step {n}, then {name}"
            assert not isinstance(r.exception, Exception) or isinstance(r.exception, SystemExit), (
                where,
                r.exception,
                r.output,
            )
            if store.moves_only and name in REWRITING:  # refused before anything is read or settled
                assert r.exit_code == 2 and "would rewrite them" in r.output, (where, r.output)
                shutil.rmtree(root)
                continue
            assert "internal error" not in r.output and r.exit_code in exits, (where, r.exit_code, r.output)
            if name in READ_ONLY:
                assert _fingerprint(root) == fp, where
                _check_intact(root, before, originals, tmp_path, exactly_one=False)
                if (name == "check" and pending) or (name == "show" and held and r.exit_code != 4):
                    assert "pending-move" in r.output, (where, r.output)
            else:
                # settled first; or, where it did nothing (refused, or nothing to act on), said to be pending
                reported = any(
                    s in r.output for s in ("attic-interrupted", "attic-left", "interrupted move is pending")
                )
                r2 = runner.invoke(cli, ["--root", str(root), "attic", "--repair"])
                assert r2.exit_code == 0, (where, r2.output)
                if pending and not reported and name != "recover":  # (recover writes only for a pending move of its id)
                    assert "nothing to repair" in r2.output, (where, "settled only later", r.output, r2.output)
                moved = name in ("rm", "archive")  # (a log they move went whole into the attic: checked by ``before``)
                _check_intact(root, before, {} if moved else originals, tmp_path, exactly_one=True)
            shutil.rmtree(root)
        shutil.rmtree(killed)
    return tried


def _fingerprint(root: Path) -> dict:
    from tests.conftest import fingerprint

    return fingerprint(root)


@pytest.mark.parametrize("scenario", ["rm-mermaid", "archive-sam", "copy-claude", "restore-kept-claude"])
def test_every_command_after_a_kill_fast_slice(scenario, tmp_path):
    """A slice for the normal run (every fifth step of two scenarios); the whole sweep is
    tests/adversarial/test_faults_after.py (slow)."""
    assert every_command_after_a_kill(scenario, tmp_path, every=5) > 2
