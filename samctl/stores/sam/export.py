"""SAM import packages (sam.md §10.1, §10.2) of any store's conversations: what ``export --to sam-package`` writes.

A SAM conversation goes as SAM stores it (made strict) with its memories; any other conversation is
converted from the shared model.  A conversation SAM's import would refuse is skipped with a finding.
"""

from __future__ import annotations

import tempfile

from samctl.fs import filemodes
from samctl.model import ERROR, INFO, Finding
from samctl.said import Suggestion, said
from samctl.stores.sam import memorydb, package, schema
from samctl.stores.sam.encode import package_bytes


def package_for(store, conv, findings: list, exported_at: str) -> bytes | None:
    """The encoded sam.md §10.1 package for one conversation, or None (with a finding) if SAM would refuse it."""
    if conv.meta.store == "sam":
        doc = package.strict_conversation(conv.raw if isinstance(conv.raw, dict) else {})
        memories = package.memories_sorted(_sam_memories(store, conv.meta.id, findings))
    else:
        doc = package.from_mermaid(conv)
        memories = []
        images = sum(1 for m in conv.messages for a in m.attachments if a.get("type") == "image")
        if images:  # SAM keeps only the images it generates (file:// parts), not a user's pasted ones
            findings.append(
                Finding(
                    "package-images",
                    conv.meta.path or str(store.conv_dir),
                    f"{images} image{'s' if images != 1 else ''} of {conv.meta.id} left out of the "
                    "package: SAM's import has no place for them",
                    INFO,
                    conv.meta.id,
                )
            )
    errors = [p for p in schema.validate_conversation(doc) if p.severity == schema.ERROR]
    if errors:
        first = errors[0]
        findings.append(
            Finding(
                "package-refused",
                conv.meta.path or str(store.conv_dir),
                said(
                    f"SAM's import would refuse this conversation ({first.where}: {first.reason}); skipped. `",
                    Suggestion("check"),
                    "` shows every problem",
                ),
                ERROR,
                conv.meta.id,
            )
        )
        return None
    try:
        return package_bytes(package.single_package(doc, memories, exported_at))
    except ValueError as exc:
        findings.append(
            Finding(
                "package-refused",
                conv.meta.path or str(store.conv_dir),
                f"cannot be written as a SAM package: {exc}; skipped",
                ERROR,
                conv.meta.id,
            )
        )
        return None


def _sam_memories(store, cid: str, findings: list) -> list:
    """Rows of ``CONV/<id>/memory.db`` whose conversation_id is this one (SAM's getAllMemories)."""
    path = store.folder(cid) / "memory.db"
    if filemodes.lstat(path) is None:
        return []
    rows = memorydb.read_memories(path, findings, scope_id=cid) or []
    return [r for r in rows if str(_row_field(r, "conversation_id") or cid).upper() == cid.upper()]


def _row_field(row, name):
    return row.get(name) if isinstance(row, dict) else getattr(row, name, None)


def bulk(convs, out, findings: list, exported_at: str) -> tuple[int, int]:
    """One bulk package (sam.md §10.2) of ``convs`` ((store, conversation) pairs, of any stores) written
    to ``out``: (exported, skipped)."""
    spans = []
    skipped = 0
    with tempfile.TemporaryFile(prefix="samctl-export-") as spool:
        for store, conv in convs:
            data = package_for(store, conv, findings, exported_at)
            if data is None:
                skipped += 1
                continue
            spans.append((spool.tell(), len(data)))
            spool.write(data)

        def chunks():
            for off, n in spans:
                spool.seek(off)
                yield spool.read(n)

        for piece in package.bulk_stream(chunks(), len(spans), exported_at):
            out.write(piece)
    return len(spans), skipped
