"""core.export, render.html and stores.sam.package: what each format holds, escaping, streaming, round trips."""

from __future__ import annotations

import base64
import hashlib
import io
import json
import re
import tracemalloc

import pytest

from samctl.core import export as core
from samctl.render import html
from samctl.stores import open_store
from samctl.stores.sam import package, schema
from samctl.stores.sam.encode import package_bytes
from samctl.stores.sam.store import SamStore
from tests.conftest import fingerprint, make_fixtures

SAM_ID = "8B58CBC4-ACA7-4811-AE66-C01921690310"
Q3 = "C2A1F0E4-3B5D-4E6F-8A9B-0C1D2E3F4A5B"
SPEC_MERMAID = "20260810_140307_512"
DATE_RE = re.compile(r"\A\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ\Z")
UUID_UPPER = re.compile(r"\A[0-9A-F]{8}-[0-9A-F]{4}-[0-9A-F]{4}-[0-9A-F]{4}-[0-9A-F]{12}\Z")
NOW = "2026-10-01T12:00:00Z"


def _conv(root, cid):
    store = open_store(str(root))
    findings: list = []
    from samctl.core.load import load_resolved

    conv = load_resolved(store, cid, findings)
    assert conv is not None, findings
    return store, conv, findings


def _one(fmt, root, cid, include_hidden=False):
    store, conv, findings = _conv(root, cid)
    return core.render_one(fmt, store, conv, include_hidden, findings, NOW), findings


# -- markdown -----------------------------------------------------------------------------------


def test_markdown_has_title_dates_model_roles_tools_and_reasoning(sam_demo):
    md = _one("markdown", sam_demo, SAM_ID)[0].decode()
    assert md.startswith("# Portland weekend trip\n")
    assert "**model:** github_copilot/gpt-4.1" in md and "**created:** 2026-08-10T14:02:05Z" in md
    assert "## User · 2026-08-10T14:02:11Z" in md
    assert "**Tool call** `weather_operations`" in md and "call_wx_01" not in md and '"location": "Portland, OR"' in md
    assert "## Tool `weather_operations`" in md and "Sunday: 19°C, light rain" in md
    assert "<details><summary>Reasoning</summary>" in md and "Budget is tight" in md
    heads = [ln.split(" · ")[0] for ln in md.splitlines() if ln.startswith("## ")]
    assert heads == ["## User", "## Assistant", "## Tool `weather_operations`", "## Reasoning", "## Assistant"]


def test_markdown_shows_mermaid_tool_runs_and_keeps_code_fenced(mermaid_demo):
    md = _one("markdown", mermaid_demo, SPEC_MERMAID)[0].decode()
    assert "**Tool run** Read `tests/parser.rs`: ok" in md
    assert "```\n42 lines\n```" in md


def test_hidden_messages_follow_the_app_unless_asked(sam_demo):
    md = _one("markdown", sam_demo, Q3)[0].decode()
    assert "Continue." not in md
    md_all = _one("markdown", sam_demo, Q3, include_hidden=True)[0].decode()
    assert "Continue." in md_all and "(hidden in the app)" in md_all


# -- json / jsonl ------------------------------------------------------------------------------------


def test_json_is_samctls_model_with_hidden_filtered(sam_demo):
    doc = json.loads(_one("json", sam_demo, Q3)[0])
    assert doc["id"] == Q3 and doc["store"] == "sam" and doc["title"] == "Q3 budget"
    assert doc["stored_messages"] == 4 and doc["exported_messages"] == 3
    assert [m["role"] for m in doc["messages"]] == ["user", "reasoning", "assistant"]
    assert doc["messages"][1]["reasoning"].startswith("Check last quarter")
    doc_all = json.loads(_one("json", sam_demo, Q3, include_hidden=True)[0])
    assert doc_all["exported_messages"] == 4 and doc_all["messages"][3]["hidden"] is True


def test_jsonl_is_one_message_per_line_with_conversation_id(sam_demo):
    lines = _one("jsonl", sam_demo, SAM_ID)[0].decode().splitlines()
    rows = [json.loads(x) for x in lines]
    assert len(rows) == 5 and all(r["conversation_id"] == SAM_ID for r in rows)
    assert [r["seq"] for r in rows] == list(range(5))
    assert rows[1]["tool_calls"][0]["name"] == "weather_operations"
    assert rows[2]["tool_call_id"] == "call_wx_01"


# -- html ------------------------------------------------------------------------------------------------


def _hostile_sam(tmp_path):
    base = tmp_path / "SAM"
    make_fixtures.build_demo_sam(base)
    cid = "E1E1E1E1-0000-4000-8000-000000000001"
    evil = '<script>alert("x")</script><img src=x onerror=alert(1)>"\'&</pre></details>'
    msgs = [
        make_fixtures.sam_message("E1E1E1E1-0000-4000-8000-000000000002", "user", evil, "2026-08-01T10:00:00Z"),
        make_fixtures.sam_message(
            "E1E1E1E1-0000-4000-8000-000000000003",
            "assistant",
            "```html\n" + evil + "\n```\nand `" + evil + "`",
            "2026-08-01T10:00:01Z",
            toolCalls=[
                {
                    "id": "call_<b>",
                    "type": "function",
                    "function": {"name": 'x"><script>alert(2)</script>', "arguments": json.dumps({"q": evil})},
                }
            ],
        ),
        make_fixtures.sam_message(
            "E1E1E1E1-0000-4000-8000-000000000004",
            "toolExecution",
            evil,
            "2026-08-01T10:00:02Z",
            toolCallId="call_<b>",
            toolName="<i>t</i>",
            toolStatus="success",
        ),
        make_fixtures.sam_message(
            "E1E1E1E1-0000-4000-8000-000000000005", "thinking", "", "2026-08-01T10:00:03Z", reasoningContent=evil
        ),
    ]
    make_fixtures._write(
        base / "conversations" / cid / "conversation.json",
        make_fixtures.sam_dumps(make_fixtures.sam_doc(cid, evil, msgs, "2026-08-01T10:00:00Z", "2026-08-01T10:00:03Z")),
    )
    return base, cid, evil


def test_html_escapes_every_piece_of_transcript_text(tmp_path):
    base, cid, evil = _hostile_sam(tmp_path)
    page = _one("html", base, cid)[0].decode()
    assert page.count("<script") == 1  # ours, at the end
    assert page.rstrip().endswith("</script>\n</body>\n</html>")
    assert "<img" not in page and "<i>t</i>" not in page and "<b>" not in page
    assert page.count("&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;") >= 5
    assert "onerror=alert(1)&gt;" in page
    # the structure around the text is intact: every details/pre the page opens, it closes
    for tag in ("details", "pre", "article"):
        assert page.count(f"<{tag}") == page.count(f"</{tag}>"), tag


def test_html_is_self_contained_with_a_strict_csp(sam_demo):
    page = _one("html", sam_demo, SAM_ID)[0].decode()
    assert re.search(r"(src|href)=\"(https?:)?//", page) is None
    assert "<link" not in page and "@import" not in page and "url(" not in page
    csp = re.search(r'<meta http-equiv="Content-Security-Policy" content="([^"]+)">', page).group(1)
    assert "default-src 'none'" in csp and "unsafe-inline" not in csp
    style = re.search(r"<style>(.*?)</style>", page, re.S).group(1)
    script = re.search(r"<script>(.*?)</script>", page, re.S).group(1)
    for body in (style, script):
        digest = base64.b64encode(hashlib.sha256(body.encode()).digest()).decode()
        assert f"'sha256-{digest}'" in csp
    assert '<meta name="viewport"' in page and "@media print" in page


def test_html_blocks_are_collapsible_and_roles_styled(sam_demo):
    page = _one("html", sam_demo, SAM_ID)[0].decode()
    roles = re.findall(r'<article class="msg role-(\w+)"', page)
    assert roles == ["user", "assistant", "tool", "reasoning", "assistant"]
    assert '<details class="call"><summary><code>weather_operations</code></summary>' in page
    assert '<details class="result"><summary>Result of weather_operations' in page
    assert '<details class="reasoning"><summary>Reasoning</summary>' in page


def test_body_html_turns_fences_into_code_blocks():
    out = html.body_html("before\n```python\nx = '<a>'\n```\nafter `y`")
    assert '<pre><code class="lang-python">x = &#x27;&lt;a&gt;&#x27;</code></pre>' in out
    assert '<div class="text">before</div>' in out and "after <code>y</code>" in out
    assert html.body_html("```\nunclosed <b>") == "<pre><code>unclosed &lt;b&gt;</code></pre>"


def test_index_page_lists_and_escapes(tmp_path):
    page = html.index_page(
        [{"file": "a b.html", "id": "X", "title": "<b>t</b>", "updated_ts": 0, "messages": 2, "store": "sam"}]
    )
    assert 'href="a%20b.html"' in page and "&lt;b&gt;t&lt;/b&gt;" in page and 'id="filter"' in page


# -- sam-package ----------------------------------------------------------------------------------------


def _packages(data: bytes) -> list:
    pkgs = package.read_package(data)
    for p in pkgs:
        errors = [x for x in schema.validate_conversation(p["conversation"]) if x.severity == schema.ERROR]
        assert not errors, errors
        assert p["formatVersion"] == "1.0" and DATE_RE.match(p["exportedAt"])
    return pkgs


def test_sam_package_round_trip_loses_nothing_sam_keeps(sam_demo):
    store, conv, findings = _conv(sam_demo, SAM_ID)
    data = core.render_one("sam-package", store, conv, False, findings, NOW)
    assert not findings
    assert data == package_bytes(json.loads(data))  # written with SAM's strict encoder, in its layout
    (pkg,) = _packages(data)
    stored = json.loads((sam_demo / "conversations" / SAM_ID / "conversation.json").read_bytes())
    assert pkg["conversation"] == stored  # every key, every message, as SAM stored it
    back = SamStore(store.conv_dir, store.base).conversation_from_doc(pkg["conversation"], "pkg", SAM_ID)
    assert [m.to_dict() for m in back.messages] == [m.to_dict() for m in conv.messages]
    assert back.messages[1].tool_calls[0].arguments == '{"location":"Portland, OR","operation":"forecast"}'
    mems = pkg["memories"]
    assert [m["id"] for m in mems] == ["AB2B1E7D-4173-496C-8D08-F7CA82E37410", "296E5007-66D6-4DA2-B9F5-7BC7B9542F8E"]
    assert mems[0] == {
        "id": "AB2B1E7D-4173-496C-8D08-F7CA82E37410",
        "content": "Weather: Saturday 24°C sunny, Sunday 19°C light rain in Portland.",
        "contentType": "tool_result",
        "importance": 0.5,
        "createdAt": "2026-08-10T14:02:20Z",
        "tags": ["weather", "portland"],
    }
    assert mems[1]["tags"] == [] and mems[1]["createdAt"] == "2026-08-10T14:02:12Z" and mems[1]["importance"] == 0.8


def test_sam_package_keeps_hidden_messages_and_leaves_shared_topic_memories_out(sam_demo):
    store, conv, findings = _conv(sam_demo, Q3)
    (pkg,) = _packages(core.render_one("sam-package", store, conv, False, findings, NOW))
    assert len(pkg["conversation"]["messages"]) == 4  # the system-generated turn too
    assert pkg["memories"] == []  # getAllMemories(conversation id): topic memories are not the conversation's


def test_sam_package_normalises_fractional_dates(tmp_path):
    doc = json.loads((make_fixtures.SPEC / f"sam_{SAM_ID}.json").read_text())
    doc["messages"][0]["timestamp"] = "2026-08-10T14:02:11.987Z"
    doc["created"] = "2026-08-10T16:02:05+02:00"
    out = package.strict_conversation(doc)
    assert out["messages"][0]["timestamp"] == "2026-08-10T14:02:11Z" and out["created"] == "2026-08-10T14:02:05Z"
    assert doc["created"] == "2026-08-10T16:02:05+02:00"  # input untouched


def test_mermaid_session_becomes_a_sam_conversation_sam_accepts(mermaid_demo):
    store, conv, findings = _conv(mermaid_demo, "20260812_091500_004")
    (pkg,) = _packages(core.render_one("sam-package", store, conv, False, findings, NOW))
    c = pkg["conversation"]
    assert UUID_UPPER.match(c["id"]) and c["sessionId"] == c["id"] and c["title"] == conv.meta.title
    assert c["created"] == "2026-08-12T13:15:00Z"  # -04:00 to UTC, whole seconds
    ids = [m["id"] for m in c["messages"]]
    assert len(set(ids)) == len(ids) and all(UUID_UPPER.match(i) for i in ids)
    assert all(DATE_RE.match(m["timestamp"]) and m["lastModified"] == m["timestamp"] for m in c["messages"])
    assert [m["type"] for m in c["messages"]] == ["user", "thinking", "assistant", "toolExecution", "assistant", "user"]
    think, call, result = c["messages"][1:4]
    assert think["reasoningContent"].startswith("The CLI is in src/cli.rs") and think["isToolMessage"] is True
    assert call["toolCalls"] == [
        {"id": "call_07", "type": "function", "function": {"name": "grep", "arguments": '{"pattern":"fn report"}'}}
    ]
    assert result["toolCallId"] == "call_07" and result["toolName"] == "grep" and result["toolStatus"] == "success"
    assert c["messages"][0]["importance"] == 0.9 and c["messages"][0]["isPinned"] is True  # "budget" (sam.md §4.5.4)
    assert c["settings"]["selectedModel"] == "ollama/qwen3-coder:30b" and pkg["memories"] == []
    # read back as SAM would: the roles are mermaid's
    back = SamStore(store.conv_dir, store.base).conversation_from_doc(c, "pkg", c["id"])
    assert [m.role for m in back.messages] == ["user", "reasoning", "assistant", "tool", "assistant", "user"]
    assert [m.content for m in back.messages if m.role != "reasoning"] == [m.content for m in conv.messages]


def test_mermaid_conversion_gives_fresh_ids_each_time(mermaid_demo):
    store, conv, _ = _conv(mermaid_demo, SPEC_MERMAID)
    a, b = package.from_mermaid(conv), package.from_mermaid(conv)
    assert a["id"] != b["id"] and a["messages"][0]["id"] != b["messages"][0]["id"]


def test_bulk_stream_is_byte_identical_to_the_encoder():
    pkgs = [package.single_package({"id": str(i), "t": "a/b\nc", "n": [1.0, {}]}, [], NOW, "v") for i in range(3)]
    whole = package_bytes(package.bulk_package(pkgs, NOW, "v"))
    assert b"".join(package.bulk_stream((package_bytes(p) for p in pkgs), 3, NOW, "v")) == whole
    empty = package_bytes(package.bulk_package([], NOW, "v"))
    assert b"".join(package.bulk_stream(iter(()), 0, NOW, "v")) == empty


def test_read_package_refuses_a_bare_conversation():
    raw = (make_fixtures.SPEC / f"sam_{SAM_ID}.json").read_bytes()
    with pytest.raises(ValueError, match="not a valid SAM conversation export"):
        package.read_package(raw)


def test_bulk_export_of_both_stores_holds_every_conversation(sam_demo, tmp_path):
    store = open_store(str(sam_demo))
    ids = core.select_ids(store, (), True, None, None, [])
    findings: list = []
    res = core.export(
        store, ids, "sam-package", core.Plan("file", tmp_path / "all.json"), findings, as_many=True, exported_at=NOW
    )
    assert res.exported == 3 and not findings
    doc = json.loads((tmp_path / "all.json").read_bytes())
    assert doc["conversationCount"] == 3 and len(_packages((tmp_path / "all.json").read_bytes())) == 3


# -- planning, streaming, read-only ---------------------------------------------------------------------------


def test_plan_output(sam_demo, tmp_path):
    store = open_store(str(sam_demo))
    assert core.plan_output(None, "markdown", False, store).kind == "stdout"
    assert core.plan_output("-", "jsonl", True, store).kind == "stdout"
    with pytest.raises(Exception, match="needs a folder"):
        core.plan_output("-", "markdown", True, store)
    assert core.plan_output(str(tmp_path / "a.md"), "markdown", False, store).kind == "file"
    assert core.plan_output(str(tmp_path / "out"), "markdown", True, store).kind == "folder"
    assert core.plan_output(str(tmp_path / "all.json"), "sam-package", True, store).kind == "file"
    assert core.plan_output(str(tmp_path), "html", False, store).kind == "folder"
    with pytest.raises(Exception, match="inside the store"):
        core.plan_output(str(sam_demo / "conversations" / "x"), "markdown", True, store)


def _big_mermaid(tmp_path, n, size=60_000):
    conv = tmp_path / f"big{n}" / ".mermaid" / "conversations"
    conv.mkdir(parents=True)
    for i in range(n):
        cid = f"20260101_{i // 1000:06d}_{i % 1000:03d}"
        msgs = [
            make_fixtures.mermaid_message(
                "User" if k % 2 == 0 else "Assistant",
                f"{k} " + "word " * (size // 50),
                f"2026-01-01T10:00:{k % 60:02d}.000-04:00",
            )
            for k in range(10)
        ]
        make_fixtures.write_mermaid(
            conv, make_fixtures.mermaid_doc(cid, f"t{i}", msgs, "2026-01-01T10:00:00.000-04:00"), log=False
        )
    return tmp_path / f"big{n}"


@pytest.mark.parametrize("fmt", ["html", "sam-package"])
def test_export_memory_stays_flat_as_the_archive_grows(tmp_path, fmt):
    peaks = []
    for n in (5, 40):
        root = _big_mermaid(tmp_path, n)
        store = open_store(str(root))
        ids = core.select_ids(store, (), True, None, None, [])
        plan = (
            core.Plan("file", tmp_path / f"b{n}.json")
            if fmt == "sam-package"
            else core.Plan("folder", tmp_path / f"o{n}")
        )
        tracemalloc.start()
        core.export(store, ids, fmt, plan, [], as_many=True)
        peaks.append(tracemalloc.get_traced_memory()[1])
        tracemalloc.stop()
    # 8x the conversations (about 24 MB of transcript) must not need much more memory than 5 of them
    assert peaks[1] < peaks[0] * 1.5 + (1 << 20), peaks


@pytest.mark.parametrize("fmt", core.FORMATS)
def test_export_changes_nothing_in_the_store(sam_demo, mermaid_demo, tmp_path, fmt):
    for root in (sam_demo, mermaid_demo):
        before = fingerprint(root)
        store = open_store(str(root))
        ids = core.select_ids(store, (), True, None, None, [])
        core.export(store, ids, fmt, core.Plan("folder", tmp_path / f"{root.name}-{fmt}"), [], as_many=True)
        core.export(store, ids[:1], fmt, core.Plan("stdout"), [], stdout=io.BytesIO())
        assert fingerprint(root) == before


def test_corrupt_conversations_are_findings_and_skipped(sam_broken, tmp_path):
    base, _ = sam_broken
    store = open_store(str(base))
    findings: list = []
    ids = core.select_ids(store, (), True, None, None, findings)
    res = core.export(store, ids, "sam-package", core.Plan("folder", tmp_path / "pk"), findings, as_many=True)
    codes = {f.code for f in findings}
    assert {"bad-json", "not-regular", "db-not-sqlite"} <= codes  # reported by the listing and the memory reader
    refused = {f.conversation for f in findings if f.code == "package-refused"}
    assert refused == {"A0000000-0000-4000-8000-00000000000" + c for c in "245"}  # bad type, id, missing key
    assert res.skipped == 3 and res.exported == len(ids) - 3
    for name in (tmp_path / "pk").iterdir():
        _packages(name.read_bytes())
    # a fractional date (refused by older macOS) is written whole: that package is importable
    (pkg,) = _packages((tmp_path / "pk" / "A0000000-0000-4000-8000-000000000003.sam.json").read_bytes())
    assert pkg["conversation"]["messages"][1]["timestamp"] == "2026-01-01T12:00:01Z"


def test_output_files_are_private(sam_demo, tmp_path):
    import os
    import stat

    store = open_store(str(sam_demo))
    ids = core.select_ids(store, (), True, None, None, [])
    out = tmp_path / "new" / "folder"
    core.export(store, ids, "html", core.Plan("folder", out), [], as_many=True)
    assert stat.S_IMODE(os.stat(out).st_mode) == 0o700 and stat.S_IMODE(os.stat(out.parent).st_mode) == 0o700
    assert sorted(p.name for p in out.iterdir()) == sorted([f"{i}.html" for i in ids] + ["index.html"])
    assert all(stat.S_IMODE(os.stat(p).st_mode) == 0o600 for p in out.iterdir())


def test_jsonl_rows_are_one_line_a_message_even_past_64_bit_integers():
    """A raw value orjson cannot write (an integer past 64 bits) sends the rows through the slower writer:
    the same lines, in the same order, every one of them."""
    from samctl.model import Conversation, ConversationMeta, Message

    meta = ConversationMeta("mermaid", SPEC_MERMAID, "t")
    msgs = [
        Message("user", "first", "2026-08-10T14:03:07Z"),
        Message("assistant", "big", actions=[{"n": 2**70}]),
        Message("system", "hidden", hidden=True),
    ]
    conv = Conversation(meta=meta, messages=msgs)
    for hidden in (False, True):
        lines = core.jsonl_bytes(conv, hidden).decode().split("\n")
        assert lines[-1] == ""  # every line ends in a newline, the last too
        rows = [json.loads(x) for x in lines[:-1]]
        assert [(r["seq"], r["content"]) for r in rows] == list(enumerate(["first", "big", "hidden"][: 2 + hidden]))
        assert rows[1]["actions"] == [{"n": 2**70}]
        assert all(list(r)[:4] == ["conversation_id", "store", "seq", "id"] for r in rows)
    conv.messages = []
    assert core.jsonl_bytes(conv, True) == b""


def _units(monkeypatch) -> list:
    """The units of work ``export`` hands out (sizes of each), run here in this process."""
    from samctl.stores import workers

    units: list = []
    real = workers.ordered_map

    def recording(store, fn, parts, n_jobs=None, min_parts=2, ahead=None):
        units.extend(len(items) for _, items in parts)
        return real(store, fn, parts, 1)

    monkeypatch.setattr(workers, "ordered_map", recording)
    monkeypatch.setattr(core, "PARALLEL_EXPORT", 1)
    return units


@pytest.mark.parametrize(
    "each, expected",
    [
        (None, [3]),  # sizes unknown: 8 to a unit (3 here)
        (1, [3]),  # small: up to EXPORT_PART to a unit
        (core.EXPORT_PART_BYTES // 2, [2, 1]),  # large: a unit stops once its files reach the bound
        (core.EXPORT_PART_BYTES * 3, [1, 1, 1]),
    ],
)
def test_units_of_work_are_bounded_by_the_bytes_of_their_files(sam_demo, monkeypatch, each, expected):
    store = open_store(str(sam_demo))
    sizes: dict = {}
    ids = core.select_ids(store, (), True, None, None, [], sizes=sizes)
    assert sorted(sizes) == sorted((store, i) for i in ids) and all(v > 0 for v in sizes.values())
    if each is not None:
        sizes = {k: each for k in sizes}
    units = _units(monkeypatch)
    out = io.BytesIO()
    res = core.export(store, ids, "jsonl", core.Plan("stdout"), [], stdout=out, sizes=None if each is None else sizes)
    assert res.exported == 3 and out.getvalue().count(b"\n") > 3
    assert units == expected


def test_many_unknown_sizes_go_eight_to_a_unit(monkeypatch):
    weigh = core._weigher(object(), {})
    assert core.EXPORT_PART_BYTES // weigh(("any-id",)) == 8 <= core.EXPORT_PART
