"""The index of a store built in memory, one part at a time, for a search without the index
(``--no-index``, ``--no-cache``).

Each part is let go before the next is read, and the parts hide and report exactly what the whole build
would.

Design notes: docs/search-index.md, "search/index/memory.py".
"""

from __future__ import annotations

import itertools

from samctl.search.index.format import ARCHIVED, MESSAGE, load_numpy
from samctl.search.index.manifest import Manifest, encode_manifest, findings_of
from samctl.search.index.opened import Index
from samctl.search.index.segment import SegmentWriter
from samctl.search.index.sources import discover
from samctl.search.index.update import read_segments

PART_BYTES = 64 << 20  # a part is cut (between sources) once its segment holds this much


def parts(store, findings: list, scope: set | None = None, progress=None, convs: dict | None = None):
    """An ``Index`` of each part of the sources in ``scope``, in turn (see the module docstring).
    Once the last is given, ``findings`` gets the sources' findings and ``convs`` (if given) the
    info of every conversation read, both in ``discover``'s order, for ``titles``."""
    disc: list = []
    current = discover(store, disc, scope)
    findings.extend(disc)
    read: dict = {}  # the conversations' infos, as they were read
    seen: list = []  # the dedupe keys of the messages of each part read so far
    found: dict = {}  # source key -> (its conversation, its findings' rows)
    gave: dict = {}  # source key -> the ids of the conversations it gave
    names = itertools.count(1)

    def new_writer():
        return SegmentWriter(store.root_real, name=f"(memory {next(names)})")

    for entries, seg in read_segments(new_writer, store, _messages_first(current), current, read, progress,
                                      keep_sigs=False, cap=PART_BYTES):
        for key, e in entries.items():
            if e["findings"]:
                found[key] = (e["conv"], e["findings"])
            if e["infos"]:
                gave[key] = e["infos"]
        yield _index(seg, entries, seen)
        del seg, entries  # the caller lets the part go too: none of it is held while the next is read
    for key in current:
        if key in found:
            findings.extend(findings_of(*found[key], scope))
        if convs is not None:
            for cid in gave.get(key, ()):
                convs[cid] = read[cid]


def _messages_first(current: dict) -> list:
    """The sources to read: every archive database after every other source (``sorted`` is stable)."""
    return sorted(current.values(), key=lambda s: s.holds == "archived")


def _index(seg, entries: dict, seen: list) -> Index:
    """The part ``seg`` as an Index, its archived copies of messages read so far hidden (``seen``
    gets its messages' keys)."""
    np = load_numpy()
    kind = seg.meta["kind"]
    keys = seg.meta["dkey"]
    seen.append(keys[kind == MESSAGE])
    archived = np.flatnonzero(kind == ARCHIVED)
    dup = archived[np.isin(keys[archived], np.concatenate(seen))] if len(archived) else archived
    man = {"segments": [{"name": seg.name, "rows": seg.rows, "dead": []}], "sources": entries, "convs": {},
           "hidden": {seg.name: dup.tolist()} if len(dup) else {}}
    return Index(Manifest(encode_manifest(man)), [seg])


def titles(convs: dict) -> Manifest:
    """A manifest that knows only ``convs`` (from ``parts``): its ``title_of`` is the whole index's."""
    return Manifest(encode_manifest({"segments": [], "sources": {}, "convs": convs, "hidden": {}}))
