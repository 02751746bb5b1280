"""Tests for samctl.stores.sam.schema: SAM's decoder rules (sam.md §3, §4, §4.5.8).

The sam.md §15.1 example is copied verbatim below; the encode and repair tests
load it from here.
"""

from __future__ import annotations

import copy
import json
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from samctl.stores.sam.schema import (
    CANONICAL_ID_RE,
    ERROR,
    ERROR_CODES,
    UUID_RE,
    WARNING,
    WARNING_CODES,
    flag_problem,
    format_date,
    is_uuid,
    message_errors,
    parse_date,
    validate_conversation,
    would_load,
)

# --- sam.md §15.1, verbatim ------------------------------------------------------

EXAMPLE_15_1 = r"""{
  "created" : "2026-08-10T14:02:05Z",
  "enabledCustomInstructionIds" : [],
  "folderId" : "7F7502A0-D8E9-4BA6-9A8B-27F7AD92CE95",
  "id" : "8B58CBC4-ACA7-4811-AE66-C01921690310",
  "isFromAPI" : false,
  "isPinned" : false,
  "messages" : [
    {
      "content" : "Plan a weekend trip to Portland within a $500 budget.",
      "id" : "F3C23113-9455-4E36-A06C-0599778A17C2",
      "importance" : 0.9,
      "isFromUser" : true,
      "isPinned" : true,
      "isStreaming" : false,
      "isSystemGenerated" : false,
      "isToolMessage" : false,
      "lastModified" : "2026-08-10T14:02:11Z",
      "showReasoning" : false,
      "timestamp" : "2026-08-10T14:02:11Z",
      "type" : "user"
    },
    {
      "content" : "I'll check the weather forecast for Portland first.",
      "id" : "9AC5E24F-4FF9-4276-B330-267E7027DD34",
      "importance" : 0.5,
      "isFromUser" : false,
      "isPinned" : false,
      "isStreaming" : false,
      "isSystemGenerated" : false,
      "isToolMessage" : false,
      "lastModified" : "2026-08-10T14:02:15Z",
      "showReasoning" : false,
      "timestamp" : "2026-08-10T14:02:13Z",
      "toolCalls" : [
        {
          "function" : {
            "arguments" : "{\"location\":\"Portland, OR\",\"operation\":\"forecast\"}",
            "name" : "weather_operations"
          },
          "id" : "call_wx_01",
          "type" : "function"
        }
      ],
      "type" : "assistant"
    },
    {
      "content" : "Saturday: 24°C, sunny\nSunday: 19°C, light rain",
      "id" : "78A693F7-3BFB-48A2-B92E-FB5FE69B1643",
      "importance" : 0.5,
      "isFromUser" : false,
      "isPinned" : false,
      "isStreaming" : false,
      "isSystemGenerated" : false,
      "isToolMessage" : true,
      "lastModified" : "2026-08-10T14:02:17Z",
      "showReasoning" : false,
      "timestamp" : "2026-08-10T14:02:15Z",
      "toolCallId" : "call_wx_01",
      "toolDetails" : [
        "Location: Portland, OR"
      ],
      "toolDuration" : 1.42,
      "toolIcon" : "cloud.sun",
      "toolName" : "weather_operations",
      "toolStatus" : "success",
      "type" : "toolExecution"
    },
    {
      "content" : "",
      "id" : "401441D1-ABC0-408D-B124-F84C3CB36D87",
      "importance" : 0.5,
      "isFromUser" : false,
      "isPinned" : false,
      "isStreaming" : false,
      "isSystemGenerated" : false,
      "isToolMessage" : true,
      "lastModified" : "2026-08-10T14:02:18Z",
      "reasoningContent" : "Forecast is in. Budget is tight, so suggest one neighborhood and ask before booking.",
      "showReasoning" : false,
      "timestamp" : "2026-08-10T14:02:18Z",
      "toolIcon" : "brain.head.profile",
      "type" : "thinking"
    },
    {
      "content" : "Saturday looks sunny (24°C) and Sunday brings light rain. Which neighborhood would you like to stay in?",
      "id" : "78F51783-567F-4E95-9943-7FFF75DFEC5C",
      "importance" : 0.85,
      "isFromUser" : false,
      "isPinned" : false,
      "isStreaming" : false,
      "isSystemGenerated" : false,
      "isToolMessage" : false,
      "lastModified" : "2026-08-10T14:02:24Z",
      "performanceMetrics" : {
        "processingTime" : 2.37,
        "timeToFirstToken" : 0.58,
        "tokenCount" : 41,
        "tokensPerSecond" : 17.3
      },
      "processingTime" : 2.37,
      "showReasoning" : false,
      "timestamp" : "2026-08-10T14:02:19Z",
      "type" : "assistant"
    }
  ],
  "performanceMetrics" : [
    {
      "id" : "36BFE85B-D430-4387-8BA7-188A24B4F7DF",
      "model" : "gpt-4.1",
      "provider" : "github_copilot",
      "requestTokens" : 1843,
      "responseTokens" : 96,
      "success" : true,
      "timestamp" : "2026-08-10T14:02:24Z",
      "timeToFirstToken" : 0.61,
      "totalLatency" : 2.94
    }
  ],
  "sessionId" : "8B58CBC4-ACA7-4811-AE66-C01921690310",
  "settings" : {
    "contextWindowSize" : 128000,
    "draftMessage" : "",
    "enableReasoning" : true,
    "enableTools" : true,
    "scrollLockEnabled" : true,
    "selectedModel" : "github_copilot\/gpt-4.1",
    "selectedPersonalityId" : "00000000-0000-0000-0000-000000000001",
    "selectedSystemPromptId" : "00000000-0000-0000-0000-000000000001",
    "showAdvancedParameters" : false,
    "showingMemoryPanel" : false,
    "showingPerformanceMetrics" : false,
    "showingWorkingDirectoryPanel" : false,
    "telemetry" : {
      "archiveRecallCount" : 0,
      "compressionEventCount" : 0,
      "contextOverflowCount" : 0,
      "lastUpdated" : "2026-08-10T14:02:12Z",
      "memoryRetrievalCount" : 1
    },
    "temperature" : 0.7,
    "thinkingEffort" : "high",
    "topP" : 1,
    "useSharedData" : false,
    "workspacePromptIds" : []
  },
  "title" : "Portland weekend trip",
  "updated" : "2026-08-10T14:03:40Z",
  "workingDirectory" : "\/Users\/alex\/SAM\/Portland weekend trip"
}"""

CONV_ID = "8B58CBC4-ACA7-4811-AE66-C01921690310"
DELETE = object()


def example() -> dict:
    """A fresh decoded copy of the sam.md §15.1 conversation."""
    return json.loads(EXAMPLE_15_1)


def mutate(doc: dict, path: tuple, value) -> dict:
    """Set (or, with DELETE, remove) ``doc`` at ``path``; returns ``doc``."""
    node = doc
    for c in path[:-1]:
        node = node[c]
    if value is DELETE:
        del node[path[-1]]
    else:
        node[path[-1]] = value
    return doc


def codes(problems, severity=None):
    return [(p.code, p.where) for p in problems if severity is None or p.severity == severity]


def errors(doc):
    return codes(validate_conversation(doc), ERROR)


def warnings(doc):
    return codes(validate_conversation(doc), WARNING)


# JSON values of every kind, nested a little.
json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=20)
    | st.sampled_from([CONV_ID, CONV_ID.lower(), "2026-08-10T14:02:11Z", "2026-08-10T14:02:11.5Z", "running"]),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=20,
)


def all_paths(value, path=()):
    """Every path inside a decoded JSON value (not the root)."""
    out = []
    if isinstance(value, dict):
        items = value.items()
    elif isinstance(value, list):
        items = enumerate(value)
    else:
        return out
    for k, v in items:
        out.append(path + (k,))
        out.extend(all_paths(v, path + (k,)))
    return out


EXAMPLE_PATHS = all_paths(example())


# --- ids and dates ----------------------------------------------------------------


def test_uuid_rules():
    assert is_uuid(CONV_ID) and is_uuid(CONV_ID.lower())
    for bad in [
        "",
        CONV_ID + "\n",
        CONV_ID[:-1],
        "{" + CONV_ID + "}",
        CONV_ID.replace("-", ""),
        " " + CONV_ID,
        5,
        None,
    ]:
        assert not is_uuid(bad), bad
    assert UUID_RE.match("8b58cbc4-ACA7-4811-ae66-C01921690310")
    assert CANONICAL_ID_RE.match(CONV_ID)
    assert not CANONICAL_ID_RE.match(CONV_ID.lower())
    assert not CANONICAL_ID_RE.match(CONV_ID + "\n")


def test_parse_date_whole_seconds_z():
    assert parse_date("1970-01-01T00:00:00Z") == 0
    assert parse_date("2026-08-10T14:02:11Z") == 1786370531
    assert parse_date("2026-08-10T14:02:11Z", allow_fraction=False) == 1786370531


def test_parse_date_offsets_and_fractions():
    assert parse_date("2026-08-10T16:02:11+02:00") == 1786370531
    assert parse_date("2026-08-10T09:02:11-05:00") == 1786370531
    assert parse_date("2026-08-10T14:02:11.25Z") == 1786370531.25
    assert parse_date("2026-08-10T14:02:11.25Z", allow_fraction=False) is None


@pytest.mark.parametrize(
    "bad",
    [
        "2026-08-10 14:02:11Z",
        "2026-08-10T14:02:11",
        "2026-08-10t14:02:11z",
        "2026-13-10T14:02:11Z",
        "2026-02-30T14:02:11Z",
        "2026-08-10T24:00:00Z",
        "2026-08-10T14:02:60Z",
        "0000-01-01T00:00:00Z",
        "2026-08-10T14:02:11+0200",
        "2026-08-10T14:02:11+24:00",
        "2026-08-10T14:02:11Z\n",
        "２０２６-08-10T14:02:11Z",
        "2026-08-10T14:02:11.Z",
        "",
        None,
        1786370531,
    ],
)
def test_parse_date_rejects(bad):
    assert parse_date(bad) is None


def test_format_date_is_exact_and_truncates():
    assert format_date(1786370531) == "2026-08-10T14:02:11Z"
    assert format_date(1786370531.999) == "2026-08-10T14:02:11Z"
    assert format_date(-0.5) == "1969-12-31T23:59:59Z"
    assert format_date(parse_date("0001-01-01T00:00:00Z")) == "0001-01-01T00:00:00Z"
    for bad in [math.nan, math.inf, 1e20, "x"]:
        with pytest.raises(ValueError):
            format_date(bad)


@given(st.integers(min_value=-62135596800, max_value=253402300799))
def test_format_parse_round_trip(epoch):
    s = format_date(epoch)
    assert parse_date(s, allow_fraction=False) == epoch
    assert format_date(parse_date(s)) == s


# --- the example is clean -------------------------------------------------------------


def test_example_has_no_problems():
    assert validate_conversation(example()) == []
    assert would_load(example())


def test_problem_fields():
    doc = mutate(example(), ("messages", 3, "type"), "reasoning")
    (p,) = validate_conversation(doc)
    assert (p.severity, p.code, p.where) == (ERROR, "bad-enum", "messages[3].type")
    assert p.path == ("messages", 3, "type")
    assert "reasoning" in p.reason
    assert p.line().startswith("error: bad-enum: messages[3].type: ")


# --- errors: exactly the sam.md §4.5.8 rules ---------------------------------------------------

ERROR_CASES = [
    # required keys of ConversationData (sam.md §4.1)
    (("id",), DELETE, "missing-key", "id"),
    (("title",), None, "null-key", "title"),
    (("created",), DELETE, "missing-key", "created"),
    (("updated",), DELETE, "missing-key", "updated"),
    (("messages",), DELETE, "missing-key", "messages"),
    (("messages",), {}, "wrong-type", "messages"),
    # settings (sam.md §4.2): required only when settings is present
    (("settings", "selectedModel"), DELETE, "missing-key", "settings.selectedModel"),
    (("settings", "temperature"), "0.7", "wrong-type", "settings.temperature"),
    (("settings", "topP"), None, "null-key", "settings.topP"),
    (("settings", "contextWindowSize"), 8192.5, "wrong-type", "settings.contextWindowSize"),
    (("settings", "contextWindowSize"), 8192.0, "integral-float", "settings.contextWindowSize"),
    (("settings", "contextWindowSize"), 2**63, "out-of-range", "settings.contextWindowSize"),
    (("settings", "contextWindowSize"), True, "wrong-type", "settings.contextWindowSize"),
    (("settings", "maxTokens"), "4096", "wrong-type", "settings.maxTokens"),
    (("settings", "enableReasoning"), 1, "wrong-type", "settings.enableReasoning"),
    (("settings", "enableTools"), DELETE, "missing-key", "settings.enableTools"),
    (("settings", "selectedSystemPromptId"), "default", "bad-uuid", "settings.selectedSystemPromptId"),
    (("settings", "selectedPersonalityId"), 1, "wrong-type", "settings.selectedPersonalityId"),
    (("settings", "sharedTopicId"), "", "bad-uuid", "settings.sharedTopicId"),
    (("settings", "workspacePromptIds"), ["nope"], "bad-uuid", "settings.workspacePromptIds[0]"),
    (("settings", "thinkingEffort"), 3, "wrong-type", "settings.thinkingEffort"),
    (("settings", "draftMessage"), ["x"], "wrong-type", "settings.draftMessage"),
    (("settings", "telemetry", "lastUpdated"), DELETE, "missing-key", "settings.telemetry.lastUpdated"),
    (("settings", "telemetry", "archiveRecallCount"), None, "null-key", "settings.telemetry.archiveRecallCount"),
    (("settings", "telemetry", "memoryRetrievalCount"), 1.5, "wrong-type", "settings.telemetry.memoryRetrievalCount"),
    (("settings", "telemetry"), [], "not-object", "settings.telemetry"),
    (("settings",), "defaults", "not-object", "settings"),
    # dates
    (("created",), "2026-08-10T14:02:05.123Z", "fractional-date", "created"),
    (("updated",), "yesterday", "bad-date", "updated"),
    (("updated",), 1786370531, "wrong-type", "updated"),
    (("messages", 0, "timestamp"), "2026-08-10", "bad-date", "messages[0].timestamp"),
    (("messages", 0, "lastModified"), "2026-08-10T14:02:11.000001Z", "fractional-date", "messages[0].lastModified"),
    (("performanceMetrics", 0, "timestamp"), "", "bad-date", "performanceMetrics[0].timestamp"),
    # UUIDs
    (("id",), "8B58CBC4ACA74811AE66C01921690310", "bad-uuid", "id"),
    (("messages", 2, "id"), "msg-3", "bad-uuid", "messages[2].id"),
    (("enabledCustomInstructionIds",), [CONV_ID, "x"], "bad-uuid", "enabledCustomInstructionIds[1]"),
    (("enabledCustomInstructionIds",), "x", "wrong-type", "enabledCustomInstructionIds"),
    (("performanceMetrics", 0, "id"), None, "null-key", "performanceMetrics[0].id"),
    # EnhancedMessage (sam.md §4.3)
    (("messages", 1, "content"), DELETE, "missing-key", "messages[1].content"),
    (("messages", 1, "content"), None, "null-key", "messages[1].content"),
    (("messages", 1, "isFromUser"), "false", "wrong-type", "messages[1].isFromUser"),
    (("messages", 1, "showReasoning"), DELETE, "missing-key", "messages[1].showReasoning"),
    (("messages", 1, "isStreaming"), DELETE, "missing-key", "messages[1].isStreaming"),
    (("messages", 1, "isToolMessage"), 0, "wrong-type", "messages[1].isToolMessage"),
    (("messages", 1, "type"), "system", "bad-enum", "messages[1].type"),
    (("messages", 1, "type"), "User", "bad-enum", "messages[1].type"),
    (("messages", 2, "toolStatus"), "done", "bad-enum", "messages[2].toolStatus"),
    (("messages", 2, "toolDuration"), "1.42", "wrong-type", "messages[2].toolDuration"),
    (("messages", 2, "toolDuration"), math.inf, "non-finite", "messages[2].toolDuration"),
    (("messages", 2, "toolDuration"), 10**400, "out-of-range", "messages[2].toolDuration"),
    (("messages", 2, "toolDetails"), ["ok", None], "wrong-type", "messages[2].toolDetails[1]"),
    (("messages", 2, "toolMetadata"), {"a.b": 1}, "wrong-type", 'messages[2].toolMetadata["a.b"]'),
    (("messages", 0, "importance"), "high", "wrong-type", "messages[0].importance"),
    (("messages", 0, "isPinned"), "yes", "wrong-type", "messages[0].isPinned"),
    (("messages", 0), "hello", "not-object", "messages[0]"),
    # tool calls (sam.md §4.4.3)
    (
        ("messages", 1, "toolCalls", 0, "function", "arguments"),
        {"location": "x"},
        "wrong-type",
        "messages[1].toolCalls[0].function.arguments",
    ),
    (("messages", 1, "toolCalls", 0, "function"), DELETE, "missing-key", "messages[1].toolCalls[0].function"),
    (("messages", 1, "toolCalls", 0, "type"), None, "null-key", "messages[1].toolCalls[0].type"),
    (("messages", 1, "toolCalls", 0, "id"), 7, "wrong-type", "messages[1].toolCalls[0].id"),
    # message metrics (sam.md §4.4.5)
    (
        ("messages", 4, "performanceMetrics", "tokenCount"),
        41.0,
        "integral-float",
        "messages[4].performanceMetrics.tokenCount",
    ),
    (
        ("messages", 4, "performanceMetrics", "tokensPerSecond"),
        DELETE,
        "missing-key",
        "messages[4].performanceMetrics.tokensPerSecond",
    ),
    # API metrics (sam.md §4.4.6)
    (("performanceMetrics", 0, "requestTokens"), 1843.5, "wrong-type", "performanceMetrics[0].requestTokens"),
    (("performanceMetrics", 0, "success"), "true", "wrong-type", "performanceMetrics[0].success"),
    (("performanceMetrics", 0, "model"), DELETE, "missing-key", "performanceMetrics[0].model"),
    (("performanceMetrics", 0, "errorMessage"), 3, "wrong-type", "performanceMetrics[0].errorMessage"),
    # top-level optionals
    (("isPinned",), "false", "wrong-type", "isPinned"),
    (("folderId",), 3, "wrong-type", "folderId"),
    (("workingDirectoryBookmark",), "not base64!", "bad-base64", "workingDirectoryBookmark"),
    (("workingDirectoryBookmark",), "YWJj", None, None),  # valid base64 is fine
    (("title",), "bad \ud800 title", "bad-string", "title"),
    (("somethingNew",), {"\udc80": "x"}, "bad-string", 'somethingNew["\udc80"]'),
]


@pytest.mark.parametrize("path,value,code,where", ERROR_CASES)
def test_each_rejection_rule_is_an_error(path, value, code, where):
    doc = mutate(example(), path, value)
    got = errors(doc)
    if code is None:
        assert got == []
        assert would_load(doc)
    else:
        assert got == [(code, where)]
        assert not would_load(doc)


CONTENT_PART_CASES = [
    ({"type": "image_url", "image_url": {"url": "file:///tmp/a.png"}}, []),
    ({"type": "image_url", "image_url": {"url": "file:///tmp/a.png", "detail": "auto"}}, []),
    ({"type": "text", "text": "hi"}, []),
    ({"type": "video_url", "video_url": "file:///v.mp4"}, []),
    ({"type": "audio_url", "audio_url": "file:///a.m4a"}, []),
    ({"type": "file", "file": "x"}, [("bad-enum", "messages[4].contentParts[0].type")]),
    ({"text": "hi"}, [("missing-key", "messages[4].contentParts[0].type")]),
    ({"type": "text"}, [("missing-key", "messages[4].contentParts[0].text")]),
    (
        {"type": "image_url", "image_url": {"url": "x", "detail": "max"}},
        [("bad-enum", "messages[4].contentParts[0].image_url.detail")],
    ),
    (
        {"type": "image_url", "image_url": {"detail": "low"}},
        [("missing-key", "messages[4].contentParts[0].image_url.url")],
    ),
    ({"type": "image_url", "image_url": "file:///a.png"}, [("not-object", "messages[4].contentParts[0].image_url")]),
    ("text", [("not-object", "messages[4].contentParts[0]")]),
]


@pytest.mark.parametrize("part,expected", CONTENT_PART_CASES)
def test_content_parts(part, expected):
    doc = mutate(example(), ("messages", 4, "contentParts"), [part])
    assert errors(doc) == expected


TOOL_DISPLAY_OK = {"action": "forecast", "actionDisplayName": "Forecast", "status": "success"}


@pytest.mark.parametrize(
    "change,expected",
    [
        ({}, []),
        ({"status": "finished"}, [("bad-enum", "messages[2].toolDisplayData.status")]),
        ({"action": None}, [("null-key", "messages[2].toolDisplayData.action")]),
        ({"details": ["a", 1]}, [("wrong-type", "messages[2].toolDisplayData.details[1]")]),
        ({"metadata": {"k": "v"}, "summary": "s", "icon": "i"}, []),
        ({"metadata": ["k"]}, [("wrong-type", "messages[2].toolDisplayData.metadata")]),
    ],
)
def test_tool_display_data(change, expected):
    tdd = dict(TOOL_DISPLAY_OK, **change)
    doc = mutate(example(), ("messages", 2, "toolDisplayData"), tdd)
    assert errors(doc) == expected


def test_required_missing_from_tool_display_data():
    tdd = dict(TOOL_DISPLAY_OK)
    del tdd["actionDisplayName"]
    doc = mutate(example(), ("messages", 2, "toolDisplayData"), tdd)
    assert errors(doc) == [("missing-key", "messages[2].toolDisplayData.actionDisplayName")]


def test_optional_keys_accept_null_and_absence():
    doc = example()
    for key in [
        "sessionId",
        "folderId",
        "isPinned",
        "isFromAPI",
        "workingDirectory",
        "performanceMetrics",
        "enabledCustomInstructionIds",
    ]:
        doc[key] = None
    doc["settings"]["maxTokens"] = None
    doc["settings"]["selectedSystemPromptId"] = None
    del doc["settings"]["telemetry"]
    doc["messages"][0]["lastModified"] = None
    doc["messages"][1]["toolCalls"] = None
    doc["messages"][2]["toolStatus"] = None
    doc["messages"][2]["toolCallId"] = None  # also removes the pairing
    del doc["messages"][4]["performanceMetrics"]
    assert errors(doc) == []
    del doc["settings"]
    assert errors(doc) == []


def test_unknown_keys_are_ignored():
    doc = example()
    doc["contextMessages"] = [{"anything": 1}]
    doc["settings"]["sdSteps"] = "x"
    doc["messages"][0]["future"] = {"nested": [1, 2]}
    assert validate_conversation(doc) == []


def test_lowercase_uuids_load():
    doc = example()
    doc["id"] = doc["id"].lower()
    doc["messages"][0]["id"] = doc["messages"][0]["id"].lower()
    assert errors(doc) == []


def test_offset_dates_load_fractional_do_not():
    doc = example()
    doc["created"] = "2026-08-10T16:02:05+02:00"
    assert errors(doc) == []
    doc["updated"] = "2026-08-10T16:02:05.5+02:00"
    assert errors(doc) == [("fractional-date", "updated")]


def test_every_problem_is_reported_not_just_the_first():
    doc = example()
    doc["id"] = "x"
    doc["messages"][0]["type"] = "bot"
    doc["messages"][3]["timestamp"] = "2026-08-10T14:02:18.5Z"
    del doc["messages"][4]["content"]
    doc["settings"]["telemetry"]["lastUpdated"] = 0
    assert sorted(errors(doc)) == sorted(
        [
            ("bad-uuid", "id"),
            ("bad-enum", "messages[0].type"),
            ("fractional-date", "messages[3].timestamp"),
            ("missing-key", "messages[4].content"),
            ("wrong-type", "settings.telemetry.lastUpdated"),
        ]
    )


@pytest.mark.parametrize("doc", [None, [], "x", 3, 2.5, True, [example()]])
def test_top_level_not_object(doc):
    assert codes(validate_conversation(doc)) == [("not-object", "$")]
    assert not would_load(doc)


# --- warnings ------------------------------------------------------------------------


def test_orphan_tool_result_is_a_warning():
    doc = example()
    del doc["messages"][1]["toolCalls"]
    assert errors(doc) == []
    assert warnings(doc) == [("orphan-tool-result", "messages[2].toolCallId")]
    assert would_load(doc)


def test_duplicate_message_ids_compare_case_insensitively():
    doc = example()
    doc["messages"][3]["id"] = doc["messages"][1]["id"].lower()
    assert warnings(doc) == [("duplicate-message-id", "messages[3].id")]
    assert "messages[1]" in validate_conversation(doc)[0].reason


def test_streaming_and_running_tools():
    doc = example()
    doc["messages"][1]["isStreaming"] = True
    doc["messages"][2]["toolStatus"] = "running"
    doc["messages"][2]["toolDisplayData"] = dict(TOOL_DISPLAY_OK, status="queued")
    assert warnings(doc) == [
        ("streaming", "messages[1].isStreaming"),
        ("tool-running", "messages[2].toolStatus"),
        ("tool-running", "messages[2].toolDisplayData.status"),
    ]
    assert would_load(doc)


def test_modified_before_created():
    doc = example()
    doc["messages"][1]["lastModified"] = "2026-08-10T14:02:12Z"  # timestamp is 14:02:13
    assert warnings(doc) == [("modified-before-created", "messages[1].lastModified")]


def test_renamed_key():
    doc = example()
    doc["enabledMiniPromptIds"] = [CONV_ID]
    assert warnings(doc) == [("renamed-key", "enabledMiniPromptIds")]
    assert would_load(doc)


@pytest.mark.parametrize(
    "msg,bad",
    [
        ({"type": "user", "isFromUser": True, "isToolMessage": False}, False),
        ({"type": "assistant", "isFromUser": False, "isToolMessage": False}, False),
        ({"type": "toolExecution", "isFromUser": False, "isToolMessage": True}, False),
        ({"type": "thinking", "isFromUser": False, "isToolMessage": True}, False),
        ({"type": "thinking", "isFromUser": False, "isToolMessage": False, "reasoningContent": "r"}, False),
        ({"type": "subagentExecution", "isFromUser": False, "isToolMessage": False}, False),
        ({"type": "systemStatus", "isFromUser": False, "isToolMessage": False}, False),
        ({"type": "user", "isFromUser": False, "isToolMessage": False}, False),  # "the given type"
        ({"type": "toolExecution", "isFromUser": True, "isToolMessage": True}, False),
        ({"type": "toolExecution", "isFromUser": False, "isToolMessage": False}, True),
        ({"type": "assistant", "isFromUser": False, "isToolMessage": True}, True),
        ({"type": "user", "isFromUser": True, "isToolMessage": True}, True),
        ({"type": "assistant", "isFromUser": True, "isToolMessage": False}, True),
        ({"type": "thinking", "isFromUser": False, "isToolMessage": False}, True),
        ({"type": "thinking", "isFromUser": False, "isToolMessage": False, "reasoningContent": ""}, True),
        ({"type": "assistant", "isFromUser": False, "isToolMessage": False, "reasoningContent": "r"}, True),
        ({"type": "nope", "isFromUser": True, "isToolMessage": True}, False),  # not judged: an error instead
    ],
)
def test_type_flag_derivation(msg, bad):
    assert (flag_problem(msg) is not None) == bad


def test_type_flags_warning_in_a_document():
    doc = example()
    doc["messages"][2]["isToolMessage"] = False
    assert warnings(doc) == [("type-flags", "messages[2].type")]


def test_codes_are_documented():
    doc = example()
    doc["enabledMiniPromptIds"] = []
    doc["messages"][1]["isStreaming"] = True
    seen = {p.code for p in validate_conversation(doc)}
    for case in ERROR_CASES:
        if case[2]:
            seen.add(case[2])
    assert seen <= set(ERROR_CODES) | set(WARNING_CODES)
    assert not set(ERROR_CODES) & set(WARNING_CODES)


# --- message_errors ------------------------------------------------------------------


def test_message_errors_alone_and_indexed():
    msg = example()["messages"][2]
    assert message_errors(msg) == []
    msg["toolStatus"] = "done"
    del msg["showReasoning"]
    assert sorted(codes(message_errors(msg))) == [("bad-enum", "toolStatus"), ("missing-key", "showReasoning")]
    assert sorted(codes(message_errors(msg, 7))) == [
        ("bad-enum", "messages[7].toolStatus"),
        ("missing-key", "messages[7].showReasoning"),
    ]
    assert codes(message_errors(None)) == [("not-object", "$")]
    assert all(p.severity == ERROR for p in message_errors(msg))


def test_message_errors_ignore_warnings():
    msg = example()["messages"][2]
    msg["isStreaming"] = True
    msg["toolStatus"] = "running"
    assert message_errors(msg) == []


# --- robustness: never raises -----------------------------------------------------------


def test_deep_nesting_and_huge_strings():
    deep = []
    for _ in range(100_000):
        deep = [deep]
    big = "x" * 20_000_000
    doc = example()
    doc["unknown"] = deep
    doc["messages"][0]["content"] = big
    doc["messages"][1]["toolMetadata"] = {"k": deep}
    doc["messages"].append(deep)
    got = validate_conversation(doc)
    assert ("wrong-type", "messages[1].toolMetadata.k") in codes(got)
    assert ("not-object", "messages[5]") in codes(got)
    assert validate_conversation(deep) == validate_conversation([])
    bad = {"a": deep, "\ud800": big}
    assert ("bad-string", '["\ud800"]') in codes(validate_conversation(bad))


@settings(max_examples=300, deadline=None)
@given(json_values)
def test_never_raises_on_any_json_value(value):
    problems = validate_conversation(value)
    assert all(p.severity in (ERROR, WARNING) for p in problems)
    assert all(p.code in ERROR_CODES or p.code in WARNING_CODES for p in problems)
    message_errors(value)
    would_load(value)


@settings(max_examples=500, deadline=None)
@given(st.sampled_from(EXAMPLE_PATHS), json_values | st.just(DELETE))
def test_never_raises_on_a_mutated_example(path, value):
    doc = mutate(example(), path, value)
    before = copy.deepcopy(doc)
    problems = validate_conversation(doc)
    assert doc == before or doc != doc  # never modified (NaN makes a dict unequal to itself)
    assert all(p.code in ERROR_CODES or p.code in WARNING_CODES for p in problems)
    assert would_load(doc) == (not any(p.severity == ERROR for p in problems))
    # an error is only ever reported at or inside the mutated place, or on a key it holds
    for p in problems:
        if p.severity == ERROR:
            assert p.path[: len(path)] == path or p.path[: len(path) - 1] == path[:-1], (p, path)


# --- integers past 64 bits: orjson reads them as floats -------------------------------------------


@pytest.mark.parametrize(
    "text", [b"-9223372036854775809", b"9223372036854775808000", b"123456789012345678901234567890"]
)
def test_an_integer_past_64_bits_is_out_of_range_not_an_integral_float(text):
    import orjson

    value = orjson.loads(text)
    assert isinstance(value, float)  # what makes the case: the exact integer is gone
    doc = mutate(example(), ("settings", "contextWindowSize"), value)
    probs = [p for p in validate_conversation(doc) if p.severity == ERROR]
    assert [(p.code, p.where) for p in probs] == [("out-of-range", "settings.contextWindowSize")]
    assert "64-bit Int" in probs[0].reason and "write an integer" not in probs[0].reason
