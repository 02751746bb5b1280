"""Reading an append-only JSON Lines file that another app writes (Claude Code, Codex): one object a line.

``parse_lines`` never raises: every line it cannot use is a Finding (code, path, one-line reason) and the
rest still reads.  A last line without its newline that does not parse is a write in progress (an info
finding when the file is fresh, else a warning).  Memory is bounded by what parsing builds, not only by bytes: a file of over ``MAX_LINES`` lines is
not read, and reading stops (with a finding) once the estimated size of the parsed objects passes
``values.BUILD_CAP``.  Lines longer than ``line_cap`` are skipped, not parsed, and so are lines nested deeper than
``values.MAX_DEPTH`` (nothing downstream then meets a value it cannot walk).
Invalid UTF-8 is decoded with replacement characters (and reported); JSON that only the standard library
accepts (lone surrogate escapes) is read with those made U+FFFD, so nothing downstream meets a surrogate.
"""

from __future__ import annotations

import json
import re

import orjson

from samctl.model import INFO, WARNING, Finding
from samctl.stores.values import BUILD_CAP, MAX_DEPTH, build_cost, depth, short_json

LINE_CAP = 64 << 20  # a single Claude Code tool result line of 5-12 MB is reported; base64 images more
FRESH_SECONDS = 600  # a torn last line in a file written this recently is a live write
MAX_LINES = 2_000_000  # lines in one file (a 128 MiB rollout of short event lines has about 400,000)


def parse_lines(
    data: bytes,
    path: str,
    findings: list,
    *,
    line_cap: int | None = None,
    fresh: bool = False,
    conversation: str | None = None,
) -> list[tuple[int, dict]]:
    """``[(line number, object)]`` of every line of ``data`` that holds a JSON object."""
    out = []
    line_cap = LINE_CAP if line_cap is None else line_cap
    count = data.count(b"\n")
    if count > MAX_LINES:
        findings.append(
            Finding(
                "too-large", path, f"{count:,} lines, over the {MAX_LINES:,}-line cap; not read", WARNING, conversation
            )
        )
        return out
    built = 0
    lines = data.split(b"\n")
    torn = lines[-1] != b""  # the last piece has no newline after it
    if not torn:
        lines.pop()
    last = len(lines)
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        if len(line) > line_cap:
            findings.append(
                Finding(
                    "huge-line",
                    path,
                    f"line {n} is {len(line):,} bytes, over the {line_cap:,}-byte line cap; skipped",
                    WARNING,
                    conversation,
                )
            )
            continue
        built += build_cost(line)
        if built > BUILD_CAP:
            findings.append(
                Finding(
                    "too-large",
                    path,
                    f"from line {n} on, what parsing would build exceeds the "
                    f"{BUILD_CAP:,}-byte cap; the rest is skipped",
                    WARNING,
                    conversation,
                )
            )
            break
        obj = _loads(line, n, path, findings, conversation, torn and n == last, fresh)
        if obj is _SKIP:
            continue
        if line.count(b"[") + line.count(b"{") > MAX_DEPTH and depth(obj) > MAX_DEPTH:
            findings.append(
                Finding(
                    "too-deep",
                    path,
                    f"line {n} nests values over {MAX_DEPTH} levels deep; skipped",
                    WARNING,
                    conversation,
                )
            )
            continue
        if not isinstance(obj, dict):
            findings.append(
                Finding(
                    "not-object",
                    path,
                    f"line {n} is JSON but not an object ({type(obj).__name__}); skipped",
                    WARNING,
                    conversation,
                )
            )
            continue
        out.append((n, obj))
    return out


_SKIP = object()
_SURROGATE = re.compile(r"[\ud800-\udfff]")


def _loads(line: bytes, n: int, path: str, findings: list, conversation, is_torn: bool, fresh: bool):
    try:
        return orjson.loads(line)
    except orjson.JSONDecodeError as exc:
        first = _short(exc)
    if is_torn:
        findings.append(
            Finding(
                "torn-tail",
                path,
                f"the last line ({n}) is incomplete: " + ("a write in progress" if fresh else f"cut short ({first})"),
                INFO if fresh else WARNING,
                conversation,
            )
        )
        return _SKIP
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError:
        text = line.decode("utf-8", "replace")
        try:
            obj = orjson.loads(text)
        except orjson.JSONDecodeError:
            pass
        else:
            findings.append(
                Finding(
                    "bad-utf8",
                    path,
                    f"line {n} is not valid UTF-8; read with replacement characters",
                    WARNING,
                    conversation,
                )
            )
            return obj
    if "\\u" in text:  # JSON allows lone surrogate escapes; orjson does not
        try:
            obj = _no_surrogates(json.loads(text))
        except (ValueError, RecursionError):
            obj = _SKIP
        if obj is not _SKIP:
            findings.append(
                Finding(
                    "lone-surrogate", path, f"line {n} escapes a lone surrogate; read as U+FFFD", WARNING, conversation
                )
            )
            return obj
    findings.append(Finding("bad-line", path, f"line {n} is not valid JSON ({first}); skipped", WARNING, conversation))
    return _SKIP


def _no_surrogates(obj):
    """``obj`` (parsed by the standard library, so at most its recursion limit deep) with every lone
    surrogate in its strings made U+FFFD."""
    if isinstance(obj, str):
        return _SURROGATE.sub("\ufffd", obj)
    if isinstance(obj, list):
        return [_no_surrogates(v) for v in obj]
    if isinstance(obj, dict):
        return {_no_surrogates(k): _no_surrogates(v) for k, v in obj.items()}
    return obj


def _short(exc: Exception) -> str:
    return (str(exc).splitlines() or [type(exc).__name__])[0][:120]


def compact(obj, limit: int = 2000) -> str:
    """``obj`` as one line of JSON, cut at ``limit`` characters: how an unknown record is shown."""
    return short_json(obj, limit)
