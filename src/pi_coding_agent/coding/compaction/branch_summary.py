"""Summaries of an abandoned branch when navigating the session tree.

The entries between the old leaf and the common ancestor with the target are summarised, newest
first within a token budget, so that returning to an earlier point keeps what was learnt on the
way. File lists accumulate across nested branch summaries.
"""

from __future__ import annotations

from typing import Any

from pi_coding_agent.ai.abort import AbortSignal
from pi_coding_agent.ai.types import JsonObject, Model
from pi_coding_agent.coding.compaction.prepare import FileOps
from pi_coding_agent.coding.compaction.summarize import (
    EventSink,
    SummaryRequest,
    format_file_lists,
    serialize_conversation,
)
from pi_coding_agent.coding.compaction.tokens import estimate_message_tokens
from pi_coding_agent.coding.events import Message
from pi_coding_agent.coding.retry import RetrySettings
from pi_coding_agent.coding.session.context import apply_edit, entry_messages, file_message
from pi_coding_agent.coding.session.conversion import convert_to_llm
from pi_coding_agent.coding.session.entries import Entry
from pi_coding_agent.coding.session.ids import iso_to_ms

DEFAULT_CONTEXT_WINDOW = 128000
DEFAULT_RESERVE_TOKENS = 16384
NOTHING_TO_SUMMARIZE = "No content to summarize"
BRANCH_SUMMARY_PREAMBLE = "The user explored another branch of this conversation before coming back here.\n" \
    "What happened on that branch:\n\n"

BRANCH_SUMMARY_INSTRUCTIONS = """Summarise this branch of the conversation so that it can be picked up again later.

Reply in exactly this format:

## Goal
[What was the user trying to achieve on this branch?]

## Constraints & Preferences
- [Requirements, constraints or preferences that were stated]
- [Write "(none)" if there were none]

## Progress
### Done
- [x] [Finished tasks and changes]

### In Progress
- [ ] [Work that was started and not finished]

### Blocked
- [Whatever prevents progress, if anything]

## Key Decisions
- **[Decision]**: [Short rationale]

## Next Steps
1. [What should happen next to carry on with this work]

Keep every section brief. Quote file paths, function names and error messages exactly."""


def collect_branch_entries(get_branch: Any, old_leaf_id: str | None, target_id: str | None) -> list[Entry]:
    """Entries from the old leaf back to (not including) the deepest ancestor shared with the target.

    ``get_branch(leaf_id)`` is ``SessionManager.get_branch``. Compactions on the way are included:
    their summaries are part of what the branch knew.
    """
    if not old_leaf_id:
        return []
    old_path = get_branch(old_leaf_id)
    target_ids = {entry.get("id") for entry in get_branch(target_id)} if target_id else set()
    collected = []
    for entry in reversed(old_path):
        if entry.get("id") in target_ids:
            break
        collected.append(entry)
    collected.reverse()
    return collected


def _entry_message(entry: Entry, edit: Entry | None) -> Message | None:
    """The one message an entry contributes to a branch summary (tool results are left out)."""
    kind = entry.get("type")
    if kind == "message":
        if (entry.get("message") or {}).get("role") == "toolResult":
            return None
    elif kind == "branch_summary":
        return file_message({"role": "branchSummary", "summary": entry.get("summary") or "",
                             "fromId": entry.get("fromId"), "timestamp": iso_to_ms(entry.get("timestamp"))})
    elif kind == "compaction":
        return file_message({"role": "compactionSummary", "summary": entry.get("summary") or "",
                             "tokensBefore": entry.get("tokensBefore"), "timestamp": iso_to_ms(entry.get("timestamp"))})
    elif kind != "custom_message":
        return None
    messages = apply_edit(entry_messages(entry), edit)
    return messages[0] if messages else None


def prepare_branch_entries(entries: list[Entry], token_budget: int = 0) -> tuple[list[Message], FileOps]:
    """The newest messages that fit ``token_budget`` (0: no limit), and the file operations of all."""
    file_ops = FileOps()
    for entry in entries:
        if entry.get("type") == "branch_summary" and not entry.get("fromHook"):
            file_ops.add_details(entry.get("details"))
    edits = {e.get("targetId"): e for e in entries if e.get("type") == "context_edit"}
    messages: list[Message] = []
    total = 0
    for entry in reversed(entries):
        message = _entry_message(entry, edits.get(entry.get("id")))
        if message is None:
            continue
        file_ops.add_message(message)
        tokens = estimate_message_tokens(message)
        if token_budget > 0 and total + tokens > token_budget:
            # a summary holds a whole history: squeeze it in while there is clear room left
            if entry.get("type") in ("compaction", "branch_summary") and total < token_budget * 0.9:
                messages.append(message)
            break
        messages.append(message)
        total += tokens
    messages.reverse()
    return messages, file_ops


async def summarize_branch(
    entries: list[Entry], model: Model, api_key: str | None, signal: AbortSignal | None,
    on_event: EventSink | None, *, thinking_level: str = "off", retry: RetrySettings | None = None,
    reserve_tokens: int = DEFAULT_RESERVE_TOKENS, custom_instructions: str | None = None,
    replace_instructions: bool = False, thinking_budgets: dict[str, int] | None = None,
) -> tuple[str, JsonObject | None, JsonObject | None]:
    """(summary, details ``{readFiles, modifiedFiles}``, usage) of an abandoned branch.

    Raises ``CompactionError`` with ``Branch summarization …`` texts on failure and
    ``CompactionCancelled`` when aborted. Nothing to summarise gives ``No content to summarize``.
    """
    budget = (model.get("contextWindow") or DEFAULT_CONTEXT_WINDOW) - reserve_tokens
    messages, file_ops = prepare_branch_entries(entries, budget)
    if not messages:
        return NOTHING_TO_SUMMARIZE, None, None
    if replace_instructions and custom_instructions:
        instructions = custom_instructions
    elif custom_instructions:
        instructions = f"{BRANCH_SUMMARY_INSTRUCTIONS}\n\nAdditional focus: {custom_instructions}"
    else:
        instructions = BRANCH_SUMMARY_INSTRUCTIONS
    request = SummaryRequest(model, api_key, thinking_level, signal, on_event, retry,
                             {"source": "branchSummary"}, thinking_budgets)
    text, usage = await request.text(
        serialize_conversation(convert_to_llm(messages)),
        lambda conversation: f"<conversation>\n{conversation}\n</conversation>\n\n{instructions}",
        "Branch summarization",
    )
    read_files, modified_files = file_ops.file_lists()
    summary = BRANCH_SUMMARY_PREAMBLE + text + format_file_lists(read_files, modified_files)
    return summary, {"readFiles": read_files, "modifiedFiles": modified_files}, usage
