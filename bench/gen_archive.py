#!/usr/bin/env python3
"""Synthetic conversation archives for samctl benchmarks.

Writes trees in the on-disk formats of the two programs samctl reads, straight from the format
pages (``docs/formats/mermaid.md`` and ``docs/formats/sam.md``).  It deliberately does not import
samctl: a generator that shared code with the thing it measures could hide a bug in both.

    python bench/gen_archive.py mermaid OUTDIR --conversations 100000
    python bench/gen_archive.py sam OUTDIR --conversations 1000 --memories-per-conversation 100
    python bench/gen_archive.py mermaid OUTDIR --conversations 0 --log-bytes 134217728

Data model and invariants (what a benchmark may rely on):

* **Deterministic.** The bytes depend only on the arguments and ``--seed``, never on ``--jobs``: every
  conversation ``i`` is built from its own RNG seeded with ``(kind, seed, i)``.
* **mermaid** (``OUTDIR/.mermaid/conversations/``, dirs 0700, files 0600):
  ``<id>.json`` is the pretty sorted-key snapshot (docs/formats/mermaid.md §2.2, §3, §11.1) and is byte-identical to
  ``json.dumps(doc, indent=2, ensure_ascii=False, sort_keys=True)``; ``<id>.meta`` is compact, in struct
  order, without a newline (docs/formats/mermaid.md §3.2, §11.2); ``<id>.jsonl`` is a valid 0.25.0 event log
  (docs/formats/mermaid.md §4) that starts with the backfill of the first save (``started, reset, input,
  state, tasks, state, tasks``), then
  ``message``/``action``/``input``/``state``/``tasks`` batches; seqs are gapless from 0, ``v`` is 1, keys are
  sorted, every line ends in ``\\n``, and folding the log gives exactly the snapshot.  Conversation ``i``
  lives in its own 15-minute window starting 2023-06-01T00:00 local (offset -04:00), so ids, creation
  times and every timestamp are distinct and increase with ``i``.  Timestamps have 9 fraction digits.
* **SAM** (``OUTDIR/SAM/conversations/``, default file modes like SAM itself): one
  ``<UUID>/conversation.json`` per conversation in SAM's encoder style (keys sorted case-insensitively,
  ``" : "``, ``\\/``, whole-second ``Z`` dates, integral doubles written as integers, docs/formats/sam.md §3, §15.1), a
  ``memory.db`` per memory scope with the exact schema and encodings (docs/formats/sam.md §7.2, §7.3),
  ``active-conversation.json``,
  and the (empty) legacy ``OUTDIR/SAM/memory.db`` SAM creates at start-up.  About 5% of conversations are
  pinned; about 2% use shared data, whose memories go to a shared-topic scope directory holding only
  ``memory.db``.  Embeddings are random 512-d unit vectors (4,096 bytes), about 2% are 256-d hash-fallback
  vectors (2,048 bytes, docs/formats/sam.md §7.5 with CRC-32 as the hash).
* Text is drawn from a fixed word list (budget, deadline, portland, ...) so searches have hits; a few
  rare words (zanzibar, quokka, xylophone) give selective searches.
"""

from __future__ import annotations

import argparse
import calendar
import json
import math
import multiprocessing
import os
import random
import sqlite3
import struct
import sys
import time
import uuid
import zlib

import orjson

# --------------------------------------------------------------------------------------------------
# Vocabulary and text

WORDS = """
the the the the a a a an and and and of of of to to to in in is is it it that that we we you you
i i this this for for on on with with be be are are not not can can should should will will would
could was was have has had do does did but but or or if if then so so as as at at by by from from
all any each more most some such no only own same than too very just also still even again here
there when where which what how why who about after before between into through during over under
up down out off once our your their its my his her them they he she me us let lets need needs
make makes made take takes took get gets got see sees saw know knows think thinks want wants use
uses used find finds found give gives tell tells ask asks work works seem feel try tries leave call
keep keeps start starts run runs move moves live believe hold bring happen write writes provide sit
stand lose pay meet include continue set learn change lead understand watch follow stop create speak
read allow add spend grow open walk win offer remember love consider appear buy wait serve die send
expect build stay fall cut reach kill remain suggest raise pass sell require report decide pull
budget budget budget deadline deadline deadline portland portland portland seattle denver chicago
boston austin oregon weekend weekend trip trip itinerary hotel hotels flight flights airport train
ticket tickets booking reservation restaurant coffee brewery museum park hiking trail beach downtown
neighborhood weather forecast rain sunny cloudy temperature miles radius distance drive parking
invoice invoices payment payments expense expenses receipt quarterly annual revenue forecast margin
client clients customer contract proposal meeting meetings agenda schedule calendar reminder
project projects milestone roadmap sprint backlog priority priorities estimate estimates scope
requirement requirements constraint constraints limit limits maximum minimum within approval
approved confirmed review reviews draft summary notes document documents spreadsheet presentation
report reports analysis metric metrics dashboard chart table column row dataset database query
queries index indexes cache caching latency throughput benchmark performance memory storage disk
file files folder directory path config configuration setting settings option options flag flags
parser parsers test tests testing fixture fixtures assertion error errors warning warnings bug bugs
fix fixes patch release version versions deploy deployment build builds pipeline server servers
client api endpoint request requests response responses timeout retry retries token tokens model
models prompt prompts context embedding embeddings vector vectors search searches result results
function functions module modules class method methods variable variables struct enum trait crate
package packages dependency dependencies import imports export exports compile compiler runtime
thread threads lock locks process processes signal signals socket sockets stream streams buffer
rust python swift javascript typescript golang sqlite postgres redis linux macos docker kubernetes
git branch branches commit commits merge rebase diff diffs pull push repository issue issues
schedule family dinner lunch breakfast groceries recipe kitchen garden birthday gift gifts party
vacation holiday holidays summer winter autumn spring morning evening tonight tomorrow yesterday
monday tuesday wednesday thursday friday saturday sunday january february march april june july
august september october november december week weeks month months year years hour hours minute
important critical urgent quick simple careful exact correct wrong better best worse good great
new old large small long short high low early late fast slow cheap expensive free available ready
first second third last next previous final main other different similar certain clear possible
plan plans option choice decision question answer idea ideas problem problems solution solutions
step steps list lists item items detail details example examples note reason reasons case cases
$500 $1200 $75 42 3 10 2026 15% 8080 v0.25.0 24°C
src/main.rs tests/parser.rs docs/README.md src/lib.rs config/settings.toml scripts/deploy.sh
café naïve résumé Zürich façade São Paulo München
"draft" (optional) e.g. i.e.
""".split()

# Rare words: low weight, for selective searches.
RARE_WORDS = ["zanzibar", "quokka", "xylophone", "marzipan", "obsidian"]

_CORPUS_CACHE: dict[int, str] = {}
_CORPUS_WORDS = 400_000


def corpus(seed: int) -> str:
    """A deterministic block of sentence-shaped text (about 2.5 MB) that messages are sliced from."""
    text = _CORPUS_CACHE.get(seed)
    if text is not None:
        return text
    rng = random.Random(f"corpus:{seed}")
    vocab = WORDS[:]
    rng.shuffle(vocab)
    weights = [1.0 / (rank + 12) for rank in range(len(vocab))]
    vocab += RARE_WORDS
    weights += [0.0004] * len(RARE_WORDS)
    toks = rng.choices(vocab, weights, k=_CORPUS_WORDS)
    out = []
    i = 0
    ends = ".....?!:"
    while i < len(toks):
        n = rng.randint(5, 18)
        sent = toks[i : i + n]
        i += n
        sent[0] = sent[0][:1].upper() + sent[0][1:]
        out.append(" ".join(sent) + ends[rng.randrange(len(ends))])
        out.append("\n\n" if rng.random() < 0.12 else " ")
    text = "".join(out)
    _CORPUS_CACHE[seed] = text
    return text


def _text(rng: random.Random, corp: str, lo: int, hi: int, median: float) -> str:
    """A slice of the corpus with between lo and hi characters, starting and ending on word boundaries."""
    length = int(rng.lognormvariate(math.log(median), 0.8))
    length = max(lo, min(hi, length))
    start = rng.randrange(0, len(corp) - hi - 100)
    start = corp.find(" ", start) + 1
    piece = corp[start : start + length]
    cut = piece.rfind(" ")
    if cut >= lo:
        piece = piece[:cut]
    piece = piece.strip()
    if len(piece) < lo:  # only when the slice ended in whitespace runs
        piece = corp[start : start + hi].strip()[: max(lo, len(piece))]
    return piece[:1].upper() + piece[1:]


# --------------------------------------------------------------------------------------------------
# Small helpers

_ORJ_PRETTY = orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS
_ORJ_LINE = orjson.OPT_SORT_KEYS
_OPEN_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_CLOEXEC", 0)


def _write_private(path: str, data: bytes) -> int:
    """Write a 0600 file without fsync (a benchmark tree, not user data)."""
    fd = os.open(path, _OPEN_FLAGS, 0o600)
    try:
        os.fchmod(fd, 0o600)
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
    finally:
        os.close(fd)
    return len(data)


def _write_plain(path: str, data: bytes) -> int:
    with open(path, "wb") as f:
        f.write(data)
    return len(data)


def _mkdir_private(path: str) -> None:
    os.makedirs(path, mode=0o700, exist_ok=True)
    os.chmod(path, 0o700)


def _uuid_upper(rng: random.Random) -> str:
    return str(uuid.UUID(int=rng.getrandbits(128), version=4)).upper()


def _human(n: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.1f} {unit}" if unit != "B" else f"{n} B"
        n /= 1024
    return str(n)


class _Progress:
    def __init__(self, label: str, total: int, enabled: bool):
        self.label, self.total, self.enabled = label, total, enabled
        self.t0 = time.monotonic()
        self.step = max(1, math.ceil(total * 0.05))
        self.next = self.step

    def update(self, done: int) -> None:
        if not self.enabled or done < self.next or done >= self.total:
            return
        while self.next <= done:
            self.next += self.step
        pct = 100.0 * done / self.total
        print(
            f"[gen {self.label}] {done}/{self.total} conversations ({pct:.0f}%) {time.monotonic() - self.t0:.1f} s",
            file=sys.stderr,
            flush=True,
        )

    def seconds(self) -> float:
        return time.monotonic() - self.t0


def _run_chunks(worker, chunks, jobs, init_args, progress: _Progress):
    """Run worker(chunk) over chunks (in-process or in a pool); yield each result as it finishes."""
    done = 0
    if jobs <= 1 or len(chunks) <= 1:
        _worker_init(*init_args)
        for chunk in chunks:
            res = worker(chunk)
            done += res["conversations"]
            progress.update(done)
            yield res
        return
    methods = multiprocessing.get_all_start_methods()
    ctx = multiprocessing.get_context("fork" if "fork" in methods else None)
    with ctx.Pool(jobs, initializer=_worker_init, initargs=init_args) as pool:
        for res in pool.imap_unordered(worker, chunks):
            done += res["conversations"]
            progress.update(done)
            yield res


_WORKER_CTX: dict = {}


def _worker_init(seed: int, params: dict) -> None:
    _WORKER_CTX["corpus"] = corpus(seed)
    _WORKER_CTX["seed"] = seed
    _WORKER_CTX.update(params)


def _chunks(n: int, jobs: int, size: int | None = None) -> list[range]:
    if size is None:
        size = max(1, min(500, n // max(1, jobs * 20)))
    return [range(a, min(n, a + size)) for a in range(0, n, size)]


def _default_jobs(n: int, per_job: int) -> int:
    if n < per_job:
        return 1
    return max(1, min(os.cpu_count() or 1, 8))


# --------------------------------------------------------------------------------------------------
# mermaid-cli

MERMAID_BASE_NS = calendar.timegm((2023, 6, 1, 0, 0, 0)) * 1_000_000_000  # local wall clock, -04:00
MERMAID_WINDOW_NS = 15 * 60 * 1_000_000_000
MERMAID_OFFSET = "-04:00"
NS = 1_000_000_000
MS = 1_000_000

MERMAID_MODELS = [
    "ollama/qwen3-coder:30b",
    "anthropic/claude-sonnet-4-5",
    "openai/gpt-5",
    "ollama/llama3.3:70b",
    "anthropic/claude-opus-4-1",
    "ollama/devstral:24b",
]
MERMAID_PROJECTS = [
    "/home/dev/parsekit",
    "/home/dev/budget-tracker",
    "/home/dev/portland-trip",
    "/home/dev/invoice-service",
    "/home/dev/samctl",
    "/home/dev/dotfiles",
    "/home/dev/deadline-bot",
    "/srv/app/backend",
    "/home/dev/notes",
    "/home/dev/weather-cli",
    "/home/dev/rust/quokka",
    "/home/dev/site",
]
MERMAID_BRANCHES = [
    "main",
    "main",
    "main",
    "main",
    "develop",
    "feature/budget-report",
    "fix/deadline-parsing",
    "release/0.4",
    None,
]
_ZERO_USAGE = {
    "prompt_tokens": 0,
    "completion_tokens": 0,
    "cached_input_tokens": 0,
    "cache_creation_input_tokens": 0,
    "reasoning_output_tokens": 0,
}


def _ts(ns: int) -> str:
    """RFC 3339, 9 fraction digits, -04:00 (chrono's output for a local time with ns % 1000 != 0)."""
    sec, frac = divmod(ns, NS)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(sec)) + f".{frac:09d}{MERMAID_OFFSET}"


def _nine(ns: int) -> int:
    """Make sure chrono would print all 9 fraction digits."""
    return ns if ns % 1000 else ns + 7


def mermaid_id(created_ns: int) -> str:
    sec, frac = divmod(created_ns, NS)
    return time.strftime("%Y%m%d_%H%M%S", time.gmtime(sec)) + f"_{frac // MS:03d}"


def _title_from(content: str) -> str:
    raw = content.encode("utf-8")
    if len(raw) <= 60:
        return content
    return raw[:60].decode("utf-8", "ignore") + "..."


def _tool_call(rng: random.Random, corp: str, project: str):
    """One tool call: (name, arguments, action_type, target, details, result, tool output)."""
    kind = rng.random()
    files = [
        "src/main.rs",
        "src/lib.rs",
        "tests/parser.rs",
        "src/budget.rs",
        "src/report/mod.rs",
        "README.md",
        "Cargo.toml",
        "src/deadline.rs",
        "docs/design.md",
        "scripts/deploy.sh",
    ]
    path = rng.choice(files)
    out = _text(rng, corp, 50, 2000, 350)
    if kind < 0.4:
        lines = out.count("\n") + 1 + rng.randint(5, 300)
        preview = out[: rng.randint(40, 160)]
        return (
            "read_file",
            {"path": path},
            "Read",
            path,
            {"Preview": {"line_count": lines, "text": preview}},
            {"Success": {"images": None, "output": f"{lines} lines"}},
            out,
        )
    if kind < 0.65:
        cmd = rng.choice(
            [
                "cargo test",
                "cargo build --release",
                "pytest -q",
                "git status",
                "ls -la src",
                "make check",
                "npm run lint",
                "cargo clippy",
            ]
        )
        if rng.random() < 0.15:
            return (
                "run_command",
                {"command": cmd},
                "Bash",
                cmd,
                "Simple",
                {"Error": {"error": f"exit status {rng.choice([1, 2, 101])}"}},
                out,
            )
        return (
            "run_command",
            {"command": cmd},
            "Bash",
            cmd,
            "Simple",
            {"Success": {"images": None, "output": out[: rng.randint(30, 200)]}},
            out,
        )
    if kind < 0.8:
        pattern = rng.choice(["budget", "deadline", "portland", "TODO", "fn parse", "invoice", "timeout", "cache"])
        n = rng.randint(0, 40)
        return (
            "grep",
            {"path": "src", "pattern": pattern},
            "Search",
            pattern,
            "Simple",
            {"Success": {"images": None, "output": f"{n} matches"}},
            out,
        )
    if kind < 0.93:
        old = _text(rng, corp, 50, 200, 80)
        new = _text(rng, corp, 50, 200, 80)
        ins, dels = rng.randint(1, 30), rng.randint(0, 20)
        diff = f"--- a/{path}\n+++ b/{path}\n@@ -1,{dels} +1,{ins} @@\n-{old}\n+{new}\n"
        return (
            "edit_file",
            {"new_string": new, "old_string": old, "path": path},
            "Edit",
            path,
            {"Diff": {"diff": diff, "summary": f"{ins} insertions(+), {dels} deletions(-)"}},
            {"Success": {"images": None, "output": f"Edited {path}"}},
            out,
        )
    query = _text(rng, corp, 50, 120, 60)
    return (
        "web_search",
        {"query": query},
        "WebSearch",
        query,
        {"Preview": {"line_count": out.count("\n") + 1, "text": out[:120]}},
        {"Success": {"images": None, "output": "5 results"}},
        out,
    )


class _MermaidSession:
    """Builds one conversation: the snapshot state and its event log, line by line."""

    def __init__(self, rng: random.Random, corp: str, created_ns: int, sink=None):
        self.rng, self.corp = rng, corp
        self.created_ns = created_ns
        self.id = mermaid_id(created_ns)
        self.created_at = _ts(created_ns)
        self.updated_at = self.created_at
        self.project_path = rng.choice(MERMAID_PROJECTS)
        self.model_name = rng.choice(MERMAID_MODELS)
        self.git_branch = rng.choice(MERMAID_BRANCHES)
        self.git_sha = f"{rng.getrandbits(28):07x}"
        self.safety_mode = rng.choice(["ask", "ask", "ask", "auto", "read_only"])
        self.cli_version = rng.choice(["0.25.0", "0.25.0", "0.25.0", "0.24.2"])
        sec = created_ns // NS
        self.title = "Session " + time.strftime("%Y-%m-%d %H:%M", time.gmtime(sec))
        self.messages: list[dict] = []
        self.keep = sink is None  # the big-log writer does not keep the message list
        self.last_message: dict | None = None
        self.message_count = 0
        self.input_history: list[str] = []
        self.cum = dict(_ZERO_USAGE)
        self.last_usage: dict | None = None
        self.context_chars = 6000
        self.tasks = {"next_id": 0, "tasks": []}
        self.seq = 0
        self.last_batch_ns = created_ns
        self.lines: list[bytes] = []
        self.sink = sink
        self.log_bytes = 0

    # --- log --------------------------------------------------------------------------------------
    def _batch(self, at_ns: int, events: list[dict]) -> None:
        ns = _nine(max(at_ns, self.last_batch_ns + 1000))
        self.last_batch_ns = ns
        ts = _ts(ns)
        for ev in events:
            line = orjson.dumps({"event": ev, "seq": self.seq, "ts": ts, "v": 1}, option=_ORJ_LINE) + b"\n"
            self.seq += 1
            self.log_bytes += len(line)
            self.lines.append(line)

    def _state_event(self) -> dict:
        ev = {
            "type": "state",
            "title": self.title,
            "model_name": self.model_name,
            "cumulative_token_usage": dict(self.cum),
        }
        for key, val in (
            ("safety_mode", self.safety_mode),
            ("last_token_usage", self.last_usage),
            ("git_branch", self.git_branch),
            ("git_sha", self.git_sha),
            ("cli_version", self.cli_version),
        ):
            if val is not None:
                ev[key] = dict(val) if isinstance(val, dict) else val
        return ev

    # --- conversation -----------------------------------------------------------------------------
    def _message(self, role: str, content: str, ns: int, **extra) -> dict:
        m = {
            "role": role,
            "content": content,
            "timestamp": _ts(ns),
            "kind": "normal",
            "metadata": None,
            "actions": [],
            "thinking": None,
            "images": None,
            "image_numbers": None,
            "tool_calls": None,
            "tool_call_id": None,
            "tool_name": None,
            "provider_continuation": None,
        }
        m.update(extra)
        return m

    def _add(self, m: dict) -> None:
        if self.keep:
            self.messages.append(m)
        self.last_message = m
        self.message_count += 1
        self.updated_at = m["timestamp"]
        if m["role"] == "User" and self.title.startswith("Session "):
            self.title = _title_from(m["content"])

    def _input(self, text: str) -> bool:
        if not text.strip() or (self.input_history and self.input_history[-1] == text):
            return False
        self.input_history.append(text)
        if len(self.input_history) > 100:
            del self.input_history[0]
        return True

    def _usage(self, m: dict) -> None:
        completion = len(m["content"]) // 4 + self.rng.randint(5, 60)
        cached = self.context_chars // 8 if self.rng.random() < 0.5 else 0
        reasoning = len(m["thinking"]) // 4 if m["thinking"] else 0
        last = {
            "prompt_tokens": self.context_chars // 4,
            "completion_tokens": completion,
            "cached_input_tokens": cached,
            "cache_creation_input_tokens": 0,
            "reasoning_output_tokens": reasoning,
        }
        for k, v in last.items():
            self.cum[k] += v
        self.last_usage = last
        self.context_chars += len(m["content"])

    def user(self, ns: int, content: str | None = None) -> None:
        rng = self.rng
        if content is None:
            content = _text(rng, self.corp, 50, 2000, 180)
        m = self._message("User", content, ns)
        first = self.message_count == 0
        self._add(m)
        recorded = self._input(content)
        self.context_chars += len(content)
        batch_ns = ns + rng.randint(2, 30) * MS + rng.randint(1, 999_999)
        if first:
            # Backfill on first touch (docs/formats/mermaid.md §4.3), then the batch's own idempotent state/tasks.
            started = {
                "type": "started",
                "session_id": self.id,
                "project_path": self.project_path,
                "model_id": self.model_name,
                "created_at": self.created_at,
            }
            events = [started, {"type": "reset", "at": self.updated_at, "messages": [m]}]
            events += [{"type": "input", "text": t} for t in self.input_history]
            state, tasks = self._state_event(), {"type": "tasks", "store": self.tasks}
            events += [state, tasks, state, tasks]
            self._batch(batch_ns, events)
        else:
            events = [{"type": "input", "text": content}] if recorded else []
            events.append({"type": "message", "message": m})
            self._batch(batch_ns, events)

    def assistant(self, ns: int, content: str | None = None, tool_calls=None) -> dict:
        rng = self.rng
        if content is None:
            content = _text(rng, self.corp, 50, 2000, 600)
        thinking = _text(rng, self.corp, 50, 800, 200) if rng.random() < 0.2 else None
        m = self._message("Assistant", content, ns, thinking=thinking, tool_calls=tool_calls)
        self._add(m)
        self._usage(m)
        events = [{"type": "message", "message": m}, self._state_event()]
        if rng.random() < 0.06:
            events.append({"type": "tasks", "store": self._new_tasks(ns)})
        self._batch(ns + rng.randint(1, 9) * MS + rng.randint(1, 999_999), events)
        return m

    def _new_tasks(self, ns: int) -> dict:
        """A new checklist: 1-3 completed items added, at most 12 kept (next_id = last id used)."""
        rng = self.rng
        items = [dict(t) for t in self.tasks["tasks"]]
        next_id = self.tasks["next_id"]
        for _ in range(rng.randint(1, 3)):
            next_id += 1
            subject = _text(rng, self.corp, 20, 70, 40)
            start = ns // NS - rng.randint(30, 600)
            items.append(
                {
                    "id": next_id,
                    "subject": subject,
                    "active_form": "Working on " + subject,
                    "description": _text(rng, self.corp, 50, 300, 100),
                    "status": "completed",
                    "origin": rng.choice(["model", "user"]),
                    "started_at": start,
                    "completed_at": start + rng.randint(5, 300),
                    "tokens_at_start": self.cum["prompt_tokens"],
                    "tokens_spent": rng.randint(100, 9000),
                    "evidence": [],
                }
            )
        self.tasks = {"next_id": next_id, "tasks": items[-12:]}
        return self.tasks

    def tool_turn(self, ns_list: list[int], calls: int) -> None:
        """Assistant with tool calls, then `calls` tool results, then a final assistant answer.

        ns_list holds 2 + calls timestamps: the assistant, each tool result, the final answer.
        """
        rng = self.rng
        specs = [_tool_call(rng, self.corp, self.project_path) for _ in range(calls)]
        tcalls = [
            {"id": f"call_{rng.getrandbits(48):012x}", "function": {"name": s[0], "arguments": s[1]}} for s in specs
        ]
        intro = _text(rng, self.corp, 50, 300, 90)
        a = self.assistant(ns_list[0], intro, tcalls)
        events = []
        tools = []
        for (name, _args, atype, target, details, result, out), tc, tns in zip(specs, tcalls, ns_list[1 : 1 + calls]):
            dur = round(rng.uniform(0.001, 6.0), 3)
            action = {
                "action_type": atype,
                "target": target,
                "result": result,
                "details": details,
                "duration_seconds": dur,
                "metadata": None,
            }
            a["actions"].append(action)  # the log line of `a` was serialized already
            events.append({"type": "action", "action": action})
            tools.append(self._message("Tool", out, tns, tool_call_id=tc["id"], tool_name=name))
        for t in tools:
            self._add(t)
            self.context_chars += len(t["content"])
            events.append({"type": "message", "message": t})
        self._batch(ns_list[calls] + rng.randint(1, 20) * MS + rng.randint(1, 999_999), events)
        self.assistant(ns_list[-1])

    def snapshot(self) -> dict:
        return {
            "id": self.id,
            "title": self.title,
            "messages": self.messages,
            "model_name": self.model_name,
            "project_path": self.project_path,
            "created_at": self.created_at,
            "updated_at": self.updated_at,
            "compactions": [],
            "input_history": self.input_history,
            "git_branch": self.git_branch,
            "safety_mode": self.safety_mode,
            "plan": None,
            "advertised_context": None,
            "last_token_usage": self.last_usage,
            "cumulative_token_usage": self.cum,
            "context_usage": None,
            "forked_from": None,
            "parent_session": None,
            "cli_version": self.cli_version,
            "git_sha": self.git_sha,
            "tasks": self.tasks,
        }

    def meta(self) -> dict:
        return {
            "id": self.id,
            "title": self.title,
            "updated_at": self.updated_at,
            "git_branch": self.git_branch,
            "message_count": self.message_count,
            "forked_from": None,
        }


def _mermaid_plan(rng: random.Random, messages_mean: float) -> list[int]:
    """Turn plan: 0 = plain (User, Assistant); k > 0 = tool turn with k calls (3 + k messages)."""
    target = max(2, round(rng.gammavariate(2.0, max(0.5, messages_mean - 1) / 2.0)))
    plan, count = [], 0
    while count < target:
        if plan and rng.random() < 0.3:
            k = 1 if rng.random() < 0.8 else 2
            plan.append(k)
            count += 3 + k
        else:
            plan.append(0)
            count += 2
    return plan


def _mermaid_gaps(rng: random.Random, plan: list[int], budget_ns: int | None) -> list[int]:
    """Gaps (ns) before each message in plan order, scaled to fit the conversation's window."""
    gaps = []
    first = True
    for k in plan:
        gaps.append(int(rng.uniform(3 if first else 5, 40 if first else 60) * NS))  # user
        first = False
        if k == 0:
            gaps.append(int(rng.uniform(2, 30) * NS))
        else:
            gaps.append(int(rng.uniform(2, 20) * NS))
            gaps += [int(rng.uniform(0.02, 4) * NS) for _ in range(k)]
            gaps.append(int(rng.uniform(2, 20) * NS))
    if budget_ns is not None:
        total = sum(gaps)
        if total > budget_ns:
            scale = budget_ns / total
            gaps = [max(1_000_000, int(g * scale)) for g in gaps]
    return [g + rng.randint(1, 999) for g in gaps]  # ns noise: distinct, 9 digits


def _play(session: _MermaidSession, plan: list[int], gaps: list[int], start_ns: int) -> None:
    ns = start_ns
    it = iter(gaps)
    for k in plan:
        ns = _nine(ns + next(it))
        session.user(ns)
        if k == 0:
            ns = _nine(ns + next(it))
            session.assistant(ns)
        else:
            stamps = []
            for _ in range(2 + k):
                ns = _nine(ns + next(it))
                stamps.append(ns)
            session.tool_turn(stamps, k)


def mermaid_conversation(i: int, seed: int = 0, messages_mean: float = 12, corp: str | None = None) -> dict:
    """Conversation i of an archive: {id, json, meta, jsonl (bytes), messages (count)}."""
    corp = corp if corp is not None else corpus(seed)
    rng = random.Random(f"mermaid:{seed}:{i}")
    window = MERMAID_BASE_NS + i * MERMAID_WINDOW_NS
    created = _nine(window + rng.randrange(0, 60 * NS))
    s = _MermaidSession(rng, corp, created)
    plan = _mermaid_plan(rng, messages_mean)
    budget = window + MERMAID_WINDOW_NS - 30 * NS - created
    _play(s, plan, _mermaid_gaps(rng, plan, budget), created)
    return {
        "id": s.id,
        "json": orjson.dumps(s.snapshot(), option=_ORJ_PRETTY),
        "meta": orjson.dumps(s.meta()),
        "jsonl": b"".join(s.lines),
        "messages": s.message_count,
    }


def _mermaid_worker(chunk: range) -> dict:
    ctx = _WORKER_CTX
    d = ctx["dir"]
    files = nbytes = msgs = 0
    for i in chunk:
        c = mermaid_conversation(i, ctx["seed"], ctx["messages_mean"], ctx["corpus"])
        base = os.path.join(d, c["id"])
        nbytes += _write_private(base + ".json", c["json"])
        nbytes += _write_private(base + ".meta", c["meta"])
        nbytes += _write_private(base + ".jsonl", c["jsonl"])
        files += 3
        msgs += c["messages"]
    return {"conversations": len(chunk), "files": files, "bytes": nbytes, "messages": msgs}


def mermaid_dir(outdir) -> str:
    return os.path.join(os.fspath(outdir), ".mermaid", "conversations")


def make_mermaid(
    outdir,
    n: int,
    *,
    messages_mean: float = 12,
    seed: int = 0,
    log_bytes: int = 0,
    jobs: int | None = None,
    progress: bool = True,
) -> dict:
    """Write n mermaid conversations (and, if log_bytes, one extra log-only conversation).

    Returns totals: conversations, messages, files, bytes, seconds, dir (and log_path).
    """
    outdir = os.fspath(outdir)
    os.makedirs(outdir, exist_ok=True)
    _mkdir_private(os.path.join(outdir, ".mermaid"))
    d = mermaid_dir(outdir)
    _mkdir_private(d)
    jobs = jobs or _default_jobs(n, 200)
    prog = _Progress("mermaid", n, progress)
    totals = {"conversations": 0, "messages": 0, "files": 0, "bytes": 0}
    params = {"dir": d, "messages_mean": messages_mean}
    for res in _run_chunks(_mermaid_worker, _chunks(n, jobs), jobs, (seed, params), prog):
        for k in totals:
            totals[k] += res[k]
    if log_bytes:
        rng = random.Random(f"mermaid-biglog:{seed}")
        created = _nine(MERMAID_BASE_NS + n * MERMAID_WINDOW_NS + rng.randrange(0, 60 * NS))
        path = os.path.join(d, mermaid_id(created) + ".jsonl")
        info = make_mermaid_log(path, log_bytes, seed)
        totals["files"] += 1
        totals["bytes"] += info["bytes"]
        totals["log_path"] = path
        totals["log_messages"] = info["messages"]
        if progress:
            print(
                f"[gen mermaid] log-only conversation {info['id']}: {info['bytes']} bytes, "
                f"{info['lines']} lines, {info['messages']} messages",
                file=sys.stderr,
                flush=True,
            )
    totals["seconds"] = round(prog.seconds(), 3)
    totals["dir"] = d
    if progress:
        print(
            f"[gen mermaid] done: {totals['conversations']} conversations, "
            f"{totals['messages']} messages, {totals['files']} files, "
            f"{totals['bytes']} bytes ({_human(totals['bytes'])}) in {totals['seconds']:.1f} s",
            file=sys.stderr,
            flush=True,
        )
    return totals


def _is_mermaid_id(stem: str) -> bool:
    return (
        len(stem) == 19
        and stem.isascii()
        and stem[8] == "_"
        and stem[15] == "_"
        and (stem[:8] + stem[9:15] + stem[16:]).isdigit()
    )


def make_mermaid_log(path, target_bytes: int, seed: int = 0) -> dict:
    """Write one valid event log of at most target_bytes (but at least its first batch).

    The session id is the file's stem when that is a valid id (and a real date), else one derived
    from the seed.  The log starts with ``started``, seqs are gapless from 0 and the last line ends
    in a newline; only whole turns are written, so a target such as mermaid's 128 MiB cap is never
    exceeded.  Returns {path, id, bytes, lines, messages}.
    """
    path = os.fspath(path)
    corp = corpus(seed)
    rng = random.Random(f"mermaid-log:{seed}")
    created = _nine(MERMAID_BASE_NS + rng.randrange(0, 60 * NS))
    stem = os.path.basename(path)
    stem = stem[:-6] if stem.endswith(".jsonl") else stem
    if _is_mermaid_id(stem):
        try:
            tm = time.strptime(stem[:15], "%Y%m%d_%H%M%S")
            created = _nine(calendar.timegm(tm) * NS + int(stem[16:]) * MS + rng.randrange(MS))
        except ValueError:
            pass
    s = _MermaidSession(rng, corp, created, sink=True)
    written = lines = messages = 0
    parent = os.path.dirname(path)
    if parent:
        os.makedirs(parent, exist_ok=True)
    fd = os.open(path, _OPEN_FLAGS, 0o600)
    try:
        os.fchmod(fd, 0o600)
        while True:
            plan = [0] if rng.random() < 0.7 else [1 if rng.random() < 0.8 else 2]
            _play(s, plan, _mermaid_gaps(rng, plan, None), s.last_batch_ns)
            chunk = b"".join(s.lines)
            s.lines.clear()
            if lines and written + len(chunk) > target_bytes:
                break  # this turn is dropped whole; its seqs never reach the disk
            view = memoryview(chunk)
            while view:
                view = view[os.write(fd, view) :]
            written += len(chunk)
            lines = s.seq
            messages = s.message_count
    finally:
        os.close(fd)
    return {"path": path, "id": s.id, "bytes": written, "lines": lines, "messages": messages}


# --------------------------------------------------------------------------------------------------
# SAM

SAM_BASE_S = calendar.timegm((2025, 1, 1, 0, 0, 0))
SAM_WINDOW_S = 30 * 60
SAM_MODELS = [
    ("github_copilot", "gpt-4.1"),
    ("github_copilot", "claude-sonnet-4"),
    ("openai", "gpt-4o"),
    ("anthropic", "claude-3-7-sonnet"),
    ("local-mlx", "Qwen3-8B"),
]
SAM_TOOLS = [
    ("file_operations", "doc.text", "read", "path"),
    ("web_operations", "globe", "search", "query"),
    ("memory_operations", "brain", "search_memory", "query"),
    ("terminal_operations", "terminal", "execute", "command"),
    ("weather_operations", "cloud.sun", "forecast", "location"),
]
SAM_DEFAULT_PROMPT = "00000000-0000-0000-0000-000000000001"
SAM_SHARED_FRACTION = 0.02
SAM_PINNED_FRACTION = 0.05

SAM_SCHEMA = [
    'CREATE TABLE IF NOT EXISTS "conversation_memories" ("id" TEXT PRIMARY KEY NOT NULL, '
    '"conversation_id" TEXT NOT NULL, "content" TEXT NOT NULL, "content_type" TEXT NOT NULL, '
    '"embedding" BLOB, "importance" REAL NOT NULL, "created_at" TEXT NOT NULL, '
    '"access_count" INTEGER NOT NULL DEFAULT (0), "last_accessed" TEXT NOT NULL, "tags" TEXT)',
    "CREATE INDEX IF NOT EXISTS idx_conversation_id ON conversation_memories(conversation_id)",
    "CREATE INDEX IF NOT EXISTS idx_created_at ON conversation_memories(created_at)",
    "CREATE INDEX IF NOT EXISTS idx_importance ON conversation_memories(importance)",
]
SAM_INSERT = (
    'INSERT INTO "conversation_memories" ("id", "conversation_id", "content", '
    '"content_type", "embedding", "importance", "created_at", "access_count", '
    '"last_accessed", "tags") VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)'
)

_TITLE_WORDS = sorted({w for w in WORDS if w.isalpha() and w.isascii() and len(w) > 3})
_ACKS = [
    "thanks!",
    "Thanks.",
    "ok",
    "okay",
    "Got it",
    "perfect",
    "Yes, go ahead",
    "Sounds good!",
    "thanks :)",
    "Yes, proceed with the budget option.",
    "Please focus on the deadline.",
]


def sam_importance(text: str, is_user: bool) -> float:
    """Importance of a new message, docs/formats/sam.md §4.5.4."""
    lower = text.lower()
    imp = 0.7 if is_user else 0.5
    if not is_user and ("?" in text or "what" in lower or "which" in lower or "how" in lower):
        imp = max(imp, 0.85)
    if any(
        w in lower
        for w in (
            "must",
            "require",
            "need to",
            "budget",
            "limit",
            "maximum",
            "minimum",
            "within",
            "miles",
            "radius",
            "constraint",
        )
    ):
        imp = max(imp, 0.9)
    if len(text) < 200 and any(
        w in lower
        for w in ("yes", "proceed", "approved", "confirmed", "agree", "correct", "exactly", "that's right", "go ahead")
    ):
        imp = max(imp, 0.85)
    if any(w in lower for w in ("focus on", "prioritize", "most important", "critical", "priority", "key requirement")):
        imp = max(imp, 0.85)
    if len(text) < 50:
        base = lower[:-1] if lower[-1:] in ("!", ".") else lower
        if base in ("thanks", "thank you", "ok", "okay", "got it", "sounds good", "perfect", "great"):
            imp = 0.3
    if is_user and len(text) > 300:
        imp = min(imp + 0.1, 1.0)
    return imp


def _sam_date(sec: int) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(sec))


def _sam_db_date(ms: int) -> str:
    sec, frac = divmod(ms, 1000)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(sec)) + f".{frac:03d}"


def _sam_norm(obj):
    """Keys ordered case-insensitively at every depth; integral doubles written as integers."""
    if isinstance(obj, dict):
        return {k: _sam_norm(obj[k]) for k in sorted(obj, key=str.lower)}
    if isinstance(obj, list):
        return [_sam_norm(x) for x in obj]
    if isinstance(obj, float) and obj.is_integer():
        return int(obj)
    return obj


def sam_json(obj) -> bytes:
    """Foundation JSONEncoder [.prettyPrinted, .sortedKeys] style (docs/formats/sam.md §3)."""
    text = json.dumps(_sam_norm(obj), indent=2, separators=(",", " : "), ensure_ascii=False, allow_nan=False)
    return text.replace("/", "\\/").encode("utf-8")


def sam_header(seed: int, i: int) -> dict:
    """The cheap per-conversation facts the main process needs: id, times, pin and sharing."""
    rng = random.Random(f"sam-head:{seed}:{i}")
    created = SAM_BASE_S + i * SAM_WINDOW_S + rng.randrange(0, 120)
    shared = rng.random() < SAM_SHARED_FRACTION or i == 1
    pinned = rng.random() < SAM_PINNED_FRACTION or i == 2
    return {
        "id": _uuid_upper(rng),
        "created": created,
        "shared": shared,
        "pinned": pinned,
        "topic": rng.randrange(1 << 30),
    }


def _sam_topics(seed: int, n: int) -> list[dict]:
    rng = random.Random(f"sam-topics:{seed}")
    count = max(1, min(5, math.ceil(n * SAM_SHARED_FRACTION / 3)))
    names = ["Portland Trip Planning", "Quarterly Budget", "Deadline Tracker", "Home/Garden", "Parser Rewrite"]
    return [{"id": _uuid_upper(rng), "name": names[t]} for t in range(count)]


def _sam_message(
    mid: str,
    mtype: str,
    content: str,
    ts: int,
    lm: int,
    *,
    user=False,
    pinned=False,
    importance=None,
    tool=False,
    **extra,
) -> dict:
    m = {
        "id": mid,
        "type": mtype,
        "content": content,
        "timestamp": _sam_date(ts),
        "lastModified": _sam_date(lm),
        "isFromUser": user,
        "isPinned": pinned,
        "isStreaming": False,
        "isSystemGenerated": False,
        "isToolMessage": tool,
        "showReasoning": False,
        "importance": importance if importance is not None else sam_importance(content, user),
    }
    m.update(extra)
    return m


def sam_conversation(
    i: int, seed: int = 0, messages_mean: float = 12, corp: str | None = None, topics: list[dict] | None = None
) -> tuple[dict, dict]:
    """Conversation i: (the ConversationData dict, its header incl. memory scope id)."""
    corp = corp if corp is not None else corpus(seed)
    head = sam_header(seed, i)
    rng = random.Random(f"sam:{seed}:{i}")
    provider, model = rng.choice(SAM_MODELS)
    if rng.random() < 0.05:
        title = "New Conversation"
    else:
        title = " ".join(rng.choice(_TITLE_WORDS) for _ in range(rng.randint(2, 5))).capitalize()
    created = head["created"]
    t = created + rng.randint(2, 30)
    messages = []
    perf = []
    users = 0
    target = max(2, round(rng.gammavariate(2.0, max(0.5, messages_mean - 1) / 2.0)))
    first_reply = None
    while len(messages) < target:
        # user turn
        if users and rng.random() < 0.12:
            content = rng.choice(_ACKS)
        else:
            content = _text(rng, corp, 50, 2000, 180)
        users += 1
        messages.append(_sam_message(_uuid_upper(rng), "user", content, t, t, user=True, pinned=users <= 10))
        t += rng.randint(1, 4)
        tool_turn = rng.random() < 0.3
        if tool_turn:
            calls = []
            for _ in range(1 if rng.random() < 0.8 else 2):
                name, icon, op, argk = rng.choice(SAM_TOOLS)
                arg = (
                    _text(rng, corp, 10, 60, 25)
                    if argk != "path"
                    else f"/Users/alex/SAM/{title}/{rng.choice(['notes.md', 'budget.csv', 'plan.txt'])}"
                )
                calls.append((f"call_{rng.getrandbits(64):016x}", name, icon, op, argk, arg))
            intro = _text(rng, corp, 50, 300, 90)
            lm = t + rng.randint(1, 3)
            messages.append(
                _sam_message(
                    _uuid_upper(rng),
                    "assistant",
                    intro,
                    t,
                    lm,
                    toolCalls=[
                        {
                            "id": cid,
                            "type": "function",
                            "function": {
                                "name": name,
                                "arguments": json.dumps(
                                    {argk: arg, "operation": op}, separators=(",", ":"), ensure_ascii=False
                                ),
                            },
                        }
                        for cid, name, icon, op, argk, arg in calls
                    ],
                )
            )
            t = lm
            for cid, name, icon, op, argk, arg in calls:
                dur = round(rng.uniform(0.05, 8.0), 2)
                status = "success" if rng.random() < 0.95 else "error"
                lm = t + math.ceil(dur)
                messages.append(
                    _sam_message(
                        _uuid_upper(rng),
                        "toolExecution",
                        _text(rng, corp, 50, 2000, 400),
                        t,
                        lm,
                        importance=0.5,
                        tool=True,
                        toolCallId=cid,
                        toolName=name,
                        toolStatus=status,
                        toolDuration=dur,
                        toolIcon=icon,
                        toolDetails=[f"Operation: {op}", f"{argk.capitalize()}: {arg}"],
                    )
                )
                t = lm
        if rng.random() < 0.2:
            t += rng.randint(0, 2)
            messages.append(
                _sam_message(
                    _uuid_upper(rng),
                    "thinking",
                    "",
                    t,
                    t,
                    importance=0.5,
                    tool=True,
                    reasoningContent=_text(rng, corp, 50, 800, 200),
                    toolIcon="brain.head.profile",
                )
            )
        t += rng.randint(1, 3)
        answer = _text(rng, corp, 50, 2000, 600)
        ptime = round(rng.uniform(0.5, 30.0), 2)
        lm = t + math.ceil(ptime)
        extra = {}
        if rng.random() < 0.7:
            ttft = round(rng.uniform(0.1, 3.0), 2)
            tokens = len(answer) // 4 + 1
            extra = {
                "performanceMetrics": {
                    "tokenCount": tokens,
                    "timeToFirstToken": ttft,
                    "tokensPerSecond": round(tokens / ptime, 1),
                    "processingTime": ptime,
                },
                "processingTime": ptime,
            }
            perf.append(
                {
                    "id": _uuid_upper(rng),
                    "timestamp": _sam_date(lm),
                    "model": model,
                    "provider": provider,
                    "requestTokens": rng.randint(500, 30000),
                    "responseTokens": tokens,
                    "timeToFirstToken": ttft,
                    "totalLatency": round(ptime + rng.uniform(0.05, 1.0), 2),
                    "success": True,
                }
            )
        messages.append(_sam_message(_uuid_upper(rng), "assistant", answer, t, lm, **extra))
        if first_reply is None:
            first_reply = lm
        t = lm + rng.randint(5, 90)
    settings = {
        "selectedModel": f"{provider}/{model}",
        "temperature": 0.7,
        "topP": 1.0,
        "contextWindowSize": rng.choice([8192, 32768, 128000, 200000]),
        "selectedSystemPromptId": SAM_DEFAULT_PROMPT,
        "workspacePromptIds": [],
        "selectedPersonalityId": SAM_DEFAULT_PROMPT,
        "enableReasoning": True,
        "enableTools": True,
        "thinkingEffort": rng.choice(["high", "high", "medium", "low"]),
        "scrollLockEnabled": True,
        "useSharedData": False,
        "draftMessage": "",
        "showingMemoryPanel": False,
        "showingWorkingDirectoryPanel": False,
        "showAdvancedParameters": False,
        "showingPerformanceMetrics": False,
        "telemetry": {
            "archiveRecallCount": 0,
            "compressionEventCount": 0,
            "contextOverflowCount": rng.choice([0, 0, 0, 1]),
            "lastUpdated": _sam_date(first_reply),
            "memoryRetrievalCount": rng.randint(0, users),
        },
    }
    if rng.random() < 0.15:
        settings["maxTokens"] = rng.choice([4096, 8192, 16384])
    scope = head["id"]
    workdir = f"/Users/alex/SAM/{title.replace('/', '-')}"
    if head["shared"] and topics:
        topic = topics[head["topic"] % len(topics)]
        settings.update(useSharedData=True, sharedTopicId=topic["id"], sharedTopicName=topic["name"])
        scope = topic["id"]
    conv = {
        "id": head["id"],
        "title": title,
        "created": _sam_date(created),
        "updated": _sam_date(first_reply + rng.randint(1, 5)),
        "messages": messages,
        "settings": settings,
        "sessionId": head["id"],
        "isPinned": head["pinned"],
        "workingDirectory": workdir,
        "enabledCustomInstructionIds": [],
        "isFromAPI": False,
        "performanceMetrics": perf,
    }
    if rng.random() < 0.1:  # filed in one of four folders (folders.json lives outside the tree)
        conv["folderId"] = _uuid_upper(random.Random(f"sam-folder:{seed}:{rng.randrange(4)}"))
    head = dict(head, scope=scope, t_end=t)
    return conv, head


def _hash_embedding(text: str) -> bytes:
    """docs/formats/sam.md §7.5 fallback vector (256-d), with CRC-32 standing in for Swift's seeded hash."""
    clean = text.strip()
    if not clean:
        return b""
    low = clean.lower()
    v = [0.0] * 256
    for w in set(low.split()):
        i = zlib.crc32(w.encode()) % 64
        v[i] = min(v[i] + 2.0, 10.0)
        if len(w) >= 4:
            i = 64 + zlib.crc32(w[:4].encode()) % 64
            v[i] = min(v[i] + 1.5, 8.0)
    for k in range(min(len(low) - 2, 100)):
        i = 128 + zlib.crc32(low[k : k + 3].encode()) % 128
        v[i] = min(v[i] + 0.5, 5.0)
    norm = math.sqrt(sum(x * x for x in v))
    if norm > 0:
        v = [x / norm for x in v]
    return struct.pack("<256d", *v)


_CONTENT_TYPES = (
    ["user_input"] * 30
    + ["assistant_response"] * 30
    + ["context_info"] * 15
    + ["document"] * 10
    + ["tool_result"] * 10
    + ["message"] * 5
)
_DOC_TAGS = [
    "rag,document,markdown,source,chunk_size",
    "rag,document,pdf,source,page_number,type",
    "rag,document,web,source,chunk_size",
    "rag,document,text,source,single_page",
]
_MCP_TAGS = ["travel,portland", "budget", "deadline,work", "preference", "weather,portland", "project,milestone"]


def sam_memories(scope_id: str, seed: int, i: int, k: int, dims: int, start_s: int, corp: str) -> list[tuple]:
    """k memory rows for conversation i, stored under scope_id (docs/formats/sam.md §7.3 encodings)."""
    import numpy as np

    rng = random.Random(f"sam-mem:{seed}:{i}")
    g = np.random.default_rng([seed & 0xFFFFFFFF, i, 512])
    vecs = g.standard_normal((k, dims))
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    vecs = vecs.astype("<f8", copy=False)
    rows = []
    ms = start_s * 1000 + rng.randrange(1000)
    for j in range(k):
        ms += rng.randint(200, 20_000)
        ctype = rng.choice(_CONTENT_TYPES)
        content = _text(rng, corp, 30, 1200, 160)
        if ctype == "user_input":
            importance, tags = rng.choice([0.8, 0.5]), None
        elif ctype == "assistant_response":
            importance, tags = 0.6, None
        elif ctype == "document":
            importance, tags = round(rng.uniform(0.5, 1.0), 2), rng.choice(_DOC_TAGS)
        else:
            importance = 0.5
            tags = rng.choice(_MCP_TAGS) if rng.random() < 0.4 else None
        if rng.random() < 0.02:
            blob = _hash_embedding(content)
        else:
            blob = vecs[j].tobytes()
        created = _sam_db_date(ms)
        if rng.random() < 0.25:
            count = rng.randint(1, 6)
            last = _sam_db_date(ms + rng.randint(1000, 3_600_000))
        else:
            count, last = 0, created
        rows.append((_uuid_upper(rng), scope_id, content, ctype, blob, importance, created, count, last, tags))
    return rows


def _write_memory_db(path: str, batches) -> int:
    """One DB: schema, then every batch in one transaction; no fsync (a benchmark tree)."""
    for suffix in ("", "-journal"):
        try:
            os.unlink(path + suffix)
        except FileNotFoundError:
            pass
    con = sqlite3.connect(path, isolation_level=None)
    try:
        con.execute("PRAGMA synchronous=OFF")
        con.execute("PRAGMA journal_mode=MEMORY")
        for stmt in SAM_SCHEMA:
            con.execute(stmt)
        con.execute("BEGIN")
        for rows in batches:
            con.executemany(SAM_INSERT, rows)
        con.execute("COMMIT")
    finally:
        con.close()
    return os.path.getsize(path)


def sam_dir(outdir) -> str:
    return os.path.join(os.fspath(outdir), "SAM", "conversations")


def _sam_worker(chunk: range) -> dict:
    ctx = _WORKER_CTX
    conv_dir = ctx["dir"]
    files = nbytes = msgs = mems = 0
    for i in chunk:
        conv, head = sam_conversation(i, ctx["seed"], ctx["messages_mean"], ctx["corpus"], ctx["topics"])
        d = os.path.join(conv_dir, conv["id"])
        os.makedirs(d, exist_ok=True)
        nbytes += _write_plain(os.path.join(d, "conversation.json"), sam_json(conv))
        files += 1
        msgs += len(conv["messages"])
        k = ctx["memories"]
        if k and head["scope"] == conv["id"]:
            rows = sam_memories(conv["id"], ctx["seed"], i, k, ctx["dims"], head["created"], ctx["corpus"])
            nbytes += _write_memory_db(os.path.join(d, "memory.db"), [rows])
            files += 1
            mems += k
    return {"conversations": len(chunk), "files": files, "bytes": nbytes, "messages": msgs, "memories": mems}


def make_sam(
    outdir,
    n: int,
    *,
    messages_mean: float = 12,
    memories_per_conversation: int = 100,
    blob_dims: int = 512,
    seed: int = 0,
    jobs: int | None = None,
    progress: bool = True,
) -> dict:
    """Write n SAM conversations with their memory.db files under OUTDIR/SAM.

    Returns totals: conversations, messages, memories, files, bytes, seconds, dir.
    """
    outdir = os.fspath(outdir)
    conv_dir = sam_dir(outdir)
    os.makedirs(conv_dir, exist_ok=True)
    jobs = jobs or _default_jobs(n, 20 if memories_per_conversation else 200)
    prog = _Progress("sam", n, progress)
    topics = _sam_topics(seed, n)
    totals = {"conversations": 0, "messages": 0, "memories": 0, "files": 0, "bytes": 0}
    params = {
        "dir": conv_dir,
        "messages_mean": messages_mean,
        "topics": topics,
        "memories": memories_per_conversation,
        "dims": blob_dims,
    }
    size = None if not memories_per_conversation else max(1, min(50, n // max(1, jobs * 20)))
    for res in _run_chunks(_sam_worker, _chunks(n, jobs, size), jobs, (seed, params), prog):
        for k in totals:
            totals[k] += res[k]
    # Shared-topic scopes: a directory with only memory.db, holding the memories of every
    # conversation that uses the topic (conversation_id = topic id).
    corp = corpus(seed)
    heads = [sam_header(seed, i) for i in range(n)]
    if memories_per_conversation:
        for t, topic in enumerate(topics):
            members = [i for i, h in enumerate(heads) if h["shared"] and h["topic"] % len(topics) == t]
            if not members:
                continue
            d = os.path.join(conv_dir, topic["id"])
            os.makedirs(d, exist_ok=True)
            batches = (
                sam_memories(topic["id"], seed, i, memories_per_conversation, blob_dims, heads[i]["created"], corp)
                for i in members
            )
            totals["bytes"] += _write_memory_db(os.path.join(d, "memory.db"), batches)
            totals["files"] += 1
            totals["memories"] += memories_per_conversation * len(members)
    if n:
        last = heads[-1]
        active = {"id": last["id"], "updated": _sam_date(last["created"] + SAM_WINDOW_S - 1)}
        totals["bytes"] += _write_plain(os.path.join(conv_dir, "active-conversation.json"), sam_json(active))
        totals["files"] += 1
    legacy = os.path.join(outdir, "SAM", "memory.db")  # created (empty) by SAM at every start
    totals["bytes"] += _write_memory_db(legacy, [])
    totals["files"] += 1
    totals["seconds"] = round(prog.seconds(), 3)
    totals["dir"] = conv_dir
    if progress:
        print(
            f"[gen sam] done: {totals['conversations']} conversations, {totals['messages']} "
            f"messages, {totals['memories']} memories, {totals['files']} files, "
            f"{totals['bytes']} bytes ({_human(totals['bytes'])}) in {totals['seconds']:.1f} s",
            file=sys.stderr,
            flush=True,
        )
    return totals


# --------------------------------------------------------------------------------------------------
# Claude Code (docs/formats/claude-code.md): sessions with message.usage, for bench_usage.py

CLAUDE_MODELS = [
    ("claude-sonnet-4-5-20250929", 0.7),
    ("claude-opus-4-5-20251101", 0.2),
    ("claude-haiku-4-5-20251001", 0.1),
]


def _cc_uuid(rng: random.Random) -> str:
    h = f"{rng.getrandbits(128):032x}"
    return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-8{h[17:20]}-{h[20:32]}"


def claude_session(
    i: int, seed: int = 0, messages_mean: float = 12, corp: str | None = None, start_s: int = 1772000000
) -> tuple[str, str, list[str], list[str]]:
    """(session id, project slug, session lines, sub-agent lines) of session ``i``: user turns, each answered
    by one response streamed on 1-3 lines (thinking, text, tool_use) that share ``message.id``, ``requestId``
    and ``usage`` as Claude Code writes them, tool results, and for one session in 5 a sub-agent transcript."""
    rng = random.Random(f"cc-{seed}-{i}")
    corp = corp if corp is not None else corpus(seed)
    sid = _cc_uuid(rng)
    proj = i % 50
    cwd = f"/home/bench/p{proj}"
    t = start_s + i * 173 + rng.randrange(3600)
    lines, agent = [], []
    parent = None
    turns = max(1, int(rng.expovariate(1 / max(1.0, messages_mean / 2))))
    model = rng.choices([m for m, _ in CLAUDE_MODELS], [w for _, w in CLAUDE_MODELS])[0]

    def entry(kind, extra, sidechain=False):
        nonlocal parent, t
        u = _cc_uuid(rng)
        t += rng.randrange(1, 40)
        e = {
            "parentUuid": parent,
            "isSidechain": sidechain,
            "userType": "external",
            "cwd": cwd,
            "sessionId": sid,
            "version": "2.1.51",
            "gitBranch": "main",
            "type": kind,
            "uuid": u,
            "timestamp": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t)) + f".{rng.randrange(1000):03d}Z",
        }
        e.update(extra)
        parent = u
        return json.dumps(e, separators=(",", ":"))

    def response(out, sidechain=False):
        mid = "msg_01" + "".join(
            rng.choice("ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz0123456789") for _ in range(22)
        )
        usage = {
            "input_tokens": rng.randrange(1, 60),
            "cache_creation_input_tokens": rng.randrange(0, 6000),
            "cache_read_input_tokens": rng.randrange(8000, 160000),
            "output_tokens": rng.randrange(5, 2500),
            "service_tier": "standard",
        }
        blocks = [
            {"type": "thinking", "thinking": _text(rng, corp, 20, 400, 80), "signature": "Eq0BCkYI"},
            {"type": "text", "text": _text(rng, corp, 20, 1200, 200)},
        ]
        if rng.random() < 0.5:
            blocks.append(
                {
                    "type": "tool_use",
                    "id": "toolu_01" + mid[6:],
                    "name": "Bash",
                    "input": {"command": "pytest -x", "description": "Run the tests"},
                }
            )
        for b in blocks[rng.randrange(0, 2) :]:
            out.append(
                entry(
                    "assistant",
                    {
                        "requestId": "req_011" + mid[6:],
                        "message": {
                            "id": mid,
                            "type": "message",
                            "role": "assistant",
                            "model": model,
                            "content": [b],
                            "stop_reason": None,
                            "stop_sequence": None,
                            "usage": usage,
                        },
                    },
                    sidechain,
                )
            )
            if b["type"] == "tool_use":
                out.append(
                    entry(
                        "user",
                        {
                            "message": {
                                "role": "user",
                                "content": [
                                    {
                                        "type": "tool_result",
                                        "tool_use_id": b["id"],
                                        "content": _text(rng, corp, 20, 3000, 400),
                                    }
                                ],
                            }
                        },
                        sidechain,
                    )
                )

    for _ in range(turns):
        lines.append(entry("user", {"message": {"role": "user", "content": _text(rng, corp, 5, 600, 60)}}))
        for _ in range(rng.randrange(1, 4)):
            response(lines)
    if rng.random() < 0.2:
        parent = None
        for _ in range(rng.randrange(2, 6)):
            response(agent, sidechain=True)
    return sid, f"-home-bench-p{proj}", [ln + "\n" for ln in lines], [ln + "\n" for ln in agent]


def make_claude_code(outdir, n: int, *, messages_mean: float = 12, seed: int = 0, progress: bool = True) -> dict:
    """``outdir/projects/<slug>/<session>.jsonl`` (and ``<session>/subagents/agent-<id>.jsonl``) for ``n``
    sessions; the tree is the same for the same arguments."""
    corp = corpus(seed)
    totals = {"sessions": 0, "files": 0, "bytes": 0}
    for i in range(n):
        sid, slug, lines, agent = claude_session(i, seed, messages_mean, corp)
        d = os.path.join(outdir, "projects", slug)
        os.makedirs(d, exist_ok=True)
        totals["bytes"] += _write_plain(os.path.join(d, f"{sid}.jsonl"), "".join(lines).encode())
        totals["files"] += 1
        if agent:
            sub = os.path.join(d, sid, "subagents")
            os.makedirs(sub, exist_ok=True)
            totals["bytes"] += _write_plain(os.path.join(sub, f"agent-a{i:07x}.jsonl"), "".join(agent).encode())
            totals["files"] += 1
        totals["sessions"] += 1
        if progress and i and i % 1000 == 0:
            print(f"[gen claude-code] {i}/{n}", file=sys.stderr, flush=True)
    if progress:
        print(
            f"[gen claude-code] done: {totals['sessions']} sessions, {totals['files']} files, "
            f"{_human(totals['bytes'])}",
            file=sys.stderr,
            flush=True,
        )
    return totals


# --------------------------------------------------------------------------------------------------
# Command line


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="gen_archive.py", description="Generate a synthetic mermaid-cli or SAM archive for samctl benchmarks."
    )
    p.add_argument("kind", choices=["mermaid", "sam", "claude-code"])
    p.add_argument("outdir")
    p.add_argument("--conversations", type=int, required=True, metavar="N")
    p.add_argument(
        "--messages-mean", type=float, default=12, metavar="M", help="mean messages per conversation (default 12)"
    )
    p.add_argument(
        "--memories-per-conversation",
        type=int,
        default=100,
        metavar="K",
        help="sam: memories per conversation (default 100)",
    )
    p.add_argument(
        "--memories-blob-dims",
        type=int,
        default=512,
        metavar="D",
        help="sam: embedding dimensions of the normal vectors (default 512 = 4096 bytes)",
    )
    p.add_argument(
        "--log-bytes",
        type=int,
        default=0,
        metavar="BYTES",
        help="mermaid: also write one log-only conversation whose log is about BYTES",
    )
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--jobs", type=int, default=None, help="worker processes (default: CPU count)")
    p.add_argument("--quiet", action="store_true", help="no progress or totals on stderr")
    a = p.parse_args(argv)
    if a.conversations < 0:
        p.error("--conversations must be >= 0")
    if a.kind == "sam" and a.log_bytes:
        p.error("--log-bytes applies to mermaid archives only")
    if a.memories_blob_dims < 1:
        p.error("--memories-blob-dims must be >= 1")
    if a.kind == "claude-code":
        make_claude_code(a.outdir, a.conversations, messages_mean=a.messages_mean, seed=a.seed, progress=not a.quiet)
    elif a.kind == "mermaid":
        make_mermaid(
            a.outdir,
            a.conversations,
            messages_mean=a.messages_mean,
            seed=a.seed,
            log_bytes=a.log_bytes,
            jobs=a.jobs,
            progress=not a.quiet,
        )
    else:
        make_sam(
            a.outdir,
            a.conversations,
            messages_mean=a.messages_mean,
            memories_per_conversation=a.memories_per_conversation,
            blob_dims=a.memories_blob_dims,
            seed=a.seed,
            jobs=a.jobs,
            progress=not a.quiet,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
