"""samctl's disposable search index: one per store root, in the user's cache folder.

Data model
----------
::

    <cache>/search-<store>-<sha256(root realpath)[:24]>/        0700
        manifest     b"SAMCTLIX" | u32 version | u32 crc32(body) | body (JSON, below)        0600
        seg-*.seg    immutable segments, written to a temp sibling, fsynced, renamed         0600
        lock         flock'ed by the one process that changes the index

A **row** is one searchable text: a SAM memory (``memory.db`` row), a message of a conversation
(SAM ``conversation.json``, mermaid snapshot/log), or a message of a SAM ``context_archive.db``
chunk ("archived").  A **segment** holds rows and everything a query needs about them:

- ``vectors``  float32 (rows, 256): samctl's §7.5 embedding of the text (``scoring.embed_many``);
- ``meta``     one 48-byte record per row (``META_FIELDS``): kind, role, content type, conversation
  (index into the segment header's ``convs``), position (memory rowid / message index), date (Unix
  seconds, NaN when unknown), importance (float64: stored, else computed), token count ``|C|``,
  stored-vector dimension (memories), and a dedupe key (archived copies of messages);
- ``text``/``ltext``/``ref`` UTF-8 blobs with ``*_off`` offsets (rows + 1): the text, its
  ``lower()`` (for ``--exact``) and the row's id;
- ``tok_keys``/``tok_ptr``/``tok_rows``: the token -> rows map of the keyword boost (CSR; a key is
  the 64-bit BLAKE2b of a §7.7 token, rows ascending within a key is not promised).

Layout of a segment file: 64-byte preamble (magic, version), the sections (64-byte aligned,
``vectors`` first so it can be streamed), the header JSON (root, rows, convs, each section's
offset/size/dtype/shape/crc32), and a 24-byte trailer (header offset, length, crc32, magic).

The manifest lists the segments (name, rows, size, header crc, dead row ranges), every **source**
(a file, or for mermaid a conversation's snapshot + log) with its signature ``[size, mtime_ns,
inode]`` per file, the segment rows it produced, and the findings reading it gave; and the
conversations' titles and shared topics.

Invariants
----------
- Never trusted: magic, version, root, hash names, crc32 of the manifest body and of each segment
  header, file sizes, section bounds, shapes and offsets are checked on every open; anything
  wrong means "no index" and a silent rebuild.  ``state(verify=True)`` also checks every byte.
- The store is only read (sources through ``memorydb``/the stores' loaders, read-only).
- Writers hold ``lock``; readers take no lock: a segment is never changed once renamed into
  place, the manifest is replaced atomically, and a reader that loses a race with the garbage
  collector (segment gone) re-reads the manifest.  Two searches that both find the index stale
  refresh it one after the other; the second finds nothing left to do.
- Incremental: a source whose signature changed (or that is new) is read again into a new
  segment, its old rows become dead; removed sources only add dead rows.  Segments are merged
  (compacted) when there are more than ``MAX_SEGMENTS`` or more than ``DEAD_FRACTION`` of the rows
  are dead.  A file modified less than ``RACY_SECONDS`` ago, or one that could not be read for a
  passing reason (locked), is indexed but not trusted: it is read again next time.
- numpy is imported only inside functions (``samctl --help`` must not import it).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import math
import mmap
import os
import re
import secrets
import stat
import struct
import sys
import time
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

import orjson

from samctl import fsafe
from samctl.core import scoring
from samctl.core.model import ERROR, Finding
from samctl.errors import FileProblem, NotFound

INDEX_VERSION = 1
MANIFEST_MAGIC = b"SAMCTLIX"
SEGMENT_MAGIC = b"SAMCTLSG"
TRAILER_MAGIC = b"SGTRAIL1"
PREAMBLE = 64
ALIGN = 64
TRAILER = struct.Struct("<QII8s")
TOKEN_HASH_NAME = "blake2b-64"
DIM = scoring.EMBED_DIM

RACY_SECONDS = 2.0
MAX_SEGMENTS = 6
DEAD_FRACTION = 0.3
CHUNK_SOURCES = 48  # sources per unit of work (and per progress report)
PARALLEL_MIN_SOURCES = 256  # fewer sources to read than this: no worker processes
LOCK_WAIT = 600.0  # seconds to wait for another samctl that is refreshing the index
TRANSIENT_CODES = frozenset({"db-locked", "db-hot-journal", "unreadable", "missing"})

KINDS = ("memory", "message", "archived")
FLAG_BASE_DB = 1  # meta flags: the row comes from the legacy BASE/memory.db
MEMORY, MESSAGE, ARCHIVED = 0, 1, 2
ROLES = ("", "user", "assistant", "tool", "reasoning", "system")
CTYPES = ("", "message", "user_input", "assistant_response", "system_event", "tool_result", "context_info",
          "document")
META_FIELDS = [
    ("kind", "u1"), ("role", "u1"), ("ctype", "u1"), ("flags", "u1"), ("conv", "<i4"), ("pos", "<i8"),
    ("date", "<f8"), ("imp", "<f8"), ("ntok", "<u4"), ("dim", "<i4"), ("dkey", "<u8"),
]
# section name -> (dtype, shape rule); shape rules use R (rows), K (keys), P (postings), B (bytes)
SECTIONS = {
    "vectors": ("<f4", ("R", DIM)),
    "meta": (None, ("R",)),
    "text_off": ("<i8", ("R+1",)),
    "text": ("|u1", ("B",)),
    "ltext_off": ("<i8", ("R+1",)),
    "ltext": ("|u1", ("B",)),
    "ref_off": ("<i8", ("R+1",)),
    "ref": ("|u1", ("B",)),
    "tok_keys": ("<u8", ("K",)),
    "tok_ptr": ("<i8", ("K+1",)),
    "tok_rows": ("<i4", ("P",)),
}
_SEG_NAME = re.compile(r"seg-[0-9a-f]{8,40}\.seg\Z")
_UUID = re.compile(r"[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}\Z")
SAM_FILES = (("conversation.json", "sam-conv"), ("memory.db", "sam-mem"), ("context_archive.db", "sam-arch"))


class BadIndex(Exception):
    """The index on disk cannot be used (the message says why); it will be rebuilt."""


def _np():
    import numpy as np

    return np


def meta_dtype():
    return _np().dtype(META_FIELDS)


def index_dir(store) -> Path:
    key = hashlib.sha256(store.root_real.encode("utf-8", "surrogateescape")).hexdigest()[:24]
    return fsafe.cache_dir() / f"search-{store.name}-{key}"


# ---------------------------------------------------------------------------------------------
# Sources: what the index is made of, found cheaply (stat only)


class Source(NamedTuple):
    key: str  # "<folder>/memory.db", "<mermaid id>", "@base/memory.db", "conversations.json"
    kind: str  # sam-conv, sam-mem, sam-arch, sam-base-mem, sam-legacy, mermaid
    paths: tuple
    sig: str  # "size:mtime_ns:inode" per path, "-" for an absent one, joined by "|"
    conv: str | None  # the conversation/scope its rows belong to (None: each row says)
    trusted: bool = True  # False: modified within RACY_SECONDS; read it again next time


def discover(store, findings: list, scope: set | None = None) -> dict[str, Source]:
    """Every source of the store (or of the conversations/scopes in ``scope``), by key.

    This runs before every search, so it is one ``lstat`` per file and little else.
    """
    now = time.time_ns()
    racy_ns = int(RACY_SECONDS * 1e9)
    out: dict[str, Source] = {}
    lstat = os.lstat
    isreg = stat.S_ISREG

    def sig_of(path, conv):
        """(signature part, racy) of one file; None when absent or not a regular file (a finding)."""
        try:
            st = lstat(path)
        except FileNotFoundError:
            return None
        except OSError as exc:
            findings.append(Finding("unreadable", path, f"cannot stat: {exc.strerror}", ERROR, conv))
            return None
        if not isreg(st.st_mode):
            findings.append(Finding("not-regular", path, f"is {fsafe.describe_mode(st.st_mode)}, not a file", ERROR,
                                    conv))
            return None
        return f"{st.st_size}:{st.st_mtime_ns}:{st.st_ino}", now - st.st_mtime_ns < racy_ns

    def add(key, kind, paths, conv):
        parts = [sig_of(p, conv) for p in paths]
        if any(parts):
            out[key] = Source(key, kind, tuple(paths), "|".join(x[0] if x else "-" for x in parts), conv,
                              not any(x[1] for x in parts if x))

    conv_dir = str(store.conv_dir)
    if store.name == "sam":
        try:
            with os.scandir(conv_dir) as it:
                entries = sorted(e.name for e in it if e.is_dir(follow_symlinks=False))
        except OSError as exc:
            raise NotFound(f"cannot list {conv_dir}: {exc.strerror}") from None
        make = tuple.__new__
        match = _UUID.match
        sep = os.sep
        files = [(sep + f, "/" + f, kind) for f, kind in SAM_FILES]
        statat = os.stat
        try:  # stat relative to the folder: the kernel walks two path components instead of all of them
            dirfd = os.open(conv_dir, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        except OSError as exc:
            raise NotFound(f"cannot open {conv_dir}: {exc.strerror}") from None
        try:
            for name in entries:
                if not match(name):
                    continue  # also skips "backups"
                path = conv_dir + sep + name
                cid = name.upper()
                if scope is not None and cid not in scope:
                    continue
                for fsuffix, ksuffix, kind in files:
                    key = name + ksuffix
                    try:  # the hot loop of every search: one lstat, then a string
                        st = statat(key, dir_fd=dirfd, follow_symlinks=False)
                    except FileNotFoundError:
                        continue
                    except OSError as exc:
                        findings.append(Finding("unreadable", path + fsuffix, f"cannot stat: {exc.strerror}", ERROR,
                                                cid))
                        continue
                    if not isreg(st.st_mode):
                        findings.append(Finding("not-regular", path + fsuffix,
                                                f"is {fsafe.describe_mode(st.st_mode)}, not a file", ERROR, cid))
                        continue
                    # tuple.__new__: a Source without the NamedTuple constructor's cost (20,000 per search)
                    out[key] = make(Source, (key, kind, (path + fsuffix,), f"{st.st_size}:{st.st_mtime_ns}:{st.st_ino}",
                                             cid, now - st.st_mtime_ns >= racy_ns))
        finally:
            os.close(dirfd)
        add("@base/memory.db", "sam-base-mem", [os.path.join(str(store.base), "memory.db")], None)
        add("conversations.json", "sam-legacy", [os.path.join(conv_dir, "conversations.json")], None)
    else:
        from samctl.formats.mermaid.decode import MERMAID_ID_RE

        try:
            names = os.listdir(conv_dir)
        except OSError as exc:
            raise NotFound(f"cannot list {conv_dir}: {exc.strerror}") from None
        ids = sorted({n.rpartition(".")[0] for n in names
                      if n.endswith((".json", ".jsonl")) and MERMAID_ID_RE.match(n.rpartition(".")[0])})
        for cid in ids:
            if scope is None or cid in scope:
                add(cid, "mermaid", [os.path.join(conv_dir, cid + ".json"), os.path.join(conv_dir, cid + ".jsonl")],
                    cid)
    return out


# ---------------------------------------------------------------------------------------------
# Reading sources into rows


@dataclass
class Batch:
    """The rows of one source, as Python lists, plus what reading it found."""

    key: str
    flag: int = 0  # meta flags of every row
    findings: list = field(default_factory=list)
    infos: list = field(default_factory=list)  # conversation infos: {"id", "title", "topic", "topic_name"}
    kinds: list = field(default_factory=list)
    roles: list = field(default_factory=list)
    ctypes: list = field(default_factory=list)
    convs: list = field(default_factory=list)
    pos: list = field(default_factory=list)
    dates: list = field(default_factory=list)
    imps: list = field(default_factory=list)
    dims: list = field(default_factory=list)
    refs: list = field(default_factory=list)
    texts: list = field(default_factory=list)

    def add(self, kind, role, ctype, conv, pos, date, imp, dim, ref, text):
        self.kinds.append(kind)
        self.roles.append(role)
        self.ctypes.append(ctype)
        self.convs.append(conv)
        self.pos.append(pos)
        self.dates.append(math.nan if date is None else date)
        self.imps.append(imp)
        self.dims.append(dim)
        self.refs.append(ref)
        self.texts.append(text)


_ROLE_CODE = {r: i for i, r in enumerate(ROLES)}
_CTYPE_CODE = {c: i for i, c in enumerate(CTYPES)}


def _messages(b: Batch, conv, cid: str) -> None:
    for i, m in enumerate(conv.messages):
        if not m.content.strip():
            continue
        b.add(MESSAGE, _ROLE_CODE.get(m.role, 0), 0, cid, i, m.timestamp_ts, scoring.message_importance(m), 0,
              m.id or "", m.content)


def _sam_info(conv, cid: str) -> dict:
    from samctl.formats.sam import decode

    raw = conv.raw if isinstance(conv.raw, dict) else {}
    settings = raw.get("settings") if isinstance(raw.get("settings"), dict) else {}
    name = settings.get("sharedTopicName")
    return {"id": cid, "title": conv.meta.title, "topic": decode.shared_topic_id(raw),
            "topic_name": name if isinstance(name, str) else None}


def read_source(store, src: Source) -> Batch:
    """The rows of one source; never raises for bad input (findings say what was wrong)."""
    from samctl.core.load import load_resolved

    b = Batch(src.key, FLAG_BASE_DB if src.kind == "sam-base-mem" else 0)
    if src.kind in ("sam-conv", "mermaid"):
        conv = load_resolved(store, src.conv, b.findings)
        if conv is not None:
            b.infos.append(_sam_info(conv, src.conv) if src.kind == "sam-conv"
                           else {"id": src.conv, "title": conv.meta.title})
            _messages(b, conv, src.conv)
    elif src.kind in ("sam-mem", "sam-base-mem"):
        from samctl.formats.sam import memorydb

        for row in memorydb.iter_memories(src.paths[0], b.findings, scope_id=src.conv, missing_ok=True):
            conv = src.conv or row.conversation_id.upper()
            b.add(MEMORY, 0, _CTYPE_CODE.get(row.content_type, 1), conv, row.rowid,
                  memorydb.parse_db_date(row.created_at), row.importance, row.dimension, row.id, row.content)
    elif src.kind == "sam-arch":
        from samctl.formats.sam import memorydb

        for chunk in memorydb.read_archives(src.paths[0], b.findings, scope_id=src.conv, missing_ok=True):
            for j, m in enumerate(chunk["messages"]):
                text = m.get("content")
                if not isinstance(text, str) or not text.strip():
                    continue
                role = m.get("role")
                if role not in ("user", "assistant", "system"):
                    role = "user" if m.get("isFromUser") is True else "assistant"
                imp = scoring.importance(text, role == "user") if role != "system" else 0.5
                b.add(ARCHIVED, _ROLE_CODE[role], 0, src.conv, (chunk["rowid"] << 20) + j, m.get("timestamp_epoch"),
                      imp, 0, f"{chunk['id']}#{j}", text)
    elif src.kind == "sam-legacy":
        path = src.paths[0]
        for cid, doc in store._legacy_docs(b.findings).items():
            if os.path.lexists(os.path.join(str(store.conv_dir), cid, "conversation.json")):
                continue  # the folder copy wins, as in SAM's loader
            conv = store.conversation_from_doc(doc, path, cid)
            b.infos.append(_sam_info(conv, cid))
            _messages(b, conv, cid)
    for f in b.findings:
        f.conversation = f.conversation or src.conv
    return b


# token -> 64-bit key, memoised (bounded)
class _TokenKeys(dict):
    __slots__ = ()

    def __missing__(self, tok: str) -> int:
        v = self[tok] = int.from_bytes(hashlib.blake2b(tok.encode("utf-8", "surrogatepass"), digest_size=8).digest(),
                                       "little")
        return v


_TOKH = _TokenKeys()


def token_key(tok: str) -> int:
    return _TOKH[tok]


def _enc(s: str) -> bytes:
    return s.encode("utf-8", "surrogatepass")


def dedupe_key(conv: str, text: str) -> int:
    return int.from_bytes(hashlib.blake2b(_enc(conv + "\0" + text), digest_size=8).digest(), "little")


@dataclass
class Chunk:
    """Rows ready for a segment: what a worker sends back (numpy arrays and bytes, picklable)."""

    keys: list
    counts: list
    findings: list
    infos: list
    conv_names: list
    meta: object
    vectors: object
    text: bytes
    text_len: object
    ltext: bytes
    ltext_len: object
    ref: bytes
    ref_len: object
    tok_hash: object
    tok_row: object


def process(batches: list[Batch]) -> Chunk:
    """Embed, tokenise and pack the rows of some sources."""
    np = _np()
    if len(_TOKH) > 1 << 20:
        _TOKH.clear()
    texts = [t for b in batches for t in b.texts]
    n = len(texts)
    meta = np.zeros(n, dtype=meta_dtype())
    conv_names: dict[str, int] = {}
    convs = [conv_names.setdefault(c, len(conv_names)) for b in batches for c in b.convs]
    for name, col in (("kind", "kinds"), ("role", "roles"), ("ctype", "ctypes"), ("pos", "pos"), ("date", "dates"),
                      ("imp", "imps"), ("dim", "dims")):
        meta[name] = [x for b in batches for x in getattr(b, col)]
    meta["conv"] = convs
    meta["flags"] = [b.flag for b in batches for _ in b.texts]
    keys: list[int] = []
    ntok = []
    extend = keys.extend
    get = _TOKH.__getitem__
    for t in texts:
        toks = scoring.tokens(t)
        ntok.append(len(toks))
        extend(map(get, toks))
    meta["ntok"] = ntok
    names = list(conv_names)
    cstrs = [names[i] for i in convs]
    meta["dkey"] = np.array([dedupe_key(c, t) if k != MEMORY else 0
                             for k, c, t in zip(meta["kind"].tolist(), cstrs, texts)], dtype=np.uint64)
    enc = [_enc(t) for t in texts]
    lenc = [_enc(t.lower()) for t in texts]
    renc = [_enc(r) for b in batches for r in b.refs]
    return Chunk(
        keys=[b.key for b in batches], counts=[len(b.texts) for b in batches], findings=[b.findings for b in batches],
        infos=[b.infos for b in batches], conv_names=names, meta=meta,
        vectors=scoring.embed_many(texts) if n else np.zeros((0, DIM), dtype=np.float32),
        text=b"".join(enc), text_len=np.fromiter(map(len, enc), dtype=np.int64, count=n),
        ltext=b"".join(lenc), ltext_len=np.fromiter(map(len, lenc), dtype=np.int64, count=n),
        ref=b"".join(renc), ref_len=np.fromiter(map(len, renc), dtype=np.int64, count=n),
        tok_hash=np.array(keys, dtype=np.uint64),
        tok_row=np.repeat(np.arange(n, dtype=np.int32), np.array(ntok, dtype=np.int64)),
    )


# worker processes ----------------------------------------------------------------------------

_WORKER_STORE = None


def _worker_init(spec) -> None:
    global _WORKER_STORE
    from samctl.formats.base import Caps

    kind, conv, base, caps = spec
    if kind == "sam":
        from samctl.formats.sam.store import SamStore as cls
    else:
        from samctl.formats.mermaid.store import MermaidStore as cls
    _WORKER_STORE = cls(Path(conv), Path(base), Caps(*caps), False)


def _worker_read(sources: list[Source]) -> Chunk:
    return process([read_source(_WORKER_STORE, s) for s in sources])


def _read_all(store, sources: list[Source], progress=None, jobs: int | None = None):
    """Chunks for ``sources`` in order, read by worker processes when there are many."""
    chunks = [sources[i:i + CHUNK_SOURCES] for i in range(0, len(sources), CHUNK_SOURCES)]
    total = len(sources)
    if jobs is None:
        env = os.environ.get("SAMCTL_INDEX_JOBS", "")
        jobs = int(env) if env.isdigit() else min(os.cpu_count() or 1, 4)
    done = rows = 0
    if jobs > 1 and total >= PARALLEL_MIN_SOURCES:
        import concurrent.futures
        import multiprocessing

        ctx = multiprocessing.get_context("fork" if sys.platform.startswith("linux") else "spawn")
        spec = (store.name, str(store.conv_dir), str(store.base),
                (store.caps.snapshot, store.caps.log, store.caps.other))
        with concurrent.futures.ProcessPoolExecutor(jobs, mp_context=ctx, initializer=_worker_init,
                                                    initargs=(spec,)) as pool:
            for part, chunk in zip(chunks, pool.map(_worker_read, chunks)):
                done += len(part)
                rows += len(chunk.meta)
                if progress:
                    progress(done, total, rows)
                yield chunk
        return
    for part in chunks:
        chunk = process([read_source(store, s) for s in part])
        done += len(part)
        rows += len(chunk.meta)
        if progress:
            progress(done, total, rows)
        yield chunk


# ---------------------------------------------------------------------------------------------
# Segments


class SegmentWriter:
    """Builds one segment, streamed to ``path`` (or kept in memory when ``path`` is None)."""

    def __init__(self, root: str, path: Path | None = None):
        np = _np()
        self.np = np
        self.root = root
        self.path = path
        self.rows = 0
        self.conv_index: dict[str, int] = {}
        self.metas: list = []
        self.vecs: list = []
        self.blobs = {"text": [], "ltext": [], "ref": []}
        self.lens = {"text": [], "ltext": [], "ref": []}
        self.tok_hash: list = []
        self.tok_row: list = []
        self.crc: dict[str, int] = {}
        self.tmp = self.f = None
        if path is not None:
            self.tmp, self.f = fsafe.create_temp(path)
            self.f.write(SEGMENT_MAGIC + struct.pack("<I", INDEX_VERSION) + b"\0" * (PREAMBLE - 12))
            self.pos = PREAMBLE
            self.crc["vectors"] = 0

    def discard(self) -> None:
        if self.f is not None:
            self.f.close()
            fsafe.discard_temp(self.tmp)
            self.f = None

    def conv_map(self, names: list):
        """Array mapping a chunk's or segment's conversation indexes to this segment's."""
        np = self.np
        return np.array([self.conv_index.setdefault(c, len(self.conv_index)) for c in names] or [0], dtype=np.int32)

    def _vectors(self, v) -> None:
        v = self.np.ascontiguousarray(v, dtype=self.np.float32)
        if not v.size:
            return
        if self.f is None:
            self.vecs.append(v)
            return
        data = memoryview(v).cast("B")
        self.f.write(data)
        self.crc["vectors"] = zlib.crc32(data, self.crc["vectors"])
        self.pos += len(data)

    def add_rows(self, meta, vectors, conv_map, blobs: dict, lens: dict) -> int:
        """Append rows; ``conv_map[meta['conv']]`` is their conversation here.  Returns the first new row."""
        start = self.rows
        m = meta.copy()
        if len(m):
            m["conv"] = conv_map[m["conv"]]
        self.metas.append(m)
        self._vectors(vectors)
        for k in ("text", "ltext", "ref"):
            self.blobs[k].append(bytes(blobs[k]))
            self.lens[k].append(self.np.asarray(lens[k], dtype=self.np.int64))
        self.rows += len(m)
        return start

    def add_postings(self, hashes, rows) -> None:
        self.tok_hash.append(self.np.asarray(hashes, dtype=self.np.uint64))
        self.tok_row.append(self.np.asarray(rows, dtype=self.np.int32))

    def add_chunk(self, c: Chunk) -> int:
        start = self.add_rows(c.meta, c.vectors, self.conv_map(c.conv_names), {"text": c.text, "ltext": c.ltext, "ref": c.ref},
                              {"text": c.text_len, "ltext": c.ltext_len, "ref": c.ref_len})
        self.add_postings(c.tok_hash, c.tok_row.astype(self.np.int64) + start)
        return start

    def _sections(self) -> dict:
        np = self.np
        out = {}
        out["meta"] = np.concatenate(self.metas) if self.metas else np.zeros(0, dtype=meta_dtype())
        for k in ("text", "ltext", "ref"):
            lens = np.concatenate(self.lens[k]) if self.lens[k] else np.zeros(0, dtype=np.int64)
            off = np.zeros(len(lens) + 1, dtype=np.int64)
            np.cumsum(lens, out=off[1:])
            out[k + "_off"] = off
            out[k] = np.frombuffer(b"".join(self.blobs[k]), dtype=np.uint8)
        h = np.concatenate(self.tok_hash) if self.tok_hash else np.zeros(0, dtype=np.uint64)
        r = np.concatenate(self.tok_row) if self.tok_row else np.zeros(0, dtype=np.int32)
        order = np.argsort(h, kind="stable")
        hs = h[order]
        out["tok_rows"] = r[order].astype(np.int32)
        if len(hs):
            starts = np.flatnonzero(np.concatenate(([True], hs[1:] != hs[:-1])))
        else:
            starts = np.zeros(0, dtype=np.int64)
        out["tok_keys"] = hs[starts]
        out["tok_ptr"] = np.concatenate((starts, [len(hs)])).astype(np.int64)
        return out

    def _header(self, sections: dict) -> dict:
        return {"v": INDEX_VERSION, "root": self.root, "dim": DIM, "rows": self.rows, "hash": scoring.STABLE_HASH_NAME,
                "token_hash": TOKEN_HASH_NAME, "convs": list(self.conv_index), "sections": sections}

    def finish(self):
        """In memory: the Segment.  On disk: ``{"name", "rows", "size", "hcrc"}`` once renamed into place."""
        np = self.np
        arrays = self._sections()
        if self.f is None:
            arrays["vectors"] = np.concatenate(self.vecs) if self.vecs else np.zeros((0, DIM), dtype=np.float32)
            seg = Segment("(memory)", self.rows, list(self.conv_index), arrays)
            for k in ("text", "ltext", "ref"):
                seg.bufs[k] = (arrays[k].tobytes(), 0)
            return seg
        try:
            sec = {"vectors": [PREAMBLE, self.rows * DIM * 4, "<f4", [self.rows, DIM], self.crc["vectors"]]}
            for name in ("meta", "text_off", "text", "ltext_off", "ltext", "ref_off", "ref", "tok_keys", "tok_ptr",
                         "tok_rows"):
                a = np.ascontiguousarray(arrays[name])
                pad = (-self.pos) % ALIGN
                self.f.write(b"\0" * pad)
                self.pos += pad
                data = memoryview(a).cast("B") if a.nbytes else b""
                self.f.write(data)
                sec[name] = [self.pos, a.nbytes, a.dtype.str if name != "meta" else "meta", list(a.shape),
                             zlib.crc32(data)]
                self.pos += a.nbytes
            header = orjson.dumps(self._header(sec))
            hcrc = zlib.crc32(header)
            self.f.write(header)
            self.f.write(TRAILER.pack(self.pos, len(header), hcrc, TRAILER_MAGIC))
            size = self.pos + len(header) + TRAILER.size
            fsafe.finish_temp(self.f)
            self.f = None
            fsafe.commit_temp(self.tmp, self.path)
        except BaseException:
            self.discard()
            raise
        return {"name": self.path.name, "rows": self.rows, "size": size, "hcrc": hcrc, "dead": []}


class Segment:
    """An opened segment: numpy views (on a read-only mmap, or in memory) plus what queries need."""

    def __init__(self, name: str, rows: int, convs: list, arrays: dict):
        self.name = name
        self.rows = rows
        self.convs = convs
        self.a = arrays
        self.bufs: dict = {}  # "text"/"ltext"/"ref" -> (buffer with .find and slicing, base offset)
        self.alive = None
        self.header: dict = {}
        self.mm = None

    def __getattr__(self, name):
        try:
            return self.__dict__["a"][name]
        except KeyError:
            raise AttributeError(name) from None

    def row(self, i: int) -> tuple:
        """(kind, role, content type, conversation id) of row ``i``; BadIndex if a code is out of range."""
        m = self.a["meta"][i]
        k, r, c, v = int(m["kind"]), int(m["role"]), int(m["ctype"]), int(m["conv"])
        if not (0 <= k < len(KINDS) and 0 <= r < len(ROLES) and 0 <= c < len(CTYPES) and 0 <= v < len(self.convs)):
            raise BadIndex(f"{self.name}: row {i} has codes out of range")
        return KINDS[k], ROLES[r], CTYPES[c], self.convs[v]

    def blob(self, kind: str, i: int) -> bytes:
        buf, base = self.bufs[kind]
        off = self.a[kind + "_off"]
        return bytes(buf[base + int(off[i]): base + int(off[i + 1])])

    def text(self, i: int) -> str:
        return self.blob("text", i).decode("utf-8", "surrogatepass")

    def ref(self, i: int) -> str:
        return self.blob("ref", i).decode("utf-8", "surrogatepass")

    @classmethod
    def open(cls, path: Path, root: str, expect: dict) -> "Segment":
        np = _np()
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except OSError as exc:
            raise BadIndex(f"{path.name}: {exc.strerror}") from None
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                raise BadIndex(f"{path.name}: not a regular file")
            if st.st_size != expect["size"] or st.st_size < PREAMBLE + TRAILER.size:
                raise BadIndex(f"{path.name}: {st.st_size} bytes, the manifest says {expect['size']}")
            mm = mmap.mmap(fd, 0, access=mmap.ACCESS_READ)
        finally:
            os.close(fd)
        size = len(mm)
        if mm[:8] != SEGMENT_MAGIC or struct.unpack_from("<I", mm, 8)[0] != INDEX_VERSION:
            raise BadIndex(f"{path.name}: not a samctl segment of version {INDEX_VERSION}")
        hoff, hlen, hcrc, magic = TRAILER.unpack_from(mm, size - TRAILER.size)
        if magic != TRAILER_MAGIC or hoff + hlen != size - TRAILER.size or hoff < PREAMBLE:
            raise BadIndex(f"{path.name}: bad trailer")
        raw = mm[hoff: hoff + hlen]
        if zlib.crc32(raw) != hcrc or hcrc != expect["hcrc"]:
            raise BadIndex(f"{path.name}: header checksum mismatch")
        try:
            h = orjson.loads(raw)
            rows = h["rows"]
            ok = (h["v"] == INDEX_VERSION and h["root"] == root and h["dim"] == DIM and rows == expect["rows"]
                  and h["hash"] == scoring.STABLE_HASH_NAME and h["token_hash"] == TOKEN_HASH_NAME
                  and isinstance(h["convs"], list) and all(isinstance(c, str) for c in h["convs"]))
        except (orjson.JSONDecodeError, KeyError, TypeError):
            ok = False
        if not ok:
            raise BadIndex(f"{path.name}: header of another version, root or hash")
        arrays = {}
        dims = {}
        try:
            for name, (dtype, shape_rule) in SECTIONS.items():
                off, nbytes, dt, shape, _crc = h["sections"][name]
                dt = meta_dtype() if name == "meta" and dt == "meta" else np.dtype(dt)
                if dtype is not None and dt != np.dtype(dtype):
                    raise BadIndex(f"{path.name}: section {name} has dtype {dt}")
                if not (isinstance(off, int) and isinstance(nbytes, int) and PREAMBLE <= off and off + nbytes <= hoff):
                    raise BadIndex(f"{path.name}: section {name} out of bounds")
                if not isinstance(shape, list) or math.prod(shape) * dt.itemsize != nbytes:
                    raise BadIndex(f"{path.name}: section {name} has the wrong size")
                for want, got in zip(shape_rule, shape):
                    if isinstance(want, int):
                        ok = want == got
                    elif want == "R":
                        ok = got == rows
                    elif want == "R+1":
                        ok = got == rows + 1
                    else:  # K, K+1, P are shared by the token sections; B is each blob's own
                        ok = dims.setdefault(want if want != "B" else name, got) == got
                    if not ok or len(shape) != len(shape_rule):
                        raise BadIndex(f"{path.name}: section {name} has shape {shape}")
                arrays[name] = np.frombuffer(mm, dtype=dt, count=math.prod(shape), offset=off).reshape(shape)
                if name in ("text", "ltext", "ref"):
                    arrays["_base_" + name] = off
        except (KeyError, TypeError, ValueError) as exc:
            raise BadIndex(f"{path.name}: bad section table ({exc})") from None
        if dims.get("K+1", 0) != dims.get("K", 0) + 1 and "K" in dims:
            raise BadIndex(f"{path.name}: token table sizes disagree")
        seg = cls(path.name, rows, h["convs"], arrays)
        seg.header = h
        seg.mm = mm
        for k in ("text", "ltext", "ref"):
            seg.bufs[k] = (mm, arrays.pop("_base_" + k))
        seg._check_cheap()
        return seg

    def _check_cheap(self) -> None:
        """Structural checks cheap enough for every open (offsets, pointers, codes in range)."""
        np = _np()
        a = self.a
        for k in ("text", "ltext", "ref"):
            off = a[k + "_off"]
            if off[0] != 0 or off[-1] != len(a[k]) or (len(off) > 1 and np.any(off[1:] < off[:-1])):
                raise BadIndex(f"{self.name}: {k} offsets are not consistent")
        ptr = a["tok_ptr"]
        if ptr[0] != 0 or ptr[-1] != len(a["tok_rows"]) or (len(ptr) > 1 and np.any(ptr[1:] < ptr[:-1])):
            raise BadIndex(f"{self.name}: token pointers are not consistent")
        # codes (kind, role, content type, conversation) are checked where a row is used: Segment.row

    def verify(self) -> list[str]:
        """Every section's crc32 against the header (reads every byte)."""
        problems = []
        view = memoryview(self.mm)
        try:
            for name, (off, nbytes, _dt, _shape, crc) in self.header["sections"].items():
                if zlib.crc32(view[off: off + nbytes]) != crc:
                    problems.append(f"{self.name}: section {name} does not match its checksum")
        finally:
            view.release()
        return problems


# ---------------------------------------------------------------------------------------------
# The manifest


def write_manifest_bytes(path: Path, body: dict, version: int = INDEX_VERSION) -> None:
    """Write a manifest body (the on-disk, columnar form) atomically."""
    data = orjson.dumps(body)
    fsafe.write_atomic(path, MANIFEST_MAGIC + struct.pack("<II", version, zlib.crc32(data)) + data)


_HEAD = ("v", "root", "store", "hash", "token_hash", "dim", "created", "updated")
_SRC_COLS = ("keys", "kinds", "convs", "sigs", "segs", "start", "end")


def encode_manifest(man: dict) -> dict:
    """The in-memory manifest (``sources``: key -> dict, ``convs``: id -> info) in its on-disk form:
    one list per field, which parses several times faster than one object per source."""
    names = {s["name"]: i for i, s in enumerate(man["segments"])}
    src = {c: [] for c in _SRC_COLS}
    findings, infos = {}, {}
    for i, (key, e) in enumerate(man["sources"].items()):
        src["keys"].append(key)
        src["kinds"].append(e["kind"])
        src["convs"].append(e["conv"])
        src["sigs"].append(e["sig"])
        src["segs"].append(names.get(e["seg"], -1))
        src["start"].append(e["start"])
        src["end"].append(e["end"])
        if e["findings"]:
            findings[str(i)] = e["findings"]
        if e["infos"]:
            infos[str(i)] = e["infos"]
    src["findings"] = findings
    src["infos"] = infos
    convs = list(man["convs"].values())
    body = {k: man.get(k) for k in _HEAD}
    body.update(segments=man["segments"], hidden=man["hidden"], src=src, conv={
        "ids": [c["id"] for c in convs], "titles": [c.get("title") for c in convs],
        "topics": [c.get("topic") for c in convs], "topic_names": [c.get("topic_name") for c in convs]})
    return body


class Manifest:
    """A checked manifest: the segment table, and lazy views of the source and conversation tables."""

    def __init__(self, body: dict):
        self.body = body
        self.segments = body["segments"]
        self.hidden = body["hidden"]
        self.src = body["src"]
        self._sources = self._convs = self._sig = None

    def __getitem__(self, k):
        return self.body[k]

    def sig_map(self) -> dict:
        """key -> trusted signature (None: read it again)."""
        if self._sig is None:
            self._sig = dict(zip(self.src["keys"], self.src["sigs"]))
        return self._sig

    def conv_map(self) -> dict:
        return dict(zip(self.src["keys"], self.src["convs"]))

    def sources(self) -> dict:
        """key -> {"kind", "conv", "sig", "seg" (name or None), "start", "end", "findings", "infos"}."""
        if self._sources is None:
            names = [s["name"] for s in self.segments]
            src = self.src
            fnd, inf = src["findings"], src["infos"]
            self._sources = {
                k: {"kind": kind, "conv": conv, "sig": sig, "seg": names[seg] if seg >= 0 else None, "start": a,
                    "end": b, "findings": fnd.get(str(i), []), "infos": inf.get(str(i), [])}
                for i, (k, kind, conv, sig, seg, a, b) in enumerate(zip(*(src[c] for c in _SRC_COLS)))}
        return self._sources

    def convs(self) -> dict:
        if self._convs is None:
            c = self.body["conv"]
            self._convs = {i: {"id": i, "title": t, "topic": tp, "topic_name": tn}
                           for i, t, tp, tn in zip(c["ids"], c["titles"], c["topics"], c["topic_names"])}
        return self._convs

    def title_of(self, cid: str) -> str:
        """The conversation's title; for a shared-topic scope "<topic name> (shared topic)"; else ""."""
        c = self.body["conv"]
        try:  # list.index: a scan in C, cheaper than building a dict for the few titles a search shows
            return c["titles"][c["ids"].index(cid)] or ""
        except ValueError:
            pass
        if cid not in c["topics"]:
            return ""
        names = [n for t, n in zip(c["topics"], c["topic_names"]) if t == cid and n]
        return f"{names[0]} (shared topic)" if names else "(shared topic)"

    def findings(self, scope: set | None = None) -> list[Finding]:
        out = []
        convs = self.src["convs"]
        for i, rows in self.src["findings"].items():
            conv = convs[int(i)]
            if scope is None or conv is None or conv in scope:
                out.extend(Finding(c, p, r, sev or ERROR, cv) for c, p, r, sev, cv in rows)
        return out


_STR, _STR_NONE, _INT = {str}, {str, type(None)}, {int}


def _strs(x, n, none_ok=False) -> bool:
    return isinstance(x, list) and len(x) == n and set(map(type, x)) <= (_STR_NONE if none_ok else _STR)


def _ints(x, n=None) -> bool:
    return isinstance(x, list) and (n is None or len(x) == n) and set(map(type, x)) <= _INT


def read_manifest(path: Path, store) -> Manifest:
    """The manifest, checked field by field; raises BadIndex."""
    try:
        raw = fsafe.read_capped(path, 1 << 31)
    except FileProblem as exc:
        raise BadIndex(f"manifest: {exc.message}") from None
    if len(raw) < 16 or raw[:8] != MANIFEST_MAGIC:
        raise BadIndex("manifest: not a samctl index")
    version, crc = struct.unpack_from("<II", raw, 8)
    if version != INDEX_VERSION:
        raise BadIndex(f"manifest: version {version}, this samctl writes {INDEX_VERSION}")
    body = memoryview(raw)[16:]
    if zlib.crc32(body) != crc:
        raise BadIndex("manifest: checksum mismatch")
    try:
        m = orjson.loads(body)
    except orjson.JSONDecodeError:
        raise BadIndex("manifest: not JSON") from None
    try:
        ok = (isinstance(m, dict) and m["v"] == INDEX_VERSION and m["root"] == store.root_real
              and m["store"] == store.name and m["hash"] == scoring.STABLE_HASH_NAME
              and m["token_hash"] == TOKEN_HASH_NAME and m["dim"] == DIM
              and all(isinstance(m[k], (int, float)) for k in ("created", "updated")))
        if not ok:
            raise BadIndex("manifest: of another version, store, root or hash")
        names = set()
        rows = []
        for s in m["segments"]:
            if not (isinstance(s["name"], str) and _SEG_NAME.match(s["name"]) and type(s["rows"]) is int
                    and type(s["size"]) is int and type(s["hcrc"]) is int and isinstance(s["dead"], list)
                    and all(_ints(d, 2) and 0 <= d[0] <= d[1] <= s["rows"] for d in s["dead"])):
                raise BadIndex("manifest: bad segment entry")
            names.add(s["name"])
            rows.append(s["rows"])
        seg_rows = {s["name"]: s["rows"] for s in m["segments"]}
        for k, v in m["hidden"].items():
            if k not in names or not _ints(v) or not all(0 <= r < seg_rows[k] for r in v):
                raise BadIndex("manifest: bad hidden rows")
        src = m["src"]
        n = len(src["keys"])
        if not (_strs(src["keys"], n) and _strs(src["kinds"], n) and _strs(src["convs"], n, True)
                and _strs(src["sigs"], n, True) and _ints(src["segs"], n) and _ints(src["start"], n)
                and _ints(src["end"], n)):
            raise BadIndex("manifest: bad source table")
        if n:
            np = _np()
            segs = np.array(src["segs"], dtype=np.int64)
            a, b = np.array(src["start"], dtype=np.int64), np.array(src["end"], dtype=np.int64)
            limit = np.array(rows + [0], dtype=np.int64)[segs]  # segs == -1 -> 0 (a source without rows)
            if segs.min() < -1 or segs.max() >= len(rows) or np.any(a < 0) or np.any(a > b) or np.any(b > limit):
                raise BadIndex("manifest: source rows out of range")
        for table, check in ((src["findings"], lambda f: isinstance(f, list) and len(f) == 5 and all(
                isinstance(x, str) or x is None for x in f)), (src["infos"], lambda i: isinstance(i, str))):
            for i, items in table.items():
                if not (i.isdigit() and int(i) < n and isinstance(items, list) and all(map(check, items))):
                    raise BadIndex("manifest: bad source details")
        c = m["conv"]
        k = len(c["ids"])
        if not (_strs(c["ids"], k) and _strs(c["titles"], k, True) and _strs(c["topics"], k, True)
                and _strs(c["topic_names"], k, True)):
            raise BadIndex("manifest: bad conversation table")
    except (KeyError, TypeError, AttributeError, ValueError, OverflowError):
        raise BadIndex("manifest: missing or mistyped fields") from None
    return Manifest(m)


# ---------------------------------------------------------------------------------------------
# The opened index


class Index:
    """Segments with their alive masks, and the manifest (sources, conversation titles).

    ``read``/``removed``: source keys read again / dropped by the refresh that produced it;
    ``rebuilt``: it was built from nothing (no index, or one that could not be trusted).
    """

    def __init__(self, manifest: Manifest, segments: list[Segment], path: Path | None = None):
        np = _np()
        self.manifest = manifest
        self.segments = segments
        self.path = path
        self.read: list[str] = []
        self.removed: list[str] = []
        self.rebuilt = False
        dead = {s["name"]: s["dead"] for s in manifest.segments}
        for seg in segments:
            alive = np.ones(seg.rows, dtype=bool)
            for a, b in dead.get(seg.name, ()):
                alive[a:b] = False
            h = manifest.hidden.get(seg.name)
            if h:
                alive[np.asarray(h, dtype=np.int64)] = False
            seg.alive = alive
        self.rows = int(sum(int(s.alive.sum()) for s in segments))

    def title_of(self, cid: str) -> str:
        return self.manifest.title_of(cid)

    def findings(self, scope: set | None = None) -> list[Finding]:
        return self.manifest.findings(scope)


def _open_segments(d: Path, manifest: Manifest, root: str) -> list[Segment]:
    return [Segment.open(d / s["name"], root, s) for s in manifest.segments]


def open_index(store) -> Index:
    """The index as it is on disk (not refreshed); raises BadIndex."""
    d = index_dir(store)
    for attempt in range(2):
        m = read_manifest(d / "manifest", store)
        try:
            return Index(m, _open_segments(d, m, store.root_real), d)
        except BadIndex:
            if attempt:
                raise
            # a refresh may have replaced the manifest and removed the segments it named
            continue
    raise BadIndex("unreachable")  # pragma: no cover


def _try_open(store) -> Index | None:
    try:
        return open_index(store)
    except BadIndex:
        return None


def _stale(manifest: Manifest | None, current: dict[str, Source], scope: set | None):
    """(keys to read again, keys to drop) for the sources in scope."""
    known = manifest.sig_map() if manifest else {}
    changed = [k for k, s in current.items() if (sig := known.get(k)) is None or sig != s.sig]
    if scope is None:
        removed = [k for k in known if k not in current]
    else:
        convs = manifest.conv_map() if manifest else {}
        removed = [k for k, c in convs.items() if k not in current and (c is None or c in scope)]
    return changed, removed


@contextlib.contextmanager
def _writer_lock(d: Path, wait: float = LOCK_WAIT, progress=None):
    fd = os.open(d / "lock", os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        deadline = time.monotonic() + wait
        told = False
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise BadIndex("another samctl has been refreshing the index for too long") from None
                if progress is not None and not told:
                    progress.note("waiting for another samctl that is updating the index")
                    told = True
                time.sleep(0.05)
        yield
    finally:
        os.close(fd)


def _new_segment_path(d: Path) -> Path:
    return d / f"seg-{secrets.token_hex(12)}.seg"


def _finding_rows(findings: list) -> list:
    return [[f.code, f.path, f.reason, f.severity, f.conversation] for f in findings]


def refresh(store, findings: list, *, scope: set | None = None, rebuild: bool = False, progress=None,
            jobs: int | None = None) -> Index:
    """The store's index, brought up to date for ``scope`` (all sources when None).

    Appends discovery findings and the findings of every source in scope (stored with the index,
    so an unchanged bad file is still reported) to ``findings``.  Raises BadIndex only when the
    index cannot be written (the caller then searches without it).
    """
    disc: list = []
    current = discover(store, disc, scope)
    findings.extend(disc)
    idx = None if rebuild else _try_open(store)
    if idx is not None:
        changed, removed = _stale(idx.manifest, current, scope)
        if not changed and not removed:
            findings.extend(idx.findings(scope))
            return idx
    d = index_dir(store)
    try:
        fsafe.make_private_dir(d)
        with _writer_lock(d, progress=progress):
            idx = None if rebuild else _try_open(store)
            changed, removed = _stale(idx.manifest if idx else None, current, scope)
            if idx is None or changed or removed:
                _update(store, d, idx, current, changed, removed, progress, jobs)
            new = open_index(store)
    except OSError as exc:
        raise BadIndex(f"cannot write the index in {d}: {exc.strerror or exc}") from None
    new.read = sorted(changed)
    new.removed = sorted(removed)
    new.rebuilt = idx is None
    findings.extend(new.findings(scope))
    return new


def _update(store, d: Path, idx: Index | None, current: dict, changed: list, removed: list, progress, jobs) -> None:
    now = time.time()
    root = store.root_real
    if idx is None:
        man = {"v": INDEX_VERSION, "root": root, "store": store.name, "hash": scoring.STABLE_HASH_NAME,
               "token_hash": TOKEN_HASH_NAME, "dim": DIM, "created": now, "updated": now, "segments": [],
               "hidden": {}, "sources": {}, "convs": {}}
        segs: dict[str, Segment] = {}
    else:
        old_man = idx.manifest
        man = {k: old_man.body[k] for k in _HEAD}
        man["segments"] = [dict(s, dead=[list(x) for x in s["dead"]]) for s in old_man.segments]
        man["hidden"] = {}
        man["sources"] = dict(old_man.sources())
        man["convs"] = dict(old_man.convs())
        segs = {s.name: s for s in idx.segments}
    seg_by_name = {s["name"]: s for s in man["segments"]}
    for k in list(changed) + list(removed):
        old = man["sources"].pop(k, None)
        if old is None:
            continue
        if old["seg"] is not None and old["end"] > old["start"]:
            seg_by_name[old["seg"]]["dead"].append([old["start"], old["end"]])
        for cid in old["infos"]:
            man["convs"].pop(cid, None)
    if changed:
        todo = [current[k] for k in changed]
        w = SegmentWriter(root, _new_segment_path(d))
        try:
            entries = {}
            for chunk in _read_all(store, todo, progress, jobs):
                start = w.add_chunk(chunk)
                for key, n, fnd, infos in zip(chunk.keys, chunk.counts, chunk.findings, chunk.infos):
                    src = current[key]
                    transient = any(f.code in TRANSIENT_CODES for f in fnd)
                    entries[key] = {"kind": src.kind, "conv": src.conv,
                                    "sig": src.sig if src.trusted and not transient else None,
                                    "seg": w.path.name, "start": start, "end": start + n,
                                    "findings": _finding_rows(fnd), "infos": [i["id"] for i in infos]}
                    for info in infos:
                        man["convs"][info["id"]] = info
                    start += n
            info = w.finish()
        except BaseException:
            w.discard()
            raise
        if info["rows"]:
            man["segments"].append(info)
            seg_by_name[info["name"]] = info
        else:
            fsafe.discard_temp(d / info["name"])
        for key, e in entries.items():
            if not info["rows"]:
                e["seg"], e["start"], e["end"] = None, 0, 0
            elif e["end"] == e["start"]:
                e["seg"] = None
            man["sources"][key] = e
    for s in man["segments"]:
        s["dead"] = _merge_ranges(s["dead"])
    man["segments"] = [s for s in man["segments"] if _dead_count(s) < s["rows"]]
    live = {s["name"] for s in man["segments"]}
    for e in man["sources"].values():
        if e["seg"] not in live:
            e["seg"], e["start"], e["end"] = None, 0, 0
    opened = [segs.get(s["name"]) or Segment.open(d / s["name"], root, s) for s in man["segments"]]
    total = sum(s["rows"] for s in man["segments"])
    dead = sum(_dead_count(s) for s in man["segments"])
    if total and dead > DEAD_FRACTION * total:
        man, opened = _compact(d, root, man, opened, {s["name"] for s in man["segments"]})
    elif len(man["segments"]) > MAX_SEGMENTS:
        # merge the small segments the refreshes left; the big one is rewritten only when it has
        # accumulated enough dead rows (above), so a search never pays for the whole index
        biggest = max(man["segments"], key=lambda s: s["rows"])["name"]
        man, opened = _compact(d, root, man, opened, {s["name"] for s in man["segments"]} - {biggest})
    man["hidden"] = _hidden(man, opened)
    man["updated"] = now
    write_manifest_bytes(d / "manifest", encode_manifest(man))
    _gc(d, {s["name"] for s in man["segments"]})


def _merge_ranges(ranges: list) -> list:
    out: list = []
    for a, b in sorted(ranges):
        if out and a <= out[-1][1]:
            out[-1][1] = max(out[-1][1], b)
        else:
            out.append([a, b])
    return out


def _dead_count(s: dict) -> int:
    return sum(b - a for a, b in s["dead"])


def _alive(seg: Segment, entry: dict):
    np = _np()
    alive = np.ones(seg.rows, dtype=bool)
    for a, b in entry["dead"]:
        alive[a:b] = False
    return alive


def _compact(d: Path, root: str, man: dict, opened: list[Segment], names: set):
    """Merge the alive rows of the segments in ``names`` into one new segment (the others stay as
    they are); the sources in them are renumbered."""
    np = _np()
    w = SegmentWriter(root, _new_segment_path(d))
    remap = {}
    try:
        for entry, seg in zip(man["segments"], opened):
            if entry["name"] not in names:
                continue
            alive = _alive(seg, entry)
            new_row = np.cumsum(alive, dtype=np.int64) - 1 + w.rows
            remap[seg.name] = new_row
            conv_map = w.conv_map(seg.convs)
            idx = np.flatnonzero(alive)
            if not len(idx):
                continue
            # runs of alive rows: contiguous in every section
            breaks = np.flatnonzero(np.diff(idx) != 1)
            starts = np.concatenate(([idx[0]], idx[breaks + 1]))
            ends = np.concatenate((idx[breaks] + 1, [idx[-1] + 1]))
            for a, b in zip(starts.tolist(), ends.tolist()):
                blobs, lens = {}, {}
                for k in ("text", "ltext", "ref"):
                    off = seg.a[k + "_off"]
                    buf, base = seg.bufs[k]
                    blobs[k] = buf[base + int(off[a]): base + int(off[b])]
                    lens[k] = np.diff(off[a: b + 1])
                w.add_rows(seg.meta[a:b], seg.vectors[a:b], conv_map, blobs, lens)
            rows = seg.tok_rows.astype(np.int64)
            keys = np.repeat(seg.tok_keys, np.diff(seg.tok_ptr))
            keep = alive[rows]
            w.add_postings(keys[keep], new_row[rows[keep]])
        info = w.finish()
    except BaseException:
        w.discard()
        raise
    for e in man["sources"].values():
        if e["seg"] in remap:
            if info["rows"]:
                first = int(remap[e["seg"]][e["start"]])
                e["start"], e["end"], e["seg"] = first, first + (e["end"] - e["start"]), info["name"]
            else:
                e["seg"], e["start"], e["end"] = None, 0, 0
    kept = [(e, s) for e, s in zip(man["segments"], opened) if e["name"] not in names]
    man["segments"] = [e for e, _ in kept]
    opened = [s for _, s in kept]
    if info["rows"]:
        man["segments"].append(info)
        opened.append(Segment.open(d / info["name"], root, info))
    else:
        fsafe.discard_temp(d / info["name"])
    return man, opened


def _hidden(man: dict, opened: list[Segment]) -> dict:
    """Archived copies of messages that the conversation still has: rows to hide, per segment."""
    np = _np()
    per = []
    for entry, seg in zip(man["segments"], opened):
        alive = _alive(seg, entry)
        kind = seg.meta["kind"]
        per.append((entry["name"], seg, alive, kind))
    if not any(np.any(k == ARCHIVED) for _, _, _, k in per):
        return {}
    keys = np.unique(np.concatenate([seg.meta["dkey"][alive & (kind == MESSAGE)] for _, seg, alive, kind in per]))
    out = {}
    for name, seg, alive, kind in per:
        rows = np.flatnonzero(alive & (kind == ARCHIVED))
        dup = rows[np.isin(seg.meta["dkey"][rows], keys)]
        if len(dup):
            out[name] = dup.tolist()
    return out


def _gc(d: Path, keep: set) -> None:
    """Remove segments the manifest no longer names and temps of dead writers (we hold the lock)."""
    try:
        names = os.listdir(d)
    except OSError:
        return
    for n in names:
        if (n.endswith(".seg") and n not in keep) or (n.startswith(".seg-") and n.endswith(".tmp")) or \
                (n.startswith(".manifest.") and n.endswith(".tmp")):
            try:
                os.unlink(d / n)
            except OSError:
                pass


# ---------------------------------------------------------------------------------------------
# Without an index: the same rows, in memory


def build_in_memory(store, findings: list, scope: set | None = None, progress=None) -> Index:
    """An Index of the sources in ``scope`` that lives only in memory (``--no-index``)."""
    disc: list = []
    current = discover(store, disc, scope)
    findings.extend(disc)
    w = SegmentWriter(store.root_real)
    sources = {}
    convs = {}
    for chunk in _read_all(store, list(current.values()), progress):
        start = w.add_chunk(chunk)
        for key, n, fnd, infos in zip(chunk.keys, chunk.counts, chunk.findings, chunk.infos):
            sources[key] = {"kind": current[key].kind, "conv": current[key].conv, "sig": None, "seg": "(memory)",
                            "start": start, "end": start + n, "findings": _finding_rows(fnd),
                            "infos": [i["id"] for i in infos]}
            for info in infos:
                convs[info["id"]] = info
            start += n
    seg = w.finish()
    man = {"segments": [{"name": seg.name, "rows": seg.rows, "dead": []}], "sources": sources, "convs": convs,
           "hidden": {}}
    man["hidden"] = _hidden(man, [seg])
    idx = Index(Manifest(encode_manifest(man)), [seg])
    findings.extend(idx.findings(scope))
    return idx


def invalidate(store) -> None:
    """Drop the index (its manifest; the segments go with the next refresh's clean-up)."""
    d = index_dir(store)
    if not (d / "manifest").exists():
        return
    with _writer_lock(d):
        try:
            os.unlink(d / "manifest")
        except FileNotFoundError:
            pass
        _gc(d, set())


# ---------------------------------------------------------------------------------------------
# State (samctl index)


def state(store, verify: bool = True) -> dict:
    """What ``samctl index`` shows: where the index is, whether it can be used, its rows, files,
    size, age, and which sources changed since it was updated."""
    d = index_dir(store)
    out = {"path": str(d), "store": store.name, "root": store.root_real, "exists": (d / "manifest").exists(),
           "valid": False, "problems": [], "segments": 0, "rows": {k: 0 for k in KINDS}, "dead": 0, "files": 0,
           "files_with_findings": 0, "size": 0, "created": None, "updated": None, "age": None, "stale": []}
    try:
        out["size"] = sum(os.lstat(d / n).st_size for n in os.listdir(d))
    except OSError:
        pass
    if not out["exists"]:
        return out
    try:
        idx = open_index(store)
    except BadIndex as exc:
        out["problems"].append(str(exc))
        return out
    m = idx.manifest
    problems = []
    if verify:
        for seg in idx.segments:
            problems += seg.verify()
    np = _np()
    for seg in idx.segments:
        counts = np.bincount(seg.meta["kind"][seg.alive], minlength=3)
        for k, name in enumerate(KINDS):
            out["rows"][name] += int(counts[k])
        out["dead"] += int(seg.rows - seg.alive.sum())
    out.update(valid=not problems, problems=problems, segments=len(idx.segments), created=m["created"],
               updated=m["updated"], age=max(0.0, time.time() - m["updated"]))
    out["files"] = sum(1 if sig is None else sum(part != "-" for part in sig.split("|")) for sig in m.src["sigs"])
    out["files_with_findings"] = len(m.src["findings"])
    current = discover(store, [])
    changed, removed = _stale(m, current, None)
    for k in changed:
        known = m.sig_map()
        reason = "new" if k not in known else ("unsettled: changed moments before indexing, or unreadable"
                                                if known[k] is None else "changed")
        out["stale"].append({"key": k, "reason": reason})
    out["stale"] += [{"key": k, "reason": "removed"} for k in removed]
    return out
