"""What search reads of a mermaid store: one source per session (snapshot + log), its messages the rows."""

from __future__ import annotations

import os
import re

from samctl import fsafe
from samctl.errors import NotFound
from samctl.stores.mermaid.decode import MERMAID_ID_RE
from samctl.stores.sources import Found, Source, message_rows


_SESSION_FILE = re.compile("(" + MERMAID_ID_RE.pattern.removesuffix(r"\Z") + r")\.jsonl?\Z")  # ID.json, ID.jsonl


def sources(store, findings: list, scope: set | None = None) -> dict[str, Source]:
    conv_dir = str(store.conv_dir)
    try:
        names = os.listdir(conv_dir)
    except OSError as exc:
        raise NotFound(f"cannot list {conv_dir}: {exc.strerror}") from None
    ids = sorted({m[1] for m in map(_SESSION_FILE.match, names) if m})
    found = Found(findings)
    try:
        fd = fsafe.open_dir_fd(conv_dir)
    except OSError as exc:
        raise NotFound(f"cannot open {conv_dir}: {exc.strerror}") from None
    try:
        listed = set(names)
        for cid in ids:
            if scope is None or cid in scope:
                found.add_in(fd, conv_dir, cid, "mermaid", (cid + ".json", cid + ".jsonl"), cid, listed)
    finally:
        os.close(fd)
    return found.sources


def rows(store, src: Source, findings: list, infos: list):

    conv = store.load_listed(src.conv, findings)
    if conv is not None:
        infos.append({"id": src.conv, "title": conv.meta.title})
        yield from message_rows(conv, src.conv)
