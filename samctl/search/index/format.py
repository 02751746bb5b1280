"""The index's vocabulary on disk: where it lives, version and magic numbers, the row codes, the
per-row ``meta`` record, the segment sections, and the two 64-bit keys stored in segments.

Any change here (codes, record layout, sections, hashes) changes the on-disk format and needs a new
``INDEX_VERSION``; numpy is imported only inside functions.

Design notes: docs/search-index.md, "search/index/format.py".
"""

from __future__ import annotations

import functools
import hashlib
import mmap
import os
import re
import stat
import struct
import zlib
from pathlib import Path

from samctl.fs import reading, userdirs
from samctl.search import text

INDEX_VERSION = 10  # 2: a crc32 per row; 3: lowered text NFC-normalised; 4: BM25 postings, no vectors;
# 5: the manifest's tables checked when used, its conversations in buckets; 6: a row's folded text kept
# only where it is not ``lower_ascii`` of its text, a posting's count in a byte and its row in two;
# 7: samctl's own markers of a conversation's shape (Claude Code side branches, Codex rollbacks) no rows;
# each conversation's length in terms and count of messages kept per segment (c_len, c_msgs); 8: a
# message's tool calls rows of their own (kind "call", after the source's other rows); 9: each
# conversation's folded title kept in the manifest (its "conv" table's column "folded"); 10: each row's
# copy key (``copy_key``) in its meta record and a column of its own, "r_copy"
MANIFEST_MAGIC = b"SAMCTLIX"
SEGMENT_MAGIC = b"SAMCTLSG"
TRAILER_MAGIC = b"SGTRAIL1"
PREAMBLE = 64
ALIGN = 64
TRAILER = struct.Struct("<QII8s")
TOKEN_HASH_NAME = "blake2b-64"
TERMS_NAME = text.TERMS_NAME  # the tokenizer: other terms, another index

KINDS = ("memory", "message", "archived", "call")
FLAG_BASE_DB = 1  # meta flags: the row comes from the legacy BASE/memory.db
MEMORY, MESSAGE, ARCHIVED, CALL = 0, 1, 2, 3  # CALL: a message's tool call (``search.calls.call_text``)
ROLES = ("", "user", "assistant", "tool", "reasoning", "system")
CTYPES = ("", "message", "user_input", "assistant_response", "system_event", "tool_result", "context_info", "document")
META_FIELDS = [
    ("kind", "u1"),
    ("role", "u1"),
    ("ctype", "u1"),
    ("flags", "u1"),
    ("conv", "<i4"),
    ("pos", "<i8"),
    ("date", "<f8"),
    ("imp", "<f8"),
    ("ntok", "<u4"),
    ("dim", "<i4"),
    ("dkey", "<u8"),
    ("crc", "<u4"),
    ("copy", "<u8"),
]
# section name -> (dtype, shape rule); shape rules use R (rows), K (keys), P (postings), X (postings
# counted 255 or more), B (bytes)
SECTIONS = {
    "meta": (None, ("R",)),
    "text_off": ("<i8", ("R+1",)),
    "text": ("|u1", ("B",)),
    "ltext_off": ("<i8", ("R+1",)),
    "ltext": ("|u1", ("B",)),  # a row's folded text, or nothing where it is ``lower_ascii`` of its text
    "ref_off": ("<i8", ("R+1",)),
    "ref": ("|u1", ("B",)),
    # postings grouped by (term key, block of 65,536 rows): a key has one group per block it is in
    "tok_keys": ("<u8", ("K",)),
    "tok_blk": ("<u2", ("K",)),
    "tok_ptr": ("<i8", ("K+1",)),
    "tok_rows": ("<u2", ("P",)),  # a posting's row, less its group's block * 65,536
    "tok_tf": ("|u1", ("P",)),  # a posting's count, 255 for 255 or more: then in tok_bigtf
    "tok_bigp": ("<i8", ("X",)),  # the postings counted 255 or more, ascending
    "tok_bigtf": ("<u2", ("X",)),  # their counts
    "voc": ("|u1", ("B",)),
    "convs": ("|u1", ("B",)),  # the conversation ids, a JSON list (decoded only when a query needs them)
    # what ranking reads of every row, each column contiguous (the meta records are 60 bytes apart:
    # reading one of their fields for a million rows reads all of them)
    "r_len": ("<u4", ("R",)),
    "r_conv": ("<i4", ("R",)),
    "r_kind": ("|u1", ("R",)),
    "r_role": ("|u1", ("R",)),
    "r_copy": ("<u8", ("R",)),  # ``copy_key``: rows of one key are copies of one message (search shows one)
    # per conversation of the segment (as ``convs`` numbers them): its message rows' terms summed (BM25's
    # length of the conversation as one document) and how many message rows it has, as written (a
    # search recounts a segment some of whose rows died since)
    "c_len": ("<f8", ("C",)),
    "c_msgs": ("<u4", ("C",)),
}
SEG_NAME = re.compile(r"seg-[0-9a-f]{8,40}\.seg\Z")


class BadIndex(Exception):
    """The index on disk cannot be used (the message says why); it will be rebuilt."""


def open_mapped(path: Path, label: str, size_problem) -> tuple:
    """(a read-only descriptor, a read-only map) of the index file ``path``; BadIndex "``label``: why"
    when it cannot be opened or mapped, is not a regular file, or ``size_problem(size)`` says what is
    wrong with its size (None: nothing).  The caller keeps or closes the descriptor."""
    try:
        fd = reading.open_read_fd(path)
    except OSError as exc:
        raise BadIndex(f"{label}: {exc.strerror or exc}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise BadIndex(f"{label}: not a regular file")
        why = size_problem(st.st_size)
        if why:
            raise BadIndex(f"{label}: {why}")
        try:
            return fd, mmap.mmap(fd, 0, access=mmap.ACCESS_READ)
        except (OSError, ValueError) as exc:
            raise BadIndex(f"{label}: {exc}") from None
    except BaseException:
        os.close(fd)
        raise


def load_numpy():
    import numpy as np  # (lazy: numpy: slow to import)

    return np


@functools.cache  # (a structured dtype takes 20 us to make: once, not per segment opened)
def meta_dtype():
    return load_numpy().dtype(META_FIELDS)


def index_dir(store) -> Path:
    key = hashlib.sha256(store.root_real.encode("utf-8", "surrogateescape")).hexdigest()[:24]
    return userdirs.cache_dir() / f"search-{store.name}-{key}"


def home_problem(d: Path) -> str | None:
    """Why the index folder ``d`` in the cache is not samctl's own (a symlink, another user's, open to
    others' writes: ``userdirs.own_folder_problem``), or None.  Such a folder is never read, written or
    cleaned: what a link leads to may be an app's folder, and its ``*.seg`` files are not samctl's."""
    return userdirs.own_folder_problem(userdirs.cache_dir(), d)


def term_key_of(tok: str) -> int:
    """The 64-bit key a term's postings are filed under."""
    return int.from_bytes(hashlib.blake2b(tok.encode("utf-8", "surrogatepass"), digest_size=8).digest(), "little")


@functools.lru_cache(maxsize=1 << 12)
def token_key(tok: str) -> int:
    """``term_key_of``, memoised for the queries of a process."""
    return term_key_of(tok)


def encode_text(s: str) -> bytes:
    return s.encode("utf-8", "surrogatepass")


def lower_ascii(b):
    """``b`` (bytes or bytearray) with its ASCII capitals lowered, every other byte as it is
    (``bytes.lower``): the folded form (``sam_scoring.fold``) of an ASCII text's UTF-8, and of most
    others' (a row's section ``ltext`` holds its folded form only where this is not it)."""
    return b.lower()


def row_crc(
    conv: str,
    kind: int,
    role: int,
    ctype: int,
    flags: int,
    pos: int,
    date: float,
    imp: float,
    dim: int,
    text: bytes,
    ltext: bytes,
    ref: bytes,
) -> int:
    """The crc32 of what a search shows of a row: its conversation (the id, not the segment's index
    of it, so a compaction that renumbers keeps it), codes, position, date, importance, and the
    bytes of its text, lowered text and id.  A search checks it for every row it returns: a
    flipped byte there is caught where it would be shown (``samctl index`` checks every byte)."""
    return zlib.crc32(
        ref,
        zlib.crc32(
            ltext,
            zlib.crc32(text, row_crc_head(conv, kind, role, ctype, flags, pos, date, imp, dim, len(text), len(ltext))),
        ),
    )


def row_crc_head(conv, kind, role, ctype, flags, pos, date, imp, dim, ntext: int, nltext: int) -> int:
    """``row_crc`` up to the text: the crc32 of what precedes the blobs (so a caller can go on with
    the blobs read in place)."""
    return zlib.crc32(f"{conv}|{kind}|{role}|{ctype}|{flags}|{pos}|{date!r}|{imp!r}|{dim}|{ntext}|{nltext}|".encode())


def copy_key(kind: int, conv: str, pos: int, ref: bytes, text: bytes = b"") -> int:
    """What makes two rows of a store copies of one message (a resumed Claude Code session holds the
    earlier history again, with the same ids): its kind and id (``ref``), or where it is when it has no
    id, and a call's text too (a message's calls share its place): ``grouped.key``'s fields but the store,
    as a blake2b-64 key like a term's (two messages sharing one are as unlikely as two terms doing so; a
    search shows one of them)."""
    if ref:
        h = hashlib.blake2b(b"%dr" % kind, digest_size=8)
        h.update(ref)
    else:
        h = hashlib.blake2b(b"%dp%d:" % (kind, pos), digest_size=8)
        h.update(encode_text(conv))
        if kind == CALL:
            h.update(b"\0")
            h.update(text)
    return int.from_bytes(h.digest(), "little")


def dedupe_key(conv: str, text: str, encoded: bytes | None = None) -> int:
    """The key of conversation + NUL + text; ``encoded``, if given, is ``encode_text(text)`` (no second copy
    of a long text is made)."""
    h = hashlib.blake2b(encode_text(conv + "\0"), digest_size=8)
    h.update(encode_text(text) if encoded is None else encoded)
    return int.from_bytes(h.digest(), "little")
