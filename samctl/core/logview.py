"""samctl log: a conversation's event log as rows (seq, time, type, summary), for stores that keep one."""

from __future__ import annotations

from samctl.errors import UsageError
from samctl.said import Suggestion, said
from samctl.stores.resolve import resolve_id


def log_rows(store, text: str, types: tuple = ()):
    """(id, path, rows, LogRead) for the log of conversation ``text``.

    Raises UsageError for a store without event logs or an event type it does not know, NotFound
    when the id has no log.
    """
    if not store.has_event_logs:
        raise UsageError(
            f"samctl log reads event logs; {store.app_name} keeps no event log",
            hint=said("use `", Suggestion("show", "ID"), f"` for a {store.app_name} conversation"),
        )
    unknown = [t for t in types if t not in store.event_types]
    if unknown:
        raise UsageError(
            f"--type {unknown[0]!r}: not an event type of {store.app_name}'s logs",
            hint="one of: " + ", ".join(store.event_types),
        )
    cid = resolve_id(store, text)
    return (cid, *store.event_log_rows(cid, types))
