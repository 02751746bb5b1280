"""The ChatGPT data-export store: an export ``.zip`` (read in place, never extracted) or the folder it
was unpacked into, read-only.

Conversations are the elements of ``conversations.json`` (or, when that is absent, of the shards
``conversations-NNN.json`` in numeric order), streamed one at a time by ``scan.iter_items``: memory
stays within the per-conversation cap (``--max-file-size``, default 64 MiB) times the parser's
expansion, whatever the export's size.  A zip is checked before anything is read from it (see
``zip_problems``): a hostile one is refused with one finding and nothing listed.  Ids: the
conversation's UUID (``id``, else ``conversation_id``), lowercase; nothing else is accepted and no id
ever becomes a path.
"""

from __future__ import annotations

import os
import re
import stat
import struct
import tempfile
import zipfile
from pathlib import Path

from samctl.errors import FileProblem, NotFound, UsageError
from samctl.fs import reading, safepaths
from samctl.model import INFO, WARNING, Finding, recency
from samctl.stores.base import Store
from samctl.stores.chatgpt import decode, scan

SINGLE = "conversations.json"
SHARD_RE = re.compile(r"conversations-([0-9]{1,6})\.json\Z")
ZIP_MAX_RATIO = 100  # declared uncompressed / compressed, per member over ZIP_RATIO_FLOOR
ZIP_RATIO_FLOOR = 1 << 20
ZIP_MAX_MEMBER = 8 << 30  # declared uncompressed size of one member
ZIP_MAX_TOTAL = 32 << 30  # declared uncompressed size of the whole zip
ZIP_MAX_MEMBERS = 50_000  # an export holds its JSON, HTML and the files of its conversations
ZIP_MAX_DIRECTORY = 8 << 20  # bytes of central directory zipfile would parse (46 and more per member)
_OK_METHODS = (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED, zipfile.ZIP_BZIP2, zipfile.ZIP_LZMA)


class ChatgptStore(Store):
    name = "chatgpt"
    id_rule = "a UUID (8-4-4-4-12 lowercase hex digits)"
    read_only = True

    def __init__(self, conv_dir: Path, base: Path, caps=None, cache: bool = True):
        """``conv_dir``: the export folder, or the export's ``.zip`` file."""
        super().__init__(conv_dir, base, caps, cache=False)  # nothing of samctl's is written for it
        self.zip_path = Path(conv_dir) if Path(conv_dir).is_file() else None
        # Where the last listing found each conversation (source, byte offset, length): loading many
        # (export --all, check) then reads each one's bytes instead of scanning the export again per
        # conversation.  A zip member cannot seek, so it is first spooled once to an anonymous temp file.
        self._index: dict = {}
        self._spools: dict = {}

    def describe(self) -> str:
        return f"ChatGPT export at {self.zip_path or self.conv_dir} (read-only)"

    # ids ------------------------------------------------------------------------
    def valid_id(self, text: str) -> bool:
        return decode.valid_id(text)

    def normalize_prefix(self, text: str) -> str:
        return text.lower()

    def prefix_ok(self, text: str) -> bool:
        t = text.lower()
        return (
            0 < len(t) <= 36 and decode.UUID_RE.match(t + "00000000-0000-0000-0000-000000000000"[len(t) :]) is not None
        )

    # sources ----------------------------------------------------------------------
    def _sources(self, findings: list):
        """Yield (where, read function) for each conversations file, in order; problems as findings."""
        if self.zip_path is not None:
            yield from self._zip_sources(findings)
            return
        try:
            names = os.listdir(self.conv_dir)
        except OSError as exc:
            raise NotFound(f"cannot list {self.conv_dir}: {exc.strerror}") from None
        shards = sorted((int(m[1]), n) for n in names if (m := SHARD_RE.match(n)))
        if SINGLE in names:
            if shards:
                findings.append(
                    Finding(
                        "shards-ignored",
                        str(self.conv_dir),
                        f"{SINGLE} and {len(shards)} conversations-NNN.json shards are both here; read the single file",
                        INFO,
                    )
                )
            chosen = [SINGLE]
        else:
            chosen = [n for _, n in shards]
        for n in chosen:
            p = safepaths.child(self.conv_dir, n)
            try:
                f, _ = reading.open_regular(p)  # never through a symlink, never a FIFO
            except FileProblem as exc:
                findings.append(Finding(exc.code, str(p), exc.message))
                continue
            with f:
                yield str(p), _reader(f.read, str(p), findings)

    def _zip_sources(self, findings: list):
        zp = str(self.zip_path)
        try:
            f, _ = reading.open_regular(self.zip_path)
        except FileProblem as exc:
            findings.append(Finding(exc.code, zp, exc.message))
            return
        with f:
            problem = directory_problem(f)
            if problem:
                findings.append(Finding("zip-refused", zp, f"refused, nothing read from it: {problem}"))
                return
            try:
                zf = zipfile.ZipFile(f)
            except (zipfile.BadZipFile, OSError, ValueError, EOFError) as exc:
                findings.append(Finding("bad-zip", zp, f"not a readable zip: {str(exc)[:160]}"))
                return
            with zf:
                infos = zf.infolist()
                problems = zip_problems(infos)
                if problems:
                    findings.append(
                        Finding(
                            "zip-refused",
                            zp,
                            f"refused, nothing read from it: {problems[0]}"
                            + (f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""),
                        )
                    )
                    return
                by_name = {i.filename: i for i in infos}
                shards = sorted((int(m[1]), n) for n in by_name if (m := SHARD_RE.match(n)))
                if SINGLE in by_name:
                    chosen = [SINGLE]
                    if shards:
                        findings.append(
                            Finding(
                                "shards-ignored",
                                zp,
                                f"{SINGLE} and {len(shards)} shards are both in the zip; read the single file",
                                INFO,
                            )
                        )
                else:
                    chosen = [n for _, n in shards]
                for n in chosen:
                    try:
                        with zf.open(by_name[n]) as member:  # zipfile stops at the declared size, checks the CRC
                            yield f"{zp}!{n}", _reader(member.read, f"{zp}!{n}", findings)
                    except (
                        zipfile.BadZipFile,
                        OSError,
                        ValueError,
                        EOFError,
                        NotImplementedError,
                        RuntimeError,
                    ) as exc:
                        findings.append(Finding("bad-zip", f"{zp}!{n}", f"cannot read this member: {str(exc)[:160]}"))

    def _items(self, findings: list):
        """Yield (where, Item) for every element of every conversations file; scan problems as findings."""
        for where, read in self._sources(findings):
            end = scan.End()
            before = len(findings)
            for item in scan.iter_items(read, self.caps.snapshot, end):
                yield where, item
            if any(f.code == "unreadable" and f.path == where for f in findings[before:]):
                continue  # the read failed (said so): the cut it left is not the file's own
            if end.problem:
                sev = INFO if end.problem[1].startswith("more data") else None
                findings.append(Finding(end.problem[0], where, end.problem[1], *(() if sev is None else (sev,))))

    # reading ----------------------------------------------------------------------
    def list_metas(self, findings: list) -> list:
        metas, seen = [], set()
        for where, item in self._items(findings):
            at = f"{where}#{item.index}"
            if item.data is None or item.problem:
                findings.append(Finding(item.problem[0], at, item.problem[1]))
                continue
            doc = decode.parse(item.data, at, findings)
            if not isinstance(doc, dict):
                if doc is not None:
                    findings.append(Finding("not-object", at, "not a conversation object"))
                continue
            cid = decode.conv_id(doc)
            if cid is None:
                findings.append(Finding("bad-id", at, "no id / conversation_id in UUID form; skipped"))
                continue
            if cid in seen:
                findings.append(Finding("duplicate-id", at, f"{cid} appears twice; the first is listed", WARNING, cid))
                continue
            seen.add(cid)
            self._index[cid] = (where, item.offset, len(item.data))
            metas.append(decode.meta(doc, cid, where, findings, len(item.data)))
        metas.sort(key=recency, reverse=True)
        return metas

    def all_ids(self) -> list[str]:
        return sorted(m.id for m in self.list_metas([]))

    def _find(self, cid: str, findings: list):
        """(where, bytes) of the first conversation whose id is ``cid``, or None.  Only elements whose bytes
        contain the id are parsed."""
        if cid in self._index:
            data = self._read_at(*self._index[cid])
            if data is not None:
                found: list = []
                doc = decode.parse(data, self._index[cid][0], found)
                if isinstance(doc, dict) and decode.conv_id(doc) == cid:
                    findings.extend(found)
                    return self._index[cid][0], data, doc
        needle = cid.encode()  # not listed yet, or the export changed since: scan for it
        scratch: list = []
        for where, item in self._items(scratch):
            if item.data is not None and not item.problem and needle in item.data.lower():
                found: list = []
                doc = decode.parse(item.data, where, found)
                if isinstance(doc, dict) and decode.conv_id(doc) == cid:
                    findings.extend(found)
                    return where, item.data, doc
        findings.extend(
            f
            for f in scratch
            if f.code in ("bad-zip", "zip-refused", "truncated", "symlink", "not-regular", "unreadable", "missing")
        )
        return None

    def _read_at(self, where: str, offset: int, length: int) -> bytes | None:
        """``length`` bytes at ``offset`` of a conversations file (a zip member: of its spool), or None."""
        try:
            if self.zip_path is None:
                f, _ = reading.open_regular(where)
                with f:
                    f.seek(offset)
                    return f.read(length)
            if not self._spools:
                self._spool()
            spool, at = self._spools.get(where, (None, {}))
            if spool is None or (offset, length) not in at:
                return None
            spool.seek(at[offset, length])
            return spool.read(length)
        except (FileProblem, OSError):
            return None

    def _spool(self) -> None:
        """Copy the listed conversations' bytes (each within the cap), and nothing else, of every zip
        member to an anonymous temp file: a member's skipped elements never reach ``$TMPDIR``."""
        wanted: dict = {}
        for where, offset, length in self._index.values():
            wanted.setdefault(where, []).append((offset, length))
        for w, read in self._sources([]):
            ranges = sorted(wanted.get(w, ()))
            if not ranges:
                continue
            spool = tempfile.TemporaryFile(prefix="samctl-chatgpt-")
            at: dict = {}
            pos, i, cur = 0, 0, None  # cur: the bytes of the range being collected
            while i < len(ranges) and (chunk := read(1 << 20)):
                end = pos + len(chunk)
                while i < len(ranges) and ranges[i][0] < end:
                    off, n = ranges[i]
                    if cur is None:
                        cur = bytearray()
                    cur += chunk[off + len(cur) - pos : min(off + n, end) - pos]
                    if len(cur) < n:
                        break
                    at[off, n] = spool.tell()
                    spool.write(cur)
                    cur, i = None, i + 1
                pos = end
            self._spools[w] = (spool, at)
        self._spools.setdefault(None, (None, {}))  # (spooled once, even when no member had a range)

    def load(self, cid: str, findings: list):
        if not self.valid_id(cid):
            raise UsageError(f"{cid[:60]!r} is not a ChatGPT conversation id", hint=f"ids look like {self.id_rule}")
        hit = self._find(cid, findings)
        if hit is None:
            raise NotFound(f"no conversation {cid} in {self.describe()}")
        where, data, doc = hit
        return decode.conversation(doc, cid, where, findings, len(data))

    def raw_path(self, cid: str) -> Path:
        """The file that holds ``cid``: the zip, or (an unpacked export) the conversations file the last
        listing found it in (a search source's signature is that file's)."""
        if self.zip_path is not None:
            return self.zip_path
        if cid not in self._index:
            self.list_metas([])
        where = self._index.get(cid)
        return Path(where[0]) if where is not None else self.conv_dir / SINGLE

    def raw_part(self, cid: str, path: Path) -> bytes | None:
        """The conversation's own bytes, as stored in the export (one element of the array)."""
        hit = self._find(cid, [])
        if hit is None:
            raise NotFound(f"no conversation {cid} in {self.describe()}")
        return hit[1] + b"\n"

    def check(self, findings: list, fix: bool = False, force: bool = False) -> list[str]:
        """Every conversation decoded: zip safety, truncation, bad JSON, ids, duplicates, broken trees."""
        seen = set()
        for where, item in self._items(findings):
            at = f"{where}#{item.index}"
            if item.data is None or item.problem:
                findings.append(Finding(item.problem[0], at, item.problem[1]))
                continue
            conv = decode.from_bytes(item.data, at, findings)
            if conv is not None:
                if conv.meta.id in seen:
                    findings.append(Finding("duplicate-id", at, f"{conv.meta.id} appears twice", WARNING, conv.meta.id))
                seen.add(conv.meta.id)
        return []


def _reader(read, where: str, findings: list):
    """``read`` that ends the data (with a finding) instead of raising: a damaged zip member (bad CRC,
    bad deflate stream) or an I/O error mid-file reads as a cut file, and what came before still counts."""

    def safe(n: int) -> bytes:
        try:
            return read(n)
        except (zipfile.BadZipFile, OSError, ValueError, EOFError, RuntimeError, NotImplementedError) as exc:
            findings.append(Finding("unreadable", where, f"reading stopped: {str(exc)[:160]}"))
            return b""

    return safe


def zip_problems(infos) -> list[str]:
    """Why a zip must not be read (an export from OpenAI has none of these): traversal or odd names,
    symlinks, duplicates, encryption, unknown methods, and zip bombs by declared size and by ratio."""
    out, names, total = [], set(), 0
    for i in infos:
        n = i.filename
        shown = n[:80].encode("unicode_escape").decode()
        if n.startswith("/") or "\\" in n or "\0" in n or re.match(r"[A-Za-z]:", n) or ".." in n.split("/"):
            out.append(f"member {shown!r} has an unsafe name")
        if stat.S_ISLNK(i.external_attr >> 16):
            out.append(f"member {shown!r} is a symlink")
        if n in names:
            out.append(f"member {shown!r} appears twice")
        names.add(n)
        if i.flag_bits & 0x1:
            out.append(f"member {shown!r} is encrypted")
        if i.compress_type not in _OK_METHODS:
            out.append(f"member {shown!r} uses compression method {i.compress_type}")
        if i.file_size > ZIP_MAX_MEMBER:
            out.append(f"member {shown!r} declares {i.file_size} bytes, over the {ZIP_MAX_MEMBER}-byte limit")
        if i.file_size > ZIP_RATIO_FLOOR and i.file_size > ZIP_MAX_RATIO * max(i.compress_size, 1):
            out.append(f"member {shown!r} expands {i.file_size // max(i.compress_size, 1)}:1 (a zip bomb?)")
        total += i.file_size
    if total > ZIP_MAX_TOTAL:
        out.append(f"the members declare {total} bytes in all, over the {ZIP_MAX_TOTAL}-byte limit")
    return out


def directory_problem(f) -> str | None:
    """Why the zip open in ``f`` must not be handed to zipfile, which reads its whole central directory
    into objects (10^6 members: seconds and hundreds of MB): too many members declared, or too large a
    directory, by the end-of-directory records (zip64 included).  None when they are within the caps or
    absent (zipfile then says what is wrong)."""
    try:
        size = f.seek(0, 2)
        n = min(size, 22 + 65535)
        f.seek(size - n)
        tail = f.read(n)
        i = tail.rfind(b"PK\x05\x06")
        if i < 0 or len(tail) - i < 22:
            return None
        entries, cd_size = struct.unpack("<HI", tail[i + 10 : i + 16])
        if (entries == 0xFFFF or cd_size == 0xFFFFFFFF) and i >= 20 and tail[i - 20 : i - 16] == b"PK\x06\x07":
            f.seek(struct.unpack("<Q", tail[i - 12 : i - 4])[0])
            rec = f.read(56)
            if len(rec) == 56 and rec[:4] == b"PK\x06\x06":
                entries, cd_size = struct.unpack("<QQ", rec[32:48])
    except (OSError, ValueError, struct.error):
        return None
    finally:
        try:
            f.seek(0)
        except (OSError, ValueError):
            pass
    if entries > ZIP_MAX_MEMBERS:
        return f"it declares {entries} members, over the {ZIP_MAX_MEMBERS}-member limit"
    if cd_size > ZIP_MAX_DIRECTORY:
        return f"its central directory is {cd_size} bytes, over the {ZIP_MAX_DIRECTORY}-byte limit"
    return None


def _zip_holds_export(p: Path) -> bool:
    """Whether the zip at ``p`` has ``conversations.json`` or its shards (one read of its directory); a
    zip too large to list is taken as one (the store then refuses it with a finding)."""
    try:
        f, _ = reading.open_regular(p)
    except FileProblem:
        return False
    with f:
        if directory_problem(f):
            return True
        try:
            with zipfile.ZipFile(f) as zf:
                names = zf.namelist()
        except (zipfile.BadZipFile, OSError, ValueError, EOFError, NotImplementedError, RuntimeError):
            return True  # (a damaged export is still reported as one, by the store)
    return any(n == SINGLE or SHARD_RE.match(n) for n in names)


def looks_like_export(p: Path):
    """("dir", folder) or ("zip", file) if ``p`` is a ChatGPT export, else None.  A folder counts when it
    holds conversation shards, or a ``conversations.json`` that starts as an array of objects with a
    ``mapping`` (SAM's legacy ``conversations.json`` has none) or sits beside ``chat.html``/``user.json``."""
    try:
        if p.is_file() and not p.is_symlink() and p.name.lower().endswith(".zip"):
            return ("zip", p) if _zip_holds_export(p) else None
        if not p.is_dir():
            return None
        names = set(os.listdir(p))
    except OSError:
        return None
    if any(SHARD_RE.match(n) for n in names):
        return "dir", p
    if SINGLE in names:
        if names & {"chat.html", "user.json", "message_feedback.json", "export_manifest.json"}:
            return "dir", p
        try:
            f, _ = reading.open_regular(p / SINGLE)
            with f:
                head = f.read(1 << 16)
        except (FileProblem, OSError):
            return None
        if head.lstrip(b"\xef\xbb\xbf \t\r\n").startswith(b"[") and b'"mapping"' in head:
            return "dir", p
    return None
