"""What the codemode tool needs from the session, as a Protocol, and today's session adapter.

The tool sees the session only through :class:`CodemodeHost`: the catalog of callable tools, one
way to run an inner call through the agent's tool pipeline (hooks, permission gate, events), the
store entries on the current branch, a way to append a custom entry, and the model catalog.
``SessionCodemodeHost`` implements it over today's ``SessionRuntime``; it is the one place that
knows the runtime's shape (see docs/codemode.md, "Seams").
"""

from __future__ import annotations

import asyncio
import weakref
from dataclasses import dataclass, field
from typing import Any, Protocol

from pi_coding_agent.agent.tool import AgentTool, ToolResult
from pi_coding_agent.ai.abort import AbortSignal
from pi_coding_agent.ai.stream import StreamOptions
from pi_coding_agent.ai.types import JsonObject

STORE_ENTRY_TYPE = "codemode-store"
BUILTIN_NAMESPACE = None  # built-in and plain extension tools are listed before any namespace

# Output schemas of the built-in tools whose script results are structured (as pi declares them).
BASH_OUTPUT_SCHEMA: JsonObject = {
    "type": "object",
    "properties": {
        "output": {"type": "string", "description": "Combined stdout and stderr, possibly truncated"},
        "truncated": {"type": "boolean"},
        "full_output_path": {"type": "string", "description": "Full output, when truncated"},
        "exit_code": {"type": "number"},
        "wall_time_seconds": {"type": "number"},
    },
    "required": ["output", "truncated", "exit_code", "wall_time_seconds"],
}
READ_OUTPUT_SCHEMA: JsonObject = {"anyOf": [
    {"type": "string"},
    {"type": "object", "properties": {"type": {"const": "image"}, "data": {"type": "string"},
                                      "mimeType": {"type": "string"}, "note": {"type": "string"}},
     "required": ["type", "data", "mimeType", "note"]},
]}
_BUILTIN_OUTPUT_SCHEMAS = {"bash": BASH_OUTPUT_SCHEMA, "read": READ_OUTPUT_SCHEMA}


@dataclass
class Namespace:
    """A group of tools such as one MCP server; scripts may name it by any alias."""

    name: str
    description: str | None = None
    instructions: str | None = None
    aliases: list[str] = field(default_factory=list)


@dataclass
class CatalogTool:
    """One tool a script may call."""

    name: str
    description: str
    parameters: JsonObject
    output_schema: JsonObject | None = None
    namespace: Namespace | None = None
    exposure: str = "direct"  # "direct", "codemode", "deferred" (pi's MCP exposures)
    guidelines: list[str] = field(default_factory=list)


@dataclass
class InnerOutcome:
    """The result of one inner call as the agent pipeline finalised it."""

    call_id: str
    result: ToolResult


class CodemodeHost(Protocol):
    def callable_tools(self) -> list[CatalogTool]:
        """Every tool scripts may call, except codemode itself."""
        ...

    async def execute_tool(self, parent_id: str, call_id: str, name: str, args: object,
                           signal: AbortSignal) -> InnerOutcome:
        """Run one call through the agent's tool pipeline, with its own events."""
        ...

    def branch_entries(self) -> list[JsonObject]:
        """Entries from the root to the current leaf (for ``load()``)."""
        ...

    async def wait_for_reach(self, reach: str | list[str]) -> None:
        """Until the tool sources a script may reach (``"all"`` or the words of its source) are ready."""
        ...

    async def append_custom(self, custom_type: str, data: object) -> None:
        """A custom entry on the branch, announced as ``entry_appended``."""
        ...

    def models_of_type(self, kind: str, provider: str | None) -> list[JsonObject]:
        """Every known model of a type (``chat``, ``classifier``, ``image``)."""
        ...

    def available_of_type(self, kind: str, provider: str | None) -> list[JsonObject]:
        """Models of a type whose provider has working credentials."""
        ...

    def find_of_type(self, kind: str, provider: str, model_id: str) -> JsonObject | None: ...

    async def run_model(self, kind: str, model: JsonObject, context: JsonObject,
                        signal: AbortSignal) -> JsonObject:
        """Classify or generate images with the session's credentials; failures are results."""
        ...


def catalog_entry(tool: AgentTool) -> CatalogTool:
    """An agent tool as the catalog lists it; beyond the ``AgentTool`` members, tools may declare
    ``output_schema``, ``namespace`` and ``exposure`` attributes (MCP tools do)."""
    namespace = getattr(tool, "namespace", None)
    if isinstance(namespace, str):
        namespace = Namespace(namespace)
    return CatalogTool(
        name=tool.name, description=tool.description, parameters=tool.parameters,
        output_schema=getattr(tool, "output_schema", None) or _BUILTIN_OUTPUT_SCHEMAS.get(tool.name),
        namespace=namespace if isinstance(namespace, Namespace) else None,
        exposure=getattr(tool, "exposure", "direct"),
        guidelines=list(tool.prompt_guidelines),
    )


_locks: weakref.WeakKeyDictionary[object, asyncio.Lock] = weakref.WeakKeyDictionary()


def _exclusive_lock(runtime: object) -> asyncio.Lock:
    """One queue per session for inner calls that must not run concurrently."""
    lock = _locks.get(runtime)
    if lock is None:
        lock = _locks[runtime] = asyncio.Lock()
    return lock


class SessionRuntimeView(Protocol):
    """What the adapter reads of ``SessionRuntime`` (named here, so codemode sits below the runtime)."""

    agent: Any  # tools, hooks, tool_execution, _emit
    all_tools: dict[str, AgentTool]
    session_manager: Any  # get_branch(), append_custom()
    registry: Any  # models_of_type(), available_of_type(), find_of_type()
    settings: Any
    auth: Any  # prepare(provider): a due OAuth token is refreshed before a model call
    mcp: Any  # wait_for_reach(reach), or None without MCP

    def available_models(self) -> list[Any]: ...

    def has_auth(self, provider: str) -> bool: ...

    def request_options(self, model: Any) -> StreamOptions: ...


class SessionCodemodeHost:
    """:class:`CodemodeHost` over today's ``SessionRuntime``."""

    def __init__(self, runtime: SessionRuntimeView) -> None:
        self.rt = runtime

    def _tools(self) -> list[AgentTool]:
        """Active tools, plus registered tools only scripts reach (``codemode``/``deferred`` exposure)."""
        active = [t for t in self.rt.agent.tools if t.name != "codemode"]
        names = {t.name for t in active}
        indirect = [t for t in self.rt.all_tools.values() if t.name not in names and t.name != "codemode"
                    and getattr(t, "exposure", "direct") in ("codemode", "deferred")]
        return active + indirect

    def callable_tools(self) -> list[CatalogTool]:
        return [catalog_entry(t) for t in self._tools()]

    async def execute_tool(self, parent_id: str, call_id: str, name: str, args: object,
                           signal: AbortSignal) -> InnerOutcome:
        from pi_coding_agent.agent.tool_execution import ToolExecutor

        tools = self._tools()
        executor = ToolExecutor(tools, self.rt.agent.hooks, signal, self.rt.agent._emit)
        call = {"type": "toolCall", "id": call_id, "name": name, "arguments": args if args is not None else {}}
        tool = next((t for t in tools if t.name == name), None)
        exclusive = self.rt.agent.tool_execution == "sequential" or (tool is not None and tool.execution_mode == "sequential")
        if not exclusive:
            return InnerOutcome(call_id, await executor.run_nested(call, parent_id))  # type: ignore[arg-type]
        async with _exclusive_lock(self.rt):  # tools that must run alone take turns, as direct calls do
            return InnerOutcome(call_id, await executor.run_nested(call, parent_id))  # type: ignore[arg-type]

    def branch_entries(self) -> list[JsonObject]:
        return list(self.rt.session_manager.get_branch())

    async def wait_for_reach(self, reach: str | list[str]) -> None:
        if self.rt.mcp is not None:  # MCP servers still connecting register their tools when they connect
            await self.rt.mcp.wait_for_reach(reach)

    async def append_custom(self, custom_type: str, data: object) -> None:
        entry = self.rt.session_manager.append_custom(custom_type, data)
        await self.rt.agent._emit({"type": "entry_appended", "entry": entry})

    def models_of_type(self, kind: str, provider: str | None) -> list[JsonObject]:
        return [dict(m) for m in self.rt.registry.models_of_type(kind, provider)]

    def available_of_type(self, kind: str, provider: str | None) -> list[JsonObject]:
        if kind == "chat":  # as get_available_models lists them (an --api-key provider included)
            return [dict(m) for m in self.rt.available_models() if provider is None or m["provider"] == provider]
        return [dict(m) for m in self.rt.registry.available_of_type(kind, provider, self.rt.has_auth)]

    def find_of_type(self, kind: str, provider: str, model_id: str) -> JsonObject | None:
        found = self.rt.registry.find_of_type(kind, provider, model_id)
        return None if found is None else dict(found)

    async def run_model(self, kind: str, model: JsonObject, context: JsonObject,
                        signal: AbortSignal) -> JsonObject:
        from pi_coding_agent.coding.codemode.nonchat_calls import run_nonchat_model

        return await run_nonchat_model(self.rt, kind, model, context, signal)
