"""load: one conversation by id or unique prefix, as the neutral model."""

from __future__ import annotations

from samctl.errors import FileProblem
from samctl.fs import reading
from samctl.lock import held_by_another
from samctl.model import ERROR, INFO, WARNING, Finding
from samctl.said import said
from samctl.stores.resolve import resolve_id


def load_conversation(store, text: str, findings: list):
    """The conversation, or None when nothing of it could be read (findings say why).

    Raises UsageError for an invalid or ambiguous id, NotFound when no
    conversation has it.  A conversation an interrupted move holds is shown
    as it is, with a pending-move finding (and no advice to recover it).
    """
    from samctl.attic.journal import SETTLE, pending_ids  # (lazy: not loaded by ls or --help)
    from samctl.core.check import mark_held  # (lazy: not loaded by ls or --help)

    cid = resolve_id(store, text)
    start = len(findings)
    conv = store.load_reported(cid, findings)
    if cid in pending_ids(store) and not held_by_another(store):  # (one listing of the journal folder, if any)
        findings.append(
            Finding(
                "pending-move",
                str(store.conv_dir),
                said(f"an interrupted move holds {cid} half done, so what is shown may be part of it; ", SETTLE),
                WARNING,
                cid,
            )
        )
        mark_held(findings[start:], {cid})
    return with_resume(store, conv)


def with_resume(store, conv):
    """``conv`` with the app's resume command (``core.resume``) set, for show, export and JSON."""
    if conv is not None:
        from samctl.core.resume import resume_of  # (lazy: not loaded by ls or --help)

        conv.resume = resume_of(store, conv.meta)
    return conv


def load_resolved(store, cid: str, findings: list):
    """``load_conversation`` for an id taken from a listing: no id lookup, never raises NotFound
    (``Store.load_listed``)."""
    return with_resume(store, store.load_listed(cid, findings))


def raw_bytes(store, text: str, findings: list):
    """The stored file's bytes as they are (capped), or None with a finding.  A conversation
    that shares its file with others (SAM's legacy store) is its part of that file, re-serialised,
    with an info finding that says so."""
    cid = resolve_id(store, text)
    path = store.raw_path(cid)
    try:
        part = store.raw_part(cid, path)
        if part is not None:
            findings.append(
                Finding(
                    "legacy",
                    str(path),
                    f"{cid} is one of the conversations in this file; this is "
                    "its part, re-serialised (not byte for byte)",
                    INFO,
                    cid,
                )
            )
            return part
        return reading.read_capped(path, store.caps.snapshot)
    except FileProblem as exc:
        findings.append(Finding(exc.code, str(path), exc.message, ERROR, cid))
        return None
