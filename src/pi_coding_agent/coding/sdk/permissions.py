"""``can_use_tool``: the host's say over every tool call, and the one gate it and the run limits share.

The gate is the agent's ``before_tool_call`` hook, which every call goes through before it runs
(built-in, custom, MCP and extension tools, and the calls a codemode script makes), after the
extensions' ``tool_call`` handlers had theirs. Its answer: run the call, run it with other
arguments (validated again against the tool's schema), or refuse it with a text the model reads.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from pi_coding_agent.ai.types import JsonObject

if TYPE_CHECKING:
    from pi_coding_agent.ai.types import ToolCall
    from pi_coding_agent.coding.sdk.limits import RunLimits

DENIED_TEXT = "Permission to use this tool was denied."


@dataclass(frozen=True)
class Allow:
    """Run the call; with ``args``, run it with those arguments instead of the model's."""

    args: JsonObject | None = None


@dataclass(frozen=True)
class Deny:
    """Do not run the call; the model reads ``message`` as its result. ``interrupt`` also aborts the run."""

    message: str = DENIED_TEXT
    interrupt: bool = False


@dataclass(frozen=True)
class ToolContext:
    """Where the call comes from: the session, the model's id for the call, the session's cwd."""

    session_id: str
    tool_call_id: str
    cwd: Path


Decision = Allow | Deny | bool
CanUseTool = Callable[[str, JsonObject, ToolContext], Awaitable[Decision]]
Hook = Callable[["ToolCall", JsonObject], Awaitable[JsonObject | None]]


def tool_gate(previous: Hook | None, limits: Callable[[], RunLimits], can_use_tool: CanUseTool | None,
              context: Callable[[str], ToolContext], interrupt: Callable[[], None]) -> Hook:
    """The ``before_tool_call`` hook: ``previous`` (the extensions') first, then the limits, then the host
    (whose ``Deny(interrupt=True)`` calls ``interrupt``)."""

    async def before_tool_call(call: ToolCall, args: JsonObject) -> JsonObject | None:
        if previous is not None and (decision := await previous(call, args)) and decision.get("block"):
            return decision
        refusal = limits().refusal()
        if refusal is not None:
            return {"block": True, "reason": refusal, "terminate": True}
        if can_use_tool is None:
            return None
        answer = await can_use_tool(call["name"], args, context(call["id"]))
        if isinstance(answer, Deny) and answer.interrupt:
            interrupt()
        return _as_hook_decision(answer)

    return before_tool_call


def _as_hook_decision(decision: Decision) -> JsonObject | None:
    if decision is True or (isinstance(decision, Allow) and decision.args is None):
        return None
    if isinstance(decision, Allow):
        return {"args": decision.args}
    if isinstance(decision, Deny):
        return {"block": True, "reason": decision.message}
    return {"block": True, "reason": DENIED_TEXT}
