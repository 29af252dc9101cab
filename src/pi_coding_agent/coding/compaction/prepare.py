"""What a compaction summarises and what it keeps.

Everything here is pure: the branch's projected entries go in, a ``CompactionPreparation`` comes
out. The cut keeps about ``keep_recent_tokens`` of the newest context, never starts the kept part
with a tool result (it must follow its call), and when it falls inside a turn, the start of that
turn is summarised separately so the kept tail still makes sense.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from pi_coding_agent.ai.types import JsonObject
from pi_coding_agent.coding.compaction.projection import ProjectedEntry, project, projected_tokens
from pi_coding_agent.coding.compaction.tokens import sum_tokens
from pi_coding_agent.coding.events import Message
from pi_coding_agent.coding.session.context import entry_messages
from pi_coding_agent.coding.session.entries import Entry

ALREADY_COMPACTED = "Already compacted"
NOTHING_TO_COMPACT = "Nothing to compact (session too small)"

_CUT_ROLES = frozenset({"user", "assistant", "bashExecution", "custom", "branchSummary", "compactionSummary"})
_TURN_START_ROLES = _CUT_ROLES - {"assistant"}
_FILE_TOOLS = {"read": "read", "write": "written", "edit": "edited"}


class CompactionError(Exception):
    """A compaction could not be made; ``str(err)`` is the text clients see."""


CANCELLED = "Compaction cancelled"


class CompactionCancelled(CompactionError):
    """The summary request was aborted (by the user or a new command)."""

    def __init__(self, message: str = CANCELLED) -> None:
        super().__init__(message)


@dataclass
class FileOps:
    """Paths the summarised conversation touched, by kind (insertion-ordered sets)."""

    read: dict[str, None] = field(default_factory=dict)
    edited: dict[str, None] = field(default_factory=dict)
    written: dict[str, None] = field(default_factory=dict)

    def add_message(self, message: Message) -> None:
        """File tool calls of an assistant message, or nested calls recorded on a tool result."""
        if message["role"] == "toolResult":
            calls = (message.get("nestedCalls") or {}).get("calls") or []
            for call in calls if isinstance(calls, list) else ():
                self._add(call.get("name"), call.get("arguments"))
        elif message["role"] == "assistant" and isinstance(message.get("content"), list):
            for block in message["content"]:
                if isinstance(block, dict) and block.get("type") == "toolCall":
                    self._add(block.get("name"), block.get("arguments"))

    def _add(self, tool: object, arguments: object) -> None:
        path = arguments.get("path") if isinstance(arguments, dict) else None
        kind = _FILE_TOOLS.get(tool) if isinstance(tool, str) else None
        if kind and isinstance(path, str) and path:
            getattr(self, kind)[path] = None

    def add_details(self, details: object) -> None:
        """Carry forward the lists of an earlier pi-generated summary (modified counts as edited)."""
        if not isinstance(details, dict):
            return
        for key, kind in (("readFiles", self.read), ("modifiedFiles", self.edited)):
            paths = details.get(key)
            if isinstance(paths, list):
                kind.update(dict.fromkeys(paths))

    def file_lists(self) -> tuple[list[str], list[str]]:
        """(files only read, files modified), each sorted."""
        modified = {**self.edited, **self.written}
        return sorted(p for p in self.read if p not in modified), sorted(modified)


@dataclass
class CompactionPreparation:
    """What a compaction summarises and keeps, decided before the summary is asked for."""

    first_kept_entry_id: str
    messages_to_summarize: list[Message]
    turn_prefix_messages: list[Message]
    is_split_turn: bool
    tokens_before: int
    previous_summary: str | None
    file_ops: FileOps
    keep_recent_tokens: int

    def to_event(self) -> JsonObject:
        """The ``preparation`` payload of the extension event ``session_before_compact``."""
        return {
            "firstKeptEntryId": self.first_kept_entry_id,
            "messagesToSummarize": self.messages_to_summarize,
            "turnPrefixMessages": self.turn_prefix_messages,
            "isSplitTurn": self.is_split_turn,
            "tokensBefore": self.tokens_before,
            "previousSummary": self.previous_summary,
            "fileOps": {"read": list(self.file_ops.read), "edited": list(self.file_ops.edited),
                        "written": list(self.file_ops.written)},
            "settings": {"keepRecentTokens": self.keep_recent_tokens},
        }


def prepare_compaction(branch_entries: list[Entry], keep_recent_tokens: int) -> CompactionPreparation | None:
    """The plan for compacting a root-to-leaf path, or None when there is nothing to summarise."""
    if branch_entries and branch_entries[-1].get("type") == "compaction":
        return None
    projected = project(branch_entries)
    previous = _previous_compaction_index(projected)
    start = previous + 1 if previous is not None else 0
    cut = _find_cut(projected, start, keep_recent_tokens)
    if cut is None:
        return None
    first_kept, turn_start = cut
    history_end = turn_start if turn_start is not None else first_kept
    to_summarize = _conversation(projected[start:history_end])
    prefix = _conversation(projected[turn_start:first_kept]) if turn_start is not None else []
    if not to_summarize and not prefix:
        return None
    file_ops = FileOps()
    previous_entry = projected[previous].entry if previous is not None else None
    if previous_entry is not None and not previous_entry.get("fromHook"):
        file_ops.add_details(previous_entry.get("details"))
    for message in (*to_summarize, *prefix):
        file_ops.add_message(message)
    return CompactionPreparation(
        first_kept_entry_id=projected[first_kept].entry["id"],
        messages_to_summarize=to_summarize,
        turn_prefix_messages=prefix,
        is_split_turn=turn_start is not None,
        tokens_before=projected_tokens(projected, branch_entries),
        previous_summary=previous_entry.get("summary") if previous_entry is not None else None,
        file_ops=file_ops,
        keep_recent_tokens=keep_recent_tokens,
    )


def raise_unpreparable(branch_entries: list[Entry]) -> None:
    """The manual-compaction error for a branch ``prepare_compaction`` declined."""
    if branch_entries and branch_entries[-1].get("type") == "compaction":
        raise CompactionError(ALREADY_COMPACTED)
    raise CompactionError(NOTHING_TO_COMPACT)


def _previous_compaction_index(projected: list[ProjectedEntry]) -> int | None:
    """The latest compaction speaks first in the projection; older ones inside it are silent."""
    for index, item in enumerate(projected):
        if item.entry.get("type") == "compaction" and item.messages:
            return index
    return None


def _conversation(items: list[ProjectedEntry]) -> list[Message]:
    """Messages to summarise: prompt state (system messages) and compaction checkpoints excluded."""
    return [m for item in items if item.entry.get("type") != "compaction"
            for m in item.messages if m.get("role") != "system"]


def _is_cut_point(item: ProjectedEntry) -> bool:
    return item.entry.get("type") != "compaction" and any(m.get("role") in _CUT_ROLES for m in item.messages)


def _starts_turn(item: ProjectedEntry) -> bool:
    return item.entry.get("type") != "compaction" and any(m.get("role") in _TURN_START_ROLES for m in item.messages)


def _find_cut(projected: list[ProjectedEntry], start: int, keep_recent_tokens: int) -> tuple[int, int | None] | None:
    """(index of the first kept entry, index of the turn start when the cut splits a turn)."""
    end = len(projected)
    cut: int | None = None  # the nearest cut point at or after the walk position
    over_budget = False
    kept_tokens = 0
    index = end
    for index in range(end - 1, start - 1, -1):  # newest first, until the budget is reached
        item = projected[index]
        if _is_cut_point(item):
            cut = index
        tokens = sum_tokens(item.messages)
        kept_tokens += tokens
        if tokens and kept_tokens >= keep_recent_tokens:
            over_budget = True
            break
    if cut is None:
        # Trailing tool results alone exceed the budget: keep from the call before them rather than
        # keeping everything. No cut point at all: the model sees nothing worth summarising.
        cut = next((i for i in range(index - 1, start - 1, -1) if _is_cut_point(projected[i])), None)
        if cut is None:
            return None
    if over_budget and _only_omitted_attempts_after(projected[cut + 1 : end]):
        cut += 1
    while cut > start:
        previous = projected[cut - 1]
        if previous.entry.get("type") == "compaction" or previous.messages:
            break
        cut -= 1  # keep adjacent invisible entries (model changes, labels) with what follows them
    if _starts_turn(projected[cut]):
        return cut, None
    turn_start = next((i for i in range(cut, start - 1, -1) if _starts_turn(projected[i])), None)
    return cut, turn_start


def _only_omitted_attempts_after(suffix: list[ProjectedEntry]) -> bool:
    """True when everything after the cut is a failed attempt hidden for recovery (plus its edits).

    Cutting there would keep nothing the model can see; moving the cut past it keeps the last
    visible input instead. A replacement edit of something else, or any visible entry, forbids it.
    """
    omitted_ids = {item.entry.get("id") for item in suffix if _is_omitted(item)}
    for item in suffix:
        entry = item.entry
        if entry.get("type") == "compaction":
            return False
        if _intrinsically_visible(item) and item.messages:
            return False
        if (entry.get("type") == "context_edit" and entry.get("replacement") is not None
                and entry.get("targetId") not in omitted_ids):
            return False
    return any(item.entry.get("type") == "message" and (item.entry.get("message") or {}).get("role") == "assistant"
               and _is_omitted(item) for item in suffix)


def _intrinsically_visible(item: ProjectedEntry) -> bool:
    return item.entry.get("type") != "context_edit" and bool(entry_messages(item.entry))


def _is_omitted(item: ProjectedEntry) -> bool:
    return _intrinsically_visible(item) and not item.messages
