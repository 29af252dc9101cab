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
    Message,
    ToolResultMessage,
    Usage,
    UserContent,
)


class BashExecutionMessage(TypedDict):
    """A command the user ran in the session's shell (RPC ``bash``, ``!`` in the editor)."""

    role: Literal["bashExecution"]
    command: str
    output: str
    exitCode: NotRequired[int]  # absent when the command was cancelled before it exited
    cancelled: bool
    truncated: bool
    fullOutputPath: NotRequired[str]
    timestamp: int
    excludeFromContext: NotRequired[bool]  # ``!!``: kept in the transcript, never sent to the model


class CustomMessage(TypedDict):
    """A message an extension put in the transcript (``pi.send_message``)."""

    role: Literal["custom"]
    customType: str
    content: str | list[UserContent]
    display: bool
    details: NotRequired[object]  # the extension's own record (never sent to the model)
    timestamp: int


class BranchSummaryMessage(TypedDict):
    role: Literal["branchSummary"]
    summary: str
    fromId: str | None
    timestamp: int


class CompactionSummaryMessage(TypedDict):
    role: Literal["compactionSummary"]
    summary: str
    tokensBefore: int
    timestamp: int


AgentMessage: TypeAlias = (
    Message | BashExecutionMessage | CustomMessage | BranchSummaryMessage | CompactionSummaryMessage
)
"""A transcript message: the LLM's roles (``ai.types.Message``) and those of the coding layer,
which only it reads (the agent core passes them on unread; its ``build_context`` hook turns them
into LLM messages). Declared here because a union cannot be extended from the layer above. Every
role is a ``TypedDict``: the messages stay plain dicts at run time."""


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
