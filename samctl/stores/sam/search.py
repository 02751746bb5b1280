"""What search reads of a SAM store: its sources (one per file) and the rows each yields.

Sources: every conversation folder's ``conversation.json`` (messages), ``memory.db`` (memories)
and ``context_archive.db`` (archived messages), the legacy ``BASE/memory.db`` (memories of no one
scope) and ``conversations.json`` (the legacy single-file store, sam.md §5.4).
"""

from __future__ import annotations

import os
import re
import stat

from samctl.errors import FileProblem, NotFound
from samctl.fs import reading
from samctl.importance import importance
from samctl.model import ERROR, Finding
from samctl.stores.sam import decode
from samctl.stores.sources import Found, Row, Source, message_rows, not_regular, unstattable, utf8_name

_UUID = re.compile(r"[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}\Z")
FILES = (
    ("conversation.json", "sam-conv", "messages"),
    ("memory.db", "sam-mem", "memories"),
    ("context_archive.db", "sam-arch", "archived"),
)


def sources(store, findings: list, scope: set | None = None) -> dict[str, Source]:
    """Every source of the store (or of the conversations/scopes in ``scope``), by key: one ``lstat``
    per file, relative to the conversations folder (this runs before every search)."""
    found = Found(findings)
    out = found.sources
    now, racy_ns = found.now, found.racy_ns
    conv_dir = str(store.conv_dir)
    try:
        with os.scandir(conv_dir) as it:
            entries = sorted(e.name for e in it if e.is_dir(follow_symlinks=False))
    except OSError as exc:
        raise NotFound(f"cannot list {conv_dir}: {exc.strerror}") from None
    make = tuple.__new__
    match = _UUID.match
    isreg = stat.S_ISREG
    sep = os.sep
    files = [(sep + f, "/" + f, kind, holds) for f, kind, holds in FILES]
    statat = os.stat
    try:  # stat relative to the folder: the kernel walks two path components instead of all of them
        dirfd = reading.open_dir_fd(conv_dir)
    except OSError as exc:
        raise NotFound(f"cannot open {conv_dir}: {exc.strerror}") from None
    odd = False
    try:
        for name in entries:
            if not match(name):
                odd = odd or name != "backups"
                continue
            path = conv_dir + sep + name
            cid = name.upper()
            if scope is not None and cid not in scope:
                continue
            for fsuffix, ksuffix, kind, holds in files:
                key = name + ksuffix
                try:  # the hot loop of every search: one lstat, then a string
                    st = statat(key, dir_fd=dirfd, follow_symlinks=False)
                except FileNotFoundError:
                    continue
                except OSError as exc:
                    findings.append(unstattable(path + fsuffix, exc, cid))
                    continue
                if not isreg(st.st_mode):
                    findings.append(not_regular(path + fsuffix, st.st_mode, cid))
                    continue
                # tuple.__new__: a Source without the NamedTuple constructor's cost (20,000 per search)
                out[key] = make(
                    Source,
                    (
                        key,
                        kind,
                        (path + fsuffix,),
                        f"{st.st_size}:{st.st_mtime_ns}:{st.st_ino}:{st.st_ctime_ns}",
                        cid,
                        now - st.st_mtime_ns >= racy_ns,
                        holds,
                    ),
                )
    finally:
        os.close(dirfd)
    if odd:  # a conversation.json in a folder not named by a UUID: SAM loads it (sam.md §5.3), ls lists it
        for cid, name in store.odd_folders().items():
            if not utf8_name(name):
                continue  # a key the index manifest (JSON) cannot hold; ls reports such a folder
            if (scope is None or cid in scope) and f"{cid}/conversation.json" not in out:
                found.add(
                    f"{name}/conversation.json", "sam-conv", [conv_dir + sep + name + sep + "conversation.json"], cid
                )
    found.add("@base/memory.db", "sam-base-mem", [os.path.join(str(store.base), "memory.db")], None, "memories")
    found.add("conversations.json", "sam-legacy", [os.path.join(conv_dir, "conversations.json")], None)
    return out


def info(conv, cid: str) -> dict:
    """What the index keeps of a conversation: its title, and the shared topic its memories live in."""
    raw = conv.raw if isinstance(conv.raw, dict) else {}
    settings = raw.get("settings") if isinstance(raw.get("settings"), dict) else {}
    name = settings.get("sharedTopicName")
    return {
        "id": cid,
        "title": conv.meta.title,
        "topic": decode.shared_topic_id(raw),
        "topic_name": name if isinstance(name, str) else None,
    }


def rows(store, src: Source, findings: list, infos: list):
    """The rows of one source (see ``Store.source_rows``)."""
    if src.kind == "sam-conv":
        conv = store.load_listed(src.conv, findings)
        if conv is not None:
            infos.append(info(conv, src.conv))
            yield from message_rows(conv, src.conv)
    elif src.kind in ("sam-mem", "sam-base-mem"):
        from samctl.stores.sam import memorydb  # (lazy: not loaded by ls or --help)

        for row in memorydb.iter_memories(src.paths[0], findings, scope_id=src.conv, missing_ok=True):
            yield Row(
                "memory",
                "",
                row.content_type,
                src.conv or row.conversation_id.upper(),
                row.rowid,
                memorydb.parse_db_date(row.created_at),
                row.importance,
                row.dimension,
                row.id,
                row.content,
            )
    elif src.kind == "sam-arch":
        from samctl.stores.sam import archivedb  # (lazy: not loaded by ls or --help)

        for chunk in archivedb.read_archives(src.paths[0], findings, scope_id=src.conv, missing_ok=True):
            for j, m in enumerate(chunk["messages"]):
                text = m.get("content")
                if not isinstance(text, str) or not text.strip():
                    continue
                role = m.get("role")
                if role not in ("user", "assistant", "system"):
                    role = "user" if m.get("isFromUser") is True else "assistant"
                imp = importance(text, role == "user") if role != "system" else 0.5
                yield Row(
                    "archived",
                    role,
                    None,
                    src.conv,
                    (chunk["rowid"] << 20) + j,
                    m.get("timestamp_epoch"),
                    imp,
                    0,
                    f"{chunk['id']}#{j}",
                    text,
                )
    elif src.kind == "sam-legacy":
        path = src.paths[0]
        for cid, doc in store.legacy_docs(findings).items():
            if os.path.lexists(os.path.join(str(store.conv_dir), cid, "conversation.json")):
                continue  # the folder copy wins, as in SAM's loader
            conv = store.conversation_from_doc(doc, path, cid)
            infos.append(info(conv, cid))
            yield from message_rows(conv, cid)


def memories_by_prefix(path: str, scope: str | None, prefix: str, findings: list) -> list:
    """(id, embedding, content, conversation id) of at most 3 memories whose id starts with ``prefix``."""
    from samctl.stores.sam import memorydb  # (lazy: not loaded by ls or --help)
    from samctl.stores.sam.sqlitefile import SQLITE_ERRORS, sqlite_finding  # (lazy: not loaded by ls or --help)

    try:
        conn = memorydb.open_readonly(path)
        try:
            return conn.execute(
                'SELECT "id", "embedding", "content", "conversation_id" FROM "conversation_memories" '
                'WHERE "id" >= ? AND "id" < ? LIMIT 3',
                (prefix, prefix + "\uffff"),
            ).fetchall()
        finally:
            conn.close()
    except FileProblem as exc:
        if exc.code != "missing":
            findings.append(Finding(exc.code, path, exc.message, ERROR, scope))
    except SQLITE_ERRORS as exc:
        findings.append(sqlite_finding(exc, path, scope))
    return []
