"""The attic: round trips are exact; tampered, hostile or bomb entries are refused with a finding, never extracted."""

from __future__ import annotations

import hashlib
import io
import os
import stat
import tarfile
from pathlib import Path

import orjson
import pytest

from samctl.attic import entries as attic
from samctl.attic import tarscan, tarzst
from samctl.stores import open_store

MID = "20260810_140307_512"
SID = "8B58CBC4-ACA7-4811-AE66-C01921690310"


def _state(paths, root):
    out = {}
    for p in paths:
        st = os.lstat(p)
        data = Path(p).read_bytes() if os.path.isfile(p) else None
        out[str(Path(p).relative_to(root))] = (st.st_mode, st.st_mtime_ns, data)
    return out


@pytest.mark.parametrize("path", ["in-memory", "streamed"])
@pytest.mark.parametrize("which", ["mermaid", "sam"])
def test_pack_verify_unpack_round_trip(which, path, mermaid_demo, sam_demo, tmp_path, monkeypatch):
    if path == "streamed":  # what conversations over tarzst.SMALL take, and archives over tarscan.READ_WHOLE
        monkeypatch.setattr(tarzst, "SMALL", -1)
        monkeypatch.setattr(tarscan, "READ_WHOLE", -1)
    store = open_store(str(mermaid_demo if which == "mermaid" else sam_demo))
    cid = MID if which == "mermaid" else SID
    paths = store.conversation_files(cid)
    os.chmod(paths[-1], 0o640)  # an unusual mode comes back as it was
    os.utime(paths[-1], ns=(1_700_000_000_123_456_789, 1_700_000_000_123_456_789))
    before = _state(paths, store.conv_dir)
    e = attic.pack(store, cid, "deleted", paths, {"title": "t"})
    assert attic.verify(e) == []
    a = attic.attic_dir(store)
    assert os.stat(a).st_mode & 0o777 == 0o700
    assert os.stat(e.manifest_path).st_mode & 0o777 == 0o600
    assert os.stat(e.tar_path).st_mode & 0o777 == 0o600
    m = orjson.loads(e.manifest_path.read_bytes())
    assert m["state"] == "deleted" and m["id"] == cid and m["from"] == str(store.conv_dir)
    assert all(len(x["sha256"]) == 64 for x in m["members"] if x["type"] == "file")
    dest = tmp_path / "out"
    dest.mkdir()
    attic.unpack(e, dest)
    after = _state([dest / n for n in before], dest)
    # files come back exactly; folders stay 0700 until restore's place gives them theirs
    assert {n: s for n, s in after.items() if s[2] is not None} == {n: s for n, s in before.items() if s[2] is not None}
    assert all(stat.S_IMODE(s[0]) == 0o700 for s in after.values() if s[2] is None)
    found = []
    assert [x.stem for x in attic.list_entries(store, found)] == [e.stem] and found == []


@pytest.mark.parametrize("which", ["mermaid", "sam"])
def test_the_tar_built_in_memory_is_the_streamed_tar_byte_for_byte(which, mermaid_demo, sam_demo):
    import zstandard

    store = open_store(str(mermaid_demo if which == "mermaid" else sam_demo))
    cid = MID if which == "mermaid" else SID
    paths = store.conversation_files(cid)
    (paths[-1] if which == "mermaid" else paths[0] / "empty.txt").write_bytes(b"")  # an empty member too
    if which == "sam":  # names a plain ustar header cannot hold: PAX headers, as tarfile writes them
        (paths[0] / "notes-\u00e9t\u00e9.txt").write_bytes(b"accents")
        (paths[0] / ("long-" * 25 + ".txt")).write_bytes(b"long name")
    paths = store.conversation_files(cid)
    assert which == "mermaid" or len(paths) == 6
    os.chmod(paths[-1], 0o640)
    members, tar = tarzst.tar_in_memory(store, paths)
    out = io.BytesIO()
    streamed_members, size, sha = tarzst.tar_streamed(store, paths, out, 3)
    assert (size, sha) == (len(out.getvalue()), hashlib.sha256(out.getvalue()).hexdigest())
    streamed = zstandard.ZstdDecompressor().stream_reader(io.BytesIO(out.getvalue()), read_across_frames=True).read()
    assert tar == streamed and len(tar) % tarfile.RECORDSIZE == 0
    assert [m.to_dict() for m in members] == [m.to_dict() for m in streamed_members]
    assert tarscan.plain_layout(tar, members) == (which == "mermaid")  # PAX headers take the general reader


def _entry_with(store, cid, members, manifest_members=None, level=3, raw_tar=None):
    """Write a hand-made attic entry: (TarInfo, bytes) members; the manifest agrees unless told otherwise."""
    import zstandard

    a = attic.ensure_attic(store)
    stem = f"{cid}.deleted.20260101T000000Z"
    if raw_tar is None:
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tf:
            for ti, data in members:
                tf.addfile(ti, io.BytesIO(data) if data is not None else None)
        raw_tar = buf.getvalue()
    comp = zstandard.ZstdCompressor(level=level).compress(raw_tar)
    (a / (stem + ".tar.zst")).write_bytes(comp)
    if manifest_members is None:
        manifest_members = [
            {
                "name": ti.name,
                "type": "dir" if ti.isdir() else "file",
                "size": len(d or b""),
                "sha256": hashlib.sha256(d or b"").hexdigest(),
                "mode": 0o600,
                "mtime_ns": 0,
            }
            for ti, d in members
        ]
    man = {
        "samctl_attic": 1,
        "id": cid,
        "state": "deleted",
        "when": "2026-01-01T00:00:00.000000Z",
        "when_ts": 1767225600.0,
        "store": store.name,
        "from": str(store.conv_dir),
        "title": "evil",
        "tar": {"name": stem + ".tar.zst", "size": len(comp), "sha256": hashlib.sha256(comp).hexdigest(), "level": 3},
        "members": manifest_members,
    }
    (a / (stem + ".manifest.json")).write_bytes(orjson.dumps(man))
    return attic.load_manifest(store, a / (stem + ".manifest.json"))


def _ti(name, data=b"", **kw):
    ti = tarfile.TarInfo(name)
    ti.size = len(data)
    for k, v in kw.items():
        setattr(ti, k, v)
    return ti


def _refused(e, tmp_path, code):
    dest = tmp_path / "dest"
    dest.mkdir(exist_ok=True)
    with pytest.raises(attic.AtticProblem) as exc:
        attic.unpack(e, dest)
    codes = [f.code for f in exc.value.findings]
    assert code in codes, codes
    assert list(dest.iterdir()) == []  # never extracted
    assert code in [f.code for f in attic.verify(e)]
    return exc.value


def test_tampered_content_is_refused(mermaid_demo, tmp_path):
    store = open_store(str(mermaid_demo))
    data = b'{"id": "x"}'
    members = [(_ti(f"{MID}.json", data), data)]
    mm = [{"name": f"{MID}.json", "type": "file", "size": len(data), "sha256": "0" * 64, "mode": 0o600, "mtime_ns": 0}]
    e = _entry_with(store, MID, members, mm)
    _refused(e, tmp_path, "attic-tampered")


def test_tampered_compressed_bytes_are_refused_before_decompressing(mermaid_demo, tmp_path):
    store = open_store(str(mermaid_demo))
    e = attic.pack(store, MID, "deleted", store.conversation_files(MID))
    raw = bytearray(e.tar_path.read_bytes())
    raw[len(raw) // 2] ^= 0xFF
    e.tar_path.write_bytes(bytes(raw))
    p = _refused(e, tmp_path, "attic-tampered")
    assert "not decompressed" in p.findings[0].reason


@pytest.mark.parametrize("name", ["../escape.json", "/etc/passwd", f"{MID}.json/../../x", "./" + MID + ".json"])
def test_traversal_and_absolute_names_are_refused(name, mermaid_demo, tmp_path):
    store = open_store(str(mermaid_demo))
    data = b"pwned"
    ok = f"{MID}.json"
    # the manifest names a legal member; the tar holds a hostile name
    mm = [
        {
            "name": ok,
            "type": "file",
            "size": len(data),
            "sha256": hashlib.sha256(data).hexdigest(),
            "mode": 0o600,
            "mtime_ns": 0,
        }
    ]
    e = _entry_with(store, MID, [(_ti(name, data), data)], mm)
    _refused(e, tmp_path, "attic-unsafe")
    assert not (tmp_path / "escape.json").exists()


def test_manifest_with_hostile_names_is_not_an_entry(mermaid_demo):
    store = open_store(str(mermaid_demo))
    data = b"x"
    mm = [
        {
            "name": "../../evil",
            "type": "file",
            "size": 1,
            "sha256": hashlib.sha256(data).hexdigest(),
            "mode": 0o600,
            "mtime_ns": 0,
        }
    ]
    with pytest.raises(attic.AtticProblem) as exc:
        _entry_with(store, MID, [(_ti("../../evil", data), data)], mm)
    assert exc.value.findings[0].code == "attic-bad-manifest"
    found = []
    assert attic.list_entries(store, found) == []
    assert [f.code for f in found] == ["attic-bad-manifest"]


@pytest.mark.parametrize("kind", ["symlink", "hardlink", "chardev", "fifo"])
def test_link_and_device_members_are_refused(kind, sam_demo, tmp_path):
    store = open_store(str(sam_demo))
    name = f"{SID}/conversation.json"
    ti = _ti(name)
    ti.type = {
        "symlink": tarfile.SYMTYPE,
        "hardlink": tarfile.LNKTYPE,
        "chardev": tarfile.CHRTYPE,
        "fifo": tarfile.FIFOTYPE,
    }[kind]
    ti.linkname = "/etc/passwd" if kind in ("symlink", "hardlink") else ""
    mm = [
        {
            "name": name,
            "type": "file",
            "size": 0,
            "sha256": hashlib.sha256(b"").hexdigest(),
            "mode": 0o600,
            "mtime_ns": 0,
        }
    ]
    e = _entry_with(store, SID, [(ti, None)], mm)
    _refused(e, tmp_path, "attic-unsafe")


def test_decompression_bomb_stops_at_the_manifest_cap(mermaid_demo, tmp_path):
    store = open_store(str(mermaid_demo))
    small = b"{}"
    big = b"\0" * (64 << 20)  # 64 MiB of zeros: a few KiB compressed
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tf:
        tf.addfile(_ti(f"{MID}.json", small), io.BytesIO(small))
        tf.addfile(_ti(f"{MID}.jsonl", big), io.BytesIO(big))
    mm = [
        {
            "name": f"{MID}.json",
            "type": "file",
            "size": 2,
            "sha256": hashlib.sha256(small).hexdigest(),
            "mode": 0o600,
            "mtime_ns": 0,
        }
    ]
    e = _entry_with(store, MID, [], mm, raw_tar=buf.getvalue())
    assert e.tar_path.stat().st_size < 1 << 20
    p = _refused(e, tmp_path, "attic-bomb")
    assert "decompression bomb" in p.findings[0].reason


def test_manifest_claiming_more_than_the_absolute_cap_is_not_decompressed(mermaid_demo, tmp_path):
    store = open_store(str(mermaid_demo))
    e = attic.pack(store, MID, "deleted", store.conversation_files(MID))
    problems = attic.verify(e, absolute_cap=1000)
    assert [f.code for f in problems] == ["attic-too-large"]
    with pytest.raises(attic.AtticProblem):
        attic.unpack(e, tmp_path, absolute_cap=1000)


def test_extra_and_duplicate_members_are_refused(mermaid_demo, tmp_path):
    store = open_store(str(mermaid_demo))
    d = b"{}"
    good = [
        {
            "name": f"{MID}.json",
            "type": "file",
            "size": 2,
            "sha256": hashlib.sha256(d).hexdigest(),
            "mode": 0o600,
            "mtime_ns": 0,
        }
    ]
    e = _entry_with(store, MID, [(_ti(f"{MID}.json", d), d), (_ti(f"{MID}.meta", d), d)], good)
    _refused(e, tmp_path, "attic-tampered")
    e = _entry_with(store, MID, [(_ti(f"{MID}.json", d), d), (_ti(f"{MID}.json", d), d)], good)
    _refused(e, tmp_path, "attic-tampered")


def test_missing_member_is_refused(mermaid_demo, tmp_path):
    store = open_store(str(mermaid_demo))
    d = b"{}"
    mm = [
        {
            "name": f"{MID}.{x}",
            "type": "file",
            "size": 2,
            "sha256": hashlib.sha256(d).hexdigest(),
            "mode": 0o600,
            "mtime_ns": 0,
        }
        for x in ("json", "meta")
    ]
    e = _entry_with(store, MID, [(_ti(f"{MID}.json", d), d)], mm)
    _refused(e, tmp_path, "attic-incomplete")


def test_garbage_archive_is_a_finding_not_a_crash(mermaid_demo, tmp_path):
    store = open_store(str(mermaid_demo))
    d = b"{}"
    e = _entry_with(store, MID, [(_ti(f"{MID}.json", d), d)])
    junk = os.urandom(4096)
    e.tar_path.write_bytes(junk)
    man = orjson.loads(e.manifest_path.read_bytes())
    man["tar"].update(size=len(junk), sha256=hashlib.sha256(junk).hexdigest())
    e.manifest_path.write_bytes(orjson.dumps(man))
    e = attic.load_manifest(store, e.manifest_path)
    _refused(e, tmp_path, "attic-corrupt")


def test_listing_reports_orphans_and_size_mismatches(mermaid_demo):
    store = open_store(str(mermaid_demo))
    e = attic.pack(store, MID, "archived", store.conversation_files(MID))
    a = attic.attic_dir(store)
    (a / f"{MID}.deleted.20200101T000000Z.tar.zst").write_bytes(b"partial")
    found = []
    assert [x.stem for x in attic.list_entries(store, found)] == [e.stem]
    assert [f.code for f in found] == ["attic-incomplete"]
    with open(e.tar_path, "ab") as f:
        f.write(b"x")
    found = []
    assert attic.list_entries(store, found) == []
    assert "attic-tampered" in [f.code for f in found]


def test_attic_that_is_a_symlink_is_refused(mermaid_demo, tmp_path):
    store = open_store(str(mermaid_demo))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    os.symlink(elsewhere, attic.attic_dir(store))
    from samctl.errors import UnsafePath

    with pytest.raises(UnsafePath):
        attic.pack(store, MID, "deleted", store.conversation_files(MID))
    assert list(elsewhere.iterdir()) == []


# --- the plain-layout fast path reads exactly as the general tar reader --------------------------


def _fix_checksum(tar: bytearray, off: int) -> None:
    h = tar[off : off + 512]
    tar[off + 148 : off + 156] = b"%06o\0 " % (256 + sum(h[:148]) + sum(h[156:512]))


def _set(field: slice, value: bytes, fix: bool = True):
    def mutate(tar: bytearray) -> None:
        tar[field] = value.ljust(field.stop - field.start, b"\0")
        if fix:
            _fix_checksum(tar, 0)

    return mutate


def _append_garbage(tar: bytearray) -> None:
    tar[-1] = 0x41


def _truncate_end(tar: bytearray) -> None:
    del tar[-10240:]


def _flip_data(tar: bytearray) -> None:
    off = 0
    while not int(tar[off + 124 : off + 136].strip(b"\0 ") or b"0", 8):  # to the first member with data
        off += 512
    tar[off + 512] ^= 0x01


def _extra_member(tar: bytearray) -> None:
    end = len(tar.rstrip(b"\0"))
    end += -end % 512
    ti = tarfile.TarInfo("extra.json")
    ti.size = 5
    tar[end:end] = ti.tobuf(tarfile.PAX_FORMAT) + b"extra" + b"\0" * 507


def _swap_first_two(tar: bytearray) -> None:
    sizes, off = [], 0
    for _ in range(2):
        size = int(tar[off + 124 : off + 136].strip(b"\0 ") or b"0", 8)
        n = 512 + size + (-size % 512)
        sizes.append((off, n))
        off += n
    (a, na), (b, nb) = sizes
    tar[a : b + nb] = tar[b : b + nb] + tar[a : a + na]


PLAIN_MUTATIONS = {
    "unchanged": lambda tar: None,
    "name": _set(slice(0, 1), b"X"),
    "name-with-slash": _set(slice(0, 100), b"x/"),
    "symlink": _set(slice(156, 157), b"2"),
    "hardlink": _set(slice(156, 157), b"1"),
    "device": _set(slice(156, 157), b"3"),
    "old-regular": _set(slice(156, 157), b"\0"),
    "pax-type": _set(slice(156, 157), b"x"),
    "size": _set(slice(124, 136), b"%011o\0" % 1),
    "size-bad-checksum": _set(slice(124, 136), b"%011o\0" % 1, fix=False),
    "size-not-octal": _set(slice(124, 136), b"9999\0"),
    "checksum": _set(slice(148, 156), b"000000\0 ", fix=False),
    "gnu-magic": _set(slice(257, 265), b"ustar  \0"),
    "prefix": _set(slice(345, 350), b"../.."),
    "trailing-garbage": _append_garbage,
    "no-end-blocks": _truncate_end,
    "data": _flip_data,
    "order": _swap_first_two,
    "extra-member": _extra_member,
}


@pytest.mark.parametrize("reader", ["memory", "memory-helper-thread", "read-ahead", "stream"])
@pytest.mark.parametrize("which", ["mermaid", "sam"])
@pytest.mark.parametrize("mutation", sorted(PLAIN_MUTATIONS))
def test_plain_layout_fast_path_agrees_with_the_general_reader(
    which, mutation, reader, mermaid_demo, sam_demo, tmp_path, monkeypatch
):
    """For samctl's own tars and every kind of damage to them (the manifest rewritten to match the
    damaged archive, as a hostile attic would), verify and unpack give the same findings and the same
    files whether or not a plain-layout fast path takes the tar: in memory (hashing each member
    before writing it, or, as for bigger tars, on a helper thread while writing; or decompressed
    ahead, as restore's helper thread does for the entries after the one it writes), or as a stream
    (as for tars too big to decompress in memory; it hands over to tarfile when the layout is not
    samctl's, undoing what it extracted)."""
    import zstandard

    if reader == "memory-helper-thread":
        monkeypatch.setattr(tarscan, "PARALLEL_HASH", 0)
    streamed = []
    if reader == "stream":
        monkeypatch.setattr(tarscan, "IN_MEMORY", -1)
        real_stream = tarscan._scan_plain_stream

        def spy(entry, raw, sink):
            streamed.append(real_stream(entry, raw, sink))
            return streamed[-1]

        monkeypatch.setattr(tarscan, "_scan_plain_stream", spy)

    store = open_store(str(mermaid_demo if which == "mermaid" else sam_demo))
    cid = MID if which == "mermaid" else SID
    e = attic.pack(store, cid, "deleted", store.conversation_files(cid))
    tar = bytearray(zstandard.ZstdDecompressor().decompress(e.tar_path.read_bytes()))
    assert tarscan.plain_layout(bytes(tar), e.members)  # what samctl writes takes the fast path
    PLAIN_MUTATIONS[mutation](tar)
    comp = zstandard.ZstdCompressor(level=3).compress(bytes(tar))
    e.tar_path.write_bytes(comp)
    man = orjson.loads(e.manifest_path.read_bytes())
    man["tar"].update(size=len(comp), sha256=hashlib.sha256(comp).hexdigest())
    e.manifest_path.write_bytes(orjson.dumps(man))
    e = attic.load_manifest(store, e.manifest_path)

    def outcome(tag):
        dest = tmp_path / tag
        dest.mkdir()
        try:
            attic.unpack(e, dest, archive=tarscan.read_ahead(e) if reader == "read-ahead" else None)
            problem = None
        except attic.AtticProblem as exc:
            problem = [f.code for f in exc.findings]
        files = {str(p.relative_to(dest)): (p.read_bytes() if p.is_file() else None) for p in dest.rglob("*")}
        return [f.code for f in attic.verify(e)], problem, files

    # the fast path takes only samctl's exact layout; any other damage goes to the general reader
    assert tarscan.plain_layout(bytes(tar), e.members) == (mutation in ("unchanged", "data"))
    fast = outcome("fast")
    if reader == "stream":  # the stream reader finishes samctl's layout, stopping at the end block as tarfile does
        assert (streamed[0] is not None) == (mutation in ("unchanged", "data", "trailing-garbage"))
    monkeypatch.setattr(tarscan, "plain_layout", lambda tar, members: False)  # (PARALLEL_HASH stays as set)
    monkeypatch.setattr(tarscan, "_scan_plain_stream", lambda entry, raw, sink: None)
    general = outcome("general")
    assert fast == general
    if mutation in ("unchanged", "data"):
        assert fast[0] == ([] if mutation == "unchanged" else ["attic-tampered"])


def test_read_ahead_decompresses_only_an_archive_that_matches_its_manifest(mermaid_demo, tmp_path, monkeypatch):
    import zstandard

    store = open_store(str(mermaid_demo))
    e = attic.pack(store, MID, "deleted", store.conversation_files(MID))
    comp = e.tar_path.read_bytes()
    data, n, digest, tar = tarscan.read_ahead(e)
    assert (data, n, digest) == (comp, len(comp), e.tar_sha256)
    assert tar == zstandard.ZstdDecompressor().decompress(comp)
    monkeypatch.setattr(tarscan, "DECOMPRESS_AHEAD", len(tar) - 1)  # (the cap is above the tar's length)
    assert tarscan.read_ahead(e)[3] is None  # too big to wait in memory: scan decompresses it when its turn comes
    monkeypatch.undo()
    bad = bytearray(comp)
    bad[len(bad) // 2] ^= 0xFF
    e.tar_path.write_bytes(bytes(bad))
    ahead = tarscan.read_ahead(e)
    assert ahead[3] is None  # never decompressed
    dest = tmp_path / "dest"
    dest.mkdir()
    with pytest.raises(attic.AtticProblem) as exc:
        attic.unpack(e, dest, archive=ahead)
    assert [f.code for f in exc.value.findings] == ["attic-tampered"] and list(dest.iterdir()) == []


@pytest.mark.parametrize("which", ["mermaid", "sam"])
def test_a_big_archive_is_decompressed_from_the_file_it_was_hashed_from(
    which, mermaid_demo, sam_demo, tmp_path, monkeypatch
):
    """A big archive is hashed, then decompressed as a stream: another file put in its place between
    the two (here a valid archive of other content) is never what gets decompressed."""
    import zstandard

    monkeypatch.setattr(tarscan, "READ_WHOLE", -1)  # (every archive is "big" here)
    store = open_store(str(mermaid_demo if which == "mermaid" else sam_demo))
    cid = MID if which == "mermaid" else SID
    paths = store.conversation_files(cid)
    before = {str(p.relative_to(store.conv_dir)): p.read_bytes() for p in paths if p.is_file()}
    e = attic.pack(store, cid, "deleted", paths)
    archive = tarscan.read_archive(e)  # hashed: matches the manifest
    assert archive[1:] == (e.tar_size, e.tar_sha256)
    tar = bytearray(zstandard.ZstdDecompressor().decompress(e.tar_path.read_bytes()))
    _flip_data(tar)
    other = tmp_path / "other.tar.zst"
    other.write_bytes(zstandard.ZstdCompressor(level=3).compress(bytes(tar)))
    os.replace(other, e.tar_path)  # swapped in after the hash
    dest = tmp_path / "dest"
    dest.mkdir()
    names = attic.unpack(e, dest, archive=archive)
    assert {n: (dest / n).read_bytes() for n in names if (dest / n).is_file()} == before


def test_the_helper_thread_is_started_afresh_in_a_forked_child():
    """A child forked after the helper started (the fault-injection tests fork) must not queue work
    behind a thread that does not exist in it."""
    parent = tarzst.helper()
    assert parent.submit(lambda: 1).result(timeout=10) == 1
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            child = tarzst.helper()
            code = 0 if child is not parent and child.submit(lambda: 2).result(timeout=10) == 2 else 1
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0


def test_each_thread_has_its_own_zstd_contexts():
    """A zstandard context used by two threads at once corrupts its output ("Data corruption
    detected": an intact entry reported damaged), so each thread gets its own context, kept for it.
    (Decompressing restore's next entry on the helper thread, tried, shared the one context.)"""
    import zstandard

    assert tarzst.decompressor() is tarzst.decompressor()
    assert tarzst.compressor(3, 0) is tarzst.compressor(3, 0)
    other = tarzst.helper().submit(lambda: (tarzst.decompressor(), tarzst.compressor(3, 0))).result(timeout=10)
    assert other[0] is not tarzst.decompressor() and other[1] is not tarzst.compressor(3, 0)

    # and, used at once from both threads, every frame decompresses to what was compressed
    frames = [
        zstandard.ZstdCompressor(level=3).compress(os.urandom(64 << 10) * 4 + bytes([i]) * 4096) for i in range(8)
    ]
    want = [zstandard.ZstdDecompressor().decompress(f) for f in frames]

    def churn():
        return all(
            tarzst.decompressor().decompressobj().decompress(f) == w for _ in range(40) for f, w in zip(frames, want)
        )

    both = tarzst.helper().submit(churn)
    assert churn() and both.result(timeout=60)
