"""What every store module provides.

A Store is bound to one root on disk.  It validates ids before building any
path, reads only through samctl.fs, and reports every problem it meets as a
Finding instead of raising, except when the caller asked for one thing that
cannot be had (then a SamctlError).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

from samctl.errors import Denied, FileProblem, NotFound, SamctlError, UsageError
from samctl.fs import reading, safepaths, userdirs
from samctl.model import ERROR, Finding
from samctl.said import BIGGER_CAP, Suggestion, said


@dataclass
class Caps:
    """Size caps for reads; ``--max-file-size`` sets all three to one value."""

    snapshot: int = reading.SNAPSHOT_CAP
    log: int = reading.LOG_CAP
    other: int = reading.SNAPSHOT_CAP

    @classmethod
    def uniform(cls, n: int) -> Caps:
        return cls(n, n, n)


class FreshLog(NamedTuple):
    """An event log written afresh (``Store.fresh_log``): the same conversation in fewer bytes."""

    data: bytes
    events_before: int
    events_after: int
    title: str | None


class UsageRecord(NamedTuple):
    """One counted use of a model (``Store.usage_records``): plain values, no store object.

    ``ts`` epoch seconds; ``key`` the id it is counted once by across every file of the store (Claude Code:
    ``message id:request id``), None when the store already counts each once; ``order`` ranks the file it
    came from (earliest first): of records sharing a key, the first in that order is the one counted."""

    ts: float
    session: str
    project: str
    model: str | None
    key: str | None
    input: int
    output: int
    cache_creation: int
    cache_read: int
    reasoning: int
    store: str
    order: float


def _contained(name: str, fn):
    """``fn`` (a reading method of a Store) with any exception that is not a SamctlError turned into an
    ``internal-error`` finding and the method's "nothing" answer: a bug that one store's hostile file
    reaches stops that store's part of a command, never the other stores' (issue #31).  The finding says
    "internal error" and where, so the adversarial harness still counts it as a crash."""
    empty = {"list_metas": list, "check": list, "search_sources": dict}.get(name, lambda: None)

    def finding(self, exc: Exception, cid=None) -> Finding:
        tb = exc.__traceback__
        while tb is not None and tb.tb_next is not None:
            tb = tb.tb_next
        where = f" at {Path(tb.tb_frame.f_code.co_filename).name}:{tb.tb_lineno}" if tb is not None else ""
        return Finding(
            "internal-error",
            str(self.conv_dir),
            f"internal error in samctl reading this store "
            f"({type(exc).__name__}{where}: {str(exc)[:120]}); the other stores are unaffected "
            "(please report it)",
            ERROR,
            cid,
        )

    if getattr(getattr(fn, "__code__", None), "co_flags", 0) & 0x20:  # CO_GENERATOR (inspect: slow to import)

        @functools.wraps(fn)
        def rows(self, src, findings, *args, **kwargs):
            try:
                yield from fn(self, src, findings, *args, **kwargs)
            except SamctlError:
                raise
            except Exception as exc:  # noqa: BLE001 - contained, reported as a finding
                findings.append(finding(self, exc, getattr(src, "conv", None)))

        rows._contained = True  # type: ignore[attr-defined]  # (a mark the class hook reads)
        return rows

    at = 1 if name in ("load", "message_rows") else 0  # where ``findings`` is among the positional arguments

    @functools.wraps(fn)
    def call(self, *args, **kwargs):
        findings = args[at] if len(args) > at else kwargs.get("findings")
        if name == "check" and (args[1] if len(args) > 1 else kwargs.get("fix")) or not isinstance(findings, list):
            return fn(self, *args, **kwargs)  # (a fix writes: an error must stop it, loudly)
        try:
            return fn(self, *args, **kwargs)
        except SamctlError:
            raise
        except Exception as exc:  # noqa: BLE001 - contained, reported as a finding
            findings.append(finding(self, exc, args[0] if at and args else None))
            return empty()

    call._contained = True  # type: ignore[attr-defined]  # (as above)
    return call


_CONTAINED = ("list_metas", "load", "message_rows", "check", "search_sources", "source_rows")


class Store:
    """The Store protocol: everything the rest of samctl asks of a store.

    Capabilities a store lacks are declared here (the class attributes below, and methods whose
    default says "none"), so no caller ever branches on a store's name.  Every store's reading
    methods (``_CONTAINED``) are wrapped by ``_contained`` when its class is defined.
    """

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        for name in _CONTAINED:
            fn = cls.__dict__.get(name)
            if fn is not None and callable(fn) and not getattr(fn, "_contained", False):
                setattr(cls, name, _contained(name, fn))

    name = "?"
    id_rule = ""  # one line for error messages
    app_name = "?"  # the owning app, as a person calls it
    # capabilities
    has_event_logs = False  # an append-only event log per conversation (`samctl log`, compact's log steps)
    has_memories = False  # memory databases (search --touch/--like, stats), shared-topic scopes
    keeps_pinned = False  # the app protects pinned conversations: a purge needs --include-pinned
    purge_takes_anything = False  # the app's own delete removes whatever files are there, unchecked
    read_only = False  # another app's store that samctl only reads: writing commands refuse (cli/common.py)
    moves_only = False  # another app's store whose files samctl moves to and from its attic (rm, archive,
    # restore, attic, compact's attic steps) but never rewrites: recover, check --fix, search --touch refuse
    has_usage = False  # the app records tokens per model response (`samctl usage`: usage_records)

    @classmethod
    def default_roots(cls) -> list[Path]:
        """Where the app keeps this kind of store on this machine (``samctl stores``); [] when it has no
        fixed place (an export is wherever the user put it)."""
        return []

    @classmethod
    def capabilities(cls) -> list[str]:
        """What samctl can do with this kind of store, in words (``samctl stores``)."""
        out = ["read"] if cls.read_only else ["read", "move"] if cls.moves_only else ["read", "write"]
        out += [
            what
            for what, has in (
                ("memories", cls.has_memories),
                ("event logs", cls.has_event_logs),
                ("usage", cls.has_usage),
            )
            if has
        ]
        return out

    def __init__(self, conv_dir: Path, base: Path, caps: Caps | None = None, cache: bool = True):
        self.conv_dir = Path(conv_dir)
        self.base = Path(base)
        self.caps = caps or Caps()
        self.root_real = str(Path(self.identity_path(conv_dir)).resolve())
        # A cache folder inside the store would put samctl's files among the app's, and make a
        # read-only command write there; one samctl cannot write or make is no use: such a run
        # uses no cache, and ``cache_note`` says why (the CLI prints it once; it also turns the
        # cache off for a cache folder in the app's folders around the store).
        self.cache_note = None  # (finding code, reason) when the cache is off for one of those reasons
        if cache:
            if safepaths.is_inside(self.root_real, userdirs.cache_dir()):
                self.cache_note = ("cache-in-store", "samctl's cache folder is inside the store")
            else:
                why = userdirs.cache_unusable(userdirs.cache_dir()) or userdirs.own_folder_problem(userdirs.cache_dir())
                self.cache_note = ("cache-unusable", f"samctl cannot use its cache folder: {why}") if why else None
        self.use_cache = cache and self.cache_note is None

    def identity_path(self, conv_dir: Path) -> Path:
        """What the store is, as a path: its conversations folder here; a store kept in one file (llm's
        database) is that file, so that two files in one folder are two stores (index, listing cache,
        "the store" in messages, dedup across roots) and the folder around the file is not the store."""
        return conv_dir

    # ids -------------------------------------------------------------
    def valid_id(self, text: str) -> bool:
        raise NotImplementedError

    def prefix_ok(self, text: str) -> bool:
        """True if ``text`` could be the start of a valid id (nothing else is tried)."""
        raise NotImplementedError

    def normalize_prefix(self, text: str) -> str:
        return text

    def all_ids(self) -> list[str]:
        raise NotImplementedError

    def has_id(self, cid: str) -> bool:
        """True if ``cid`` is one of ``all_ids()``; a store answers without listing where it can
        (a whole id typed in a store of 100,000 needs a few lstat calls, not the folder's listing)."""
        return cid in self.all_ids()

    def holds_conversation(self, cid: str) -> bool:
        """False for an id of ``all_ids`` with no conversation file (SAM: a memory scope, a folder
        left empty); an id prefix matching it and one real conversation names the conversation."""
        return True

    # reading ------------------------------------------------------------
    def list_metas(self, findings: list) -> list:
        """Every listed conversation's ConversationMeta, newest first (``model.recency``, stable)."""
        raise NotImplementedError

    def load(self, cid: str, findings: list):
        raise NotImplementedError

    def load_reported(self, cid: str, findings: list):
        """``load``, but what cannot be read is a finding, not an exception: the conversation, or None when
        nothing of it could be read (findings say why).  NotFound when no conversation has the id."""
        start = len(findings)
        try:
            conv = self.load(cid, findings)
        except FileProblem as exc:
            extra = said("; ", BIGGER_CAP) if exc.code == "too-large" else ""
            findings.append(Finding(exc.code, str(exc.path), said(exc.message, extra), ERROR, cid))
            return None
        if conv is None:
            # a file skipped only for its size is not damaged: recover would not help, a bigger cap does
            too_large = any(f.code == "too-large" for f in findings[start:])
            what = (
                BIGGER_CAP
                if too_large
                else said("try `", Suggestion("recover", cid), "`")
                if not (self.read_only or self.moves_only)
                else said("`", Suggestion("check"), "` says why")
            )  # (recover refuses those)
            findings.append(
                Finding(
                    "unreadable-conversation",
                    str(self.conv_dir),
                    said(f"nothing of {cid} could be read; ", what),
                    ERROR,
                    cid,
                )
            )
        else:
            findings.extend(self.load_notes(conv))
        return conv

    def load_listed(self, cid: str, findings: list):
        """``load_reported`` for an id taken from a listing: a conversation that vanished since is a finding."""
        try:
            return self.load_reported(cid, findings)
        except Denied as exc:
            findings.append(Finding("unreadable", exc.path, "permission denied", ERROR, cid))
            return None
        except NotFound as exc:
            findings.append(
                Finding("missing", str(self.conv_dir), f"{cid}: {exc.message} (removed while samctl ran?)", ERROR, cid)
            )
            return None

    def message_rows(self, cid: str, findings: list, include_hidden: bool) -> list[dict] | None:
        """What an export writes as JSON lines for ``cid`` (``core.export.jsonl_bytes``'s rows: docs/json.md),
        made straight from the stored messages where the store can, without building its conversation;
        None (nothing added to ``findings``) where it cannot: the caller then loads the conversation."""
        return None

    def load_notes(self, conv) -> list:
        """Findings every reader of a whole conversation shows with it (e.g. that it was rebuilt from a log)."""
        return []

    def resume_command(self, meta) -> tuple[list[str], str | None] | None:
        """The app's own command to go back into the conversation ``meta`` lists, as an argv, and the folder
        to run it in (None: anywhere); None when the app has no such command."""
        return None

    def raw_path(self, cid: str) -> Path:
        raise NotImplementedError

    def raw_part(self, cid: str, path: Path) -> bytes | None:
        """When ``path`` (``raw_path(cid)``) holds other conversations too: ``cid``'s part of it."""
        return None

    def check(self, findings: list, fix: bool = False, force: bool = False) -> list[str]:
        """Append every finding to ``findings``; with ``fix``, return what was changed (``force``:
        also what the owning app is using, where the store can tell per conversation)."""
        raise NotImplementedError

    # token usage (has_usage) ---------------------------------------------------
    def usage_records(self, findings: list):
        """Every ``UsageRecord`` the store holds (``has_usage``), each response once (or with a ``key`` the
        caller counts once); what cannot be read is a finding.  Through samctl's cache where the store has one:
        a second report reads only the files that changed.  None: the default, no usage recorded."""
        return iter(())

    # event logs (has_event_logs) ----------------------------------------------
    event_types: tuple = ()

    def event_log_rows(self, cid: str, types: tuple = ()):
        """(path, rows, LogRead) of ``cid``'s event log: rows of seq, ts, type, summary, event."""
        raise NotImplementedError

    def event_log_path(self, cid: str) -> Path:
        raise NotImplementedError

    def event_logs(self) -> list[tuple[str, str]]:
        """(id, path) of every event log in the store, by name; paths as strings (a store holds tens of
        thousands, and compact makes a Path only of one it works on)."""
        return []

    def read_event_log(self, path: Path, cap: int):
        """A LogRead of the log at ``path``: its events, and where and why reading stopped (``stop``,
        ``reason``, ``size``, ``last_newline_offset``, ``tail_complete``)."""
        raise NotImplementedError

    def fresh_log(self, data: bytes) -> FreshLog:
        """The log ``data`` rewritten as the app would start it for the same conversation; SamctlError
        (left alone) when it is not clean or a fresh log would not fold to the same conversation."""
        raise NotImplementedError

    def session_is_live(self, cid: str) -> bool:
        """True if the app has conversation ``cid`` open right now (where the store can tell per
        conversation; an app that holds the whole store says so in ``busy_reason``)."""
        return False

    def live_note(self) -> str:
        """Why a live conversation is left alone, in words (``session_is_live``)."""
        return f"{self.app_name} has this session open"

    def live_sessions(self, ids) -> list[str]:
        """The ids among ``ids`` that ``session_is_live``."""
        return [cid for cid in ids if self.session_is_live(cid)]

    # maintenance (compact) ----------------------------------------------------
    def maintenance_folders(self) -> list[Path]:
        """The folders whose stale temps and old samctl copies compact sweeps."""
        return [self.conv_dir]

    def is_app_temp(self, name: str) -> bool:
        """True for a file name the app uses for its own temporary files (beyond samctl's pattern)."""
        return False

    def vacuum_candidates(self) -> list:
        """(path, lstat) of every database compact may VACUUM."""
        return []

    def vacuum(self, path: Path, dry_run: bool) -> tuple[int, int]:
        """VACUUM one database if it has free pages: (free pages, its size after, or the estimate of a
        dry run); SamctlError when it cannot be opened or vacuumed."""
        raise NotImplementedError

    # search -----------------------------------------------------------------
    def search_sources(self, findings: list, scope: set | None = None) -> dict:
        """Every ``sources.Source`` of the store (or of the conversations/scopes in ``scope``), by key:
        one ``lstat`` per file, never a read (this runs before every search).

        This default: one source per conversation ``list_metas`` lists, the file ``raw_path`` names (one
        file each, or one file for the whole store: then a change to it reads every conversation again)."""
        from samctl.stores.sources import Found  # (lazy: only search discovers sources)

        found = Found(findings)
        for meta in self.list_metas(findings):  # (what cannot be listed is a finding, as for ls)
            if scope is None or meta.id in scope:
                found.add(meta.id, self.name, [self.source_path(meta.id)], meta.id)
        return found.sources

    def source_path(self, cid: str) -> str:
        """The path of listed conversation ``cid``'s file, as ``raw_path`` names it, as a str."""
        return str(self.raw_path(cid))

    def source_rows(self, src, findings: list, infos: list):
        """The ``sources.Row`` of one source, in order; what cannot be read becomes ``findings``, and
        each conversation read adds its info ({"id", "title"}, plus "topic"/"topic_name" for a
        conversation whose memories live in a shared scope) to ``infos``.  Never raises for bad input.

        This default: the messages of the conversation ``src.conv`` as ``load_listed`` reads it."""
        from samctl.stores.sources import message_rows  # (lazy: only search reads rows)

        conv = self.load_listed(src.conv, findings)
        if conv is not None:
            infos.append({"id": src.conv, "title": conv.meta.title})
            yield from message_rows(conv, src.conv)

    # memories (has_memories) --------------------------------------------------
    def memory_databases(self) -> list[tuple[str, str | None]]:
        """(path, scope) of every memory database search reads; scope None: the store-wide one."""
        return []

    def memory_db(self, scope: str | None) -> str:
        """The path of the database that holds the memories of ``scope`` (None: the store-wide one)."""
        raise NotImplementedError

    def memory_rows(self, path: str, findings: list, scope: str | None):
        """The memory rows of one database (``id``, ``content``, ``embedding``, ``created_ts``, ...);
        bad rows and files are findings.  An absent database has none."""
        return iter(())

    def memories_by_prefix(self, path: str, scope: str | None, prefix: str, findings: list) -> list:
        """(id, embedding, content, conversation id) of the memories of one database whose id starts with
        ``prefix`` (uppercase), at most 3; a database that cannot be read is a finding."""
        return []

    def touch_memories(self, path: str, ids: list) -> int:
        """The app's retrieval side effect on these memories (e.g. access counts); the number touched."""
        raise NotImplementedError

    def memory_scope_of(self, cid: str) -> str | None:
        """The shared scope whose memories conversation ``cid`` uses, if any."""
        return None

    # recovery ---------------------------------------------------------------
    def recovery_source(self, use=None, from_file=None):
        """The extra source ``recover`` was given (``--use`` a conflict file, ``--from`` a package), checked
        against what this store can read: UsageError for the other kind."""
        if use is not None or from_file is not None:
            raise UsageError(
                f"{'--use' if use is not None else '--from'} is not a recovery source for {self.app_name} conversations"
            )
        return None

    def recovery_inputs(self, cid: str, source=None) -> list[Path]:
        """Every path ``plan_recovery`` may read (to notice a change between planning and the lock)."""
        raise NotImplementedError

    def plan_recovery(self, cid: str, source=None):
        """A RecoveryPlan for ``cid`` (read-only); NothingToRecover when no source holds anything of it."""
        raise NotImplementedError

    # the owning app --------------------------------------------------------
    def own_folders(self) -> list[Path]:
        """The folders the store consists of (not the project or base folder the user named)."""
        return [self.conv_dir]

    def attic_folder(self) -> Path | None:
        """Where samctl keeps this store's attic, when not beside the store (``samctl-attic`` in its base
        folder)."""
        return None

    def forget_listing(self) -> None:
        """Forget what the store listed so far (called under samctl's lock, before choosing again: another
        samctl may have moved conversations meanwhile).  A store that lists afresh every time has nothing to do."""

    def cleanup_warning(self) -> str | None:
        """What the app does by itself to files that look old, which a restored conversation (keeping its
        old mtimes) is exposed to; None if nothing."""
        return None

    def lock_folder(self) -> Path | None:
        """Where samctl keeps this store's lock, when not beside the store (``.samctl`` in its base folder);
        SamctlError when samctl may not write there (every writing command then refuses)."""
        return None

    def app_folder(self) -> str | None:
        """The app's own folder around the store, where samctl never writes an export; None if the store
        was given as a bare folder whose parent is the user's."""
        return None

    def busy_reason(self, ids=()) -> tuple[str, str] | None:
        """(why, hint) if the owning app is using what a write to ``ids`` would touch, else None."""
        return None

    # lifecycle ----------------------------------------------------------------
    def topic_refs(self, unreadable: list | None = None) -> dict | None:
        """Shared scope id -> the ids of the conversations that use it; None: the store has no shared scopes.
        ``unreadable``, if given, gets every conversation whose scope cannot be known (it cannot be read)."""
        return None

    def conversation_files(self, cid: str, refs=None, stats: dict | None = None) -> list[Path]:
        """Every file and folder that makes up ``cid``, as rm/archive move them (SamctlError for what must
        not move: a scope in use, a symlink inside).  ``stats`` gets each one's lstat."""
        raise UsageError(f"{self.describe()}: samctl does not move conversations of this store")

    def purge(self, cid: str, refs=None) -> list[str]:
        """Remove ``cid`` from the store with the app's own semantics; the names removed."""
        raise UsageError(f"{self.describe()}: samctl does not remove conversations of this store")

    def new_id(self, taken=None, like: str | None = None) -> str:
        """A fresh id as the app makes them (``restore --as-new``), not in ``taken``."""
        raise UsageError(f"{self.describe()}: samctl does not restore into this store")

    def retarget(self, folder: Path, names: list[str], old: str, new: str) -> dict:
        """Rewrite the id ``old`` as ``new`` inside the staged files ``names`` under ``folder``."""
        raise UsageError(f"{self.describe()}: samctl does not restore into this store")

    def empty_is_deletable(self, cid: str) -> bool:
        """For a conversation with no messages: whether the app's "delete empty" takes it."""
        return True

    @classmethod
    def member_belongs(cls, parts: list[str], cid: str) -> bool:
        """True if a (safe, relative) archive member name, split at "/", can only belong to ``cid``."""
        raise NotImplementedError

    def renamed_member(self, name: str, old: str, new: str) -> str:
        """An archive member name of conversation ``old`` as it is for the same file under id ``new``."""
        raise NotImplementedError

    @staticmethod
    def identity_files(cid: str) -> list[str]:
        """The names (relative to ``conv_dir``) by which the app knows conversation ``cid`` exists."""
        raise NotImplementedError

    def describe(self) -> str:
        return f"{self.name} store at {self.conv_dir}"
