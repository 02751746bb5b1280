"""The attic: round trips are exact; tampered, hostile or bomb entries are refused with a finding, never extracted."""

from __future__ import annotations

import hashlib
import io
import os
import tarfile
from pathlib import Path

import orjson
import pytest

from samctl.core import attic
from samctl.formats import open_store

MID = "20260810_140307_512"
SID = "8B58CBC4-ACA7-4811-AE66-C01921690310"


def _state(paths, root):
    out = {}
    for p in paths:
        st = os.lstat(p)
        data = Path(p).read_bytes() if os.path.isfile(p) else None
        out[str(Path(p).relative_to(root))] = (st.st_mode, st.st_mtime_ns, data)
    return out


@pytest.mark.parametrize("which", ["mermaid", "sam"])
def test_pack_verify_unpack_round_trip(which, mermaid_demo, sam_demo, tmp_path):
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
    assert after == before
    found = []
    assert [x.stem for x in attic.list_entries(store, found)] == [e.stem] and found == []


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
        manifest_members = [{"name": ti.name, "type": "dir" if ti.isdir() else "file", "size": len(d or b""),
                             "sha256": hashlib.sha256(d or b"").hexdigest(), "mode": 0o600, "mtime_ns": 0}
                            for ti, d in members]
    man = {"samctl_attic": 1, "id": cid, "state": "deleted", "when": "2026-01-01T00:00:00.000000Z",
           "when_ts": 1767225600.0, "store": store.name, "from": str(store.conv_dir), "title": "evil",
           "tar": {"name": stem + ".tar.zst", "size": len(comp), "sha256": hashlib.sha256(comp).hexdigest(),
                   "level": 3},
           "members": manifest_members}
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
    mm = [{"name": f"{MID}.json", "type": "file", "size": len(data), "sha256": "0" * 64, "mode": 0o600,
           "mtime_ns": 0}]
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
    mm = [{"name": ok, "type": "file", "size": len(data), "sha256": hashlib.sha256(data).hexdigest(),
           "mode": 0o600, "mtime_ns": 0}]
    e = _entry_with(store, MID, [(_ti(name, data), data)], mm)
    _refused(e, tmp_path, "attic-unsafe")
    assert not (tmp_path / "escape.json").exists()


def test_manifest_with_hostile_names_is_not_an_entry(mermaid_demo):
    store = open_store(str(mermaid_demo))
    data = b"x"
    mm = [{"name": "../../evil", "type": "file", "size": 1, "sha256": hashlib.sha256(data).hexdigest(),
           "mode": 0o600, "mtime_ns": 0}]
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
    ti.type = {"symlink": tarfile.SYMTYPE, "hardlink": tarfile.LNKTYPE, "chardev": tarfile.CHRTYPE,
               "fifo": tarfile.FIFOTYPE}[kind]
    ti.linkname = "/etc/passwd" if kind in ("symlink", "hardlink") else ""
    mm = [{"name": name, "type": "file", "size": 0, "sha256": hashlib.sha256(b"").hexdigest(), "mode": 0o600,
           "mtime_ns": 0}]
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
    mm = [{"name": f"{MID}.json", "type": "file", "size": 2, "sha256": hashlib.sha256(small).hexdigest(),
           "mode": 0o600, "mtime_ns": 0}]
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
    good = [{"name": f"{MID}.json", "type": "file", "size": 2, "sha256": hashlib.sha256(d).hexdigest(),
             "mode": 0o600, "mtime_ns": 0}]
    e = _entry_with(store, MID, [(_ti(f"{MID}.json", d), d), (_ti(f"{MID}.meta", d), d)], good)
    _refused(e, tmp_path, "attic-tampered")
    e = _entry_with(store, MID, [(_ti(f"{MID}.json", d), d), (_ti(f"{MID}.json", d), d)], good)
    _refused(e, tmp_path, "attic-tampered")


def test_missing_member_is_refused(mermaid_demo, tmp_path):
    store = open_store(str(mermaid_demo))
    d = b"{}"
    mm = [{"name": f"{MID}.{x}", "type": "file", "size": 2, "sha256": hashlib.sha256(d).hexdigest(), "mode": 0o600,
           "mtime_ns": 0} for x in ("json", "meta")]
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
