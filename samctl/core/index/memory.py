"""The index of a store built in memory, one part at a time, for a search without the index
(``--no-index``, ``--no-cache``).

Data model
----------
``parts`` yields one ``Index`` per segment of about ``PART_BYTES``, each as soon as its rows are
read, with the manifest of its own sources; ``titles`` gives the titles of every conversation
read so far, once the parts are done.  The search keeps the best candidates of each part
(``core.search``) and lets the part go, so what it holds does not grow with the store: the whole
index of 100,000 mermaid sessions held in memory at once was 6.8 GiB; in parts, 0.47 GiB.

Invariants
----------
- Each part's ``hidden`` is what ``update._hidden`` gives for the whole store: an archived copy
  of a message can only be hidden by a message of its own conversation (the dedupe key holds
  the conversation's id), and the sources are read so that every message comes before the
  archived copies it could hide: SAM's legacy ``conversations.json`` first, then each folder's
  ``conversation.json`` before its ``context_archive.db`` (``discover``'s order); each part is
  checked against the message keys of every part read so far, its own included.
- The findings come in the order the whole build gives them: the legacy file's, read first,
  are added after the others.
"""

from __future__ import annotations

import itertools

from samctl.core.index.format import ARCHIVED, MESSAGE, _np
from samctl.core.index.manifest import Manifest, encode_manifest
from samctl.core.index.opened import Index
from samctl.core.index.segment import SegmentWriter
from samctl.core.index.sources import discover
from samctl.core.index.update import read_segments

PART_BYTES = 64 << 20  # a part is cut (between sources) once its segment holds this much


def parts(store, findings: list, scope: set | None = None, progress=None, convs: dict | None = None):
    """An ``Index`` of each part of the sources in ``scope``, in turn (see the module docstring).
    ``convs`` (if given) gets the info of every conversation read, for ``titles``."""
    np = _np()
    disc: list = []
    current = discover(store, disc, scope)
    findings.extend(disc)
    todo = _legacy_first(list(current.values()))
    convs = {} if convs is None else convs
    names = itertools.count(1)
    seen: list = []  # the dedupe keys of the messages of each part read so far
    late: list = []  # the legacy file's findings: where the whole build has them, at the end

    def new_writer():
        w = SegmentWriter(store.root_real)
        w.name = f"(memory {next(names)})"
        return w

    for entries, seg in read_segments(new_writer, store, todo, current, convs, progress, keep_sigs=False,
                                      cap=PART_BYTES):
        kind = seg.meta["kind"]
        keys = seg.meta["dkey"]
        seen.append(keys[kind == MESSAGE])
        archived = np.flatnonzero(kind == ARCHIVED)
        dup = archived[np.isin(keys[archived], np.concatenate(seen))] if len(archived) else archived
        man = {"segments": [{"name": seg.name, "rows": seg.rows, "dead": []}], "sources": entries,
               "convs": {}, "hidden": {seg.name: dup.tolist()} if len(dup) else {}}
        idx = Index(Manifest(encode_manifest(man)), [seg])
        for legacy, out in ((False, findings), (True, late)):
            some = {k: e for k, e in entries.items() if (current[k].kind == "sam-legacy") == legacy}
            out += Manifest(encode_manifest(dict(man, sources=some))).findings(scope) if some else []
        yield idx
    findings.extend(late)


def _legacy_first(sources: list) -> list:
    return sorted(sources, key=lambda s: s.kind != "sam-legacy")  # (sorted is stable)


def titles(convs: dict) -> Manifest:
    """A manifest that knows only ``convs`` (from ``parts``): its ``title_of`` is the whole index's."""
    return Manifest(encode_manifest({"segments": [], "sources": {}, "convs": convs, "hidden": {}}))
