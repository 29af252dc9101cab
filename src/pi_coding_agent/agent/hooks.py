"""Optional hooks through which the coding layer shapes a run without the agent core knowing why."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from pi_coding_agent.agent.events import AgentMessage
from pi_coding_agent.agent.tool import ToolResult
from pi_coding_agent.ai.abort import AbortSignal
from pi_coding_agent.ai.records import record
from pi_coding_agent.ai.stream import StreamOptions
from pi_coding_agent.ai.types import AssistantMessage, Context, Model, ToolCall, ToolResultMessage


@record
class AgentHooks:
    """Every hook is optional; an absent hook costs nothing.

    * ``build_context(transcript) -> Context``: the LLM request for the transcript. A returned
      context without a ``tools`` key gets the declarations of the agent's tools.
    * ``transform_context(transcript, signal) -> transcript``: runs before each request.
    * ``before_tool_call(call, args) -> {"block": True, "reason"?, "terminate"?} | {"args": new_args} | None``:
      block the call, or run it with other arguments (validated like the model's).
    * ``after_tool_call(call, args, result) -> {"content"?, "details"?, "isError"?, "usage"?, "terminate"?} | None``.
    * ``get_api_key(model)``: asked before every request (keys may expire during a run).
    * ``prepare_next_turn()``: between turns, before the next ``turn_start`` (threshold compaction).
    * ``turn_start_messages() -> messages``: right after a later ``turn_start``, messages to add before
      the request (a system message declaring tools a tool loaded during the run, as pi records it).
    * ``finish_turn(message, tool_results) -> bool``: once a turn's messages are all in, just before
      its ``turn_end``; True asks for one more request when the run would otherwise stop (the
      transcript must then end with something the model can answer).
    * ``route_request(transcript, signal) -> (model, thinking_level)``: the model and level of one
      request (a virtual model's router), asked before ``build_context``; what it raises ends the
      request with an error response. A hook that replaced the transcript (a compaction for the
      routed model) has the request built from the new one.
    * ``stream_options(model) -> StreamOptions``: extra per-request options (headers, budgets,
      on_payload); the agent sets ``signal``, ``thinking_level`` and a resolved ``api_key`` on them.
    """

    build_context: Callable[[list[AgentMessage]], Context] | None = None
    transform_context: Callable[[list[AgentMessage], AbortSignal], Awaitable[list[AgentMessage]]] | None = None
    before_tool_call: Callable[[ToolCall, dict[str, Any]], Awaitable[dict[str, Any] | None]] | None = None
    after_tool_call: Callable[[ToolCall, dict[str, Any], ToolResult], Awaitable[dict[str, Any] | None]] | None = None
    get_api_key: Callable[[Model], Awaitable[str | None]] | None = None
    prepare_next_turn: Callable[[], Awaitable[None]] | None = None
    turn_start_messages: Callable[[], list[AgentMessage]] | None = None
    finish_turn: Callable[[AssistantMessage, list[ToolResultMessage]], Awaitable[bool]] | None = None
    route_request: Callable[[list[AgentMessage], AbortSignal], Awaitable[tuple[Model, str]]] | None = None
    stream_options: Callable[[Model], StreamOptions] | None = None
