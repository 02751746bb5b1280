"""What the llm and ChatGPT hostile tests share: run every read-only command on a hostile tree and
hold it to the adversarial rules (no crash, exit 0 or 3, 0 changed bytes, the expected findings)."""

from __future__ import annotations

import orjson

from tests.adversarial.harness import TALLY, diff, fingerprint, invoke

COMMANDS = [
    ["ls"],
    ["ls", "--format", "json"],
    ["check", "--format", "json"],
    ["stats", "--format", "json"],
    ["export", "--all", "--to", "jsonl"],
    ["export", "--all", "--to", "html", "-o", "{out}"],
    ["search", "the", "--format", "json", "-n", "50"],
    ["search", "--exact", "e", "--format", "jsonl"],
    ["search", "test", "--rank", "sam", "--threshold", "0"],
    ["usage", "--by", "session", "--breakdown", "--format", "json"],
    ["usage", "--chart"],
]


def run_all(tree, root, out, expect: set, ids=(), extra=()) -> None:
    before = fingerprint(tree)
    TALLY.trees += 1
    check_codes = set()
    argvs = [[a.replace("{out}", str(out)) for a in c] for c in COMMANDS]
    argvs += [["show", i, *x] for i in ids for x in ([], ["--all", "--format", "json"], ["--raw"])]
    for argv in argvs + list(extra):
        o = invoke(["--root", str(root), *argv])
        TALLY.cases += 1
        assert o.crash is None, (argv, o.crash)
        # (a show of an id the hostile edit broke or removed: not found, 4)
        want = {"show": (0, 3, 4), "search": (0, 1, 3)}.get(argv[0], (0, 3))  # (search: 1 when nothing matches)
        assert o.exit_code in want, (argv, o.exit_code, o.stderr[-2000:])
        if argv[:1] == ["check"]:
            check_codes = {f["code"] for f in orjson.loads(o.stdout)["findings"]}
    assert expect <= check_codes, (expect, check_codes)
    changed = diff(before, fingerprint(tree))
    assert not changed, changed
