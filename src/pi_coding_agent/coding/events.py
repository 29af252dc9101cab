"""The events a session emits: what RPC mode writes on stdout and SDK subscribers receive, typed.

One ``TypedDict`` per event ``type`` (pi's camelCase wire names) and their union ``AgentEvent``: the
agent core's events (``agent/events.py``, re-exported here) and the session's own.
Events stay plain dicts at run time (they are written to stdout and session files as they are);
these types are for readers and for type checkers of SDK hosts. (No postponed annotations, as in
``ai/types.py``: string annotations would each be compiled at import.)
"""

from typing import TYPE_CHECKING, Literal, NotRequired, TypedDict

from pi_coding_agent.agent.events import (
    AgentEndEvent,
    AgentMessage,
    AgentStartEvent,
    CoreEvent,
    MessageEndEvent,
    MessageStartEvent,
    MessageUpdateEvent,
    ToolExecutionEndEvent,
    ToolExecutionStartEvent,
    ToolExecutionUpdateEvent,
    TurnEndEvent,
    TurnStartEvent,
)
from pi_coding_agent.ai.types import JsonObject

if TYPE_CHECKING:
    from pi_coding_agent.coding.session.entries import Entry

Message = AgentMessage  # the name the coding modules read transcripts by

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
    result: NotRequired[JsonObject]
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
    entry: "Entry"  # one of the ``SessionEntry`` shapes


class ExtensionErrorEvent(TypedDict):
    type: Literal["extension_error"]
    extensionPath: str
    event: str
    error: str


class SummarySource(TypedDict):
    """What a summary request is for: ``compaction`` (with its ``reason``) or ``branchSummary``."""

    source: str
    reason: NotRequired[str]


class SummarizationRetryScheduledEvent(TypedDict):
    type: Literal["summarization_retry_scheduled"]
    attempt: int
    maxAttempts: int
    delayMs: int
    errorMessage: str


class SummarizationRetryAttemptStartEvent(SummarySource):
    type: Literal["summarization_retry_attempt_start"]


class SummarizationRetryFinishedEvent(TypedDict):
    type: Literal["summarization_retry_finished"]


SummarizationRetryEvent = (
    SummarizationRetryScheduledEvent | SummarizationRetryAttemptStartEvent | SummarizationRetryFinishedEvent
)


__all__ = [
    "AgentEndEvent", "AgentEvent", "AgentMessage", "AgentStartEvent", "CoreEvent", "MessageEndEvent",
    "MessageStartEvent", "MessageUpdateEvent", "SessionEvent", "ToolExecutionEndEvent", "ToolExecutionStartEvent",
    "ToolExecutionUpdateEvent", "TurnEndEvent", "TurnStartEvent",
]

SessionEvent = (
    QueueUpdateEvent | CompactionStartEvent | CompactionEndEvent | AutoRetryStartEvent | AutoRetryEndEvent
    | AgentSettledEvent | ThinkingLevelChangedEvent | SessionInfoChangedEvent | EntryAppendedEvent
    | ExtensionErrorEvent | SummarizationRetryEvent
)
"""The events of the session itself (retry, compaction, queues, settings, entries)."""

AgentEvent = CoreEvent | SessionEvent
"""Everything a session emits: what ``AgentSession.subscribe`` listeners receive."""
