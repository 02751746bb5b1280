"""The benchmark archive generator writes the formats of the specs (checked with the stdlib only)."""

from __future__ import annotations

import hashlib
import json
import os
import re
import sqlite3
import stat

from bench import gen_archive as gen

MERMAID_ID = re.compile(r"^[0-9]{8}_[0-9]{6}_[0-9]{3}$")
RFC3339_9 = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{9}-04:00$")
SAM_DATE = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")
SAM_DB_DATE = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}$")
UUID_UPPER = re.compile(r"^[0-9A-F]{8}-[0-9A-F]{4}-[0-9A-F]{4}-[0-9A-F]{4}-[0-9A-F]{12}$")
META_ORDER = ["id", "title", "updated_at", "git_branch", "message_count", "forked_from"]
MESSAGE_KEYS = {
    "role",
    "content",
    "timestamp",
    "kind",
    "metadata",
    "actions",
    "thinking",
    "images",
    "image_numbers",
    "tool_calls",
    "tool_call_id",
    "tool_name",
    "provider_continuation",
}
SCALARS = [
    "title",
    "model_name",
    "safety_mode",
    "plan",
    "advertised_context",
    "last_token_usage",
    "cumulative_token_usage",
    "context_usage",
    "git_branch",
    "git_sha",
    "cli_version",
    "forked_from",
    "parent_session",
]
SAM_SCHEMA = {
    ("table", "conversation_memories"): 'CREATE TABLE "conversation_memories" ("id" TEXT PRIMARY KEY NOT NULL, '
    '"conversation_id" TEXT NOT NULL, "content" TEXT NOT NULL, "content_type" TEXT NOT NULL, '
    '"embedding" BLOB, "importance" REAL NOT NULL, "created_at" TEXT NOT NULL, '
    '"access_count" INTEGER NOT NULL DEFAULT (0), "last_accessed" TEXT NOT NULL, "tags" TEXT)',
    ("index", "idx_conversation_id"): "CREATE INDEX idx_conversation_id ON conversation_memories(conversation_id)",
    ("index", "idx_created_at"): "CREATE INDEX idx_created_at ON conversation_memories(created_at)",
    ("index", "idx_importance"): "CREATE INDEX idx_importance ON conversation_memories(importance)",
    ("index", "sqlite_autoindex_conversation_memories_1"): None,
}


def _read_log(path):
    data = open(path, "rb").read()
    assert data.endswith(b"\n")
    lines = data.decode("utf-8").split("\n")[:-1]
    envs = [json.loads(line) for line in lines]
    for line, env in zip(lines, envs):
        assert line == json.dumps(env, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
        assert env["v"] == 1 and RFC3339_9.match(env["ts"])
    assert [e["seq"] for e in envs] == list(range(len(envs)))
    assert envs[0]["event"]["type"] == "started"
    return envs


def _fold(envs):
    """docs/formats/mermaid.md §4.2 fold, enough for the events the generator writes."""
    ev0 = envs[0]["event"]
    conv = {
        "id": ev0["session_id"],
        "messages": [],
        "input_history": [],
        "created_at": ev0["created_at"],
        "updated_at": ev0["created_at"],
        "project_path": ev0["project_path"],
        "model_name": ev0["model_id"],
    }
    for env in envs[1:]:
        ev = env["event"]
        kind = ev["type"]
        if kind == "message":
            conv["messages"].append(ev["message"])
            conv["updated_at"] = ev["message"]["timestamp"]
        elif kind == "reset":
            conv["messages"] = ev["messages"]
            conv["updated_at"] = ev["at"]
        elif kind == "action":
            if conv["messages"] and conv["messages"][-1]["role"] == "Assistant":
                conv["messages"][-1]["actions"].append(ev["action"])
        elif kind == "input":
            hist = conv["input_history"]
            if ev["text"].strip() and (not hist or hist[-1] != ev["text"]):
                hist.append(ev["text"])
                del hist[:-100]
        elif kind == "state":
            for key in SCALARS:
                conv[key] = ev.get(key)
        elif kind == "tasks":
            conv["tasks"] = ev["store"]
        else:
            raise AssertionError(f"unexpected event {kind}")
    return conv


def _tree_digest(root):
    h = hashlib.sha256()
    for dirpath, dirnames, filenames in sorted(os.walk(root)):
        dirnames.sort()
        for name in sorted(filenames):
            p = os.path.join(dirpath, name)
            h.update(os.path.relpath(p, root).encode() + b"\0" + open(p, "rb").read())
    return h.hexdigest()


def test_mermaid_archive(tmp_path):
    totals = gen.make_mermaid(tmp_path, 5, seed=7, progress=False)
    d = tmp_path / ".mermaid" / "conversations"
    assert totals["conversations"] == 5 and totals["files"] == 15
    assert stat.S_IMODE(os.stat(d).st_mode) == 0o700
    assert stat.S_IMODE(os.stat(d.parent).st_mode) == 0o700
    ids = sorted(p.name[:-5] for p in d.glob("*.json"))
    assert len(ids) == 5 and len(set(ids)) == 5
    created = set()
    for cid in ids:
        assert MERMAID_ID.match(cid)
        for ext in (".json", ".meta", ".jsonl"):
            assert stat.S_IMODE(os.stat(d / (cid + ext)).st_mode) == 0o600
        raw = (d / (cid + ".json")).read_bytes()
        doc = json.loads(raw)
        assert raw == json.dumps(doc, indent=2, ensure_ascii=False, sort_keys=True).encode()
        assert doc["id"] == cid and doc["created_at"] not in created
        created.add(doc["created_at"])
        assert doc["created_at"][:4] + doc["created_at"][5:7] == cid[:6]
        assert all(set(m) == MESSAGE_KEYS for m in doc["messages"])
        stamps = [m["timestamp"] for m in doc["messages"]]
        assert all(RFC3339_9.match(t) for t in stamps + [doc["created_at"], doc["updated_at"]])
        assert len(set(stamps)) == len(stamps)
        assert doc["updated_at"] == stamps[-1]
        meta_raw = (d / (cid + ".meta")).read_bytes()
        assert not meta_raw.endswith(b"\n")
        meta = json.loads(meta_raw)
        assert list(meta) == META_ORDER
        assert meta_raw == json.dumps(meta, ensure_ascii=False, separators=(",", ":")).encode()
        assert meta["message_count"] == len(doc["messages"]) > 0
        assert meta["title"] == doc["title"] and meta["updated_at"] == doc["updated_at"]
        envs = _read_log(d / (cid + ".jsonl"))
        assert [e["event"]["type"] for e in envs[:5]] == ["started", "reset", "input", "state", "tasks"]
        folded = _fold(envs)
        for key, val in folded.items():
            assert doc[key] == val, key
    # at least one tool call with its result and action somewhere
    docs = [json.loads((d / (cid + ".json")).read_text()) for cid in ids]
    msgs = [m for doc in docs for m in doc["messages"]]
    assert any(m["role"] == "Tool" for m in msgs) and any(m["actions"] for m in msgs)
    # deterministic, whatever the number of jobs
    other = tmp_path / "again"
    gen.make_mermaid(other, 5, seed=7, progress=False, jobs=2)
    assert _tree_digest(tmp_path / ".mermaid") == _tree_digest(other / ".mermaid")


def test_mermaid_big_log(tmp_path):
    path = tmp_path / "20260810_140307_512.jsonl"
    info = gen.make_mermaid_log(path, 300_000, seed=3)
    size = os.path.getsize(path)
    assert info["bytes"] == size and 200_000 < size <= 300_000
    envs = _read_log(path)
    assert len(envs) == info["lines"]
    assert envs[0]["event"]["session_id"] == "20260810_140307_512"
    assert len(_fold(envs)["messages"]) == info["messages"]


def _walk_keys(obj, found):
    if isinstance(obj, dict):
        keys = list(obj)
        assert keys == sorted(keys, key=str.lower)
        for k, v in obj.items():
            if k in ("created", "updated", "timestamp", "lastModified", "lastUpdated"):
                found.append(v)
            _walk_keys(v, found)
    elif isinstance(obj, list):
        for v in obj:
            _walk_keys(v, found)


def test_sam_archive(tmp_path):
    totals = gen.make_sam(tmp_path, 5, memories_per_conversation=3, seed=11, progress=False)
    conv = tmp_path / "SAM" / "conversations"
    assert totals["conversations"] == 5
    convs = {}
    for d in sorted(p for p in conv.iterdir() if p.is_dir()):
        assert UUID_UPPER.match(d.name)
        f = d / "conversation.json"
        if f.exists():
            raw = f.read_bytes()
            assert b"/" not in raw.replace(b"\\/", b"") and b'" : ' in raw
            doc = json.loads(raw)
            assert doc["id"] == d.name
            dates = []
            _walk_keys(doc, dates)
            assert dates and all(SAM_DATE.match(x) for x in dates)
            for m in doc["messages"]:
                assert m["type"] in ("user", "assistant", "toolExecution", "thinking")
                assert UUID_UPPER.match(m["id"]) and 0 <= m["importance"] <= 1
            convs[d.name] = doc
        else:  # a shared-topic scope: only memory.db
            assert [p.name for p in d.iterdir()] == ["memory.db"]
    assert len(convs) == 5
    shared = [c for c in convs.values() if c["settings"]["useSharedData"]]
    assert shared and all((conv / c["settings"]["sharedTopicId"] / "memory.db").exists() for c in shared)
    assert any(c["isPinned"] for c in convs.values())
    assert any(m["type"] == "toolExecution" for c in convs.values() for m in c["messages"])
    active = json.loads((conv / "active-conversation.json").read_text())
    assert active["id"] in convs and SAM_DATE.match(active["updated"])

    dbs = sorted(conv.glob("*/memory.db"))
    assert len(dbs) == 5  # 4 own scopes + 1 topic
    for db in dbs:
        con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
        try:
            master = {(t, n): s for t, n, s in con.execute("SELECT type, name, sql FROM sqlite_master")}
            assert master == SAM_SCHEMA
            rows = con.execute(
                "SELECT id, conversation_id, content_type, embedding, importance, "
                "created_at, access_count, last_accessed FROM conversation_memories"
            ).fetchall()
        finally:
            con.close()
        assert len(rows) >= 3
        for rid, scope, ctype, blob, imp, created, count, last in rows:
            assert UUID_UPPER.match(rid) and scope == db.parent.name
            assert len(blob) in (4096, 2048) and 0 <= imp <= 1 and count >= 0
            assert SAM_DB_DATE.match(created) and SAM_DB_DATE.match(last) and last >= created
            assert ctype in (
                "message",
                "user_input",
                "assistant_response",
                "system_event",
                "tool_result",
                "context_info",
                "document",
            )


def test_sam_importance_vectors():
    """docs/formats/sam.md §4.5.4 test vectors."""
    cases = [
        (True, "Plan a weekend trip to Portland within a $500 budget.", 0.9),
        (True, "thanks!", 0.3),
        (True, "thanks :)", 0.7),
        (False, "ok", 0.3),
        (False, "Okay.", 0.3),
        (False, "Here is the show schedule", 0.85),
        (True, "Yes, go ahead", 0.85),
        (True, "x" * 301, 0.7999999999999999),
        (False, "", 0.5),
        (True, "", 0.7),
    ]
    for user, text, want in cases:
        assert gen.sam_importance(text, user) == want, text
