"""Asking the current model for a compaction summary.

The conversation is sent as *text* inside ``<conversation>`` tags, never as chat turns, so the
model describes it instead of continuing it. Transient provider failures are retried with the
session's retry policy and reported as ``summarization_retry_*`` events.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson

from pi_coding_agent.ai.abort import AbortSignal, sleep_abortable
from pi_coding_agent.ai.cost import combine_usage
from pi_coding_agent.ai.stream import StreamOptions, complete
from pi_coding_agent.ai.thinking import CHARS_PER_TOKEN, SAFETY_TOKENS, clamp_max_tokens
from pi_coding_agent.ai.types import AssistantMessage, Context, JsonObject, Model, now_ms
from pi_coding_agent.coding.compaction.prepare import (
    CompactionCancelled,
    CompactionError,
    CompactionPreparation,
)
from pi_coding_agent.coding.events import AgentEvent, Message, SummarySource
from pi_coding_agent.coding.retry import RetrySettings, RetryState
from pi_coding_agent.coding.session.context import content_text
from pi_coding_agent.coding.session.conversion import convert_to_llm
from pi_coding_agent.coding.session.ids import uuid7

EventSink = Callable[[AgentEvent], None]

SUMMARY_SYSTEM_PROMPT = (
    "You summarise conversations between a user and an AI coding assistant. Read the conversation you "
    "are given and reply with the structured summary in the requested format.\n\n"
    "Never continue the conversation. Never answer questions that appear in it. Reply with the "
    "structured summary only."
)

_CLOSING_RULE = "Keep every section brief. Quote file paths, function names and error messages exactly."

SUMMARY_INSTRUCTIONS = f"""Summarise the conversation above as a structured checkpoint that another model will use to carry on the work.

Reply in exactly this format:

## Goal
[What is the user trying to achieve? List several goals if the session covered several tasks.]

## Constraints & Preferences
- [Requirements, constraints or preferences the user stated]
- [Write "(none)" if there were none]

## Progress
### Done
- [x] [Finished tasks and changes]

### In Progress
- [ ] [Work under way]

### Blocked
- [Whatever prevents progress, if anything]

## Key Decisions
- **[Decision]**: [Short rationale]

## Next Steps
1. [What should happen next, in order]

## Critical Context
- [Data, examples or references needed to continue]
- [Write "(none)" if there is nothing]

{_CLOSING_RULE}"""

UPDATE_INSTRUCTIONS = f"""The conversation above holds NEW messages. Merge them into the existing summary given in the <previous-summary> tags.

Rules:
- KEEP everything the previous summary says
- ADD the new progress, decisions and context from the new messages
- MOVE items from "In Progress" to "Done" once they are finished
- REFRESH "Next Steps" to match what was accomplished
- KEEP file paths, function names and error messages exactly as written
- You may drop what is no longer relevant

Reply in exactly this format:

## Goal
[The existing goals, plus new ones if the task grew]

## Constraints & Preferences
- [The existing ones, plus any newly stated]

## Progress
### Done
- [x] [Earlier finished items AND newly finished ones]

### In Progress
- [ ] [Current work, updated]

### Blocked
- [Current blockers; drop the resolved ones]

## Key Decisions
- **[Decision]**: [Short rationale] (keep the earlier ones, add the new)

## Next Steps
1. [Updated to the current state]

## Critical Context
- [Important context, kept and extended]

{_CLOSING_RULE}"""

TURN_PREFIX_INSTRUCTIONS = """The conversation above is the beginning of a turn that is still going on. Its later messages are kept separately; do not reconstruct them.

Write a short checkpoint of what the user asked and what has been done so far. It will be placed before those later messages so that the work can continue.

## Original Request
[What did the user ask for?]

## Progress So Far
- [Decisions taken and work done in these messages]

## Context Needed to Continue
- [What the later messages need from these ones to make sense]

Use only what is shown above. Do not guess at what came later."""

NO_PRIOR_HISTORY = "No prior history."
SPLIT_TURN_HEADER = "\n\n---\n\n**Turn Context (split turn):**\n\n"
TOOL_RESULT_MAX_CHARS = 2000
SUMMARY_OUTPUT_TOKENS = 8192  # output room a summary needs when the window is tight


# --------------------------------------------------------------------------- serialisation


def serialize_conversation(messages: Sequence[Message]) -> str:
    """LLM messages as labelled paragraphs; thinking and images left out, tool results cut short."""
    parts: list[str] = []
    for message in messages:
        role = message["role"]
        if role == "user":
            text = content_text(message.get("content"), "")
            if text:
                parts.append(f"[User]: {text}")
        elif message["role"] == "assistant":
            parts.extend(_assistant_parts(message.get("content") or []))
        elif role == "toolResult":
            text = content_text(message.get("content"), "")
            if text:
                parts.append(f"[Tool result]: {_truncate(text, TOOL_RESULT_MAX_CHARS)}")
    return "\n\n".join(parts)


def _assistant_parts(content: Sequence[Mapping[str, Any]]) -> list[str]:
    parts = []
    if any(block.get("type") == "text" for block in content):
        parts.append(f"[Assistant]: {content_text(content, chr(10))}")
    calls = [f"{b['name']}({_call_arguments(b.get('arguments'))})" for b in content if b.get("type") == "toolCall"]
    if calls:
        parts.append(f"[Assistant tool calls]: {'; '.join(calls)}")
    return parts


def _call_arguments(arguments: object) -> str:
    if not isinstance(arguments, dict):
        return ""
    return ", ".join(f"{key}={orjson.dumps(value).decode()}" for key, value in arguments.items())


def _truncate(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return f"{text[:limit]}\n\n[... {len(text) - limit} more characters truncated]"


# --------------------------------------------------------------------------- one request


@dataclass
class SummaryRequest:
    """How to reach the model for summaries; shared by compaction and branch summaries."""

    model: Model
    api_key: str | None
    thinking_level: str = "off"
    signal: AbortSignal | None = None
    on_event: EventSink | None = None
    retry: RetrySettings | None = None
    source: SummarySource = field(default_factory=lambda: SummarySource(source="compaction"))
    thinking_budgets: dict[str, int] | None = None

    def emit(self, event: AgentEvent) -> None:
        if self.on_event is not None:
            self.on_event(event)

    async def text(self, conversation: str, frame: Callable[[str], str], label: str) -> tuple[str, JsonObject]:
        """Send ``frame(conversation)`` (the conversation trimmed to fit) and return (text, usage)."""
        overhead = len(SUMMARY_SYSTEM_PROMPT) + len(frame(""))
        context = _context(frame(fit_conversation(conversation, overhead, self.model)))
        response = await self._complete_with_retry(context)
        if response["stopReason"] == "aborted" or (self.signal is not None and self.signal.aborted):
            raise CompactionCancelled()
        if response["stopReason"] == "error":
            raise CompactionError(f"{label} failed: {response.get('errorMessage') or 'Unknown error'}")
        if response["stopReason"] == "length":
            raise CompactionError(f"{label} failed: generation hit the token cap and the summary is incomplete")
        if any(block["type"] == "toolCall" for block in response["content"]):
            raise CompactionError(f"{label} attempted to call a tool")
        return content_text(response["content"], "\n"), dict(response["usage"])

    def _options(self, context: Context) -> StreamOptions:
        reasoning = self.thinking_level if self.model.get("reasoning") else "off"
        max_tokens = clamp_max_tokens(self.model, context, None) if self.model.get("maxTokens", 0) > 0 else None
        return StreamOptions(api_key=self.api_key, thinking_level=reasoning, max_tokens=max_tokens,
                             signal=self.signal, session_id=uuid7(), cache_retention="none",
                             thinking_budgets=self.thinking_budgets)

    async def _complete_with_retry(self, context: Context) -> AssistantMessage:
        """One request, repeated on transient errors with the agent's back-off (``coding/retry.py``)."""
        retry = RetryState(self.retry or RetrySettings(enabled=False))
        options = self._options(context)
        retried = False
        while True:
            response = await complete(self.model, context, options)
            if not retry.will_retry(response, response["stopReason"] == "aborted"):
                if retried:
                    self.emit({"type": "summarization_retry_finished"})
                return response
            delay = retry.next_delay_ms()
            self.emit({"type": "summarization_retry_scheduled", "attempt": retry.attempt,
                       "maxAttempts": retry.settings.max_retries, "delayMs": delay,
                       "errorMessage": response.get("errorMessage") or "Unknown error"})
            retried = True
            if not await sleep_abortable(delay / 1000, self.signal):
                self.emit({"type": "summarization_retry_finished"})
                raise CompactionCancelled()
            self.emit({"type": "summarization_retry_attempt_start", **self.source})


def _context(prompt: str) -> Context:
    user: Any = {"role": "user", "content": [{"type": "text", "text": prompt}], "timestamp": now_ms()}
    return {"systemPrompt": SUMMARY_SYSTEM_PROMPT, "messages": [user]}


def fit_conversation(conversation: str, overhead_chars: int, model: Model) -> str:
    """Drop the oldest part of the serialised conversation when the request would not fit the window.

    The newest messages matter most for continuing the work, and an oversized summary request
    would fail outright. The cut is moved to the next message boundary when there is one.
    """
    window = model.get("contextWindow", 0)
    if window <= 0:
        return conversation
    input_tokens = window - SAFETY_TOKENS - min(model.get("maxTokens") or SUMMARY_OUTPUT_TOKENS, SUMMARY_OUTPUT_TOKENS)
    if input_tokens <= 0:
        input_tokens = window // 2
    budget = int(input_tokens * CHARS_PER_TOKEN) - overhead_chars
    if len(conversation) <= budget:
        return conversation
    start = len(conversation) - max(budget, 0)
    boundary = conversation.find("\n\n[", start)
    start = boundary + 2 if boundary != -1 else start
    return f"[... {start} earlier characters of the conversation omitted]\n\n{conversation[start:]}"


# --------------------------------------------------------------------------- compaction summary


def history_prompt(conversation: str, previous_summary: str | None, custom_instructions: str | None) -> str:
    prompt = f"<conversation>\n{conversation}\n</conversation>\n\n"
    if previous_summary:
        prompt += f"<previous-summary>\n{previous_summary}\n</previous-summary>\n\n"
    return prompt + _with_focus(UPDATE_INSTRUCTIONS if previous_summary else SUMMARY_INSTRUCTIONS, custom_instructions)


def turn_prefix_prompt(conversation: str, custom_instructions: str | None) -> str:
    return _with_focus(f"# Conversation\n{conversation}\n\n# Instructions\n{TURN_PREFIX_INSTRUCTIONS}",
                       custom_instructions)


def _with_focus(text: str, custom_instructions: str | None) -> str:
    return f"{text}\n\nAdditional focus: {custom_instructions}" if custom_instructions else text


def format_file_lists(read_files: list[str], modified_files: list[str]) -> str:
    """The ``<read-files>`` / ``<modified-files>`` blocks appended to every pi-generated summary."""
    blocks = []
    if read_files:
        blocks.append("<read-files>\n" + "\n".join(read_files) + "\n</read-files>")
    if modified_files:
        blocks.append("<modified-files>\n" + "\n".join(modified_files) + "\n</modified-files>")
    return "\n\n" + "\n\n".join(blocks) if blocks else ""


async def summarize(
    model: Model, api_key: str | None, preparation: CompactionPreparation, custom_instructions: str | None,
    signal: AbortSignal | None, on_event: EventSink | None, *, thinking_level: str = "off",
    retry: RetrySettings | None = None, reason: str = "manual", thinking_budgets: dict[str, int] | None = None,
) -> tuple[str, JsonObject | None]:
    """The compaction summary (with its file lists) and the summed usage of its requests."""
    request = SummaryRequest(model, api_key, thinking_level, signal, on_event, retry,
                             {"source": "compaction", "reason": reason}, thinking_budgets)
    return await summarize_with(request, preparation, custom_instructions)


async def summarize_with(
    request: SummaryRequest, preparation: CompactionPreparation, custom_instructions: str | None
) -> tuple[str, JsonObject | None]:
    previous = preparation.previous_summary
    usage: JsonObject | None = None
    if preparation.is_split_turn and preparation.turn_prefix_messages:
        history = previous or NO_PRIOR_HISTORY
        if preparation.messages_to_summarize:
            history, usage = await _history_summary(request, preparation, custom_instructions)
        prefix, prefix_usage = await request.text(
            serialize_conversation(convert_to_llm(preparation.turn_prefix_messages)),
            lambda conversation: turn_prefix_prompt(conversation, custom_instructions),
            "Turn prefix summarization",
        )
        summary = history + SPLIT_TURN_HEADER + prefix
        usage = combine_usage(usage, prefix_usage)
    else:
        summary, usage = await _history_summary(request, preparation, custom_instructions)
    return summary + format_file_lists(*preparation.file_ops.file_lists()), usage


async def _history_summary(
    request: SummaryRequest, preparation: CompactionPreparation, custom_instructions: str | None
) -> tuple[str, JsonObject]:
    return await request.text(
        serialize_conversation(convert_to_llm(preparation.messages_to_summarize)),
        lambda conversation: history_prompt(conversation, preparation.previous_summary, custom_instructions),
        "Summarization",
    )
