"""Turn what a user typed into one conversation id, like git does with hashes.

Order of checks: the text must be a possible id or id prefix under the store's
rule (else a usage error, before any path is built); an exact id wins; else a
unique prefix; two or more matches are ambiguous (usage error listing some).
"""

from __future__ import annotations

from samctl.errors import NotFound, UsageError


def resolve_id(store, text: str) -> str:
    if not isinstance(text, str) or not store.prefix_ok(text):
        shown = repr(text)[:60]
        raise UsageError(
            f"{shown} is not a {store.name} conversation id or id prefix",
            hint=f"ids look like {store.id_rule}; `samctl ls` lists them",
        )
    want = store.normalize_prefix(text)
    ids = store.all_ids()
    if want in ids:
        return want
    matches = [i for i in ids if i.startswith(want)]
    if not matches:
        raise NotFound(f"no conversation matches {text!r} in {store.conv_dir}", hint="`samctl ls` lists them")
    if len(matches) > 1:
        some = ", ".join(matches[:5]) + (" …" if len(matches) > 5 else "")
        raise UsageError(f"{text!r} is ambiguous: {len(matches)} conversations match ({some})",
                         hint="type more of the id")
    return matches[0]


def resolve_many(store, texts) -> list[str]:
    out = []
    for t in texts:
        cid = resolve_id(store, t)
        if cid not in out:
            out.append(cid)
    return out
