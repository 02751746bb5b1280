"""Tests for samctl.stores.sam.repair: recover's repairs and salvage (sam.md §4.5.5, §4.6, §14)."""

from __future__ import annotations

import copy
import json
import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from samctl.stores.sam.encode import conversation_bytes
from samctl.stores.sam.repair import DEFAULT_TITLE, repair_conversation, salvage_messages, salvage_top_level
from samctl.stores.sam.schema import ERROR, MESSAGE_KIND, validate_conversation, where_of
from tests.stores.test_sam_schema import (
    CONV_ID,
    DELETE,
    EXAMPLE_15_1,
    EXAMPLE_PATHS,
    example,
    json_values,
    mutate,
)

MTIME = 1786371000  # 2026-08-10T14:10:00Z
MTIME_DATE = "2026-08-10T14:10:00Z"
IDS = [m["id"] for m in example()["messages"]]
OTHER_ID = "296E5007-66D6-4DA2-B9F5-7BC7B9542F8E"


def error_codes(doc):
    return [(p.code, p.where) for p in validate_conversation(doc) if p.severity == ERROR]


def repair(doc, **kw):
    """repair_conversation plus the invariants every result must keep."""
    before = copy.deepcopy(doc)
    out, notes = repair_conversation(doc, **kw)
    assert doc == before or doc != doc, "input was modified"  # (NaN makes a doc unequal to itself)
    assert error_codes(out) == []
    assert all(isinstance(n, str) and n and "\n" not in n for n in notes)
    conversation_bytes(out)  # a repaired document can always be written
    again, more = repair_conversation(out, **kw)
    assert more == [] and again == out, f"not idempotent: {more}"
    return out, notes


def ids(doc):
    return [m["id"] for m in doc["messages"]]


def noted(notes, *fragments):
    """True if one note contains every fragment."""
    return any(all(f in n for f in fragments) for n in notes)


# --- nothing to do ------------------------------------------------------------------


def test_valid_example_is_returned_unchanged_without_notes():
    doc = example()
    out, notes = repair(doc)
    assert notes == []
    assert out == doc and out is not doc
    assert conversation_bytes(out) == EXAMPLE_15_1.encode()


# --- interrupted streams and running tools (sam.md §4.5.5) ------------------------------------


def test_streaming_flag_cleared_tool_calls_kept():
    doc = example()
    doc["messages"][1]["isStreaming"] = True
    out, notes = repair(doc)
    assert out["messages"][1]["isStreaming"] is False
    assert out["messages"][1]["toolCalls"] == doc["messages"][1]["toolCalls"]
    assert ids(out) == IDS
    assert notes == ["messages[1].isStreaming: true -> false (interrupted stream)"]


def test_empty_streaming_assistant_is_dropped_like_sams_save_filter():
    doc = example()
    doc["messages"].append(
        {
            "id": OTHER_ID,
            "type": "assistant",
            "content": " \n",
            "timestamp": "2026-08-10T14:02:30Z",
            "isFromUser": False,
            "showReasoning": False,
            "isStreaming": True,
            "isToolMessage": False,
        }
    )
    out, notes = repair(doc)
    assert ids(out) == IDS
    assert noted(notes, "messages[5]", "dropped", "interrupted stream")


@pytest.mark.parametrize(
    "extra",
    [
        {"isFromUser": True, "type": "user"},  # user messages are always kept
        {"toolCalls": [{"id": "call_x", "type": "function", "function": {"name": "f", "arguments": "{}"}}]},
        {"reasoningContent": "half a thought"},
        {"contentParts": [{"type": "image_url", "image_url": {"url": "file:///tmp/a.png"}}]},
        {"toolCallId": "call_wx_01", "isToolMessage": True, "type": "toolExecution", "toolStatus": "running"},
    ],
)
def test_empty_streaming_message_that_carries_something_is_kept(extra):
    msg = {
        "id": OTHER_ID,
        "type": "assistant",
        "content": "",
        "timestamp": "2026-08-10T14:02:30Z",
        "isFromUser": False,
        "showReasoning": False,
        "isStreaming": True,
        "isToolMessage": False,
    }
    msg.update(extra)
    doc = example()
    doc["messages"].append(msg)
    out, notes = repair(doc)
    assert ids(out) == IDS + [OTHER_ID]
    assert out["messages"][5]["isStreaming"] is False
    for key in extra:
        assert key in out["messages"][5]


@pytest.mark.parametrize("status", ["running", "queued"])
def test_running_and_queued_tools_become_error(status):
    doc = example()
    doc["messages"][2]["toolStatus"] = status
    doc["messages"][2]["toolDisplayData"] = {"action": "a", "actionDisplayName": "A", "status": status}
    out, notes = repair(doc)
    assert out["messages"][2]["toolStatus"] == "error"
    assert out["messages"][2]["toolDisplayData"]["status"] == "error"
    assert notes == [
        f"messages[2].toolStatus: {status} -> error (the tool never finished)",
        f"messages[2].toolDisplayData.status: {status} -> error (the tool never finished)",
    ]


def test_other_statuses_untouched():
    for status in ["success", "error", "userInputRequired"]:
        doc = mutate(example(), ("messages", 2, "toolStatus"), status)
        assert repair(doc)[1] == []


# --- dates -------------------------------------------------------------------------------

DATE_PATHS = [
    ("created",),
    ("updated",),
    ("settings", "telemetry", "lastUpdated"),
    ("messages", 0, "timestamp"),
    ("messages", 1, "lastModified"),
    ("performanceMetrics", 0, "timestamp"),
]


@pytest.mark.parametrize("path", DATE_PATHS)
@pytest.mark.parametrize(
    "given_date,want",
    [
        ("2026-08-10T14:02:11.999999999Z", "2026-08-10T14:02:11Z"),  # truncated, never rounded up
        ("2026-08-10T14:02:11.5Z", "2026-08-10T14:02:11Z"),
        ("2026-08-10T16:02:11+02:00", "2026-08-10T14:02:11Z"),
        ("2026-08-10T09:02:11.25-05:00", "2026-08-10T14:02:11Z"),
        ("2026-08-10T14:02:11+00:00", "2026-08-10T14:02:11Z"),
    ],
)
def test_dates_normalised_to_whole_seconds_utc(path, given_date, want):
    doc = mutate(example(), path, given_date)
    out, notes = repair(doc)
    node = out
    for c in path:
        node = node[c]
    assert node == want
    assert len(notes) == 1 and notes[0].startswith(f"{where_of(path)}: {given_date} -> {want} (")


# --- UUIDs ---------------------------------------------------------------------------------


def test_every_uuid_field_is_uppercased():
    low = OTHER_ID.lower()
    doc = example()
    doc["id"] = doc["id"].lower()
    doc["messages"][3]["id"] = doc["messages"][3]["id"].lower()
    doc["enabledCustomInstructionIds"] = [low]
    doc["settings"].update(
        selectedSystemPromptId=low, selectedPersonalityId=low, sharedTopicId=low, workspacePromptIds=[low, low]
    )
    doc["performanceMetrics"][0]["id"] = low
    doc["folderId"] = doc["folderId"].lower()  # a plain string in SAM's schema: left alone
    doc["sessionId"] = doc["sessionId"].lower()
    out, notes = repair(doc)
    assert out["id"] == CONV_ID
    assert ids(out) == IDS
    assert out["enabledCustomInstructionIds"] == [OTHER_ID]
    s = out["settings"]
    assert s["selectedSystemPromptId"] == s["selectedPersonalityId"] == s["sharedTopicId"] == OTHER_ID
    assert s["workspacePromptIds"] == [OTHER_ID, OTHER_ID]
    assert out["performanceMetrics"][0]["id"] == OTHER_ID
    assert out["folderId"] == doc["folderId"] and out["sessionId"] == doc["sessionId"]
    assert len(notes) == 9 and all("uppercased UUID" in n for n in notes)


def test_invalid_uuids_in_id_arrays_are_dropped_one_by_one():
    doc = example()
    doc["enabledCustomInstructionIds"] = [OTHER_ID, "nope", 3, CONV_ID]
    doc["settings"]["workspacePromptIds"] = ["x", OTHER_ID]
    out, notes = repair(doc)
    assert out["enabledCustomInstructionIds"] == [OTHER_ID, CONV_ID]
    assert out["settings"]["workspacePromptIds"] == [OTHER_ID]
    assert noted(notes, "enabledCustomInstructionIds[1]: removed", "bad-uuid")
    assert noted(notes, "enabledCustomInstructionIds[2]: removed", "wrong-type")
    assert noted(notes, "settings.workspacePromptIds[0]: removed")


# --- enabledMiniPromptIds (sam.md §4.6) -----------------------------------------------------------------


def test_mini_prompt_ids_renamed():
    doc = example()
    del doc["enabledCustomInstructionIds"]
    doc["enabledMiniPromptIds"] = [OTHER_ID.lower()]
    out, notes = repair(doc)
    assert "enabledMiniPromptIds" not in out
    assert out["enabledCustomInstructionIds"] == [OTHER_ID]
    assert notes == ["enabledMiniPromptIds: renamed to enabledCustomInstructionIds (1 id(s) after merge)"]


def test_mini_prompt_ids_merged_and_deduplicated():
    doc = example()
    doc["enabledCustomInstructionIds"] = [CONV_ID]
    doc["enabledMiniPromptIds"] = [OTHER_ID, CONV_ID.lower(), "bad"]
    out, notes = repair(doc)
    assert out["enabledCustomInstructionIds"] == [CONV_ID, OTHER_ID]
    assert noted(notes, "renamed", "2 id(s)", "1 invalid dropped")


def test_mini_prompt_ids_not_a_list():
    doc = example()
    doc["enabledMiniPromptIds"] = "x"
    out, notes = repair(doc)
    assert "enabledMiniPromptIds" not in out
    assert out["enabledCustomInstructionIds"] == []
    assert noted(notes, "enabledMiniPromptIds: removed")


# --- Int fields ---------------------------------------------------------------------------------

INT_PATHS = [
    ("settings", "contextWindowSize"),
    ("settings", "maxTokens"),
    ("settings", "telemetry", "archiveRecallCount"),
    ("settings", "telemetry", "memoryRetrievalCount"),
    ("settings", "telemetry", "compressionEventCount"),
    ("settings", "telemetry", "contextOverflowCount"),
    ("messages", 4, "performanceMetrics", "tokenCount"),
    ("performanceMetrics", 0, "requestTokens"),
    ("performanceMetrics", 0, "responseTokens"),
]


@pytest.mark.parametrize("path", INT_PATHS)
def test_integral_floats_in_int_fields_become_ints(path):
    doc = mutate(example(), path, 4096.0)
    assert error_codes(doc) != []
    out, notes = repair(doc)
    node = out
    for c in path:
        node = node[c]
    assert node == 4096 and type(node) is int
    assert len(notes) == 1 and "4096.0 -> 4096 (Int field)" in notes[0]


# --- dropping undecodable messages, keeping the rest -------------------------------------------------

DROP_CASES = [
    (("messages", 2, "type"), "tool"),
    (("messages", 2, "toolStatus"), "cancelled"),
    (("messages", 2, "contentParts"), [{"type": "file"}]),
    (("messages", 2, "contentParts"), [{"type": "image_url", "image_url": {"url": "x", "detail": "max"}}]),
    (("messages", 2, "toolDisplayData"), {"action": "a", "actionDisplayName": "A", "status": "done"}),
    (("messages", 2, "id"), "not-a-uuid"),
    (("messages", 2, "id"), DELETE),
    (("messages", 2, "content"), 5),
    (("messages", 2, "isFromUser"), "no"),
    (("messages", 2, "timestamp"), "soon"),
    (("messages", 2), "a string"),
    (("messages", 2), None),
]


@pytest.mark.parametrize("path,value", DROP_CASES)
def test_one_undecodable_message_is_dropped_and_every_other_kept(path, value):
    doc = mutate(example(), path, value)
    out, notes = repair(doc)
    assert ids(out) == IDS[:2] + IDS[3:]
    assert out["messages"] == [m for i, m in enumerate(example()["messages"]) if i != 2]
    assert len(notes) == 1 and notes[0].startswith("messages[2]") and "dropped" in notes[0]


def test_a_dropped_message_gets_no_other_notes():
    doc = example()
    doc["messages"][2]["type"] = "tool"
    doc["messages"][2]["timestamp"] = "2026-08-10T14:02:15.5Z"
    del doc["messages"][2]["showReasoning"]
    out, notes = repair(doc)
    assert len(notes) == 1 and "dropped" in notes[0] and "bad-enum" in notes[0]


# --- filling missing required keys ------------------------------------------------------------------

FILL_CASES = [
    (0, "content", DELETE, ""),
    (0, "content", None, ""),
    (1, "showReasoning", DELETE, False),
    (1, "isStreaming", None, False),
    (2, "isToolMessage", DELETE, True),  # toolExecution
    (3, "isToolMessage", DELETE, True),  # thinking
    (4, "isToolMessage", DELETE, False),  # assistant
    (0, "isFromUser", DELETE, True),  # type user
    (4, "isFromUser", DELETE, False),
    (0, "type", DELETE, "user"),
    (1, "type", DELETE, "assistant"),
    (2, "type", None, "toolExecution"),
    (3, "type", DELETE, "thinking"),  # non-empty reasoningContent
    (1, "timestamp", DELETE, "2026-08-10T14:02:15Z"),  # from lastModified
]


@pytest.mark.parametrize("i,key,value,want", FILL_CASES)
def test_missing_required_key_is_filled(i, key, value, want):
    doc = mutate(example(), ("messages", i, key), value)
    out, notes = repair(doc)
    assert ids(out) == IDS
    assert out["messages"][i][key] == want
    assert len(notes) == 1 and notes[0].startswith(f"messages[{i}].{key}: ")
    assert json.dumps(want) in notes[0]


def test_role_is_never_guessed():
    doc = example()
    del doc["messages"][1]["type"]
    del doc["messages"][1]["isFromUser"]
    out, notes = repair(doc)
    assert ids(out) == IDS[:1] + IDS[2:]
    assert noted(notes, "messages[1]", "dropped")


def test_timestamp_without_last_modified_drops():
    doc = example()
    del doc["messages"][1]["timestamp"]
    del doc["messages"][1]["lastModified"]
    out, notes = repair(doc)
    assert ids(out) == IDS[:1] + IDS[2:]


def test_several_fills_in_one_message():
    doc = example()
    for key in ["content", "showReasoning", "isStreaming", "isToolMessage"]:
        del doc["messages"][2][key]
    doc["messages"][2]["type"] = None
    out, notes = repair(doc)
    m = out["messages"][2]
    assert (m["content"], m["showReasoning"], m["isStreaming"], m["isToolMessage"], m["type"]) == (
        "",
        False,
        False,
        False,
        "assistant",
    )  # no isToolMessage, no reasoning, not from the user: sam.md §4.3 says assistant
    assert len(notes) == 5


# --- removing broken optional parts ------------------------------------------------------------------


def test_broken_optional_keys_are_removed_not_the_message():
    doc = example()
    doc["messages"][2]["toolDuration"] = "1.4s"
    doc["messages"][2]["toolMetadata"] = {"ok": "v", "bad": 3}
    doc["messages"][2]["lastModified"] = "later"
    doc["messages"][2]["toolDisplayData"] = {"action": "a", "status": "success"}  # no actionDisplayName
    doc["messages"][1]["toolCalls"].append({"id": "call_2", "type": "function", "function": {"name": "f"}})
    doc["messages"][4]["performanceMetrics"]["tokensPerSecond"] = None
    out, notes = repair(doc)
    assert ids(out) == IDS
    m1, m2, m4 = out["messages"][1], out["messages"][2], out["messages"][4]
    assert "toolDuration" not in m2 and "lastModified" not in m2 and "toolDisplayData" not in m2
    assert m2["toolMetadata"] == {"ok": "v"}
    assert m1["toolCalls"] == example()["messages"][1]["toolCalls"]
    assert "performanceMetrics" not in m4
    assert noted(notes, "messages[1].toolCalls[1]: removed", "function.arguments")
    assert noted(notes, "messages[2].toolMetadata.bad: removed")
    assert noted(notes, "messages[2].toolDisplayData: removed", "actionDisplayName")
    assert len(notes) == 6


# --- settings ----------------------------------------------------------------------------------------


def test_invalid_required_settings_take_new_conversation_defaults():
    doc = example()
    s = doc["settings"]
    s.update(selectedModel=None, temperature="warm", topP=math.inf, enableTools=1)
    del s["contextWindowSize"], s["enableReasoning"]
    out, notes = repair(doc)
    s = out["settings"]
    assert (s["selectedModel"], s["temperature"], s["topP"], s["contextWindowSize"]) == ("", 0.7, 1.0, 8192)
    assert (s["enableReasoning"], s["enableTools"]) == (True, True)
    assert s["selectedPersonalityId"] == doc["settings"]["selectedPersonalityId"]  # the rest is kept
    assert len(notes) == 7  # topP: inf -> null, then null -> 1.0


def test_broken_optional_settings_removed():
    doc = example()
    doc["settings"]["selectedSystemPromptId"] = "default"
    doc["settings"]["thinkingEffort"] = 2
    doc["settings"]["telemetry"]["archiveRecallCount"] = "many"
    del doc["settings"]["telemetry"]["contextOverflowCount"]
    out, notes = repair(doc)
    s = out["settings"]
    assert "selectedSystemPromptId" not in s and "thinkingEffort" not in s
    assert s["telemetry"]["archiveRecallCount"] == 0 and s["telemetry"]["contextOverflowCount"] == 0
    assert s["telemetry"]["memoryRetrievalCount"] == 1


@pytest.mark.parametrize("value", ["defaults", [], 3])
def test_settings_not_an_object_are_removed(value):
    out, notes = repair(mutate(example(), ("settings",), value))
    assert "settings" not in out
    assert noted(notes, "settings: removed, SAM uses its defaults")


# --- the top level -----------------------------------------------------------------------------------


def test_top_level_fallbacks():
    doc = example()
    doc["id"] = "??"
    del doc["title"]
    doc["created"] = "then"
    del doc["updated"]
    out, notes = repair(doc, fallback_id=OTHER_ID.lower(), fallback_title="From folder", fallback_epoch=MTIME + 0.9)
    # created: the first message (the mtime is the last save); updated: the mtime
    assert (out["id"], out["title"], out["created"], out["updated"]) == (
        OTHER_ID,
        "From folder",
        "2026-08-10T14:02:11Z",
        MTIME_DATE,
    )
    assert noted(notes, 'id: "??" -> ') and noted(notes, 'title: missing -> "From folder"')
    assert len(notes) == 4


def test_top_level_without_fallbacks_uses_the_document():
    doc = example()
    del doc["title"], doc["created"], doc["updated"]
    out, _ = repair(doc)
    assert out["title"] == DEFAULT_TITLE
    assert out["created"] == "2026-08-10T14:02:11Z"  # earliest message date
    assert out["updated"] == "2026-08-10T14:02:24Z"  # latest message date


def test_valid_top_level_ignores_fallbacks():
    out, notes = repair(example(), fallback_id=OTHER_ID, fallback_title="x", fallback_epoch=0)
    assert notes == [] and out["id"] == CONV_ID and out["title"] == "Portland weekend trip"


def test_created_from_updated_when_there_are_no_messages():
    doc = example()
    doc["messages"] = []
    del doc["created"]
    out, _ = repair(doc)
    assert out["created"] == doc["updated"]


def test_messages_not_a_list():
    for value in [DELETE, None, {"0": {}}]:
        out, notes = repair(mutate(example(), ("messages",), value))
        assert out["messages"] == []
        assert noted(notes, "messages: ", "-> []")


def test_broken_top_level_optionals_removed():
    doc = example()
    doc.update(isPinned="yes", workingDirectoryBookmark="%%%", performanceMetrics={"x": 1})
    doc["sessionId"] = 7
    out, notes = repair(doc)
    for key in ["isPinned", "workingDirectoryBookmark", "performanceMetrics", "sessionId"]:
        assert key not in out
    assert len(notes) == 4


def test_broken_performance_records_dropped_one_by_one():
    doc = example()
    good = doc["performanceMetrics"][0]
    doc["performanceMetrics"] = [good, dict(good, success="yes"), dict(good, errorMessage=5)]
    out, notes = repair(doc)
    assert out["performanceMetrics"] == [good, good]  # errorMessage is optional: only it goes
    assert noted(notes, "performanceMetrics[1]: removed", "success")
    assert noted(notes, "performanceMetrics[2].errorMessage: removed")


@pytest.mark.parametrize("doc", [None, [], "x", 1, [example()]])
def test_not_an_object_raises_value_error(doc):
    with pytest.raises(ValueError, match="nothing to salvage"):
        repair_conversation(doc, fallback_id=CONV_ID, fallback_epoch=MTIME)


def test_no_usable_id_or_date_raises_value_error():
    with pytest.raises(ValueError, match="fallback_id"):
        repair_conversation(mutate(example(), ("id",), "x"))
    doc = example()
    doc["messages"] = []
    del doc["created"], doc["updated"]
    with pytest.raises(ValueError, match="fallback_epoch"):
        repair_conversation(doc)
    repair(doc, fallback_epoch=MTIME)


@pytest.mark.parametrize(
    "kw",
    [{"fallback_id": "folder"}, {"fallback_epoch": math.nan}, {"fallback_epoch": "1"}, {"fallback_title": 3}],
)
def test_invalid_fallbacks_raise(kw):
    with pytest.raises(ValueError):
        repair_conversation(example(), **kw)


def test_surrogates_and_non_finite_numbers():
    doc = example()
    doc["title"] = "trip \ud83d"
    doc["messages"][0]["content"] = "\udc00 hi"
    doc["messages"][2]["toolDuration"] = math.nan
    doc["future"] = {"\ud800": [math.inf]}
    assert error_codes(doc)
    out, notes = repair(doc)
    assert out["title"] == "trip \ufffd"
    assert out["messages"][0]["content"] == "\ufffd hi"
    assert out["messages"][2]["toolDuration"] is None  # null optional = absent for SAM
    assert out["future"] == {"\ufffd": [None]}
    assert len(notes) == 5


def test_a_thoroughly_broken_conversation():
    doc = example()
    doc["id"] = doc["id"].lower()
    doc["enabledMiniPromptIds"] = [OTHER_ID]
    doc["messages"][0]["timestamp"] = "2026-08-10T14:02:11.734Z"
    doc["messages"][1]["isStreaming"] = True
    doc["messages"][2]["toolStatus"] = "running"
    doc["messages"][3]["type"] = "reasoning"
    del doc["messages"][4]["showReasoning"]
    doc["settings"]["contextWindowSize"] = 128000.0
    del doc["updated"]
    out, notes = repair(doc, fallback_epoch=MTIME)
    assert ids(out) == IDS[:3] + IDS[4:]
    assert out["updated"] == MTIME_DATE
    assert len(notes) == 9


# --- property tests ------------------------------------------------------------------------------------


@settings(max_examples=300, deadline=None)
@given(json_values)
def test_any_json_value_repairs_or_raises_value_error(value):
    try:
        repair(value, fallback_id=CONV_ID, fallback_epoch=MTIME)
    except ValueError:
        assert not isinstance(value, dict)  # with fallbacks only a non-object is hopeless
    try:
        repair(value)
    except ValueError as exc:
        assert "nothing to salvage" in str(exc)


@settings(max_examples=500, deadline=None)
@given(st.sampled_from(EXAMPLE_PATHS), json_values | st.just(DELETE))
def test_mutated_example_repairs_and_keeps_every_other_message(path, value):
    doc = mutate(example(), path, value)
    out, notes = repair(doc, fallback_id=CONV_ID, fallback_title="t", fallback_epoch=MTIME)
    if path[0] == "messages" and len(path) >= 2:
        originals = [m for i, m in enumerate(example()["messages"]) if i != path[1]]
        assert all(m in out["messages"] for m in originals)
    elif path[0] != "messages":
        assert out["messages"] == example()["messages"]


message_keys = st.sampled_from(sorted(MESSAGE_KIND.fields))
plausible = {
    "id": st.sampled_from([OTHER_ID, OTHER_ID.lower(), "x"]),
    "type": st.sampled_from(["user", "assistant", "toolExecution", "thinking", "bot"]),
    "content": st.text(max_size=5),
    "timestamp": st.sampled_from(["2026-08-10T14:02:11Z", "2026-08-10T14:02:11.5+01:00", "x"]),
    "lastModified": st.sampled_from(["2026-08-10T14:02:11Z", "2026-08-10T14:02:11.5Z"]),
    "toolStatus": st.sampled_from(["running", "queued", "success", "bad"]),
    "reasoningContent": st.text(max_size=3),
}


@st.composite
def noisy_messages(draw):
    keys = draw(st.lists(message_keys, unique=True, max_size=len(MESSAGE_KIND.fields)))
    msg = {}
    for k in keys:
        if k in plausible and draw(st.booleans()):
            msg[k] = draw(plausible[k])
        elif k in ("showReasoning", "isStreaming", "isToolMessage", "isFromUser", "isPinned") and draw(st.booleans()):
            msg[k] = draw(st.booleans())
        else:
            msg[k] = draw(json_values)
    return msg


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(noisy_messages(), max_size=6))
def test_noisy_messages_repair(msgs):
    doc = example()
    doc["messages"] = msgs
    out, notes = repair(doc)
    assert len(out["messages"]) <= len(msgs)
    kept = sum(1 for n in notes if "dropped" in n and n.startswith("messages["))
    assert len(out["messages"]) == len(msgs) - kept


# --- salvage: text that is not JSON ----------------------------------------------------------------------

ORIGINAL = example()
MESSAGE_ENDS = []  # where each message's closing brace ends in EXAMPLE_15_1
_pos = 0
for _m in ORIGINAL["messages"]:
    _start = EXAMPLE_15_1.index('\n    {\n      "content"', _pos) + 5
    _, _end = json.JSONDecoder().raw_decode(EXAMPLE_15_1, _start)
    MESSAGE_ENDS.append(_end)
    _pos = _end


def test_salvage_valid_text_gets_everything():
    assert salvage_messages(EXAMPLE_15_1) == ORIGINAL["messages"]
    top = salvage_top_level(EXAMPLE_15_1)
    assert top == {k: v for k, v in ORIGINAL.items() if k != "messages"}
    assert salvage_messages(EXAMPLE_15_1.encode()) == ORIGINAL["messages"]


def test_salvage_truncated_at_every_offset():
    for cut in range(len(EXAMPLE_15_1) + 1):
        text = EXAMPLE_15_1[:cut]
        got = salvage_messages(text)
        complete = sum(1 for end in MESSAGE_ENDS if end <= cut)
        assert got == ORIGINAL["messages"][:complete], cut
        top = salvage_top_level(text)
        assert all(ORIGINAL[k] == v for k, v in top.items()), cut


def test_salvaged_truncated_tmp_file_repairs():
    # The realistic case: conversation.json.tmp cut off in the fourth message.
    text = EXAMPLE_15_1[: MESSAGE_ENDS[3] - 40]
    doc = salvage_top_level(text)
    doc["messages"] = salvage_messages(text)
    assert set(doc) == {"created", "enabledCustomInstructionIds", "folderId", "id", "isFromAPI", "isPinned", "messages"}
    out, notes = repair(doc, fallback_id=CONV_ID, fallback_title="Portland", fallback_epoch=MTIME)
    assert ids(out) == IDS[:3]
    assert (out["title"], out["updated"]) == ("Portland", MTIME_DATE)
    assert noted(notes, "title: missing") and noted(notes, "updated: missing")


def test_corrupt_byte_anywhere_in_one_message_keeps_the_others():
    start, end = MESSAGE_ENDS[1], MESSAGE_ENDS[2]  # the bytes of message 2 (and the comma before it)
    for i in range(start, end):
        for bad in ("\x00", "}", '"', "\n", "\ufffd"):
            text = EXAMPLE_15_1[:i] + bad + EXAMPLE_15_1[i + 1 :]
            got = salvage_messages(text)
            got_ids = [m.get("id") for m in got]
            for j in (0, 1, 3, 4):
                assert ORIGINAL["messages"][j] in got, (i, bad)
            assert len(got) <= 5 and got_ids.count(IDS[3]) == 1, (i, bad)


def test_zeroed_block_across_two_messages():
    start = MESSAGE_ENDS[1] - 30  # the end of message 1 ...
    end = MESSAGE_ENDS[2] - 5  # ... to the end of message 2
    text = EXAMPLE_15_1[:start] + "\x00" * (end - start) + EXAMPLE_15_1[end:]
    assert [m["id"] for m in salvage_messages(text)] == [IDS[0], IDS[3], IDS[4]]
    assert salvage_top_level(text)["title"] == ORIGINAL["title"]


def test_control_character_inside_a_string_is_tolerated():
    i = EXAMPLE_15_1.index("Portland first")
    text = EXAMPLE_15_1[:i] + "\x01" + EXAMPLE_15_1[i + 1 :]
    got = salvage_messages(text)
    assert len(got) == 5 and got[1]["content"].startswith("I'll check the weather forecast for \x01ortland")


def test_invalid_utf8_byte():
    data = EXAMPLE_15_1.encode()
    i = data.index(b"Portland first")
    got = salvage_messages(data[:i] + b"\xff" + data[i + 1 :])
    assert len(got) == 5 and "\ufffd" in got[1]["content"]


def test_compact_json_truncated_and_corrupted():
    compact = json.dumps(ORIGINAL, separators=(",", ":"), ensure_ascii=False)
    assert salvage_messages(compact) == ORIGINAL["messages"]
    assert salvage_top_level(compact) == {k: v for k, v in ORIGINAL.items() if k != "messages"}
    i = compact.index("Saturday: 24")
    broken = compact[:i] + "\x00\\q" + compact[i + 3 :]  # an invalid escape inside message 2
    assert [m["id"] for m in salvage_messages(broken)] == [IDS[0], IDS[1], IDS[3], IDS[4]]
    cut = compact[: compact.index(IDS[3]) + 10]
    assert salvage_messages(cut) == ORIGINAL["messages"][:3]


def test_damaged_header_still_finds_messages():
    text = "\x00\x00\x00" + EXAMPLE_15_1[3:]
    assert salvage_messages(text) == ORIGINAL["messages"]
    assert salvage_top_level(text) == {k: v for k, v in ORIGINAL.items() if k not in ("messages", "created")}


def test_another_writers_indentation():
    text = json.dumps(ORIGINAL, indent=4, ensure_ascii=False)
    assert salvage_top_level(text) == {k: v for k, v in ORIGINAL.items() if k != "messages"}
    i = text.index("Saturday: 24")
    broken = text[:i] + '"' + text[i + 1 :]
    assert [m["id"] for m in salvage_messages(broken)] == [IDS[0], IDS[1], IDS[3], IDS[4]]
    assert salvage_messages(text[: text.index(IDS[4])]) == ORIGINAL["messages"][:4]


@pytest.mark.parametrize(
    "text", ["", "{", "[]", "null", "garbage", '{"messages" : [', '{"messages":[1,"x",{}]}', "\n" * 5]
)
def test_salvage_of_garbage(text):
    assert all(isinstance(m, dict) for m in salvage_messages(text))
    assert isinstance(salvage_top_level(text), dict)


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=200), st.integers(min_value=0, max_value=len(EXAMPLE_15_1)), st.text(max_size=20))
def test_salvage_never_raises(garbage, at, insert):
    for text in (garbage, EXAMPLE_15_1[:at] + insert + EXAMPLE_15_1[at:], EXAMPLE_15_1[:at]):
        msgs = salvage_messages(text)
        top = salvage_top_level(text)
        assert all(isinstance(m, dict) for m in msgs) and isinstance(top, dict)
        doc = dict(top, messages=msgs)
        repair(doc, fallback_id=CONV_ID, fallback_epoch=MTIME)


def test_a_damaged_messages_key_or_bracket_still_finds_every_message():
    """One bad byte in `"messages" : [` hid the whole array: the elements, each on lines of their
    own, are found without it (and nothing else is taken for a message: performance records,
    settings and nested tool calls are not message-shaped)."""
    head = EXAMPLE_15_1.index('"messages"')
    for i in range(head, EXAMPLE_15_1.index("[", head) + 1):
        for bad in ("\x00", "\ufffd", "x", "{"):
            text = EXAMPLE_15_1[:i] + bad + EXAMPLE_15_1[i + 1 :]
            assert salvage_messages(text) == ORIGINAL["messages"], (i, bad)


def test_a_zeroed_head_and_a_cut_tail_keep_the_messages_between():
    text = "\x00" * (MESSAGE_ENDS[0] + 5) + EXAMPLE_15_1[MESSAGE_ENDS[0] + 5 : MESSAGE_ENDS[3] - 10]
    assert [m["id"] for m in salvage_messages(text)] == IDS[1:3]


def test_messages_under_a_misspelt_key_of_valid_json_are_found():
    text = EXAMPLE_15_1.replace('"messages"', '"messagfs"', 1)
    assert json.loads(text)  # still valid JSON: SAM would load it with no messages
    assert salvage_messages(text) == ORIGINAL["messages"]


def test_an_integer_past_64_bits_is_not_rounded_to_the_limit():
    import orjson

    value = orjson.loads(b"-9223372036854775809")  # a float equal to -2**63: the exact number is lost
    doc = mutate(example(), ("performanceMetrics", 0, "requestTokens"), value)
    out, notes = repair(doc)
    assert not any("-9223372036854775808" in n for n in notes)
    metrics = out.get("performanceMetrics") or []
    assert all(m.get("requestTokens") != -(2**63) for m in metrics)
    assert [p for p in validate_conversation(out) if p.severity == ERROR] == []
