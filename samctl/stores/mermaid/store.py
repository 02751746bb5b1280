"""The mermaid-cli store: ``<project>/.mermaid/conversations/``.

Listing is mermaid's own ``list_conversation_metas`` (mermaid.md §6): every ``*.meta``
that parses with ``message_count > 0``, then every ``*.json`` whose stem no
accepted meta named, newest ``updated_at`` first.  Loading is snapshot-first
with the event-log fold as the fallback (mermaid.md §6 "Recovery").  Nothing here
writes except ``check(fix=True)``, which only tightens modes and rebuilds
``.meta`` sidecars byte-compatibly.
"""

from __future__ import annotations

import os
import re
import stat
import tempfile
import time
from itertools import repeat
from pathlib import Path

import orjson

from samctl import lock
from samctl.errors import FileProblem, NotFound, UsageError
from samctl.fs import filemodes, reading, safepaths
from samctl.model import WARNING, Conversation, ConversationMeta, Finding, recency
from samctl.said import Suggestion, said
from samctl.stores import workers
from samctl.stores.base import Store
from samctl.stores.mermaid import decode, eventlog
from samctl.stores.mermaid.decode import MERMAID_ID_RE, Rejected, short_reason
from samctl.stores.mermaid.envelope import EVENT_TYPES
from samctl.stores.metacache import MetaCache
from samctl.stores.values import too_costly

_SLUG_RE = re.compile(r"[^A-Za-z0-9_-]")


def project_slug(project: str) -> str:
    """mermaid's scratch-dir slug of a path string (mermaid.md §1)."""
    return _SLUG_RE.sub("-", project)[:96] or "project"


class MermaidStore(Store):
    name = "mermaid"
    id_rule = "YYYYMMDD_HHMMSS_mmm (19 characters: 8 digits, _, 6 digits, _, 3 digits)"
    app_name = "mermaid"
    has_event_logs = True
    event_types = EVENT_TYPES
    purge_takes_anything = True  # mermaid's own delete removes whichever of the three files exist
    _prefix_of = None  # the conv_dir ``_files`` last built its prefix from

    # ids ---------------------------------------------------------------
    def valid_id(self, text: str) -> bool:
        return decode.valid_id(text)

    def prefix_ok(self, text: str) -> bool:
        return 0 < len(text) <= 19 and MERMAID_ID_RE.match(text + "20260101_000000_000"[len(text) :]) is not None

    def _names(self) -> list[str]:
        try:
            return os.listdir(self.conv_dir)
        except OSError as exc:
            raise NotFound(f"cannot list {self.conv_dir}: {exc.strerror}") from None

    def has_id(self, cid: str) -> bool:
        return self.valid_id(cid) and any(
            os.path.lexists(os.path.join(self.conv_dir, f"{cid}.{ext}")) for ext in ("json", "meta", "jsonl")
        )

    def all_ids(self) -> list[str]:
        """Every id with a snapshot, sidecar or log, sorted (the regex runs once per id, not per file)."""
        stems = {n.rpartition(".")[0] for n in self._names() if n.endswith((".json", ".meta", ".jsonl"))}
        match = MERMAID_ID_RE.match
        return sorted(s for s in stems if match(s))

    def path(self, cid: str, ext: str) -> Path:
        if not decode.valid_id(cid):
            raise FileProblem("bad-id", cid, "invalid conversation id")
        return safepaths.child(self.conv_dir, f"{cid}.{ext}")

    def raw_path(self, cid: str) -> Path:
        return self.path(cid, "json")

    # listing -------------------------------------------------------------
    def list_metas(self, findings: list) -> list:
        """mermaid's list_conversation_metas (mermaid.md §6), with samctl's listing cache.

        Each ``*.meta`` (pass 1) and each ``*.json`` without an accepted meta
        (pass 2) is read and parsed only when the cache has nothing fresh for
        it (one lstat decides).  The log's size is stat'ed every time; the
        size of the file saved together with the one listed is as of that save.

        When the folder's stamp equals the one saved with a complete cache, no
        file was created, removed or renamed since, and mermaid (like samctl)
        only ever replaces ``.json`` and ``.meta`` by rename: the listing saved
        with that stamp (``_Listing``) is used, stat'ing only the logs (git's
        untracked cache makes the same bet).  A tool that rewrites a sidecar in
        place is seen at the next change to the folder, or at once with
        ``--no-cache``.
        """
        conv = str(self.conv_dir)
        cache_file = MetaCache("mermaid", self.root_real, self.use_cache, self.caps)
        cache = cache_file.load()
        listing = _Listing.of(cache_file.extra)
        try:
            dir_fd = reading.open_dir_fd(conv)
        except OSError as exc:
            raise NotFound(f"cannot list {conv}: {exc.strerror}") from None
        try:
            folder = os.fstat(dir_fd)
            stamp = MetaCache.folder_stamp(folder)
            if cache and cache_file.stamp == stamp and listing is not None:
                findings.extend(listing.findings(conv))
                return self._in_project(listing.metas(conv, dir_fd))
        finally:
            os.close(dir_fd)
        names = self._names()
        name_set = set(names)
        fresh: dict = {}
        now_ns = time.time_ns()
        metas: list = []
        metas_named = [n for n in names if n.endswith(".meta")]
        self._list_pass(conv, metas_named, "meta", cache, listing, fresh, now_ns, name_set, metas, findings)
        seen = {m.id for m in metas}
        snapshots = [n for n in names if n.endswith(".json") and n[:-5] not in seen]
        self._list_pass(conv, snapshots, "json", cache, listing, fresh, now_ns, name_set, metas, findings)
        listed = len(metas_named) + len(snapshots)
        metas.sort(key=recency, reverse=True)
        # The stamp may be trusted next time only if every listed name is in the cache
        # (nothing racy, unreadable, vanished or not a regular file) and the folder is not racy.
        if listed == len(fresh) and MetaCache.cacheable(folder, now_ns):
            entries, columns = _Listing.build(conv, metas, fresh, name_set)
            cache_file.save(entries, stamp, columns)
        elif (
            cache_file.stamp is not None or fresh.keys() != cache.keys() or any(fresh[k] is not cache[k] for k in fresh)
        ):
            cache_file.save(fresh)
        return self._in_project(metas)

    def _in_project(self, metas: list) -> list:
        project = self.project_folder()
        for m in metas:
            m.project = project
        return metas

    def project_folder(self) -> str | None:
        """The project the store belongs to: the folder holding ``.mermaid/`` (mermaid keeps one store per
        project, so every conversation's project is this one), or None for a store given elsewhere."""
        app = self.app_folder()
        return os.path.dirname(app) if app else None

    def _list_pass(self, conv, names, kind, cache, listing, fresh, now_ns, name_set, metas, findings) -> None:
        """List ``names`` (sidecars, ``kind`` "meta", or snapshots, "json"), in order.

        Each is lstat'ed and looked up in the cache; those it has nothing fresh for are
        read and parsed (``_scan_one``), in worker processes when there are at least
        ``PARALLEL_SCAN`` of them (a first listing, or after ``--no-cache``).
        """
        probes, todo = [], []
        for n in names:
            p = conv + os.sep + n
            st = filemodes.lstat(p)
            if st is None:
                continue
            if not stat.S_ISREG(st.st_mode):
                why = (
                    "is a symlink (samctl does not follow symlinks)"
                    if stat.S_ISLNK(st.st_mode)
                    else f"is not a regular file ({filemodes.describe_mode(st.st_mode)})"
                )
                code = "symlink" if stat.S_ISLNK(st.st_mode) else "not-regular"
                probes.append((n, p, 0, False, Finding(code, p, why)))
                continue
            entry = MetaCache.fresh(cache.get(n), st, 4)
            if entry is not None and type(entry[2]) is int:  # its row is in the listing saved with it
                row = listing.row(entry[2]) if listing is not None else None
                entry = None if row is None else [entry[0], entry[1], row, entry[3]]
            if (
                entry is None
                or not (entry[2] is None or _row_ok(entry[2]))
                or not (entry[3] is None or type(entry[3]) is list and len(entry[3]) == 2)
            ):
                entry = None
                # (a worker is handed whether the other saved file is there, not the whole folder's names)
                todo.append((kind, p, st, n.rpartition(".")[0] + _OTHER[kind] in name_set))
            # (what the rest needs of the lstat, not the lstat: a listing holds one of these per file)
            probes.append((n, p, st.st_size, MetaCache.cacheable(st, now_ns), entry))
        scanned = workers.ordered_items(self, _scan_one, todo, PARALLEL_SCAN, SCAN_PART)
        for n, p, own_size, cacheable, entry in probes:
            if isinstance(entry, Finding):
                findings.append(entry)
                continue
            if entry is None:
                entry = next(scanned)
            # A permission problem can be fixed by chmod, which leaves the mtime alone: never cache it.
            if cacheable and (entry[3] is None or entry[3][0] != "unreadable"):
                fresh[n] = entry
            if entry[3] is not None:
                findings.append(Finding(entry[3][0], p, entry[3][1]))
            row = entry[2]
            if row is not None:
                # row[7]: the bytes of the conversation's other saved file (.json beside a .meta, or
                # the reverse), measured when this file was read: mermaid writes both in one save.
                # The log grows between saves, so it is stat'ed every time.
                log = conv + os.sep + n.rpartition(".")[0] + ".jsonl"
                size = own_size + row[7]
                if log[len(conv) + 1 :] in name_set:
                    try:
                        size += os.stat(log, follow_symlinks=False).st_size
                    except OSError:
                        pass
                m = ConversationMeta("mermaid", row[0], row[1], row[2], row[3], row[4], row[5], row[6], size, False, p)
                m.branch = row[8]
                metas.append(m)

    def _scan_meta(self, p: str, st, name_set) -> list:
        """[size, mtime_ns, listing row or None (skipped), [code, reason] or None] of one sidecar."""
        try:
            doc = orjson.loads(reading.read_capped(p, self.caps.other))
            updated_ts = decode.check_meta(doc)
        except FileProblem as exc:
            return [st.st_size, st.st_mtime_ns, None, [exc.code, exc.message]]
        except (orjson.JSONDecodeError, Rejected) as exc:
            return [
                st.st_size,
                st.st_mtime_ns,
                None,
                ["bad-meta", f"mermaid cannot read this sidecar: {short_reason(exc)}"],
            ]
        if not decode.valid_id(doc["id"]):
            return [st.st_size, st.st_mtime_ns, None, ["bad-id", f"sidecar names an invalid id {doc['id'][:40]!r}"]]
        if not doc.get("message_count"):
            return [st.st_size, st.st_mtime_ns, None, None]  # mermaid skips message-less metas silently
        m = decode.meta_from_meta(doc, p, 0, updated_ts)
        return [st.st_size, st.st_mtime_ns, _row(m, p, ".json", name_set), None]

    def _scan_snapshot(self, p: str, st, name_set) -> list:
        found: list = []
        doc = self.read_snapshot(p, found)
        problem = [found[0].code, found[0].reason] if found else None
        if doc is None or not doc["messages"]:
            return [st.st_size, st.st_mtime_ns, None, problem]
        return [st.st_size, st.st_mtime_ns, _row(decode.meta_from_snapshot(doc, p, 0), p, ".meta", name_set), problem]

    def read_snapshot(self, p, findings: list, stem_must_match: bool = True, strict: bool = False):
        """The parsed snapshot at ``p``, or None with a finding.  ``strict`` (check): also refuse a
        field repeated in one of mermaid's structs, as serde does (a second parse: not for listings)."""
        try:
            data = reading.read_capped(p, self.caps.snapshot)
        except FileProblem as exc:
            findings.append(Finding(exc.code, str(p), exc.message))
            return None
        if too_costly(data):
            findings.append(Finding("too-large", str(p), too_costly(data)))
            return None
        try:
            doc = orjson.loads(data)
            decode.check_snapshot(doc)
            if strict:
                from samctl.stores import dupkeys  # (lazy: not loaded by ls or --help)
                from samctl.stores.mermaid import structs  # (lazy: not loaded by ls or --help)

                found = structs.repeated_fields(data, "snapshot", doc)
                if found:
                    cid = os.path.basename(str(p))[:-5]
                    raise Rejected(
                        said(
                            f"{dupkeys.say(found)} (serde refuses a repeated field; `",
                            Suggestion("recover", cid),
                            "` rewrites it with the last value of each, as samctl reads it)",
                        )
                    )
        except orjson.JSONDecodeError as exc:
            findings.append(Finding("bad-json", str(p), f"not valid JSON: {short_reason(exc)}"))
            return None
        except Rejected as exc:
            findings.append(Finding("bad-snapshot", str(p), f"mermaid would not load this: {exc}"))
            return None
        if not decode.valid_id(doc["id"]):
            findings.append(Finding("bad-id", str(p), f"the file's id {doc['id'][:40]!r} breaks the id rule"))
            return None
        stem = os.path.basename(str(p))[:-5]
        if stem_must_match and doc["id"] != stem:
            findings.append(Finding("id-mismatch", str(p), f"the file's id {doc['id']} differs from its name"))
        return doc

    # loading ---------------------------------------------------------------
    def load(self, cid: str, findings: list) -> Conversation:
        snap, meta, log = self._files(cid)
        doc = None
        source = snap
        if filemodes.lstat(snap) is not None:
            doc = self.read_snapshot(snap, findings)
        if doc is None:
            doc = self._fold(log, findings)
            source = f"{log} (folded)"
        if doc is None:
            if filemodes.lstat(snap) is None and filemodes.lstat(log) is None and filemodes.lstat(meta) is None:
                raise NotFound(f"no conversation {cid} in {self.conv_dir}")
            return None
        return self._conversation(doc, source, (snap, meta, log))

    def message_rows(self, cid: str, findings: list, include_hidden: bool) -> list[dict] | None:
        """An export's rows of ``cid`` made straight from its snapshot (``decode.message_rows``); None, with
        nothing added to ``findings``, when the snapshot cannot be read as it is (``load`` then takes its
        other ways, the log's fold, and says why)."""
        try:
            snap = self._files(cid)[0]
        except FileProblem:  # (an invalid id: load says so)
            return None
        if filemodes.lstat(snap) is None:
            return None
        found: list = []
        doc = self.read_snapshot(snap, found)
        if doc is None:
            return None
        findings.extend(found)
        return decode.message_rows(doc["messages"], doc["id"], include_hidden)

    def _files(self, cid: str) -> tuple[str, str, str]:
        """``str(self.path(cid, ext))`` for json, meta and jsonl, the id checked once (a valid id with
        any of these extensions is one safe name, what ``safepaths.child`` checks) and one path built."""
        if not decode.valid_id(cid):
            raise FileProblem("bad-id", cid, "invalid conversation id")
        if self._prefix_of is not self.conv_dir:  # what str(conv_dir / name) puts before a name ("" for ".")
            self._prefix, self._prefix_of = str(self.conv_dir / "x")[:-1], self.conv_dir
        base = self._prefix + cid
        return base + ".json", base + ".meta", base + ".jsonl"

    def load_notes(self, conv) -> list:
        """The finding README promises when a transcript comes from the event log, not the snapshot (show,
        export, every reader of whole conversations).  Names come from the log path samctl built
        (``<id>.jsonl``), never from the fold, whose id may differ."""
        if not conv.source.endswith(" (folded)"):  # how ``load`` marks a transcript it folded from the log
            return []
        log = Path(conv.source.removesuffix(" (folded)"))
        return [
            Finding(
                "from-log",
                str(log),
                said(
                    f"no readable snapshot ({log.stem}.json); this transcript is the event log's fold (`",
                    Suggestion("recover", log.stem),
                    "` rebuilds the snapshot)",
                ),
                WARNING,
                log.stem,
            )
        ]

    def conversation_from_doc(self, doc: dict, source: str, cid: str | None = None) -> Conversation:
        """The conversation in ``doc``; its size is that of ``cid``'s own files (snapshot, sidecar,
        log), as ``ls`` reports it, whichever of them ``doc`` came from (None: ``doc``'s id)."""
        return self._conversation(doc, source, self._files(cid or doc["id"]))

    def _conversation(self, doc: dict, source: str, files: tuple) -> Conversation:
        """``conversation_from_doc`` with the session's ``_files`` at hand."""
        size = 0
        for p in files:
            st = filemodes.lstat(p)
            if st is not None and stat.S_ISREG(st.st_mode):
                size += st.st_size
        meta = decode.meta_from_snapshot(doc, source, size)
        meta.project = self.project_folder()
        message = decode.message
        messages = [message(m) for m in doc["messages"]]
        return Conversation(meta=meta, messages=messages, raw=doc, model=doc.get("model_name"), source=source)

    def _fold(self, log, findings: list):
        if filemodes.lstat(log) is None:
            return None

        try:
            read = eventlog.read_log_file(log, self.caps.log)
        except FileProblem as exc:
            findings.append(Finding(exc.code, str(log), exc.message))
            return None
        if read.stop and read.stop != "torn-tail" or not read.usable:
            findings.append(Finding(f"log-{read.stop or 'unusable'}", str(log), read.reason or "no usable events"))
        elif read.stop == "torn-tail":
            findings.append(Finding("log-torn-tail", str(log), read.reason, WARNING))
        doc = eventlog.fold(read.events) if read.usable else None
        if doc is not None:
            try:
                decode.check_snapshot(doc)
            except Rejected as exc:
                findings.append(Finding("log-unusable", str(log), f"the fold is not loadable: {exc}"))
                return None
        return doc

    def event_log_path(self, cid: str) -> Path:
        return self.path(cid, "jsonl")

    def event_logs(self) -> list[tuple[str, str]]:
        try:
            names = sorted(n for n in os.listdir(self.conv_dir) if n.endswith(".jsonl"))
        except OSError:
            return []
        base = os.path.join(self.conv_dir, "")
        return [(n[:-6], base + n) for n in names if self.valid_id(n[:-6])]

    def read_event_log(self, path: Path, cap: int):
        return eventlog.read_log_file(path, cap)

    def fresh_log(self, data: bytes):
        return eventlog.fresh_log(data)

    def event_log_rows(self, cid: str, types: tuple = ()):
        from samctl.stores.mermaid import logview  # (lazy: not loaded by ls or --help)

        return logview.log_rows(self, cid, types)

    # search ----------------------------------------------------------------
    def search_sources(self, findings: list, scope: set | None = None) -> dict:
        from samctl.stores.mermaid import search  # (lazy: not loaded by ls or --help)

        return search.sources(self, findings, scope)

    def source_rows(self, src, findings: list, infos: list):
        from samctl.stores.mermaid import search  # (lazy: not loaded by ls or --help)

        return search.rows(self, src, findings, infos)

    # recovery --------------------------------------------------------------
    def recovery_source(self, use=None, from_file=None):
        if from_file is not None:
            raise UsageError("--from reads SAM export packages; for mermaid use --use PATH with a .conflict file")
        return use

    def recovery_inputs(self, cid: str, source=None) -> list[Path]:
        from samctl.stores.mermaid import recover  # (lazy: not loaded by ls or --help)

        return recover.inputs(self, cid, source)

    def plan_recovery(self, cid: str, source=None):
        from samctl.stores.mermaid import recover  # (lazy: not loaded by ls or --help)

        return recover.plan_recovery(self, cid, source)

    # liveness --------------------------------------------------------------
    def scratch_project_dir(self) -> Path:
        """mermaid's scratch folder for this project: one subfolder per session (mermaid.md §1)."""
        return Path(tempfile.gettempdir()) / f"mermaid-{os.getuid()}" / project_slug(str(self.base.parent))

    def scratch_lock_path(self, cid: str) -> Path:
        return self.scratch_project_dir() / project_slug(cid) / ".lock"

    def live_sessions(self, ids) -> list[str]:
        """The ids among ``ids`` whose scratch lock a mermaid process holds.

        One listing of the project's scratch folder instead of an open per id:
        an id without a scratch folder there cannot be live.
        """
        ids = list(ids)
        try:
            present = set(os.listdir(self.scratch_project_dir()))
        except FileNotFoundError:
            return []
        except OSError:  # a folder we may enter but not list: ask each id
            present = None
        return [cid for cid in ids if (present is None or project_slug(cid) in present) and self.session_is_live(cid)]

    @classmethod
    def default_roots(cls) -> list[Path]:
        """The project in the current folder, as every command finds it without --root (one whose
        ``.mermaid`` samctl may not enter too: opening it then says "permission denied")."""
        try:
            here = Path.cwd()
            return [here] if stat.S_ISDIR(os.stat(here / ".mermaid" / "conversations").st_mode) else []
        except PermissionError:
            return [here]
        except OSError:  # none here, or the current folder was removed
            return []

    def own_folders(self) -> list[Path]:
        folders = [self.conv_dir]
        if self.conv_dir.parent.name == ".mermaid":
            folders.append(self.conv_dir.parent)
        return folders

    def app_folder(self) -> str | None:
        base = os.path.dirname(self.root_real)
        return base if os.path.basename(base) == ".mermaid" else None

    def busy_reason(self, ids=()) -> tuple[str, str] | None:
        live = self.live_sessions(ids)
        if not live:
            return None
        return (
            f"mermaid has {', '.join(live[:3])} open (its scratch lock is held)",
            "close that mermaid session first, or pass --force",
        )

    def session_is_live(self, cid: str) -> bool:
        """True if a mermaid process holds the session's scratch ``.lock`` (mermaid.md §1)."""
        return lock.flock_held(self.scratch_lock_path(cid))

    # lifecycle: rm, restore, archive (the rules live in stores/mermaid/lifecycle.py) --------
    def conversation_files(self, cid: str, refs=None, stats: dict | None = None) -> list[Path]:
        from samctl.stores.mermaid import lifecycle  # (lazy: not loaded by ls or --help)

        return lifecycle.conversation_files(self, cid, stats=stats)

    @classmethod
    def member_belongs(cls, parts: list[str], cid: str) -> bool:
        return len(parts) == 1 and parts[0] in cls.identity_files(cid)

    def renamed_member(self, name: str, old: str, new: str) -> str:
        return new + name[len(old) :]

    @staticmethod
    def identity_files(cid: str) -> list[str]:
        return [f"{cid}.{ext}" for ext in ("json", "meta", "jsonl")]

    def purge(self, cid: str, refs=None) -> list[str]:
        from samctl.stores.mermaid import lifecycle  # (lazy: not loaded by ls or --help)

        return lifecycle.purge(self, cid)

    def new_id(self, taken=None, like: str | None = None) -> str:
        from samctl.stores.mermaid import lifecycle  # (lazy: not loaded by ls or --help)

        return lifecycle.new_id(self, taken, like=like)

    def retarget(self, folder: Path, names: list[str], old: str, new: str) -> dict:
        from samctl.stores.mermaid import lifecycle  # (lazy: not loaded by ls or --help)

        return lifecycle.retarget(self, folder, names, old, new)

    # check -----------------------------------------------------------------
    def check(self, findings: list, fix: bool = False, force: bool = False) -> list[str]:
        from samctl.stores.mermaid import checks  # (lazy: not loaded by ls or --help)

        return checks.check_tree(self, findings, fix, force)


_ROW_WIDTH = 9
_OTHER = {"meta": ".json", "json": ".meta"}  # the other file a save writes beside each
PARALLEL_SCAN = 2000  # cache misses from which a listing reads them in worker processes
SCAN_PART = 500  # files per unit of work handed to a worker


def _scan_one(store, item) -> list:
    """The cache entry of one file to read: ``(kind, path, lstat, whether the other saved file is there)``."""
    kind, p, st, other = item
    name = p.rpartition(os.sep)[2].rpartition(".")[0] + _OTHER[kind]
    return (store._scan_meta if kind == "meta" else store._scan_snapshot)(p, st, (name,) if other else ())


def _row(m: ConversationMeta, p: str, other_ext: str, name_set) -> list:
    """What the listing cache keeps of one conversation: id, title, created, updated,
    created_ts, updated_ts, message_count, the size of its other saved file, and its git branch."""
    stem = p.rpartition(os.sep)[2].rpartition(".")[0]
    other = 0
    if stem + other_ext in name_set:
        try:
            other = os.stat(p.rpartition(os.sep)[0] + os.sep + stem + other_ext, follow_symlinks=False).st_size
        except OSError:
            pass
    return [m.id, m.title, m.created, m.updated, m.created_ts, m.updated_ts, m.message_count, other, m.branch]


_NUM = (int, float, type(None))
_NUMS = {int, float, type(None)}
_STRS = {str, type(None)}


class _Listing:
    """The listing as of the last complete scan, in columns, newest first, saved beside the
    cache entries (``MetaCache.extra``) with the folder's stamp.

    While the stamp holds it is the listing, less the logs' growth: ``metas`` adds the
    size of each log (stat'ed relative to the folder) and builds the rows in C loops.
    The entries then hold an index into the columns instead of a copy of their row.
    """

    COLUMNS = (
        "names",
        "ids",
        "titles",
        "created",
        "updated",
        "created_ts",
        "updated_ts",
        "counts",
        "other",
        "fixed",
        "logs",
        "branches",
    )

    def __init__(self, cols: dict, found: list):
        self.cols = cols
        self.found = found

    @classmethod
    def of(cls, extra):
        """The listing saved in ``extra``, or None if it is missing or malformed (then nothing is trusted)."""
        if type(extra) is not dict or type(extra.get("findings")) is not list:
            return None
        cols = {k: extra.get(k) for k in cls.COLUMNS}
        if any(type(c) is not list for c in cols.values()) or len({len(c) for c in cols.values()}) != 1:
            return None
        if not (
            set(map(type, cols["names"])) <= {str}
            and set(map(type, cols["ids"])) <= {str}
            and set(map(type, cols["titles"])) <= {str}
            and set(map(type, cols["created"])) <= _STRS
            and set(map(type, cols["updated"])) <= _STRS
            and set(map(type, cols["created_ts"])) <= _NUMS
            and set(map(type, cols["updated_ts"])) <= _NUMS
            and set(map(type, cols["counts"])) <= _NUMS
            and set(map(type, cols["other"])) <= {int}
            and set(map(type, cols["fixed"])) <= {int}
            and set(map(type, cols["logs"])) <= _STRS
            and set(map(type, cols["branches"])) <= _STRS
        ):
            return None
        if "/" in "".join(cols["names"]) + "".join(filter(None, cols["logs"])):
            return None  # only names inside the folder
        if not all(map(MERMAID_ID_RE.match, cols["ids"])):
            return None  # every id keeps the id rule, as a scan's do
        found = extra["findings"]
        if not all(type(f) is list and len(f) == 3 and set(map(type, f)) <= {str} for f in found):
            return None
        return cls(cols, found)

    def row(self, i: int):
        """Row ``i`` as the cache entries keep rows, or None if out of range."""
        c = self.cols
        if not 0 <= i < len(c["ids"]):
            return None
        return [
            c["ids"][i],
            c["titles"][i],
            c["created"][i],
            c["updated"][i],
            c["created_ts"][i],
            c["updated_ts"][i],
            c["counts"][i],
            c["other"][i],
            c["branches"][i],
        ]

    def findings(self, conv: str) -> list:
        return [Finding(code, conv + os.sep + name, reason) for code, name, reason in self.found]

    def metas(self, conv: str, dir_fd: int) -> list:
        c = self.cols
        sizes = list(c["fixed"])
        stat_ = os.stat
        for i, log in enumerate(c["logs"]):
            if log is not None:
                try:
                    sizes[i] += stat_(log, dir_fd=dir_fd, follow_symlinks=False).st_size
                except OSError:
                    pass  # gone since it was listed
        prefix = conv + os.sep
        return list(
            map(
                ConversationMeta,
                repeat("mermaid"),
                c["ids"],
                c["titles"],
                c["created"],
                c["updated"],
                c["created_ts"],
                c["updated_ts"],
                c["counts"],
                sizes,
                repeat(False),
                [prefix + n for n in c["names"]],
                repeat(None),  # active_ts
                repeat(None),  # project (set by the store)
                c["branches"],
            )
        )

    @classmethod
    def build(cls, conv: str, metas: list, fresh: dict, name_set) -> tuple[dict, dict]:
        """(entries with row indexes, columns) for ``metas`` (sorted) and the scan's ``fresh`` entries."""
        cut = len(conv) + 1
        names = [m.path[cut:] for m in metas]
        index = {n: i for i, n in enumerate(names)}
        entries = {n: e if e[2] is None else [e[0], e[1], index[n], e[3]] for n, e in fresh.items()}
        other = [fresh[n][2][7] for n in names]
        logs = [n[:-5] + ".jsonl" if n[:-5] + ".jsonl" in name_set else None for n in names]
        cols = {
            "names": names,
            "ids": [m.id for m in metas],
            "titles": [m.title for m in metas],
            "created": [m.created for m in metas],
            "updated": [m.updated for m in metas],
            "created_ts": [m.created_ts for m in metas],
            "updated_ts": [m.updated_ts for m in metas],
            "counts": [m.message_count for m in metas],
            "other": other,
            "fixed": [fresh[n][0] + o for n, o in zip(names, other)],
            "logs": logs,
            "branches": [m.branch for m in metas],
            "findings": [[e[3][0], n, e[3][1]] for n, e in fresh.items() if e[3] is not None],
        }
        return entries, cols


def _row_ok(row) -> bool:
    """A cached row has the types a scan gives it, which the listing sorts and adds by, and an id that
    keeps the id rule (a corrupt or hostile cache is only rescanned)."""
    return (
        type(row) is list
        and len(row) == _ROW_WIDTH
        and decode.valid_id(row[0])
        and type(row[1]) is str
        and type(row[2]) in _STRS
        and type(row[3]) in _STRS
        and type(row[4]) in _NUM
        and type(row[5]) in _NUM
        and type(row[6]) in _NUM
        and type(row[7]) is int
        and type(row[8]) in _STRS
    )
