"""The public types of what an SDK session hands its host: events and messages.

``AgentEvent`` is a union of ``TypedDict`` s discriminated by their ``type`` field (a ``Literal``), so
a type checker narrows on it::

    async for event in session.stream("hi"):
        if event["type"] == "message_update":
            event["assistantMessageEvent"]        # known to be a MessageUpdateEvent here
        elif event["type"] == "agent_settled":
            event["aborted"]

At run time every event is the plain dict ``pi --mode rpc`` writes (camelCase fields). Messages are
dicts too: ``UserMessage``, ``AssistantMessage`` and ``ToolResultMessage`` describe the common
roles (a transcript may hold others: custom, bashExecution, compaction summaries).
"""

from pi_coding_agent.ai.types import (
    AssistantMessage,
    ImageContent,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    Usage,
    UsageCost,
    UserMessage,
)
from pi_coding_agent.coding.events import (
    AgentEndEvent,
    AgentEvent,
    AgentSettledEvent,
    AgentStartEvent,
    AutoRetryEndEvent,
    AutoRetryStartEvent,
    CompactionEndEvent,
    CompactionStartEvent,
    EntryAppendedEvent,
    ExtensionErrorEvent,
    Message,
    MessageEndEvent,
    MessageStartEvent,
    MessageUpdateEvent,
    QueueUpdateEvent,
    SessionInfoChangedEvent,
    SummarizationRetryEvent,
    ThinkingLevelChangedEvent,
    ToolExecutionEndEvent,
    ToolExecutionStartEvent,
    ToolExecutionUpdateEvent,
    TurnEndEvent,
    TurnStartEvent,
)

__all__ = [
    "AgentEndEvent", "AgentEvent", "AgentSettledEvent", "AgentStartEvent", "AssistantMessage", "AutoRetryEndEvent",
    "AutoRetryStartEvent", "CompactionEndEvent", "CompactionStartEvent", "EntryAppendedEvent", "ExtensionErrorEvent",
    "ImageContent", "Message", "MessageEndEvent", "MessageStartEvent", "MessageUpdateEvent", "QueueUpdateEvent",
    "SessionInfoChangedEvent", "SummarizationRetryEvent", "TextContent", "ThinkingContent",
    "ThinkingLevelChangedEvent", "ToolCall", "ToolExecutionEndEvent", "ToolExecutionStartEvent",
    "ToolExecutionUpdateEvent", "ToolResultMessage", "TurnEndEvent", "TurnStartEvent", "Usage", "UsageCost",
    "UserMessage",
]
