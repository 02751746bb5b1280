"""The manifest: the one file that says which segments make up the index and what is in them.

Replaced atomically, never changed in place; ``read_manifest`` checks every field and raises BadIndex; a row
is alive unless a dead range or ``hidden`` covers it.

Design notes: docs/search-index.md, "search/index/manifest.py".
"""

from __future__ import annotations

import itertools
import mmap
import operator
import os
import struct
import zlib
from pathlib import Path

import orjson

from samctl.fs import writing
from samctl.model import ERROR, INFO, Finding
from samctl.said import Suggestion, said
from samctl.search.index.format import (
    INDEX_VERSION,
    MANIFEST_MAGIC,
    SEG_NAME,
    TERMS_NAME,
    TOKEN_HASH_NAME,
    BadIndex,
    load_numpy,
    open_mapped,
)
from samctl.search.text import folded_title

TABLES = ("src", "notes", "conv")  # parsed and checked when used; "conv" is a list of buckets, a line each
NOTES_SUMMED = 10  # more sources than this with notes (info findings): a search says one line per code
BUCKET = 256  # conversations per bucket of the conversation table, about: a title costs parsing one bucket
CONV_COLS = ("pos", "ids", "titles", "topics", "topic_names", "folded")  # a bucket's columns; pos: order
# found; folded: the title as ``title:`` compares it (``query.folded_title``), so a query folds no title


def bucket_of(cid: str, buckets: int) -> int:
    """Which of ``buckets`` holds the conversation ``cid``."""
    return zlib.crc32(cid.encode("utf-8", "surrogatepass")) % buckets


def write_manifest_bytes(path: Path, body: dict, version: int = INDEX_VERSION) -> None:
    """Write a manifest body (the on-disk, columnar form) atomically: its head (everything but
    ``TABLES``, plus each table's length and crc32), then each table (each bucket of "conv"), each after a
    newline (orjson never writes a raw newline).  The file's own checksum covers the head only: a table
    is checked when used."""
    tables = [orjson.dumps(body.get("src")), orjson.dumps(body.get("notes") or {"rows": {}, "keys": {}})]
    tables += [orjson.dumps(b) for b in body.get("conv") or []]
    head = {k: v for k, v in body.items() if k not in TABLES}
    head["tables"] = [[len(t), zlib.crc32(t)] for t in tables]
    head = orjson.dumps(head)
    data = b"\n".join([head] + tables)
    writing.write_atomic(path, MANIFEST_MAGIC + struct.pack("<II", version, zlib.crc32(head)) + data)


HEAD = ("v", "root", "store", "terms", "token_hash", "created", "updated")
_SRC_COLS = ("keys", "kinds", "convs", "sigs", "segs", "start", "end")


def encode_manifest(man: dict) -> dict:
    """The in-memory manifest (``sources``: key -> dict, ``convs``: id -> info) in its on-disk form:
    one list per field, which parses several times faster than one object per source."""
    names = {s["name"]: i for i, s in enumerate(man["segments"])}
    entries = list(man["sources"].values())
    # (a column at a time, each a map of a C getter over the entries: a refresh writes 100,000 of them,
    # and a Python loop appending to seven lists cost it half a second)
    src = {"keys": list(man["sources"])}
    for col, field in zip(_SRC_COLS[1:], ("kind", "conv", "sig", "seg", "start", "end")):
        got = list(map(operator.itemgetter(field), entries))
        src[col] = [names.get(n, -1) for n in got] if field == "seg" else got
    findings, noted, infos = {}, {}, {}
    for i, e in enumerate(entries):
        if e["findings"]:  # problems in the head (every search reports them), notes (info) in a table
            probs = [f for f in e["findings"] if f[3] != INFO]
            notes = [f for f in e["findings"] if f[3] == INFO]
            if probs:
                findings[str(i)] = probs
            if notes:
                noted[str(i)] = notes
        if e["infos"]:
            infos[str(i)] = e["infos"]
    src["infos"] = infos
    convs = list(man["convs"].values())  # (in the order found: a topic is named after its first conversation)
    body = {k: man.get(k) for k in HEAD}
    # the findings (and their sources' keys and conversations) in the head: every search reports them
    fkeys = {i: [src["keys"][int(i)], src["convs"][int(i)]] for i in findings}
    n = max(1, -(-len(convs) // BUCKET))
    for c in convs:
        if "folded" not in c:  # (kept in the info: a refresh folds only the titles it read)
            c["folded"] = folded_title(c.get("title"))
    members: list = [[] for _ in range(n)]  # each bucket's positions, ascending
    for pos, c in enumerate(convs):
        members[bucket_of(c["id"], n)].append(pos)
    buckets = []
    for pos in members:
        held = [convs[p] for p in pos]
        b = {"pos": pos, "ids": [c["id"] for c in held]}
        for col, field in zip(CONV_COLS[2:], ("title", "topic", "topic_name", "folded")):
            b[col] = [c.get(field) for c in held]
        buckets.append(b)
    summed: dict = {}  # code -> [notes, sources]
    for rows in noted.values():
        for code in dict.fromkeys(f[0] for f in rows):
            got = summed.setdefault(code, [0, 0])
            got[0] += sum(1 for f in rows if f[0] == code)
            got[1] += 1
    notes = {"rows": noted, "keys": {i: [src["keys"][int(i)], src["convs"][int(i)]] for i in noted}}
    body.update(
        segments=man["segments"],
        hidden=man["hidden"],
        findings=findings,
        fkeys=fkeys,
        src=src,
        notes=notes,
        notes_count=summed,
        conv=buckets,
    )
    return body


class Manifest:
    """A checked manifest: the segment table, and lazy views of the source and conversation tables."""

    def __init__(self, body: dict, tables: dict | None = None, dead: dict | None = None, mapped=None):
        self.body = body
        self.segments = body["segments"]
        self.dead_arrays = dead or {}  # segment -> its dead ranges as checked (an int64 array), when read
        self.hidden = body["hidden"]
        # "src" and each conversation bucket ("conv", i): (raw bytes, crc32) until first used (then
        # checked), or itself (an encoded body's)
        self._tables = (
            tables
            if tables is not None
            else {"src": body["src"], "notes": body["notes"], **{("conv", i): b for i, b in enumerate(body["conv"])}}
        )
        self.buckets = len(self._tables) - 2
        self._raw = {k: t for k, t in self._tables.items() if isinstance(t, tuple)}  # (as read, to read again)
        self._checked: set = set()  # the tables found good (a table forgotten is checked again when read)
        self.mapped = mapped  # the file's map, when read from one (``tables`` are views of it)
        self._sources = self._convs = self._sig = None
        self.memo: dict = {}  # what is derived from this manifest alone, for whoever reads it again

    def _table(self, name: str):
        t = self._tables[name]
        if isinstance(t, tuple):
            raw, crc = t
            if zlib.crc32(raw) != crc:
                raise BadIndex("manifest: checksum mismatch")
            t = (
                _checked_src(raw, self.segments)
                if name == "src"
                else _checked_notes(raw)
                if name == "notes"
                else _checked_bucket(raw)
            )
            self._tables[name] = t
            self._checked.add(name)
        return t

    def check(self) -> None:
        """Every table checked (crc32, types) now rather than when first used, once; raises BadIndex."""
        for name in list(self._tables):
            if name not in self._checked:
                self._table(name)

    def forget_decoded(self) -> None:
        """Drop the tables decoded from the file and what was made of them (a full check decodes every
        one, hundreds of MiB of objects for 100,000 sources; a search then reads a few buckets): each is
        decoded, and checked, again when next read; ``check`` passes over the ones found good before.
        ``memo`` stays."""
        self._tables.update(self._raw)
        self._sources = self._convs = self._sig = None
        madvise = getattr(self.mapped, "madvise", None)
        if madvise is not None and hasattr(mmap, "MADV_DONTNEED"):  # (the pages read stay in the page cache,
            # not in this process: a table read again is mapped again)
            try:
                madvise(mmap.MADV_DONTNEED)
            except (OSError, ValueError):
                pass

    @property
    def src(self) -> dict:
        return self._table("src")

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
            inf, notes = src["infos"], self._table("notes")["rows"]
            fnd = {
                i: self.body["findings"].get(i, []) + notes.get(i, [])
                for i in dict.fromkeys([*self.body["findings"], *notes])
            }
            self._sources = {
                k: {
                    "kind": kind,
                    "conv": conv,
                    "sig": sig,
                    "seg": names[seg] if seg >= 0 else None,
                    "start": a,
                    "end": b,
                    "findings": fnd.get(str(i), []),
                    "infos": inf.get(str(i), []),
                }
                for i, (k, kind, conv, sig, seg, a, b) in enumerate(zip(*(src[c] for c in _SRC_COLS)))
            }
        return self._sources

    def convs(self) -> dict:
        if self._convs is None:
            rows = [r for i in range(self.buckets) for r in zip(*(self._table(("conv", i))[k] for k in CONV_COLS))]
            at = [None] * len(rows)
            for r in rows:  # (in the order found: positions 0 .. n-1, each once, as encode_manifest writes them)
                if not 0 <= r[0] < len(at) or at[r[0]] is not None:
                    at = sorted(rows)  # (not so: sorted, as well as they can be)
                    break
                at[r[0]] = r
            self._convs = {
                i: {"id": i, "title": t, "topic": tp, "topic_name": tn, "folded": f} for _, i, t, tp, tn, f in at
            }
        return self._convs

    def ids_and_titles(self) -> tuple[list, list]:
        """Every conversation's id and title (None: none), bucket by bucket."""
        ids, titles, _ = self.ids_titles_folded()
        return ids, titles

    def ids_titles_folded(self) -> tuple[list, list, list]:
        """Every conversation's id, title and folded title (``query.folded_title``), bucket by bucket."""
        ids, titles, folded = [], [], []
        for i in range(self.buckets):
            b = self._table(("conv", i))
            ids += b["ids"]
            titles += b["titles"]
            folded += b["folded"]
        return ids, titles, folded

    def title_of(self, cid: str) -> str:
        """The conversation's title; for a shared-topic scope "<topic name> (shared topic)"; else ""."""
        b = self._table(("conv", bucket_of(cid, self.buckets)))
        try:
            return b["titles"][b["ids"].index(cid)] or ""
        except ValueError:
            pass
        named = []  # a topic is named after the first conversation found in it that names it
        for i in range(self.buckets):
            b = self._table(("conv", i))
            named += [(pos, n) for pos, t, n in zip(b["pos"], b["topics"], b["topic_names"]) if t == cid]
        if not named:
            return ""
        names = [n for _, n in sorted(named) if n]
        return f"{names[0]} (shared topic)" if names else "(shared topic)"

    def findings(self, scope: set | None = None, order=None) -> list[Finding]:
        """The stored findings of the sources in ``scope``: in the order of the keys of ``order``
        (``discover``'s) when given, else in the manifest's (a refresh puts the sources it read
        again last)."""
        items = list(self.body["findings"].items())
        fkeys = self.body["fkeys"]
        if order is not None and len(items) > 1:
            at = {k: n for n, k in enumerate(order)}
            items.sort(key=lambda item: at.get(fkeys[item[0]][0], len(at)))
        out = []
        for i, rows in items:
            out += findings_of(fkeys[i][1], rows, scope)
        summed = self.body["notes_count"]
        if scope is None and sum(files for _, files in summed.values()) > NOTES_SUMMED:
            # (a note per file, for thousands of files, would bury the results: one line per code)
            for code, (n, files) in summed.items():
                out.append(
                    Finding(
                        code,
                        self.body["root"],
                        said(f"{n:,} notes in {files:,} files of this store (`", Suggestion("check"), "` lists each)"),
                        INFO,
                    )
                )
            return out
        notes = self._table("notes")
        for i, rows in notes["rows"].items():
            out += findings_of(notes["keys"][i][1], rows, scope)
        return out

    def keys_with_findings(self) -> set:
        return {k for k, _ in self.body["fkeys"].values()}


def findings_of(conv: str | None, rows: list, scope: set | None = None) -> list[Finding]:
    """The findings a source's manifest rows stand for, unless its conversation is outside ``scope``."""
    if scope is not None and conv is not None and conv not in scope:
        return []
    return [Finding(c, p, r, sev or ERROR, cv) for c, p, r, sev, cv in rows]


_STR, _STR_NONE, _INT = {str}, {str, type(None)}, {int}


def _strs(x, n, none_ok=False) -> bool:
    return isinstance(x, list) and len(x) == n and set(map(type, x)) <= (_STR_NONE if none_ok else _STR)


def _ints(x, n=None) -> bool:
    return isinstance(x, list) and (n is None or len(x) == n) and set(map(type, x)) <= _INT


def _dead_array(dead, rows: int):
    """``dead`` as an int64 array of [start, end] rows, when it is a list of integer pairs with 0 <= start
    <= end <= ``rows``; else None.  (Checked a list at a time: an index refreshed many times has
    thousands, and every search opens it; the array is kept for ``dead_rows``.)"""
    if not (isinstance(dead, list) and set(map(type, dead)) <= {list} and set(map(len, dead)) <= {2}):
        return None
    np = load_numpy()
    flat = list(itertools.chain.from_iterable(dead))
    if not flat:
        return np.zeros((0, 2), dtype=np.int64)
    if not set(map(type, flat)) <= _INT:
        return None
    a = np.array(flat, dtype=np.int64).reshape(-1, 2)  # (beyond int64: OverflowError, a BadIndex)
    return a if bool(((a[:, 0] >= 0) & (a[:, 0] <= a[:, 1]) & (a[:, 1] <= rows)).all()) else None


def read_manifest(path: Path, store) -> Manifest:
    """The manifest, its head checked field by field (each table when first used); raises BadIndex.

    The file is memory-mapped: a search that needs no table reads the head only."""
    raw = _mapped(path)
    if len(raw) < 16 or raw[:8] != MANIFEST_MAGIC:
        raise BadIndex("manifest: not a samctl index")
    version, crc = struct.unpack_from("<II", raw, 8)
    if version != INDEX_VERSION:
        raise BadIndex(f"manifest: version {version}, this samctl writes {INDEX_VERSION}")
    nl = raw.find(b"\n", 16)
    if nl < 0:
        raise BadIndex("manifest: not head and tables")
    head = raw[16:nl]
    if zlib.crc32(head) != crc:
        raise BadIndex("manifest: checksum mismatch")
    m = _loads(head)
    tables, at = {}, nl + 1
    try:
        if not (isinstance(m, dict) and isinstance(m.get("tables"), list) and len(m["tables"]) >= 3):
            raise BadIndex("manifest: not head and tables")
        view, size, last = memoryview(raw), len(raw), len(m["tables"]) - 1
        for j, (n, tcrc) in enumerate(m["tables"]):
            name = "src" if j == 0 else "notes" if j == 1 else ("conv", j - 2)
            end = at + n
            # (a newline after each table but the last, which ends the file)
            if not (
                type(n) is int
                and type(tcrc) is int
                and n >= 0
                and (end < size and raw[end] == 10 if j < last else end == size)
            ):
                raise BadIndex("manifest: not head and tables")
            tables[name] = (view[at:end], tcrc)
            at = end + 1
        if at != len(raw) + 1:
            raise BadIndex("manifest: not head and tables")
        ok = (
            m["v"] == INDEX_VERSION
            and m["root"] == store.root_real
            and m["store"] == store.name
            and m["terms"] == TERMS_NAME
            and m["token_hash"] == TOKEN_HASH_NAME
            and all(isinstance(m[k], (int, float)) for k in ("created", "updated"))
        )
        if not ok:
            raise BadIndex("manifest: of another version, store, root or tokenizer")
        names, dead = set(), {}
        for s in m["segments"]:
            arr = None
            if (
                isinstance(s["name"], str)
                and SEG_NAME.match(s["name"])
                and type(s["rows"]) is int
                and type(s["size"]) is int
                and type(s["hcrc"]) is int
            ):
                arr = _dead_array(s["dead"], s["rows"])
            if arr is None:
                raise BadIndex("manifest: bad segment entry")
            names.add(s["name"])
            dead[s["name"]] = arr
        seg_rows = {s["name"]: s["rows"] for s in m["segments"]}
        for k, v in m["hidden"].items():
            if k not in names or not _ints(v) or not all(0 <= r < seg_rows[k] for r in v):
                raise BadIndex("manifest: bad hidden rows")
        finding = lambda f: isinstance(f, list) and len(f) == 5 and all(isinstance(x, str) or x is None for x in f)
        summed = m["notes_count"]
        if not (isinstance(summed, dict) and all(_ints(v, 2) for v in summed.values())):
            raise BadIndex("manifest: bad source details")
        fkeys = m["fkeys"]
        if not (isinstance(fkeys, dict) and fkeys.keys() == m["findings"].keys()):
            raise BadIndex("manifest: bad source details")
        for i, items in m["findings"].items():
            kc = fkeys[i]
            if not (
                i.isdigit()
                and isinstance(items, list)
                and all(map(finding, items))
                and isinstance(kc, list)
                and len(kc) == 2
                and isinstance(kc[0], str)
                and (kc[1] is None or isinstance(kc[1], str))
            ):
                raise BadIndex("manifest: bad source details")
    except (KeyError, TypeError, AttributeError, ValueError, OverflowError):
        raise BadIndex("manifest: missing or mistyped fields") from None
    return Manifest(m, tables, dead, raw)


def _mapped(path: Path):
    """The manifest's bytes, mapped read-only (a later rename over it leaves this view as it was)."""
    fd, mm = open_mapped(path, "manifest", lambda n: "not a samctl index" if n < 16 else None)
    os.close(fd)
    return mm


def _loads(raw: bytes):
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:
        raise BadIndex("manifest: not JSON") from None


def _checked_src(raw: bytes, segments: list) -> dict:
    """The manifest's source table, checked; raises BadIndex."""
    src = _loads(raw)
    try:
        rows = [s["rows"] for s in segments]
        n = len(src["keys"])
        if not (
            _strs(src["keys"], n)
            and _strs(src["kinds"], n)
            and _strs(src["convs"], n, True)
            and _strs(src["sigs"], n, True)
            and _ints(src["segs"], n)
            and _ints(src["start"], n)
            and _ints(src["end"], n)
        ):
            raise BadIndex("manifest: bad source table")
        if n:
            np = load_numpy()
            segs = np.array(src["segs"], dtype=np.int64)
            a, b = np.array(src["start"], dtype=np.int64), np.array(src["end"], dtype=np.int64)
            limit = np.array(rows + [0], dtype=np.int64)[segs]  # segs == -1 -> 0 (a source without rows)
            if segs.min() < -1 or segs.max() >= len(rows) or np.any(a < 0) or np.any(a > b) or np.any(b > limit):
                raise BadIndex("manifest: source rows out of range")
        infos = src["infos"]  # (source position -> the ids it described; checked a column at a time)
        if not (
            isinstance(infos, dict)
            and all(map(str.isdigit, infos))
            and (not infos or max(map(int, infos)) < n)
            and set(map(type, infos.values())) <= {list}
            and set(map(type, itertools.chain.from_iterable(infos.values()))) <= _STR
        ):
            raise BadIndex("manifest: bad source details")
    except (KeyError, TypeError, AttributeError, ValueError, OverflowError):
        raise BadIndex("manifest: missing or mistyped fields") from None
    return src


def _checked_notes(raw) -> dict:
    """The notes table (info findings by source position, and those sources' keys and conversations),
    checked; raises BadIndex."""
    t = _loads(raw)
    try:
        rows, keys = t["rows"], t["keys"]
        ok = (
            isinstance(rows, dict)
            and isinstance(keys, dict)
            and rows.keys() == keys.keys()
            and all(
                i.isdigit()
                and isinstance(rs, list)
                and all(_finding(f) for f in rs)
                and isinstance(keys[i], list)
                and len(keys[i]) == 2
                and isinstance(keys[i][0], str)
                and (keys[i][1] is None or isinstance(keys[i][1], str))
                for i, rs in rows.items()
            )
        )
    except (KeyError, TypeError, AttributeError):
        ok = False
    if not ok:
        raise BadIndex("manifest: bad source details")
    return t


def _finding(f) -> bool:
    return isinstance(f, list) and len(f) == 5 and all(isinstance(x, str) or x is None for x in f)


def _checked_bucket(raw) -> dict:
    """A bucket of the conversation table, checked (columns, types); raises BadIndex.  (An id in the
    wrong bucket, which only a writer's bug could put there, is not found: its title is "".)"""
    b = _loads(raw)
    try:
        n = len(b["ids"])
        ok = (
            set(b) == set(CONV_COLS)
            and _ints(b["pos"], n)
            and _strs(b["ids"], n)
            and _strs(b["titles"], n, True)
            and _strs(b["topics"], n, True)
            and _strs(b["topic_names"], n, True)
            and _strs(b["folded"], n, True)
        )
    except (KeyError, TypeError, AttributeError):
        ok = False
    if not ok:
        raise BadIndex("manifest: bad conversation table")
    return b


def dead_rows(dead):
    """Every row of the dead ranges ``[[start, end), ...]`` (int64, range by range; a row in two
    ranges twice): the expansion at once, however many ranges (thousands after many refreshes)."""
    np = load_numpy()
    d = np.asarray(dead, dtype=np.int64).reshape(-1, 2)
    n = d[:, 1] - d[:, 0]
    return np.repeat(d[:, 0] - np.cumsum(n) + n, n) + np.arange(int(n.sum()))  # (each start, plus 0 .. n-1)


def alive_mask(rows: int, dead, expanded=None):
    """A bool array of ``rows``: False in the dead ranges ``[[start, end), ...]`` (``expanded``: their
    ``dead_rows``, when already made)."""
    np = load_numpy()
    alive = np.ones(rows, dtype=bool)
    if len(dead):
        alive[dead_rows(dead) if expanded is None else expanded] = False
    return alive
