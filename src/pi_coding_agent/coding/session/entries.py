"""The records of a session file, typed: the header and one ``TypedDict`` per entry ``type``.

Field names are the file's (camelCase); ``NotRequired`` fields are omitted when unset, never null,
except ``context_edit.replacement``, where null means "hide the target". Entries stay plain dicts at
run time (read from files that may hold types this version does not know, written back unchanged),
so code that walks a branch uses ``Entry``; the shapes below say what each type carries. (No
postponed annotations here: ``NotRequired`` must be visible to ``__required_keys__``.)
"""

from typing import Any, Literal, NotRequired, TypedDict

from pi_coding_agent.agent.events import AgentMessage
from pi_coding_agent.ai.types import JsonObject, SystemMessage, Usage

Entry = dict[str, Any]  # any record below, as it is held and written


class SessionHeader(TypedDict):
    """The first line of a file; not an entry (no ``parentId``, not in the tree)."""

    type: Literal["session"]
    version: int  # 3 today; a missing version means 1
    id: str
    timestamp: str  # ISO 8601, like every entry's
    cwd: str
    parentSession: NotRequired[str]  # the file this one was forked or cloned from


class _EntryBase(TypedDict):
    id: str  # 8 hex digits, unique in the file
    parentId: str | None  # the leaf when it was appended; None for a root
    timestamp: str


class MessageEntry(_EntryBase):
    type: Literal["message"]
    message: AgentMessage  # system, user, assistant, toolResult or bashExecution


class ModelChangeEntry(_EntryBase):
    type: Literal["model_change"]
    provider: str
    modelId: str


class ThinkingLevelChangeEntry(_EntryBase):
    type: Literal["thinking_level_change"]
    thinkingLevel: str


class CompactionEntry(_EntryBase):
    type: Literal["compaction"]
    summary: str
    firstKeptEntryId: str  # its own id when it keeps nothing
    tokensBefore: int
    details: NotRequired[object]  # pi's own summaries: {readFiles, modifiedFiles}
    usage: NotRequired[Usage]
    fromHook: NotRequired[bool]  # an extension produced it
    systemMessage: NotRequired[SystemMessage]  # the replayed system state at compaction time


class BranchSummaryEntry(_EntryBase):
    type: Literal["branch_summary"]
    fromId: str  # the abandoned leaf, "root" when there was none
    summary: str
    details: NotRequired[object]
    usage: NotRequired[Usage]
    fromHook: NotRequired[bool]


class CustomEntry(_EntryBase):
    type: Literal["custom"]
    customType: str
    data: NotRequired[object]  # extension state, never sent to the model


class CustomMessageEntry(_EntryBase):
    type: Literal["custom_message"]
    customType: str
    content: str | list[JsonObject]
    display: bool
    details: NotRequired[object]


class LabelEntry(_EntryBase):
    type: Literal["label"]
    targetId: str
    label: NotRequired[str]  # absent or empty clears the label


class SessionInfoEntry(_EntryBase):
    type: Literal["session_info"]
    name: str  # the last one in the file names the session; empty clears


class UsageEntry(_EntryBase):
    type: Literal["usage"]
    kind: str  # e.g. "cache_warm"
    provider: str
    model: str
    usage: Usage
    note: NotRequired[str]


class ContextEditEntry(_EntryBase):
    type: Literal["context_edit"]
    targetId: str
    replacement: JsonObject | None  # {content}, or None to hide the target


SessionEntry = (
    MessageEntry | ModelChangeEntry | ThinkingLevelChangeEntry | CompactionEntry | BranchSummaryEntry
    | CustomEntry | CustomMessageEntry | LabelEntry | SessionInfoEntry | UsageEntry | ContextEditEntry
)
