"""The SDK's run-level surface: ``async with``, ``run`` -> ``RunResult``, ``stream``, limits, the error
tree, shutdown for good, a faux script per session (coding/sdk/, docs/sdk.md)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

import pi_coding_agent
from pi_coding_agent import (
    ConfigurationError,
    ModelResolutionError,
    PiError,
    ProviderError,
    RunError,
    Session,
    SessionError,
    create_agent_session,
)
from tests.support.fakes.llm_server import FakeLLMServer


def faux(tmp_path: Path, script: list[dict[str, Any]] | None = None, **options: Any) -> Any:
    """A faux session in ``tmp_path`` with its own script (auto-retry off: one failure is one result)."""
    return create_agent_session(cwd=tmp_path, agent_dir=tmp_path, provider="faux", model="faux-1", in_memory=True,
                                load_resources=False, faux_script=script, settings={"retry": {"enabled": False}},
                                **options)


def text(reply: str, **extra: Any) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": reply}], **extra}


def call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"content": [{"type": "toolCall", "name": name, "arguments": arguments}]}


async def test_both_async_with_spellings_close_the_session(tmp_path: Path) -> None:
    async with faux(tmp_path) as first:
        assert isinstance(first, Session) and not first.closed
    async with await faux(tmp_path) as second:
        assert (await second.run("hi")).text == "You said: hi"
    assert first.closed and second.closed
    await second.shutdown()  # idempotent


async def test_run_returns_the_runs_result(tmp_path: Path) -> None:
    script = [text("first"), call("ls", path="."), text("two files", usage={"input": 7, "output": 3, "cacheRead": 11, "cacheWrite": 2})]
    async with faux(tmp_path, script, tools=["ls"]) as session:
        await session.run("first run")  # not part of the second run's result
        result = await session.run("list them")
    assert result.text == "two files" and result.stop_reason == "stop" and result.error is None
    assert [m["role"] for m in result.messages] == ["user", "assistant", "toolResult", "assistant"]
    assert result.messages[0]["content"][0]["text"] == "list them"
    assert (result.usage.input, result.usage.output, result.usage.cache_read, result.usage.cache_write) == (7, 3, 11, 2)
    assert result.turns == 2 and result.cost == 0.0


def models_json(agent_dir: Path, server: FakeLLMServer) -> None:
    """Provider ``fake`` routed to ``server``, priced at $1 per million tokens each way."""
    agent_dir.mkdir(exist_ok=True)
    (agent_dir / "models.json").write_text(json.dumps({"providers": {"fake": {
        "baseUrl": f"{server.url}/v1", "api": "openai-completions", "apiKey": "dummy",
        "models": [{"id": "m1", "contextWindow": 100000, "maxTokens": 4096,
                    "cost": {"input": 1, "output": 1, "cacheRead": 0, "cacheWrite": 0}}]}}}))


async def test_cost_and_max_cost_stop_the_run(fake_llm: FakeLLMServer, tmp_path: Path) -> None:
    models_json(tmp_path, fake_llm)
    usage = {"input": 600_000, "output": 0, "cacheRead": 0, "cacheWrite": 0}
    fake_llm.add({"content": [{"type": "toolCall", "id": "c1", "name": "ls", "arguments": {}}], "usage": usage},
                 {"content": [{"type": "toolCall", "id": "c2", "name": "ls", "arguments": {}}], "usage": usage},
                 {"content": [{"type": "text", "text": "never asked"}]})
    async with create_agent_session(cwd=tmp_path, agent_dir=tmp_path, provider="fake", model="m1", in_memory=True,
                                    load_resources=False, tools=["ls"]) as session:
        result = await session.run("spend", max_cost=1.0)
    assert result.stop_reason == "max_cost" and result.cost == pytest.approx(1.2)
    assert len(fake_llm.requests) == 2
    refused = [m for m in result.messages if m["role"] == "toolResult"][-1]
    assert refused["isError"] and "max_cost" in refused["content"][0]["text"]


async def test_max_turns_stops_before_the_next_request(tmp_path: Path) -> None:
    async with faux(tmp_path, [call("ls"), call("ls"), call("ls"), text("unreached")], tools=["ls"]) as session:
        result = await session.run("go", max_turns=2)
        assert result.stop_reason == "max_turns" and result.turns == 2
        assert [m["role"] for m in result.messages][-2:] == ["assistant", "toolResult"]
        assert "max_turns limit (2)" in result.messages[-1]["content"][0]["text"]
        await session.prompt("and now")  # the limit was that run's only
        await session.wait_for_idle()
        assert session.get_last_assistant_text() == "unreached"
        with pytest.raises(ConfigurationError, match="max_turns"):
            await session.run("x", max_turns=0)


async def test_a_provider_failure_raises_or_is_returned(tmp_path: Path) -> None:
    failing = {"error": "400 bad request: nope"}
    async with faux(tmp_path, [failing, failing]) as session:
        with pytest.raises(RunError, match="nope") as raised:
            await session.run("hi")
        result = await session.run("hi", raise_on_error=False)
    assert isinstance(raised.value, ProviderError) and isinstance(raised.value, PiError)
    assert raised.value.result.stop_reason == "error"
    assert result.stop_reason == "error" and result.error is not None and "nope" in result.error


async def test_stream_yields_the_runs_typed_events_up_to_settled(tmp_path: Path) -> None:
    async with faux(tmp_path, [text("streamed reply")]) as session:
        events = [event async for event in session.stream("hi")]
        session.emit({"type": "session_info_changed", "name": "later"})  # after the run: not part of it
    assert events[0]["type"] == "agent_start" and events[-1] == {"type": "agent_settled", "aborted": False}
    deltas = [e["assistantMessageEvent"]["delta"] for e in events if e["type"] == "message_update"
              and e["assistantMessageEvent"]["type"] == "text_delta"]
    assert "".join(deltas) == "streamed reply"


async def test_wait_for_idle_returns_after_a_reader_saw_agent_settled(tmp_path: Path) -> None:
    """A reader busy with earlier events has not taken ``agent_settled`` when the run settles."""
    async with faux(tmp_path, [text("x" * 400)]) as session:
        seen: list[str] = []

        async def read() -> None:
            async for event in session.events():
                seen.append(event["type"])
                await asyncio.sleep(0)  # a reader that does some work per event

        reader = asyncio.ensure_future(read())
        await asyncio.sleep(0)
        await session.prompt("go")
        await session.wait_for_idle()
        assert seen[-1:] == ["agent_settled"]
        reader.cancel()


async def test_after_shutdown_every_operation_raises_and_nothing_runs(tmp_path: Path) -> None:
    session = await create_agent_session(cwd=tmp_path, agent_dir=tmp_path, provider="faux", model="faux-1",
                                         load_resources=False)
    await session.run("saved")
    await session.shutdown()
    for attempt in (lambda: session.prompt("lost"), lambda: session.run("lost"), lambda: session.steer("lost"),
                    lambda: session.compact(), lambda: session.set_session_name("n")):
        with pytest.raises(SessionError, match="shut down"):
            await attempt()
    with pytest.raises(SessionError):
        session.events()
    assert session.sm.session_file is not None
    saved = session.sm.session_file.read_text()
    assert "saved" in saved and "lost" not in saved


async def test_each_session_walks_its_own_faux_script(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    async with faux(tmp_path / "a", [text("alpha one"), text("alpha two")]) as alpha, \
            faux(tmp_path / "b", [text("beta one")]) as beta:
        first = await asyncio.gather(alpha.run("1"), beta.run("1"))
        second = await asyncio.gather(alpha.run("2"), beta.run("2"))
    assert [r.text for r in first] == ["alpha one", "beta one"]
    assert [r.text for r in second] == ["alpha two", "You said: 2"]


async def test_errors_are_one_tree_in_sdk_words(tmp_path: Path) -> None:
    with pytest.raises(ModelResolutionError) as unknown:
        await create_agent_session(cwd=tmp_path, agent_dir=tmp_path, model="nosuch/model", in_memory=True)
    assert isinstance(unknown.value, PiError) and "--" not in str(unknown.value)
    assert "get_available_models() of any session" in str(unknown.value)
    with pytest.raises(SessionError) as keyless:
        await create_agent_session(cwd=tmp_path, agent_dir=tmp_path, api_key="sk-x", in_memory=True)
    assert "api_key= requires a model" in str(keyless.value) and "--" not in str(keyless.value)
    assert issubclass(SessionError, PiError) and issubclass(ConfigurationError, PiError)
    assert {"PiError", "SessionError", "ModelResolutionError", "ProviderError", "ConfigurationError"} <= set(
        pi_coding_agent.__all__)


async def test_a_missing_key_names_the_keyword(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_OAUTH_TOKEN", raising=False)
    async with create_agent_session(cwd=tmp_path, agent_dir=tmp_path, model="anthropic/claude-sonnet-4-5",
                                    in_memory=True, load_resources=False) as session:
        with pytest.raises(SessionError, match="No API key found for anthropic") as refused:
            await session.run("hi")
    assert "pass api_key= to create_agent_session()" in str(refused.value)
