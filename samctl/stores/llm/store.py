"""The llm store (simonw/llm): one SQLite ``logs.db`` in llm's user folder, read-only.

The root is the folder holding ``logs.db`` (``$LLM_USER_PATH``, ``~/.config/io.datasette.llm``,
``~/Library/Application Support/io.datasette.llm``) or the database file itself.  The database is
opened through ``stores.sqlite.open_readonly`` (``mode=ro`` URI, ``query_only``; ``immutable`` only
for a WAL database with no log, refused with a log), so reading never writes a byte, a journal or a
``-shm``.  A locked, corrupt or non-SQLite file is a finding.  Ids: a ULID (26 lowercase Crockford
base32 characters) for conversations, threads and lone responses; ``log-<n>`` for a pre-0.5 row.
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

import orjson

from samctl.errors import FileProblem, NotFound, UsageError
from samctl.model import INFO, Finding, recency
from samctl.stores import sqlite
from samctl.stores.base import Store
from samctl.stores.llm import decode

DB_NAME = "logs.db"


class LlmStore(Store):
    name = "llm"
    app_name = "llm"
    id_rule = "a ULID (26 characters of 0-9 a-z without i l o u), or log-N for a pre-0.5 row"
    read_only = True
    has_usage = True

    def __init__(self, conv_dir: Path, base: Path, caps=None, cache: bool = True):
        """``conv_dir``: the folder holding ``logs.db``, or the database file itself (any name)."""
        conv_dir = Path(conv_dir)
        self.db = conv_dir if conv_dir.is_file() else conv_dir / DB_NAME
        super().__init__(
            conv_dir.parent if conv_dir.is_file() else conv_dir, base, caps, cache=cache
        )  # (the search index)

    def identity_path(self, conv_dir: Path) -> Path:
        return self.db  # (several databases in one folder are several stores)

    def app_folder(self) -> str | None:
        """llm's own folder when the database is llm's ``logs.db`` (samctl writes no export there); a
        database of another name is the user's file, and the folder around it the user's."""
        return os.path.dirname(self.root_real) if self.db.name == DB_NAME else None

    @classmethod
    def default_roots(cls) -> list[Path]:
        return [default_db()]

    def describe(self) -> str:
        return f"llm store at {self.db} (read-only)"

    def resume_command(self, meta):
        """``llm -c --cid ID`` (``-d DB`` when the database is not llm's default); a pre-0.5 ``log-N`` row has
        no conversation id to continue."""
        if meta.id.startswith("log-"):
            return None
        argv = ["llm", "-c", "--cid", meta.id]
        try:
            default = os.path.realpath(default_db())
        except OSError:
            default = None
        if os.path.realpath(self.db) != default:
            argv += ["-d", str(self.db)]
        return argv, None

    # ids ----------------------------------------------------------------
    def valid_id(self, text: str) -> bool:
        return decode.valid_id(text)

    def normalize_prefix(self, text: str) -> str:
        return text.lower()

    def prefix_ok(self, text: str) -> bool:
        t = text.lower()
        if "log-".startswith(t) or t.startswith("log-"):
            return bool(t) and re.fullmatch(r"(?:l|lo|log|log-[0-9]{0,18})", t) is not None
        return 0 < len(t) <= 26 and decode.ULID_RE.match(t + "0" * (26 - len(t))) is not None

    def _with(self, findings: list, fn, default):
        """``fn(conn)`` on a fresh read-only connection; every SQLite or file problem becomes a finding."""
        try:
            conn = sqlite.open_readonly(self.db)
        except FileProblem as exc:
            findings.append(_llm_words(Finding(exc.code, str(self.db), exc.message)))
            return default
        except sqlite.SQLITE_ERRORS as exc:
            findings.append(_llm_words(sqlite.sqlite_finding(exc, str(self.db), None)))
            return default
        text = conn.text_factory = decode.TextFactory()
        conn.row_factory = decode.plain_row
        try:
            return fn(conn)
        except sqlite.SQLITE_ERRORS as exc:
            findings.append(_llm_words(sqlite.sqlite_finding(exc, str(self.db), None)))
            return default
        finally:
            conn.close()
            text.report(str(self.db), findings)

    def usage_records(self, findings: list):
        from samctl.stores.llm.usage import usage_rows  # (lazy: only `samctl usage` reads usage)

        return self._with(findings, lambda conn: usage_rows(conn, self, findings), [])

    def all_ids(self) -> list[str]:
        return sorted(m.id for m in self.list_metas([]))

    def has_id(self, cid: str) -> bool:
        """Whether a whole id is in the database; True too when the database cannot be read now (locked, a
        pending WAL): ``load`` then reports why, as ``ls`` does, instead of "no conversation matches"."""
        found: list = []
        ids = {m.id for m in self.list_metas(found)}
        return cid in ids or any(f.severity == "error" for f in found)

    def list_metas(self, findings: list) -> list:
        metas = self._with(findings, lambda c: decode.list_metas(c, str(self.db), findings), [])
        metas.sort(key=recency, reverse=True)
        return metas

    def load(self, cid: str, findings: list):
        if not self.valid_id(cid):
            raise UsageError(f"{cid[:60]!r} is not an llm conversation id", hint=f"ids look like {self.id_rule}")
        conv = self._with(findings, lambda c: decode.load(c, cid, str(self.db), findings), False)
        if conv is None:
            raise NotFound(f"no conversation {cid} in {self.db}")
        return conv or None

    def raw_path(self, cid: str) -> Path:
        return self.db

    def raw_part(self, cid: str, path: Path) -> bytes | None:
        """The conversation's rows (conversation, responses, thread, turns, messages with parts) as JSON: the
        database holds every conversation, so ``show --raw`` gives this one's part, never the whole file."""
        found: list = []
        conv = self.load(cid, found)
        rows = conv.raw if conv is not None else {}
        return orjson.dumps(rows, option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS, default=_printable) + b"\n"

    def check(self, findings: list, fix: bool = False, force: bool = False) -> list[str]:
        """``PRAGMA quick_check``, then every conversation loaded (dangling references, cycles, unknown parts)."""

        def run(conn):
            rows = [r[0] for r in conn.execute("PRAGMA quick_check")]
            if rows != ["ok"]:
                findings.append(Finding("db-corrupt", str(self.db), "quick_check: " + "; ".join(map(str, rows[:3]))))
            tables = decode.schema(conn)
            known = KNOWN_TABLES
            extra = sorted(
                n
                for n in tables
                if n not in known and not n.startswith(("sqlite_", "responses_fts", "turn_search_fts"))
            )
            if extra:
                findings.append(
                    Finding(
                        "unknown-table", str(self.db), "tables samctl does not read: " + ", ".join(extra)[:200], INFO
                    )
                )
            for m in decode.list_metas(conn, str(self.db), findings):  # (db-schema reported there)
                decode.load(conn, m.id, str(self.db), findings)

        self._with(findings, run, None)
        return []


KNOWN_TABLES = {
    "_llm_migrations",
    "conversations",
    "responses",
    "schemas",
    "attachments",
    "prompt_attachments",
    "fragments",
    "fragment_aliases",
    "prompt_fragments",
    "system_fragments",
    "tools",
    "tool_responses",
    "tool_calls",
    "tool_results",
    "tool_instances",
    "tool_results_attachments",
    "messages",
    "parts",
    "part_attachments",
    "part_fragments",
    "threads",
    "turns",
    "turn_tools",
    "turn_fragments",
    "turn_search",
    "tool_instantiations",
    "logs",
    "log",
}


def _llm_words(f: Finding) -> Finding:
    """stores.sqlite's reasons name SAM (its first user): the same classification, said of llm."""
    f.reason = f.reason.replace("SAM", "llm")
    return f


def _printable(v):
    if isinstance(v, bytes):
        return f"<{len(v)} bytes>"
    return str(v)


def default_db(env=None, platform: str | None = None) -> Path:
    """Where ``llm logs path`` says the database is, computed without calling llm (its ``user_dir()``
    creates the folder): ``$LLM_USER_PATH/logs.db``, else click's app dir for ``io.datasette.llm``.
    For the cross-store view (every store found at once); nothing here reads or creates it."""
    env = os.environ if env is None else env
    platform = sys.platform if platform is None else platform
    if env.get("LLM_USER_PATH"):
        return Path(env["LLM_USER_PATH"]).expanduser() / DB_NAME
    if platform == "darwin":
        return Path("~/Library/Application Support/io.datasette.llm").expanduser() / DB_NAME
    if platform.startswith("win"):
        return Path(env.get("APPDATA") or "~").expanduser() / "io.datasette.llm" / DB_NAME
    return Path(env.get("XDG_CONFIG_HOME") or "~/.config").expanduser() / "io.datasette.llm" / DB_NAME


def looks_like_llm(p: Path) -> Path | None:
    """The database at ``p``: a folder holding a regular ``logs.db`` (whatever is in it: a broken one is
    a finding), or a regular SQLite file named ``*.db``; else None."""
    try:
        if p.is_dir():
            db = p / DB_NAME  # whatever it is (a symlink, a FIFO): reading it is refused with a finding
            return db if os.path.lexists(db) else None
        if p.name.endswith(".db") and p.is_file() and not p.is_symlink():
            with open(p, "rb") as f:
                if f.read(16) == b"SQLite format 3\0":
                    return p
    except OSError:
        return None
    return None
