"""Running the tool calls of one assistant message: preparation, execution, events, result messages.

Every tool call gets exactly one ``tool_execution_start``, one ``tool_execution_end`` and one
``toolResult`` message, whatever happens to it (unknown tool, invalid arguments, blocked, thrown,
aborted): the model's next request must answer every call it made.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any, cast

from pi_coding_agent.agent.events import (
    CoreEvent,
    ToolExecutionEndEvent,
    ToolExecutionStartEvent,
    ToolExecutionUpdateEvent,
)
from pi_coding_agent.agent.hooks import AgentHooks
from pi_coding_agent.agent.tool import AgentTool, ToolResult
from pi_coding_agent.ai.abort import AbortSignal
from pi_coding_agent.ai.types import JsonObject, ToolCall, ToolResultMessage, now_ms

Emit = Callable[[CoreEvent], Awaitable[None]]

ABORTED_TEXT = "Operation aborted"
BLOCKED_TEXT = "Tool execution was blocked"


def truncated_call_text(name: str) -> str:
    return (
        f'Tool call "{name}" was not executed: the response hit the output token limit, so its arguments '
        "may be truncated. Re-issue the tool call with complete arguments."
    )


def error_result(text: str) -> ToolResult:
    """A failure as the model sees it (``details`` is ``{}``, as pi records it)."""
    return ToolResult(content=[{"type": "text", "text": text}], details={}, is_error=True)


@dataclass
class ToolBatch:
    """The result messages of one assistant message's calls, in source order."""

    messages: list[ToolResultMessage]
    terminate: bool = False  # every result asked to stop: no automatic follow-up request


@dataclass
class _Finalized:
    """A tool call with its final result."""

    call: ToolCall
    result: ToolResult
    duration_ms: int | None = None  # only when ``execute`` actually ran


@dataclass
class _Prepared:
    """A tool call whose tool was found and whose arguments were validated."""

    call: ToolCall
    tool: AgentTool
    args: JsonObject


class _UpdateRelay:
    """A tool's synchronous ``on_update`` calls as ``tool_execution_update`` events, emitted in order."""

    def __init__(self, call: ToolCall, emit: Emit, parent_id: str | None = None) -> None:
        self._call = call
        self._emit = emit
        self._parent_id = parent_id
        self._last: asyncio.Future[None] | None = None
        self._open = True

    def __call__(self, partial: ToolResult) -> None:
        if not self._open:
            return
        event: ToolExecutionUpdateEvent = {"type": "tool_execution_update", "toolCallId": self._call["id"], "toolName": self._call["name"],
                 "args": self._call["arguments"], "partialResult": partial.to_wire()}
        if self._parent_id is not None:
            event["parentToolCallId"] = self._parent_id
        self._last = asyncio.ensure_future(self._send(self._last, event))

    async def _send(self, previous: asyncio.Future[None] | None, event: ToolExecutionUpdateEvent) -> None:
        if previous is not None:
            await previous
        await self._emit(event)

    async def close(self) -> None:
        """Stop accepting updates and wait until the ones already sent reached every listener."""
        self._open = False
        if self._last is not None:
            await self._last


class ToolExecutor:
    """Executes one assistant message's tool calls with the agent's tools, hooks and abort signal."""

    def __init__(self, tools: Sequence[AgentTool], hooks: AgentHooks, signal: AbortSignal, emit: Emit) -> None:
        self._tools = {tool.name: tool for tool in tools}
        self._hooks = hooks
        self._signal = signal
        self._emit = emit

    def is_sequential(self, calls: list[ToolCall], mode: str) -> bool:
        """Sequential when asked for, or when any called tool must run alone."""
        return mode == "sequential" or any(
            (tool := self._tools.get(call["name"])) is not None and tool.execution_mode == "sequential" for call in calls
        )

    async def run(self, calls: list[ToolCall], mode: str) -> ToolBatch:
        finalized = await (self._sequential(calls) if self.is_sequential(calls, mode) else self._parallel(calls))
        return ToolBatch([m for _, m in finalized], _all_terminate([f for f, _ in finalized]))

    async def fail_truncated(self, calls: list[ToolCall]) -> ToolBatch:
        """A ``length`` stop: arguments may be cut off, so no call runs; each gets an error result."""
        messages = []
        for call in calls:
            await self._start(call)
            done = _Finalized(call, error_result(truncated_call_text(call["name"])))
            await self._end(done)
            messages.append(await self._result_message(done))
        return ToolBatch(messages)

    async def run_nested(self, call: ToolCall, parent_id: str) -> ToolResult:
        """One call a tool makes while it runs (a codemode script's ``tools.x()``): the same
        preparation, hooks and execution, events tagged ``parentToolCallId``, no result message."""
        await self._start(call, parent_id)
        prepared = await self._prepare(call)
        done = prepared if isinstance(prepared, _Finalized) else await self._execute(prepared, parent_id)
        await self._end(done, parent_id)
        return done.result

    async def _sequential(self, calls: list[ToolCall]) -> list[tuple[_Finalized, ToolResultMessage]]:
        out = []
        for call in calls:
            await self._start(call)
            prepared = await self._prepare(call)
            done = prepared if isinstance(prepared, _Finalized) else await self._execute(prepared)
            await self._end(done)
            out.append((done, await self._result_message(done)))
        return out

    async def _parallel(self, calls: list[ToolCall]) -> list[tuple[_Finalized, ToolResultMessage]]:
        # Preflight in source order; an immediate failure ends at once, the rest then run concurrently
        # and end in completion order; result messages follow in source order.
        slots: list[_Finalized | None] = []
        jobs: list[tuple[int, Awaitable[_Finalized]]] = []
        for call in calls:
            await self._start(call)
            prepared = await self._prepare(call)
            if isinstance(prepared, _Finalized):
                await self._end(prepared)
                slots.append(prepared)
            else:
                jobs.append((len(slots), self._execute_and_end(prepared)))
                slots.append(None)
        for (index, _), done in zip(jobs, await asyncio.gather(*(job for _, job in jobs)), strict=True):
            slots[index] = done
        out = []
        for slot in slots:
            assert slot is not None
            out.append((slot, await self._result_message(slot)))
        return out

    async def _execute_and_end(self, prepared: _Prepared) -> _Finalized:
        if self._signal.aborted:
            done = _Finalized(prepared.call, error_result(ABORTED_TEXT))
        else:
            done = await self._execute(prepared)
        await self._end(done)
        return done

    async def _prepare(self, call: ToolCall) -> _Prepared | _Finalized:
        """Resolve, repair, validate and clear one call, or give its immediate error result."""
        from pi_coding_agent.agent.validation import validate_tool_arguments  # with the first tool call

        if self._signal.aborted:
            return _Finalized(call, error_result(ABORTED_TEXT))
        tool = self._tools.get(call["name"])
        if tool is None:
            return _Finalized(call, error_result(f"Tool {call['name']} not found"))
        try:
            repaired = {**call, "arguments": tool.prepare_arguments(call["arguments"])}
            args = validate_tool_arguments(call["name"], tool.parameters, repaired)
            if self._hooks.before_tool_call is not None:
                decision = await self._hooks.before_tool_call(call, args)
                if self._signal.aborted:
                    return _Finalized(call, error_result(ABORTED_TEXT))
                if decision and decision.get("block"):
                    result = error_result(decision.get("reason") or BLOCKED_TEXT)
                    result.terminate = decision.get("terminate") is True
                    return _Finalized(call, result)
                if decision and "args" in decision:  # allowed with other arguments: valid ones too
                    args = validate_tool_arguments(call["name"], tool.parameters, {**call, "arguments": decision["args"]})
        except Exception as exc:
            return _Finalized(call, error_result(str(exc)))
        return _Prepared(call, tool, args)

    async def _execute(self, prepared: _Prepared, parent_id: str | None = None) -> _Finalized:
        """Run ``execute`` (cancelled when the run aborts), then let ``after_tool_call`` patch the result."""
        relay = _UpdateRelay(prepared.call, self._emit, parent_id)
        started = time.monotonic()
        task = asyncio.ensure_future(prepared.tool.execute(prepared.call["id"], prepared.args, self._signal, relay))
        remove: Callable[[], None] = _no_op if prepared.tool.handles_abort else self._signal.cancel_task_on_abort(task)
        try:
            result = await task
        except asyncio.CancelledError:
            current = asyncio.current_task()
            if current is not None and current.cancelling():
                raise  # the run itself is being cancelled, not just this tool
            result = error_result(ABORTED_TEXT)
        except Exception as exc:
            result = error_result(str(exc))
        else:
            result = replace(result, returned_error=result.is_error)
        finally:
            remove()
        duration_ms = round((time.monotonic() - started) * 1000)
        await relay.close()
        return _Finalized(prepared.call, await self._after(prepared, result), duration_ms)

    async def _after(self, prepared: _Prepared, result: ToolResult) -> ToolResult:
        if self._hooks.after_tool_call is None:
            return result
        try:
            patch = await self._hooks.after_tool_call(prepared.call, prepared.args, result)
        except Exception as exc:
            return error_result(str(exc))
        if not patch:
            return result
        return replace(
            result,
            content=_pick(patch, "content", result.content),
            details=_pick(patch, "details", result.details),
            is_error=_pick(patch, "isError", result.is_error),
            terminate=_pick(patch, "terminate", result.terminate),
            usage=_pick(patch, "usage", result.usage),
            # new content makes the old structured output stale unless the patch supplies one
            structured_content=patch.get("structuredContent",
                                         None if "content" in patch else result.structured_content),
        )

    async def _start(self, call: ToolCall, parent_id: str | None = None) -> None:
        event: ToolExecutionStartEvent = {"type": "tool_execution_start", "toolCallId": call["id"], "toolName": call["name"],
                 "args": call["arguments"]}
        if parent_id is not None:
            event["parentToolCallId"] = parent_id
        await self._emit(event)

    async def _end(self, done: _Finalized, parent_id: str | None = None) -> None:
        event: ToolExecutionEndEvent = {"type": "tool_execution_end", "toolCallId": done.call["id"], "toolName": done.call["name"],
                 "result": done.result.to_wire(), "isError": done.result.is_error}
        if done.duration_ms is not None:
            event["durationMs"] = done.duration_ms
        if parent_id is not None:
            event["parentToolCallId"] = parent_id
        await self._emit(event)

    async def _result_message(self, done: _Finalized) -> ToolResultMessage:
        # built key by key in pi's order (``isError`` and ``timestamp`` after the optional fields)
        fields: JsonObject = {"role": "toolResult", "toolCallId": done.call["id"],
                              "toolName": done.call["name"], "content": done.result.content or []}
        if done.result.details is not None:
            fields["details"] = done.result.details
        if done.result.usage is not None:
            fields["usage"] = done.result.usage
        fields["isError"] = done.result.is_error
        if done.duration_ms is not None:
            fields["durationMs"] = done.duration_ms
        fields["timestamp"] = now_ms()
        if done.result.nested_calls is not None:
            fields["nestedCalls"] = done.result.nested_calls
        message = cast(ToolResultMessage, fields)
        await self._emit({"type": "message_start", "message": message})
        await self._emit({"type": "message_end", "message": message})
        return message


def _pick(patch: JsonObject, key: str, default: Any) -> Any:
    value = patch.get(key)
    return default if value is None else value


def _all_terminate(finalized: list[_Finalized]) -> bool:
    return bool(finalized) and all(f.result.terminate for f in finalized)


def _no_op() -> None:
    """Nothing to undo: a cooperative tool watches the signal itself."""
