"""Compaction over real RPC: manual, threshold, overflow recovery and abort.

Our process is checked against the exact record sequences of the reference; with the reference pi
1.6.0 installed, the same conversations are played against both and compared, and session files
compacted by one are opened by the other.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from tests.support.rpc_compare import (
    Conversation,
    Record,
    Scenario,
    Workspace,
    compare,
    flow,
    needs_reference,
    only,
    play,
    play_once,
)
from tests.support.run_once import shared_run

LONG = "lorem ipsum dolor sit amet " * 20  # 540 characters, about 135 estimated tokens
SUMMARY = "## Goal\nKeep the tests green.\n"
TOO_LONG = {"status": 400, "body": {"error": {"message": "prompt is too long: 250000 tokens > 200000 maximum"}}}
OVERFLOW_RETRY_FAILED = ("Context overflow recovery failed after one compact-and-retry attempt. "
                         "Try reducing context or switching to a larger-context model.")
RESULT_KEYS = ["details", "estimatedTokensAfter", "firstKeptEntryId", "summary", "tokensBefore", "usage"]
RUN = ["response:prompt", "agent_start", "turn_start", "message_start:user", "message_end:user",
       "message_start:assistant", "message_end:assistant:stop", "turn_end", "agent_end", "agent_settled"]


def reply(text: str, input_tokens: int, output_tokens: int = 140, **extra: Any) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": text}],
            "usage": {"input": input_tokens, "output": output_tokens, "cacheRead": 0, "cacheWrite": 0}, **extra}


def user_text(turn: int) -> str:
    return f"turn {turn}: {LONG}"


async def _prompts(conv: Conversation, *turns: int) -> None:
    for turn in turns:
        await conv.prompt(user_text(turn))


def compaction_settings(keep_recent: int, reserve: int = 16384) -> dict[str, Any]:
    return {"retry": {"baseDelayMs": 50}, "compaction": {"keepRecentTokens": keep_recent, "reserveTokens": reserve}}


def summary_requests(requests: list[dict[str, Any]]) -> list[str]:
    """The user text of each summarisation request (the ones sent without tools)."""
    return [r["body"]["messages"][-1]["content"][0]["text"] for r in requests if not r["body"].get("tools")]


# --------------------------------------------------------------------------- scenarios


async def _manual(conv: Conversation) -> None:
    await _prompts(conv, 1, 2, 3)
    await conv.request({"type": "compact", "customInstructions": "the retry tests"})
    await conv.request({"type": "compact"})
    await conv.request({"type": "get_session_stats"})
    await conv.prompt("and now?")
    await conv.request({"type": "get_session_stats"})


async def _too_small(conv: Conversation) -> None:
    await conv.request({"type": "compact"})
    await conv.prompt("hi")
    await conv.request({"type": "compact"})


async def _threshold(conv: Conversation) -> None:
    await _prompts(conv, 1, 2)  # the second reply reports 8640 tokens: compacted after the run
    await conv.request({"type": "set_auto_compaction", "enabled": False})
    await _prompts(conv, 3, 4)  # over the threshold again, but compaction is off
    await conv.request({"type": "set_auto_compaction", "enabled": True})
    await conv.prompt(user_text(5))  # the pre-prompt check compacts before the prompt starts


async def _abort_compaction(conv: Conversation) -> None:
    await _prompts(conv, 1, 2)
    compact = await conv.send({"type": "compact"})
    await conv.read_until(lambda r: r["type"] == "compaction_start")
    await asyncio.to_thread(conv.server.wait_for_requests, 3)  # the slow summary is streaming
    await conv.send({"type": "abort"})
    await conv.response(compact)
    await conv.read_until(lambda r: r["type"] == "response" and r["command"] == "abort")
    await conv.request({"type": "get_state"})


THRESHOLD_SETTINGS = compaction_settings(200, reserve=2000)
MANUAL = Scenario([reply(LONG + "one", 200), reply(LONG + "two", 400), reply(LONG + "three", 600),
                   reply(SUMMARY, 300, 20), reply("after", 250, 5)], _manual, compaction_settings(200))
THRESHOLD = Scenario(
    [reply(LONG + "one", 3000), reply(LONG + "two", 8500), reply(SUMMARY, 300, 20),
     reply(LONG + "three", 3000), reply(LONG + "four", 9000), reply(SUMMARY + "v2", 300, 20), reply("five", 2000, 5)],
    _threshold, THRESHOLD_SETTINGS, context_window=10000)
OVERFLOW_HISTORY = [reply(LONG + "one", 300), reply(LONG + "two", 600), TOO_LONG, reply(SUMMARY, 300, 20)]
TOOL_CALL = {"content": [{"type": "toolCall", "id": "call_1", "name": "bash", "arguments": {"command": "echo hi"}}],
             "usage": {"input": 9000, "output": 40, "cacheRead": 0, "cacheWrite": 0}}
SCENARIOS: dict[str, Scenario] = {
    "manual": MANUAL,
    "too_small": Scenario([reply("short", 10, 2)], _too_small, compaction_settings(200)),
    "threshold": THRESHOLD,
    "overflow_recovered": Scenario([*OVERFLOW_HISTORY, reply("recovered", 500, 5)],
                                   lambda conv: _prompts(conv, 1, 2, 3), compaction_settings(300)),
    "overflow_twice": Scenario([*OVERFLOW_HISTORY, TOO_LONG, reply("small again", 500, 5)],
                               lambda conv: _prompts(conv, 1, 2, 3, 4), compaction_settings(300)),
    "silent_overflow": Scenario(  # a complete reply whose input exceeded the window: compact, no retry
        [reply(LONG + "one", 3000), reply(LONG + "two", 12000), reply(SUMMARY, 300, 20), reply("next", 2000, 5)],
        lambda conv: _prompts(conv, 1, 2, 3), THRESHOLD_SETTINGS, context_window=10000),
    "between_turns": Scenario(  # a tool call whose usage crosses the threshold: compact before the next turn
        [reply(LONG + "one", 3000), TOOL_CALL, reply(SUMMARY, 300, 20), reply("done", 2000, 5)],
        lambda conv: _prompts(conv, 1, 2), THRESHOLD_SETTINGS, context_window=10000),
    "length_recovery": Scenario(  # a reply cut by the output cap below maxTokens: compact and retry once
        [reply(LONG + "one", 300), reply(LONG + "two", 600), {**reply("cut", 900, 50), "stopReason": "length"},
         reply(SUMMARY, 300, 20), reply("done", 500, 5)],
        lambda conv: _prompts(conv, 1, 2, 3), compaction_settings(300)),
    "abort_compaction": Scenario(
        [reply(LONG + "one", 300), reply(LONG + "two", 600),
         reply(SUMMARY * 40, 300, 20, chunkSize=2, chunkDelayMs=30)], _abort_compaction, compaction_settings(200)),
}


def _compaction_events(records: list[Record]) -> list[Record]:
    return [r for r in records if r["type"] in ("compaction_start", "compaction_end")]


# --------------------------------------------------------------------------- ours, exact sequences


@pytest.mark.slow
@shared_run("manual")
async def test_manual_compaction(tmp_path: Path) -> None:
    played = await play_once("ours", MANUAL, tmp_path)
    records = played.records
    compact_at = flow(records).index("compaction_start")
    assert flow(records)[compact_at:] == [
        "compaction_start", "compaction_end", "response:compact",
        "compaction_start", "compaction_end", "response:compact",
        "response:get_session_stats", *RUN, "response:get_session_stats"]
    responses = only(records, "response")
    first_compact, second_compact = (r for r in responses if r["command"] == "compact")
    result = first_compact["data"]
    assert sorted(result) == RESULT_KEYS
    assert result["summary"] == SUMMARY and result["tokensBefore"] == 740  # the last reply's usage: 600 + 140
    assert result["details"] == {"readFiles": [], "modifiedFiles": []}
    assert result["usage"]["input"] == 300 and result["usage"]["output"] == 20
    assert 0 < result["estimatedTokensAfter"] < 2000
    start, end = _compaction_events(records)[:2]
    assert start == {"type": "compaction_start", "reason": "manual"}
    assert end == {"type": "compaction_end", "reason": "manual", "result": result, "aborted": False, "willRetry": False}

    summary_request, = summary_requests(played.requests)
    assert "Additional focus: the retry tests" in summary_request
    assert user_text(1) in summary_request and user_text(3) not in summary_request  # the recent turn is kept

    assert second_compact["success"] is False and second_compact["error"] == "Already compacted"
    assert _compaction_events(records)[3]["errorMessage"] == "Compaction failed: Already compacted"
    stats_after, stats_later = (r["data"] for r in responses if r["command"] == "get_session_stats")
    assert stats_after["contextUsage"] == {"tokens": None, "contextWindow": 100000, "percent": None}
    assert stats_later["contextUsage"] == {"tokens": 255, "contextWindow": 100000, "percent": 0.255}


@pytest.mark.slow
@shared_run("too_small")
async def test_compacting_an_empty_session_fails(tmp_path: Path) -> None:
    records = (await play_once("ours", SCENARIOS["too_small"], tmp_path)).records
    failures = [r for r in only(records, "response") if r["command"] == "compact"]
    assert [r["error"] for r in failures] == ["Nothing to compact (session too small)"] * 2
    ends = only(records, "compaction_end")
    assert ends == [{"type": "compaction_end", "reason": "manual", "aborted": False, "willRetry": False,
                     "errorMessage": "Compaction failed: Nothing to compact (session too small)"}] * 2


@pytest.mark.slow
@shared_run("threshold")
async def test_threshold_compaction_after_a_run_and_before_a_prompt(tmp_path: Path) -> None:
    played = await play_once("ours", THRESHOLD, tmp_path)
    types = flow(played.records)
    first = types.index("compaction_start")
    assert types[first - 2:first + 3] == ["turn_end", "agent_end", "compaction_start", "compaction_end",
                                          "agent_settled"]
    second = types.index("compaction_start", first + 1)
    assert types[second - 1:second + 4] == ["response:set_auto_compaction", "compaction_start", "compaction_end",
                                            "response:prompt", "agent_start"]
    ends = only(played.records, "compaction_end")
    assert [(e["reason"], e["willRetry"], e["aborted"], e["result"]["tokensBefore"]) for e in ends] == [
        ("threshold", False, False, 8640), ("threshold", False, False, 9140)]
    assert ends[1]["result"]["summary"] == SUMMARY + "v2"
    assert "<previous-summary>" in summary_requests(played.requests)[1]  # the update prompt merges the old one


@pytest.mark.slow
@shared_run("overflow_recovered")
async def test_overflow_recovery_compacts_and_continues(tmp_path: Path) -> None:
    played = await play_once("ours", SCENARIOS["overflow_recovered"], tmp_path)
    types = flow(played.records)
    third = types.index("message_end:assistant:error")
    assert types[third:] == [
        "message_end:assistant:error", "turn_end", "agent_end", "entry_appended", "compaction_start",
        "compaction_end", "agent_start", "turn_start", "message_start:assistant", "message_end:assistant:stop",
        "turn_end", "agent_end", "agent_settled"]
    assert only(played.records, "agent_end")[-2]["willRetry"] is False
    edit = only(played.records, "entry_appended")[0]["entry"]
    assert edit["type"] == "context_edit" and edit["replacement"] is None
    start, end = _compaction_events(played.records)
    assert start == {"type": "compaction_start", "reason": "overflow"}
    assert (end["reason"], end["aborted"], end["willRetry"], sorted(end["result"])) == (
        "overflow", False, True, RESULT_KEYS)
    continuation = played.requests[-1]["body"]["messages"]
    assert continuation[-1]["role"] == "user" and user_text(3) in json.dumps(continuation[-1])
    assert "prompt is too long" not in json.dumps(continuation)


@pytest.mark.slow
@shared_run("overflow_twice")
async def test_second_overflow_fails_without_looping(tmp_path: Path) -> None:
    played = await play_once("ours", SCENARIOS["overflow_twice"], tmp_path)
    failure = {"type": "compaction_end", "reason": "overflow", "aborted": False, "willRetry": False,
               "errorMessage": OVERFLOW_RETRY_FAILED}
    ends = only(played.records, "compaction_end")
    assert [e["willRetry"] for e in ends] == [True, False, False] and ends[1:] == [failure, failure]
    types = flow(played.records)
    second_failure = types.index("compaction_end", types.index("compaction_end") + 1)
    assert types[second_failure - 3:second_failure + 3] == [
        "message_end:assistant:error", "turn_end", "agent_end", "compaction_end", "agent_settled",
        "compaction_end"]  # reported again by the next prompt's pre-prompt check, as pi does
    assert types[second_failure + 3] == "response:prompt"
    assert len(played.requests) == 6  # 2 replies, the overflow, 1 summary, the retry, the next prompt's reply


@pytest.mark.slow
@shared_run("silent_overflow")
async def test_silent_overflow_compacts_without_retrying(tmp_path: Path) -> None:
    played = await play_once("ours", SCENARIOS["silent_overflow"], tmp_path)
    types = flow(played.records)
    at = types.index("compaction_start")
    assert types[at - 3:at + 3] == ["message_end:assistant:stop", "turn_end", "agent_end", "compaction_start",
                                    "compaction_end", "agent_settled"]
    end, = only(played.records, "compaction_end")
    assert (end["reason"], end["willRetry"], end["result"]["tokensBefore"]) == ("overflow", False, 12140)
    assert not only(played.records, "entry_appended")  # a complete reply is kept


@pytest.mark.slow
@shared_run("between_turns")
async def test_threshold_compaction_between_turns(tmp_path: Path) -> None:
    types = flow((await play_once("ours", SCENARIOS["between_turns"], tmp_path)).records)
    at = types.index("compaction_start")
    assert types[at - 2:at + 4] == ["message_end:toolResult", "turn_end", "compaction_start", "compaction_end",
                                    "turn_start", "message_start:assistant"]
    assert types.count("agent_start") == 2  # same run: no continuation


@pytest.mark.slow
@shared_run("length_recovery")
async def test_truncated_reply_is_compacted_and_retried(tmp_path: Path) -> None:
    played = await play_once("ours", SCENARIOS["length_recovery"], tmp_path)
    types = flow(played.records)
    at = types.index("message_end:assistant:length")
    assert types[at:at + 9] == ["message_end:assistant:length", "turn_end", "agent_end", "entry_appended",
                                "compaction_start", "compaction_end", "agent_start", "turn_start",
                                "message_start:assistant"]
    end, = only(played.records, "compaction_end")
    assert (end["reason"], end["willRetry"]) == ("overflow", True)


@pytest.mark.slow
@shared_run("abort_compaction")
async def test_abort_during_compaction(tmp_path: Path) -> None:
    records = (await play_once("ours", SCENARIOS["abort_compaction"], tmp_path)).records
    types = flow(records)
    assert types[types.index("compaction_start"):] == [
        "compaction_start", "compaction_end", "response:compact", "response:abort", "response:get_state"]
    assert only(records, "compaction_end") == [{"type": "compaction_end", "reason": "manual", "aborted": True,
                                                "willRetry": False}]
    compact = next(r for r in only(records, "response") if r["command"] == "compact")
    assert compact["error"] == "Compaction cancelled"
    assert records[-1]["data"]["isCompacting"] is False


# --------------------------------------------------------------------------- side by side with pi 1.6.0


@needs_reference
@pytest.mark.parametrize("name", [pytest.param(name, marks=shared_run(name)) for name in SCENARIOS])
async def test_same_records_as_the_reference(name: str, tmp_path: Path) -> None:
    ours, reference = await compare(SCENARIOS[name], tmp_path, once=True)
    assert ours.workspace.settings() == reference.workspace.settings()  # set_auto_compaction persists alike


async def _messages_in(kind: str, workspace: Workspace, session_file: Path) -> list[dict[str, Any]]:
    proc = await workspace.spawn(kind, "--no-session")
    try:
        switched = await proc.request({"type": "switch_session", "sessionPath": str(session_file)})
        assert switched["success"] is True and switched["data"] == {"cancelled": False}, switched
        messages: list[dict[str, Any]] = (await proc.request({"type": "get_messages"}))["data"]["messages"]
        return messages
    finally:
        await proc.kill()


@needs_reference
@pytest.mark.parametrize("author", ["ours", "reference"])
async def test_a_compacted_session_opens_the_same_in_the_other(author: str, tmp_path: Path) -> None:
    played = await play(author, Scenario(MANUAL.script, _manual, MANUAL.settings, args=()), tmp_path)
    session_file = next(played.workspace.agent_dir.rglob("*.jsonl"))
    entries = [json.loads(line) for line in session_file.read_text().splitlines()]
    assert [e["type"] for e in entries].count("compaction") == 1
    reader = "reference" if author == "ours" else "ours"
    seen_by_author = await _messages_in(author, played.workspace, session_file)
    seen_by_reader = await _messages_in(reader, played.workspace, session_file)
    assert seen_by_reader == seen_by_author  # the same messages, down to the persisted system message
    assert [m["role"] for m in seen_by_reader if m["role"] != "system"] == [
        "compactionSummary", "user", "assistant", "user", "assistant"]
