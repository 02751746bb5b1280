"""Hostile store trees for both formats, built from the healthy demo trees plus one hostile item each.

Every case is a ``Case``: a name (``<store>/<category>/<what>``), a ``build(ctx)``
that mutates a freshly built demo tree (``fixtures/make_fixtures.py``), and the
findings ``samctl check`` (or ``samctl attic``) must report for the hostile item.
``cases()`` yields them all; ``fast_cases()`` is the slice the normal test run
uses.  Trees are small: size cases use ``--max-file-size`` or sparse files.

Categories (issue 7): traversal, special (FIFOs, sockets, devices), size,
encoding, structure, sqlite, attic, journal, permissions, modes, cli (hostile
id arguments).

Nothing here imports samctl except ``attic_entry`` (which runs ``samctl rm``
to get a genuine entry to tamper with): the trees are written from the specs.
"""

from __future__ import annotations

import copy
import hashlib
import io
import json
import os
import socket
import sqlite3
import stat
import struct
import subprocess
import sys
import tarfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from tests.conftest import make_fixtures as mf

MID, M2, M3 = "20260810_140307_512", "20260812_091500_004", "20260901_170000_250"
SID = mf.SAM_ID
S2 = "C2A1F0E4-3B5D-4E6F-8A9B-0C1D2E3F4A5B"
S3 = "D3B2A1C0-9F8E-4D7C-AB6A-5F4E3D2C1B0A"
TOPIC = "5E0C7E55-1B7A-4C0B-9C3E-2F3A7D8B9C01"
NEW_M = "20260102_030405_006"  # an id the demo does not have
NEW_S = "E0000000-0000-4000-8000-0000000000E0"
SMALL_CAP = 65536  # --max-file-size for the just-under/just-over cases: above every demo file
IS_ROOT = os.geteuid() == 0


# ------------------------------------------------------------------------------------------ model
@dataclass
class Expect:
    code: str  # one finding code, or alternatives "a|b"
    path: str | None = None  # the finding's path ends with this (relative to the conversations folder)
    command: str = "check"  # "check" or "attic": whose JSON output must carry the finding

    def codes(self) -> set:
        return set(self.code.split("|"))


@dataclass
class Ctx:
    case_dir: Path
    root: Path  # what --root gets: the mermaid project folder or the SAM base folder
    conv: Path  # the conversations folder
    outside: Path  # a folder beside the store that symlinks point into
    store: str
    cleanups: list = field(default_factory=list)
    env: dict = field(default_factory=dict)  # environment for every command run on the tree (None: unset)

    def p(self, rel: str) -> Path:
        return self.conv / rel

    @property
    def attic(self) -> Path:
        return (self.root / ".mermaid" if self.store == "mermaid" else self.root) / "samctl-attic"


@dataclass
class Case:
    name: str
    store: str
    build: Callable[[Ctx], None]
    expect: list = field(default_factory=list)
    args: tuple = ()  # global options, e.g. ("--max-file-size", "65536")
    target: str | None = None  # the conversation the hostile item belongs to (per-id commands use it)
    bad_ids: tuple = ()  # hostile id arguments: each must give exit 2 or 4, never a crash
    fast: bool = False  # also in the normal (fast) test run
    heavy: bool = False  # big: only a few commands, full sweep only
    needs: str | None = None  # "nonroot" (permissions bite) or "root" (mknod)
    global_exits: frozenset = frozenset({0, 3})
    writes: bool = True  # run the writing-command sequence on it too
    broken_pipe: bool = False  # also run every read-only command into a pipe nobody reads: the same exit code

    @property
    def category(self) -> str:
        return self.name.split("/")[1]

    def skip_reason(self) -> str | None:
        if self.needs == "nonroot" and IS_ROOT:
            return "permissions do not bite as root (CI runs these as an unprivileged user)"
        if self.needs == "root" and not IS_ROOT:
            return "needs root (mknod)"
        return None


# ------------------------------------------------------------------------------------------ helpers
def put(path: Path, data, mode: int = 0o600) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    if isinstance(data, str):
        data = data.encode("utf-8", "surrogatepass")
    if path.is_symlink() or path.exists() and not path.is_dir():
        path.unlink()
    path.write_bytes(data)
    os.chmod(path, mode)
    return path


def replace_with(path: Path, make: Callable[[Path], None]) -> None:
    """Remove ``path`` (file or symlink) and make something else in its place."""
    if path.is_symlink() or path.is_file():
        path.unlink()
    make(path)


def sparse(path: Path, size: int, head: bytes = b"", mode: int = 0o600) -> None:
    if path.is_symlink() or path.exists():
        path.unlink()
    with open(path, "wb") as f:
        f.write(head)
        f.truncate(size)
    os.chmod(path, mode)


def mkfifo(path: Path) -> None:
    os.mkfifo(path, 0o600)


def mksock(path: Path) -> None:
    # AF_UNIX paths are limited to ~108 bytes: bind a relative name from inside the folder.
    here = os.getcwd()
    os.chdir(path.parent)
    try:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.bind(path.name)
        s.close()  # the socket file stays behind, like a crashed server's
    finally:
        os.chdir(here)


def mkdev(path: Path) -> None:
    os.mknod(path, 0o600 | stat.S_IFCHR, os.makedev(1, 3))  # a /dev/null twin


def mkdir_at(path: Path) -> None:
    path.mkdir(mode=0o700)


def symlink_to(target) -> Callable[[Path], None]:
    return lambda p: os.symlink(target, p)


def nested(depth: int, leaf: str = "0") -> str:
    return "[" * depth + leaf + "]" * depth


def mermaid_doc(ctx: Ctx, cid: str) -> dict:
    return json.loads(ctx.p(f"{cid}.json").read_bytes())


DEEP = "@@deep-1000@@"  # stands for 1000 levels of nesting: Python's json cannot build them, so text does


def undeep(text: str) -> str:
    return text.replace(f'"{DEEP}"', nested(1000))


def write_mermaid_doc(ctx: Ctx, cid: str, doc, name: str | None = None) -> None:
    text = doc if isinstance(doc, (str, bytes)) else undeep(mf.mermaid_snapshot(doc))
    put(ctx.p(name or f"{cid}.json"), text)


def sam_doc(ctx: Ctx, cid: str) -> dict:
    return json.loads(ctx.p(f"{cid}/conversation.json").read_bytes())


def write_sam_doc(ctx: Ctx, cid: str, doc) -> None:
    text = doc if isinstance(doc, (str, bytes)) else undeep(mf.sam_dumps(doc))
    put(ctx.p(f"{cid}/conversation.json"), text)


def edit_json(getter, setter, cid: str, fn: Callable) -> Callable[[Ctx], None]:
    def build(ctx: Ctx) -> None:
        doc = getter(ctx, cid)
        out = fn(doc)
        setter(ctx, cid, doc if out is None else out)

    return build


def m_edit(fn, cid=M2):
    return edit_json(mermaid_doc, write_mermaid_doc, cid, fn)


def s_edit(fn, cid=S2):
    return edit_json(sam_doc, write_sam_doc, cid, fn)


def at(doc, path):
    for k in path:
        doc = doc[k]
    return doc


def set_at(path, value):
    def fn(doc):
        at(doc, path[:-1])[path[-1]] = copy.deepcopy(value)

    return fn


def del_at(path):
    def fn(doc):
        del at(doc, path[:-1])[path[-1]]

    return fn


def wrong_value(v):
    """A JSON value of another kind than ``v``."""
    if isinstance(v, bool):
        return "true"
    if isinstance(v, (int, float)):
        return "12"
    if isinstance(v, str):
        return 12
    if isinstance(v, list):
        return {"0": v[:1]}
    if isinstance(v, dict):
        return [v]
    return 12  # null -> a number


def log_lines(ctx: Ctx, cid: str) -> list[bytes]:
    return ctx.p(f"{cid}.jsonl").read_bytes().splitlines(keepends=True)


def log_edit(cid: str, fn: Callable[[list], list | bytes]) -> Callable[[Ctx], None]:
    def build(ctx: Ctx) -> None:
        out = fn(log_lines(ctx, cid))
        put(ctx.p(f"{cid}.jsonl"), out if isinstance(out, bytes) else b"".join(out))

    return build


def envelope_edit(index: int, fn, cid=M2):
    def edit(lines):
        env = json.loads(lines[index])
        out = fn(env)
        env = env if out is None else out
        lines[index] = (
            env
            if isinstance(env, bytes)
            else json.dumps(env, ensure_ascii=False, sort_keys=True, separators=(",", ":")).encode()
        ) + b"\n"
        return lines

    return log_edit(cid, edit)


def write_outside_secret(ctx: Ctx) -> None:
    """What every outside folder holds: files a symlink may lead to (and that must never change)."""
    doc = mf.mermaid_doc(
        "20260101_000013_000",
        "outside the root",
        [mf.mermaid_message("User", "secret", "2026-01-01T12:00:00Z")],
        "2026-01-01T12:00:00Z",
    )
    put(ctx.outside / "secret.json", mf.mermaid_snapshot(doc))
    put(ctx.outside / "secret.meta", mf.mermaid_meta(doc))
    put(ctx.outside / "secret.jsonl", mf.mermaid_backfill_log(doc, doc["updated_at"]))
    sdoc = mf.sam_doc(
        NEW_S,
        "outside",
        [mf.sam_message("11111111-2222-4333-8444-555555555555", "user", "secret", "2026-01-01T12:00:00Z")],
        "2026-01-01T12:00:00Z",
        "2026-01-01T12:00:01Z",
    )
    put(ctx.outside / NEW_S / "conversation.json", mf.sam_dumps(sdoc))
    mf.write_memory_db(ctx.outside / NEW_S / "memory.db", mf.spec_memories(NEW_S))
    put(ctx.outside / "victim" / "keep.txt", "this file is outside the store and must survive\n")
    # a whole second store, for "conversations/ is a symlink" cases
    mf.build_demo_mermaid(ctx.outside / "other-project")
    mf.build_demo_sam(ctx.outside / "other-SAM")


def make_ctx(store: str, case_dir: Path) -> Ctx:
    case_dir.mkdir(parents=True, exist_ok=True)
    outside = case_dir / "outside"
    if store == "mermaid":
        root = case_dir / "proj"
        mf.build_demo_mermaid(root)
        conv = root / ".mermaid" / "conversations"
    else:
        root = case_dir / "SAM"
        mf.build_demo_sam(root)
        conv = root / "conversations"
    ctx = Ctx(case_dir, root, conv, outside, store)
    write_outside_secret(ctx)
    return ctx


def build_case(case: Case, case_dir: Path) -> Ctx:
    ctx = make_ctx(case.store, case_dir)
    case.build(ctx)
    return ctx


def cleanup(ctx: Ctx) -> None:
    """Stop helper processes and give every folder back its permissions so tmp_path can be removed."""
    for fn in reversed(ctx.cleanups):
        try:
            fn()
        except Exception:  # noqa: BLE001 - cleanup must not hide the test's own result
            pass
    for _ in range(2):  # the second pass reaches folders that were closed during the first
        for dirpath, dirnames, _ in os.walk(ctx.case_dir):
            for d in dirnames:
                p = os.path.join(dirpath, d)
                if not os.path.islink(p):
                    try:
                        os.chmod(p, 0o700)
                    except OSError:
                        pass


# ------------------------------------------------------------------------------------------ mermaid
def _m(name, build, expect=(), **kw) -> Case:
    exp = [e if isinstance(e, Expect) else Expect(*e) for e in expect]
    return Case("mermaid/" + name, "mermaid", build, exp, **kw)


LOOKALIKE_DIGITS = str.maketrans("0123456789", "０１２３４５６７８９")  # fullwidth
ARABIC_DIGITS = str.maketrans("0123456789", "٠١٢٣٤٥٦٧٨٩")


def mermaid_traversal() -> list[Case]:
    out = []
    bad_ids = {
        "dotdot": "../../../etc/passwd",
        "absolute": "/etc/passwd",
        "backslash": "..\\..\\windows\\system32",
        "nul": M2 + "\x00",
        "overlong": "2" * 100_000,
        "fullwidth": M2.translate(LOOKALIKE_DIGITS),
        "arabic-digits": M2.translate(ARABIC_DIGITS),
        "newline": M2 + "\n",
        "zero-width": M2[:8] + "\u200b" + M2[8:],
    }
    for what, bad in bad_ids.items():
        out.append(
            _m(
                f"traversal/snapshot-id-{what}",
                m_edit(set_at(("id",), bad)),
                [("bad-id", f"{M2}.json")],
                target=M2,
                fast=what in ("dotdot", "nul"),
            )
        )
        out.append(
            _m(
                f"traversal/meta-id-{what}",
                lambda ctx, bad=bad: put(
                    ctx.p(f"{M2}.meta"),
                    json.dumps(
                        dict(json.loads(ctx.p(f"{M2}.meta").read_bytes()), id=bad),
                        ensure_ascii=False,
                        separators=(",", ":"),
                    ),
                ),
                [("bad-id|meta-stale", f"{M2}.meta")],
                target=M2,
            )
        )
        out.append(
            _m(
                f"traversal/log-session-id-{what}",
                envelope_edit(0, lambda env, bad=bad: env["event"].__setitem__("session_id", bad)),
                [("log-id-mismatch", f"{M2}.jsonl")],
                target=M2,
            )
        )

    def folded_only(bad):
        # Only the log is left, and it names a hostile session id: load/recover must not follow it.
        def build(ctx):
            envelope_edit(0, lambda env: env["event"].__setitem__("session_id", bad))(ctx)
            ctx.p(f"{M2}.json").unlink()

        return build

    out.append(
        _m(
            "traversal/log-only-session-id-dotdot",
            folded_only("../../../outside/x"),
            [("log-id-mismatch", f"{M2}.jsonl"), ("meta-orphan", f"{M2}.meta")],
            target=M2,
            fast=True,
        )
    )
    out.append(
        _m(
            "traversal/log-only-session-id-absolute",
            folded_only(str(Path("/tmp/samctl-escape"))),
            [("log-id-mismatch", f"{M2}.jsonl")],
            target=M2,
        )
    )

    names = {
        "dotdot-json": ("..json", "unknown-file|bad-id"),
        "dots-json": ("...json", "unknown-file|bad-id"),
        "dot-meta": (".meta", "unknown-file|bad-id"),
        "id-dotdot-json": (f"{M2}..json", "bad-id|unknown-file"),
        "backslash": ("20260812\\091500_004.json", "bad-id"),
        "newline": (f"{M2}\n.json", "bad-id"),
        "overlong": ("9" * 250 + ".json", "bad-id"),
        "fullwidth": (M2.translate(LOOKALIKE_DIGITS) + ".json", "bad-id"),
        "zero-width": (M2 + "\u200b.json", "bad-id"),
        "terminal-escape": ("\x1b[2J\x1b]0;pwned\x07.json", "bad-id"),
    }
    for what, (name, code) in names.items():
        out.append(
            _m(
                f"traversal/filename-{what}",
                lambda ctx, name=name: put(ctx.conv / name, ctx.p(f"{M2}.json").read_bytes()),
                [(code, name)],
                fast=what in ("overlong", "terminal-escape"),
            )
        )
    # A name that is not valid UTF-8 (Python sees surrogate escapes): printing it must not crash.
    out.append(
        _m(
            "traversal/filename-invalid-utf8",
            lambda ctx: put(
                Path(os.fsdecode(os.fsencode(ctx.conv) + b"/\xff\xfe2026.json")), ctx.p(f"{M2}.json").read_bytes()
            ),
            [("bad-id", "2026.json")],
            fast=True,
        )
    )
    out.append(
        _m(
            "traversal/filename-invalid-utf8-id-like",
            lambda ctx: put(
                Path(os.fsdecode(os.fsencode(ctx.conv) + b"/20260812_091500_00\xff.meta")),
                ctx.p(f"{M2}.meta").read_bytes(),
            ),
            [("bad-id", ".meta")],
        )
    )

    links = {
        "snapshot-to-outside-file": (f"{M2}.json", lambda c: c.outside / "secret.json", "symlink-escape"),
        "meta-to-outside-file": (f"{M2}.meta", lambda c: c.outside / "secret.meta", "symlink-escape"),
        "log-to-outside-file": (f"{M2}.jsonl", lambda c: c.outside / "secret.jsonl", "symlink-escape"),
        "snapshot-to-dev-zero": (f"{M2}.json", lambda c: "/dev/zero", "symlink-escape"),
        "log-to-dev-urandom": (f"{M2}.jsonl", lambda c: "/dev/urandom", "symlink-escape"),
        "snapshot-to-outside-folder": (f"{NEW_M}.json", lambda c: c.outside / "victim", "symlink-escape"),
        "snapshot-relative-dotdot": (f"{NEW_M}.json", lambda c: "../../../outside/secret.json", "symlink-escape"),
        "snapshot-to-etc-passwd": (f"{NEW_M}.json", lambda c: "/etc/passwd", "symlink-escape"),
        "dangling": (f"{NEW_M}.json", lambda c: "/nonexistent/samctl/nowhere.json", "symlink-escape|symlink"),
        "loop-self": (f"{NEW_M}.json", lambda c: f"{NEW_M}.json", "symlink|symlink-escape"),
        "inside-to-sibling": (f"{M3}.json", lambda c: f"{M2}.json", "symlink"),
    }
    for what, (name, target, code) in links.items():
        out.append(
            _m(
                f"traversal/symlink-{what}",
                lambda ctx, name=name, target=target: replace_with(ctx.p(name), symlink_to(target(ctx))),
                [(code, name)],
                target=name.rsplit(".", 1)[0],
                fast=what in ("snapshot-to-outside-file", "loop-self", "log-to-dev-urandom"),
            )
        )

    def loop_pair(ctx):
        os.symlink(f"{NEW_M}.meta", ctx.p(f"{NEW_M}.json"))
        os.symlink(f"{NEW_M}.json", ctx.p(f"{NEW_M}.meta"))

    out.append(
        _m(
            "traversal/symlink-loop-pair",
            loop_pair,
            [("symlink|symlink-escape", f"{NEW_M}.json"), ("symlink|symlink-escape", f"{NEW_M}.meta")],
            target=NEW_M,
        )
    )

    def conv_is_symlink(ctx):
        real = ctx.outside / "other-project" / ".mermaid" / "conversations"
        os.rename(ctx.conv, ctx.conv.with_name("conversations.moved"))
        os.symlink(real, ctx.conv)

    out.append(
        _m("traversal/conversations-folder-is-symlink", conv_is_symlink, [("root-symlink", None)], target=M2, fast=True)
    )

    def dot_mermaid_is_symlink(ctx):
        real = ctx.outside / "other-project" / ".mermaid"
        m = ctx.root / ".mermaid"
        os.rename(m, ctx.root / ".mermaid.moved")
        os.symlink(real, m)

    out.append(_m("traversal/dot-mermaid-is-symlink", dot_mermaid_is_symlink, [("root-symlink", None)], target=M2))

    def conv_symlink_loop(ctx):
        os.rename(ctx.conv, ctx.conv.with_name("conversations.moved"))
        os.symlink("conversations", ctx.conv)

    out.append(
        _m(
            "traversal/conversations-folder-symlink-loop",
            conv_symlink_loop,
            [],
            global_exits=frozenset({3, 4}),
            writes=False,
        )
    )
    return out


def special_files(store: str) -> list[Case]:
    out = []
    if store == "mermaid":
        spots = {"snapshot": f"{M2}.json", "meta": f"{M2}.meta", "log": f"{M2}.jsonl"}
        mk, tgt = _m, M2
    else:
        spots = {
            "conversation": f"{S2}/conversation.json",
            "memory-db": f"{SID}/memory.db",
            "legacy-store": "conversations.json",
            "active": "active-conversation.json",
            "ltm": f"{SID}/ltm.json",
        }
        mk, tgt = _s, S2
    makers = {
        "fifo": (mkfifo, "not-regular", None),
        "socket": (mksock, "not-regular", None),
        "device": (mkdev, "not-regular", "root"),
        "folder": (mkdir_at, "not-regular", None),
    }
    for spot, rel in spots.items():
        for kind, (make, code, needs) in makers.items():
            if kind == "folder" and spot in ("legacy-store", "active", "ltm"):
                continue
            exp = [(code, rel)]
            if store == "sam" and spot in ("active", "ltm", "legacy-store"):
                exp = [("not-regular", rel)]
            out.append(
                mk(
                    f"special/{spot}-{kind}",
                    lambda ctx, rel=rel, make=make: replace_with(ctx.p(rel), make),
                    exp,
                    target=SID if "memory" in spot or spot == "ltm" else tgt,
                    needs=needs,
                    fast=kind == "fifo" and spot in ("snapshot", "log", "memory-db", "conversation"),
                )
            )
    # a conversation of nothing but a FIFO: show must not block
    if store == "mermaid":
        out.append(
            _m(
                "special/fifo-only-conversation",
                lambda ctx: mkfifo(ctx.p(f"{NEW_M}.json")),
                [("not-regular", f"{NEW_M}.json")],
                target=NEW_M,
                fast=True,
            )
        )
    else:

        def fifo_only(ctx):
            ctx.p(NEW_S).mkdir(mode=0o700)
            mkfifo(ctx.p(f"{NEW_S}/conversation.json"))

        out.append(
            _s(
                "special/fifo-only-conversation",
                fifo_only,
                [("not-regular", f"{NEW_S}/conversation.json")],
                target=NEW_S,
                fast=True,
            )
        )
    return out


def size_cases(store: str) -> list[Case]:
    out = []
    cap_args = ("--max-file-size", str(SMALL_CAP))
    if store == "mermaid":
        mk = _m
        padded = {
            "snapshot": (f"{M2}.json", lambda c: mf.mermaid_snapshot(mermaid_doc(c, M2)).encode(), b" "),
            "meta": (f"{M2}.meta", lambda c: c.p(f"{M2}.meta").read_bytes(), b" "),
        }
    else:
        mk = _s
        padded = {
            "conversation": (f"{S2}/conversation.json", lambda c: c.p(f"{S2}/conversation.json").read_bytes(), b" "),
            "ltm": (f"{SID}/ltm.json", lambda c: b'{"entries":[]}', b" "),
        }
    for spot, (rel, base, pad) in padded.items():
        for delta, label in ((-1, "just-under"), (0, "at"), (1, "just-over")):
            size = SMALL_CAP + delta

            def build(ctx, rel=rel, base=base, pad=pad, size=size):
                data = base(ctx)
                put(ctx.p(rel), data + pad * (size - len(data)))

            exp = [("too-large", rel)] if delta > 0 and spot != "ltm" else []
            out.append(
                mk(
                    f"size/{spot}-{label}-cap",
                    build,
                    exp,
                    args=cap_args,
                    target=rel.split("/")[0].split(".")[0],
                    fast=label == "just-over" and spot in ("snapshot", "conversation"),
                )
            )
    if store == "mermaid":
        for delta, label in ((-1, "just-under"), (0, "at"), (1, "just-over")):
            size = SMALL_CAP + delta

            def log_build(ctx, size=size):
                data = ctx.p(f"{M2}.jsonl").read_bytes()
                n = len(data.splitlines())
                line = lambda text: mf.mermaid_line(n, "2026-08-12T09:16:31Z", {"text": text, "type": "input"})
                short = line("").encode()
                put(ctx.p(f"{M2}.jsonl"), data + line("x" * (size - len(data) - len(short))).encode())

            out.append(
                _m(
                    f"size/log-{label}-cap",
                    log_build,
                    [("log-too-large", f"{M2}.jsonl")] if delta > 0 else [],
                    args=cap_args,
                    target=M2,
                )
            )
        # the real caps, with sparse files (no disk used)
        real = [
            ("snapshot-over-64MiB", f"{M2}.json", 64 * 2**20 + 1, "too-large"),
            ("meta-over-64MiB", f"{M2}.meta", 64 * 2**20 + 1, "too-large"),
            ("log-over-128MiB", f"{M2}.jsonl", 128 * 2**20 + 1, "log-too-large"),
            ("log-1GB-line-no-newline", f"{M2}.jsonl", 2**30, "log-too-large"),
            ("snapshot-1GB-line-no-newline", f"{M2}.json", 2**30, "too-large"),
            ("meta-1GB-line-no-newline", f"{M2}.meta", 2**30, "too-large"),
        ]
        for what, rel, size, code in real:
            out.append(
                _m(
                    f"size/{what}",
                    lambda ctx, rel=rel, size=size: sparse(ctx.p(rel), size, b'{"id":"'),
                    [(code, rel)],
                    target=M2,
                    fast=what == "log-1GB-line-no-newline",
                )
            )
        out.append(
            _m(
                "size/snapshot-just-under-64MiB-sparse",
                lambda ctx: sparse(ctx.p(f"{M2}.json"), 64 * 2**20, b'{"id":"'),
                [("bad-json", f"{M2}.json")],
                target=M2,
                heavy=True,
            )
        )
        # 100,000 levels of nesting, everywhere JSON is parsed
        deep = nested(100_000)
        out.append(
            _m(
                "size/snapshot-nested-100k",
                lambda ctx: put(ctx.p(f"{M2}.json"), deep),
                [("bad-json|bad-snapshot", f"{M2}.json")],
                target=M2,
                fast=True,
            )
        )
        out.append(
            _m(
                "size/meta-nested-100k",
                lambda ctx: put(ctx.p(f"{M2}.meta"), deep),
                [("bad-meta", f"{M2}.meta")],
                target=M2,
            )
        )
        out.append(
            _m(
                "size/log-line-nested-100k",
                log_edit(M2, lambda ls: ls[:2] + [deep.encode() + b"\n"] + ls[2:]),
                [("log-malformed", f"{M2}.jsonl")],
                target=M2,
            )
        )
        out.append(
            _m(
                "size/log-event-nested-100k",
                log_edit(
                    M2,
                    lambda ls: (
                        ls
                        + [
                            (
                                '{"event":{"type":"input","text":"x","deep":'
                                + deep
                                + '},"seq":%d,"ts":"2026-08-12T09:16:31Z","v":1}\n' % len(ls)
                            ).encode()
                        ]
                    ),
                ),
                [("log-malformed", f"{M2}.jsonl")],
                target=M2,
            )
        )
        out.append(
            _m(
                "size/conflict-nested-100k",
                lambda ctx: put(ctx.p(f"{M2}.4242.0.conflict"), deep),
                [("conflict", f"{M2}.4242.0.conflict")],
                target=M2,
            )
        )
        # nesting just under orjson's limit inside a valid document: recursion in samctl's own code
        deep_ok = DEEP
        too_deep = [("bad-snapshot", f"{M2}.json")]  # past serde_json's 128 levels: mermaid refuses the file
        out.append(
            _m(
                "size/snapshot-metadata-nested-1000",
                m_edit(set_at(("messages", 1, "metadata"), deep_ok)),
                too_deep,
                target=M2,
                fast=True,
            )
        )
        out.append(
            _m(
                "size/snapshot-tool-args-nested-1000",
                m_edit(set_at(("messages", 1, "tool_calls", 0, "function", "arguments"), deep_ok)),
                too_deep,
                target=M2,
            )
        )
        out.append(_m("size/snapshot-plan-nested-1000", m_edit(set_at(("plan",), {"x": deep_ok})), too_deep, target=M2))
        out.append(
            _m(
                "size/log-message-metadata-nested-1000",
                log_edit(
                    M2,
                    lambda ls: (
                        ls
                        + [
                            mf.mermaid_line(
                                len(ls),
                                "2026-08-12T09:16:31Z",
                                {
                                    "type": "message",
                                    "message": mf.mermaid_message(
                                        "User", "deep", "2026-08-12T09:16:31Z", metadata=deep_ok
                                    ),
                                },
                            )
                            .replace(f'"{DEEP}"', nested(1000))
                            .encode()
                        ]
                    ),
                ),
                [("log-malformed|log-diverged", f"{M2}.jsonl")],
                target=M2,
            )
        )
        out.append(_m("size/million-messages-snapshot", million_mermaid, [], target=NEW_M, heavy=True))
        out.append(_m("size/million-events-log", million_mermaid_log, [], target=NEW_M, heavy=True))
    else:
        real = [
            ("conversation-over-64MiB", f"{S2}/conversation.json", 64 * 2**20 + 1, "too-large"),
            ("conversation-1GB-line-no-newline", f"{S2}/conversation.json", 2**30, "too-large"),
            ("legacy-store-over-64MiB", "conversations.json", 64 * 2**20 + 1, "too-large"),
            ("memory-db-1GB-sparse", f"{SID}/memory.db", 2**30, "db-not-sqlite|db-corrupt"),
        ]
        for what, rel, size, code in real:
            out.append(
                _s(
                    f"size/{what}",
                    lambda ctx, rel=rel, size=size: sparse(ctx.p(rel), size, b'{"id":"'),
                    [(code, rel)],
                    target=rel.split("/")[0] if "/" in rel else S2,
                    fast=what == "conversation-1GB-line-no-newline",
                )
            )
        deep = nested(100_000)
        out.append(
            _s(
                "size/conversation-nested-100k",
                lambda ctx: put(ctx.p(f"{S2}/conversation.json"), deep),
                [("bad-json|sam-reject", f"{S2}/conversation.json")],
                target=S2,
                fast=True,
            )
        )
        out.append(
            _s(
                "size/legacy-store-nested-100k",
                lambda ctx: put(ctx.p("conversations.json"), deep),
                [("bad-json|sam-reject", "conversations.json")],
                target=S2,
            )
        )
        out.append(
            _s(
                "size/active-nested-100k",
                lambda ctx: put(ctx.p("active-conversation.json"), deep),
                [("active-bad", "active-conversation.json")],
                target=S2,
            )
        )
        deep_ok = DEEP
        out.append(
            _s(
                "size/conversation-field-nested-1000",
                s_edit(set_at(("messages", 0, "toolMetadata"), {"x": deep_ok})),
                [("sam-reject", f"{S2}/conversation.json")],
                target=S2,
                fast=True,
            )
        )
        out.append(
            _s(
                "size/conversation-unknown-key-nested-1000",
                s_edit(set_at(("futureKey",), deep_ok)),
                [("sam-reject", f"{S2}/conversation.json")],
                target=S2,
            )
        )
        # read-only commands only: SAM's recover of 190 MB takes minutes (see the README's reliability notes)
        out.append(
            _s(
                "size/million-messages",
                million_sam,
                [],
                target=NEW_S,
                heavy=True,
                writes=False,
                args=("--max-file-size", "512M"),
            )
        )
    return out


def million_mermaid(ctx: Ctx) -> None:
    head = {
        k: v
        for k, v in mf.mermaid_doc(NEW_M, "a million messages", [], "2026-01-02T03:04:05Z").items()
        if k != "messages"
    }
    msg = b'{"role":"User","content":"","timestamp":"2026-01-02T03:04:05Z"}'
    body = (
        json.dumps(head, separators=(",", ":"))[:-1].encode() + b',"messages":[' + b",".join([msg] * 1_000_000) + b"]}"
    )
    put(ctx.p(f"{NEW_M}.json"), body)


def million_mermaid_log(ctx: Ctx) -> None:
    doc = mf.mermaid_doc(
        NEW_M, "a million inputs", [mf.mermaid_message("User", "hi", "2026-01-02T03:04:05Z")], "2026-01-02T03:04:05Z"
    )
    head = mf.mermaid_backfill_log(doc, doc["updated_at"]).encode()
    n0 = len(head.splitlines())
    lines = [
        b'{"event":{"text":"%d","type":"input"},"seq":%d,"ts":"2026-01-02T03:04:05Z","v":1}\n' % (i, n0 + i)
        for i in range(1_000_000)
    ]
    put(ctx.p(f"{NEW_M}.jsonl"), head + b"".join(lines))


def million_sam(ctx: Ctx) -> None:
    head = mf.sam_doc(NEW_S, "a million messages", [], "2026-01-02T03:04:05Z", "2026-01-02T03:04:05Z")
    del head["messages"]
    tpl = (
        '{"id":"%08X-0000-4000-8000-000000000000","type":"user","content":"","timestamp":"2026-01-02T03:04:05Z",'
        '"isFromUser":true,"showReasoning":false,"isStreaming":false,"isToolMessage":false}'
    )
    body = json.dumps(head)[:-1] + ',"messages":[' + ",".join(tpl % i for i in range(1_000_000)) + "]}"
    put(ctx.p(f"{NEW_S}/conversation.json"), body)


def encoding_cases(store: str) -> list[Case]:
    out = []
    if store == "mermaid":
        snap = f"{M2}.json"

        def raw_edit(rel, fn):
            return lambda ctx: put(ctx.p(rel), fn(ctx.p(rel).read_bytes()))

        cases = {
            "snapshot-invalid-utf8": (
                snap,
                lambda b: b.replace(b"Add a --json", b"Add a \xff\xfe--json", 1),
                "bad-json",
            ),
            "snapshot-utf16-bom": (snap, lambda b: b.decode().encode("utf-16"), "bad-json"),
            "snapshot-utf8-bom": (snap, lambda b: b"\xef\xbb\xbf" + b, "bad-json"),
            "snapshot-crlf": (snap, lambda b: b.replace(b"\n", b"\r\n"), None),
            "snapshot-nul-run": (snap, lambda b: b[:200] + b"\0" * 4096 + b[200:], "bad-json"),
            "snapshot-lone-surrogate": (
                snap,
                lambda b: b.replace(b'"yes, go ahead"', b'"yes \\ud800 go ahead"'),
                "bad-json",
            ),
            "snapshot-lone-low-surrogate": (snap, lambda b: b.replace(b'"yes, go ahead"', b'"\\udfff"'), "bad-json"),
            "snapshot-nan": (
                snap,
                lambda b: b.replace(b'"duration_seconds": 0.02', b'"duration_seconds": NaN'),
                "bad-json",
            ),
            "snapshot-infinity": (
                snap,
                lambda b: b.replace(b'"duration_seconds": 0.02', b'"duration_seconds": -Infinity'),
                "bad-json",
            ),
            "snapshot-huge-number": (
                snap,
                lambda b: b.replace(b'"duration_seconds": 0.02', b'"duration_seconds": 1e400'),
                "bad-json|bad-snapshot",
            ),
            "snapshot-bigint": (
                snap,
                lambda b: b.replace(b'"completion_tokens": 210', b'"completion_tokens": ' + b"9" * 400),
                "bad-json|bad-snapshot",
            ),
            "meta-invalid-utf8": (f"{M2}.meta", lambda b: b.replace(b'"title":"', b'"title":"\xc3', 1), "bad-meta"),
            "meta-utf16-bom": (f"{M2}.meta", lambda b: b.decode().encode("utf-16"), "bad-meta"),
            "meta-crlf-trailing": (f"{M2}.meta", lambda b: b + b"\r\n", None),
            "meta-nan": (f"{M2}.meta", lambda b: b.replace(b'"message_count":5', b'"message_count":NaN'), "bad-meta"),
            "log-invalid-utf8-middle": (
                f"{M2}.jsonl",
                lambda b: _line_sub(b, 2, b'"type":"', b'"type":"\xff'),
                "log-invalid-utf8",
            ),
            "log-utf16-bom": (f"{M2}.jsonl", lambda b: b.decode().encode("utf-16"), "log-malformed|log-invalid-utf8"),
            "log-nul-run-middle": (f"{M2}.jsonl", lambda b: _insert_after_line(b, 3, b"\0" * 4096), "log-malformed"),
            "log-nul-run-middle-newline": (
                f"{M2}.jsonl",
                lambda b: _insert_after_line(b, 3, b"\0" * 4096 + b"\n"),
                "log-malformed",
            ),
            "log-crlf": (f"{M2}.jsonl", lambda b: b.replace(b"\n", b"\r\n"), None),
            "log-lone-surrogate": (
                f"{M2}.jsonl",
                lambda b: (
                    b
                    + mf.mermaid_line(len(b.splitlines()), "2026-08-12T09:16:31Z", {"text": "x", "type": "input"})
                    .encode()
                    .replace(b'"x"', b'"\\ud83d"')
                ),
                "log-malformed",
            ),
            "log-nan": (
                f"{M2}.jsonl",
                lambda b: b + b'{"event":{"text":"x","type":"input"},"seq":NaN,"ts":"2026-08-12T09:16:31Z","v":1}\n',
                "log-malformed",
            ),
            "log-empty": (f"{M2}.jsonl", lambda b: b"", "log-empty"),
            "log-only-newlines": (f"{M2}.jsonl", lambda b: b"\n" * 1000, "log-malformed"),
        }
        for what, (rel, fn, code) in cases.items():
            out.append(
                _m(
                    f"encoding/{what}",
                    raw_edit(rel, fn),
                    [(code, rel)] if code else [],
                    target=M2,
                    fast=what in ("snapshot-invalid-utf8", "log-nul-run-middle", "snapshot-lone-surrogate", "log-crlf"),
                )
            )
    else:
        rel = f"{S2}/conversation.json"

        def raw_edit(fn, rel=rel):
            return lambda ctx: put(ctx.p(rel), fn(ctx.p(rel).read_bytes()))

        cases = {
            "conversation-invalid-utf8": (lambda b: b.replace(b"Q3 budget", b"Q3 \xff\xfebudget", 1), "bad-json"),
            "conversation-utf16-bom": (lambda b: b.decode().encode("utf-16"), "bad-json"),
            "conversation-utf8-bom": (lambda b: b"\xef\xbb\xbf" + b, "bad-json|sam-reject"),
            "conversation-crlf": (lambda b: b.replace(b"\n", b"\r\n"), None),
            "conversation-nul-run": (lambda b: b[:100] + b"\0" * 4096 + b[100:], "bad-json"),
            "conversation-lone-surrogate": (lambda b: b.replace(b'"Continue."', b'"\\ud800"'), "bad-json|sam-reject"),
            "conversation-nan": (lambda b: b.replace(b'"temperature" : 0.7', b'"temperature" : NaN'), "bad-json"),
            "conversation-infinity": (
                lambda b: b.replace(b'"importance" : 0.9', b'"importance" : Infinity', 1),
                "bad-json",
            ),
            "conversation-huge-number": (
                lambda b: b.replace(b'"temperature" : 0.7', b'"temperature" : 1e400'),
                "bad-json|sam-reject",
            ),
            "conversation-bigint": (
                lambda b: b.replace(b'"contextWindowSize" : 128000', b'"contextWindowSize" : ' + b"9" * 30),
                "bad-json|sam-reject",
            ),
        }
        for what, (fn, code) in cases.items():
            out.append(
                _s(
                    f"encoding/{what}",
                    raw_edit(fn),
                    [(code, rel)] if code else [],
                    target=S2,
                    fast=what in ("conversation-invalid-utf8", "conversation-lone-surrogate"),
                )
            )
        out.append(
            _s(
                "encoding/legacy-store-invalid-utf8",
                lambda ctx: put(ctx.p("conversations.json"), b'[{"id": "\xff"}]'),
                [("bad-json", "conversations.json")],
                target=S2,
            )
        )
        out.append(
            _s(
                "encoding/active-utf16",
                lambda ctx: put(
                    ctx.p("active-conversation.json"), ctx.p("active-conversation.json").read_text().encode("utf-16")
                ),
                [("active-bad", "active-conversation.json")],
                target=SID,
            )
        )
        out.append(
            _s("encoding/ltm-invalid-utf8", lambda ctx: put(ctx.p(f"{SID}/ltm.json"), b'{"\xff": 1}'), [], target=SID)
        )
    return out


def _line_sub(data: bytes, index: int, old: bytes, new: bytes) -> bytes:
    lines = data.splitlines(keepends=True)
    lines[index] = lines[index].replace(old, new, 1)
    return b"".join(lines)


def _insert_after_line(data: bytes, index: int, blob: bytes) -> bytes:
    lines = data.splitlines(keepends=True)
    return b"".join(lines[:index]) + blob + b"".join(lines[index:])


# ---- structure
MERMAID_REQUIRED = ("id", "title", "messages", "model_name", "project_path", "created_at", "updated_at")
MERMAID_TYPED = (
    "compactions",
    "input_history",
    "git_branch",
    "safety_mode",
    "last_token_usage",
    "cumulative_token_usage",
    "forked_from",
    "parent_session",
    "cli_version",
    "git_sha",
    "tasks",
)
MERMAID_OPAQUE = ("plan", "advertised_context", "context_usage")
MERMAID_MSG_REQUIRED = ("role", "content", "timestamp")
MERMAID_MSG_TYPED = (
    "kind",
    "actions",
    "thinking",
    "images",
    "image_numbers",
    "tool_calls",
    "tool_call_id",
    "tool_name",
)
MERMAID_MSG_OPAQUE = ("metadata", "provider_continuation")
META_REQUIRED = ("id", "title", "updated_at")
META_TYPED = ("git_branch", "message_count", "forked_from")


def mermaid_structure() -> list[Case]:
    out = []
    for k in MERMAID_REQUIRED:
        out.append(
            _m(
                f"structure/snapshot-missing-{k}",
                m_edit(del_at((k,))),
                [("bad-snapshot", f"{M2}.json")],
                target=M2,
                fast=k == "messages",
            )
        )
    for k in MERMAID_REQUIRED + MERMAID_TYPED:
        exp = "bad-snapshot|bad-id" if k == "id" else "bad-snapshot"

        def wrong(doc, k=k):
            doc[k] = wrong_value(doc.get(k))

        out.append(
            _m(
                f"structure/snapshot-wrong-type-{k}",
                m_edit(wrong),
                [(exp, f"{M2}.json")],
                target=M2,
                fast=k in ("updated_at", "tasks"),
            )
        )
        if k not in (
            "git_branch",
            "safety_mode",
            "last_token_usage",
            "forked_from",
            "parent_session",
            "cli_version",
            "git_sha",
        ):
            out.append(_m(f"structure/snapshot-null-{k}", m_edit(set_at((k,), None)), [(exp, f"{M2}.json")], target=M2))
    for k in MERMAID_OPAQUE:  # opaque inside, but an object (or null) for serde, as in the log's state event
        out.append(
            _m(f"structure/snapshot-opaque-{k}", m_edit(set_at((k,), {"y": [1, "x", None, {"z": []}]})), [], target=M2)
        )
        out.append(
            _m(
                f"structure/snapshot-wrong-type-{k}",
                m_edit(set_at((k,), [1, "x"])),
                [("bad-snapshot", f"{M2}.json")],
                target=M2,
            )
        )
    for k in MERMAID_MSG_REQUIRED:
        out.append(
            _m(
                f"structure/message-missing-{k}",
                m_edit(del_at(("messages", 1, k))),
                [("bad-snapshot", f"{M2}.json")],
                target=M2,
                fast=k == "timestamp",
            )
        )
    for k in MERMAID_MSG_REQUIRED + MERMAID_MSG_TYPED:

        def wrong(doc, k=k):
            m = doc["messages"][1]
            m[k] = wrong_value(m.get(k))

        out.append(
            _m(
                f"structure/message-wrong-type-{k}",
                m_edit(wrong),
                [("bad-snapshot", f"{M2}.json")],
                target=M2,
                fast=k in ("tool_calls",),
            )
        )
    for k in MERMAID_MSG_OPAQUE:
        out.append(
            _m(f"structure/message-opaque-{k}", m_edit(set_at(("messages", 1, k), {"x": [1, None]})), [], target=M2)
        )
    out.append(
        _m(
            "structure/message-not-object",
            m_edit(set_at(("messages", 1), "hello")),
            [("bad-snapshot", f"{M2}.json")],
            target=M2,
        )
    )
    out.append(
        _m(
            "structure/snapshot-top-level-array",
            lambda ctx: put(ctx.p(f"{M2}.json"), "[]"),
            [("bad-snapshot", f"{M2}.json")],
            target=M2,
        )
    )
    out.append(
        _m(
            "structure/snapshot-top-level-null",
            lambda ctx: put(ctx.p(f"{M2}.json"), "null"),
            [("bad-snapshot", f"{M2}.json")],
            target=M2,
        )
    )
    for k in META_REQUIRED:
        out.append(
            _m(
                f"structure/meta-missing-{k}",
                _meta_edit(lambda d, k=k: d.pop(k)),
                [("bad-meta", f"{M2}.meta")],
                target=M2,
            )
        )
    for k in META_REQUIRED + META_TYPED:
        out.append(
            _m(
                f"structure/meta-wrong-type-{k}",
                _meta_edit(lambda d, k=k: d.__setitem__(k, wrong_value(d.get(k)))),
                [("bad-meta", f"{M2}.meta")],
                target=M2,
                fast=k == "message_count",
            )
        )
    out.append(
        _m(
            "structure/meta-negative-count",
            _meta_edit(lambda d: d.__setitem__("message_count", -5)),
            [("bad-meta", f"{M2}.meta")],
            target=M2,
        )
    )
    out.append(
        _m(
            "structure/meta-huge-count",
            _meta_edit(lambda d: d.__setitem__("message_count", 2**64)),
            [("bad-meta", f"{M2}.meta")],
            target=M2,
        )
    )
    # unknown enum values: mermaid loads them (System / "unknown"), samctl must show them
    enums = {"role": ("messages", 1, "role"), "kind": ("messages", 1, "kind"), "safety_mode": ("safety_mode",)}
    for what, path in enums.items():
        out.append(
            _m(
                f"structure/unknown-enum-{what}",
                m_edit(set_at(path, "yolo_mode_9000")),
                [],
                target=M2,
                fast=what == "role",
            )
        )
    out.append(
        _m(
            "structure/action-result-unknown-tag",
            m_edit(set_at(("messages", 1, "actions", 0, "result"), {"Exploded": {"why": 1}})),
            [],
            target=M2,
        )
    )
    out.append(
        _m(
            "structure/duplicate-keys-snapshot",
            lambda ctx: put(
                ctx.p(f"{M2}.json"),
                ctx.p(f"{M2}.json")
                .read_bytes()
                .replace(b'"id": "' + M2.encode() + b'"', b'"id": "' + M2.encode() + b'", "id": "../../../etc/x"', 1),
            ),
            [("bad-snapshot|bad-id|duplicate-key", f"{M2}.json")],
            target=M2,
            fast=True,
        )
    )
    out.append(
        _m(
            "structure/duplicate-keys-meta",
            _meta_edit(None, raw=lambda b: b.replace(b'"title":', b'"title":"dup","title":', 1)),
            [("bad-meta|duplicate-key|meta-stale", f"{M2}.meta")],
            target=M2,
        )
    )
    out.append(
        _m(
            "structure/duplicate-tool-call-ids",
            m_edit(lambda d: d["messages"][1]["tool_calls"].append(d["messages"][1]["tool_calls"][0])),
            [],
            target=M2,
        )
    )
    # event log structure
    env_required = ("v", "seq", "ts", "event")
    for k in env_required:
        out.append(
            _m(
                f"structure/log-envelope-missing-{k}",
                envelope_edit(2, lambda e, k=k: e.pop(k) and None),
                [("log-malformed", f"{M2}.jsonl")],
                target=M2,
                fast=k == "event",
            )
        )
        out.append(
            _m(
                f"structure/log-envelope-wrong-type-{k}",
                envelope_edit(2, lambda e, k=k: e.__setitem__(k, wrong_value(e[k]))),
                [("log-malformed", f"{M2}.jsonl")],
                target=M2,
            )
        )
    for k in ("session_id", "project_path", "model_id", "created_at"):
        out.append(
            _m(
                f"structure/log-started-missing-{k}",
                envelope_edit(0, lambda e, k=k: e["event"].pop(k) and None),
                [("log-malformed|log-unusable", f"{M2}.jsonl")],
                target=M2,
            )
        )
    out.append(
        _m(
            "structure/log-unknown-event-type",
            envelope_edit(3, lambda e: e["event"].__setitem__("type", "warp")),
            [("log-malformed", f"{M2}.jsonl")],
            target=M2,
        )
    )
    out.append(
        _m(
            "structure/log-v2",
            envelope_edit(3, lambda e: e.__setitem__("v", 2)),
            [("log-newer-format", f"{M2}.jsonl")],
            target=M2,
        )
    )
    out.append(
        _m(
            "structure/log-v-huge",
            envelope_edit(3, lambda e: e.__setitem__("v", 2**70)),
            [("log-malformed", f"{M2}.jsonl")],
            target=M2,
        )
    )
    out.append(
        _m(
            "structure/log-duplicate-seq",
            envelope_edit(3, lambda e: e.__setitem__("seq", 2)),
            [("log-seq-gap", f"{M2}.jsonl")],
            target=M2,
        )
    )
    out.append(
        _m(
            "structure/log-duplicate-keys",
            log_edit(M2, lambda ls: ls[:2] + [ls[2].replace(b'"v":1', b'"v":1,"v":7')] + ls[3:]),
            [("log-newer-format|log-malformed|duplicate-key", f"{M2}.jsonl")],
            target=M2,
        )
    )
    out.append(
        _m(
            "structure/log-message-missing-content",
            log_edit(
                M2,
                lambda ls: (
                    ls
                    + [
                        mf.mermaid_line(
                            len(ls),
                            "2026-08-12T09:16:31Z",
                            {"type": "message", "message": {"role": "User", "timestamp": "2026-08-12T09:16:31Z"}},
                        ).encode()
                    ]
                ),
            ),
            [("log-malformed", f"{M2}.jsonl")],
            target=M2,
        )
    )
    out.append(
        _m(
            "structure/log-reset-wrong-messages",
            log_edit(
                M2,
                lambda ls: (
                    ls
                    + [
                        mf.mermaid_line(
                            len(ls),
                            "2026-08-12T09:16:31Z",
                            {"type": "reset", "at": "2026-08-12T09:16:31Z", "messages": {"0": 1}},
                        ).encode()
                    ]
                ),
            ),
            [("log-malformed", f"{M2}.jsonl")],
            target=M2,
        )
    )
    return out


def _meta_edit(fn, raw=None):
    def build(ctx):
        p = ctx.p(f"{M2}.meta")
        if raw is not None:
            put(p, raw(p.read_bytes()))
            return
        d = json.loads(p.read_bytes())
        fn(d)
        put(p, json.dumps(d, ensure_ascii=False, separators=(",", ":")))

    return build


SAM_REQUIRED = ("id", "title", "created", "updated", "messages")
SAM_OPTIONAL = (
    "settings",
    "sessionId",
    "isPinned",
    "workingDirectory",
    "enabledCustomInstructionIds",
    "isFromAPI",
    "performanceMetrics",
)
SAM_MSG_REQUIRED = ("id", "type", "content", "timestamp", "isFromUser", "showReasoning", "isStreaming", "isToolMessage")
SAM_MSG_OPTIONAL = ("importance", "isPinned", "lastModified", "isSystemGenerated", "reasoningContent", "toolIcon")
SAM_SETTINGS_REQUIRED = ("selectedModel", "temperature", "topP", "contextWindowSize", "enableReasoning", "enableTools")
SAM_SETTINGS_OPTIONAL = (
    "selectedSystemPromptId",
    "workspacePromptIds",
    "selectedPersonalityId",
    "thinkingEffort",
    "scrollLockEnabled",
    "useSharedData",
    "sharedTopicId",
    "draftMessage",
    "telemetry",
)
SAM_TELEMETRY = (
    "archiveRecallCount",
    "memoryRetrievalCount",
    "compressionEventCount",
    "contextOverflowCount",
    "lastUpdated",
)


def _s(name, build, expect=(), **kw) -> Case:
    exp = [e if isinstance(e, Expect) else Expect(*e) for e in expect]
    return Case("sam/" + name, "sam", build, exp, **kw)


def sam_structure() -> list[Case]:
    out = []
    rel = f"{S2}/conversation.json"
    rej = [("sam-reject", rel)]
    groups = [
        ("top", (), SAM_REQUIRED, SAM_OPTIONAL),
        ("message", ("messages", 2), SAM_MSG_REQUIRED, SAM_MSG_OPTIONAL),
        ("settings", ("settings",), SAM_SETTINGS_REQUIRED, SAM_SETTINGS_OPTIONAL),
        ("telemetry", ("settings", "telemetry"), SAM_TELEMETRY, ()),
    ]
    for group, base, required, optional in groups:
        for k in required:
            exp = rej + ([("id-mismatch|sam-reject", rel)] if (group, k) == ("top", "id") else [])
            out.append(
                _s(
                    f"structure/{group}-missing-{k}",
                    s_edit(del_at(base + (k,))),
                    exp,
                    target=S2,
                    fast=(group, k) in (("message", "isStreaming"), ("top", "messages")),
                )
            )
        for k in required + optional:

            def wrong(doc, base=base, k=k):
                d = at(doc, base)
                d[k] = wrong_value(d.get(k))

            exp = [("sam-reject|id-mismatch", rel)]
            out.append(
                _s(
                    f"structure/{group}-wrong-type-{k}",
                    s_edit(wrong),
                    exp,
                    target=S2,
                    fast=(group, k) in (("message", "timestamp"), ("settings", "temperature")),
                )
            )
            out.append(
                _s(
                    f"structure/{group}-null-{k}",
                    s_edit(set_at(base + (k,), None)),
                    rej if k in required else [],
                    target=S2,
                )
            )
    enums = {
        "message-type": (("messages", 2, "type"), True),
        "tool-status": (("messages", 2, "toolStatus"), True),
        "thinking-effort": (("settings", "thinkingEffort"), False),
        "content-part-type": (("messages", 2, "contentParts"), True),
    }
    for what, (path, rejects) in enums.items():
        value = [{"type": "hologram", "hologram": "x"}] if what == "content-part-type" else "hologram"
        out.append(
            _s(
                f"structure/unknown-enum-{what}",
                s_edit(set_at(path, value)),
                rej if rejects else [],
                target=S2,
                fast=what == "message-type",
            )
        )
    out.append(
        _s(
            "structure/duplicate-message-ids",
            s_edit(lambda d: d["messages"].append(dict(d["messages"][0], content="a twin"))),
            [("duplicate-message-id|sam-reject", rel)],
            target=S2,
            fast=True,
        )
    )
    out.append(
        _s(
            "structure/duplicate-keys",
            lambda ctx: put(
                ctx.p(rel),
                ctx.p(rel).read_bytes().replace(b'"title" : "Q3 budget"', b'"title" : "Q3 budget", "title" : 7', 1),
            ),
            [("sam-reject|duplicate-key", rel)],
            target=S2,
        )
    )
    out.append(_s("structure/top-level-array", lambda ctx: put(ctx.p(rel), "[]"), rej, target=S2))
    out.append(_s("structure/top-level-string", lambda ctx: put(ctx.p(rel), '"../../etc/passwd"'), rej, target=S2))
    out.append(
        _s("structure/messages-not-objects", s_edit(set_at(("messages",), [1, "two", None, []])), rej, target=S2)
    )
    out.append(
        _s(
            "structure/tool-call-wrong-shape",
            s_edit(set_at(("messages", 2, "toolCalls"), [{"id": 1, "type": "function", "function": "x"}])),
            rej,
            target=S2,
        )
    )
    out.append(
        _s(
            "structure/active-missing-id",
            lambda ctx: put(ctx.p("active-conversation.json"), "{}"),
            [("active-bad", "active-conversation.json")],
            target=SID,
        )
    )
    out.append(
        _s(
            "structure/legacy-store-not-array",
            lambda ctx: put(ctx.p("conversations.json"), '{"id": 1}'),
            [("sam-reject", "conversations.json")],
            target=S2,
        )
    )
    out.append(
        _s(
            "structure/legacy-store-hostile-ids",
            lambda ctx: put(
                ctx.p("conversations.json"),
                json.dumps(
                    [
                        {"id": "../../../etc/passwd", "title": "x", "messages": []},
                        {"id": "/etc/passwd"},
                        {"id": NEW_S.lower(), "title": 5, "messages": "x"},
                        7,
                        None,
                    ]
                ),
            ),
            [("sam-reject", "conversations.json")],
            target=NEW_S,
        )
    )
    return out


def sam_traversal() -> list[Case]:
    out = []
    bad = {
        "dotdot": "../../../etc/passwd",
        "absolute": "/etc/passwd",
        "nul": S2 + "\x00",
        "overlong": "A" * 100_000,
        "cyrillic-lookalike": S2.replace("C", "С"),  # U+0421
        "fullwidth": S2.translate(LOOKALIKE_DIGITS),
    }
    for what, v in bad.items():
        out.append(
            _s(
                f"traversal/conversation-id-{what}",
                s_edit(set_at(("id",), v)),
                [("sam-reject", f"{S2}/conversation.json"), ("id-mismatch", f"{S2}/conversation.json")],
                target=S2,
                fast=what == "dotdot",
            )
        )
    out.append(_s("traversal/conversation-id-lowercase", s_edit(set_at(("id",), S2.lower())), [], target=S2))
    out.append(
        _s(
            "traversal/conversation-id-other-uuid",
            s_edit(set_at(("id",), SID)),
            [("id-mismatch", f"{S2}/conversation.json")],
            target=S2,
        )
    )

    def folder_named(name: str):
        def build(ctx):
            src = ctx.p(S3)
            os.rename(src, ctx.conv / name)

        return build

    folders = {
        "lowercase": (S3.lower(), "bad-id"),
        "mixed-case": (S3[:10].lower() + S3[10:], "bad-id"),
        "cyrillic-lookalike": (S3.replace("C", "С"), "bad-id"),
        "fullwidth": (S3.translate(LOOKALIKE_DIGITS), "bad-id"),
        "backslash": ("..\\" + S3, "bad-id"),
        "newline": (S3 + "\n", "bad-id"),
        "overlong": ("F" * 255, "bad-id"),
        "dot-hidden": ("." + S3, "bad-id"),
        "terminal-escape": ("\x1b]0;pwned\x07" + S3, "bad-id"),
    }
    for what, (name, code) in folders.items():
        out.append(
            _s(
                f"traversal/folder-{what}",
                folder_named(name),
                [(code, name)],
                target=S3 if what in ("lowercase", "mixed-case") else None,
                fast=what in ("lowercase", "terminal-escape"),
            )
        )
    out.append(
        _s(
            "traversal/folder-invalid-utf8",
            lambda ctx: os.rename(ctx.p(S3), os.fsdecode(os.fsencode(ctx.conv) + b"/\xff" + S3[1:].encode())),
            [("bad-id", S3[1:])],
            fast=True,
        )
    )

    def twin(ctx):
        shutil_copytree(ctx.p(S3), ctx.conv / S3.lower())

    out.append(_s("traversal/folder-case-twin", twin, [("bad-id", S3.lower())], target=S3, fast=True))

    links = {
        "folder-to-outside": (NEW_S, lambda c: c.outside / NEW_S, "symlink-escape"),
        "conversation-to-outside": (
            f"{S2}/conversation.json",
            lambda c: c.outside / NEW_S / "conversation.json",
            "symlink-escape",
        ),
        "memory-db-to-outside": (f"{SID}/memory.db", lambda c: c.outside / NEW_S / "memory.db", "symlink-escape"),
        "conversation-to-dev-zero": (f"{S2}/conversation.json", lambda c: "/dev/zero", "symlink-escape"),
        "memory-db-to-dev-zero": (f"{SID}/memory.db", lambda c: "/dev/zero", "symlink-escape"),
        "conversation-loop": (f"{S2}/conversation.json", lambda c: "conversation.json", "symlink|symlink-escape"),
        "conversation-dangling": (f"{S2}/conversation.json", lambda c: "/nonexistent/x.json", "symlink-escape|symlink"),
        "folder-loop": (NEW_S, lambda c: NEW_S, "symlink|symlink-escape"),
        "folder-to-sibling": (NEW_S, lambda c: S3, "symlink"),
        "legacy-store-to-outside": ("conversations.json", lambda c: c.outside / "secret.json", "symlink-escape"),
        "active-to-outside": ("active-conversation.json", lambda c: c.outside / "secret.json", "symlink-escape"),
        "backups-to-outside": ("backups", lambda c: c.outside / "victim", "symlink-escape"),
        "context-archive-to-outside": (
            f"{SID}/context_archive.db",
            lambda c: c.outside / NEW_S / "memory.db",
            "symlink-escape",
        ),
        "ltm-to-etc-passwd": (f"{SID}/ltm.json", lambda c: "/etc/passwd", "symlink-escape"),
    }
    for what, (rel, target, code) in links.items():
        head = rel.split("/")[0]
        tgt = head if len(head) == 36 else S2
        out.append(
            _s(
                f"traversal/symlink-{what}",
                lambda ctx, rel=rel, target=target: replace_with(ctx.p(rel), symlink_to(target(ctx))),
                [(code, rel)],
                target=tgt,
                fast=what in ("folder-to-outside", "conversation-to-outside", "memory-db-to-dev-zero"),
            )
        )

    def conv_is_symlink(ctx):
        real = ctx.outside / "other-SAM" / "conversations"
        os.rename(ctx.conv, ctx.conv.with_name("conversations.moved"))
        os.symlink(real, ctx.conv)

    out.append(
        _s("traversal/conversations-folder-is-symlink", conv_is_symlink, [("root-symlink", None)], target=S2, fast=True)
    )

    def active_hostile(ctx):
        put(ctx.p("active-conversation.json"), json.dumps({"id": "../../../etc/passwd", "updated": "x"}))

    out.append(
        _s("traversal/active-id-dotdot", active_hostile, [("active-bad", "active-conversation.json")], target=SID)
    )
    return out


def shutil_copytree(src: Path, dst: Path) -> None:
    import shutil

    shutil.copytree(src, dst, symlinks=True)
    os.chmod(dst, 0o700)


# ---- SQLite
def sqlite_cases() -> list[Case]:
    out = []
    db = f"{SID}/memory.db"

    def raw(fn):
        return lambda ctx: put(ctx.p(db), fn(ctx.p(db).read_bytes()))

    out.append(
        _s(
            "sqlite/not-a-database",
            raw(lambda b: b"SQLite format 2\0" + b"\x01" * 4000),
            [("db-not-sqlite|db-corrupt", db)],
            target=SID,
            fast=True,
        )
    )
    out.append(
        _s(
            "sqlite/truncated-half",
            raw(lambda b: b[: len(b) // 2]),
            [("db-corrupt|db-unreadable|db-schema", db)],
            target=SID,
            fast=True,
        )
    )
    out.append(_s("sqlite/truncated-header", raw(lambda b: b[:50]), [("db-corrupt", db)], target=SID))
    out.append(_s("sqlite/zero-bytes", raw(lambda b: b""), [("db-empty", db)], target=SID))
    out.append(
        _s(
            "sqlite/garbage-pages",
            raw(lambda b: b[:100] + os.urandom(len(b) - 100)),
            [("db-corrupt|db-unreadable|db-schema|db-not-sqlite", db)],
            target=SID,
        )
    )

    def schema(sql_stmts, rows=()):
        def build(ctx):
            p = ctx.p(db)
            p.unlink()
            c = sqlite3.connect(p)
            for s in sql_stmts:
                c.execute(s)
            for r in rows:
                c.execute(r)
            c.commit()
            c.close()
            os.chmod(p, 0o600)

        return build

    out.append(
        _s(
            "sqlite/wrong-schema-no-table",
            schema(["CREATE TABLE other (x)"]),
            [("db-schema", db)],
            target=SID,
            fast=True,
        )
    )
    out.append(
        _s(
            "sqlite/wrong-schema-missing-columns",
            schema(
                [
                    'CREATE TABLE "conversation_memories" ("id" TEXT PRIMARY KEY, "content" TEXT)',
                    "INSERT INTO conversation_memories VALUES ('x', 'y')",
                ]
            ),
            [("db-schema", db)],
            target=SID,
        )
    )
    out.append(
        _s(
            "sqlite/wrong-schema-nullable",
            schema(
                [
                    mf.MEMORY_SCHEMA[0].replace("NOT NULL", ""),
                    "INSERT INTO conversation_memories (id) VALUES (NULL)",
                    "INSERT INTO conversation_memories (id, content) VALUES ('" + "A" * 36 + "', NULL)",
                ]
            ),
            [("db-schema|db-bad-row|db-bad-id", db)],
            target=SID,
        )
    )
    out.append(
        _s(
            "sqlite/view-instead-of-table",
            schema(['CREATE VIEW "conversation_memories" AS SELECT 1 AS id']),
            [("db-schema", db)],
            target=SID,
        )
    )

    def rows(values_sql: list[str], scope=SID):
        stmts = list(mf.MEMORY_SCHEMA) + [f'INSERT INTO "conversation_memories" VALUES ({v})' for v in values_sql]
        return schema(stmts)

    good = (
        "'296E5007-66D6-4DA2-B9F5-7BC7B9542F8E', '" + SID + "', 'text', 'user_input', NULL, 0.5, "
        "'2026-08-10T14:02:12.345', 0, '2026-08-10T14:02:12.345', NULL"
    )
    bad_rows = {
        "id-not-uuid": good.replace("'296E5007-66D6-4DA2-B9F5-7BC7B9542F8E'", "'../../etc/passwd'"),
        "id-lowercase": good.replace(
            "'296E5007-66D6-4DA2-B9F5-7BC7B9542F8E'", "'296e5007-66d6-4da2-b9f5-7bc7b9542f8e'"
        ),
        "id-blob": good.replace("'296E5007-66D6-4DA2-B9F5-7BC7B9542F8E'", "X'00FF00'"),
        "date-garbage": good.replace("'2026-08-10T14:02:12.345', 0", "'yesterday', 0"),
        "date-with-zone": good.replace("'2026-08-10T14:02:12.345', 0", "'2026-08-10T14:02:12+05:00', 0"),
        "date-integer": good.replace("'2026-08-10T14:02:12.345', 0", "1723298532, 0"),
        "date-feb-30": good.replace("'2026-08-10T14:02:12.345', 0", "'2026-02-30T14:02:12.345', 0"),
        "embedding-odd-length": good.replace("'user_input', NULL", "'user_input', X'00010203040506'"),
        "embedding-nan": good.replace(
            "'user_input', NULL", "'user_input', X'" + (struct.pack("<d", float("nan")) * 256).hex() + "'"
        ),
        "embedding-text": good.replace("'user_input', NULL", "'user_input', 'not a vector'"),
        "embedding-huge": good.replace("'user_input', NULL", "'user_input', zeroblob(8 * 1000000)"),
        "content-invalid-utf8": good.replace("'text'", "CAST(X'48FFFE49' AS TEXT)"),
        "content-blob": good.replace("'text'", "X'00FF'"),
        "importance-text": good.replace("NULL, 0.5", "NULL, 'high'"),
        "importance-out-of-range": good.replace("NULL, 0.5", "NULL, 7.5"),
        "importance-infinite": good.replace("NULL, 0.5", "NULL, 1e999"),
        "access-count-huge": good.replace("', 0, '", "', 9223372036854775807, '"),
        "access-count-negative": good.replace("', 0, '", "', -1, '"),
        "other-scope": good.replace("'" + SID + "'", "'" + S3 + "'"),
        "scope-dotdot": good.replace("'" + SID + "'", "'../../../etc'"),
        "duplicate-rows": good + "), (" + good.replace("296E5007", "396E5007"),
    }
    for what, v in bad_rows.items():
        out.append(
            _s(
                f"sqlite/row-{what}",
                rows([v]),
                []
                if what in ("duplicate-rows", "access-count-huge", "access-count-negative")
                else [("db-*|memory-*", db)],
                target=SID,
                fast=what in ("id-not-uuid", "embedding-nan", "content-invalid-utf8"),
            )
        )

    def archive_db(messages_json: str):
        def build(ctx):
            from_path = ctx.p(f"{SID}/context_archive.db")
            c = sqlite3.connect(from_path)
            c.execute(
                'CREATE TABLE IF NOT EXISTS "archived_chunks" ("id" TEXT PRIMARY KEY NOT NULL, '
                '"conversation_id" TEXT NOT NULL, "messages_json" TEXT NOT NULL)'
            )
            c.execute(
                'INSERT INTO "archived_chunks" VALUES (?,?,?)',
                ("0D3C2B1A-0000-4000-8000-000000000001", SID, messages_json),
            )
            c.commit()
            c.close()
            os.chmod(from_path, 0o600)

        return build

    out.append(
        _s(
            "sqlite/archive-nested-100k",
            archive_db(nested(100_000)),
            [("db-*", f"{SID}/context_archive.db")],
            target=SID,
        )
    )
    out.append(_s("sqlite/archive-not-json", archive_db("{"), [("db-*", f"{SID}/context_archive.db")], target=SID))

    def wal(ctx):
        p = ctx.p(db)
        p.unlink()
        c = sqlite3.connect(p)
        c.execute("PRAGMA journal_mode=WAL")
        c.execute("PRAGMA wal_autocheckpoint=0")
        for s in mf.MEMORY_SCHEMA:
            c.execute(s)
        c.commit()
        c.execute('INSERT INTO "conversation_memories" VALUES (' + good + ")")
        c.commit()
        # copy the db and its -wal while the connection still holds them (as after a crash)
        data, wal_data = p.read_bytes(), Path(str(p) + "-wal").read_bytes()
        c.close()
        for suffix in ("-wal", "-shm"):
            q = Path(str(p) + suffix)
            if q.exists():
                q.unlink()
        put(p, data)
        put(Path(str(p) + "-wal"), wal_data)

    out.append(_s("sqlite/wal-left-beside", wal, [("db-wal", db)], target=SID, fast=True))
    out.append(
        _s(
            "sqlite/garbage-wal-beside",
            lambda ctx: put(Path(str(ctx.p(db)) + "-wal"), b"\0garbage" * 100),
            [("db-stray-wal", db + "-wal")],
            target=SID,
            fast=True,
        )
    )
    out.append(
        _s(
            "sqlite/empty-wal-beside",
            lambda ctx: put(Path(str(ctx.p(db)) + "-wal"), b""),
            [("db-stray-wal", db + "-wal")],
            target=SID,
        )
    )
    out.append(
        _s(
            "sqlite/hot-journal-beside",
            lambda ctx: put(Path(str(ctx.p(db)) + "-journal"), b"\xd9\xd5\x05\xf9\x20\xa1\x63\xd7" + b"\0" * 504),
            [("db-hot-journal", db)],
            target=SID,
        )
    )

    def locked(ctx):
        code = (
            "import sqlite3, sys\n"
            "c = sqlite3.connect(sys.argv[1], isolation_level=None)\n"
            "c.execute('BEGIN EXCLUSIVE')\n"
            "c.execute('UPDATE conversation_memories SET access_count = access_count + 1')\n"
            "print('locked', flush=True)\n"
            "sys.stdin.read()\n"
        )
        proc = subprocess.Popen(
            [sys.executable, "-c", code, str(ctx.p(db))], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )
        assert proc.stdout.readline().strip() == "locked"

        def stop():
            proc.stdin.close()
            proc.wait(timeout=10)
            proc.stdout.close()

        ctx.cleanups.append(stop)
        ctx.locked = True

    out.append(
        _s(
            "sqlite/locked-by-another-process",
            locked,
            [("db-locked|db-hot-journal", db)],
            target=SID,
            heavy=True,
            writes=False,
        )
    )
    return out


# ---- attic: genuine entries made by samctl, then tampered with
def attic_entry(ctx: Ctx, cid: str) -> tuple[Path, Path]:
    """Run ``samctl rm`` to get a real attic entry; (manifest path, tar path)."""
    from click.testing import CliRunner

    from samctl.cli import cli

    r = CliRunner().invoke(cli, ["--root", str(ctx.root), "rm", cid, "--yes", "--force"], catch_exceptions=False)
    assert r.exit_code == 0, r.stderr
    manifests = sorted(ctx.attic.glob(f"{cid}.deleted.*.manifest.json"))
    assert manifests, list(ctx.attic.iterdir())
    m = manifests[-1]
    return m, m.with_name(m.name[: -len(".manifest.json")] + ".tar.zst")


def rewrite_entry(manifest: Path, tar: Path, members: list, tweak_manifest=None) -> None:
    """Write a new tar.zst of ``members`` [(TarInfo, bytes|None)] and a manifest whose hashes match it."""
    import zstandard

    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tf:
        for ti, data in members:
            tf.addfile(ti, io.BytesIO(data) if data is not None else None)
    blob = zstandard.ZstdCompressor().compress(buf.getvalue())
    put(tar, blob)
    d = json.loads(manifest.read_bytes())
    d["tar"]["size"] = len(blob)
    d["tar"]["sha256"] = hashlib.sha256(blob).hexdigest()
    if tweak_manifest:
        tweak_manifest(d)
    put(manifest, json.dumps(d, indent=2))


def _ti(name: str, kind=tarfile.REGTYPE, size: int = 0, link: str = "") -> tarfile.TarInfo:
    ti = tarfile.TarInfo(name)
    ti.type = kind
    ti.size = size
    ti.mode = 0o600
    ti.mtime = 1_700_000_000
    ti.linkname = link
    if kind in (tarfile.CHRTYPE, tarfile.BLKTYPE):
        ti.devmajor, ti.devminor = 1, 3
    return ti


def attic_cases(store: str) -> list[Case]:
    out = []
    mk = _m if store == "mermaid" else _s
    cid = M3 if store == "mermaid" else S3
    first = f"{M3}.json" if store == "mermaid" else f"{S3}/conversation.json"

    def tampered(fn):
        def build(ctx):
            manifest, tar = attic_entry(ctx, cid)
            fn(ctx, manifest, tar)

        return build

    def flip_tar(ctx, manifest, tar):
        b = bytearray(tar.read_bytes())
        b[len(b) // 2] ^= 0xFF
        put(tar, bytes(b))

    def manifest_sha(ctx, manifest, tar):
        d = json.loads(manifest.read_bytes())
        for m in d["members"]:
            if m["type"] == "file":
                m["sha256"] = "0" * 64
                break
        put(manifest, json.dumps(d, indent=2))

    def manifest_size(ctx, manifest, tar):
        d = json.loads(manifest.read_bytes())
        d["tar"]["size"] += 1
        put(manifest, json.dumps(d, indent=2))

    def member_named(name, kind=tarfile.REGTYPE, link=""):
        def fn(ctx, manifest, tar):
            data = b"owned\n"
            rewrite_entry(
                manifest,
                tar,
                [
                    (
                        _ti(name, kind, len(data) if kind == tarfile.REGTYPE else 0, link),
                        data if kind == tarfile.REGTYPE else None,
                    )
                ],
            )

        return fn

    def bomb(ctx, manifest, tar):
        import zstandard

        d = json.loads(manifest.read_bytes())
        files = [m for m in d["members"] if m["type"] == "file"]
        name = files[0]["name"]
        # a tar whose one member is 256 MiB of zeros; the manifest says a few bytes
        cobj = zstandard.ZstdCompressor(level=1).compressobj()
        header = _ti(name, size=256 << 20).tobuf(format=tarfile.PAX_FORMAT)
        parts = [cobj.compress(header)]
        zeros = b"\0" * (1 << 20)
        for _ in range(256):
            parts.append(cobj.compress(zeros))
        parts.append(cobj.compress(b"\0" * 1024))
        parts.append(cobj.flush())
        blob = b"".join(parts)
        put(tar, blob)
        d["tar"]["size"] = len(blob)
        d["tar"]["sha256"] = hashlib.sha256(blob).hexdigest()
        d["members"] = [dict(files[0], size=6, sha256=hashlib.sha256(b"owned\n").hexdigest())]
        put(manifest, json.dumps(d, indent=2))

    def window_bomb(ctx, manifest, tar):
        # a frame header that asks for a 2 GiB window
        blob = bytes.fromhex("28b52ffd") + bytes([0x00, 0xA8]) + b"\0" * 64
        put(tar, blob)
        d = json.loads(manifest.read_bytes())
        d["tar"]["size"] = len(blob)
        d["tar"]["sha256"] = hashlib.sha256(blob).hexdigest()
        put(manifest, json.dumps(d, indent=2))

    def manifest_text(text):
        return lambda ctx, manifest, tar: put(manifest, text)

    def manifest_member_name(name):
        def fn(ctx, manifest, tar):
            d = json.loads(manifest.read_bytes())
            d["members"][-1]["name"] = name
            put(manifest, json.dumps(d, indent=2))

        return fn

    def manifest_field(key, value):
        def fn(ctx, manifest, tar):
            d = json.loads(manifest.read_bytes())
            d[key] = value
            put(manifest, json.dumps(d, indent=2))

        return fn

    A = "attic"
    cases = {
        "tampered-tar-byte": (flip_tar, "attic-tampered|attic-corrupt"),
        "tampered-member-hash": (manifest_sha, "attic-tampered"),
        "tampered-tar-size": (manifest_size, "attic-tampered"),
        "member-dotdot": (member_named("../../../outside/victim/owned.txt"), "attic-unsafe"),
        "member-absolute": (member_named("/tmp/samctl-owned.txt"), "attic-unsafe"),
        "member-backslash": (member_named(first.replace("/", "\\")), "attic-unsafe|attic-tampered"),
        "member-symlink": (member_named(first, tarfile.SYMTYPE, "/etc/passwd"), "attic-unsafe"),
        "member-hardlink": (member_named(first, tarfile.LNKTYPE, "/etc/passwd"), "attic-unsafe"),
        "member-device": (member_named(first, tarfile.CHRTYPE), "attic-unsafe"),
        "member-fifo": (member_named(first, tarfile.FIFOTYPE), "attic-unsafe"),
        "member-other-conversation": (
            member_named(f"{M2}.json" if store == "mermaid" else f"{S2}/conversation.json"),
            "attic-unsafe",
        ),
        "zstd-bomb": (bomb, "attic-bomb"),
        "zstd-window-bomb": (window_bomb, "attic-corrupt|attic-bomb"),
        "manifest-not-json": (manifest_text("{"), "attic-bad-manifest"),
        "manifest-nested-100k": (manifest_text(nested(100_000)), "attic-bad-manifest"),
        "manifest-member-dotdot": (manifest_member_name("../../outside/victim/keep.txt"), "attic-bad-manifest"),
        "manifest-member-absolute": (manifest_member_name("/etc/passwd"), "attic-bad-manifest"),
        "manifest-id-dotdot": (manifest_field("id", "../../etc"), "attic-bad-manifest"),
        "manifest-other-store": (manifest_field("store", "codex"), "attic-bad-manifest"),
        "manifest-wrong-types": (manifest_field("members", {"x": 1}), "attic-bad-manifest"),
        "manifest-huge-size": (
            lambda ctx, m, t: manifest_field("members", [dict(json.loads(m.read_bytes())["members"][0], size=10**30)])(
                ctx, m, t
            ),
            "attic-*",
        ),
        "manifest-nan-when": (
            lambda ctx, m, t: put(m, m.read_bytes().replace(b'"when_ts":', b'"when_ts": NaN, "x":')),
            "attic-bad-manifest",
        ),
        "tar-missing": (lambda ctx, m, t: t.unlink(), "attic-missing"),
        "tar-is-fifo": (lambda ctx, m, t: replace_with(t, mkfifo), "attic-tampered|attic-missing"),
        "tar-symlink-outside": (
            lambda ctx, m, t: replace_with(t, symlink_to(ctx.outside / "secret.json")),
            "attic-tampered|attic-missing",
        ),
        "tar-without-manifest": (lambda ctx, m, t: m.unlink(), "attic-incomplete"),
    }
    for what, (fn, code) in cases.items():
        out.append(
            mk(
                f"attic/{what}",
                tampered(fn),
                [Expect(code, None, A)],
                target=cid,
                fast=what
                in ("tampered-tar-byte", "member-dotdot", "member-symlink", "zstd-bomb", "manifest-member-dotdot"),
            )
        )

    def attic_is_symlink(ctx):
        attic_entry(ctx, cid)
        os.rename(ctx.attic, ctx.outside / "attic-moved")
        os.symlink(ctx.outside / "attic-moved", ctx.attic)

    out.append(
        mk(
            "attic/attic-folder-is-symlink",
            attic_is_symlink,
            [Expect("attic-symlink|attic-unsafe", None, A)],
            target=cid,
            fast=True,
        )
    )
    out.append(
        mk(
            "attic/attic-folder-is-file",
            lambda ctx: put(ctx.attic, b"not a folder"),
            [Expect("attic-*", None, A)],
            target=cid,
        )
    )

    # journal records are read back by repair: they must not steer it out of the attic
    def journal(record):
        def build(ctx):
            manifest, tar = attic_entry(ctx, cid)
            stem = manifest.name[: -len(".manifest.json")]
            rec = dict(record, stem=stem)
            put(ctx.attic / ".journal" / f"{stem}.json", json.dumps(rec))
            (ctx.attic / ".staging").mkdir(exist_ok=True, mode=0o700)

        return build

    jcases = {
        "restore-staging-dotdot": {"op": "restore", "id": cid, "staging": "../../../outside/victim", "names": []},
        "restore-staging-absolute": {"op": "restore", "id": cid, "staging": "/tmp", "names": []},
        "out-files-dotdot": {"op": "out", "id": cid, "state": "deleted", "files": ["../../outside/victim/keep.txt"]},
        "log-id-dotdot": {
            "op": "log",
            "id": "../../outside/victim",
            "new_size": 10,
            "new_sha256": "0" * 64,
            "old_size": 5,
        },
        "log-huge-size": {
            "op": "log",
            "id": cid if store == "mermaid" else M3,
            "new_size": 10**18,
            "new_sha256": "0" * 64,
            "old_size": 5,
        },
        "unknown-op": {"op": "rm -rf /", "id": cid},
    }
    for what, rec in jcases.items():
        out.append(
            mk(
                f"journal/{what}",
                journal(rec),
                [Expect("attic-interrupted", None, A)],
                target=cid,
                fast=what == "restore-staging-dotdot",
            )
        )

    def staging_symlink(ctx):
        attic_entry(ctx, cid)
        (ctx.attic / ".staging").mkdir(exist_ok=True, mode=0o700)
        os.symlink(ctx.outside / "victim", ctx.attic / ".staging" / "x.trash")

    out.append(mk("journal/staging-symlink-to-outside", staging_symlink, [], target=cid))
    return out


# ---- permissions and modes
def permission_cases(store: str) -> list[Case]:
    out = []
    if store == "mermaid":
        mk, spots = _m, {"snapshot": f"{M2}.json", "meta": f"{M2}.meta", "log": f"{M2}.jsonl"}
        folders = {
            "conversations": ".",
        }
        tgt = M2
    else:
        mk, spots = (
            _s,
            {
                "conversation": f"{S2}/conversation.json",
                "memory-db": f"{SID}/memory.db",
                "legacy-store": "conversations.json",
                "active": "active-conversation.json",
            },
        )
        folders = {"conversations": ".", "conversation-folder": S2, "scope-folder": TOPIC}
        tgt = S2

    def chmod(rel, mode, create=None):
        def build(ctx):
            p = ctx.p(rel) if rel != "." else ctx.conv
            if create is not None and not p.exists():
                put(p, create)
            os.chmod(p, mode)

        return build

    for spot, rel in spots.items():
        create = "[]" if spot == "legacy-store" else None
        out.append(
            mk(
                f"permissions/{spot}-unreadable",
                chmod(rel, 0o000, create),
                [("unreadable", rel)],
                needs="nonroot",
                target=tgt,
            )
        )
        out.append(
            mk(
                f"permissions/{spot}-world-readable",
                chmod(rel, 0o644, create),
                [("mode", rel)],
                target=tgt,
                fast=spot in ("snapshot", "conversation"),
            )
        )
        out.append(mk(f"permissions/{spot}-world-writable", chmod(rel, 0o666, create), [("mode", rel)], target=tgt))
    for what, rel in folders.items():
        # a conversations folder samctl may not list: every command says "permission denied" (exit 4)
        exits = frozenset({4}) if rel == "." else frozenset({0, 3})
        exp = [] if rel == "." else [("unreadable", rel)]
        if what == "conversation-folder":
            exp.append(Expect("unreadable", rel + "/conversation.json", "ls-jsonl"))  # ls says so too
        out.append(
            mk(
                f"permissions/{what}-unreadable",
                chmod(rel, 0o000),
                exp,
                needs="nonroot",
                target=tgt,
                global_exits=exits,
            )
        )
        out.append(
            mk(
                f"permissions/{what}-exec-only",
                chmod(rel, 0o100),
                [] if rel == "." else [("unreadable", rel)],
                needs="nonroot",
                target=tgt,
                global_exits=exits,
            )
        )
        out.append(
            mk(
                f"permissions/{what}-world-open",
                chmod(rel, 0o777),
                [("mode", rel if rel != "." else None)],
                target=tgt,
                fast=rel == ".",
            )
        )
    cid = M3 if store == "mermaid" else S3

    def attic_perm(mode):
        def build(ctx):
            manifest, tar = attic_entry(ctx, cid)
            os.chmod(tar, mode)

        return build

    out.append(
        mk(
            "permissions/attic-entry-unreadable",
            attic_perm(0o000),
            [Expect("attic-missing|attic-unreadable|attic-tampered", None, "attic")],
            needs="nonroot",
            target=cid,
        )
    )
    out.append(
        mk(
            "permissions/attic-entry-world-readable",
            attic_perm(0o644),
            [Expect("attic-mode", None, "attic")],
            target=cid,
        )
    )

    def attic_folder_closed(ctx):
        attic_entry(ctx, cid)
        os.chmod(ctx.attic, 0o000)

    out.append(
        mk(
            "permissions/attic-folder-unreadable",
            attic_folder_closed,
            [Expect("attic-unreadable|unreadable", None, "attic")],
            needs="nonroot",
            target=cid,
        )
    )
    return out


# ---- hostile id arguments (the tree is healthy)
def cli_cases(store: str) -> list[Case]:
    if store == "mermaid":
        bad = (
            "../../../etc/passwd",
            "/etc/passwd",
            "..",
            ".",
            "",
            "a\\b",
            "2026\x00",
            "2" * 10_000,
            M2.translate(LOOKALIKE_DIGITS),
            M2 + "\n",
            "-",
            "--",
            "*",
            "2026????",
            "$(id)",
            "\x1b[2J",
        )
        return [
            _m("cli/hostile-id-arguments", lambda ctx: None, [], target=MID, bad_ids=bad, fast=True),
            _m("cli/id-prefix-ambiguous", lambda ctx: None, [], target=MID, bad_ids=("2026",)),
        ]
    bad = (
        "../../../etc/passwd",
        "/etc/passwd",
        "..",
        "",
        "8B58\x00",
        "F" * 10_000,
        "8В58",  # Cyrillic В
        SID.replace("-", ""),
        SID + "/conversation.json",
        "backups",
        "\x1b[2J",
    )
    return [
        _s("cli/hostile-id-arguments", lambda ctx: None, [], target=SID, bad_ids=bad, fast=True),
        _s("cli/uuid-case-variants", lambda ctx: None, [], target=SID.lower(), fast=True),
        _s("cli/uuid-mixed-case", lambda ctx: None, [], target=SID[:9].lower() + SID[9:]),
        _s(
            "cli/lowercase-folder-lowercase-id",
            lambda ctx: os.rename(ctx.p(S3), ctx.p(S3.lower())),
            [("bad-id", S3.lower())],
            target=S3.lower(),
        ),
    ]


def baseline(store: str) -> Case:
    mk = _m if store == "mermaid" else _s
    return mk("baseline/healthy-demo", lambda ctx: None, [], target=MID if store == "mermaid" else SID, fast=True)


# ---- attic members named like the entry's id but not byte for byte (issue 20, finding 4)
def attic_name_cases(store: str) -> list[Case]:
    """Entries whose members differ from the id by case or by Unicode normalisation, hashes right:
    samctl must refuse them (restoring one would make a second folder, or files the app never loads)."""
    import zstandard

    mk = _m if store == "mermaid" else _s
    cid = M3 if store == "mermaid" else S3

    def renamed(rename, in_manifest=True, new_id=None):
        def build(ctx):
            manifest, tar = attic_entry(ctx, cid)
            raw = zstandard.ZstdDecompressor().stream_reader(io.BytesIO(tar.read_bytes())).read()
            members = []
            with tarfile.open(fileobj=io.BytesIO(raw)) as tf:
                for ti in tf.getmembers():
                    data = tf.extractfile(ti).read() if ti.isreg() else None
                    ti.name = rename(ti.name)
                    members.append((ti, data))

            def tweak(d):
                if in_manifest:
                    for m in d["members"]:
                        m["name"] = rename(m["name"])
                if new_id:
                    d["id"] = new_id
                    d["tar"]["name"] = d["tar"]["name"].replace(cid, new_id)

            rewrite_entry(manifest, tar, members, tweak)
            if new_id:
                for p in (manifest, tar):
                    os.rename(p, p.with_name(p.name.replace(cid, new_id)))

        return build

    def head(variant):  # the id part of a member name replaced by ``variant(id)``
        return lambda n: variant(cid) + n[len(cid) :]

    fullwidth = str.maketrans(
        "0123456789ABCDEF", "".join(chr(0xFF10 + i) for i in range(10)) + "".join(chr(0xFF21 + i) for i in range(6))
    )  # NFKC folds them back
    suffix_upper = lambda n: n[: len(cid)] + n[len(cid) :].upper()  # noqa: E731
    variants = {"fullwidth-nfkc-equal": (head(lambda s: s.translate(fullwidth)), True)}
    if store == "sam":
        variants.update(
            {
                "lowercase": (head(str.lower), True),
                "mixed-case": (head(lambda s: s[:4].lower() + s[4:]), True),
                "lowercase-in-tar-only": (head(str.lower), False),
            }
        )
    else:
        variants.update(
            {"suffix-uppercase": (suffix_upper, True), "suffix-uppercase-in-tar-only": (suffix_upper, False)}
        )
    out = []
    for what, (rename, in_manifest) in variants.items():
        code = "attic-bad-manifest" if in_manifest else "attic-unsafe|attic-tampered"
        out.append(
            mk(
                f"attic/name-{what}",
                renamed(rename, in_manifest),
                [Expect(code, None, "attic")],
                target=cid,
                fast=what == "lowercase",
            )
        )
    if store == "sam":  # the whole entry under the lowercase id: not an id samctl names entries by
        out.append(
            mk(
                "attic/name-entry-id-lowercase",
                renamed(head(str.lower), new_id=cid.lower()),
                [Expect("attic-bad-manifest", None, "attic")],
                target=cid,
            )
        )
    return out


# ---- the folders above the conversations folder, and samctl's cache folder (issue 20, finding 2)
def store_path_cases(store: str) -> list[Case]:
    """The store's own folders above ``conversations/`` closed (every command: exit 4, "permission
    denied"), or enterable but not listable; and a home or cache folder samctl cannot use (the
    command runs without the cache, says so once, and creates nothing)."""
    mk, tgt = (_m, M2) if store == "mermaid" else (_s, S2)
    spots = (
        {"project": lambda ctx: ctx.root, "dotmermaid": lambda ctx: ctx.root / ".mermaid"}
        if store == "mermaid"
        else {"base": lambda ctx: ctx.root}
    )
    out = []

    def close(where, mode):
        def build(ctx):
            os.chmod(where(ctx), mode)

        return build

    for spot, where in spots.items():
        out.append(
            mk(
                f"permissions/{spot}-unreadable",
                close(where, 0o000),
                [],
                needs="nonroot",
                target=tgt,
                global_exits=frozenset({4}),
            )
        )
        # enterable, not listable: the store is found by name; nothing may crash on the folder above it
        out.append(mk(f"permissions/{spot}-exec-only", close(where, 0o100), [], needs="nonroot", target=tgt))

    def home(make, cache_env=None):
        def build(ctx):
            h = ctx.case_dir / "home"
            make(ctx, h)
            ctx.env.update({"HOME": str(h), "XDG_CACHE_HOME": None, "SAMCTL_CACHE_DIR": cache_env and cache_env(ctx)})

        return build

    note = [Expect("cache-unusable", None, "ls")]
    out.append(mk("cache/home-missing", home(lambda ctx, h: None), note, target=tgt, fast=store == "sam"))
    out.append(mk("cache/home-unreadable", home(lambda ctx, h: h.mkdir(mode=0)), note, target=tgt, needs="nonroot"))
    out.append(
        mk(
            "cache/cache-folder-unreadable",
            home(lambda ctx, h: (h / ".cache").mkdir(mode=0, parents=True)),
            note,
            target=tgt,
            needs="nonroot",
        )
    )
    out.append(
        mk(
            "cache/cache-folder-is-a-file",
            home(lambda ctx, h: put(h / "cache", "x"), lambda ctx: str(ctx.case_dir / "home" / "cache")),
            note,
            target=tgt,
        )
    )
    app = (lambda ctx: str(ctx.root / ".mermaid")) if store == "mermaid" else (lambda ctx: str(ctx.root))
    out.append(
        mk(
            "cache/cache-folder-in-app-folder",
            home(lambda ctx, h: h.mkdir(mode=0o700), app),
            [Expect("cache-in-store", None, "ls")],
            target=tgt,
            fast=True,
        )
    )
    return out


# ---- keys written twice (issue #20, finding 11), a log compact cannot shrink (finding 7), and a
# reader that goes away (finding 9)
def with_repeated(doc, path: tuple, key: str, value="a hand edit", indent: bool = True) -> str:
    """``doc`` as JSON text in which the object at ``path`` (keys and list indexes) has ``key``
    written twice: first ``value``, then what ``doc`` holds there (a JSON reader keeps the last)."""
    sep = (",\n", ": ") if indent else (",", ":")

    def enc(v, here: tuple) -> str:
        if isinstance(v, dict):
            items = [f"{json.dumps(k, ensure_ascii=False)}{sep[1]}{enc(c, here + (k,))}" for k, c in v.items()]
            if here == path:
                items.insert(0, f"{json.dumps(key)}{sep[1]}{json.dumps(value, ensure_ascii=False)}")
            return "{" + sep[0].join(items) + "}"
        if isinstance(v, list):
            return "[" + sep[0].join(enc(c, here + (i,)) for i, c in enumerate(v)) + "]"
        return json.dumps(v, ensure_ascii=False)

    return enc(doc, ())


def _repeat_in_snapshot(cid: str, path: tuple, key: str):
    def build(ctx):
        doc = mermaid_doc(ctx, cid)
        put(ctx.p(f"{cid}.json"), with_repeated(doc, path, key, 7 if isinstance(at(doc, path)[key], int) else "x"))

    return build


def _repeat_in_line(cid: str, event_type: str, path: tuple, key: str):
    def edit(lines):
        n = next(i for i, x in enumerate(lines) if json.loads(x)["event"]["type"] == event_type)
        env = json.loads(lines[n])
        lines[n] = (with_repeated(env, path, key, at(env, path)[key], indent=False) + "\n").encode()
        return lines

    return log_edit(cid, edit)


def duplicate_key_cases() -> list[Case]:
    """A key written twice at each struct level of a mermaid snapshot, log line and sidecar (serde
    refuses them: an error), inside free JSON values (serde keeps the last: no finding), and in a SAM
    conversation.json (a warning)."""
    out = []
    struct_levels = {
        "top": ((), "title"),
        "message": (("messages", 0), "content"),
        "action": (("messages", 1, "actions", 0), "target"),
        "action-result": (("messages", 1, "actions", 0, "result", "Success"), "output"),
        "tool-call": (("messages", 1, "tool_calls", 0), "id"),
        "tool-function": (("messages", 1, "tool_calls", 0, "function"), "name"),
        "token-usage": (("cumulative_token_usage",), "prompt_tokens"),
        "tasks": (("tasks",), "next_id"),
    }
    for what, (path, key) in struct_levels.items():
        out.append(
            _m(
                f"structure/repeated-field-snapshot-{what}",
                _repeat_in_snapshot(MID, path, key),
                [("bad-snapshot", f"{MID}.json")],
                target=MID,
                fast=what == "message",
                broken_pipe=what == "top",
            )
        )
    out.append(
        _m(
            "structure/repeated-key-snapshot-tool-arguments",
            _repeat_in_snapshot(MID, ("messages", 1, "tool_calls", 0, "function", "arguments"), "path"),
            [],
            target=MID,
        )
    )
    lines = {
        "envelope": ("message", (), "seq"),
        "event": ("message", ("event",), "type"),
        "message": ("message", ("event", "message"), "role"),
        "started": ("started", ("event",), "session_id"),
        "reset-message": ("reset", ("event", "messages", 0), "content"),
        "action": ("action", ("event", "action"), "action_type"),
    }
    for what, (etype, path, key) in lines.items():
        out.append(
            _m(
                f"structure/repeated-field-log-{what}",
                _repeat_in_line(MID, etype, path, key),
                [("log-duplicate-key", f"{MID}.jsonl")],
                target=MID,
                fast=what == "message",
            )
        )
    out.append(
        _m(
            "structure/repeated-field-meta-message-count",
            lambda ctx: put(
                ctx.p(f"{M2}.meta"),
                with_repeated(json.loads(ctx.p(f"{M2}.meta").read_bytes()), (), "message_count", 1, indent=False),
            ),
            [("bad-meta", f"{M2}.meta")],
            target=M2,
        )
    )
    rel = f"{S2}/conversation.json"
    for what, (path, key) in {
        "top": ((), "title"),
        "message": (("messages", 0), "content"),
        "settings": (("settings",), "temperature"),
    }.items():
        out.append(
            _s(
                f"structure/repeated-key-{what}",
                lambda ctx, path=path, key=key: put(ctx.p(rel), with_repeated(sam_doc(ctx, S2), path, key)),
                [("duplicate-key", rel)],
                target=S2,
                fast=what == "message",
                broken_pipe=what == "top",
            )
        )
    return out


def compact_cases() -> list[Case]:
    """A log over compact's threshold whose rewrite would not shrink it: one big incompressible input
    (the fresh log carries it again, and the old log goes to the attic); compact must leave it."""

    def big_input(ctx):
        import base64

        lines = log_lines(ctx, MID)
        blob = base64.b64encode(os.urandom(96_000)).decode()
        lines.append(mf.mermaid_line(len(lines), "2026-08-10T14:05:00Z", {"text": blob, "type": "input"}).encode())
        put(ctx.p(f"{MID}.jsonl"), b"".join(lines))
        doc = mermaid_doc(ctx, MID)
        doc["input_history"] = (doc.get("input_history") or []) + [blob]
        write_mermaid_doc(ctx, MID, doc)

    return [_m("size/log-rewrite-would-not-shrink", big_input, [], target=MID, fast=True)]


def kept_cases(store: str) -> list[Case]:
    """Kept copies (``archive --copy``, #23): a tampered kept entry is reported and never restored; a copy's
    journal record can make repair drop nothing but that conversation's own older kept copies."""
    from click.testing import CliRunner

    from samctl.cli import cli

    mk = _m if store == "mermaid" else _s
    cid, other = (M3, M2) if store == "mermaid" else (S3, S2)

    def kept_entry(ctx, c) -> tuple[Path, Path]:
        r = CliRunner().invoke(
            cli,
            ["--root", str(ctx.root), "archive", "--copy", c, "--force", "--include-pinned"],
            catch_exceptions=False,
        )
        assert r.exit_code == 0, r.stderr
        m = sorted(ctx.attic.glob(f"{c}.kept.*.manifest.json"))[-1]
        return m, m.with_name(m.name[: -len(".manifest.json")] + ".tar.zst")

    def flipped(ctx):
        _, tar = kept_entry(ctx, cid)
        b = bytearray(tar.read_bytes())
        b[len(b) // 2] ^= 0xFF
        put(tar, bytes(b))

    def copy_record(drops):
        def build(ctx):
            theirs = kept_entry(ctx, other)[0].name[: -len(".manifest.json")]
            stem = kept_entry(ctx, cid)[0].name[: -len(".manifest.json")]
            rec = {
                "op": "copy",
                "stem": stem,
                "id": cid,
                "state": "kept",
                "files": [],
                "drops": [d.format(other=theirs) if isinstance(d, str) else d for d in drops],
            }
            put(ctx.attic / ".journal" / f"batch.{stem}.json", json.dumps({"op": "batch", "moves": [rec]}))

        return build

    A = "attic"
    return [
        mk(
            "kept/tampered-kept-entry",
            flipped,
            [Expect("attic-tampered|attic-corrupt", None, A)],
            target=cid,
            fast=True,
        ),
        mk(
            "kept/copy-record-drops-another-conversation",
            copy_record(["{other}", "../../outside/victim", 7]),
            [Expect("attic-interrupted", None, A)],
            target=cid,
            fast=True,
        ),
    ]


# ------------------------------------------------------------------------------------------ registry
HUGE_MESSAGE = 60 * 2**20  # characters: under the 64 MiB cap with the rest of the file (issue 20, finding 8)


def _huge_text(n: int) -> str:
    words = "budget deadline portland weekend invoice the of a café Zürich".split()
    line = " ".join(words[(i * 7) % len(words)] for i in range(4096))
    return (line + "\n") * (n // (len(line) + 1))


def huge_message(ctx: Ctx) -> None:
    """One conversation of a single message of ``HUGE_MESSAGE`` characters: what search, ls, show
    and check hold must stay a small multiple of the file (a list of its words was 10 times it)."""
    ts = "2026-01-02T03:04:05Z"
    text = _huge_text(HUGE_MESSAGE)
    if ctx.store == "sam":
        doc = mf.sam_doc(
            NEW_S,
            "one huge message",
            [mf.sam_message("A0000000-0000-4000-8000-000000000001", "user", text, ts)],
            ts,
            ts,
        )
        put(ctx.p(f"{NEW_S}/conversation.json"), mf.sam_dumps(doc))
    else:  # (mermaid keeps a user message in input_history too: an assistant message is kept once)
        doc = mf.mermaid_doc(NEW_M, "one huge message", [mf.mermaid_message("Assistant", text, ts)], ts)
        put(ctx.p(f"{NEW_M}.json"), mf.mermaid_snapshot(doc))
        put(ctx.p(f"{NEW_M}.meta"), mf.mermaid_meta(doc))


def huge_message_cases() -> list[Case]:
    return [
        _s("size/one-huge-message", huge_message, [], target=NEW_S, heavy=True, writes=False),
        _m("size/one-huge-message", huge_message, [], target=NEW_M, heavy=True, writes=False),
    ]


def cases() -> list[Case]:
    out = [baseline("mermaid"), baseline("sam")]
    out += huge_message_cases()
    out += mermaid_traversal() + sam_traversal()
    for store in ("mermaid", "sam"):
        out += special_files(store) + size_cases(store) + encoding_cases(store) + attic_cases(store)
        out += permission_cases(store) + cli_cases(store) + store_path_cases(store)
        out += attic_name_cases(store)
    out += mermaid_structure() + sam_structure() + sqlite_cases()
    out += sqlite_writer_cases() + scope_in_doubt_cases()
    out += duplicate_key_cases() + compact_cases()
    out += kept_cases("mermaid") + kept_cases("sam")
    out += fold_cases()
    out += read_shortcut_cases()
    names = [c.name for c in out]
    dupes = {n for n in names if names.count(n) > 1}
    assert not dupes, dupes
    return out


def fast_cases() -> list[Case]:
    return [c for c in cases() if c.fast and not c.heavy]


def categories() -> set:
    return {c.category for c in cases()}


# ---- what no writing command may change (issue 20, findings 1 and 3)
# ``protected`` of a case: the files every writing command must leave byte for byte as they were
# (tests/adversarial/test_protected.py runs them all and checks).
SQLITE_HOSTILE = {
    "trigger": ["CREATE TRIGGER wipe AFTER UPDATE ON {t} BEGIN DELETE FROM {t}; END"],
    "view": ["CREATE VIEW everything AS SELECT * FROM {t}"],
    "foreign-table": [
        "CREATE TABLE refs (mid TEXT REFERENCES {t}(id) ON UPDATE CASCADE ON DELETE CASCADE)",
        "INSERT INTO refs SELECT id FROM {t}",
    ],
}
PROTECTED: dict = {}  # case name -> paths relative to the conversations folder


def _sqlite_extra(rel: str, table: str, what: str, archive: bool):
    def build(ctx):
        p = ctx.p(rel)
        c = sqlite3.connect(p)
        if archive:  # a context_archive.db of the spec's schema, holding one chunk
            c.execute(
                'CREATE TABLE "context_archives" ("id" TEXT PRIMARY KEY NOT NULL, "conversation_id" TEXT NOT '
                'NULL, "messages_json" TEXT NOT NULL, "time_start" TEXT NOT NULL, "time_end" TEXT NOT NULL, '
                '"summary" TEXT NOT NULL, "key_topics_json" TEXT NOT NULL, "token_count" INTEGER NOT NULL, '
                '"reason" TEXT NOT NULL, "created_at" TEXT NOT NULL)'
            )
            c.execute(
                'CREATE INDEX "index_context_archives_on_conversation_id" ON "context_archives" ("conversation_id")'
            )
            c.execute('CREATE INDEX "index_context_archives_on_time_start" ON "context_archives" ("time_start")')
            t = "2026-08-10T14:02:12.345"
            c.execute(
                'INSERT INTO "context_archives" VALUES (?,?,?,?,?,?,?,?,?,?)',
                ("0D3C2B1A-0000-4000-8000-000000000001", SID, "[]", t, t, "", "[]", 0, "manual", t),
            )
        c.execute("CREATE TABLE filler (x)")  # free pages: something for compact's VACUUM to do
        c.executemany("INSERT INTO filler VALUES (?)", [("x" * 1000,)] * 100)
        c.commit()
        c.execute("DROP TABLE filler")
        for stmt in SQLITE_HOSTILE[what]:
            c.execute(stmt.format(t=table))
        c.commit()
        c.close()
        os.chmod(p, 0o600)

    return build


def sqlite_writer_cases() -> list[Case]:
    """SQLite files with their own triggers, views and tables referencing the memories, for every
    writing path: search --touch (memory.db), compact's VACUUM and restore --as-new (both files)."""
    out = []
    for name, table, archive in (
        ("memory.db", "conversation_memories", False),
        ("context_archive.db", "context_archives", True),
    ):
        rel = f"{SID}/{name}"
        for what in SQLITE_HOSTILE:
            case = _s(
                f"sqlite/writer-{what}-{name.split('.')[0]}",
                _sqlite_extra(rel, table, what, archive),
                [("db-schema", rel)],
                target=SID,
                fast=what == "trigger" and not archive,
            )
            PROTECTED[case.name] = [rel]
            out.append(case)
    return out


def scope_in_doubt_cases() -> list[Case]:
    """The conversation using the shared-topic scope TOPIC (S2) cannot be read: the scope must
    survive every writing command (check calls it scope-unknown)."""
    conv_rel, scope = f"{S2}/conversation.json", f"{TOPIC}/memory.db"

    def unparseable(ctx):
        with open(ctx.p(conv_rel), "ab") as f:
            f.write(b"x")

    out = [
        _s(
            "scope/user-unparseable",
            unparseable,
            [("bad-json", conv_rel), ("scope-unknown", TOPIC)],
            target=TOPIC,
            fast=True,
        ),
        _s(
            "scope/user-unreadable",
            lambda ctx: os.chmod(ctx.p(conv_rel), 0),
            [("unreadable", conv_rel), ("scope-unknown", TOPIC)],
            target=TOPIC,
            needs="nonroot",
        ),
        _s(
            "scope/user-folder-unreadable",
            lambda ctx: os.chmod(ctx.p(S2), 0),
            [("unreadable", S2), ("scope-unknown", TOPIC)],
            target=TOPIC,
            needs="nonroot",
        ),
    ]
    for c in out:
        PROTECTED[c.name] = [scope]
    return out


# ---- the index keeps a row's folded text only where lowering A-Z does not give it, a posting's
# count in a byte (255 or more beside it) and its row in two bytes (issue #22's size goal)
FOLD_HOSTILE = [
    "ÉCOLE İstanbul STRAẞE e\u0301cole ΣΟΦΊΑ",
    "plain ASCII École",
    "🙂 “quoted” — 東京 ﬁ",
    "budget " * 300 + "ÅNGSTRÖM",
    "A\u030a\u0301 Ǆ ǅ ǆ \u0130\u0307",
]


def fold_hostile(ctx: Ctx) -> None:
    """One conversation whose messages fold in every way the index must tell apart: capitals outside
    ASCII, decomposed accents, characters that lower to two, a word counted 300 times."""
    ts = "2026-01-02T03:04:05Z"
    if ctx.store == "sam":
        msgs = [
            mf.sam_message(f"A0000000-0000-4000-8000-00000000000{i}", "user", t, ts) for i, t in enumerate(FOLD_HOSTILE)
        ]
        put(ctx.p(f"{NEW_S}/conversation.json"), mf.sam_dumps(mf.sam_doc(NEW_S, "folds", msgs, ts, ts)))
    else:
        doc = mf.mermaid_doc(NEW_M, "folds", [mf.mermaid_message("Assistant", t, ts) for t in FOLD_HOSTILE], ts)
        put(ctx.p(f"{NEW_M}.json"), mf.mermaid_snapshot(doc))
        put(ctx.p(f"{NEW_M}.meta"), mf.mermaid_meta(doc))


def fold_cases() -> list[Case]:
    return [
        _s("encoding/fold-hostile-text", fold_hostile, [], target=NEW_S, fast=True),
        _m("encoding/fold-hostile-text", fold_hostile, [], target=NEW_M, fast=True),
    ]


def read_shortcut_cases() -> list[Case]:
    """Snapshots on the edges of the read path's shortcuts (issue #22): a message timestamp mermaid's
    shape accepts but samctl's parser refuses (year 0, over 1024 characters), one too long to be
    memoised, and nesting one level either side of serde's limit, deep in a message."""

    def stamp(value):
        return m_edit(set_at(("messages", 1, "timestamp"), value))

    def deep(levels):  # root, messages, message: 3 levels, then the metadata's
        return m_edit(set_at(("messages", 1, "metadata"), json.loads(nested(levels - 3))))

    frac = "2026-08-12T09:15:01." + "1" * 1003 + "Z"  # 1024 characters: still a timestamp
    return [
        _m(
            "structure/timestamp-year-zero",
            stamp("0000-08-12T09:15:01Z"),
            [("bad-snapshot", f"{M2}.json")],
            target=M2,
            fast=True,
        ),
        _m("structure/timestamp-1024-chars", stamp(frac), [], target=M2),
        _m(
            "structure/timestamp-1025-chars",
            stamp(frac[:-1] + "1Z"),
            [("bad-snapshot", f"{M2}.json")],
            target=M2,
            fast=True,
        ),
        _m("structure/nesting-at-the-limit", deep(MERMAID_DEPTH_LIMIT), [], target=M2),
        _m(
            "structure/nesting-one-past-the-limit",
            deep(MERMAID_DEPTH_LIMIT + 1),
            [("bad-snapshot", f"{M2}.json")],
            target=M2,
            fast=True,
        ),
    ]


MERMAID_DEPTH_LIMIT = 127  # serde_json's recursion limit (mermaid.md §3)
