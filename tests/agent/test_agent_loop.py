"""The agent loop over the in-process faux API: event orders, queues, abort, failures, hooks."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import pytest

from pi_coding_agent.agent import Agent, AgentHooks
from pi_coding_agent.agent.loop import default_context
from pi_coding_agent.agent.tool import AgentTool, ToolError, ToolResult, text_result
from pi_coding_agent.ai.abort import AbortSignal
from pi_coding_agent.ai.stream import StreamOptions
from pi_coding_agent.ai.types import Model

FAUX: Model = {
    "id": "faux-1", "name": "Faux", "api": "faux", "provider": "faux", "baseUrl": "", "reasoning": False,
    "input": ["text"], "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0},
    "contextWindow": 100000, "maxTokens": 8000,
}


# ---- helpers shared with test_agent_tools.py --------------------------------------------------


def scripted_model(tmp_path, responses: list[dict[str, Any]]) -> Model:
    script = tmp_path / "script.json"
    script.write_text(json.dumps(responses))
    return {**FAUX, "compat": {"script": str(script)}}


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text, "timestamp": 1}


def text_reply(text: str, **extra: Any) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": text}], **extra}


def calls_reply(*calls: tuple[str, str, dict[str, Any]], **extra: Any) -> dict[str, Any]:
    return {"content": [{"type": "toolCall", "id": i, "name": n, "arguments": a} for i, n, a in calls], **extra}


def label(event: dict[str, Any]) -> str:
    """A compact name for an event: ``message_start:user``, ``tool_execution_end:c1`` ..."""
    kind = event["type"]
    if kind in ("message_start", "message_end"):
        return f"{kind}:{event['message']['role']}"
    if kind.startswith("tool_execution"):
        return f"{kind}:{event['toolCallId']}"
    return kind


class Recorder:
    """A synchronous listener keeping every event."""

    def __init__(self, agent: Agent) -> None:
        self.events: list[dict[str, Any]] = []
        agent.subscribe(self.events.append)

    def labels(self, skip_updates: bool = True) -> list[str]:
        return [label(e) for e in self.events if not (skip_updates and e["type"] == "message_update")]

    def of(self, kind: str) -> list[dict[str, Any]]:
        return [e for e in self.events if e["type"] == kind]


ExecuteFn = Callable[[str, dict[str, Any], AbortSignal, Callable[[ToolResult], None]], Awaitable[ToolResult]]


@dataclass
class FakeTool(AgentTool):
    """An in-test tool: ``run`` is its execute; ``calls`` records the arguments it received."""

    name: str
    run: ExecuteFn
    parameters: dict[str, Any] = field(default_factory=lambda: {"type": "object", "properties": {}})
    execution_mode: str = "parallel"
    label: str = "fake"
    description: str = "a test tool"
    calls: list[dict[str, Any]] = field(default_factory=list)

    async def execute(self, tool_call_id: str, params: dict[str, Any], signal: AbortSignal,
                      on_update: Callable[[ToolResult], None]) -> ToolResult:
        self.calls.append(params)
        return await self.run(tool_call_id, params, signal, on_update)


def echo_tool(name: str = "echo") -> FakeTool:
    async def run(_id: str, params: dict[str, Any], _signal: AbortSignal, _update: Any) -> ToolResult:
        return text_result(f"echo {params.get('text', '')}")

    return FakeTool(name, run, {"type": "object", "properties": {"text": {"type": "string"}}})


def gated_tool(name: str, started: asyncio.Event, release: asyncio.Event) -> FakeTool:
    """A tool that signals it runs, then waits for the test to let it finish."""

    async def run(_id: str, _params: dict[str, Any], _signal: AbortSignal, _update: Any) -> ToolResult:
        started.set()
        await release.wait()
        return text_result(f"{name} done")

    return FakeTool(name, run)


def text_of(message: dict[str, Any]) -> str:
    content = message["content"]
    return content if isinstance(content, str) else "".join(b.get("text", "") for b in content)


# ---- plain runs --------------------------------------------------------------------------------


async def test_text_reply_event_order_and_transcript(tmp_path):
    agent = Agent(model=scripted_model(tmp_path, [text_reply("hello there")]), thinking_level="off")
    rec = Recorder(agent)
    await agent.prompt([user("hi")])
    assert rec.labels() == [
        "agent_start", "turn_start", "message_start:user", "message_end:user",
        "message_start:assistant", "message_end:assistant", "turn_end", "agent_end",
    ]
    updates = [e["assistantMessageEvent"]["type"] for e in rec.of("message_update")]
    assert updates[0] == "text_start" and updates[-1] == "text_end" and "text_delta" in updates
    final = rec.of("message_end")[-1]["message"]
    assert final["stopReason"] == "stop" and text_of(final) == "hello there"
    assert final["thinkingLevel"] == "off"
    end = rec.of("agent_end")[0]
    assert end["willRetry"] is False
    assert [m["role"] for m in end["messages"]] == ["user", "assistant"]
    assert rec.of("turn_end")[0] == {"type": "turn_end", "message": final, "toolResults": []}
    assert agent.messages == end["messages"]
    assert not agent.is_streaming and agent.streaming_message is None


async def test_message_update_carries_only_usage_and_adapter_event(tmp_path):
    agent = Agent(model=scripted_model(tmp_path, [text_reply("some streamed words", usage={"input": 7})]))
    rec = Recorder(agent)
    await agent.prompt([user("hi")])
    updates = rec.of("message_update")
    assert updates
    for event in updates:
        assert set(event) == {"type", "usage", "assistantMessageEvent"}
        assert "partial" not in event["assistantMessageEvent"]
        assert set(event["usage"]) >= {"input", "output", "totalTokens", "cost"}
    opening = rec.of("message_start")[-1]["message"]
    assert opening["stopReason"] == "pending" and opening["content"] == []


async def test_streaming_message_is_the_live_partial_during_updates(tmp_path):
    agent = Agent(model=scripted_model(tmp_path, [text_reply("abcdefghijklmnop")]))
    seen: list[bool] = []

    def listener(event: dict[str, Any]) -> None:
        if event["type"] == "message_update":
            seen.append(agent.streaming_message is not None and agent.streaming_message["role"] == "assistant")

    agent.subscribe(listener)
    await agent.prompt([user("hi")])
    assert seen and all(seen)
    assert agent.streaming_message is None


async def test_provider_error_has_no_pending_phase(tmp_path):
    agent = Agent(model=scripted_model(tmp_path, [{"error": "529: overloaded"}]))
    rec = Recorder(agent)
    await agent.prompt([user("hi")])
    assert rec.labels(skip_updates=False)[4:] == [
        "message_start:assistant", "message_end:assistant", "turn_end", "agent_end"]
    start, end = rec.of("message_start")[-1]["message"], rec.of("message_end")[-1]["message"]
    assert start["stopReason"] == end["stopReason"] == "error"
    assert end["errorMessage"] == "529: overloaded" and end["content"] == []


async def test_second_prompt_while_busy_is_refused(tmp_path):
    started, release = asyncio.Event(), asyncio.Event()
    model = scripted_model(tmp_path, [calls_reply(("c1", "slow", {})), text_reply("ok")])
    agent = Agent(model=model, tools=[gated_tool("slow", started, release)])
    run = asyncio.create_task(agent.prompt([user("go")]))
    await started.wait()
    assert agent.is_streaming
    with pytest.raises(RuntimeError) as err:
        await agent.prompt([user("again")])
    assert str(err.value) == ("Agent is already processing a prompt. Use steer() or followUp() to queue "
                              "messages, or wait for completion.")
    release.set()
    await run
    assert not agent.is_streaming


async def test_async_listeners_are_awaited_in_order_and_see_the_transcript(tmp_path):
    agent = Agent(model=scripted_model(tmp_path, [text_reply("done")]))
    log: list[str] = []

    async def persist(event: dict[str, Any]) -> None:
        if event["type"] == "message_end":
            await asyncio.sleep(0)
            assert agent.messages[-1] is event["message"]
            log.append(f"persist {event['message']['role']}")

    def after(event: dict[str, Any]) -> None:
        if event["type"] in ("message_end", "agent_end"):
            log.append(f"after {event['type']}")

    agent.subscribe(persist)
    agent.subscribe(after)
    await agent.prompt([user("hi")])
    assert log == ["persist user", "after message_end", "persist assistant", "after message_end", "after agent_end"]


async def test_unsubscribed_listener_gets_nothing(tmp_path):
    agent = Agent(model=scripted_model(tmp_path, [text_reply("x")]))
    got: list[dict[str, Any]] = []
    unsubscribe = agent.subscribe(got.append)
    unsubscribe()
    await agent.prompt([user("hi")])
    assert got == []


# ---- queues -------------------------------------------------------------------------------------


async def test_steer_during_tool_call_is_delivered_after_the_tool_results(tmp_path):
    started, release = asyncio.Event(), asyncio.Event()
    model = scripted_model(tmp_path, [calls_reply(("c1", "slow", {})), text_reply("steered answer")])
    agent = Agent(model=model, tools=[gated_tool("slow", started, release)])
    rec = Recorder(agent)
    run = asyncio.create_task(agent.prompt([user("go")]))
    await started.wait()
    agent.steer(user("change of plan"))
    assert [text_of(m) for m in agent.steering_queue] == ["change of plan"]
    release.set()
    await run
    assert rec.labels()[4:] == [
        "message_start:assistant", "message_end:assistant",
        "tool_execution_start:c1", "tool_execution_end:c1",
        "message_start:toolResult", "message_end:toolResult", "turn_end",
        "turn_start", "message_start:user", "message_end:user",
        "message_start:assistant", "message_end:assistant", "turn_end", "agent_end",
    ]
    assert text_of(rec.of("message_end")[-2]["message"]) == "change of plan"
    assert rec.of("tool_execution_end")[0]["isError"] is False  # the call was not skipped
    assert agent.steering_queue == ()


async def test_steering_queued_before_the_run_follows_the_prompt_in_the_first_turn(tmp_path):
    agent = Agent(model=scripted_model(tmp_path, [text_reply("ok")]))
    agent.steer(user("early"))
    rec = Recorder(agent)
    await agent.prompt([user("prompt")])
    assert rec.labels().count("turn_start") == 1
    users = [text_of(e["message"]) for e in rec.of("message_end") if e["message"]["role"] == "user"]
    assert users == ["prompt", "early"]


async def test_follow_up_becomes_a_new_turn_of_the_same_run(tmp_path):
    started, release = asyncio.Event(), asyncio.Event()
    model = scripted_model(tmp_path, [calls_reply(("c1", "slow", {})), text_reply("first"), text_reply("second")])
    agent = Agent(model=model, tools=[gated_tool("slow", started, release)])
    rec = Recorder(agent)
    run = asyncio.create_task(agent.prompt([user("go")]))
    await started.wait()
    agent.follow_up(user("and then"))
    release.set()
    await run
    labels = rec.labels()
    assert labels.count("agent_start") == 1 and labels.count("agent_end") == 1
    # the follow-up waits for the tool turn and the answer turn, then opens a third turn
    tail = labels[labels.index("message_end:toolResult"):]
    assert tail == [
        "message_end:toolResult", "turn_end",
        "turn_start", "message_start:assistant", "message_end:assistant", "turn_end",
        "turn_start", "message_start:user", "message_end:user",
        "message_start:assistant", "message_end:assistant", "turn_end", "agent_end",
    ]
    assert text_of(agent.messages[-1]) == "second"


@pytest.mark.parametrize(("mode", "user_groups"), [
    ("one-at-a-time", [["prompt"], ["f1"], ["f2"]]),
    ("all", [["prompt"], ["f1", "f2"]]),
])
async def test_follow_up_modes(tmp_path, mode, user_groups):
    replies = [text_reply(f"r{i}") for i in range(len(user_groups))]
    agent = Agent(model=scripted_model(tmp_path, replies), follow_up_mode=mode)
    agent.follow_up(user("f1"))
    agent.follow_up(user("f2"))
    rec = Recorder(agent)
    await agent.prompt([user("prompt")])
    turns: list[list[str]] = []
    for event in rec.events:
        if event["type"] == "turn_start":
            turns.append([])
        elif event["type"] == "message_end" and event["message"]["role"] == "user":
            turns[-1].append(text_of(event["message"]))
    assert turns == user_groups
    assert not agent.has_queued_messages()


@pytest.mark.parametrize(("mode", "per_turn"), [("one-at-a-time", [1, 1]), ("all", [2])])
async def test_steering_modes(tmp_path, mode, per_turn):
    started, release = asyncio.Event(), asyncio.Event()
    replies = [calls_reply(("c1", "slow", {}))] + [text_reply(f"r{i}") for i in range(len(per_turn))]
    agent = Agent(model=scripted_model(tmp_path, replies), tools=[gated_tool("slow", started, release)],
                  steering_mode=mode)
    rec = Recorder(agent)
    run = asyncio.create_task(agent.prompt([user("go")]))
    await started.wait()
    agent.steer(user("s1"))
    agent.steer(user("s2"))
    release.set()
    await run
    counts: list[int] = []
    for event in rec.events[rec.events.index(rec.of("turn_end")[0]):]:
        if event["type"] == "turn_start":
            counts.append(0)
        elif event["type"] == "message_end" and event["message"]["role"] == "user":
            counts[-1] += 1
    assert counts == per_turn


async def test_clear_queues_return_the_messages(tmp_path):
    agent = Agent(model=FAUX)
    agent.steer(user("a"))
    agent.follow_up(user("b"))
    assert agent.has_queued_messages()
    assert [text_of(m) for m in agent.clear_steering_queue()] == ["a"]
    assert [text_of(m) for m in agent.clear_follow_up_queue()] == ["b"]
    assert not agent.has_queued_messages()


# ---- abort ---------------------------------------------------------------------------------------


async def test_abort_while_streaming_keeps_the_partial_text(tmp_path):
    model = scripted_model(tmp_path, [text_reply("x" * 200, delayMs=5), text_reply("after")])
    agent = Agent(model=model)
    rec = Recorder(agent)

    def abort_on_third_delta(event: dict[str, Any]) -> None:
        if event["type"] == "message_update" and len(rec.of("message_update")) == 3:
            agent.abort()

    agent.subscribe(abort_on_third_delta)
    await agent.prompt([user("hi")])
    assert rec.labels()[-4:] == ["message_start:assistant", "message_end:assistant", "turn_end", "agent_end"]
    assert rec.of("message_update")[-1]["assistantMessageEvent"]["type"] == "text_end"
    final = rec.of("message_end")[-1]["message"]
    assert final["stopReason"] == "aborted" and final["errorMessage"] == "Request was aborted"
    assert 0 < len(text_of(final)) < 200
    assert not agent.is_streaming
    await agent.prompt([user("again")])  # idle again, a new prompt works
    assert text_of(agent.messages[-1]) == "after"


async def test_abort_while_a_tool_runs(tmp_path):
    started = asyncio.Event()

    async def forever(_id: str, _p: dict[str, Any], _signal: AbortSignal, _u: Any) -> ToolResult:
        started.set()
        await asyncio.Event().wait()
        raise AssertionError("unreachable")

    model = scripted_model(tmp_path, [calls_reply(("c1", "hang", {}), ("c2", "echo", {"text": "x"}))])
    agent = Agent(model=model, tools=[FakeTool("hang", forever), echo_tool()])
    rec = Recorder(agent)
    run = asyncio.create_task(agent.prompt([user("go")]))
    await started.wait()
    agent.abort()
    await run
    assert rec.labels()[6:] == [
        "tool_execution_start:c1", "tool_execution_start:c2", "tool_execution_end:c2", "tool_execution_end:c1",
        "message_start:toolResult", "message_end:toolResult", "message_start:toolResult", "message_end:toolResult",
        "turn_end", "turn_start", "message_start:assistant", "message_end:assistant", "turn_end", "agent_end",
    ]
    results = {e["toolCallId"]: e for e in rec.of("tool_execution_end")}
    assert results["c1"]["isError"] is True
    assert results["c1"]["result"]["content"] == [{"type": "text", "text": "Operation aborted"}]
    last = rec.of("message_end")[-1]["message"]
    assert last["stopReason"] == "aborted" and last["content"] == []
    assert last["errorMessage"] == "This operation was aborted"
    assert not agent.is_streaming


async def test_tool_may_answer_an_abort_with_its_own_result(tmp_path):
    started = asyncio.Event()

    async def shell(_id: str, _p: dict[str, Any], _signal: AbortSignal, _u: Any) -> ToolResult:
        started.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            return text_result("Command aborted", is_error=True)
        raise AssertionError("unreachable")

    agent = Agent(model=scripted_model(tmp_path, [calls_reply(("c1", "bash", {}))]), tools=[FakeTool("bash", shell)])
    rec = Recorder(agent)
    run = asyncio.create_task(agent.prompt([user("go")]))
    await started.wait()
    agent.abort()
    await run
    end = rec.of("tool_execution_end")[0]
    assert end["result"]["content"][0]["text"] == "Command aborted" and end["isError"] is True
    assert "durationMs" in end


async def test_a_tool_handling_abort_itself_is_not_cancelled(tmp_path):
    started = asyncio.Event()

    async def shell(_id: str, _p: dict[str, Any], signal: AbortSignal, _u: Any) -> ToolResult:
        started.set()
        await signal.wait()
        await asyncio.sleep(0)  # cleanup after the signal (killing a process) must not be interrupted
        raise ToolError("output so far\n\nCommand aborted")

    tool = FakeTool("bash", shell)
    tool.handles_abort = True  # type: ignore[attr-defined]
    agent = Agent(model=scripted_model(tmp_path, [calls_reply(("c1", "bash", {}))]), tools=[tool])
    rec = Recorder(agent)
    run = asyncio.create_task(agent.prompt([user("go")]))
    await started.wait()
    agent.abort()
    await run
    end = rec.of("tool_execution_end")[0]
    assert end["result"]["content"][0]["text"] == "output so far\n\nCommand aborted"
    assert end["isError"] is True


# ---- failures, continuation and hooks ------------------------------------------------------------


async def test_a_throwing_loop_ends_with_a_synthetic_error_message(tmp_path):
    async def broken(_messages: list[dict[str, Any]], _signal: AbortSignal) -> list[dict[str, Any]]:
        raise ValueError("context went wrong")

    agent = Agent(model=scripted_model(tmp_path, []), hooks=AgentHooks(transform_context=broken))
    rec = Recorder(agent)
    await agent.prompt([user("hi")])
    assert rec.labels() == [
        "agent_start", "turn_start", "message_start:user", "message_end:user",
        "message_start:assistant", "message_end:assistant", "turn_end", "agent_end",
    ]
    failure = rec.of("message_end")[-1]["message"]
    assert failure["stopReason"] == "error" and failure["errorMessage"] == "context went wrong"
    assert failure["content"] == [{"type": "text", "text": ""}]
    assert rec.of("agent_end")[0]["messages"] == [failure]
    assert not agent.is_streaming


async def test_continue_run_requests_without_a_new_message(tmp_path):
    agent = Agent(model=scripted_model(tmp_path, [text_reply("retried")]), messages=[user("hi")])
    rec = Recorder(agent)
    await agent.continue_run()
    assert rec.labels() == ["agent_start", "turn_start", "message_start:assistant", "message_end:assistant",
                            "turn_end", "agent_end"]
    with pytest.raises(RuntimeError, match="Cannot continue from message role: assistant"):
        await agent.continue_run()
    with pytest.raises(RuntimeError, match="No messages to continue from"):
        await Agent(model=FAUX).continue_run()


async def test_continue_run_after_an_assistant_delivers_queued_messages(tmp_path):
    agent = Agent(model=scripted_model(tmp_path, [text_reply("one"), text_reply("two")]))
    await agent.prompt([user("hi")])
    agent.follow_up(user("more"))
    await agent.continue_run()
    assert [text_of(m) for m in agent.messages] == ["hi", "one", "more", "two"]


async def test_request_hooks_shape_every_request(tmp_path):
    seen: list[tuple[Any, ...]] = []

    def spy_stream(model: Model, context: Any, options: StreamOptions) -> Any:
        from pi_coding_agent.ai.stream import stream

        roles = [m["role"] for m in context["messages"]]
        seen.append((context, options.api_key, options.thinking_level, options.headers, options.signal, roles))
        return stream(model, context, options)

    async def key(_model: Model) -> str:
        return "secret"

    async def prepare_next_turn() -> None:
        seen.append(("next turn",))

    hooks = AgentHooks(
        build_context=lambda msgs: {"systemPrompt": "custom", "messages": msgs},
        get_api_key=key,
        stream_options=lambda _model: StreamOptions(headers={"x-test": "1"}),
        prepare_next_turn=prepare_next_turn,
    )
    model = scripted_model(tmp_path, [calls_reply(("c1", "echo", {"text": "a"})), text_reply("ok")])
    agent = Agent(model=model, thinking_level="high", tools=[echo_tool()], hooks=hooks, stream_fn=spy_stream)
    await agent.prompt([user("hi")])
    first, next_turn, second = seen
    context, api_key, level, headers, signal, _roles = first
    assert context["systemPrompt"] == "custom" and [t["name"] for t in context["tools"]] == ["echo"]
    assert (api_key, level, headers) == ("secret", "high", {"x-test": "1"})
    assert isinstance(signal, AbortSignal)
    assert next_turn == ("next turn",)
    assert second[-1] == ["user", "assistant", "toolResult"]
    assert agent.messages[-1]["thinkingLevel"] == "high"


def test_default_context_folds_system_messages():
    messages = [
        {"role": "system", "content": "base prompt", "timestamp": 0},
        user("hi"),
        {"role": "system", "content": "", "timestamp": 0},
        {"role": "system", "content": "patch", "timestamp": 0},
    ]
    context = default_context(messages, [echo_tool()])
    assert context["systemPrompt"] == "base prompt\n\npatch"
    assert context["messages"] == [user("hi")]
    assert context["tools"][0] == {"name": "echo", "description": "a test tool",
                                   "parameters": echo_tool().parameters}
    assert default_context([user("x")], []) == {"messages": [user("x")]}
