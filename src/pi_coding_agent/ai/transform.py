"""Make a transcript safe to send to one particular model (runs inside ``stream()`` before the adapter).

Failed turns are left out, every tool call gets a result, thinking is only replayed to the model
that produced it, and images are replaced by a note for text-only models. The input lists and dicts
are the live transcript: changed messages are shallow copies, untouched ones are passed through.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import cast

from pi_coding_agent.ai.types import (
    AssistantContent,
    AssistantMessage,
    Message,
    Model,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    UserContent,
    UserMessage,
    now_ms,
)

USER_IMAGE_OMITTED = "(image omitted: model does not support images)"
TOOL_IMAGE_OMITTED = "(tool image omitted: model does not support images)"
NO_RESULT = "No result provided"


def prepare_messages(model: Model, messages: list[Message]) -> list[Message]:
    """The messages to send to ``model`` (a new list; see the module docstring)."""
    text_only = "image" not in model["input"]
    adapted: list[Message] = []
    for msg in messages:
        if msg["role"] == "assistant":
            adapted.append(_adapt_assistant(model, msg))
        elif text_only and (msg["role"] == "user" or msg["role"] == "toolResult") and isinstance(msg["content"], list):
            note = USER_IMAGE_OMITTED if msg["role"] == "user" else TOOL_IMAGE_OMITTED
            adapted.append(_without_images(msg, note))
        else:
            adapted.append(msg)
    return _answer_orphaned_tool_calls(adapted)


def same_model(model: Model, msg: AssistantMessage) -> bool:
    return msg["provider"] == model["provider"] and msg["api"] == model["api"] and msg["model"] == model["id"]


def _adapt_assistant(model: Model, msg: AssistantMessage) -> AssistantMessage:
    if msg["stopReason"] in ("error", "aborted"):
        return msg  # dropped by the second pass; no point copying
    if same_model(model, msg):
        kept = [b for b in msg["content"] if b["type"] != "thinking" or _replayable_thinking(b)]
        return msg if len(kept) == len(msg["content"]) else {**msg, "content": kept}
    content: list[AssistantContent] = []
    for block in msg["content"]:
        if block["type"] == "thinking":
            continue  # signatures and hidden reasoning belong to the model that wrote them
        if block["type"] == "text":
            content.append({"type": "text", "text": block["text"]})
        elif block["type"] == "toolCall" and "thoughtSignature" in block:
            content.append(cast(ToolCall, {k: v for k, v in block.items() if k != "thoughtSignature"}))
        else:
            content.append(block)
    return {**msg, "content": content}


def _replayable_thinking(block: ThinkingContent) -> bool:
    """Signed or redacted blocks are replayed even when empty; plain ones only with some text."""
    return bool(block.get("redacted") or block.get("thinkingSignature") or block["thinking"].strip())


def _without_images(msg: UserMessage | ToolResultMessage, note: str) -> Message:
    blocks = msg["content"]
    if isinstance(blocks, str) or not any(b["type"] == "image" for b in blocks):
        return msg
    content: list[UserContent] = []
    for block in blocks:
        if block["type"] != "image":
            content.append(block)
        elif not (content and content[-1].get("text") == note):  # one note per run of images
            content.append({"type": "text", "text": note})
    return cast(Message, {**msg, "content": content})


def _answer_orphaned_tool_calls(messages: list[Message]) -> list[Message]:
    """Drop failed assistant turns; add an error result for each tool call left unanswered.

    System messages met while results are still expected are held back until the calls are
    closed, so a late result for the same call does not follow a synthetic one.
    """
    out: list[Message] = []
    pending: list[ToolCall] = []
    answered: set[str] = set()
    held: list[Message] = []

    def close_pending() -> None:
        for call in pending:
            if call["id"] not in answered:
                out.append(_missing_result(call))
        pending.clear()
        answered.clear()
        out.extend(held)
        held.clear()

    for msg in messages:
        if msg["role"] == "assistant":
            close_pending()
            if msg["stopReason"] in ("error", "aborted"):
                continue
            pending.extend(b for b in msg["content"] if b["type"] == "toolCall")
            out.append(msg)
        elif msg["role"] == "toolResult":
            answered.add(msg["toolCallId"])
            out.append(msg)
        elif msg["role"] == "system" and pending:
            held.append(msg)
        else:
            if msg["role"] == "user":
                close_pending()
            out.append(msg)
    close_pending()
    return out


def _missing_result(call: ToolCall) -> ToolResultMessage:
    return {"role": "toolResult", "toolCallId": call["id"], "toolName": call["name"],
            "content": [{"type": "text", "text": NO_RESULT}], "isError": True, "timestamp": now_ms()}


def tool_result_runs(messages: Sequence[Message]) -> Iterator[Message | list[ToolResultMessage]]:
    """The messages in order, each run of consecutive tool results grouped into one list.

    Wire APIs answer a batch of tool calls in one turn (one user message of results, or a block of
    ``tool`` messages), so adapters convert a run at once.
    """
    run: list[ToolResultMessage] = []
    for message in messages:
        if message["role"] == "toolResult":
            run.append(message)
            continue
        if run:
            yield run
            run = []
        yield message
    if run:
        yield run
