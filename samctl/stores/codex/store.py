"""The Codex CLI store (read-only): ``$CODEX_HOME`` (``~/.codex``).

A conversation is one rollout file, found by walking ``sessions/YYYY/MM/DD/`` (digit folders only, never a
symlink), ``sessions/`` itself (the TypeScript CLI's flat ``.json`` files) and ``archived_sessions/``; its id
is the thread UUID at the end of the file name (never an id from inside a file).  ``.jsonl.zst`` rollouts
(compressed in place by newer Codex) are decompressed in memory within the read cap; a plain ``.jsonl``
wins over its ``.zst`` twin, and ``sessions/`` over ``archived_sessions/``.  Thread names come from
``session_index.jsonl`` (newest entry per id).  samctl never rewrites a file here: rm, archive (--copy)
and restore move a rollout (with its ``.zst`` twin) to and from samctl's attic in its own data folder
(``stores/sessionfiles.py``); ``session_index.jsonl`` is left as it is.
"""

from __future__ import annotations

import os
import re
import stat
import time
from pathlib import Path

from samctl.errors import FileProblem
from samctl.fs import filemodes, reading
from samctl.model import WARNING, Finding
from samctl.stores.base import Store
from samctl.stores.codex.decode import NAME_RE, UUID_RE, decode_rollout
from samctl.stores.jsonlines import FRESH_SECONDS, parse_lines
from samctl.stores.readers import OneFileEach, UuidPrefixes, cached_metas, scan
from samctl.stores.sessionfiles import KeptSessions

_YEAR, _TWO = re.compile(r"\d{4}\Z"), re.compile(r"\d{2}\Z")
_RANK = {".jsonl": 0, ".json": 1, ".jsonl.zst": 2}  # which of two files of one id is read


def decompress(data: bytes, cap: int, path: str) -> bytes:
    """The zstd frame(s) in ``data``: at most ``cap`` bytes decompressed (a bomb is refused after ``cap``,
    not read), and every frame complete (a cut stream is reported, not read as a short file).  Input goes
    in 16 KiB at a time, so memory stays near ``cap`` whatever the ratio."""
    import zstandard  # (lazy: zstandard: slow to import)

    out, total, pos, step = [], 0, 0, 1 << 14
    try:
        while pos < len(data):
            d = zstandard.ZstdDecompressor().decompressobj()
            while not d.eof and pos < len(data):
                piece = d.decompress(data[pos : pos + step])
                pos += min(step, len(data) - pos)
                total += len(piece)
                if total > cap:
                    raise FileProblem("too-large", path, f"decompresses to more than the {cap}-byte cap")
                out.append(piece)
            if not d.eof:
                raise FileProblem("bad-zstd", path, "the zstd stream is cut short")
            pos -= len(d.unused_data)
    except zstandard.ZstdError as exc:
        raise FileProblem("bad-zstd", path, f"not a readable zstd stream ({str(exc)[:120]})") from None
    if not total:  # (Codex never writes an empty rollout: a 0-byte file, or only skippable frames)
        raise FileProblem("bad-zstd", path, "no data in it" if data else "empty (0 bytes): no zstd frame")
    return b"".join(out)


class CodexStore(KeptSessions, UuidPrefixes, OneFileEach, Store):
    unit = "thread"
    name = "codex"
    app_name = "Codex CLI"
    id_rule = "a thread UUID (8-4-4-4-12 hex digits), the end of its rollout file's name"
    has_usage = True

    def __init__(self, conv_dir: Path, base: Path, caps=None, cache: bool = True):
        super().__init__(conv_dir, base, caps, cache)
        self._index: dict | None = None
        self._titles: dict | None = None
        self._stats: dict = {}
        self._scan_findings: list = []

    # ids -------------------------------------------------------------------
    def valid_id(self, text: str) -> bool:
        return isinstance(text, str) and UUID_RE.match(text) is not None

    def _rollouts(self, findings: list):
        """``(path, id, suffix)`` of every rollout file, live ones first."""
        home = str(self.conv_dir)
        sessions = os.path.join(home, "sessions")
        folders = [sessions]
        for y, yp, st in scan(sessions, findings):
            if not (stat.S_ISDIR(st.st_mode) and _YEAR.match(y)):
                continue
            for m, mp, st2 in scan(yp, findings):
                if not (stat.S_ISDIR(st2.st_mode) and _TWO.match(m)):
                    continue
                folders += [dp for d, dp, st3 in scan(mp, findings) if stat.S_ISDIR(st3.st_mode) and _TWO.match(d)]
        folders.append(os.path.join(home, "archived_sessions"))
        for folder in folders:
            for n, p, st in scan(folder, findings):
                m = NAME_RE.match(n)
                if m is None:
                    continue
                if not stat.S_ISREG(st.st_mode):
                    findings.append(
                        Finding(
                            "not-regular", p, f"is not a regular file ({filemodes.describe_mode(st.st_mode)})", WARNING
                        )
                    )
                    continue
                yield p, m.group(2).lower(), "." + m.group(3), st

    def index(self) -> dict:
        """id -> rollout path (plain before .zst, sessions/ before archived_sessions/)."""
        if self._index is None:
            found: list = []
            idx: dict = {}
            self._twins = {}
            for p, cid, suffix, st in self._rollouts(found):
                old = idx.get(cid)
                if old is None:
                    idx[cid] = (p, suffix)
                    self._stats[cid] = st
                elif old[0][: -len(old[1])] != p[: -len(suffix)]:  # not the .zst twin: another copy of the thread
                    self._twins[cid] = p
                    found.append(
                        Finding("duplicate-id", p, f"thread {cid} is also in {old[0]}; that one is read", WARNING, cid)
                    )
                elif _RANK[suffix] < _RANK[old[1]]:
                    idx[cid] = (p, suffix)
                    self._stats[cid] = st
            self._index = {k: v[0] for k, v in idx.items()}
            self._scan_findings = found
        return self._index

    def titles(self) -> dict:
        """Thread names from ``session_index.jsonl`` (the newest line per id wins)."""
        if self._titles is None:
            self._titles = {}
            p = os.path.join(str(self.conv_dir), "session_index.jsonl")
            if filemodes.lstat(p) is not None:
                try:
                    data = reading.read_capped(p, self.caps.other)
                except FileProblem as exc:
                    self._scan_findings.append(Finding(exc.code, p, exc.message, WARNING))
                    return self._titles
                for _, obj in parse_lines(data, p, self._scan_findings):
                    if isinstance(obj.get("id"), str) and isinstance(obj.get("thread_name"), str):
                        self._titles[obj["id"].lower()] = obj["thread_name"]
        return self._titles

    # reading ---------------------------------------------------------------
    def load(self, cid: str, findings: list):
        return self._read(cid, findings, self.titles().get(cid))

    def _read(self, cid: str, findings: list, index_title: str | None):
        path = str(self.raw_path(cid))
        try:
            st = filemodes.lstat(path)
            data = reading.read_capped(path, self.caps.log)
            if path.endswith(".zst"):
                data = decompress(data, self.caps.log, path)
        except FileProblem as exc:
            findings.append(Finding(exc.code, path, exc.message, "error", cid))
            return None
        fresh = st is not None and time.time() - st.st_mtime < FRESH_SECONDS
        conv, found = decode_rollout(
            data, path, cid, index_title=index_title, size=st.st_size if st else None, fresh=fresh
        )
        findings.extend(found)
        return conv

    def usage_records(self, findings: list):
        from samctl.stores.codex.usage import usage_records  # (lazy: only `samctl usage` reads usage)

        idx = self.index()
        findings.extend(self._scan_findings)
        rollouts = [(cid, p, self._stats[cid]) for cid, p in idx.items() if cid in self._stats]
        return usage_records(self, findings, rollouts, decompress)

    def list_metas(self, findings: list) -> list:
        """Every thread with at least one message, newest first, through the listing cache (the names of
        ``session_index.jsonl`` applied after it); a file that cannot be read is a finding (what is wrong
        inside a readable file is for ``show`` and ``check``)."""
        idx = self.index()
        titles = self.titles()
        findings.extend(self._scan_findings)

        def read(cid):
            found: list = []
            conv = self._read(cid, found, None)
            return (conv.meta if conv is not None else None), [f for f in found if f.severity == "error"]

        return cached_metas(self, [(cid, p, self._stats[cid]) for cid, p in idx.items()], read, findings, titles.get)

    def check(self, findings: list, fix: bool = False, force: bool = False) -> list[str]:
        """Every finding of every rollout; nothing is ever fixed here."""
        idx = self.index()
        self.titles()
        findings.extend(self._scan_findings)
        for cid in idx:
            self.load(cid, findings)
        return []

    def resume_command(self, meta):
        """The app's resume, in the session's folder (the app lists a session under its working folder)."""
        return ["codex", "resume", meta.id], meta.project

    @classmethod
    def default_roots(cls) -> list[Path]:
        return [default_root()]

    def describe(self) -> str:
        return f"Codex CLI store at {self.conv_dir}"

    # moving threads (stores/sessionfiles.py) -----------------------------------------------------
    def companions(self, path: Path) -> list[Path]:
        """The ``.zst`` twin of a plain rollout, or the plain twin of a ``.zst`` one (the store lists
        one of the two: moving only that one would leave the thread listed)."""
        n = path.name
        twin = n[:-4] if n.endswith(".jsonl.zst") else n + ".zst" if n.endswith(".jsonl") else None
        return [path.parent / twin] if twin else []

    @classmethod
    def member_belongs(cls, parts: list[str], cid: str) -> bool:
        """``sessions/YYYY/MM/DD/``, ``sessions/`` or ``archived_sessions/``, then a rollout named by the id."""
        m = NAME_RE.match(parts[-1])
        if m is None or m.group(2) != cid:
            return False
        head = parts[:-1]
        return head in (["sessions"], ["archived_sessions"]) or (
            len(head) == 4
            and head[0] == "sessions"
            and _YEAR.match(head[1]) is not None
            and _TWO.match(head[2]) is not None
            and _TWO.match(head[3]) is not None
        )

    def forget_listing(self) -> None:
        super().forget_listing()
        self._titles = None


def default_root() -> Path:
    """Where Codex keeps its files: ``$CODEX_HOME``, else ``~/.codex``."""
    return Path(os.environ.get("CODEX_HOME") or "~/.codex").expanduser()
