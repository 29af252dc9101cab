"""The compaction controller: manual, threshold and overflow compaction with their events."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from pi_coding_agent.agent.agent import Agent
from pi_coding_agent.ai.types import now_ms
from pi_coding_agent.coding.compaction.controller import OVERFLOW_RETRY_FAILED, CompactionController
from pi_coding_agent.coding.compaction.prepare import CompactionError
from pi_coding_agent.coding.compaction.summarize import CompactionCancelled
from pi_coding_agent.coding.compaction.tokens import sum_tokens
from pi_coding_agent.coding.retry import RetrySettings
from pi_coding_agent.coding.session import SessionManager
from tests.coding.compaction.test_compaction_prepare import add, assistant, new_store, turn, user
from tests.coding.compaction.test_compaction_summarize import SUMMARY, fake_model, reply

SYSTEM = {"role": "system", "content": "", "sections": {"preamble": "You are pi."},
          "toolsAdded": [{"name": "read", "description": "Read", "parameters": {}}], "timestamp": 5}


class StubSession:
    """What the controller needs of an AgentSession: events, the store, and omitting a message."""

    def __init__(self, sm: SessionManager, agent: Agent) -> None:
        self.sm = sm
        self.agent = agent
        self.events: list[dict[str, Any]] = []
        self.is_compacting = False
        self._listeners: list[Any] = []

    def subscribe(self, listener: Any, types: Any = None) -> None:
        self._listeners.append(listener)  # every event: the controller's own filter is under test too

    def emit(self, event: dict[str, Any]) -> None:
        self.events.append(event)
        for listener in self._listeners:
            listener(event)

    def omit_from_context(self, message: dict[str, Any]) -> None:
        entry_id = next(e["id"] for e in reversed(self.sm.get_branch()) if e.get("message") is message)
        self.emit({"type": "entry_appended", "entry": self.sm.append_context_edit(entry_id, None)})
        self.agent.messages.remove(message)


class StubSettings:
    thinking_budgets = None

    def __init__(self, reserve: int, keep: int) -> None:
        self.values = {"reserveTokens": reserve, "keepRecentTokens": keep}

    def compaction_tokens_for(self, field: str, provider: str, model_id: str) -> int:
        return self.values[field]


class StubRuntime:
    def __init__(self, agent: Agent, reserve: int, keep: int) -> None:
        self.agent = agent
        self.settings = StubSettings(reserve, keep)
        self.auto_compaction_enabled = True

    def api_key_for(self, model: Any) -> str | None:
        return "sk-test"

    @staticmethod
    def no_key_message(provider: str) -> str:
        return f"No API key found for {provider}."

    def retry_settings(self) -> RetrySettings:
        return RetrySettings(base_delay_ms=1)


def setup(tmp_path: Path, url: str, turns: int = 3, window: int = 100000, reserve: int = 16384,
          keep: int = 400) -> tuple[CompactionController, StubSession, SessionManager]:
    sm = new_store(tmp_path)
    add(sm, SYSTEM)
    for n in range(turns):
        turn(sm, n)
    agent = Agent(model=fake_model(url, contextWindow=window))
    agent.messages = sm.build_context().messages
    session = StubSession(sm, agent)
    return CompactionController(session, StubRuntime(agent, reserve, keep)), session, sm


def kinds(session: StubSession) -> list[str]:
    return [e["type"] for e in session.events]


def append_reply(session: StubSession, message: dict[str, Any]) -> dict[str, Any]:
    """A reply as the session records it: in the file and in the agent's transcript."""
    session.sm.append_message(message)
    session.agent.messages.append(message)
    return message


# --------------------------------------------------------------------------- manual


async def test_manual_compaction_appends_entry_and_rebuilds_the_transcript(fake_llm, tmp_path: Path) -> None:
    controller, session, sm = setup(tmp_path, fake_llm.url)
    fake_llm.add(reply())
    seen_compacting: list[bool] = []
    session.subscribe(lambda e: seen_compacting.append(session.is_compacting) if e["type"] == "compaction_start" else None)
    result = await controller.compact("manual", None)
    entry = sm.entries[-1]
    assert entry["type"] == "compaction"
    assert result == {"summary": entry["summary"], "firstKeptEntryId": entry["firstKeptEntryId"],
                      "tokensBefore": entry["tokensBefore"], "estimatedTokensAfter": sum_tokens(session.agent.messages),
                      "usage": entry["usage"], "details": {"readFiles": ["src/f0.py", "src/f1.py"], "modifiedFiles": []}}
    assert entry["summary"].startswith(SUMMARY)
    assert entry["details"] == result["details"] and entry["fromHook"] is False
    assert entry["systemMessage"]["sections"] == SYSTEM["sections"]
    assert entry["systemMessage"]["toolsAdded"] == SYSTEM["toolsAdded"]
    assert [m["role"] for m in session.agent.messages[:3]] == ["system", "compactionSummary", "user"]
    assert session.events == [
        {"type": "compaction_start", "reason": "manual"},
        {"type": "compaction_end", "reason": "manual", "result": result, "aborted": False, "willRetry": False},
    ]
    assert seen_compacting == [True] and session.is_compacting is False
    with pytest.raises(CompactionError, match=r"^Already compacted$"):
        await controller.compact("manual", None)


async def test_manual_compaction_of_a_small_session_fails(fake_llm, tmp_path: Path) -> None:
    controller, session, _ = setup(tmp_path, fake_llm.url, turns=1, keep=20000)
    with pytest.raises(CompactionError, match=r"^Nothing to compact \(session too small\)$"):
        await controller.compact("manual", "focus")
    assert session.events[-1] == {"type": "compaction_end", "reason": "manual", "aborted": False, "willRetry": False,
                                  "errorMessage": "Compaction failed: Nothing to compact (session too small)"}
    assert fake_llm.requests == []


async def test_abort_cancels_a_running_compaction(fake_llm, tmp_path: Path) -> None:
    controller, session, sm = setup(tmp_path, fake_llm.url)
    fake_llm.add(reply("x" * 400, chunkSize=1, chunkDelayMs=50))
    task = asyncio.create_task(controller.compact("manual", None))
    await asyncio.to_thread(fake_llm.wait_for_requests, 1)
    controller.abort()
    with pytest.raises(CompactionCancelled, match=r"^Compaction cancelled$"):
        await task
    assert session.events[-1] == {"type": "compaction_end", "reason": "manual", "aborted": True, "willRetry": False}
    assert all(e["type"] != "compaction" for e in sm.entries)


# --------------------------------------------------------------------------- after a run


async def test_threshold_compaction_after_a_run(fake_llm, tmp_path: Path) -> None:
    controller, session, sm = setup(tmp_path, fake_llm.url, window=3000, reserve=1000)
    last = append_reply(session, assistant("done", total=2500, ts=now_ms()))
    fake_llm.add(reply())
    assert await controller.check_after_run(last) is False
    assert kinds(session) == ["compaction_start", "compaction_end"]
    assert session.events[0]["reason"] == "threshold" and "result" in session.events[1]
    assert sm.entries[-1]["type"] == "compaction"
    # the reply now predates the compaction: checking it again does nothing
    assert await controller.check_after_run(last) is False and len(session.events) == 2


async def test_threshold_compaction_continues_when_messages_are_queued(fake_llm, tmp_path: Path) -> None:
    controller, session, _ = setup(tmp_path, fake_llm.url, window=3000, reserve=1000)
    last = append_reply(session, assistant("done", total=2500, ts=now_ms()))
    session.agent.follow_up(user("next"))
    fake_llm.add(reply())
    assert await controller.check_after_run(last) is True


async def test_below_threshold_or_disabled_does_nothing(fake_llm, tmp_path: Path) -> None:
    controller, session, _ = setup(tmp_path, fake_llm.url, window=3000, reserve=1000)
    assert await controller.check_after_run(append_reply(session, assistant("ok", total=1500, ts=now_ms()))) is False
    controller.runtime.auto_compaction_enabled = False
    assert await controller.check_after_run(append_reply(session, assistant("ok", total=2900, ts=now_ms()))) is False
    assert session.events == [] and fake_llm.requests == []


async def test_failed_auto_compaction_reports_and_does_not_continue(fake_llm, tmp_path: Path) -> None:
    controller, session, _ = setup(tmp_path, fake_llm.url, window=3000, reserve=1000)
    last = append_reply(session, assistant("done", total=2500, ts=now_ms()))
    fake_llm.add({"status": 400, "body": {"error": {"message": "bad"}}})
    assert await controller.check_after_run(last) is False
    end = session.events[-1]
    assert end["errorMessage"].startswith("Auto-compaction failed: Summarization failed: 400")
    assert "result" not in end and end["aborted"] is False


async def test_overflow_is_recovered_once_per_user_message(fake_llm, tmp_path: Path) -> None:
    controller, session, sm = setup(tmp_path, fake_llm.url)
    append_reply(session, user("one more thing"))
    failed = append_reply(session, assistant(stop="error", ts=now_ms()))
    failed["errorMessage"] = '400: {"message":"prompt is too long: 250000 tokens > 200000 maximum"}'
    fake_llm.add(reply())
    assert await controller.check_after_run(failed) is True
    assert kinds(session) == ["entry_appended", "compaction_start", "compaction_end"]
    assert session.events[0]["entry"]["type"] == "context_edit" and session.events[0]["entry"]["replacement"] is None
    assert session.events[1]["reason"] == "overflow"
    assert session.events[2]["willRetry"] is True and session.events[2]["aborted"] is False
    assert session.agent.messages[-1]["content"][0]["text"] == "one more thing"  # the run continues from here
    again = append_reply(session, assistant(stop="error", ts=now_ms() + 5000))
    again["errorMessage"] = failed["errorMessage"]
    assert await controller.check_after_run(again) is False
    assert session.events[-1] == {"type": "compaction_end", "reason": "overflow", "aborted": False,
                                  "willRetry": False, "errorMessage": OVERFLOW_RETRY_FAILED}
    assert [e["type"] for e in sm.entries].count("compaction") == 1


async def test_overflow_from_another_model_is_not_recovered(fake_llm, tmp_path: Path) -> None:
    controller, session, _ = setup(tmp_path, fake_llm.url)
    failed = append_reply(session, assistant(stop="error", ts=now_ms(), model="other"))
    failed["errorMessage"] = "prompt is too long"
    assert await controller.check_after_run(failed) is False
    assert session.events == []


async def test_between_turns_threshold(fake_llm, tmp_path: Path) -> None:
    # the projection is estimated at 1235 tokens (no usage recorded)
    controller, session, _ = setup(tmp_path, fake_llm.url, window=2000, reserve=700)
    await controller.check_between_turns()
    assert session.events == []
    controller.runtime.settings.values["reserveTokens"] = 800
    fake_llm.add(reply())
    await controller.check_between_turns()
    assert kinds(session) == ["compaction_start", "compaction_end"]
    assert session.events[0]["reason"] == "threshold"


# --------------------------------------------------------------------------- stats


async def test_context_usage_is_unknown_after_compaction_until_the_next_reply(fake_llm, tmp_path: Path) -> None:
    controller, session, _ = setup(tmp_path, fake_llm.url, window=10000)
    append_reply(session, assistant("ok", total=1234, ts=now_ms()))
    append_reply(session, user("x" * 40))
    assert controller.context_usage() == {"tokens": 1244, "contextWindow": 10000, "percent": 12.44}
    fake_llm.add(reply())
    await controller.compact("manual", None)
    assert controller.context_usage() == {"tokens": None, "contextWindow": 10000, "percent": None}
    append_reply(session, assistant("later", total=700, ts=now_ms() + 5000))
    assert controller.context_usage() == {"tokens": 700, "contextWindow": 10000, "percent": pytest.approx(7.0)}
