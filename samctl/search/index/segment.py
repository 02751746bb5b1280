"""Segments: immutable files of rows and everything a query needs about them.

Written to a temp sibling, fsynced and renamed, never changed after; ``Segment.open`` checks every size,
bound and crc32 and raises BadIndex.

Design notes: docs/search-index.md, "search/index/segment.py".
"""

from __future__ import annotations

import math
import os
import struct
import weakref
import zlib
from pathlib import Path
from typing import TYPE_CHECKING

import orjson

from samctl.fs import writing
from samctl.search.index.format import (
    ALIGN,
    CTYPES,
    INDEX_VERSION,
    KINDS,
    MESSAGE,
    PREAMBLE,
    ROLES,
    SECTIONS,
    SEGMENT_MAGIC,
    TERMS_NAME,
    TOKEN_HASH_NAME,
    TRAILER,
    TRAILER_MAGIC,
    BadIndex,
    load_numpy,
    meta_dtype,
    open_mapped,
)

if TYPE_CHECKING:
    from samctl.search.index.rows import Chunk


BLOCK_BITS = 16  # a posting's row is stored as its low 16 bits; the rest is its group's block
BIG_TF = 255  # a posting counted this many times or more has its count in tok_bigtf
ROW_BYTES = 60 + 3 * 8  # what a row costs a segment besides its blobs and postings: meta, offsets
POSTING_BYTES = 8 + 4 + 2  # a term key, a row and a count, before they are grouped


class SegmentWriter:
    """Builds one segment, streamed to ``path`` (or kept in memory when ``path`` is None).

    Everything (meta, blobs, postings, terms) is held until ``finish``: what the writer holds grows
    with ``estimate()``, which callers bound.
    """

    def __init__(self, root: str, path: Path | None = None, name: str = "(memory)"):
        np = load_numpy()
        self.np = np
        self.root = root
        self.path = path
        self.name = path.name if path is not None else name
        self.rows = 0
        self.held = 0  # bytes of blobs and postings added (what ``estimate`` counts besides the rows)
        self.conv_index: dict[str, int] = {}
        self.metas: list = []
        self.blobs = {"text": [], "ltext": [], "ref": []}
        self.lens = {"text": [], "ltext": [], "ref": []}
        self.tok_hash: list = []
        self.tok_row: list = []
        self.tok_tf: list = []
        self.vocab: set = set()
        self.crc: dict[str, int] = {}
        self.tmp = self.f = None
        if path is not None:
            self.tmp, self.f = writing.create_temp(path)
            self.f.write(SEGMENT_MAGIC + struct.pack("<I", INDEX_VERSION) + b"\0" * (PREAMBLE - 12))
            self.pos = PREAMBLE

    def discard(self) -> None:
        if self.f is not None:
            self.f.close()
            writing.discard_temp(self.tmp)
            self.f = None

    def conv_map(self, names: list):
        """Array mapping a chunk's or segment's conversation indexes to this segment's."""
        np = self.np
        return np.array([self.conv_index.setdefault(c, len(self.conv_index)) for c in names] or [0], dtype=np.int32)

    def add_rows(self, meta, conv_map, blobs: dict, lens: dict) -> int:
        """Append rows; ``conv_map[meta['conv']]`` is their conversation here.  Returns the first new row."""
        start = self.rows
        m = meta.copy()
        if len(m):
            m["conv"] = conv_map[m["conv"]]
        self.metas.append(m)
        for k in ("text", "ltext", "ref"):
            b = blobs[k] if type(blobs[k]) in (bytes, bytearray) else bytes(blobs[k])  # (a chunk's: not copied)
            self.blobs[k].append(b)
            self.held += len(b)
            self.lens[k].append(self.np.asarray(lens[k], dtype=self.np.int64))
        self.rows += len(m)
        return start

    def add_postings(self, hashes, rows, tfs, vocab) -> None:
        """Postings (term key, row, count) of rows added in row order; ``vocab``: their terms."""
        self.tok_hash.append(self.np.asarray(hashes, dtype=self.np.uint64))
        self.tok_row.append(self.np.asarray(rows, dtype=self.np.int32))
        self.tok_tf.append(self.np.asarray(tfs, dtype=self.np.uint16))
        self.held += POSTING_BYTES * len(self.tok_row[-1])
        self.add_terms(vocab)

    def add_terms(self, vocab) -> None:
        """Terms of the segment's vocabulary (``prefix*`` looks them up; one with no posting is harmless)."""
        before = len(self.vocab)
        self.vocab.update(vocab)
        self.held += 16 * (len(self.vocab) - before)

    def estimate(self) -> int:
        """About the size of the segment file if it were finished now (a posting counted before
        it is grouped under its key)."""
        return PREAMBLE + self.rows * ROW_BYTES + self.held

    def add_chunk(self, c: Chunk) -> int:
        start = self.add_rows(
            c.meta,
            self.conv_map(c.conv_names),
            {"text": c.text, "ltext": c.ltext, "ref": c.ref},
            {"text": c.text_len, "ltext": c.ltext_len, "ref": c.ref_len},
        )
        self.add_postings(c.tok_hash, c.tok_row.astype(self.np.int64) + start, c.tok_tf, c.vocab)
        return start

    def _joined(self, name: str, dtype):
        """The arrays of the list ``name`` end to end; the list is emptied (its pieces not held twice)."""
        parts = getattr(self, name)
        setattr(self, name, [])
        return self.np.concatenate(parts) if parts else self.np.zeros(0, dtype=dtype)

    def _sections(self) -> dict:
        np = self.np
        out = {}
        out["meta"] = np.concatenate(self.metas) if self.metas else np.zeros(0, dtype=meta_dtype())
        for k in ("text", "ltext", "ref"):
            lens = np.concatenate(self.lens[k]) if self.lens[k] else np.zeros(0, dtype=np.int64)
            off = np.zeros(len(lens) + 1, dtype=np.int64)
            np.cumsum(lens, out=off[1:])
            out[k + "_off"] = off
            if self.f is None:
                pieces = self.blobs[k]  # (one piece, a chunk's bytearray: itself, not a copy)
                joined = self.blobs[k] = pieces[0] if len(pieces) == 1 else b"".join(pieces)
                out[k] = np.frombuffer(joined, dtype=np.uint8)
            # (on disk, ``finish`` writes the pieces as they are: no second copy of every text)
        # The postings, sorted by key, held as few times as can be (a segment's peak in memory is here):
        # each list of chunks is let go once joined, each array once gathered in key order.
        order = np.argsort(h := self._joined("tok_hash", np.uint64), kind="stable")  # (stable: a term's rows
        hs = h[order]  # stay ascending, as they were added; chunks come sorted by key: runs to merge)
        del h
        r = self._joined("tok_row", np.int32)[order]
        t = self._joined("tok_tf", np.uint16)[order]
        del order
        blk = r >> BLOCK_BITS
        out["tok_rows"] = r.astype(np.uint16)  # (its low 16 bits)
        del r
        out["tok_bigp"] = np.flatnonzero(t >= BIG_TF).astype(np.int64)  # (few: a count of one byte for the rest)
        out["tok_bigtf"] = t[out["tok_bigp"]].astype(np.uint16)
        out["tok_tf"] = np.minimum(t, BIG_TF).astype(np.uint8)
        voc = "\n".join(sorted(self.vocab)).encode("utf-8", "surrogatepass")
        out["voc"] = np.frombuffer(voc, dtype=np.uint8)
        out["convs"] = np.frombuffer(orjson.dumps(list(self.conv_index)), dtype=np.uint8)
        meta = out["meta"]
        for name, field in (
            ("r_len", "ntok"),
            ("r_conv", "conv"),
            ("r_kind", "kind"),
            ("r_role", "role"),
            ("r_copy", "copy"),
        ):
            out[name] = np.ascontiguousarray(meta[field])
        msg = out["r_kind"] == MESSAGE
        conv, nconvs = out["r_conv"][msg], len(self.conv_index)
        out["c_len"] = np.bincount(conv, weights=out["r_len"][msg], minlength=nconvs).astype(np.float64)
        out["c_msgs"] = np.bincount(conv, minlength=nconvs).astype(np.uint32)
        if len(hs):
            starts = np.flatnonzero(np.concatenate(([True], (hs[1:] != hs[:-1]) | (blk[1:] != blk[:-1]))))
        else:
            starts = np.zeros(0, dtype=np.int64)
        out["tok_keys"] = hs[starts]
        out["tok_blk"] = blk[starts].astype(np.uint16)  # (rows < 2**31: a block < 2**15)
        out["tok_ptr"] = np.concatenate((starts, [len(hs)])).astype(np.int64)
        return out

    def _header(self, sections: dict) -> dict:
        return {
            "v": INDEX_VERSION,
            "root": self.root,
            "terms": TERMS_NAME,
            "rows": self.rows,
            "token_hash": TOKEN_HASH_NAME,
            "nconvs": len(self.conv_index),
            "sections": sections,
        }

    def finish(self):
        """In memory: the Segment.  On disk: ``{"name", "rows", "size", "hcrc"}`` once renamed into place."""
        np = self.np
        arrays = self._sections()
        if self.f is None:
            seg = Segment("(memory)", self.rows, list(self.conv_index), arrays)
            for k in ("text", "ltext", "ref"):
                seg.bufs[k] = (self.blobs[k], 0)  # the bytes under arrays[k]: no second copy
            return seg
        try:
            sec = {}
            for name in (
                "meta",
                "text_off",
                "text",
                "ltext_off",
                "ltext",
                "ref_off",
                "ref",
                "tok_keys",
                "tok_blk",
                "tok_ptr",
                "tok_rows",
                "tok_tf",
                "tok_bigp",
                "tok_bigtf",
                "voc",
                "convs",
                "r_len",
                "r_conv",
                "r_kind",
                "r_role",
                "r_copy",
                "c_len",
                "c_msgs",
            ):
                pad = (-self.pos) % ALIGN
                self.f.write(b"\0" * pad)
                self.pos += pad
                if name in self.blobs:
                    crc = nbytes = 0
                    for piece in self.blobs[name]:
                        self.f.write(piece)
                        crc = zlib.crc32(piece, crc)
                        nbytes += len(piece)
                    sec[name] = [self.pos, nbytes, "|u1", [nbytes], crc]
                    self.pos += nbytes
                    continue
                a = np.ascontiguousarray(arrays[name])
                data = memoryview(a).cast("B") if a.nbytes else b""
                self.f.write(data)
                sec[name] = [
                    self.pos,
                    a.nbytes,
                    a.dtype.str if name != "meta" else "meta",
                    list(a.shape),
                    zlib.crc32(data),
                ]
                self.pos += a.nbytes
            header = orjson.dumps(self._header(sec))
            hcrc = zlib.crc32(header)
            self.f.write(header)
            self.f.write(TRAILER.pack(self.pos, len(header), hcrc, TRAILER_MAGIC))
            size = self.pos + len(header) + TRAILER.size
            writing.finish_temp(self.f)
            self.f = None
            writing.commit_temp(self.tmp, self.path)
        except BaseException:
            self.discard()
            raise
        return {"name": self.path.name, "rows": self.rows, "size": size, "hcrc": hcrc, "dead": []}


_FDS = [0]  # segment descriptors open in this process


def _keep_fd() -> bool:
    """Whether a newly opened segment may keep its descriptor: at most a quarter of the process's
    limit (a store of 20 M rows has 400 segments; macOS allows 256 files by default)."""
    try:
        import resource  # (lazy: POSIX only)

        soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
        soft = 1 << 20 if soft == resource.RLIM_INFINITY or soft < 0 else soft
    except (ImportError, OSError, ValueError):
        soft = 256
    if _FDS[0] >= soft // 4:
        return False
    _FDS[0] += 1
    return True


def _close_fd(fd: int) -> None:
    _FDS[0] -= 1
    try:
        os.close(fd)
    except OSError:
        pass


_DTYPES: dict = {}


def _dtype(spec):
    """``numpy.dtype(spec)``, made once per spelling (a segment's 22 sections, 33 segments a search)."""
    dt = _DTYPES.get(spec)
    if dt is None:
        dt = load_numpy().dtype(spec)  # (TypeError for what is no dtype: not kept)
        if isinstance(spec, str) and len(_DTYPES) < 64:
            _DTYPES[spec] = dt
    return dt


# Rows at least 1 in DENSE of a stretch of a segment's rows: ``records`` reads the stretch rather than
# touch them through the map, whose pages (and those around them) stay counted as this process's memory.
DENSE = 1024


class Segment:
    """An opened segment: numpy views (on a read-only mmap, or in memory) plus what queries need."""

    def __init__(self, name: str, rows: int, convs: list | None, arrays: dict, nconvs: int | None = None):
        self.name = name
        self.rows = rows
        # what is decoded from the file when first used ("convs", "terms"): one dict, shared by the
        # copies each open of an index makes (opened.py), so a process decodes it once
        self._decoded: dict = {} if convs is None else {"convs": convs}
        self.nconvs = len(convs) if convs is not None else nconvs
        self.a = arrays
        self.bufs: dict = {}  # "text"/"ltext"/"ref" -> (buffer with .find and slicing, base offset)
        self.alive = None
        self.all_alive = False  # every row alive (set with ``alive``): postings need no filtering
        self.dead_rows = None  # every row of the manifest's dead ranges (c_len/c_msgs count them), or None
        self.header: dict = {}
        self.mm = None
        self.fd = None  # an opened file's: what ``read`` and ``text`` pread from
        self._checked: set = set()  # blobs whose offsets were checked (when first used)

    def __getattr__(self, name):
        try:
            return self.__dict__["a"][name]
        except KeyError:
            raise AttributeError(name) from None

    @property
    def convs(self) -> list:
        """The conversation ids, by the segment's index of them (``meta["conv"]``)."""
        got = self._decoded.get("convs")
        if got is None:
            try:
                got = orjson.loads(bytes(self.a["convs"]))
            except orjson.JSONDecodeError:
                got = None
            if not (isinstance(got, list) and len(got) == self.nconvs and set(map(type, got)) <= {str}):
                raise BadIndex(f"{self.name}: bad conversation table")
            self._decoded["convs"] = got
        return got

    def conversation_ranks(self):
        """Each conversation's place among the segment's ids sorted (an int64 array by ``convs``'s
        numbering; decoded once, as ``convs``): the greatest of many ids without comparing strings."""
        got = self._decoded.get("ranks")
        if got is None:
            names = self.convs
            got = load_numpy().empty(len(names), "int64")
            got[sorted(range(len(names)), key=names.__getitem__)] = range(len(names))
            self._decoded["ranks"] = got
        return got

    def row(self, i: int) -> tuple:
        """(kind, role, content type, conversation id) of row ``i``; BadIndex if a code is out of range."""
        m = self.a["meta"][i]
        k, r, c, v = int(m["kind"]), int(m["role"]), int(m["ctype"]), int(m["conv"])
        if not (0 <= k < len(KINDS) and 0 <= r < len(ROLES) and 0 <= c < len(CTYPES) and 0 <= v < len(self.convs)):
            raise BadIndex(f"{self.name}: row {i} has codes out of range")
        return KINDS[k], ROLES[r], CTYPES[c], self.convs[v]

    def offsets(self, kind: str):
        """The offsets of the blob ``kind`` (text, ltext, ref), checked when first used (from 0 to the
        blob's size, never going down; BadIndex if not): only a segment a query reads pays for it."""
        off = self.a[kind + "_off"]
        if kind not in self._checked:
            np = load_numpy()
            if off[0] != 0 or off[-1] != len(self.a[kind]) or (len(off) > 1 and np.any(off[1:] < off[:-1])):
                raise BadIndex(f"{self.name}: {kind} offsets are not consistent")
            self._checked.add(kind)
        return off

    def _pread(self, name: str, start: int, n: int) -> bytes:
        """``n`` bytes of section ``name`` from byte ``start``, read from the file (see ``read``)."""
        raw = os.pread(self.fd, n, self.header["sections"][name][0] + start)
        if len(raw) != n:
            raise BadIndex(f"{self.name}: section {name} is short")
        return raw

    def read(self, name: str, a: int, b: int):
        """Elements ``a`` to ``b`` (exclusive) of section ``name``, copied: from a file by pread, since a
        page read through the map maps its neighbours too (hundreds of KiB), all counted as this
        process's memory; in memory, a slice."""
        arr = self.a[name]
        if self.fd is None:
            return arr[a:b]
        item = arr.dtype.itemsize
        return load_numpy().frombuffer(self._pread(name, a * item, (b - a) * item), dtype=arr.dtype)

    def records(self, rows):
        """The meta records of ROWS (an int64 array).  Rows at least 1 in DENSE of their stretch have the
        stretch read (``read``: a copy, freed after); fewer are taken through the map, a few pages."""
        if self.fd is None or not len(rows):
            return self.a["meta"][rows]
        lo, hi = int(rows.min()), int(rows.max()) + 1
        if hi - lo <= DENSE * len(rows):
            return self.read("meta", lo, hi)[rows - lo]
        return self.a["meta"][rows]

    def blob_bytes(self, kind: str, lo: int, hi: int) -> bytes:
        """Bytes ``lo`` to ``hi`` of the blob ``kind``, copied (pread from a file: see ``read``)."""
        if not 0 <= lo <= hi <= len(self.a[kind]):
            raise BadIndex(f"{self.name}: {kind} offsets are not consistent")
        if self.fd is None:
            buf, base = self.bufs[kind]
            return bytes(buf[base + lo : base + hi])
        return self._pread(kind, lo, hi - lo)

    def span(self, kind: str, a: int, b: int):
        """The bytes of rows ``a`` to ``b`` (exclusive) of the blob ``kind``, as the buffer slices them."""
        buf, base = self.bufs[kind]
        off = self.offsets(kind)
        return buf[base + int(off[a]) : base + int(off[b])]

    def _row_bounds(self, kind: str, i: int) -> tuple[int, int]:
        """Where row ``i``'s bytes of the blob ``kind`` start and end, checked (0 <= start <= end <= the
        blob's size; BadIndex if not): a hit reads a row of a segment, not every offset of it."""
        off = self.a[kind + "_off"]
        a, b = int(off[i]), int(off[i + 1])
        if not 0 <= a <= b <= len(self.a[kind]):
            raise BadIndex(f"{self.name}: {kind} offsets are not consistent")
        return a, b

    def blob(self, kind: str, i: int) -> bytes:
        buf, base = self.bufs[kind]
        a, b = self._row_bounds(kind, i)
        return bytes(buf[base + a : base + b])

    def crc(self, kind: str, i: int, value: int = 0) -> int:
        """``zlib.crc32`` of row ``i``'s bytes of the blob ``kind``, read in place (no copy of a long text)."""
        buf, base = self.bufs[kind]
        a, b = self._row_bounds(kind, i)
        with memoryview(buf) as view, view[base + a : base + b] as part:
            return zlib.crc32(part, value)

    def holds_term(self, key) -> bool:
        """Whether the term key ``key`` (a numpy uint64) has postings here."""
        keys = self.a["tok_keys"]
        i = int(keys.searchsorted(key))
        return i < len(keys) and keys[i] == key

    def term_postings(self, key):
        """(first posting, end, rows as int64 ascending) of the term key ``key`` (a numpy uint64), or None."""
        np = load_numpy()
        keys = self.a["tok_keys"]
        i, j = int(np.searchsorted(keys, key)), int(np.searchsorted(keys, key, side="right"))
        if i >= j:
            return None
        ptr = self.a["tok_ptr"][i : j + 1]
        a, b = int(ptr[0]), int(ptr[-1])
        rows = self.read("tok_rows", a, b).astype(np.int64)
        if j == i + 1:  # (one block: every term of a segment of at most 65,536 rows)
            rows += int(self.a["tok_blk"][i]) << BLOCK_BITS
        else:
            rows += np.repeat(self.a["tok_blk"][i:j].astype(np.int64) << BLOCK_BITS, np.diff(ptr))
        return a, b, rows

    def posting_rows(self):
        """Every posting's row (int64), in posting order."""
        np = load_numpy()
        high = np.repeat(self.a["tok_blk"].astype(np.int64) << BLOCK_BITS, np.diff(self.a["tok_ptr"]))
        return self.a["tok_rows"].astype(np.int64) + high

    def tfs(self, a: int = 0, b: int | None = None):
        """The counts (uint16) of postings ``a`` to ``b`` (default: all)."""
        np = load_numpy()
        tf = (self.a["tok_tf"][a:] if b is None else self.read("tok_tf", a, b)).astype(np.uint16)
        big = self.a["tok_bigp"]
        i, j = np.searchsorted(big, (a, len(self.a["tok_tf"]) if b is None else b)).tolist()
        if i < j:
            tf[big[i:j] - a] = self.a["tok_bigtf"][i:j]
        return tf

    def size(self, kind: str, i: int) -> int:
        a, b = self._row_bounds(kind, i)
        return b - a

    def text(self, i: int) -> str:
        if self.fd is not None:  # (pread: see ``read``)
            a, b = (int(x) for x in self.read("text_off", i, i + 2))
            return str(self.blob_bytes("text", a, b), "utf-8", "surrogatepass")
        buf, base = self.bufs["text"]
        a, b = self._row_bounds("text", i)
        with memoryview(buf) as view, view[base + a : base + b] as part:
            return str(part, "utf-8", "surrogatepass")  # decoded in place: one copy of a long text, not two

    def terms(self) -> list[str]:
        """Every index term of this segment, sorted (``prefix*`` looks them up)."""
        got = self._decoded.get("terms")
        if got is None:
            raw = bytes(self.a["voc"])
            got = self._decoded["terms"] = raw.decode("utf-8", "surrogatepass").split("\n") if raw else []
        return got

    def ref(self, i: int) -> str:
        return self.blob("ref", i).decode("utf-8", "surrogatepass")

    def ref_bounds(self, rows) -> tuple:
        """(start, end) arrays of ROWS' (an int64 array) bytes in the ref blob, checked at once (BadIndex
        as ``ref``)."""
        off = self.a["ref_off"]
        a, b = off[rows], off[rows + 1]
        if len(rows) and ((a < 0) | (a > b) | (b > len(self.a["ref"]))).any():
            raise BadIndex(f"{self.name}: ref offsets are not consistent")
        return a, b

    def refs(self, rows) -> list[str]:
        """``ref`` of each of ROWS (an int64 array), their offsets checked at once (BadIndex as ``ref``)."""
        a, b = self.ref_bounds(rows)
        buf, base = self.bufs["ref"]
        return [
            bytes(buf[base + x : base + y]).decode("utf-8", "surrogatepass") for x, y in zip(a.tolist(), b.tolist())
        ]

    @classmethod
    def open(cls, path: Path, root: str, expect: dict) -> Segment:
        np = load_numpy()
        fd, mm = open_mapped(
            path,
            path.name,
            lambda n: (
                None
                if n == expect["size"] and n >= PREAMBLE + TRAILER.size
                else f"{n} bytes, the manifest says {expect['size']}"
            ),
        )
        if not _keep_fd():  # (too many open already: this one reads through its map)
            os.close(fd)
            fd = None
        else:
            weakref.finalize(mm, _close_fd, fd)  # (the fd lives as long as the map: Segment.fd preads from it)
        size = len(mm)
        if mm[:8] != SEGMENT_MAGIC or struct.unpack_from("<I", mm, 8)[0] != INDEX_VERSION:
            raise BadIndex(f"{path.name}: not a samctl segment of version {INDEX_VERSION}")
        hoff, hlen, hcrc, magic = TRAILER.unpack_from(mm, size - TRAILER.size)
        if magic != TRAILER_MAGIC or hoff + hlen != size - TRAILER.size or hoff < PREAMBLE:
            raise BadIndex(f"{path.name}: bad trailer")
        raw = mm[hoff : hoff + hlen]
        if zlib.crc32(raw) != hcrc or hcrc != expect["hcrc"]:
            raise BadIndex(f"{path.name}: header checksum mismatch")
        try:
            h = orjson.loads(raw)
            rows = h["rows"]
            ok = (
                h["v"] == INDEX_VERSION
                and h["root"] == root
                and h["terms"] == TERMS_NAME
                and rows == expect["rows"]
                and h["token_hash"] == TOKEN_HASH_NAME
                and type(h["nconvs"]) is int
                and h["nconvs"] >= 0
            )
        except (orjson.JSONDecodeError, KeyError, TypeError):
            ok = False
        if not ok:
            raise BadIndex(f"{path.name}: header of another version, root or tokenizer")
        arrays = {}
        dims = {}
        try:
            for name, (dtype, shape_rule) in SECTIONS.items():
                off, nbytes, dt, shape, _crc = h["sections"][name]
                dt = meta_dtype() if name == "meta" and dt == "meta" else _dtype(dt)
                if dtype is not None and dt != _dtype(dtype):
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
                    elif want == "C":
                        ok = got == h["nconvs"]
                    else:  # K, K+1, P are shared by the term sections; B is each blob's own
                        ok = dims.setdefault(want if want != "B" else name, got) == got
                    if not ok or len(shape) != len(shape_rule):
                        raise BadIndex(f"{path.name}: section {name} has shape {shape}")
                arrays[name] = np.frombuffer(mm, dtype=dt, count=math.prod(shape), offset=off)
                if len(shape) != 1:
                    arrays[name] = arrays[name].reshape(shape)
                if name in ("text", "ltext", "ref"):
                    arrays["_base_" + name] = off
        except (KeyError, TypeError, ValueError) as exc:
            raise BadIndex(f"{path.name}: bad section table ({exc})") from None
        if dims.get("K+1", 0) != dims.get("K", 0) + 1 and "K" in dims:
            raise BadIndex(f"{path.name}: token table sizes disagree")
        seg = cls(path.name, rows, None, arrays, h["nconvs"])
        seg.header = h
        seg.mm = mm
        seg.fd = fd
        for k in ("text", "ltext", "ref"):
            seg.bufs[k] = (mm, arrays.pop("_base_" + k))
        seg._check_cheap()
        return seg

    def _check_cheap(self) -> None:
        """Structural checks cheap enough for every open (offsets, pointers, codes in range)."""
        np = load_numpy()
        a = self.a

        def consistent(off, end) -> bool:  # from 0 to ``end``, never going down
            return not (off[0] != 0 or off[-1] != end or (len(off) > 1 and np.any(off[1:] < off[:-1])))

        # (a blob's offsets are checked when first used: Segment.offsets)
        if not consistent(a["tok_ptr"], len(a["tok_rows"])):
            raise BadIndex(f"{self.name}: token pointers are not consistent")
        big = a["tok_bigp"]
        if len(big) and (big[0] < 0 or big[-1] >= len(a["tok_tf"]) or np.any(big[1:] <= big[:-1])):
            raise BadIndex(f"{self.name}: the big counts are not consistent")
        # codes (kind, role, content type, conversation) are checked where a row is used: Segment.row

    def verify(self) -> list[str]:
        """Every section's crc32 against the header (reads every byte)."""
        problems = []
        view = memoryview(self.mm)
        try:
            for name, (off, nbytes, _dt, _shape, crc) in self.header["sections"].items():
                if zlib.crc32(view[off : off + nbytes]) != crc:
                    problems.append(f"{self.name}: section {name} does not match its checksum")
        finally:
            view.release()
        return problems
