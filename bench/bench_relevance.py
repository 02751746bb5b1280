#!/usr/bin/env python3
"""Relevance of `samctl search` on LoCoMo and LongMemEval: recall of the turns that answer each question.

    python bench/bench_relevance.py --data ../shared/eval/locomo-dev [--stores sam,mermaid] [--no-loo]
                                    [--no-cli] [--out DIR]
    python bench/bench_relevance.py --both ../shared/eval/locomo-dev ../shared/eval/longmemeval-dev [--no-cli]
                                    [--ablation] [--out DIR]

``--both`` measures the two benchmarks together, as a ranking is chosen on both, and prints one table:
plain BM25, the ranking in-process (``bm25.score`` over the messages read back) and ``samctl search``
through the CLI (LoCoMo as a mermaid archive, LongMemEval as a Claude Code store: one person's
haystack, one session a conversation, one turn a message); ``--ablation`` adds each feature removed
from the default, on both.  LongMemEval (../shared/eval/longmemeval-dev/README.md): turn recall@1/5/10
(share of the ``has_answer`` turns among the first K hits) and sessions found@5 (an answer session
among the first 5 distinct conversations of the first 50 hits).

Each conversation file becomes one SAM and one mermaid archive, as ../shared/eval/README.md says
(one session = one conversation, one turn = one message, speaker_a = user, speaker_b = assistant,
a photo's caption appended as " [shares CAPTION]", the session's time plus 5 s per turn), written
spec-true with fixtures/make_fixtures.py's writers into a temporary folder, never the repository.
For every category 1-4 question (evidence entries exactly ``D<n>:<n>``), asked as typed over that
archive, it prints R@1/5/10/25 (share of evidence turns among the top K, averaged) for:

- ``samctl search Q --in messages -n 25`` as it is today (SAM's memory scoring), through the CLI
  in-process (click's CliRunner), on each store;
- plain BM25, the baseline computed in the same run: lowercase ``\\w+`` tokens, Okapi k1=1.2 b=0.75;
- the new ranking (``samctl.search.bm25``, default ``Params``) over the messages read back from the
  archive with samctl's own loader (``open_store`` + ``load_resolved``);
- an ablation (features added one by one, and each removed from the full ranking);
- leave-one-conversation-out: parameters tuned (coordinate ascent on R@5+R@10+R@25 over a fixed
  grid) on four files, scored on the fifth; the pooled held-out figures are what to expect on
  unseen conversations.

Nothing passes or fails; the goals of issue 22 are printed beside the figures.
"""

from __future__ import annotations

import argparse
import calendar
import datetime
import json
import lzma
import math
import os
import re
import sys
import tempfile
import time
import uuid
from collections import Counter
from dataclasses import replace
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

import numpy as np  # noqa: E402

from fixtures import make_fixtures as mf  # noqa: E402
from samctl.search import bm25  # noqa: E402

KS = (1, 5, 10, 25)
GOAL = {5: 0.64, 10: 0.73, 25: 0.85}
DRAGON = {5: 0.634, 10: 0.721, 25: 0.840}
_DIA = re.compile(r"D\d+:\d+\Z")
_NS = uuid.UUID("5a3c3e1e-8f7b-4c1e-9a55-1c0c0ca0b0e5")


# ---------------------------------------------------------------- the data
def read_locomo(path: Path) -> dict:
    """{name, sessions: [(epoch seconds, [(speaker_is_a, text, dia_id)])], questions: [(q, {dia}, cat)]}."""
    d = json.loads(path.read_text(encoding="utf-8"))
    sessions = []
    for n in sorted(int(k.split("_")[1]) for k in d if re.fullmatch(r"session_\d+", k)):
        when = datetime.datetime.strptime(d[f"session_{n}_date_time"], "%I:%M %p on %d %B, %Y")
        turns = []
        for t in d[f"session_{n}"]:
            text = t["text"] + (f" [shares {t['blip_caption']}]" if t.get("blip_caption") else "")
            turns.append((t["speaker"] == d["speaker_a"], text, t["dia_id"]))
        sessions.append((calendar.timegm(when.timetuple()), turns))
    questions = []
    for q in d["qa"]:
        ev = {e for e in q.get("evidence", []) if isinstance(e, str) and _DIA.fullmatch(e)}
        if q.get("category") in (1, 2, 3, 4) and ev:
            questions.append((q["question"], ev, q["category"]))
    return {"name": path.stem, "sessions": sessions, "questions": questions}


def read_longmemeval(folder: Path) -> list:
    """[{question, sessions: [(session id, epoch seconds, [turns])], answers: {session ids}}] of dev.jsonl.xz."""
    out = []
    with lzma.open(folder / "dev.jsonl.xz", "rt", encoding="utf-8") as f:
        for line in f:
            d = json.loads(line)
            sessions = []
            for sid, date, turns in zip(d["haystack_session_ids"], d["haystack_dates"], d["haystack_sessions"]):
                when = datetime.datetime.strptime(date[:10] + " " + date[-5:], "%Y/%m/%d %H:%M")
                sessions.append((sid, calendar.timegm(when.timetuple()), turns))
            out.append({"question": d["question"], "sessions": sessions, "answers": set(d["answer_session_ids"])})
    return out


# ---------------------------------------------------------------- the archives
def _iso(sec: int) -> str:
    return time.strftime(mf.SAM_DATE, time.gmtime(sec))


def write_sam(base: Path, conv: dict) -> dict:
    """A SAM base folder, one conversation per session; returns {(conversation id, position): dia_id}."""
    where = {}
    for n, (t0, turns) in enumerate(conv["sessions"]):
        cid = str(uuid.uuid5(_NS, f"{conv['name']}/{n}")).upper()
        msgs = []
        for i, (is_a, text, dia) in enumerate(turns):
            mid = str(uuid.uuid5(_NS, f"{conv['name']}/{dia}")).upper()
            msgs.append(mf.sam_message(mid, "user" if is_a else "assistant", text, _iso(t0 + 5 * i)))
            where[(cid, i)] = dia
        end = _iso(t0 + 5 * max(len(turns) - 1, 0))
        doc = mf.sam_doc(cid, f"{conv['name']} session {n + 1}", msgs, _iso(t0), end)
        mf._write(base / "conversations" / cid / "conversation.json", mf.sam_dumps(doc))
    mf._private_tree(base)
    return where


def _mermaid_ts(sec: int) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(sec)) + ".000000000+00:00"


def write_mermaid(project: Path, conv: dict) -> dict:
    """A mermaid project, one session per conversation; returns {(conversation id, position): dia_id}."""
    folder = project / ".mermaid" / "conversations"
    folder.mkdir(parents=True, exist_ok=True)
    where = {}
    for n, (t0, turns) in enumerate(conv["sessions"]):
        cid = time.strftime("%Y%m%d_%H%M%S", time.gmtime(t0)) + f"_{n % 1000:03d}"
        msgs = [
            mf.mermaid_message("User" if is_a else "Assistant", text, _mermaid_ts(t0 + 5 * i))
            for i, (is_a, text, _) in enumerate(turns)
        ]
        where.update({(cid, i): dia for i, (_, _, dia) in enumerate(turns)})
        title = f"{conv['name']} session {n + 1}"
        mf.write_mermaid(folder, mf.mermaid_doc(cid, title, msgs, _mermaid_ts(t0)))
    mf._private_tree(project / ".mermaid")
    return where


def _cc_ts(sec: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(sec)) + ".000Z"


def write_claude_code(root: Path, item: dict, name: str) -> dict:
    """A Claude Code store (``root/projects/<slug>/<session uuid>.jsonl``), one session per haystack
    session, one line per turn; returns {(conversation id, position): (session index, turn index)}."""
    proj = root / "projects" / "-home-user-lme"
    proj.mkdir(parents=True, exist_ok=True)
    where = {}
    for n, (_sid, t0, turns) in enumerate(item["sessions"]):
        cid = str(uuid.uuid5(_NS, f"{name}/{n}"))
        lines, parent = [], None
        for i, t in enumerate(turns):
            u = str(uuid.uuid5(_NS, f"{name}/{n}/{i}"))
            e = {
                "type": t["role"],
                "uuid": u,
                "parentUuid": parent,
                "isSidechain": False,
                "userType": "external",
                "sessionId": cid,
                "timestamp": _cc_ts(t0 + 5 * i),
                "cwd": "/home/user/lme",
                "version": "2.1.51",
            }
            if t["role"] == "user":
                e["message"] = {"role": "user", "content": t["content"]}
            else:
                e["message"] = {
                    "id": f"msg_{u[:8]}",
                    "type": "message",
                    "role": "assistant",
                    "model": "claude",
                    "content": [{"type": "text", "text": t["content"]}],
                    "stop_reason": "end_turn",
                }
            lines.append(json.dumps(e, ensure_ascii=False))
            where[(cid, i)] = (n, i)
            parent = u
        mf._write(proj / f"{cid}.jsonl", "\n".join(lines) + "\n")
    return where


# ---------------------------------------------------------------- the retrievers
def recall(found: list, evidence: set) -> np.ndarray:
    return np.array([len(evidence & set(found[:k])) / len(evidence) for k in KS])


def today(root: Path, question: str, where: dict, runner, cli, *extra) -> list | None:
    """``samctl search -- Q --in messages -n 25`` through the CLI, as typed; the dia ids of its hits,
    in order; None when the CLI refuses the question as a query (exit 2: an unclosed quote)."""
    r = runner.invoke(
        cli,
        ["--root", str(root), "search", "--in", "messages", "-n", "25", "--format", "jsonl", *extra, "--", question],
        catch_exceptions=False,
    )
    if r.exit_code == 2:
        return None
    if r.exit_code not in (0, 1):
        raise SystemExit(f"samctl search failed ({r.exit_code}): {r.output}")
    hits = [json.loads(line) for line in r.stdout.splitlines() if line.strip()]
    return [where.get((h["conversation_id"], h["position"])) for h in hits]


def lme_corpus(item: dict):
    """(Corpus, [(session index, turn index)] per row) of one haystack, in-process."""
    corpus, ids = bm25.Corpus(), []
    for n, (_sid, t0, turns) in enumerate(item["sessions"]):
        corpus.add_conversation(bm25.Message(t["content"], t["role"], t0 + 5 * i) for i, t in enumerate(turns))
        ids += [(n, i) for i in range(len(turns))]
    return corpus, ids


def lme_measure(item: dict, found: list) -> np.ndarray:
    """Turn recall @1/5/10 and sessions found@5 of FOUND = [(session index, turn index)] in order."""
    ev = {
        (n, i) for n, (_s, _t, turns) in enumerate(item["sessions"]) for i, t in enumerate(turns) if t.get("has_answer")
    }
    r = [len(ev & set(found[:k])) / len(ev) if ev else 0.0 for k in (1, 5, 10)]
    sessions = list(dict.fromkeys(n for n, _ in found))[:5]
    r.append(float(any(item["sessions"][n][0] in item["answers"] for n in sessions)))
    return np.array(r)


def lme_evaluate(data: list, params) -> np.ndarray:
    """In-process figures over DATA [(item, corpus, ids)]."""
    tot = np.zeros(4)
    for item, corpus, ids in data:
        tot += lme_measure(item, [ids[r] for r in bm25.top_k(bm25.score(corpus, item["question"], params), 50)])
    return tot / len(data)


def read_back(root: Path, where: dict):
    """The archive's messages read with samctl's loaders: (Corpus, dia id per row)."""
    from samctl.core.load import load_resolved
    from samctl.stores import open_store

    store = open_store(str(root), None, False)
    findings: list = []
    corpus, dias = bm25.Corpus(), []
    for meta in sorted(store.list_metas(findings), key=lambda m: (m.created_ts or 0, m.id)):
        conv = load_resolved(store, meta.id, findings)
        corpus.add_conversation(bm25.Message(m.content, m.role, m.timestamp_ts) for m in conv.messages)
        dias += [where.get((meta.id, i)) for i in range(len(conv.messages))]
    if findings:
        raise SystemExit(f"{root}: the archive has findings: {findings[:3]}")
    return corpus, dias


class PlainBM25:
    """The baseline: lowercase \\w+ tokens, Okapi BM25 k1=1.2 b=0.75 (Lucene's idf), one document per message."""

    def __init__(self, texts: list):
        self.docs = [Counter(re.findall(r"\w+", t.lower())) for t in texts]
        self.lens = np.array([sum(d.values()) for d in self.docs], float)
        self.post: dict = {}
        for i, d in enumerate(self.docs):
            for term, tf in d.items():
                self.post.setdefault(term, []).append((i, tf))

    def score(self, query: str) -> np.ndarray:
        n, s = len(self.docs), np.zeros(len(self.docs))
        norm = 1.2 * (0.25 + 0.75 * self.lens / self.lens.mean())
        for term in set(re.findall(r"\w+", query.lower())):
            post = self.post.get(term, [])
            idf = math.log(1 + (n - len(post) + 0.5) / (len(post) + 0.5))
            for i, tf in post:
                s[i] += idf * tf * 2.2 / (tf + norm[i])
        return s


def evaluate(data: list, params) -> tuple[np.ndarray, list]:
    """Pooled recall over every question of DATA [(corpus, dias, questions)], and per file."""
    per = []
    for corpus, dias, questions in data:
        tot = np.zeros(len(KS))
        for q, ev, _ in questions:
            tot += recall([dias[r] for r in bm25.top_k(bm25.score(corpus, q, params), 25)], ev)
        per.append((tot, len(questions)))
    return sum(t for t, _ in per) / sum(n for _, n in per), per


GRID = dict(
    k1=[0.5, 0.7, 0.9, 1.0, 1.2, 1.5],
    b=[0.2, 0.3, 0.4, 0.5, 0.6, 0.75],
    date=[0, 0.5, 1, 1.5, 2],
    prev=[0.3, 0.45, 0.6, 0.75, 0.9],
    next=[0.2, 0.3, 0.4, 0.5, 0.7],
    prev2=[0, 0.15, 0.3, 0.45],
    next2=[0, 0.1, 0.2, 0.3, 0.4],
    conversation=[0, 0.25, 0.5, 0.75, 1.0],
    addressee=[0, 0.3, 0.5, 0.7, 0.9, 1.2],
    diversify=[0, 0.03, 0.05, 0.08, 0.12],
    diversify_free=[1, 2, 3],
)


def tune(data: list, start=bm25.Params(), rounds: int = 2):
    """Coordinate ascent over GRID on R@5 + R@10 + R@25, from START."""

    def objective(p):
        r = evaluate(data, p)[0]
        return r[1] + r[2] + r[3]

    best_p, best = start, objective(start)
    for _ in range(rounds):
        moved = False
        for name, values in GRID.items():
            for v in values:
                p = replace(best_p, **{name: v})
                o = objective(p)
                if o > best + 1e-9:
                    best_p, best, moved = p, o, True
        if not moved:
            break
    return best_p


def ablation() -> list:
    full, none = bm25.Params(), bm25.BASELINE
    ctx = dict(prev=full.prev, next=full.next, prev2=full.prev2, next2=full.next2)
    added = [
        ("tokenizer (stems, stop words, folding), Okapi 1.2/0.75", none),
        ("+ k1/b", replace(none, k1=full.k1, b=full.b)),
    ]
    added.append(("+ neighbours (2 turns each way)", replace(added[-1][1], **ctx)))
    added.append(("+ date field", replace(added[-1][1], date=full.date)))
    added.append(("+ conversation-level BM25", replace(added[-1][1], conversation=full.conversation)))
    added.append(("+ addressee", replace(added[-1][1], addressee=full.addressee)))
    added.append(("+ a name weighs less in the text", replace(added[-1][1], name_weight=full.name_weight)))
    added.append(("+ diversity across conversations (= default)", replace(added[-1][1], diversify=full.diversify)))
    removed = [
        ("default without k1/b (1.2/0.75)", replace(full, k1=1.2, b=0.75)),
        ("default without neighbours", replace(full, prev=0, next=0, prev2=0, next2=0)),
        ("default without 2nd neighbours", replace(full, prev2=0, next2=0)),
        ("default without date field", replace(full, date=0)),
        ("default without conversation-level", replace(full, conversation=0)),
        ("default without addressee", replace(full, addressee=0)),
        ("default without diversity", replace(full, diversify=0)),
        ("default without the lighter name", replace(full, name_weight=1)),
    ]
    return added + removed


# ---------------------------------------------------------------- output
def line(label: str, r) -> str:
    return f"  {label:<58}" + "".join(f"{x:>8.3f}" for x in r)


def header(title: str) -> str:
    return f"{title}\n  {'':<58}" + "".join(f"{'R@' + str(k):>8}" for k in KS)


BOTH_GOALS = {"LoCoMo": (None, 0.70, 0.77, 0.86), "LongMemEval": (None, 0.72, 0.82, 0.97)}


def both_ablation() -> list:
    """Each feature of the default removed (both benchmarks are measured on each)."""
    full = bm25.Params()
    return [
        ("default", full),
        ("k1/b 1.2/0.75 (the previous default)", replace(full, k1=1.2, b=0.75)),
        ("k1/b 0.9/0.4 (issue 22's)", replace(full, k1=0.9, b=0.4)),
        ("diversity from a conversation's 5th row (free 3, the previous default)", replace(full, diversify_free=3)),
        ("the previous default (k1/b 1.2/0.75, free 3)", replace(full, k1=1.2, b=0.75, diversify_free=3)),
        ("without neighbours", replace(full, prev=0, next=0, prev2=0, next2=0)),
        ("without 2nd neighbours", replace(full, prev2=0, next2=0)),
        ("without the long-turn damping (ctx_len)", replace(full, ctx_len=0)),
        ("without the reply weight (reply 1)", replace(full, reply=1)),
        ("without addressee", replace(full, addressee=0)),
        ("addressee skew per row, not per word", replace(full, addressee_by_words=False)),
        ("without the lighter name", replace(full, name_weight=1)),
        ("without date field", replace(full, date=0)),
        ("without conversation-level", replace(full, conversation=0)),
        ("without diversity", replace(full, diversify=0)),
        (
            "the ranking of issue 22 (before this round)",
            replace(full, k1=0.9, b=0.4, ctx_len=0, reply=1, addressee_by_words=False),
        ),
    ]


def run_both(locomo: Path, lme_dir: Path, out: Path, args) -> None:
    """LoCoMo (mermaid archives) and LongMemEval (Claude Code stores): one table, and the ablation."""
    from click.testing import CliRunner

    from samctl.cli import cli

    runner, t0 = CliRunner(), time.monotonic()
    convs = [read_locomo(f) for f in sorted(locomo.glob("*.json"))]
    loc_data, plain_l, cli_l = [], np.zeros(len(KS)), np.zeros(len(KS))
    nl = sum(len(c["questions"]) for c in convs)
    for c in convs:
        root = out / "mermaid" / c["name"]
        where = write_mermaid(root, c)
        corpus, dias = read_back(root, where)
        loc_data.append((corpus, dias, c["questions"]))
        plain = PlainBM25([t for _, turns in c["sessions"] for _, t, _ in turns])
        plain_dias = [d for _, turns in c["sessions"] for _, _, d in turns]
        for q, ev, _ in c["questions"]:
            plain_l += recall([plain_dias[i] for i in bm25.top_k(plain.score(q), 25)], ev)
            if not args.no_cli:
                cli_l += recall(today(root, q, where, runner, cli) or [], ev)
    items = read_longmemeval(lme_dir)
    lme_data, plain_m, cli_m = [], np.zeros(4), np.zeros(4)
    for k, item in enumerate(items):
        corpus, ids = lme_corpus(item)
        lme_data.append((item, corpus, ids))
        plain = PlainBM25([t["content"] for _, _, turns in item["sessions"] for t in turns])
        plain_m += lme_measure(item, [ids[r] for r in bm25.top_k(plain.score(item["question"]), 50)])
        if not args.no_cli:
            root = out / "claude-code" / f"q{k:03d}"
            where = write_claude_code(root, item, f"q{k}")
            r = runner.invoke(
                cli,
                [
                    "--root",
                    str(root),
                    "search",
                    "--in",
                    "messages",
                    "-n",
                    "50",
                    "--format",
                    "jsonl",
                    "--",
                    item["question"],
                ],
                catch_exceptions=False,
            )
            if r.exit_code not in (0, 1):
                raise SystemExit(f"samctl search failed ({r.exit_code}): {r.output}")
            hits = [json.loads(x) for x in r.stdout.splitlines() if x.strip()]
            cli_m += lme_measure(item, [where.get((h["conversation_id"], h["position"]), (-1, -1)) for h in hits])
    nm = len(items)
    rank_l, rank_m = evaluate(loc_data, bm25.Params())[0], lme_evaluate(lme_data, bm25.Params())
    print(
        f"\n{len(convs)} LoCoMo conversations ({nl} questions, mermaid), {nm} LongMemEval questions "
        f"(Claude Code); {time.monotonic() - t0:.0f} s\n"
    )
    print("| benchmark | measure | plain BM25 | ranking, in-process | `samctl search` (CLI) | goal |")
    print("|---|---|---|---|---|---|")
    for label, names, vals in (
        ("LoCoMo", [f"R@{k}" for k in KS], (plain_l / nl, rank_l, cli_l / nl)),
        ("LongMemEval", ["turn R@1", "turn R@5", "turn R@10", "sessions found@5"], (plain_m / nm, rank_m, cli_m / nm)),
    ):
        goals = BOTH_GOALS[label]
        for j, name in enumerate(names):
            cli_v = "-" if args.no_cli else f"{vals[2][j]:.3f}"
            goal = goals[j] if j < len(goals) else None
            print(
                f"| {label} | {name} | {vals[0][j]:.3f} | {vals[1][j]:.3f} | {cli_v} | "
                f"{'-' if goal is None else f'>= {goal:.2f}'} |"
            )
    if not args.ablation:
        return
    print("\n| ranking (in-process) | LME R@1 | LME R@5 | LME R@10 | LME S@5 | LoCoMo R@1 | R@5 | R@10 | R@25 |")
    print("|---|---|---|---|---|---|---|---|---|")
    for label, p in both_ablation():
        m, lo = lme_evaluate(lme_data, p), evaluate(loc_data, p)[0]
        print(f"| {label} | " + " | ".join(f"{x:.3f}" for x in (*m, *lo)) + " |", flush=True)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, help="folder of LoCoMo conversation files (*.json)")
    ap.add_argument(
        "--both",
        nargs=2,
        type=Path,
        metavar=("LOCOMO", "LONGMEMEVAL"),
        help="both benchmarks' folders: one table (LoCoMo as mermaid, LongMemEval as Claude Code)",
    )
    ap.add_argument("--ablation", action="store_true", help="with --both: each feature removed, on both")
    ap.add_argument("--stores", default="sam,mermaid")
    ap.add_argument("--out", type=Path, help="where the archives go (default: a temporary folder, removed)")
    ap.add_argument("--no-cli", action="store_true", help="skip today's `samctl search` (the slowest part)")
    ap.add_argument("--no-loo", action="store_true", help="skip leave-one-conversation-out tuning")
    args = ap.parse_args(argv)
    if args.both:
        tmp = tempfile.TemporaryDirectory(prefix="bench-relevance-") if args.out is None else None
        out = Path(tmp.name) if tmp else args.out
        os.environ.setdefault("SAMCTL_CACHE_DIR", str(out / "cache"))
        try:
            run_both(*args.both, out, args)
        finally:
            if tmp:
                tmp.cleanup()
        return 0
    if args.data is None:
        ap.error("--data or --both is needed")
    files = sorted(args.data.glob("*.json"))
    if not files:
        ap.error(f"no *.json in {args.data}")
    convs = [read_locomo(f) for f in files]
    nq = sum(len(c["questions"]) for c in convs)
    tmp = tempfile.TemporaryDirectory(prefix="bench-relevance-") if args.out is None else None
    out = Path(tmp.name) if tmp else args.out
    os.environ.setdefault("SAMCTL_CACHE_DIR", str(out / "cache"))
    os.environ["SAMCTL_ASSUME_SAM_RUNNING"] = "0"
    print(f"{len(convs)} conversations, {nq} questions of categories 1-4; archives in {out}")
    try:
        for store in args.stores.split(","):
            run_store(store, convs, out, args)
    finally:
        if tmp:
            tmp.cleanup()
    return 0


def run_store(store: str, convs: list, out: Path, args) -> None:
    from click.testing import CliRunner

    from samctl.cli import cli

    t0 = time.monotonic()
    data, today_r, sam_r, plain_r = [], np.zeros(len(KS)), np.zeros(len(KS)), np.zeros(len(KS))
    refused = []
    runner = CliRunner()
    for c in convs:
        root = out / store / c["name"]
        if store == "sam":
            where, root = write_sam(root / "SAM", c), root / "SAM"
        else:
            where = write_mermaid(root, c)
        corpus, dias = read_back(root, where)
        data.append((corpus, dias, c["questions"]))
        plain = PlainBM25([t for _, turns in c["sessions"] for _, t, _ in turns])
        plain_dias = [d for _, turns in c["sessions"] for _, _, d in turns]
        for q, ev, _ in c["questions"]:
            s = plain.score(q)
            plain_r += recall([plain_dias[i] for i in bm25.top_k(s, 25)], ev)
            if not args.no_cli:
                got = today(root, q, where, runner, cli)
                if got is None:
                    refused.append(q)
                today_r += recall(got or [], ev)
                sam_r += recall(today(root, q, where, runner, cli, "--rank", "sam") or [], ev)
    n = sum(len(c["questions"]) for c in convs)
    print()
    print(header(f"{store}: {n} questions, R@K (archives built and read back in {time.monotonic() - t0:.0f} s)"))
    if not args.no_cli:
        print(line("samctl search (the CLI: default ranking, --in messages -n 25)", today_r / n))
        print(line("samctl search --rank sam (SAM's scoring, threshold 0.3)", sam_r / n))
        for q in refused:
            print(f"  refused by the query parser (counted as found nothing): {q!r}")
    print(line("plain BM25 (lowercase words, Okapi k1=1.2 b=0.75)", plain_r / n))
    full, per = evaluate(data, bm25.Params())
    print(line("new ranking (samctl.search.bm25, default Params)", full))
    print(line("  goal (issue 22)", [math.nan] + [GOAL[k] for k in KS[1:]]).replace("nan", "  -"))
    print(line("  DRAGON (LoCoMo paper, Table 3)", [math.nan] + [DRAGON[k] for k in KS[1:]]).replace("nan", "  -"))
    with np.errstate(divide="ignore", invalid="ignore"):
        print(line("  new / plain BM25", full / (plain_r / n)))
    for c, (tot, k) in zip(convs, per):
        print(line(f"  {c['name']} ({k} questions)", tot / k))
    print("ablation")
    for label, p in ablation():
        print(line("  " + label, evaluate(data, p)[0]))
    if args.no_loo:
        return
    print("leave-one-conversation-out (tuned on the other files, scored on this one)")
    pooled = np.zeros(len(KS))
    for i, c in enumerate(convs):
        p = tune([d for j, d in enumerate(data) if j != i])
        r, (tot, k) = evaluate([data[i]], p)[0], evaluate([data[i]], p)[1][0]
        pooled += tot
        chosen = " ".join(f"{f}={getattr(p, f):g}" for f in GRID)
        print(line(f"  {c['name']} held out", r) + f"   [{chosen}]", flush=True)
    print(line("  pooled held-out", pooled / n))


if __name__ == "__main__":
    sys.exit(main())
