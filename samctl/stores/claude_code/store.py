"""The Claude Code store (read-only): ``<config>/projects/<project slug>/<session uuid>.jsonl``.

A conversation is one session file; its id is the file's UUID (never a ``sessionId`` from inside a file).
Its sub-agent transcripts are ``<session>/subagents/agent-<id>.jsonl`` (2.1.2 and later) and, before that,
``agent-<id>.jsonl`` beside it when the session names that agent.  samctl never rewrites a file here:
rm, archive (--copy) and restore move a session file and its ``<session>/`` folder to and from samctl's
attic in its own data folder (``stores/sessionfiles.py``; the older ``agent-*.jsonl`` beside it stay, as
other sessions may name them), and reading never touches a file's mtime, which Claude Code's cleanup keys on.
"""

from __future__ import annotations

import os
import stat
import time
from pathlib import Path

from samctl.errors import FileProblem
from samctl.fs import filemodes, reading, safepaths
from samctl.model import WARNING, Finding
from samctl.stores.base import Store
from samctl.stores.claude_code.decode import AGENT_RE, SESSION_RE, agent_ids, decode_session
from samctl.stores.jsonlines import FRESH_SECONDS
from samctl.stores.readers import OneFileEach, UuidPrefixes, cached_metas, scan
from samctl.stores.sessionfiles import KeptSessions


class ClaudeCodeStore(KeptSessions, UuidPrefixes, OneFileEach, Store):
    unit = "session"
    name = "claude-code"
    app_name = "Claude Code"
    id_rule = "a session UUID (8-4-4-4-12 hex digits), the name of its .jsonl file"
    has_usage = True

    def __init__(self, conv_dir: Path, base: Path, caps=None, cache: bool = True):
        super().__init__(conv_dir, base, caps, cache)
        self._index: dict | None = None
        self._stats: dict = {}
        self._scan_findings: list = []

    # ids -------------------------------------------------------------------
    def valid_id(self, text: str) -> bool:
        return isinstance(text, str) and SESSION_RE.match(text) is not None

    def _projects(self, findings: list) -> list[str]:
        """The project folders: the store's folder itself when it holds sessions (a root given as one
        project), else its subfolders (never through a symlink)."""
        root = str(self.conv_dir)
        entries = scan(root, findings, root=True)
        if any(SESSION_RE.match(n[:-6]) and n.endswith(".jsonl") for n, _, _ in entries):
            return [root]
        return [p for _, p, st in entries if stat.S_ISDIR(st.st_mode)]

    def index(self) -> dict:
        """id -> session file path, the first project (by name) winning a duplicate id."""
        if self._index is None:
            found: list = []
            idx: dict = {}
            self._twins = {}
            for proj in self._projects(found):
                for n, p, st in scan(proj, found, ""):
                    if not n.endswith(".jsonl") or not SESSION_RE.match(n[:-6]):
                        continue
                    cid = n[:-6].lower()
                    if not stat.S_ISREG(st.st_mode):
                        found.append(
                            Finding(
                                "not-regular",
                                p,
                                f"is not a regular file ({filemodes.describe_mode(st.st_mode)})",
                                WARNING,
                                cid,
                            )
                        )
                    elif cid in idx:
                        self._twins[cid] = p
                        found.append(
                            Finding(
                                "duplicate-id",
                                p,
                                f"session {cid} is also in {idx[cid]}; that one is used",
                                WARNING,
                                cid,
                            )
                        )
                    else:
                        idx[cid] = p
                        self._stats[cid] = st
            self._index = idx
            self._scan_findings = found
        return self._index

    # reading ---------------------------------------------------------------
    def _read(self, cid: str, findings: list, with_agents: bool):
        path = self.raw_path(cid)
        try:
            st = filemodes.lstat(path)
            data = reading.read_capped(path, self.caps.log)
        except FileProblem as exc:
            findings.append(Finding(exc.code, str(path), exc.message, "error", cid))
            return None
        fresh = st is not None and time.time() - st.st_mtime < FRESH_SECONDS
        agents = self._agents(path, cid, data, findings) if with_agents else []
        conv, found = decode_session(data, str(path), cid, agents, size=len(data), fresh=fresh)
        findings.extend(found)
        return conv

    def _agents(self, path: Path, cid: str, data: bytes, findings: list) -> list:
        """``(agent id, path, bytes)`` of the session's sub-agent transcripts (both layouts)."""
        out, seen = [], set()
        folder = path.parent / path.stem / "subagents"
        st = filemodes.lstat(path.parent / path.stem)
        sub = filemodes.lstat(folder)
        candidates = []
        for p, s in ((path.parent / path.stem, st), (folder, sub)):
            if s is not None and stat.S_ISLNK(s.st_mode):
                findings.append(
                    Finding(
                        "symlink",
                        str(p),
                        "is a symlink (samctl does not follow symlinks): its sub-agent transcripts are not read",
                        WARNING,
                        cid,
                    )
                )
                break
        if st is not None and stat.S_ISDIR(st.st_mode) and sub is not None and stat.S_ISDIR(sub.st_mode):
            candidates += [
                (n, p) for n, p, s in scan(str(folder), findings, " in a subagents folder") if stat.S_ISREG(s.st_mode)
            ]
        for agent in sorted(agent_ids(data)):
            n = f"agent-{agent}.jsonl"
            if AGENT_RE.match(agent):
                candidates.append((n, str(safepaths.child(path.parent, n))))
        for n, p in candidates:
            if not (n.startswith("agent-") and n.endswith(".jsonl")) or not AGENT_RE.match(n[6:-6]) or p in seen:
                continue
            seen.add(p)
            if filemodes.lstat(p) is None:
                continue
            try:
                out.append((n[6:-6], p, reading.read_capped(p, self.caps.log)))
            except FileProblem as exc:
                findings.append(Finding(exc.code, p, exc.message, WARNING, cid))
        return out

    def load(self, cid: str, findings: list):
        return self._read(cid, findings, with_agents=True)

    def list_metas(self, findings: list) -> list:
        """Every session with at least one message, newest first, through the listing cache; a file that
        cannot be read is a finding (what is wrong inside a readable file is for ``show`` and ``check``)."""
        idx = self.index()
        findings.extend(self._scan_findings)

        def read(cid):
            found: list = []
            conv = self._read(cid, found, with_agents=False)
            return (conv.meta if conv is not None else None), [f for f in found if f.severity == "error"]

        return cached_metas(self, [(cid, p, self._stats[cid]) for cid, p in idx.items()], read, findings)

    def check(self, findings: list, fix: bool = False, force: bool = False) -> list[str]:
        """Every finding of every session (and its sub-agents); nothing is ever fixed here."""
        idx = self.index()
        findings.extend(self._scan_findings)
        for cid in idx:
            self._read(cid, findings, with_agents=True)
        return []

    def usage_records(self, findings: list):
        from samctl.stores.claude_code.usage import usage_records  # (lazy: only `samctl usage` reads usage)

        return usage_records(self, findings, self._projects(findings))

    def resume_command(self, meta):
        """The app's resume, in the session's folder (the app lists a session under its working folder)."""
        return ["claude", "--resume", meta.id], meta.project

    @classmethod
    def default_roots(cls) -> list[Path]:
        return [default_root()]

    def describe(self) -> str:
        return f"Claude Code store at {self.conv_dir}"

    # moving sessions (stores/sessionfiles.py) ------------------------------------------------
    def companions(self, path: Path) -> list[Path]:
        """The session's folder of the same name (sub-agent transcripts, tool results) and all in it."""
        return self._tree(path.parent / path.stem)

    @classmethod
    def member_belongs(cls, parts: list[str], cid: str) -> bool:
        """``[project/]<id>.jsonl``, or a name inside ``[project/]<id>/``."""
        n = len(parts)
        if parts[-1] == f"{cid}.jsonl" and n <= 2:
            return True
        return parts[0] == cid or (n >= 2 and parts[1] == cid)

    def cleanup_warning(self) -> str | None:
        return (
            f"Claude Code deletes sessions not written to for cleanupPeriodDays (30 days unless its settings "
            f"say otherwise) when it starts; a restored session keeps its old mtime, so the next start deletes "
            f"it again unless cleanupPeriodDays is raised in {self.base / 'settings.json'} (or the session is "
            "restored with --touch)"
        )


def default_root() -> Path:
    """Where Claude Code keeps its files: ``$CLAUDE_CONFIG_DIR``, else ``~/.claude``."""
    return Path(os.environ.get("CLAUDE_CONFIG_DIR") or "~/.claude").expanduser()
