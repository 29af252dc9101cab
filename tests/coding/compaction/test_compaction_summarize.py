"""Summary requests over real HTTP to the scripted fake server."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pi_coding_agent.ai.abort import AbortSignal
from pi_coding_agent.coding.compaction.branch_summary import (
    BRANCH_SUMMARY_PREAMBLE,
    collect_branch_entries,
    prepare_branch_entries,
    summarize_branch,
)
from pi_coding_agent.coding.compaction.prepare import (
    CompactionError,
    CompactionPreparation,
    prepare_compaction,
)
from pi_coding_agent.coding.compaction.summarize import (
    SUMMARY_INSTRUCTIONS,
    SUMMARY_SYSTEM_PROMPT,
    TURN_PREFIX_INSTRUCTIONS,
    UPDATE_INSTRUCTIONS,
    CompactionCancelled,
    fit_conversation,
    serialize_conversation,
    summarize,
)
from pi_coding_agent.coding.retry import RetrySettings
from tests.coding.compaction.test_compaction_prepare import add, assistant, new_store, tool_result, turn, user

SUMMARY = "## Goal\nShip it"


def fake_model(url: str, **over: Any) -> Any:
    model = {"id": "m", "name": "M", "api": "openai-completions", "provider": "fake", "baseUrl": f"{url}/v1",
             "reasoning": False, "input": ["text"], "cost": {"input": 1, "output": 2, "cacheRead": 0, "cacheWrite": 0},
             "contextWindow": 100000, "maxTokens": 8000}
    model.update(over)
    return model


def reply(text: str = SUMMARY, **extra: Any) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": text}], "usage": {"input": 300, "output": 40}, **extra}


def prompt_text(request: dict[str, Any]) -> str:
    return request["body"]["messages"][1]["content"][0]["text"]


# --------------------------------------------------------------------------- serialisation


def test_serialize_conversation_texts() -> None:
    call = assistant("Let me look.", [("c1", "read", {"path": "a.py", "limit": 5}), ("c2", "ls", {})])
    call["content"].insert(0, {"type": "thinking", "thinking": "private"})
    messages = [user("hi"), call, tool_result("c1", "line"), tool_result("c2", ""),
                {"role": "system", "content": "ignored", "timestamp": 0}, assistant("", [])]
    assert serialize_conversation(messages) == (
        "[User]: hi\n\n[Assistant]: Let me look.\n\n"
        '[Assistant tool calls]: read(path="a.py", limit=5); ls()\n\n[Tool result]: line'
    )


def test_long_tool_results_are_cut_with_a_marker() -> None:
    text = serialize_conversation([tool_result("c", "x" * 2500)])
    assert text == "[Tool result]: " + "x" * 2000 + "\n\n[... 500 more characters truncated]"


def test_fit_conversation_drops_the_oldest_part_at_a_message_boundary() -> None:
    conversation = "\n\n".join(f"[User]: {'m' * 990}{i:04d}" for i in range(40))
    fitted = fit_conversation(conversation, 500, fake_model("", contextWindow=9000, maxTokens=1000))
    assert len(fitted) < len(conversation)
    assert fitted.endswith("0039")
    head, rest = fitted.split("\n\n", 1)
    assert head.startswith("[... ") and head.endswith(" earlier characters of the conversation omitted]")
    assert rest.startswith("[User]: ")
    assert fit_conversation(conversation, 500, fake_model("", contextWindow=10**6)) == conversation


def two_turns_prepared(tmp_path: Path) -> tuple[Any, CompactionPreparation]:
    """A store with two turns and its compaction plan (keeping about 400 tokens)."""
    sm = new_store(tmp_path)
    turn(sm, 0)
    turn(sm, 1)
    prep = prepare_compaction(sm.get_branch(), 400)
    assert prep is not None
    return sm, prep


# --------------------------------------------------------------------------- summarize()


async def test_summary_request_body_and_result(fake_llm, tmp_path: Path) -> None:
    _sm, prep = two_turns_prepared(tmp_path)
    fake_llm.add(reply())
    summary, usage = await summarize(fake_model(fake_llm.url), "sk-x", prep, "the parser", None, None)
    assert summary == SUMMARY + "\n\n<read-files>\nsrc/f0.py\n</read-files>"
    assert usage is not None and usage["input"] == 300 and usage["output"] == 40
    body = fake_llm.requests[0]["body"]
    assert "tools" not in body and "prompt_cache_key" not in body
    assert body["messages"][0] == {"role": "system", "content": SUMMARY_SYSTEM_PROMPT}
    assert body["max_completion_tokens"] == 8000
    text = prompt_text(fake_llm.requests[0])
    assert text.startswith("<conversation>\n[User]: " + "u" * 400)
    assert "[Assistant tool calls]: read(path=\"src/f0.py\")" in text
    assert "<previous-summary>" not in text
    assert text.endswith("</conversation>\n\n" + SUMMARY_INSTRUCTIONS + "\n\nAdditional focus: the parser")


async def test_update_prompt_carries_the_previous_summary(fake_llm, tmp_path: Path) -> None:
    sm = new_store(tmp_path)
    kept = turn(sm, 0)
    sm.append_compaction("PREVIOUS", kept[0], 10, details={"readFiles": [], "modifiedFiles": ["m.py"]})
    turn(sm, 1)
    turn(sm, 2)
    prep = prepare_compaction(sm.get_branch(), 400)
    assert prep is not None
    fake_llm.add(reply())
    summary, _ = await summarize(fake_model(fake_llm.url), "k", prep, None, None, None)
    text = prompt_text(fake_llm.requests[0])
    assert "\n</conversation>\n\n<previous-summary>\nPREVIOUS\n</previous-summary>\n\n" + UPDATE_INSTRUCTIONS in text
    assert text.endswith(UPDATE_INSTRUCTIONS)
    assert summary.endswith("<read-files>\nsrc/f0.py\nsrc/f1.py\n</read-files>\n\n<modified-files>\nm.py\n</modified-files>")


async def test_split_turn_makes_two_requests_and_sums_usage(fake_llm, tmp_path: Path) -> None:
    sm = new_store(tmp_path)
    turn(sm, 0)
    add(sm, user("u" * 400), assistant("a" * 40, [("c1", "read", {"path": "x.py"})]),
        tool_result("c1", "r" * 400), assistant("", [("c2", "read", {"path": "y.py"})]), tool_result("c2", "r" * 400))
    prep = prepare_compaction(sm.get_branch(), 150)
    assert prep is not None and prep.is_split_turn
    fake_llm.add(reply("HISTORY"), reply("PREFIX"))
    summary, usage = await summarize(fake_model(fake_llm.url), "k", prep, "focus", None, None)
    assert summary.startswith("HISTORY\n\n---\n\n**Turn Context (split turn):**\n\nPREFIX\n\n<read-files>")
    assert usage is not None and usage["input"] == 600 and usage["totalTokens"] == 680
    prefix_text = prompt_text(fake_llm.requests[1])
    assert prefix_text.startswith("# Conversation\n[User]: " + "u" * 400)
    assert prefix_text.endswith("\n\n# Instructions\n" + TURN_PREFIX_INSTRUCTIONS + "\n\nAdditional focus: focus")


async def test_transient_error_is_retried_with_events(fake_llm, tmp_path: Path) -> None:
    _sm, prep = two_turns_prepared(tmp_path)
    fake_llm.add({"status": 529, "body": {"error": {"type": "overloaded_error", "message": "Overloaded"}}}, reply())
    events: list[dict[str, Any]] = []
    summary, _ = await summarize(fake_model(fake_llm.url), "k", prep, None, None, events.append,
                                 retry=RetrySettings(base_delay_ms=1), reason="threshold")
    assert summary.startswith(SUMMARY)
    assert [e["type"] for e in events] == ["summarization_retry_scheduled", "summarization_retry_attempt_start",
                                           "summarization_retry_finished"]
    scheduled = events[0]
    assert (scheduled["attempt"], scheduled["maxAttempts"], scheduled["delayMs"]) == (1, 3, 1)
    assert scheduled["errorMessage"].startswith("529")
    assert events[1] == {"type": "summarization_retry_attempt_start", "source": "compaction", "reason": "threshold"}
    assert len(fake_llm.requests) == 2


@pytest.mark.parametrize(("response", "message"), [
    ({"status": 400, "body": {"error": {"message": "bad request"}}}, "Summarization failed: 400"),
    (reply(stopReason="length"), "Summarization failed: generation hit the token cap and the summary is incomplete"),
    ({"content": [{"type": "toolCall", "id": "t", "name": "bash", "arguments": {}}]},
     "Summarization attempted to call a tool"),
])
async def test_summary_failures(fake_llm, tmp_path: Path, response: dict[str, Any], message: str) -> None:
    _sm, prep = two_turns_prepared(tmp_path)
    fake_llm.add(response)
    with pytest.raises(CompactionError) as info:
        await summarize(fake_model(fake_llm.url), "k", prep, None, None, None, retry=RetrySettings(base_delay_ms=1))
    assert str(info.value).startswith(message)
    assert len(fake_llm.requests) == 1  # none of these is retried


async def test_abort_during_retry_backoff_cancels(fake_llm, tmp_path: Path) -> None:
    _sm, prep = two_turns_prepared(tmp_path)
    fake_llm.add({"status": 503})
    signal = AbortSignal()
    events: list[dict[str, Any]] = []

    def on_event(event: dict[str, Any]) -> None:
        events.append(event)
        if event["type"] == "summarization_retry_scheduled":
            signal.abort()

    with pytest.raises(CompactionCancelled, match=r"^Compaction cancelled$"):
        await summarize(fake_model(fake_llm.url), "k", prep, None, signal, on_event,
                        retry=RetrySettings(base_delay_ms=60000))
    assert [e["type"] for e in events] == ["summarization_retry_scheduled", "summarization_retry_finished"]


# --------------------------------------------------------------------------- branch summaries


def test_collect_branch_entries_stops_at_the_common_ancestor(tmp_path: Path) -> None:
    sm = new_store(tmp_path)
    shared = add(sm, user("root"), assistant("ok"))
    abandoned = add(sm, user("try A"), assistant("did A"))
    sm.branch(shared[1])
    target = add(sm, user("try B"))
    entries = collect_branch_entries(sm.get_branch, abandoned[1], target[0])
    assert [e["id"] for e in entries] == abandoned
    assert collect_branch_entries(sm.get_branch, None, target[0]) == []


def test_branch_entries_skip_tool_results_and_respect_the_budget(tmp_path: Path) -> None:
    sm = new_store(tmp_path)
    ids = add(sm, user("x" * 4000), assistant("", [("c", "edit", {"path": "e.py"})]), tool_result("c", "r" * 4000),
              user("y" * 40))
    summary = sm.append_branch_summary("old", "nested", details={"readFiles": ["n.py"], "modifiedFiles": []})
    messages, ops = prepare_branch_entries([*map(sm.get_entry, ids), summary], 100)  # type: ignore[list-item]
    assert [m["role"] for m in messages] == ["assistant", "user", "branchSummary"]
    assert ops.file_lists() == (["n.py"], ["e.py"])


async def test_summarize_branch_over_http(fake_llm, tmp_path: Path) -> None:
    sm = new_store(tmp_path)
    ids = add(sm, user("explore"), assistant("", [("c", "read", {"path": "r.py"})]), tool_result("c", "text"))
    fake_llm.add({"status": 503}, reply("BRANCH"))
    events: list[dict[str, Any]] = []
    summary, details, usage = await summarize_branch(
        [sm.get_entry(i) for i in ids], fake_model(fake_llm.url), "k", None, events.append,  # type: ignore[misc]
        retry=RetrySettings(base_delay_ms=1), custom_instructions="names")
    assert summary == BRANCH_SUMMARY_PREAMBLE + "BRANCH\n\n<read-files>\nr.py\n</read-files>"
    assert details == {"readFiles": ["r.py"], "modifiedFiles": []}
    assert usage is not None and usage["output"] == 40
    assert events[1] == {"type": "summarization_retry_attempt_start", "source": "branchSummary"}
    text = prompt_text(fake_llm.requests[1])
    assert text.startswith("<conversation>\n[User]: explore\n\n[Assistant tool calls]: read(path=\"r.py\")\n</conversation>")
    assert text.endswith("\n\nAdditional focus: names")
    assert await summarize_branch([], fake_model(fake_llm.url), "k", None, None) == ("No content to summarize", None, None)
