"""load: one conversation by id or unique prefix, as the neutral model."""

from __future__ import annotations

from samctl import fsafe
from samctl.core.model import ERROR, INFO, Finding
from samctl.core.resolve import resolve_id
from samctl.errors import FileProblem


def load_conversation(store, text: str, findings: list):
    """The conversation, or None when nothing of it could be read (findings say why).

    Raises UsageError for an invalid or ambiguous id, NotFound when no
    conversation has it.
    """
    return store.load_reported(resolve_id(store, text), findings)


def load_resolved(store, cid: str, findings: list):
    """``load_conversation`` for an id taken from a listing: no id lookup, never raises NotFound
    (``Store.load_listed``)."""
    return store.load_listed(cid, findings)


def raw_bytes(store, text: str, findings: list):
    """The stored file's bytes as they are (capped), or None with a finding.  A conversation
    that shares its file with others (SAM's legacy store) is its part of that file, re-serialised,
    with an info finding that says so."""
    cid = resolve_id(store, text)
    path = store.raw_path(cid)
    try:
        part = store.raw_part(cid, path)
        if part is not None:
            findings.append(Finding("legacy", str(path), f"{cid} is one of the conversations in this file; this is "
                                    "its part, re-serialised (not byte for byte)", INFO, cid))
            return part
        return fsafe.read_capped(path, store.caps.snapshot)
    except FileProblem as exc:
        findings.append(Finding(exc.code, str(path), exc.message, ERROR, cid))
        return None
