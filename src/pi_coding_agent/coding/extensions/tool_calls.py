"""``ctx`` of an extension tool's ``execute``: ``ctx.tools`` and ``ctx.execute_tool`` (pi's
``ExtensionToolContext``), so a tool can run other tools.

A nested call goes through the agent's own pipeline (argument preparation and validation, the
``tool_call`` and ``tool_result`` handlers, ``tool_execution_*`` events tagged ``parentToolCallId``,
ids ``<parent id>/<n>``), the same path codemode scripts take. It never raises for a tool failure:
unknown tools, invalid arguments, blocked calls and raising tools come back as ``isError`` results.
Nested calls add no transcript entries; the calling tool's result message keeps their bounded
record as ``nestedCalls`` and their ``usage`` is added to its own.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from pi_coding_agent.ai.abort import AbortSignal
from pi_coding_agent.ai.types import JsonObject
from pi_coding_agent.coding.codemode.host import SessionCodemodeHost
from pi_coding_agent.coding.codemode.nested_calls import NestedCalls
from pi_coding_agent.coding.events import CoreEvent
from pi_coding_agent.coding.extensions.context import ExtensionContext

if TYPE_CHECKING:
    from pi_coding_agent.agent.tool import ToolResult
    from pi_coding_agent.coding.extensions.host import RunnerHandle
    from pi_coding_agent.coding.extensions.registry import Binding


class ToolContext(ExtensionContext):
    """``ctx`` for one extension tool call."""

    def __init__(self, runner: RunnerHandle, binding: Binding, call_id: str, signal: AbortSignal) -> None:
        super().__init__(runner, binding)
        self._call_id = call_id
        self._call_signal = signal
        self._calls = 0
        self.nested = NestedCalls()
        self.nested_usage: JsonObject | None = None

    def _host(self) -> SessionCodemodeHost:
        return SessionCodemodeHost(self._live().rt)

    @property
    def tools(self) -> list[JsonObject]:
        """The tools ``execute_tool`` can reach: ``name``, ``description``, ``parameters``."""
        return [{"name": t.name, "description": t.description, "parameters": t.parameters}
                for t in self._host().callable_tools()]

    async def execute_tool(self, name: str, args: object = None, *, signal: AbortSignal | None = None,
                           on_update: Callable[[JsonObject], object] | None = None) -> JsonObject:
        """Run another tool: ``{toolCall, result: {content, details?, ...}, isError}`` (failures included);
        ``on_update`` receives each partial result the nested tool reports."""
        host = self._host()
        self._calls += 1
        call_id = f"{self._call_id}/{self._calls}"
        record = self.nested.start(call_id, name, args)
        started = time.monotonic()
        remove = self._live().rt.agent.subscribe(_updates_of(call_id, on_update)) if on_update else None
        try:
            outcome = await host.execute_tool(self._call_id, call_id, name, args, signal or self._call_signal)
        finally:
            if remove is not None:
                remove()
        result = outcome.result
        self.nested.finish(record, result.is_error, _text(result), (time.monotonic() - started) * 1000)
        if result.usage is not None:
            self.nested_usage = add_usage(self.nested_usage, result.usage)
        call = {"type": "toolCall", "id": call_id, "name": name, "arguments": {} if args is None else args}
        return {"toolCall": call, "result": result.to_wire(), "isError": result.is_error}


def _updates_of(call_id: str, on_update: Callable[[JsonObject], object]) -> Callable[[CoreEvent], None]:
    """An agent-event listener passing the nested call's ``tool_execution_update`` results on."""
    def listen(event: CoreEvent) -> None:
        if event["type"] == "tool_execution_update" and event["toolCallId"] == call_id:
            on_update(event["partialResult"])

    return listen


def _text(result: ToolResult) -> str:
    return "\n".join(str(block.get("text", "")) for block in result.content if block.get("type") == "text")


def add_usage(total: dict[str, Any] | None, usage: dict[str, Any]) -> JsonObject:
    """Token counts (and the ``cost`` object) summed key by key."""
    out = dict(total or {})
    for key, value in usage.items():
        if isinstance(value, dict):
            out[key] = add_usage(out.get(key) if isinstance(out.get(key), dict) else None, value)
        elif isinstance(value, int | float) and not isinstance(value, bool):
            out[key] = out.get(key, 0) + value
    return out
