"""fsck of a SAM conversations folder (sam.md §2, §4.5.8, §14 "verify").

Errors are exactly what makes SAM skip a conversation (its rejection rules);
everything else SAM tolerates is a warning.  Folders without a
conversation.json are classified (sam.md §2): a shared-topic memory scope (info:
normal), a stray scope (memory.db only, referenced by nobody), or a leftover;
while some conversation cannot be read, an unreferenced scope is ``scope-unknown``
(it may be that conversation's).  A ``sharedTopicId`` whose scope folder is not
there is ``scope-missing`` (a warning when the attic holds it).
Without ``fix`` nothing is written; with ``fix`` only modes are tightened.
"""

from __future__ import annotations

import os
import stat
import time

import orjson

from samctl.errors import FileProblem
from samctl.fs import filemodes, reading, writing
from samctl.model import ERROR, WARNING, Finding
from samctl.said import Suggestion, said
from samctl.stores import treecheck, workers
from samctl.stores.sam import decodable, decode, schema
from samctl.stores.sam.dbvalues import UUID_RE

INFO = "info"
UNKNOWN = "?"  # _check_folder's topic when the conversation cannot be read: it may use any scope
DATABASES = ("memory.db", "context_archive.db")
KNOWN_FILES = {
    "conversation.json",
    "memory.db",
    "context_archive.db",
    "ltm.json",
    "kv_store.json",
    "tasks.json",
    "memory.db-journal",
    "memory.db-wal",
    "memory.db-shm",
    "context_archive.db-journal",
    "context_archive.db-wal",
    "context_archive.db-shm",
}


def check_tree(store, findings: list, fix: bool) -> list[str]:
    fixes: list[str] = []
    root = store.conv_dir
    treecheck.root(store, findings, fixes, fix)
    try:
        entries = list(os.scandir(root))
    except OSError as exc:
        findings.append(Finding("unreadable", str(root), f"cannot list the folder: {exc.strerror}"))
        return fixes
    topic_ids: dict[str, list] = {}  # scope -> the conversations using it
    unknown: list[str] = []  # conversations whose scope cannot be known
    scopeless: list[os.DirEntry] = []
    ordered = sorted(entries, key=lambda e: e.name)
    checked = None
    if not fix:  # only read: the folders in worker processes when there are many, the rest below
        folders = []
        for e in ordered:
            st = _lstat(e)
            if isinstance(st, os.stat_result) and stat.S_ISDIR(st.st_mode) and e.name not in ("backups", ".samctl"):
                folders.append((e.name, e.path, st))
        checked = workers.ordered_items(store, _check_read_only, folders, PARALLEL_MIN_PARTS * CHECK_CHUNK, CHECK_CHUNK)
    for e in ordered:
        st = _lstat(e)  # (with --fix: when the entry is reached, after the fixes before it, as a person would)
        if isinstance(st, OSError):
            findings.append(Finding("unreadable", e.path, f"cannot stat: {st.strerror}"))
            continue
        if stat.S_ISLNK(st.st_mode):
            treecheck.symlink(store.root_real, e.path, findings)
            continue
        if e.name in ("backups", ".samctl"):
            treecheck.mode(e.path, st, findings, fixes, fix)
            continue
        if not stat.S_ISDIR(st.st_mode):
            if not stat.S_ISREG(st.st_mode):
                findings.append(Finding("not-regular", e.path, f"is {filemodes.describe_mode(st.st_mode)}"))
            else:
                treecheck.mode(e.path, st, findings, fixes, fix)
                if e.name == "conversations.json":
                    findings.append(
                        Finding(
                            "legacy-store",
                            e.path,
                            "legacy single-file store: SAM migrates it on its next start and keeps a copy in backups/",
                            INFO,
                        )
                    )
                    store.legacy_docs(findings)  # over the cap, not JSON, not an array: each a finding
                    _check_legacy(store, e.path, findings)
                elif e.name == "active-conversation.json":
                    _check_active(store, e.path, findings)
            continue
        found, fixed, topic, has_conversation = _check_folder(store, e.name, e.path, st, fix) if fix else next(checked)
        findings += found
        fixes += fixed
        if topic == UNKNOWN:
            unknown.append(e.name.upper())
        elif topic:
            topic_ids.setdefault(topic, []).append(e.name.upper())
        if not has_conversation:
            scopeless.append(e)
    if filemodes.lstat(root / "conversations.json") is not None:  # SAM migrates these: their scopes are in use
        legacy_problems: list = []
        for cid, doc in store.legacy_docs(legacy_problems).items():
            if topic := decode.shared_topic_id(doc):
                topic_ids.setdefault(topic, []).append(cid)
        if legacy_problems:
            unknown.append("conversations.json")
    for e in scopeless:
        _classify_scope(e, topic_ids, unknown, findings)
    _missing_scopes(store, {e.name.upper() for e in scopeless}, topic_ids, findings)
    return fixes


def _missing_scopes(store, present: set, topic_ids: dict, findings: list) -> None:
    """``scope-missing`` (info) for each scope a conversation names that has no folder (SAM creates it
    empty on its next memory store); ``core.check`` says whether the attic holds it."""
    missing = sorted(
        t for t in topic_ids if t not in present and UUID_RE.match(t) and filemodes.lstat(store.folder(t)) is None
    )
    for t in missing:
        users = ", ".join(sorted(topic_ids[t])[:3])
        findings.append(
            Finding(
                "scope-missing",
                str(store.folder(t)),
                f"shared-topic memory scope {t} of {users} is not in the store",
                INFO,
                topic_ids[t][0],
            )
        )


CHECK_CHUNK = 32  # conversation folders per unit of work handed to a worker process
PARALLEL_MIN_PARTS = 8  # fewer folders than 8 units of work: checked here, no worker processes


def _lstat(e: os.DirEntry):
    """The entry's lstat, or the OSError (os.DirEntry keeps the first answer)."""
    try:
        return e.stat(follow_symlinks=False)
    except OSError as exc:
        return exc


def _check_read_only(store, folder: tuple) -> tuple:
    return _check_folder(store, *folder, fix=False)


def _check_folder(store, name: str, path: str, st, fix: bool) -> tuple:
    """(findings, fixes, the shared topic its conversation uses, None, or UNKNOWN when it cannot be
    read, whether it has a conversation.json) of one folder of conversations/."""
    found: list = []
    fixes: list = []
    treecheck.mode(path, st, found, fixes, fix)
    conv = os.path.join(path, "conversation.json")
    try:
        cst = os.lstat(conv)
    except FileNotFoundError:
        cst = None
    except PermissionError:
        # A folder samctl may not enter may well hold a conversation, using any scope: "unreadable",
        # never also a leftover.
        found.append(
            Finding(
                "unreadable",
                path,
                "permission denied: cannot tell what the folder holds",
                conversation=name.upper() if UUID_RE.match(name) else None,
            )
        )
        return found, fixes, UNKNOWN, True
    except OSError:  # (a folder closed to us otherwise: it may hold a conversation, using any scope)
        _check_folder_files(store, path, None, found, fixes, fix)  # (says it cannot be listed)
        return found, fixes, UNKNOWN, True
    if cst is None:
        _check_folder_files(store, path, None, found, fixes, fix)
        return found, fixes, None, False
    cid = name.upper()
    if not UUID_RE.match(name):
        found.append(Finding("bad-id", path, f"folder name is not a UUID ({store.id_rule})", WARNING))
    elif name != cid:
        found.append(
            Finding(
                "bad-id",
                path,
                "folder name is not uppercase: SAM saves to the uppercase name and leaves a duplicate",
                WARNING,
                cid,
            )
        )
    doc = _check_conversation(store, cid, name, conv, cst, found, fixes, fix)
    topic = decode.shared_topic_id(doc) if doc is not None else UNKNOWN
    _check_folder_files(store, path, cid, found, fixes, fix)
    return found, fixes, topic, True


def _check_conversation(store, cid, folder, p, st, findings, fixes, fix):
    if not stat.S_ISREG(st.st_mode):
        findings.append(
            Finding("not-regular", p, f"is {filemodes.describe_mode(st.st_mode)}, not a file", conversation=cid)
        )
        return None
    data, doc, problem = store.read_file(p)
    if problem:
        findings.append(Finding(problem[0], p, problem[1], conversation=cid))
        return None
    repeated = _repeated_keys(data, doc)  # (before anything reads doc: the scan needs it as parsed)
    for prob in _problems(doc):
        if prob.severity == "error":
            findings.append(
                Finding("sam-reject", p, f"SAM would skip this conversation: {prob.where}: {prob.reason}", ERROR, cid)
            )
        else:
            findings.append(Finding(prob.code, p, f"{prob.where}: {prob.reason}", WARNING, cid))
    _say_repeated_keys(repeated, cid, p, findings)
    fid = doc.get("id")
    if isinstance(fid, str) and fid.upper() != folder.upper():
        findings.append(
            Finding(
                "id-mismatch",
                p,
                f"the file's id {fid[:40]} differs from its folder: SAM loads it, "
                "and saves it to a second folder on its next save",
                WARNING,
                cid,
            )
        )  # sam.md §4.5.8
    return doc


def _problems(doc: dict) -> list:
    """``schema.validate_conversation(doc)`` for a document orjson parsed: the compiled predicates
    say whether there is any error (most documents have none), so only a document with one is
    walked for every error; the warnings are always looked for."""
    if decodable.first_error(doc, strict_json=True) is None:
        return schema.warnings_of(doc)
    return schema.validate_conversation(doc)


def _repeated_keys(data: bytes, doc: dict) -> list:
    """``(where, key)`` of each key written twice in one object of ``data`` (``doc``: its parse)."""
    from samctl.stores import dupkeys  # (lazy: not loaded by ls or --help)

    return dupkeys.anywhere(data, doc)


def _say_repeated_keys(found: list, cid, p, findings) -> None:
    """A warning per key written twice in one object: samctl reads the last, and whether SAM's
    decoder (Apple's) refuses the file or keeps either value is not known."""
    for where, key in found:
        findings.append(
            Finding(
                "duplicate-key",
                p,
                f"key {key[:40]!r} appears twice in {where[:80]}: samctl reads "
                "the last; SAM may refuse the conversation or keep the other (`samctl recover "
                f"{cid}` rewrites it with the last)",
                WARNING,
                cid,
            )
        )


def _check_legacy(store, path: str, findings: list) -> None:
    """What SAM would refuse in the legacy ``conversations.json`` (sam.md §5.4): the file is decoded as
    one array of ConversationData, so an element that does not decode fails the whole file."""
    try:
        arr = orjson.loads(reading.read_capped(path, store.caps.snapshot))
    except (FileProblem, orjson.JSONDecodeError):
        return  # legacy_docs reported it
    if not isinstance(arr, list):
        return
    bad = 0
    for i, d in enumerate(arr):
        errors = [p for p in schema.validate_conversation(d) if p.severity == schema.ERROR]
        if errors:
            bad += 1
            if bad <= 5:
                findings.append(
                    Finding(
                        "sam-reject",
                        path,
                        f"element {i}: {errors[0].where}: {errors[0].reason} "
                        "(SAM decodes the file as one array: it fails on this)",
                    )
                )
    if bad > 5:
        findings.append(Finding("sam-reject", path, f"{bad - 5} more elements SAM cannot decode"))


def _check_active(store, path: str, findings: list) -> None:
    """``active-conversation.json`` (sam.md §6.1): SAM falls back to no selection when it cannot use it."""
    try:
        doc = orjson.loads(reading.read_capped(path, store.caps.other))
    except FileProblem as exc:
        findings.append(Finding(exc.code, path, exc.message, WARNING))
        return
    except orjson.JSONDecodeError as exc:
        findings.append(
            Finding(
                "active-bad", path, f"not valid JSON ({str(exc)[:80]}): SAM selects no conversation at start", WARNING
            )
        )
        return
    cid = doc.get("id") if isinstance(doc, dict) else None
    if not (isinstance(cid, str) and UUID_RE.match(cid)):
        findings.append(
            Finding(
                "active-bad", path, f"id {str(cid)[:40]!r} is not a UUID: SAM selects no conversation at start", WARNING
            )
        )


def _check_folder_files(store, folder, cid, findings, fixes, fix):
    try:
        entries = list(os.scandir(folder))
    except OSError as exc:
        findings.append(Finding("unreadable", folder, f"cannot list the folder: {exc.strerror}", conversation=cid))
        return
    now = time.time()
    for e in entries:
        st = filemodes.lstat(e.path)
        if st is None:
            continue
        if stat.S_ISLNK(st.st_mode):
            treecheck.symlink(store.root_real, e.path, findings)
            continue
        if not stat.S_ISREG(st.st_mode):
            if not stat.S_ISDIR(st.st_mode) or e.name in KNOWN_FILES or e.name == "conversation.json.tmp":
                findings.append(
                    Finding(
                        "not-regular", e.path, f"is {filemodes.describe_mode(st.st_mode)}, not a file", conversation=cid
                    )
                )
            continue
        treecheck.mode(e.path, st, findings, fixes, fix, cid)
        if e.name == "conversation.json.tmp":
            findings.append(
                Finding(
                    "leftover-tmp",
                    e.path,
                    said(
                        "SAM stopped in the middle of a save; `",
                        Suggestion("recover", cid or os.path.basename(folder)),
                        "` can use this copy",
                    ),
                    WARNING,
                    cid,
                )
            )
        elif e.name.endswith(".tmp"):
            if now - st.st_mtime >= writing.STALE_TMP_SECONDS:
                findings.append(Finding("stale-tmp", e.path, "temp file left behind by an earlier save", WARNING, cid))
        elif e.name in DATABASES:
            _check_db(e.path, e.name, folder, cid, findings)
        elif e.name.endswith(".bak") or e.name.endswith(".torn"):
            findings.append(
                Finding(
                    "samctl-backup",
                    e.path,
                    said("a copy samctl keeps (recover, check --fix); `", Suggestion("compact"), "` removes it later"),
                    INFO,
                    cid,
                )
            )


def _check_db(path, name, folder, cid, findings):
    try:
        from samctl.stores.sam import archivedb, memorydb  # (lazy: not loaded by ls or --help)
    except ImportError:  # pragma: no cover
        return
    scope = os.path.basename(folder).upper()
    local: list = []
    if name == "memory.db":
        memorydb.read_memories(path, local, scope_id=scope)
    else:
        archivedb.read_archives(path, local)
    for f in local:
        f.conversation = f.conversation or cid
    findings.extend(local)


def _classify_scope(e, topic_ids, unknown, findings):
    name = e.name.upper()
    try:
        files = set(os.listdir(e.path))
    except OSError:
        files = set()
    if name in topic_ids:
        findings.append(
            Finding("scope-shared", e.path, "shared-topic memory scope used by a conversation (normal)", INFO)
        )
    elif files and files <= {"memory.db", "memory.db-journal"} and unknown:
        from samctl.stores.sam.lifecycle import unreadable_names  # (lazy: not loaded by ls or --help)

        findings.append(
            Finding(
                "scope-unknown",
                e.path,
                "memory scope no readable conversation uses; whether "
                f"{unreadable_names(unknown)}, which cannot be read, uses it is unknown: samctl "
                "keeps it (rm and compact refuse to remove it)",
                WARNING,
            )
        )
    elif files and files <= {"memory.db", "memory.db-journal"}:
        findings.append(
            Finding(
                "scope-stray",
                e.path,
                "memory scope no conversation uses (a store_memory call "
                "without a conversation); kept until you remove it",
                WARNING,
            )
        )
    else:
        findings.append(
            Finding(
                "leftover-dir",
                e.path,
                "folder without conversation.json and not a shared topic: "
                "probably what remains of a deleted conversation",
                WARNING,
            )
        )
