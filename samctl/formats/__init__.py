"""Store detection: which store lives at a path, and the Store object for it.

Accepted ``--root`` values (DESIGN.md): a SAM base folder, a SAM
``conversations`` folder, a mermaid project folder, or a
``.mermaid/conversations`` folder.  Without one: ``./.mermaid/conversations``
if present, else SAM's default location.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from samctl.errors import NotFound
from samctl.formats.base import Caps, Store

SAM_DEFAULT_BASE = Path("~/Library/Application Support/SAM")
_UUID_NAME = re.compile(r"[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}\Z")
_MERMAID_NAME = re.compile(r"[0-9]{8}_[0-9]{6}_[0-9]{3}\.(json|meta|jsonl)\Z")


def _looks_like_sam_conversations(p: Path) -> bool:
    if (p / "active-conversation.json").exists() or (p / "conversations.json").exists():
        return True
    try:
        with os.scandir(p) as it:
            for e in it:
                if _UUID_NAME.match(e.name) and e.is_dir(follow_symlinks=False):
                    return True
    except OSError:
        return False
    return False


def _looks_like_mermaid_conversations(p: Path) -> bool:
    try:
        with os.scandir(p) as it:
            return any(_MERMAID_NAME.match(e.name) for e in it)
    except OSError:
        return False


def locate(root: str | None) -> tuple[str, Path, Path]:
    """(store name, conversations folder, base folder) for a ``--root`` value."""
    if root is None:
        here = Path.cwd() / ".mermaid" / "conversations"
        if here.is_dir():
            return "mermaid", here, here.parent
        sam = SAM_DEFAULT_BASE.expanduser()
        if (sam / "conversations").is_dir():
            return "sam", sam / "conversations", sam
        raise NotFound(
            f"no store found: neither ./.mermaid/conversations nor {sam}/conversations exists",
            hint="point samctl at one with --root PATH or SAMCTL_ROOT",
        )
    p = Path(root).expanduser()
    other = _reader_store(p)
    if other is not None:
        return other
    if not p.exists():
        raise NotFound(f"{root}: no such folder", hint="check the path given with --root or SAMCTL_ROOT")
    if not p.is_dir():
        raise NotFound(f"{root}: is not a folder", hint="--root takes a folder")
    if (p / ".mermaid" / "conversations").is_dir():
        return "mermaid", p / ".mermaid" / "conversations", p / ".mermaid"
    if p.name == "conversations" and p.parent.name == ".mermaid":
        return "mermaid", p, p.parent
    if p.name == ".mermaid" and (p / "conversations").is_dir():
        return "mermaid", p / "conversations", p
    if (p / "conversations").is_dir() and _looks_like_sam_base(p):
        return "sam", p / "conversations", p
    if _looks_like_sam_conversations(p):
        return "sam", p, p.parent
    if _looks_like_mermaid_conversations(p):
        return "mermaid", p, p.parent
    if p.name == "conversations" and p.parent.name == "SAM":
        return "sam", p, p.parent
    raise NotFound(
        f"{root}: not a SAM or mermaid-cli store",
        hint="give a SAM base folder (…/Application Support/SAM), its conversations folder, "
        "a mermaid project folder, its .mermaid folder, or its .mermaid/conversations folder",
    )


def _reader_store(p: Path):
    """An llm ``logs.db`` (its folder or the file) or a ChatGPT export (folder or ``.zip``): read-only
    stores (issue #23).  Tried first: an export folder holds a ``conversations.json``, as SAM's legacy
    folder does.  Returns locate's tuple, the file itself as the second item for a file root."""
    from samctl.formats.chatgpt.store import looks_like_export
    from samctl.formats.llm.store import looks_like_llm

    db = looks_like_llm(p)
    if db is not None:
        return "llm", db if db == p else p, p.parent if db == p else p
    export = looks_like_export(p)
    if export is not None:
        return "chatgpt", p, p.parent if export[0] == "zip" else p
    return None


def _looks_like_sam_base(p: Path) -> bool:
    conv = p / "conversations"
    return (
        p.name == "SAM"
        or (p / "shared_memory.db").exists()
        or (p / "memory.db").exists()
        or _looks_like_sam_conversations(conv)
        or not any(True for _ in _safe_iterdir(conv))
    )


def _safe_iterdir(p: Path):
    try:
        yield from os.scandir(p)
    except OSError:
        return


def open_store(root: str | None, caps: Caps | None = None, cache: bool = True) -> Store:
    kind, conv, base = locate(root)
    if kind in ("llm", "chatgpt"):  # (read-only stores, issue #23: the folder, or the database / zip file)
        from samctl.formats.chatgpt.store import ChatgptStore
        from samctl.formats.llm.store import LlmStore

        return (LlmStore if kind == "llm" else ChatgptStore)(conv, base, caps, cache)
    if kind == "mermaid":
        from samctl.formats.mermaid.store import MermaidStore

        return MermaidStore(conv, base, caps, cache)
    from samctl.formats.sam.store import SamStore

    return SamStore(conv, base, caps, cache)
