"""What search reads of a mermaid store: one source per session (snapshot + log), its messages the rows."""

from __future__ import annotations

import os

from samctl.errors import NotFound
from samctl.stores.mermaid.decode import MERMAID_ID_RE
from samctl.stores.sources import Found, Source, message_rows


def sources(store, findings: list, scope: set | None = None) -> dict[str, Source]:
    conv_dir = str(store.conv_dir)
    try:
        names = os.listdir(conv_dir)
    except OSError as exc:
        raise NotFound(f"cannot list {conv_dir}: {exc.strerror}") from None
    ids = sorted({n.rpartition(".")[0] for n in names
                  if n.endswith((".json", ".jsonl")) and MERMAID_ID_RE.match(n.rpartition(".")[0])})
    found = Found(findings)
    for cid in ids:
        if scope is None or cid in scope:
            found.add(cid, "mermaid", [os.path.join(conv_dir, cid + ".json"), os.path.join(conv_dir, cid + ".jsonl")],
                      cid)
    return found.sources


def rows(store, src: Source, findings: list, infos: list):

    conv = store.load_listed(src.conv, findings)
    if conv is not None:
        infos.append({"id": src.conv, "title": conv.meta.title})
        yield from message_rows(conv, src.conv)
