"""The events of the agent core, typed: one ``TypedDict`` per event ``type`` and their union.

The coding layer's ``coding/events.py`` extends this union with the session's own events. Events
stay plain dicts at run time (RPC writes them out as they are). (No postponed annotations, as in
``ai/types.py``: string annotations would each be compiled at import.)
"""

from typing import Any, Literal, NotRequired, TypeAlias, TypedDict

from pi_coding_agent.ai.types import (
    AssistantMessage,
    AssistantMessageEvent,
    JsonObject,
    ToolResultMessage,
    Usage,
)

AgentMessage: TypeAlias = dict[str, Any]
"""A transcript message: the LLM's roles (``ai.types.Message``) and those of the layers above
(``bashExecution``, ``custom``, ``branchSummary``, ...), which only they read; the agent core
passes every one on unread, so the role set stays open."""


class AgentStartEvent(TypedDict):
    type: Literal["agent_start"]


class AgentEndEvent(TypedDict):
    type: Literal["agent_end"]
    messages: list[AgentMessage]
    willRetry: bool


class TurnStartEvent(TypedDict):
    type: Literal["turn_start"]


class TurnEndEvent(TypedDict):
    type: Literal["turn_end"]
    message: AssistantMessage
    toolResults: list[ToolResultMessage]


class MessageStartEvent(TypedDict):
    type: Literal["message_start"]
    message: AgentMessage


class MessageUpdateEvent(TypedDict):
    type: Literal["message_update"]
    usage: Usage
    assistantMessageEvent: AssistantMessageEvent  # a block event (text_delta, toolcall_end, ...)


class MessageEndEvent(TypedDict):
    type: Literal["message_end"]
    message: AgentMessage


class _ToolExecution(TypedDict):
    toolCallId: str
    toolName: str
    parentToolCallId: NotRequired[str]  # a call made inside another tool's run (codemode)


class ToolExecutionStartEvent(_ToolExecution):
    type: Literal["tool_execution_start"]
    args: dict[str, Any]  # the model's arguments, as the tool call holds them


class ToolExecutionUpdateEvent(_ToolExecution):
    type: Literal["tool_execution_update"]
    args: dict[str, Any]
    partialResult: JsonObject


class ToolExecutionEndEvent(_ToolExecution):
    type: Literal["tool_execution_end"]
    result: JsonObject
    isError: bool
    durationMs: NotRequired[int]


CoreEvent: TypeAlias = (
    AgentStartEvent | AgentEndEvent | TurnStartEvent | TurnEndEvent | MessageStartEvent | MessageUpdateEvent
    | MessageEndEvent | ToolExecutionStartEvent | ToolExecutionUpdateEvent | ToolExecutionEndEvent
)
"""What the agent core emits (``Agent.subscribe`` listeners receive these)."""
