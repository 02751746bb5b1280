"""Hostile queries against samctl search (issue #22): every operator of the query language, and of
the engines people might expect underneath (FTS5, Lucene, SQL, regex), NUL, 1 MB queries, unbalanced
quotes, emoji, RTL, combining marks, lone surrogates: never a crash, exit 0 (ranked) or 2 (a usage
error that says what is wrong), and the store never changes."""

from __future__ import annotations

import random

import pytest

from tests.adversarial.harness import TALLY, fingerprint, invoke
from tests.search_helpers import age

OPERATORS = [
    "+",
    "-",
    '"',
    "*",
    "role:",
    "in:",
    "title:",
    "store:",
    "(",
    ")",
    ":",
    "^",
    "~",
    "NEAR",
    "AND",
    "OR",
    "NOT",
    "\\",
    "'",
    ";",
    "%",
    "_",
    "|",
    "&",
    "{",
    "}",
    "[",
    "]",
    ".*",
    "$",
    "?",
]
FIXED = [
    "budget",
    "+budget -draft",
    '"weekend trip"',
    "budg*",
    "-budget portland",
    "role:user budget",
    "in:memories budget",
    'title:"weekend trip" rain',
    "store:mermaid budget",
    "store:sam budget",
    '"unclosed',
    '""',
    '"a" "',
    "+",
    "-",
    "*",
    "**",
    "b*",
    "+-budget",
    "--budget",
    "-+budget",
    "role:",
    "role:bot x",
    "in:everything x",
    "store:nope x",
    "title: x",
    "NEAR(budget trip, 5)",
    "budget AND trip OR NOT rain",
    "text:budget",
    "budget^2",
    "trip~3",
    "'; DROP TABLE memories; --",
    "%' OR 1=1 --",
    '\\"budget\\"',
    "(budget",
    "budget)",
    "[a-z]+",
    ".*",
    "a|b",
    "\x00",
    "budget\x00trip",
    "🙂 budget 🚀",
    "ميزانية الرحلة",
    "\u202eetadpu\u202c budget",
    "e\u0301\u0301\u0301 budget",
    "東京 予算",
    "งบประมาณ",
    "\ud800 budget",
    "budget \udfff",
    " " * 1000,
    "\n\t\r budget",
    "role:user role:assistant role:tool budget",
    "in:memories in:messages x",
    '+"a phrase" -"other one" x*',
    "interested in: budgets",
    "http://example.com/budget",
    "C:\\budget",
    "12:30 budget",
]


def _hostile(seed: int, n: int) -> list[str]:
    rng = random.Random(seed)
    words = ["budget", "trip", "weekend", "portland", "rain", "the", "a", "Zürich", "東京", "🙂"]
    out = []
    for _ in range(n):
        parts = [
            rng.choice(OPERATORS) + rng.choice(words) if rng.random() < 0.6 else rng.choice(OPERATORS)
            for _ in range(rng.randint(1, 6))
        ]
        out.append(rng.choice([" ", "", "  "]).join(parts))
    return out


HUGE = ["budget " * 150_000, '"' + "trip " * 200_000, "-" * 1_000_000, "東" * 300_000, "+a " * 300_000]


@pytest.mark.parametrize("store", ["sam", "mermaid"])
def test_hostile_queries(store, sam_demo, mermaid_demo, request):
    root = sam_demo if store == "sam" else mermaid_demo
    age(root)
    before = fingerprint(root)
    queries = FIXED + _hostile(22, 150) + (HUGE if request.config.getoption("-m", "") != "not slow" else HUGE[:2])
    failures = []
    for q in queries:
        for extra in ([], ["--format", "jsonl", "-n", "3"]):
            out = invoke(["--root", str(root), "search", "--", q, *extra])
            TALLY.cases += 1
            label = f"{store}: search {q[:60]!r} {' '.join(extra)}"
            if out.crash:
                TALLY.note("crashes", label)
                failures.append(f"CRASH {label}\n{out.crash}")
            elif out.exit_code not in (0, 1, 2):  # (1: nothing matches, as grep)
                TALLY.note("bad_exits", f"{label} -> {out.exit_code}")
                failures.append(f"EXIT {out.exit_code} {label}\n{out.stderr[-800:]}")
            elif out.exit_code == 2 and (
                "error:" not in out.stderr or "Traceback" in out.stderr or "internal error" in out.stderr
            ):
                failures.append(f"UNCLEAR {label}\n{out.stderr[-800:]}")
    after = fingerprint(root)
    if after != before:
        TALLY.note("changed", store)
        failures.append("the store changed")
    assert not failures, "\n\n".join(failures[:20])
