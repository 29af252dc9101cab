"""The active branch as the model sees it, entry by entry.

``SessionManager.build_context()`` flattens the projection into messages; compaction needs it per
source entry (where to cut, which entry a reported usage came from, which entries an edit hid).
"""

from __future__ import annotations

from dataclasses import dataclass

from pi_coding_agent.coding.compaction.tokens import (
    estimate_context_tokens,
    estimate_fresh_tokens,
    last_usage_index,
)
from pi_coding_agent.coding.events import Message
from pi_coding_agent.coding.session.context import apply_edit, entry_messages, select_context_entries
from pi_coding_agent.coding.session.entries import Entry
from pi_coding_agent.coding.session.ids import iso_to_ms


@dataclass(slots=True)
class ProjectedEntry:
    """A branch entry with the messages it contributes to the context."""

    entry: Entry
    messages: list[Message]  # what the entry contributes after context edits (may be empty)


def project(branch: list[Entry]) -> list[ProjectedEntry]:
    """Selected context entries of a root-to-leaf path with their (edited) messages.

    Older compactions inside the kept range stay in the list but contribute nothing: only the
    latest one, always first, speaks.
    """
    selected = select_context_entries(branch)
    edits = {e.get("targetId"): e for e in selected if e.get("type") == "context_edit"}
    projected = []
    for index, entry in enumerate(selected):
        if index > 0 and entry.get("type") == "compaction":
            messages: list[Message] = []
        else:
            messages = entry_messages(entry)
            if edits:
                messages = apply_edit(messages, edits.get(entry.get("id")))
        projected.append(ProjectedEntry(entry, messages))
    return projected


def projected_messages(projected: list[ProjectedEntry]) -> list[Message]:
    return [m for p in projected for m in p.messages]


def projected_tokens(projected: list[ProjectedEntry], branch: list[Entry]) -> int:
    """Context estimate that trusts the last reported usage only if nothing changed the context since.

    A compaction or a context edit after the reply whose usage we would use makes that usage
    describe a context that no longer exists; then everything is estimated from scratch.
    """
    messages = projected_messages(projected)
    if usage_is_current(projected, branch):
        return estimate_context_tokens(messages)
    return estimate_fresh_tokens(messages)


def usage_is_current(projected: list[ProjectedEntry], branch: list[Entry]) -> bool:
    """True when the projection has a valid reported usage and nothing edited or compacted after it."""
    index = last_usage_index(projected_messages(projected))
    if index is None:
        return False
    source_id = _source_entry_id(projected, index)
    usage_at = -1
    invalidated_at = -1
    for position, entry in enumerate(branch):
        if entry.get("id") == source_id:
            usage_at = position
        if entry.get("type") in ("context_edit", "compaction"):
            invalidated_at = position
    return usage_at > invalidated_at


def _source_entry_id(projected: list[ProjectedEntry], message_index: int) -> str | None:
    seen = 0
    for item in projected:
        seen += len(item.messages)
        if message_index < seen:
            return item.entry.get("id")
    return None


def latest_compaction(branch: list[Entry]) -> Entry | None:
    for entry in reversed(branch):
        if entry.get("type") == "compaction":
            return entry
    return None


def entry_time_ms(entry: Entry) -> int:
    """An entry's ISO timestamp in epoch ms (messages carry ms; entries carry ISO strings)."""
    return iso_to_ms(entry.get("timestamp")) or 0
