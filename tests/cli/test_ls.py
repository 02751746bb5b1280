import json
import os
import shutil
from pathlib import Path

import pytest

from tests.conftest import fingerprint, resealed

MERMAID_IDS = ["20260901_170000_250", "20260812_091500_004", "20260810_140307_512"]
SAM_IDS = [
    "C2A1F0E4-3B5D-4E6F-8A9B-0C1D2E3F4A5B",
    "8B58CBC4-ACA7-4811-AE66-C01921690310",
    "D3B2A1C0-9F8E-4D7C-AB6A-5F4E3D2C1B0A",
]


def test_mermaid_ls_table_newest_first(run, mermaid_demo):
    r = run("--root", mermaid_demo, "ls")
    assert r.exit_code == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0].split()[:4] == ["ID", "CREATED", "UPDATED", "MSGS"]
    assert [ln.split()[0] for ln in lines[1:]] == MERMAID_IDS
    assert "Fix the flaky test in tests/parser.rs" in r.stdout
    assert r.stderr == ""


def test_mermaid_ls_jsonl_is_one_object_per_line(run, mermaid_demo):
    r = run("--root", mermaid_demo, "ls", "--format", "jsonl")
    assert r.exit_code == 0
    rows = [json.loads(x) for x in r.stdout.splitlines()]
    assert [x["id"] for x in rows] == MERMAID_IDS
    spec = rows[2]
    assert spec["title"] == "Fix the flaky test in tests/parser.rs"
    assert spec["message_count"] == 4  # (issue #33: messages is only ever a list)
    assert spec["updated"] == "2026-08-10T14:04:02.655120734-04:00"
    assert spec["store"] == "mermaid" and spec["pinned"] is False
    assert spec["size"] > 3428  # snapshot + meta + log
    assert set(spec) == {
        "id",
        "title",
        "created",
        "updated",
        "last_activity",
        "message_count",
        "size",
        "pinned",
        "store",
        "path",
        "project",
        "branch",
        "continues",
    }


@pytest.mark.parametrize("sub", ["", ".mermaid", ".mermaid/conversations"])
def test_root_accepts_each_mermaid_form(run, mermaid_demo, sub):
    r = run("--root", mermaid_demo / sub if sub else mermaid_demo, "ls", "--format", "json")
    assert r.exit_code == 0
    assert [x["id"] for x in json.loads(r.stdout)] == MERMAID_IDS


def test_root_from_environment(run, mermaid_demo):
    r = run("ls", "--format", "json", env={"SAMCTL_ROOT": str(mermaid_demo)})
    assert r.exit_code == 0 and len(json.loads(r.stdout)) == 3


def test_default_root_is_the_mermaid_folder_of_the_cwd(run, mermaid_demo, monkeypatch):
    monkeypatch.chdir(mermaid_demo)
    r = run("ls", "--format", "json")
    assert r.exit_code == 0 and len(json.loads(r.stdout)) == 3


def test_no_store_anywhere_is_exit_4(run, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path))
    r = run("ls")
    assert r.exit_code == 4
    assert "no store found" in r.stderr and "--root" in r.stderr


@pytest.mark.parametrize("what", ["missing", "file", "emptydir", "otherdir"])
def test_root_that_is_not_a_store_is_exit_4(run, tmp_path, what):
    p = tmp_path / "x"
    if what == "file":
        p.write_text("hi")
    elif what == "emptydir":
        p.mkdir()
    elif what == "otherdir":
        p.mkdir()
        (p / "notes.txt").write_text("hi")
    r = run("--root", p, "ls")
    assert r.exit_code == 4, r.stderr
    assert r.stderr.startswith("samctl: error: ")
    assert "Traceback" not in r.stderr


def test_filters_and_sorts(run, mermaid_demo):
    def ids(*args):
        r = run("--root", mermaid_demo, "ls", "--format", "jsonl", *args)
        assert r.exit_code == 0, r.stderr
        return [json.loads(x)["id"] for x in r.stdout.splitlines()]

    assert ids("--limit", "1") == MERMAID_IDS[:1]
    assert ids("--reverse") == MERMAID_IDS[::-1]
    assert ids("--title", "FLAKY") == ["20260810_140307_512"]
    assert ids("--since", "2026-08-11") == MERMAID_IDS[:2]
    assert ids("--until", "2026-08-11") == MERMAID_IDS[2:]
    assert ids("--since", "99999d") == MERMAID_IDS
    assert ids("--since", "1d") == []
    assert ids("--sort", "messages") == ["20260812_091500_004", "20260810_140307_512", "20260901_170000_250"]
    assert ids("--sort", "title") == ["20260812_091500_004", "20260810_140307_512", "20260901_170000_250"]
    assert ids("--pinned") == []


def test_bad_since_is_a_usage_error(run, mermaid_demo):
    r = run("--root", mermaid_demo, "ls", "--since", "last tuesday")
    assert r.exit_code == 2
    assert "not a date or an age" in r.stderr


def test_sam_ls_every_root_form(run, sam_demo):
    for root in (sam_demo, sam_demo / "conversations"):
        r = run("--root", root, "ls", "--format", "json")
        assert r.exit_code == 0, r.stderr
        rows = json.loads(r.stdout)
        assert [x["id"] for x in rows] == SAM_IDS
        assert rows[0]["pinned"] is True and rows[0]["title"] == "Q3 budget"
        assert rows[1]["message_count"] == 5 and rows[1]["store"] == "sam"


def test_sam_pinned_filter(run, sam_demo):
    r = run("--root", sam_demo, "ls", "--pinned", "--format", "jsonl")
    assert [json.loads(x)["id"] for x in r.stdout.splitlines()] == SAM_IDS[:1]


def test_sam_cache_warm_equals_cold_and_is_private(run, sam_demo, tmp_path, monkeypatch):
    cache = tmp_path / "cachedir"
    monkeypatch.setenv("SAMCTL_CACHE_DIR", str(cache))
    # make every file old enough to be cached (fresh files are never cached: racy mtimes)
    for dirpath, _, files in os.walk(sam_demo):
        for f in files:
            os.utime(os.path.join(dirpath, f), (1.7e9, 1.7e9))
    cold = run("--root", sam_demo, "ls", "--format", "json")
    files = list(cache.iterdir())
    assert len(files) == 1
    assert oct(cache.stat().st_mode & 0o777) == "0o700"
    assert oct(files[0].stat().st_mode & 0o777) == "0o600"
    warm = run("--root", sam_demo, "ls", "--format", "json")
    assert warm.stdout == cold.stdout and warm.exit_code == 0


def test_sam_cache_is_not_trusted_when_the_file_changes(run, sam_demo, monkeypatch, tmp_path):
    monkeypatch.setenv("SAMCTL_CACHE_DIR", str(tmp_path / "c"))
    p = sam_demo / "conversations" / SAM_IDS[2] / "conversation.json"
    os.utime(p, (1.7e9, 1.7e9))
    run("--root", sam_demo, "ls")
    p.write_text(p.read_text().replace('"API Chat"', '"Renamed chat"'))
    os.utime(p, (1.7e9 + 5, 1.7e9 + 5))
    r = run("--root", sam_demo, "ls", "--format", "json")
    assert "Renamed chat" in r.stdout


@pytest.mark.parametrize(
    "garbage",
    [
        b"",
        b"{",
        b"[]",
        b'{"v": 1, "root": "/elsewhere", "entries": {}}',
        b'{"v":1,"root":"R","entries":{"X":[1,2,3]}}',
        b"\xff\x00",
    ],
)
def test_sam_corrupt_cache_is_rebuilt_silently(run, sam_demo, monkeypatch, tmp_path, garbage):
    cache = tmp_path / "c"
    monkeypatch.setenv("SAMCTL_CACHE_DIR", str(cache))
    first = run("--root", sam_demo, "--no-cache", "ls", "--format", "json")
    run("--root", sam_demo, "ls")
    for f in cache.iterdir():
        f.write_bytes(garbage.replace(b"R", str((sam_demo / "conversations").resolve()).encode()))
    r = run("--root", sam_demo, "ls", "--format", "json")
    assert r.exit_code == 0 and r.stderr == ""
    assert r.stdout == first.stdout


def test_no_cache_writes_no_cache(run, sam_demo, monkeypatch, tmp_path):
    cache = tmp_path / "c"
    monkeypatch.setenv("SAMCTL_CACHE_DIR", str(cache))
    assert run("--root", sam_demo, "--no-cache", "ls").exit_code == 0
    assert not cache.exists()


def test_ls_changes_nothing_in_the_tree(run, mermaid_broken, sam_broken):
    for root in (mermaid_broken[0], sam_broken[0]):
        before = fingerprint(root)
        r = run("--root", root, "ls", "--format", "jsonl")
        assert r.exit_code == 3
        assert "Traceback" not in r.stderr
        assert fingerprint(root) == before


def test_ls_on_broken_mermaid_lists_the_good_and_reports_the_bad(run, mermaid_broken):
    root, _ = mermaid_broken
    r = run("--root", root, "ls", "--format", "jsonl")
    assert r.exit_code == 3
    ids = [json.loads(x)["id"] for x in r.stdout.splitlines()]
    assert set(MERMAID_IDS) <= set(ids)
    assert "20260101_000001_000" not in ids  # bad json
    assert "20260101_000022_000" not in ids  # message-less: mermaid skips it silently
    assert "20260101_000008_000" in ids  # stale metas are listed, as mermaid does
    assert "bad-json" in r.stderr and "too-large" in r.stderr and "bad-meta" in r.stderr
    for line in r.stderr.splitlines():
        assert line.startswith(("error: ", "warning: ", "info: ")), line


def _age(root):
    for dirpath, _, files in os.walk(root):
        for f in files:
            os.utime(os.path.join(dirpath, f), (1.7e9, 1.7e9), follow_symlinks=False)


def test_mermaid_cache_warm_equals_cold_and_follows_changes(run, mermaid_broken, monkeypatch, tmp_path):
    root, _ = mermaid_broken
    cache = tmp_path / "mcache"
    monkeypatch.setenv("SAMCTL_CACHE_DIR", str(cache))
    _age(root)
    cold = run("--root", root, "ls", "--format", "jsonl")
    assert len(list(cache.iterdir())) == 1
    warm = run("--root", root, "ls", "--format", "jsonl")
    assert (warm.stdout, warm.stderr, warm.exit_code) == (cold.stdout, cold.stderr, cold.exit_code)
    nocache = run("--root", root, "--no-cache", "ls", "--format", "jsonl")
    assert nocache.stdout == cold.stdout
    # a sidecar rewritten in place is read again, whatever the cache says
    meta = root / ".mermaid" / "conversations" / "20260901_170000_250.meta"
    meta.write_text(meta.read_text().replace("What does the deadline", "Renamed: what does the deadline"))
    os.utime(meta, (1.7e9 + 10, 1.7e9 + 10))
    assert "Renamed: what does the deadline" in run("--root", root, "ls", "--format", "jsonl").stdout
    # sizes are never cached: a log that grew shows at once
    log = root / ".mermaid" / "conversations" / "20260901_170000_250.jsonl"
    before = [
        json.loads(x)
        for x in run("--root", root, "ls", "--format", "jsonl").stdout.splitlines()
        if "20260901_170000_250" in x
    ][0]["size"]
    with open(log, "a") as f:
        f.write("x" * 1000)
    after = [
        json.loads(x)
        for x in run("--root", root, "ls", "--format", "jsonl").stdout.splitlines()
        if "20260901_170000_250" in x
    ][0]["size"]
    assert after == before + 1000


def _age_folder(folder, when=1.7e9):
    _age(folder)
    os.utime(folder, (when, when))


def _ls_rows(run, root, *extra):
    r = run("--root", root, *extra, "ls", "--format", "jsonl")
    assert r.exit_code == 0, r.stderr
    return {x["id"]: x for x in map(json.loads, r.stdout.splitlines())}


def test_mermaid_unchanged_folder_is_listed_without_a_stat_per_sidecar(run, mermaid_demo, monkeypatch, tmp_path):
    from samctl.fs import filemodes

    monkeypatch.setenv("SAMCTL_CACHE_DIR", str(tmp_path / "c"))
    conv = mermaid_demo / ".mermaid" / "conversations"
    _age_folder(conv)
    cold = run("--root", mermaid_demo, "ls", "--format", "jsonl")
    doc = json.loads(next((tmp_path / "c").iterdir()).read_bytes())
    assert doc["folder"][0] == int(1.7e9) * 10**9 and doc["extra"]["ids"] == MERMAID_IDS  # newest first
    assert doc["extra"]["logs"] == [f"{cid}.jsonl" for cid in MERMAID_IDS]

    def no_lstat(*a, **k):
        raise AssertionError("a sidecar was stat'ed although the folder is unchanged")

    monkeypatch.setattr(filemodes, "lstat", no_lstat)
    warm = run("--root", mermaid_demo, "ls", "--format", "jsonl")
    assert (warm.stdout, warm.stderr, warm.exit_code) == (cold.stdout, cold.stderr, 0)


def test_mermaid_trusted_folder_still_sees_every_change_mermaid_makes(run, mermaid_demo, monkeypatch, tmp_path):
    """mermaid replaces .json/.meta by rename and creates/removes files: each changes the folder's stamp.
    Logs grow in place: they are stat'ed every time."""
    monkeypatch.setenv("SAMCTL_CACHE_DIR", str(tmp_path / "c"))
    conv = mermaid_demo / ".mermaid" / "conversations"
    _age_folder(conv)
    before = _ls_rows(run, mermaid_demo)
    cid = MERMAID_IDS[0]
    # a log that grows in place
    with open(conv / f"{cid}.jsonl", "a") as f:
        f.write("x" * 1000)
    assert _ls_rows(run, mermaid_demo)[cid]["size"] == before[cid]["size"] + 1000
    # a sidecar replaced the way mermaid writes it (temp + rename)
    meta = conv / f"{cid}.meta"
    tmp = conv / f".{cid}.meta.1.1.tmp"
    tmp.write_text(meta.read_text().replace("What does the deadline", "Renamed: what does the deadline"))
    os.utime(tmp, (1.7e9 + 5, 1.7e9 + 5))
    os.rename(tmp, meta)
    os.utime(conv, (1.7e9 + 5, 1.7e9 + 5))  # not racy: the stamp is recorded again
    assert _ls_rows(run, mermaid_demo)[cid]["title"].startswith("Renamed: what does the deadline")
    assert _ls_rows(run, mermaid_demo)[cid]["title"].startswith("Renamed: what does the deadline")
    # a conversation removed, and one added by copying (new names in the folder)
    for ext in ("json", "meta", "jsonl"):
        (conv / f"{MERMAID_IDS[1]}.{ext}").unlink()
    new = "20270101_000000_000"
    (conv / f"{new}.json").write_text((conv / f"{MERMAID_IDS[2]}.json").read_text().replace(MERMAID_IDS[2], new))
    rows = _ls_rows(run, mermaid_demo)
    assert MERMAID_IDS[1] not in rows and new in rows
    assert set(_ls_rows(run, mermaid_demo)) == set(rows)
    nocache = run("--root", mermaid_demo, "--no-cache", "ls", "--format", "jsonl")
    assert nocache.stdout == run("--root", mermaid_demo, "ls", "--format", "jsonl").stdout


def test_mermaid_racy_or_incomplete_listing_records_no_folder_stamp(
    run, mermaid_broken, mermaid_demo, monkeypatch, tmp_path
):
    cache = tmp_path / "c"
    monkeypatch.setenv("SAMCTL_CACHE_DIR", str(cache))
    conv = mermaid_demo / ".mermaid" / "conversations"
    _age(conv)
    os.utime(conv)  # the folder changed just now: a rename could still land in the same tick
    run("--root", mermaid_demo, "ls")
    assert "folder" not in json.loads(next(cache.iterdir()).read_bytes())
    shutil.rmtree(cache)
    # the broken tree has a symlink and a fifo, which are never cached: they must be reported every time
    root, _ = mermaid_broken
    _age_folder(root / ".mermaid" / "conversations")
    first = run("--root", root, "ls", "--format", "jsonl")
    assert "folder" not in json.loads(next(cache.iterdir()).read_bytes())
    again = run("--root", root, "ls", "--format", "jsonl")
    assert (again.stdout, again.stderr, again.exit_code) == (first.stdout, first.stderr, 3)
    assert "symlink" in again.stderr


def _trusted_cache(run, root, monkeypatch, tmp_path):
    """(the cold listing, the cache file, its document) after a listing of an unchanged folder."""
    cache = tmp_path / "c"
    monkeypatch.setenv("SAMCTL_CACHE_DIR", str(cache))
    _age_folder(root / ".mermaid" / "conversations")
    cold = run("--root", root, "ls", "--format", "jsonl")
    f = next(cache.iterdir())
    doc = json.loads(f.read_bytes())
    assert "folder" in doc and "extra" in doc
    return cold, f, doc


def _set(col, value):
    def tamper(doc):
        doc["extra"][col][0] = value

    return tamper


@pytest.mark.parametrize(
    "tamper",
    [
        _set("fixed", "big"),
        _set("other", 1.5),
        _set("updated_ts", "late"),
        _set("counts", [1]),
        _set("titles", None),
        _set("logs", "../../etc/passwd"),
        _set("names", "../x.meta"),
        lambda doc: doc["extra"]["ids"].pop(),
        lambda doc: doc["extra"].pop("logs"),
        lambda doc: doc["extra"].__setitem__("findings", [["code", "name"]]),
        lambda doc: doc.__setitem__("extra", [1, 2]),
        lambda doc: [e.__setitem__(2, 99) for e in doc["entries"].values()],
        lambda doc: [e.__setitem__(2, "row") for e in doc["entries"].values()],
        lambda doc: [e.append(0) for e in doc["entries"].values()],
    ],
)
def test_mermaid_tampered_trusted_cache_is_rescanned_silently(run, mermaid_demo, monkeypatch, tmp_path, tamper):
    cold, f, doc = _trusted_cache(run, mermaid_demo, monkeypatch, tmp_path)
    tamper(doc)
    f.write_bytes(resealed(doc))
    for _ in range(2):  # the rescan, then the listing it saved again
        r = run("--root", mermaid_demo, "ls", "--format", "jsonl")
        assert (r.stdout, r.stderr, r.exit_code) == (cold.stdout, "", 0)


def test_mermaid_a_row_index_without_its_listing_is_rescanned(run, mermaid_demo, monkeypatch, tmp_path):
    cold, f, doc = _trusted_cache(run, mermaid_demo, monkeypatch, tmp_path)
    doc["folder"][0] += 1  # the folder changed: the entries are looked at one by one
    f.write_bytes(resealed(doc))
    assert run("--root", mermaid_demo, "ls", "--format", "jsonl").stdout == cold.stdout
    doc = json.loads(f.read_bytes())
    doc["folder"][0] += 1
    del doc["extra"]  # and their rows are gone
    f.write_bytes(resealed(doc))
    assert run("--root", mermaid_demo, "ls", "--format", "jsonl").stdout == cold.stdout


def test_until_a_date_includes_that_day(run, sam_demo):
    r = run("--root", sam_demo, "ls", "--since", "2026-08-10", "--until", "2026-08-10", "--format", "jsonl")
    assert r.exit_code == 0, r.stderr
    assert "8B58CBC4-ACA7-4811-AE66-C01921690310" in r.stdout


def test_sam_ls_orders_and_filters_by_last_activity_not_by_updated_alone(run, tmp_path):
    """SAM's ``updated`` is not touched by message traffic (docs/formats/sam.md §4.1): a conversation chatted in
    this week but updated long ago is listed first and found by --since; archive --keep-last keeps it."""
    from tests.conftest import make_fixtures as mf

    conv = tmp_path / "SAM" / "conversations"
    a, b = "AAAAAAAA-2222-4333-8444-555555555555", "BBBBBBBB-2222-4333-8444-555555555555"
    ma = [
        mf.sam_message(
            "A1000000-2222-4333-8444-555555555555", "user", "old chat, renamed later", "2026-08-01T10:00:00Z"
        )
    ]
    mb = [
        mf.sam_message("B1000000-2222-4333-8444-555555555555", "user", "started 08-10", "2026-08-10T10:00:00Z"),
        mf.sam_message("B2000000-2222-4333-8444-555555555555", "user", "still chatting", "2026-08-25T10:00:00Z"),
    ]
    for cid, title, msgs, created, updated in (
        (a, "A renamed", ma, "2026-08-01T10:00:00Z", "2026-08-20T10:00:00Z"),
        (b, "B active", mb, "2026-08-10T10:00:00Z", "2026-08-10T10:00:05Z"),
    ):
        (conv / cid).mkdir(parents=True)
        (conv / cid / "conversation.json").write_text(mf.sam_dumps(mf.sam_doc(cid, title, msgs, created, updated)))
    for cache in ([], ["--no-cache"], []):  # cold, uncached, warm
        r = run("--root", tmp_path / "SAM", *cache, "ls", "--format", "json")
        assert [m["id"] for m in json.loads(r.stdout)] == [b, a], r.output
        r = run("--root", tmp_path / "SAM", *cache, "ls", "--since", "2026-08-22", "--format", "json")
        assert [m["id"] for m in json.loads(r.stdout)] == [b], r.output
    r = run("--root", tmp_path / "SAM", "ls")
    assert "2026-08-25" in r.stdout.splitlines()[1] and r.stdout.splitlines()[1].startswith(b)
    rows = json.loads(run("--root", tmp_path / "SAM", "ls", "--format", "json").stdout)
    assert [(m["updated"], m["last_activity"]) for m in rows] == [
        ("2026-08-10T10:00:05Z", "2026-08-25T10:00:00Z"),
        ("2026-08-20T10:00:00Z", "2026-08-20T10:00:00Z"),
    ]
    r = run("--root", tmp_path / "SAM", "show", b[:8])
    assert "2026-08-25" in r.stdout.splitlines()[1]  # the header's "created → last activity"
    r = run(
        "--root", tmp_path / "SAM", "archive", "--older-than", "0d", "--keep-last", "1", "--dry-run", "--format", "json"
    )
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    assert [i["id"] for i in out["items"]] == [a]
    assert b in json.dumps(out) and "one of the 1 most recent" in json.dumps(out)


def test_a_shared_topic_that_is_not_a_uuid_is_cached_like_any_other(run, sam_demo):
    """SAM stores whatever sharedTopicId it was given; the listing cache keeps it rather than
    rewriting itself on every ls."""
    p = sam_demo / "conversations" / "8B58CBC4-ACA7-4811-AE66-C01921690310" / "conversation.json"
    doc = json.loads(p.read_text())
    doc["settings"].update(useSharedData=True, sharedTopicId="finance")
    p.write_text(json.dumps(doc))
    old = os.stat(sam_demo).st_mtime - 3600
    for d, _, files in os.walk(sam_demo):
        for f in files:
            os.utime(os.path.join(d, f), (old, old))
    run("--root", sam_demo, "ls")
    (cache,) = [c for c in (Path(os.environ["SAMCTL_CACHE_DIR"])).iterdir() if c.name.startswith("sam-meta")]
    stamp = cache.stat().st_mtime_ns, cache.read_bytes()
    run("--root", sam_demo, "ls")
    assert (cache.stat().st_mtime_ns, cache.read_bytes()) == stamp


def test_a_message_dated_after_its_file_was_written_is_not_activity(run, tmp_path):
    """A wrong clock (a message of 2099) must not keep a conversation first in every listing."""
    from tests.conftest import make_fixtures as mf

    conv = tmp_path / "SAM" / "conversations"
    a, b = "AAAAAAAA-2222-4333-8444-555555555555", "BBBBBBBB-2222-4333-8444-555555555555"
    ma = [
        mf.sam_message("A1000000-2222-4333-8444-555555555555", "user", "from the future", "2099-01-01T00:00:00Z"),
        mf.sam_message("A2000000-2222-4333-8444-555555555555", "user", "real", "2026-08-02T10:00:00Z"),
    ]
    mb = [mf.sam_message("B1000000-2222-4333-8444-555555555555", "user", "later", "2026-08-10T10:00:00Z")]
    for cid, msgs in ((a, ma), (b, mb)):
        (conv / cid).mkdir(parents=True)
        p = conv / cid / "conversation.json"
        p.write_text(mf.sam_dumps(mf.sam_doc(cid, cid[:1], msgs, "2026-08-01T10:00:00Z", "2026-08-01T10:00:05Z")))
        os.utime(p, (1786356000, 1786356000))  # 2026-08-10T10:00Z: written as its last real message was
    rows = json.loads(run("--root", tmp_path / "SAM", "ls", "--format", "json").stdout)
    assert [(m["id"], m["last_activity"]) for m in rows] == [(b, "2026-08-10T10:00:00Z"), (a, "2026-08-02T10:00:00Z")]
