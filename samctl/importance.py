"""SAM's importance score of a message (sam.md §4.5.4): what ``--min-importance`` filters on, for every store.

Pure functions, no I/O, no imports: the score is a property of a message's text and role.
"""

from __future__ import annotations

_QUESTION_WORDS = ("what", "which", "how")
_CONSTRAINT_WORDS = (
    "must", "require", "need to", "budget", "limit", "maximum", "minimum", "within", "miles",
    "radius", "constraint",
)  # fmt: skip
_CONFIRM_WORDS = (
    "yes", "proceed", "approved", "confirmed", "agree", "correct", "exactly", "that's right",
    "go ahead",
)  # fmt: skip
_PRIORITY_WORDS = ("focus on", "prioritize", "most important", "critical", "priority", "key requirement")
_ACK_WORDS = ("thanks", "thank you", "ok", "okay", "got it", "sounds good", "perfect", "great")
_ACKS = frozenset(w + end for w in _ACK_WORDS for end in ("", "!", "."))


def _has_any(lower: str, words: tuple) -> bool:
    """``any(w in lower for w in words)`` without a generator's frame per message (a search's hot path;
    a regular expression of the words measured slower than these C substring searches)."""
    for w in words:
        if w in lower:
            return True
    return False


def importance(text: str, is_user: bool) -> float:
    """SAM's importance score of a message (sam.md §4.5.4), exactly, including its float arithmetic.

    Lengths are Swift character counts, approximated by ``len`` (code points), as the spec says.
    """
    lower = text.lower()
    # SAM raises the score to the largest of: 0.9 for a constraint word; 0.85 for a question (assistant),
    # a confirmation (short texts) or a priority word.  Both are above either base score, so the first
    # rule that holds decides and the other word lists need no search.
    if _has_any(lower, _CONSTRAINT_WORDS):
        imp = 0.9
    elif (
        not is_user
        and "?" in text
        or _has_any(lower, _PRIORITY_WORDS)
        or not is_user
        and _has_any(lower, _QUESTION_WORDS)
        or len(text) < 200
        and _has_any(lower, _CONFIRM_WORDS)
    ):
        imp = 0.85
    else:
        imp = 0.7 if is_user else 0.5
    if len(text) < 50 and lower in _ACKS:
        imp = 0.3
    if is_user and len(text) > 300:
        imp = min(imp + 0.1, 1.0)
    return imp


def message_importance(msg) -> float:
    """The importance of a model ``Message`` as ``show --min-importance`` and ``search`` use it.

    The stored value where the store has one (SAM); otherwise sam.md §4.5.4 computed as SAM would have:
    user and assistant messages are scored, every other kind (tool, reasoning, system) keeps SAM's
    default 0.5.
    """
    if msg.importance is not None:
        return msg.importance
    if msg.role in ("user", "assistant"):
        return importance(msg.content, msg.role == "user")
    return 0.5
