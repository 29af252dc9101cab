"""The events a session emits: what RPC mode writes on stdout and SDK subscribers receive, typed.

One ``TypedDict`` per event ``type`` (pi's camelCase wire names) and their union ``AgentEvent``.
Events stay plain dicts at run time (they are written to stdout and session files as they are);
these types are for readers and for type checkers of SDK hosts. (No postponed annotations, as in
``ai/types.py``: string annotations would each be compiled at import.)
"""

from typing import TYPE_CHECKING, Any, Literal, NotRequired, TypedDict

if TYPE_CHECKING:
    from pi_coding_agent.coding.session.entries import SessionEntry

Message = dict[str, Any]  # a transcript message (user, assistant, toolResult, custom, bashExecution, ...)


class AgentStartEvent(TypedDict):
    type: Literal["agent_start"]


class AgentEndEvent(TypedDict):
    type: Literal["agent_end"]
    messages: list[Message]
    willRetry: bool


class TurnStartEvent(TypedDict):
    type: Literal["turn_start"]


class TurnEndEvent(TypedDict):
    type: Literal["turn_end"]
    message: Message
    toolResults: list[Message]


class MessageStartEvent(TypedDict):
    type: Literal["message_start"]
    message: Message


class MessageUpdateEvent(TypedDict):
    type: Literal["message_update"]
    usage: dict[str, Any]
    assistantMessageEvent: dict[str, Any]  # text_delta, thinking_delta, toolcall_delta, ... of ai.stream


class MessageEndEvent(TypedDict):
    type: Literal["message_end"]
    message: Message


class _ToolExecution(TypedDict):
    toolCallId: str
    toolName: str


class ToolExecutionStartEvent(_ToolExecution):
    type: Literal["tool_execution_start"]
    args: dict[str, Any]


class ToolExecutionUpdateEvent(_ToolExecution):
    type: Literal["tool_execution_update"]
    args: dict[str, Any]
    partialResult: dict[str, Any]


class ToolExecutionEndEvent(_ToolExecution):
    type: Literal["tool_execution_end"]
    result: dict[str, Any]
    isError: bool
    durationMs: NotRequired[int]


class QueueUpdateEvent(TypedDict):
    type: Literal["queue_update"]
    steering: list[str]
    followUp: list[str]


class CompactionStartEvent(TypedDict):
    type: Literal["compaction_start"]
    reason: str  # "manual" | "threshold" | "overflow"


class CompactionEndEvent(TypedDict):
    type: Literal["compaction_end"]
    reason: str
    result: NotRequired[dict[str, Any]]
    aborted: bool
    willRetry: bool
    errorMessage: NotRequired[str]


class AutoRetryStartEvent(TypedDict):
    type: Literal["auto_retry_start"]
    attempt: int
    maxAttempts: int
    delayMs: int
    errorMessage: str


class AutoRetryEndEvent(TypedDict):
    type: Literal["auto_retry_end"]
    success: bool
    attempt: int
    finalError: NotRequired[str]


class AgentSettledEvent(TypedDict):
    """Exactly one per session-level run, after retries, compaction and queued continuations."""

    type: Literal["agent_settled"]
    aborted: bool


class ThinkingLevelChangedEvent(TypedDict):
    type: Literal["thinking_level_changed"]
    level: str


class SessionInfoChangedEvent(TypedDict):
    type: Literal["session_info_changed"]
    name: str


class EntryAppendedEvent(TypedDict):
    type: Literal["entry_appended"]
    entry: "SessionEntry"


class ExtensionErrorEvent(TypedDict):
    type: Literal["extension_error"]
    extensionPath: str
    event: str
    error: str


class SummarizationRetryEvent(TypedDict):
    type: Literal["summarization_retry_scheduled", "summarization_retry_attempt_start",
                  "summarization_retry_finished"]


AgentEvent = (
    AgentStartEvent | AgentEndEvent | TurnStartEvent | TurnEndEvent | MessageStartEvent | MessageUpdateEvent
    | MessageEndEvent | ToolExecutionStartEvent | ToolExecutionUpdateEvent | ToolExecutionEndEvent
    | QueueUpdateEvent | CompactionStartEvent | CompactionEndEvent | AutoRetryStartEvent | AutoRetryEndEvent
    | AgentSettledEvent | ThinkingLevelChangedEvent | SessionInfoChangedEvent | EntryAppendedEvent
    | ExtensionErrorEvent | SummarizationRetryEvent
)
