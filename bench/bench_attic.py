#!/usr/bin/env python3
"""Benchmark the attic (archive = rm/archive's data path, restore) against the zstd command-line tool.

    python bench/bench_attic.py [--log-bytes 67108864] [--conversations 1000] [--sam 100]
                                [--repeat 3] [--level 3] [--out bench/out]

Three inputs, generated once with bench/gen_archive.py into --out:

- log:         one mermaid event log of --log-bytes (a session compact would rewrite);
- transcripts: --conversations mermaid conversations (snapshot, sidecar, log each);
- sam:         --sam SAM conversations with 100 memories each (memory.db with 4 KiB embeddings).

For each, samctl's time is the whole move, as the commands do it: archive =
``lifecycle.remove`` (tar + zstd + sha256 of every member, fsync, re-read and
verify every hash, manifest, then remove the originals); restore =
``restore.restore_many`` of every entry, as ``samctl restore ID...`` does
(check the archive's sha256, decompress, check every member's sha256, write,
place, drop the entry).  Both share their fsyncs in batches (barriers where
the order must reach the disk: ``syncing.sync_batch``).  The
baseline is ``zstd -LEVEL`` compressing the same files into a folder
(``--output-dir-flat``), and ``zstd -d`` of those files into another folder:
no hashing, no verification, no fsync.  Throughput is original bytes per
second; the ratio is samctl's time over zstd's in the same round, median over
the rounds (the goal: within 1.5x); the two take turns going first, and every
timed step starts with nothing dirty in the page cache (an untimed ``sync``):
samctl's barriers are ``syncfs`` calls, which would otherwise also write out
what the step before left behind.
Plain ``zstd`` copies: its inputs stay.  samctl moves, so "vs zstd --rm"
compares with the CLI doing the same move: ``zstd --rm`` removes each input
once it is compressed, ``zstd -d --rm`` each ``.zst`` once it is
decompressed (the inputs are copies made before the clock starts, so each
removal frees an inode, as removing a conversation does).
"zstd+fsync" adds an fsync of zstd's output files (samctl's moves are
durable; the CLI leaves its output in the page cache).  samctl compresses
inputs of 8 MiB or more with every core; for the log, the line "vs zstd -T0"
compares with zstd doing the same.  Medians of --repeat runs after one warm-up.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))


def generate(kind: str, args, out: Path) -> Path:
    from gen_archive import make_mermaid, make_mermaid_log, make_sam

    if kind == "log":
        dest = out / f"attic-log-{args.log_bytes}"
    elif kind == "transcripts":
        dest = out / f"attic-mermaid-{args.conversations}"
    else:
        dest = out / f"attic-sam-{args.sam}"
    marker = dest / ".complete"
    if not marker.exists():
        if dest.exists():
            shutil.rmtree(dest)
        if kind == "log":
            conv = dest / ".mermaid" / "conversations"
            conv.mkdir(parents=True, mode=0o700)
            make_mermaid_log(conv / "20240101_120000_000.jsonl", args.log_bytes, seed=1)
        elif kind == "transcripts":
            make_mermaid(dest, args.conversations, progress=False)
        else:
            make_sam(dest, args.sam, memories_per_conversation=100, progress=False)
        marker.write_text("")
    return dest / "SAM" if kind == "sam" else dest


def files_of(store) -> list[Path]:
    out = []
    for cid in store.all_ids():
        try:
            out += [p for p in store.conversation_files(cid) if p.is_file()]
        except Exception:  # noqa: BLE001 - shared scopes do not move
            pass
    return out


def samctl_cycle(root: Path):
    """Archive every conversation, then restore every entry; (archive s, restore s, bytes, stored bytes)."""
    from samctl.attic import entries as attic
    from samctl.attic import lifecycle, restore
    from samctl.attic.targets import Target
    from samctl.stores import open_store

    store = open_store(str(root), cache=False)
    refs = store.topic_refs() if store.name == "sam" else None
    targets = []
    for cid in store.all_ids():
        try:
            store.conversation_files(cid, refs)
        except Exception:  # noqa: BLE001
            continue
        targets.append(Target(cid))
    os.sync()  # not timed: no one's dirty pages are left for the next step's syncfs to write
    t = time.perf_counter()
    rep = lifecycle.remove(store, targets, "archived")
    t_arch = time.perf_counter() - t
    assert not rep.findings, rep.findings[:3]
    entries = attic.list_entries(store, [], ("archived",))
    size = sum(e.original_size for e in entries)
    stored = sum(e.tar_size for e in entries)
    os.sync()
    t = time.perf_counter()
    rep = restore.restore_many(store, entries)  # what `samctl restore ID...` does
    t_rest = time.perf_counter() - t
    assert not rep.findings, rep.findings[:3]
    return t_arch, t_rest, size, stored


def _fsync_all(folder: Path) -> None:
    for p in folder.iterdir():
        fd = os.open(p, os.O_RDONLY)
        os.fsync(fd)
        os.close(fd)
    fd = os.open(folder, os.O_RDONLY)
    os.fsync(fd)
    os.close(fd)


def zstd_cycle(files: list[Path], level: int, work: Path, flag: str = ""):
    """(compress s, decompress s, stored bytes, compress+fsync s, decompress+fsync s)

    ``flag``: none, ``-T0`` (every core), or ``--rm``: the move, as samctl
    does it: each input is a file of its own (a copy, made before the clock
    starts, so removing it frees its inode as removing a conversation does),
    compressed and removed, then decompressed and its ``.zst`` removed.
    """
    move = flag == "--rm"
    comp, dec = work / ("zm" if move else "z"), work / ("dm" if move else "d")
    for d in (comp, dec):
        shutil.rmtree(d, ignore_errors=True)
        d.mkdir(parents=True)
    # names collide across SAM folders (every memory.db): give each input a distinct name first
    links = work / ("mv" if move else "in")
    if move:
        shutil.rmtree(links, ignore_errors=True)
    if not links.exists():
        links.mkdir()
        for i, p in enumerate(files):
            (shutil.copyfile if move else os.link)(p, links / f"{i}-{p.name}")
    names = sorted(str(p) for p in links.iterdir())
    extra = [flag] if flag else []
    os.sync()
    t = time.perf_counter()
    subprocess.run(["zstd", f"-{level}", *extra, "-q", "-f", "--output-dir-flat", str(comp), *names], check=True)
    t_c = time.perf_counter() - t
    _fsync_all(comp)
    t_cs = time.perf_counter() - t
    znames = sorted(str(p) for p in comp.iterdir())
    os.sync()
    t = time.perf_counter()
    subprocess.run(
        ["zstd", "-d", "-q", "-f", *(["--rm"] if move else []), "--output-dir-flat", str(dec), *znames], check=True
    )
    t_d = time.perf_counter() - t
    _fsync_all(dec)
    t_ds = time.perf_counter() - t
    stored = sum(os.path.getsize(p) for p in znames) if not move else 0
    return t_c, t_d, stored, t_cs, t_ds


def file_system_of(path: Path) -> str:
    """What ``path`` is on, from /proc/self/mountinfo (Linux): "tmpfs", "ext4 with a journal", ...;
    an ext4 without a journal gets a warning (see bench/README.md)."""
    try:
        lines = Path("/proc/self/mountinfo").read_text().splitlines()
    except OSError:
        return "unknown (no /proc/self/mountinfo)"
    real, best = os.path.realpath(path), None
    for line in lines:
        left, _, right = line.partition(" - ")
        mount = left.split()[4].replace("\\040", " ")
        if (real == mount or real.startswith(mount.rstrip("/") + "/")) and (best is None or len(mount) >= len(best[0])):
            best = (mount, right.split()[0], right.split()[1])
    if best is None:
        return "unknown"
    mount, fstype, source = best
    if fstype != "ext4":
        return f"{fstype} ({mount})"
    dev = os.path.basename(source)
    journaled = (
        any(n.startswith(dev + "-") for n in os.listdir("/proc/fs/jbd2")) if os.path.isdir("/proc/fs/jbd2") else True
    )
    if journaled:
        return f"ext4 with a journal ({mount})"
    return (
        f"ext4 WITHOUT a journal ({mount}): creating files after many deletions is slow there, for samctl "
        "more than for zstd; the ratios say more about the file system than about samctl (bench/README.md)"
    )


def med(xs):
    return statistics.median(xs), min(xs), max(xs)


def _round_ratio(ours, theirs) -> float:
    """The median over rounds of samctl's time over zstd's in the same round (the disk's mood
    changes from minute to minute; within a round it is the same for both)."""
    return statistics.median(a / b for a, b in zip(ours, theirs))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--log-bytes", type=int, default=64 << 20)
    ap.add_argument("--conversations", type=int, default=1000)
    ap.add_argument("--sam", type=int, default=100)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--level", type=int, default=3)
    ap.add_argument("--out", type=Path, default=HERE / "out")
    ap.add_argument("--only", choices=("log", "transcripts", "sam"), action="append")
    args = ap.parse_args()
    from samctl.attic import entries as attic

    attic.LEVEL = args.level  # the level every archive is written at
    have_zstd = shutil.which("zstd") is not None
    if not have_zstd:
        print("zstd (the command-line tool) is not installed: no baseline; apt-get install -y zstd", file=sys.stderr)
    else:
        v = subprocess.run(["zstd", "--version"], capture_output=True, text=True).stdout.strip()
        print(f"baseline: {v}, level {args.level}, default threads")
    args.out.mkdir(parents=True, exist_ok=True)
    print(f"output on: {file_system_of(args.out)}")
    os.environ.setdefault("SAMCTL_ASSUME_SAM_RUNNING", "0")
    rows = []
    for kind in args.only or ("log", "transcripts", "sam"):
        src = generate(kind, args, args.out)
        with tempfile.TemporaryDirectory(dir=args.out) as tmp:
            tree = Path(tmp) / "tree"
            shutil.copytree(src.parent if kind == "sam" else src, tree, symlinks=True)
            root = tree / "SAM" if kind == "sam" else tree
            from samctl.stores import open_store

            files = files_of(open_store(str(root), cache=False))
            sa, sr = [], []
            z = {"": ([], [], [], []), "-T0": ([], [], [], []), "--rm": ([], [], [], [])}
            size = stored = zstored = 0
            for i in range(args.repeat + 1):
                # the two take turns going first, so a slow spell of the disk falls on both alike
                for turn in (0, 1) if i % 2 else (1, 0):
                    if turn == 0:
                        a, r, size, stored = samctl_cycle(root)
                        if i:  # the first round warms the page cache
                            sa.append(a)
                            sr.append(r)
                    elif have_zstd:
                        for flag in ("", "--rm", "-T0") if kind == "log" else ("", "--rm"):
                            zc, zd, zs, zcs, zds = zstd_cycle(files, args.level, Path(tmp), flag)
                            zstored = zs or zstored
                            if i:
                                for lst, v in zip(z[flag], (zc, zd, zcs, zds)):
                                    lst.append(v)
            rows.append((kind, len(files), size, stored, zstored, sa, sr, z))
    mb = 1 << 20
    print(
        f"{'input':<12} {'files':>5} {'MiB':>6}  {'op':<8} {'samctl MB/s':>11} {'zstd MB/s':>9} {'ratio':>6}"
        f" {'vs zstd --rm':>12} {'vs zstd+fsync':>13}   (medians of {args.repeat} rounds)"
    )
    for kind, nfiles, size, stored, zstored, sa, sr, z in rows:
        for op, s, k in (("archive", sa, 0), ("restore", sr, 1)):
            sm = med(s)[0]
            line = f"{kind:<12} {nfiles:>5} {size / mb:>6.1f}  {op:<8} {size / mb / sm:>11.1f}"
            times = z[""]
            if times[k]:
                zm = med(times[k])[0]
                line += (
                    f" {size / mb / zm:>9.1f} {_round_ratio(s, times[k]):>5.2f}x"
                    f" {_round_ratio(s, z['--rm'][k]):>11.2f}x {_round_ratio(s, times[k + 2]):>12.2f}x"
                )
            else:
                line += f" {'-':>9} {'-':>6} {'-':>12} {'-':>13}"
            print(line + f"   samctl {min(s):.2f}-{max(s):.2f}s")
        if z["-T0"][0]:
            print(
                f"{kind:<12} archive vs zstd -T0 (every core, as samctl uses for big inputs): "
                f"{_round_ratio(sa, z['-T0'][0]):.2f}x, {_round_ratio(sa, z['-T0'][2]):.2f}x vs zstd -T0 + fsync"
            )
        zr_ = f", zstd files {size / zstored:.2f}" if zstored else ""
        print(f"{kind:<12} compression ratio (original/stored): samctl tar.zst {size / stored:.2f}{zr_}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
