"""What a search returns: the query, a hit, its snippet, and the order of hits (shared by every way of searching)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from samctl.search import sam_scoring
from samctl.timeparse import format_utc

EXCERPT = 75  # characters either side of the hit (docs/formats/sam.md §11)
RESCORE_MARGIN = 512  # at most this many candidates beyond the limit are scored exactly
KIND_ORDER = {"memory": 0, "message": 1, "archived": 2, "call": 3}


@dataclass
class SearchQuery:
    text: str = ""
    conversations: tuple = ()  # ids or unique prefixes
    where: str | None = None  # memories | messages | all; None: all (memories with --like)
    limit: int = 10
    threshold: float = 0.3
    since: float | None = None
    until: float | None = None
    exact: bool = False
    like: str | None = None
    min_importance: float | None = None
    use_index: bool = True
    rank: str = "bm25"  # bm25 (default) | sam (SAM's memory scoring, with --threshold)
    per_conversation: int = 3  # at most this many hits of one conversation in a row while others are left (0: any)
    by_conversation: bool = False  # one hit per conversation, its best, with the conversation's number of hits


@dataclass
class Hit:
    kind: str
    conversation_id: str
    title: str
    ref: str | None
    position: int
    date_ts: float | None
    importance: float
    text: str
    snippet: str = ""
    score: float | None = None
    cosine: float | None = None
    boost: float | None = None
    role: str | None = None
    content_type: str | None = None
    dimension: int | None = None
    exact: str | None = None
    store: str = ""
    source: str | None = None  # the memory.db of a memory (for --touch)
    parts: dict | None = None  # BM25: the score's parts (own, date, context, conversation, addressee)
    marks: list | None = None  # (start, end) of the matched words in ``snippet``
    context: str | None = None  # BM25, found by a neighbour's words: "user before: w1, w2"
    conversation_hits: int | None = None  # by_conversation: how many rows of its conversation match

    def to_dict(self) -> dict:
        return {
            "score": self.score,
            "cosine": self.cosine,
            "boost": self.boost,
            "kind": self.kind,
            "conversation_id": self.conversation_id,
            "title": self.title,
            "id": self.ref,
            "position": self.position,
            "date": format_utc(self.date_ts),
            "date_ts": self.date_ts,
            "importance": self.importance,
            "role": self.role,
            "content_type": self.content_type,
            "dimension": self.dimension,
            "exact": self.exact,
            "snippet": self.snippet,
            "text": self.text,
            "store": self.store,
            "parts": self.parts,
            "context": self.context,
        } | ({"conversation_hits": self.conversation_hits} if self.conversation_hits is not None else {})


# ---------------------------------------------------------------------------------------------
# Excerpts (docs/formats/sam.md §11)


def excerpt(text: str, start: int, length: int, ctx: int = EXCERPT) -> str:
    """Up to ``ctx`` characters either side of ``text[start:start+length]``, with ``...`` markers."""
    s = max(0, start - ctx)
    e = min(len(text), start + length + ctx)
    return ("..." if s > 0 else "") + text[s:e] + ("..." if e < len(text) else "")


def find_ci(text: str, needle: str) -> int:
    """Index in ``text`` of the first case-insensitive occurrence of ``needle`` (-1 if none).
    A long text is lowercased a window at a time (windows overlap by the needle's length), not
    copied whole."""
    if len(text) > 4 * sam_scoring.PIECE:
        step = sam_scoring.PIECE
        for start in range(0, len(text), step):
            i = find_ci(text[start : start + step + len(needle)], needle)
            if i >= 0:
                return start + i
        return -1
    low = text.lower()
    i = low.find(needle.lower())
    if i < 0 or len(low) == len(text):
        return i
    m = re.search(re.escape(needle), text, re.IGNORECASE)  # lower() changed lengths: map back
    return m.start() if m else min(i, len(text))


def folded_find(text: str, needle: str) -> int:
    """Where in ``text`` the folded ``needle`` starts, found in ``sam_scoring.fold(text)`` (which may be
    shorter) and mapped back: the shortest prefix of ``text`` that folds to that many characters."""
    j = sam_scoring.fold(text).find(needle)
    if j < 0:
        return -1
    lo, hi = 0, len(text)
    while lo < hi:
        mid = (lo + hi) // 2
        if len(sam_scoring.fold(text[:mid])) < j:
            lo = mid + 1
        else:
            hi = mid
    return lo


def snippet(text: str, query: str) -> str:
    """The excerpt around the first word of the query found in the text (the start otherwise)."""
    best, size = -1, 0
    words = {w.strip(".,;:!?\"'()[]{}") for w in sam_scoring.tokens(query)} | sam_scoring.tokens(query)
    for w in sorted(w for w in words if len(w) > 2):
        i = find_ci(text, w)
        if i >= 0 and (best < 0 or i < best):
            best, size = i, len(w)
    return excerpt(text, max(best, 0), size)


def term_snippet(text: str, terms: set, ctx: int = EXCERPT) -> tuple[str, list]:
    """(an excerpt of ``text`` around its densest run of words whose index terms meet ``terms``,
    the (start, end) of those words in the excerpt); the start of the text and no marks if none."""
    from samctl.search import text as tx  # (lazy: not loaded by ls or --help)

    head = text[: 4 * sam_scoring.PIECE]  # (a huge text: its matches are looked for in its beginning)
    found = tx.spans(head, terms)
    if not found:
        return excerpt(text, 0, 0), []
    best, best_n, j = 0, 0, 0
    for i, (a, _) in enumerate(found):  # the window of 2 x ctx characters holding the most matches
        while found[j][1] < a - 2 * ctx:
            j += 1
        if i - j + 1 > best_n:
            best, best_n = j, i - j + 1
    start, end = found[best][0], found[best + best_n - 1][1]
    pad = max(0, (2 * ctx - (end - start)) // 2)
    s, e = max(0, start - pad), min(len(text), end + pad)
    lead = "..." if s > 0 else ""
    out = lead + text[s:e] + ("..." if e < len(text) else "")
    marks = [(a - s + len(lead), b - s + len(lead)) for a, b in found if a >= s and b <= e]
    return out, marks


# ---------------------------------------------------------------------------------------------
# The query


def sort_key(h: Hit):
    return (-h.score if h.score is not None else 0.0, KIND_ORDER[h.kind], h.conversation_id, h.position, h.ref or "")
