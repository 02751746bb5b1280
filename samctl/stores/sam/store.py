"""The SAM store: ``~/Library/Application Support/SAM/conversations/<UUID>/``.

A conversation's id is its folder's name when a UUID (a file in an oddly named folder: the UUID it names,
``odd_folders``; the lifecycle commands refuse those rather than guess).  A disposable meta cache makes a
warm ``ls`` read one file.

Design notes: docs/stores.md, "stores/sam/store.py".
"""

from __future__ import annotations

import os
import re
import stat
import time
from pathlib import Path

import orjson

from samctl.errors import Denied, FileProblem, NotFound, SamctlError, UsageError
from samctl.fs import filemodes, reading, safepaths, userdirs
from samctl.model import WARNING, Conversation, ConversationMeta, Finding, listed_json, recency
from samctl.stores import workers
from samctl.stores.base import Store
from samctl.stores.metacache import RACY_SECONDS, MetaCache
from samctl.stores.sam import decodable, decode
from samctl.stores.sam.dbvalues import UUID_RE
from samctl.stores.values import too_costly

_PREFIX_TEMPLATE = "00000000-0000-0000-0000-000000000000"
# The fields of a cached ConversationMeta, in the model's field order: _scan saves them as a list in this
# order (no keys to parse), which ConversationMeta takes positionally (SAM records no project, branch or
# continued session).  A cache is what samctl wrote or nothing (``metacache.is_sealed``), so their types
# are those _scan gave them (tests/cli/test_cache_safety.py holds _scan to them).
_META_KEYS = (
    "store",
    "id",
    "title",
    "created",
    "updated",
    "created_ts",
    "updated_ts",
    "message_count",
    "size",
    "pinned",
    "path",
    "active_ts",
    "project",
    "branch",
    "continues",
    "model",
)
_TITLE = _META_KEYS.index("title")
_PATH = _META_KEYS.index("path")
_META_WIDTH = len(_META_KEYS)


class SamStore(Store):
    name = "sam"
    id_rule = "an uppercase UUID like 8B58CBC4-ACA7-4811-AE66-C01921690310"
    app_name = "SAM"
    has_memories = True
    keeps_pinned = True

    def valid_id(self, text: str) -> bool:
        return isinstance(text, str) and UUID_RE.match(text) is not None

    def prefix_ok(self, text: str) -> bool:
        return 0 < len(text) <= 36 and UUID_RE.match(text + _PREFIX_TEMPLATE[len(text) :]) is not None

    def normalize_prefix(self, text: str) -> str:
        return text.upper()

    def _folders(self) -> list[os.DirEntry]:
        try:
            return [e for e in os.scandir(self.conv_dir) if e.name != "backups" and e.is_dir(follow_symlinks=False)]
        except OSError as exc:
            raise NotFound(f"cannot list {self.conv_dir}: {exc.strerror}") from None

    def all_ids(self) -> list[str]:
        """Every id ``list_metas`` can list (and a few it does not: memory scopes), uppercase."""
        folders = self._folders()
        ids = {e.name.upper() for e in folders if UUID_RE.match(e.name)}
        ids.update(self.odd_folders(folders))
        ids.update(self.legacy_docs([]).keys())
        return sorted(ids)

    def has_id(self, cid: str) -> bool:
        st = filemodes.lstat(os.path.join(self.conv_dir, cid)) if self.valid_id(cid) else None
        return True if st is not None and stat.S_ISDIR(st.st_mode) else super().has_id(cid)

    def holds_conversation(self, cid: str) -> bool:
        """Its folder has a conversation.json, or the .tmp a save cut short left (what recover reads),
        or the conversation lives in an odd folder or the legacy file."""
        folder = self.folder(cid)
        return (
            any(filemodes.lstat(folder / n) is not None for n in ("conversation.json", "conversation.json.tmp"))
            or cid in self.odd_folders()
            or cid in self.legacy_docs([])
        )

    def odd_folders(self, folders: list | None = None) -> dict[str, str]:
        """Id -> folder name of each conversation.json in a folder not named by a UUID (never
        ``backups``), by the id its file gives, as ``list_metas`` lists it; the first folder by
        name wins a tie.  Reads only such files, which SAM itself never writes."""
        out: dict[str, str] = {}
        for e in sorted(self._folders() if folders is None else folders, key=lambda e: e.name):
            if UUID_RE.match(e.name):
                continue
            p = os.path.join(e.path, "conversation.json")
            st = filemodes.lstat(p)
            if st is None or not stat.S_ISREG(st.st_mode):
                continue
            doc, _ = self.parse_file(p)
            cid = doc.get("id") if isinstance(doc, dict) else None
            if isinstance(cid, str) and UUID_RE.match(cid):
                out.setdefault(cid.upper(), e.name)
        return out

    def _own_file(self, cid: str) -> str:
        """The conversation.json in the folder named by the uppercase id, as the listing names it (what
        ``_primary`` gives when that file exists), built as one string: a load of every listed
        conversation (export --all) spent a fifth of its time in the Path objects and lstats of ``_primary``."""
        if not self.valid_id(cid):
            raise FileProblem("bad-id", cid, "invalid conversation id")
        return os.path.join(self.conv_dir, "") + cid.upper() + _SLASH_FILE  # (an id is one safe name: a UUID)

    def _primary(self, cid: str) -> Path:
        """The conversation.json SAM loads for ``cid``: the one in the folder named by the id, else
        one in an oddly named folder that gives the id, else where the first would be."""
        p = self.folder(cid) / "conversation.json"
        if filemodes.lstat(p) is None:
            odd = self.odd_folders().get(cid.upper())
            if odd is not None:
                return self.conv_dir / odd / "conversation.json"  # a name scandir gave: one component
        return p

    def _refuse_odd(self, cid: str) -> None:
        """Raise SamctlError if ``cid`` lives only in an oddly named folder: samctl's lifecycle
        commands move a conversation's own folder, and this one has two candidates."""
        if filemodes.lstat(self.folder(cid) / "conversation.json") is not None:
            return
        odd = self.odd_folders().get(cid.upper())
        if odd is not None:
            cid = cid.upper()
            raise SamctlError(
                f"{cid} lives in the folder {odd!r}, which is not named by its id; samctl moves a "
                "conversation only together with its own folder",
                hint=f"with SAM not running, rename {odd!r} to {cid} (or, if that folder exists, move "
                f"the conversation.json into it), then try again",
            )

    def folder(self, cid: str) -> Path:
        """The folder named by ``cid`` (or its lowercase twin): the conversation's own, where SAM
        saves it and keeps its memories, whether or not it holds the conversation.json."""
        if not self.valid_id(cid):
            raise FileProblem("bad-id", cid, "invalid conversation id")
        p = safepaths.child(self.conv_dir, cid.upper())
        if filemodes.lstat(p) is None:
            # SAM accepts any folder name; find a lowercase twin rather than guess.
            for e in self._folders():
                if e.name.upper() == cid.upper():
                    return safepaths.child(self.conv_dir, e.name)
        return p

    def raw_path(self, cid: str) -> Path:
        p = self._primary(cid)
        if filemodes.lstat(p) is None and cid.upper() in self.legacy_docs([]):
            return self.conv_dir / "conversations.json"
        return p

    def raw_part(self, cid: str, path: Path) -> bytes | None:
        if path.name != "conversations.json":
            return None
        doc = self.legacy_docs([]).get(cid.upper())  # (raw_path chose the file because it holds cid)
        return None if doc is None else orjson.dumps(doc, option=orjson.OPT_INDENT_2) + b"\n"

    # the meta cache ------------------------------------------------------
    def _cache(self) -> MetaCache:
        return MetaCache("sam", self.root_real, self.use_cache, self.caps)

    def _load_cache(self) -> dict:
        return self._cache().load()

    @staticmethod
    def _cached(entry, st):
        """The cached row ``_scan`` made, or None if stale or of another width (``MetaCache.fresh``, written
        out: a warm ``ls`` asks once per conversation)."""
        if (
            type(entry) is list
            and len(entry) == CACHE_ENTRY_WIDTH
            and entry[0] == st.st_size
            and entry[1] == st.st_mtime_ns
            and (entry[2] is None or len(entry[2]) == _META_WIDTH)
        ):
            return entry
        return None

    # listing ---------------------------------------------------------------
    def cached_title(self, name: str) -> str | None:
        """The title samctl's listing cache remembers for the conversation in folder ``name`` (any age)."""
        entry = self._load_cache().get(name)
        if isinstance(entry, list) and len(entry) == CACHE_ENTRY_WIDTH and isinstance(entry[2], list):
            title = entry[2][_TITLE] if len(entry[2]) == _META_WIDTH else None
            if isinstance(title, str) and title:
                return title
        return None

    def list_metas(self, findings: list) -> list:
        """Every conversation SAM would show, newest first: under its folder's name when that is a
        UUID, else under the id its file gives (see ``odd_folders``), each id once: a copy in an oddly
        named folder whose id a folder named by it already has is a finding, not a row, since the id
        can reach only one of them."""
        cache_file = self._cache()
        cache = cache_file.load()
        fresh: dict = {}
        metas: list[ConversationMeta] = []
        odd: list[tuple[str, ConversationMeta]] = []  # (folder name, meta) of oddly named folders
        now_ns = time.time_ns()
        settled_ns = now_ns - int(RACY_SECONDS * 1e9)  # a time at or before this is out of the racy window
        # (folder name, path, named by a UUID?, cacheable?, cache entry, or None: read it, or a Finding)
        probes: list[tuple] = []
        todo = []
        if len(_DECODABLE) >= _DECODABLE_MAX:
            _DECODABLE.clear()
        decodable, cached, uuid_match, lstat = _DECODABLE, self._cached, UUID_RE.match, os.lstat
        folders = self._folders()
        base = os.path.join(self.conv_dir, "")
        try:
            dir_fd = reading.open_dir_fd(self.conv_dir)  # names stated relative to it: shorter lookups
        except OSError as exc:
            raise NotFound(f"cannot list {self.conv_dir}: {exc.strerror}") from None
        try:
            for e in folders:
                name = e.name
                p = base + name + _SLASH_FILE
                try:
                    st = lstat(name + _SLASH_FILE, dir_fd=dir_fd)
                except FileNotFoundError:
                    continue  # a memory scope or leftover folder: not a conversation
                except OSError as exc:  # the folder is closed to us: say so rather than skip it silently
                    problem = Finding("unreadable", p, f"cannot stat: {exc.strerror}", conversation=name.upper())
                    probes.append((name, p, False, False, problem))
                    continue
                own = uuid_match(name) is not None
                if not stat.S_ISREG(st.st_mode):
                    problem = Finding("not-regular", p, f"is {filemodes.describe_mode(st.st_mode)}, not a file")
                    probes.append((name, p, own, False, problem))
                    continue
                entry = cached(cache.get(name), st)
                if entry is not None and entry[5] != st.st_ctime_ns and st.st_ctime_ns <= settled_ns:
                    # a settled ctime the row lacks (a chmod, as check --fix makes): read once more, or no
                    # load could ever skip its walk (_still_decodable) nor topic_refs its parse
                    entry = None
                if entry is None:
                    todo.append((p, st, name))
                probes.append((name, p, own, st.st_mtime_ns <= settled_ns, entry))  # (MetaCache.cacheable)
        finally:
            os.close(dir_fd)
        # what the cache has nothing for (every file, the first time): in worker processes when there is much
        scanned = workers.ordered_items(self, _scan_one, todo, PARALLEL_SCAN, SCAN_PART)
        for name, p, own, cacheable, entry in probes:
            if isinstance(entry, Finding):
                findings.append(entry)
                continue
            if entry is None:
                entry = next(scanned)
            if cacheable:
                fresh[name] = entry
            meta_d, problem = entry[2], entry[3]
            if problem:
                findings.append(Finding(problem[0], p, problem[1], conversation=name.upper()))
            elif entry[5] is not None and meta_d is not None:
                decodable[p] = entry  # (see _DECODABLE)
            if meta_d is not None:
                m = ConversationMeta(*meta_d)
                m.path = p
                if own:
                    if m.id != name:
                        m.id = name.upper()
                    if m.id == meta_d[1] and p == meta_d[_PATH]:  # (the fields its ls row was made from)
                        m.json_row = entry[6]
                    metas.append(m)
                elif uuid_match(m.id):  # the file's id; one naming no valid id has a finding (SAM skips it)
                    odd.append((name, m))
        if todo or len(fresh) != len(cache):
            cache_file.save(fresh)
        # ids whose own folder holds a conversation.json (``_primary`` loads that one): only odd ones need them
        taken = {name.upper() for name, _, own, _, _ in probes if own} if odd else set()
        for _, m in sorted(odd, key=lambda x: x[0]):  # the order odd_folders breaks ties in
            if m.id in taken:
                findings.append(
                    Finding(
                        "duplicate-id",
                        m.path,
                        f"the file's id {m.id} is taken by another folder's "
                        "conversation.json, which samctl shows under it; SAM loads both, and saves "
                        "them to one folder",
                        WARNING,
                        m.id,
                    )
                )
                continue
            taken.add(m.id)
            metas.append(m)
        legacy = self.conv_dir / "conversations.json"
        docs = self.legacy_docs(findings)
        seen = {m.id for m in metas} if docs else set()
        for cid, doc in docs.items():
            if cid not in seen:
                metas.append(decode.meta(doc, str(legacy), None, cid))
        metas.sort(key=recency, reverse=True)
        return metas

    def _scan(self, p: str, st, folder: str) -> list:
        """[size, mtime_ns, meta fields or None, [code, reason] or None, shared topic or None, ctime_ns or
        None, the meta's ``listed_json`` or None] for one file (the ctime only once it is out of the racy window: ``topic_refs`` trusts
        the topic only while the ctime is unchanged too, which no copy that puts an mtime back keeps)."""
        doc, problem = self.parse_file(p)
        meta_d = topic = row = None
        if doc is not None:
            m = decode.meta(doc, p, st.st_size, folder.upper(), st.st_mtime)
            meta_d = [getattr(m, k) for k in _META_KEYS]  # (the fields SAM has; the others stay None)
            row = listed_json(ConversationMeta(*meta_d))  # (what a listing's meta of this row writes)
            if problem is None:
                problem = _first_rejection(doc)
            topic = decode.shared_topic_id(doc)
        ctime = st.st_ctime_ns if time.time_ns() - st.st_ctime_ns >= RACY_SECONDS * 1e9 else None
        return [st.st_size, st.st_mtime_ns, meta_d, problem, topic, ctime, row]

    def parse_file(self, p) -> tuple[dict | None, list | None]:
        return self.read_file(p)[1:]

    def read_file(self, p) -> tuple[bytes | None, dict | None, list | None]:
        """(the bytes read or None, the parsed conversation or None, [code, reason] or None)."""
        try:
            data = reading.read_capped(p, self.caps.snapshot)
        except FileProblem as exc:
            return None, None, [exc.code, exc.message]
        if too_costly(data):
            return data, None, ["too-large", too_costly(data)]
        try:
            doc = orjson.loads(data)
        except orjson.JSONDecodeError as exc:
            if str(exc).startswith("number is infinity"):  # valid JSON, but no Int or Double holds it
                where = str(exc).partition(": ")[2]
                why = f"a number beyond the range of a Double ({where}): SAM skips the whole conversation"
                return data, None, ["sam-reject", why]
            return data, None, ["bad-json", f"not valid JSON (SAM skips the whole conversation): {_short(exc)}"]
        if not isinstance(doc, dict):
            return data, None, ["sam-reject", f"top level is {type(doc).__name__}, not an object (SAM skips it)"]
        return data, doc, None

    def legacy_docs(self, findings: list) -> dict:
        """Conversations of the legacy single-file store, by uppercase id."""
        p = self.conv_dir / "conversations.json"
        if filemodes.lstat(p) is None:
            return {}
        try:
            arr = orjson.loads(reading.read_capped(p, self.caps.snapshot))
        except FileProblem as exc:
            findings.append(Finding(exc.code, str(p), exc.message))
            return {}
        except orjson.JSONDecodeError as exc:
            findings.append(Finding("bad-json", str(p), f"legacy store is not valid JSON: {_short(exc)}"))
            return {}
        if not isinstance(arr, list):
            findings.append(Finding("sam-reject", str(p), "legacy store is not a JSON array"))
            return {}
        out = {}
        for d in arr:
            if isinstance(d, dict) and isinstance(d.get("id"), str) and UUID_RE.match(d["id"]):
                out.setdefault(d["id"].upper(), d)
        return out

    # loading ---------------------------------------------------------------
    def message_rows(self, cid: str, findings: list, include_hidden: bool) -> list[dict] | None:
        """An export's rows of ``cid`` made straight from its conversation.json (``decode.message_rows``),
        when it is in the folder named by the id and parses; None, with nothing added to ``findings``,
        otherwise (``load`` then takes its other ways and says why)."""
        try:
            p = self._own_file(cid)
        except FileProblem:  # (an invalid id: load says so)
            return None
        if filemodes.lstat(p) is None:
            return None
        doc, problem = self.parse_file(p)
        if problem:
            return None
        self._note_rejection(p, doc, cid, findings)
        msgs = doc.get("messages")
        return decode.message_rows(msgs if isinstance(msgs, list) else [], cid.upper(), include_hidden)

    def _note_rejection(self, p, doc: dict, cid: str, findings: list) -> list | None:
        """The listing's row for ``p`` if unchanged since (``_still_decodable``); else, if SAM would skip
        the file, a finding saying why (samctl still reads it)."""
        listed = _still_decodable(p)
        rejection = None if listed is not None else _first_rejection(doc)
        if rejection:
            findings.append(Finding(rejection[0], str(p), rejection[1], WARNING, cid.upper()))
        return listed

    def load(self, cid: str, findings: list):
        p: str | Path = self._own_file(cid)
        if filemodes.lstat(p) is None:  # not in the folder named by the id: _primary's other places
            p = self._primary(cid)
            try:
                os.lstat(p)
            except PermissionError:  # its folder is closed to samctl: say so, not "no conversation"
                raise Denied(safepaths.shown(userdirs.first_closed(p.parent))) from None
            except OSError:
                legacy = self.legacy_docs(findings).get(cid.upper())
                if legacy is not None:
                    return self.conversation_from_doc(legacy, str(self.conv_dir / "conversations.json"), cid.upper())
                raise NotFound(f"no conversation {cid} in {self.conv_dir}") from None
        doc, problem = self.parse_file(p)
        if problem:
            findings.append(Finding(problem[0], str(p), problem[1], conversation=cid.upper()))
            # SAM skips a file it cannot decode and then loads the legacy copy of the id (sam.md §5.3), as
            # ls lists it.  (The search index reads it as this folder's: SAM never writes the legacy file.)
            legacy = self.legacy_docs(findings).get(cid.upper())
            if legacy is not None:
                return self.conversation_from_doc(legacy, str(self.conv_dir / "conversations.json"), cid.upper())
            return None
        listed = self._note_rejection(p, doc, cid, findings)
        return self.conversation_from_doc(doc, str(p), cid.upper(), listed)

    def conversation_from_doc(self, doc: dict, source: str, cid: str, listed: list | None = None) -> Conversation:
        """``listed``: the listing's row for ``source`` while the file is unchanged (``_still_decodable``),
        whose meta is what ``decode.meta`` would make of ``doc`` (it was made from these bytes)."""
        raw_msgs = doc.get("messages") if isinstance(doc.get("messages"), list) else []
        messages = [m for m in (decode.message(x) for x in raw_msgs) if m is not None]
        if listed is not None:
            meta = ConversationMeta(*listed[2])
            meta.path = source
        else:
            st = filemodes.lstat(source)
            shown = sum(not m.hidden for m in messages)  # (``decode.shown_count``: the objects, not hidden)
            meta = decode.meta(doc, source, st.st_size if st else None, cid, st.st_mtime if st else None, shown)
        meta.id = cid
        return Conversation(meta=meta, messages=messages, raw=doc, model=decode.model_name(doc), source=source)

    # search ----------------------------------------------------------------
    def search_sources(self, findings: list, scope: set | None = None) -> dict:
        from samctl.stores.sam import search  # (lazy: not loaded by ls or --help)

        return search.sources(self, findings, scope)

    def source_rows(self, src, findings: list, infos: list):
        from samctl.stores.sam import search  # (lazy: not loaded by ls or --help)

        return search.rows(self, src, findings, infos)

    # memories ---------------------------------------------------------------
    def memory_databases(self) -> list[tuple[str, str | None]]:
        """Every ``CONV/*/memory.db`` (listed or not) and the legacy ``BASE/memory.db``."""
        dbs = []
        try:
            entries = sorted(os.scandir(self.conv_dir), key=lambda e: e.name)
        except OSError:
            entries = []
        for e in entries:
            if e.name != "backups" and e.is_dir(follow_symlinks=False):
                dbs.append((os.path.join(e.path, "memory.db"), e.name.upper()))
        dbs.append((self.memory_db(None), None))
        return dbs

    def memory_db(self, scope: str | None) -> str:
        if scope is None:
            return os.path.join(str(self.base), "memory.db")
        return os.path.join(str(self.folder(scope)), "memory.db")

    def memory_rows(self, path: str, findings: list, scope: str | None):
        from samctl.stores.sam import memorydb  # (lazy: not loaded by ls or --help)

        return memorydb.iter_memories(path, findings, scope_id=scope, missing_ok=True)

    def memories_by_prefix(self, path: str, scope: str | None, prefix: str, findings: list) -> list:
        from samctl.stores.sam import search  # (lazy: not loaded by ls or --help)

        return search.memories_by_prefix(path, scope, prefix, findings)

    def touch_memories(self, path: str, ids: list) -> int:
        from samctl.stores.sam import memorydb  # (lazy: not loaded by ls or --help)

        return memorydb.touch_memories(path, ids)

    def memory_scope_of(self, cid: str) -> str | None:
        """The shared topic of conversation ``cid`` (None for its own folder, or one that cannot be read):
        its conversation.json parsed, nothing decoded (a conversation of 150,000 messages took seconds to
        load whole), else as ``load`` finds it (the legacy file, an oddly named folder)."""
        try:
            doc = orjson.loads(reading.read_capped(self._primary(cid), self.caps.snapshot))
        except Exception:  # noqa: BLE001 - (missing, unreadable, too large, not JSON: the loader below tries)
            doc = None
        if isinstance(doc, dict):
            return decode.shared_topic_id(doc)
        try:
            conv = self.load(cid, [])
        except Exception:  # noqa: BLE001 - a scope folder without conversation.json, an unreadable file
            return None
        if conv is None or not isinstance(conv.raw, dict):
            return None
        return decode.shared_topic_id(conv.raw)

    # maintenance (compact) ----------------------------------------------------
    def maintenance_folders(self) -> list[Path]:
        return [self.conv_dir] + [Path(e.path) for e in self._folders() if not e.is_symlink()]

    def is_app_temp(self, name: str) -> bool:
        # <file>.tmp, ltm.json.tmp.<pid> (sam.md §5.2, §6); conversation.json.tmp is a recovery source (sam.md §5.7)
        return name != "conversation.json.tmp" and _APP_TEMP_RE.fullmatch(name) is not None

    def vacuum_candidates(self) -> list:
        out = []
        for e in self._folders():
            for name in ("memory.db", "context_archive.db"):
                p = os.path.join(e.path, name)
                st = filemodes.lstat(p)
                if st is not None and stat.S_ISREG(st.st_mode):
                    out.append((Path(p), st))  # (a Path only for what exists: most have no archive)
        return out

    def vacuum(self, path: Path, dry_run: bool) -> tuple[int, int]:
        from samctl.stores.sam import maintenance  # (lazy: not loaded by ls or --help)

        return maintenance.vacuum(path, dry_run)

    # recovery ---------------------------------------------------------------
    def recovery_source(self, use=None, from_file=None):
        if use is not None:
            raise UsageError("--use adopts a mermaid .conflict file; for SAM give an export package with --from")
        return from_file

    def recovery_inputs(self, cid: str, source=None) -> list[Path]:
        from samctl.stores.sam import recover  # (lazy: not loaded by ls or --help)

        return recover.inputs(self, cid, source)

    def plan_recovery(self, cid: str, source=None):
        from samctl.stores.sam import recover  # (lazy: not loaded by ls or --help)

        return recover.plan_recovery(self, cid, source)

    # liveness ---------------------------------------------------------------
    def app_is_running(self) -> bool:
        from samctl.stores.sam.liveness import sam_is_running  # (lazy: not loaded by ls or --help)

        return sam_is_running()

    def app_folder(self) -> str | None:
        """SAM's base folder: named SAM, or holding SAM's memory.db, shared_memory.db or topics (sam.md §2)."""
        base = os.path.dirname(self.root_real)
        if os.path.basename(self.root_real) == "conversations" and (
            os.path.basename(base) == "SAM"
            or any(os.path.lexists(os.path.join(base, n)) for n in ("memory.db", "shared_memory.db", "topics"))
        ):
            return base
        return None

    @classmethod
    def default_roots(cls) -> list[Path]:
        from samctl.stores import SAM_DEFAULT_BASE  # (lazy: the registry imports this module by name)

        return [SAM_DEFAULT_BASE.expanduser()]

    def busy_reason(self, ids=()) -> tuple[str, str] | None:
        if not self.app_is_running():
            return None
        return (
            "SAM is running: it holds every conversation in memory and would overwrite changes",
            "quit SAM first, or pass --force if you are sure it is not using this store",
        )

    # lifecycle: rm, restore, archive (the rules live in stores/sam/lifecycle.py) --------------
    def empty_is_deletable(self, cid: str) -> bool:
        """SAM's "delete empty" keeps a conversation that uses shared data (a shared topic)."""
        doc, _ = self.parse_file(self.folder(cid) / "conversation.json")
        return doc is not None and decode.shared_topic_id(doc) is None

    @classmethod
    def member_belongs(cls, parts: list[str], cid: str) -> bool:
        return parts[0] == cid  # byte for byte: SAM would not load a second, differently cased folder

    def renamed_member(self, name: str, old: str, new: str) -> str:
        return new + name[len(name.split("/", 1)[0]) :]

    @staticmethod
    def identity_files(cid: str) -> list[str]:
        return [f"{cid}/conversation.json"]

    def conversation_files(self, cid: str, refs=None, stats: dict | None = None) -> list[Path]:
        from samctl.stores.sam import lifecycle  # (lazy: not loaded by ls or --help)

        self._refuse_odd(cid)
        folder = self.folder(cid)
        if folder.name != cid.upper():  # (its lowercase twin) an attic entry's members are named by its id exactly
            raise SamctlError(
                f"{cid.upper()} lives in the folder {folder.name!r}, which is not named exactly by its "
                "id; samctl moves a conversation only together with its own folder",
                hint=f"with SAM not running, rename {folder.name!r} to {cid.upper()}, then try again",
            )
        return lifecycle.conversation_files(self, cid, refs, stats=stats)

    def topic_refs(self, unreadable: list | None = None) -> dict:
        """Shared-topic scope id -> the ids of the conversations whose memories live there (those
        still in the legacy ``conversations.json`` too: SAM migrates them).

        ``unreadable``, if given, gets the id of every conversation whose scope cannot be known (its
        conversation.json, or its folder, cannot be read or parsed): while there is one, no scope can
        be called unused.

        Read through the listing cache: a conversation.json whose size, mtime and ctime are those
        ``ls`` cached it at is not parsed again (an ``rm`` of one id in a store of 100,000 is
        one lstat per conversation, not one parse).  The ctime, which nothing but a change of the
        file sets, guards this safety decision against a rewrite that kept the size and put the
        mtime back (``cp -p``, ``rsync -t``, a restored backup)."""
        cache = self._cache().load()
        refs: dict[str, set[str]] = {}
        for e in self._folders():
            p = e.path + _SLASH_FILE  # (os.path.join, without its checks: e.path never ends in a separator)
            try:
                st = os.lstat(p)
            except FileNotFoundError:
                continue  # a scope, or a leftover
            except OSError:  # a folder closed to us: it may hold a conversation using any scope
                if unreadable is not None:
                    unreadable.append(e.name.upper())
                continue
            entry = self._cached(cache.get(e.name), st)
            if entry is not None and entry[5] == st.st_ctime_ns:
                topic, known = entry[4], entry[2] is not None
            else:
                doc, _ = self.parse_file(p)
                topic, known = (decode.shared_topic_id(doc) if doc is not None else None), doc is not None
            if topic:
                refs.setdefault(topic, set()).add(e.name.upper())
            elif not known and unreadable is not None:
                unreadable.append(e.name.upper())
        if filemodes.lstat(self.conv_dir / "conversations.json") is not None:
            legacy: list = []
            for cid, doc in self.legacy_docs(legacy).items():
                topic = decode.shared_topic_id(doc)
                if topic:
                    refs.setdefault(topic, set()).add(cid)
            if legacy and unreadable is not None:  # a legacy file that cannot be read may name any scope
                unreadable.append("conversations.json")
        return refs

    def shared_topic(self, data: bytes) -> str | None:
        """The shared-topic scope a conversation.json (its bytes) keeps its memories in; None for
        its own folder, or bytes that are not such a file."""
        from samctl.stores.sam import lifecycle  # (lazy: not loaded by ls or --help)

        return lifecycle.shared_topic(data)

    def purge(self, cid: str, refs=None) -> list[str]:
        from samctl.stores.sam import lifecycle  # (lazy: not loaded by ls or --help)

        self._refuse_odd(cid)
        return lifecycle.purge(self, cid, refs)

    def new_id(self, taken=None, like: str | None = None) -> str:
        from samctl.stores.sam import lifecycle  # (lazy: not loaded by ls or --help)

        return lifecycle.new_id(self, taken)

    def retarget(self, folder: Path, names: list[str], old: str, new: str) -> dict:
        from samctl.stores.sam import lifecycle  # (lazy: not loaded by ls or --help)

        return lifecycle.retarget(self, folder, names, old, new)

    def check(self, findings: list, fix: bool = False, force: bool = False) -> list[str]:
        from samctl.stores.sam import checks  # (lazy: not loaded by ls or --help)

        return checks.check_tree(self, findings, fix)


_APP_TEMP_RE = re.compile(r"[^.].*\.tmp(\.[0-9]+)?")
_SLASH_FILE = os.sep + "conversation.json"
CACHE_ENTRY_WIDTH = 7  # the fields of a listing cache entry, as ``SamStore._scan`` makes it
PARALLEL_SCAN = 2000  # files to read from which a listing reads them in worker processes
SCAN_PART = 250  # files per unit of work handed to a worker


def _scan_one(store, item) -> list:
    """``_scan`` of one ``(path, lstat, folder name)``."""
    return store._scan(*item)


# _DECODABLE: path of a conversation.json -> the listing's row for it (``_scan``'s: size, mtime_ns, ...,
# ctime_ns) when this process's listing knew SAM decodes it (the row, cached or just made, has no
# problem, and a ctime).  A load of that file (export --all loads every listed one) skips the
# decodability walk, the largest part of a load, only while size, mtime and ctime still hold after its
# read: a write, or a copy that puts the mtime back, changes the ctime, which nothing sets back; a row
# keeps a ctime only once it is out of the racy window.  Filled before worker processes fork, so they
# see it too; bounded (dropped when full, at the start of a listing).
_DECODABLE: dict = {}
_DECODABLE_MAX = 1 << 18


def _still_decodable(p) -> list | None:
    """The listing's row for ``p`` (just read) if a listing of this process found SAM decodes it and the
    file is as it was then, else None."""
    row = _DECODABLE.get(os.fspath(p))
    if row is None:
        return None
    st = filemodes.lstat(p)
    same = st is not None and (st.st_size, st.st_mtime_ns, st.st_ctime_ns) == (row[0], row[1], row[5])
    return row if same else None


def _first_rejection(doc: dict) -> list | None:
    """[code, reason] of the first rule that makes SAM skip the file, or None (``doc`` as
    ``_parse`` decodes it: by orjson)."""
    prob = decodable.first_error(doc, strict_json=True)
    if prob is not None:
        return ["sam-reject", f"SAM would skip this conversation: {prob.where}: {prob.reason}"]
    return None


def _short(exc: Exception) -> str:
    return str(exc).splitlines()[0][:160] if str(exc) else type(exc).__name__
