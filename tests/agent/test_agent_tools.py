"""Tool execution inside the agent loop: orders, failures, validation, hooks, modes, termination."""

from __future__ import annotations

import asyncio
from typing import Any

from pi_coding_agent.agent import Agent, AgentHooks
from pi_coding_agent.agent.tool import ToolError, ToolResult, text_result
from pi_coding_agent.ai.abort import AbortSignal
from tests.agent.test_agent_loop import (
    FakeTool,
    Recorder,
    calls_reply,
    echo_tool,
    scripted_model,
    text_reply,
    user,
)


async def run_agent(tmp_path, replies: list[dict[str, Any]], tools: list[Any], **options: Any) -> Recorder:
    agent = Agent(model=scripted_model(tmp_path, replies), tools=tools, **options)
    rec = Recorder(agent)
    await agent.prompt([user("go")])
    return rec


def tool_labels(rec: Recorder) -> list[str]:
    return [x for x in rec.labels() if x.startswith(("tool_execution", "message_start:toolResult"))]


def result_text(event: dict[str, Any]) -> str:
    return str(event["result"]["content"][0]["text"])


async def test_parallel_calls_start_in_order_end_in_completion_order_and_report_in_order(tmp_path):
    b_ended = asyncio.Event()

    async def slow_a(_id: str, _p: dict[str, Any], _s: AbortSignal, _u: Any) -> ToolResult:
        await b_ended.wait()  # finishes only after b's end event reached the listeners
        return text_result("a")

    async def quick_b(_id: str, _p: dict[str, Any], _s: AbortSignal, _u: Any) -> ToolResult:
        return text_result("b")

    agent = Agent(model=scripted_model(tmp_path, [calls_reply(("a", "ta", {}), ("b", "tb", {})), text_reply("ok")]),
                  tools=[FakeTool("ta", slow_a), FakeTool("tb", quick_b)])
    rec = Recorder(agent)
    agent.subscribe(lambda e: b_ended.set() if e["type"] == "tool_execution_end" and e["toolCallId"] == "b" else None)
    await agent.prompt([user("go")])
    assert tool_labels(rec) == [
        "tool_execution_start:a", "tool_execution_start:b", "tool_execution_end:b", "tool_execution_end:a",
        "message_start:toolResult", "message_start:toolResult",
    ]
    results = rec.of("turn_end")[0]["toolResults"]
    assert [m["toolCallId"] for m in results] == ["a", "b"]
    assert [m["content"][0]["text"] for m in results] == ["a", "b"]
    assert all(m["isError"] is False and "durationMs" in m for m in results)
    assert "details" not in results[0]
    assert list(results[0]) == ["role", "toolCallId", "toolName", "content", "isError", "durationMs", "timestamp"]


async def test_failing_tool_is_an_error_result_and_the_run_goes_on(tmp_path):
    async def boom(_id: str, _p: dict[str, Any], _s: AbortSignal, _u: Any) -> ToolResult:
        raise ToolError("ENOENT: no such file or directory")

    async def crash(_id: str, _p: dict[str, Any], _s: AbortSignal, _u: Any) -> ToolResult:
        raise KeyError("oops")

    rec = await run_agent(tmp_path, [calls_reply(("c1", "boom", {}), ("c2", "crash", {})), text_reply("sorry")],
                          [FakeTool("boom", boom), FakeTool("crash", crash)])
    ends = {e["toolCallId"]: e for e in rec.of("tool_execution_end")}
    assert ends["c1"]["isError"] is True
    assert ends["c1"]["result"] == {"content": [{"type": "text", "text": "ENOENT: no such file or directory"}],
                                    "details": {}}
    assert result_text(ends["c2"]) == "'oops'"
    assert "durationMs" in ends["c1"]
    message = rec.of("turn_end")[0]["toolResults"][0]
    assert message["details"] == {} and message["isError"] is True and "durationMs" in message
    assert rec.of("agent_end")[0]["messages"][-1]["stopReason"] == "stop"


async def test_unknown_tool(tmp_path):
    rec = await run_agent(tmp_path, [calls_reply(("c1", "nope", {"x": 1})), text_reply("ok")], [echo_tool()])
    end = rec.of("tool_execution_end")[0]
    assert result_text(end) == "Tool nope not found"
    assert end["isError"] is True and "durationMs" not in end
    assert rec.of("tool_execution_start")[0]["args"] == {"x": 1}


async def test_validation_failure_text(tmp_path):
    tool = echo_tool("edit")
    tool.parameters = {
        "type": "object",
        "properties": {"path": {"type": "string"}, "edits": {"type": "array", "items": {
            "type": "object", "properties": {"oldText": {"type": "string"}, "newText": {"type": "string"}},
            "required": ["oldText", "newText"]}}},
        "required": ["path", "edits"],
    }
    args = {"edits": [{"oldText": "a"}]}
    rec = await run_agent(tmp_path, [calls_reply(("c1", "edit", args)), text_reply("ok")], [tool])
    assert result_text(rec.of("tool_execution_end")[0]) == (
        'Validation failed for tool "edit":\n'
        "  - path: missing\n"
        "  - edits.0.newText: missing\n\n"
        "Received arguments:\n"
        '{\n  "edits": [\n    {\n      "oldText": "a"\n    }\n  ]\n}'
    )
    assert tool.calls == []


async def test_arguments_are_repaired_coerced_and_copied(tmp_path):
    async def mutate(_id: str, params: dict[str, Any], _s: AbortSignal, _u: Any) -> ToolResult:
        params["tags"].append("added by the tool")
        return text_result("ok")

    tool = FakeTool("count", mutate, {"type": "object", "properties": {"n": {"type": "integer"}, "tags": {
        "type": "array", "items": {"type": "string"}}}, "required": ["n"]})
    tool.prepare_arguments = lambda args: {("n" if k == "count" else k): v for k, v in args.items()}  # type: ignore[attr-defined]
    sent = {"count": "3", "tags": "x"}
    rec = await run_agent(tmp_path, [calls_reply(("c1", "count", sent)), text_reply("ok")], [tool])
    assert tool.calls == [{"n": 3, "tags": ["x", "added by the tool"]}]
    assert rec.of("tool_execution_end")[0]["isError"] is False
    assistant = rec.of("turn_end")[0]["message"]
    assert assistant["content"][0]["arguments"] == sent  # the transcript keeps what the model sent


async def test_before_tool_call_can_block(tmp_path):
    async def gate(call: Any, args: dict[str, Any]) -> dict[str, Any] | None:
        if call["id"] == "c1":
            return {"block": True, "reason": "not in this directory"}
        if call["id"] == "c2":
            return {"block": True}
        return None

    tool = echo_tool()
    calls = calls_reply(("c1", "echo", {"text": "1"}), ("c2", "echo", {"text": "2"}), ("c3", "echo", {"text": "3"}))
    rec = await run_agent(tmp_path, [calls, text_reply("ok")], [tool], hooks=AgentHooks(before_tool_call=gate))
    ends = {e["toolCallId"]: e for e in rec.of("tool_execution_end")}
    assert result_text(ends["c1"]) == "not in this directory"
    assert result_text(ends["c2"]) == "Tool execution was blocked"
    assert result_text(ends["c3"]) == "echo 3"
    assert tool.calls == [{"text": "3"}]
    # blocked calls end during preflight, before the allowed call ran
    assert tool_labels(rec)[:5] == ["tool_execution_start:c1", "tool_execution_end:c1",
                                    "tool_execution_start:c2", "tool_execution_end:c2", "tool_execution_start:c3"]


async def test_after_tool_call_patches_the_result(tmp_path):
    async def patch(call: Any, args: dict[str, Any], result: ToolResult) -> dict[str, Any] | None:
        assert result.content[0]["text"] == "echo hi" and result.is_error is False
        return {"content": [{"type": "text", "text": "patched"}], "isError": True, "details": {"why": "test"}}

    rec = await run_agent(tmp_path, [calls_reply(("c1", "echo", {"text": "hi"})), text_reply("ok")], [echo_tool()],
                          hooks=AgentHooks(after_tool_call=patch))
    end = rec.of("tool_execution_end")[0]
    assert end["result"] == {"content": [{"type": "text", "text": "patched"}], "details": {"why": "test"}}
    assert end["isError"] is True
    assert rec.of("turn_end")[0]["toolResults"][0]["details"] == {"why": "test"}


async def test_updates_come_between_start_and_end(tmp_path):
    async def chatty(_id: str, _p: dict[str, Any], _s: AbortSignal, update: Any) -> ToolResult:
        update(ToolResult())
        update(text_result("half"))
        await asyncio.sleep(0)
        update(text_result("most"))
        return text_result("all")

    rec = await run_agent(tmp_path, [calls_reply(("c1", "chatty", {"k": 1})), text_reply("ok")],
                          [FakeTool("chatty", chatty)])
    assert tool_labels(rec) == ["tool_execution_start:c1", "tool_execution_update:c1", "tool_execution_update:c1",
                                "tool_execution_update:c1", "tool_execution_end:c1", "message_start:toolResult"]
    updates = rec.of("tool_execution_update")
    assert [u["partialResult"] for u in updates] == [
        {"content": []}, {"content": [{"type": "text", "text": "half"}]}, {"content": [{"type": "text", "text": "most"}]}]
    assert updates[0]["args"] == {"k": 1} and updates[0]["toolName"] == "chatty"


async def test_a_sequential_tool_makes_the_batch_sequential(tmp_path):
    one = echo_tool("one")
    one.execution_mode = "sequential"
    rec = await run_agent(tmp_path, [calls_reply(("c1", "one", {}), ("c2", "echo", {})), text_reply("ok")],
                          [one, echo_tool()])
    assert tool_labels(rec) == ["tool_execution_start:c1", "tool_execution_end:c1", "message_start:toolResult",
                                "tool_execution_start:c2", "tool_execution_end:c2", "message_start:toolResult"]


async def test_sequential_agent_option(tmp_path):
    rec = await run_agent(tmp_path, [calls_reply(("c1", "echo", {}), ("c2", "echo", {})), text_reply("ok")],
                          [echo_tool()], tool_execution="sequential")
    assert tool_labels(rec)[:3] == ["tool_execution_start:c1", "tool_execution_end:c1", "message_start:toolResult"]


async def test_length_stop_runs_no_call_and_continues(tmp_path):
    tool = echo_tool()
    replies = [calls_reply(("c1", "echo", {"text": "cut"}), stopReason="length"), text_reply("retrying")]
    rec = await run_agent(tmp_path, replies, [tool])
    assert tool.calls == []
    end = rec.of("tool_execution_end")[0]
    assert result_text(end) == (
        'Tool call "echo" was not executed: the response hit the output token limit, so its arguments may be '
        "truncated. Re-issue the tool call with complete arguments."
    )
    assert end["isError"] is True and "durationMs" not in end
    assert rec.labels().count("turn_start") == 2
    assert rec.of("message_end")[-1]["message"]["content"][0]["text"] == "retrying"


async def test_terminating_results_end_the_run_without_another_request(tmp_path):
    async def final(_id: str, _p: dict[str, Any], _s: AbortSignal, _u: Any) -> ToolResult:
        return ToolResult(content=[{"type": "text", "text": "bye"}], terminate=True)

    rec = await run_agent(tmp_path, [calls_reply(("c1", "final", {})), text_reply("never requested")],
                          [FakeTool("final", final)])
    assert rec.labels().count("turn_start") == 1
    assert [m["role"] for m in rec.of("agent_end")[0]["messages"]] == ["user", "assistant", "toolResult"]


async def test_one_non_terminating_result_keeps_the_loop_going(tmp_path):
    async def final(_id: str, _p: dict[str, Any], _s: AbortSignal, _u: Any) -> ToolResult:
        return ToolResult(content=[], terminate=True)

    rec = await run_agent(tmp_path, [calls_reply(("c1", "final", {}), ("c2", "echo", {})), text_reply("ok")],
                          [FakeTool("final", final), echo_tool()])
    assert rec.labels().count("turn_start") == 2
    assert rec.of("turn_end")[0]["toolResults"][0]["content"] == []
