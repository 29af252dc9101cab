"""The request side of the ``anthropic-messages`` API: the JSON body (messages, tools, thinking,
cache breakpoints) and the headers (beta flags, OAuth identity) of one ``POST /v1/messages``;
``anthropic_messages`` sends it and reads the stream back."""

from __future__ import annotations

import re
from typing import Any

from pi_coding_agent.ai.apis import anthropic_threads
from pi_coding_agent.ai.apis.anthropic_system import (
    DEFERRED_PLACEHOLDER,
    INLINE_TOOLS_BETA,
    native_tool_changes,
    system_message,
)
from pi_coding_agent.ai.apis.anthropic_tools import (
    convert_tools,
    tool_name,
)
from pi_coding_agent.ai.stream import StreamOptions
from pi_coding_agent.ai.thinking import clamp_max_tokens, clamp_thinking_level, thinking_budget
from pi_coding_agent.ai.tool_changes import current_tools, system_messages
from pi_coding_agent.ai.transform import prepare_messages, tool_result_runs
from pi_coding_agent.ai.types import (
    AssistantContent,
    AssistantMessage,
    Context,
    ImageContent,
    JsonObject,
    Model,
    ToolResultMessage,
    UserContent,
)

API_VERSION = "2023-06-01"
INTERLEAVED_THINKING_BETA = "interleaved-thinking-2025-05-14"
FINE_GRAINED_TOOL_STREAMING_BETA = "fine-grained-tool-streaming-2025-05-14"
SERVER_SIDE_FALLBACK_BETA = "server-side-fallback-2026-07-01"
MID_CONVERSATION_EFFORT_BETAS = ("mid-conversation-output-config-2026-07-01", "thinking-binding-controls-2026-08-01")
EFFORTS = frozenset({"low", "medium", "high", "xhigh", "max"})
CACHED_BLOCKS = frozenset({"text", "image", "tool_result", "tool_addition", "tool_removal"})
OAUTH_BETAS = ("claude-code-20250219", "oauth-2025-04-20")
OAUTH_USER_AGENT = "claude-cli/2.1.322"
# Subscription (OAuth) tokens are only accepted for requests that present Claude Code's identity.
OAUTH_IDENTITY = "You are Claude Code, Anthropic's official CLI for Claude."
MIN_ANSWER_TOKENS = 1024
IMAGE_ONLY_NOTE = "(image attached)"
ERROR_IMAGE_NOTE = "(image sent after the tool results)"
_UNSAFE_ID_CHARS = re.compile(r"[^a-zA-Z0-9_-]")


def is_oauth_token(api_key: str | None) -> bool:
    return bool(api_key) and "sk-ant-oat" in str(api_key)


def normalize_tool_call_id(call_id: str) -> str:
    """Anthropic accepts ``^[a-zA-Z0-9_-]+$`` up to 64 characters (other APIs' ids may not fit)."""
    return _UNSAFE_ID_CHARS.sub("_", call_id)[:64]


def _compat(model: Model, key: str, default: bool) -> bool:
    return bool((model.get("compat") or {}).get(key, default))


def cache_control(model: Model, retention: str) -> dict[str, str] | None:
    if retention == "none":
        return None
    if retention == "long" and _compat(model, "supportsLongCacheRetention", True):
        return {"type": "ephemeral", "ttl": "1h"}
    return {"type": "ephemeral"}


def _image(block: ImageContent) -> JsonObject:
    return {"type": "image", "source": {"type": "base64", "media_type": block["mimeType"], "data": block["data"]}}


def _tool_result_content(content: list[UserContent]) -> str | list[JsonObject]:
    """Text-only results go as one string; with images, as blocks (never images alone)."""
    if not any(b["type"] == "image" for b in content):
        return "\n".join(b["text"] for b in content if b["type"] == "text")
    blocks: list[JsonObject] = [{"type": "text", "text": b["text"]} if b["type"] == "text" else _image(b) for b in content]
    if not any(b["type"] == "text" for b in blocks):
        blocks.insert(0, {"type": "text", "text": IMAGE_ONLY_NOTE})
    return blocks


def _tool_results_message(results: list[ToolResultMessage]) -> JsonObject:
    """One user message for a run of tool results; images of error results go after all of them
    (Anthropic rejects error results holding anything but text)."""
    blocks: list[JsonObject] = []
    trailing: list[JsonObject] = []
    for result in results:
        content = result["content"]
        images = [b for b in content if b["type"] == "image"] if result["isError"] else []
        if images:
            content = [b for b in content if b["type"] != "image"]
            content.append({"type": "text", "text": ERROR_IMAGE_NOTE})
            trailing.append({"type": "text", "text": f"Images from failed tool call {result['toolCallId']} "
                                                     f"({result['toolName']}):"})
            trailing.extend(_image(b) for b in images)
        blocks.append({"type": "tool_result", "tool_use_id": normalize_tool_call_id(result["toolCallId"]),
                       "content": _tool_result_content(content), "is_error": result["isError"]})
    return {"role": "user", "content": blocks + trailing}


def _user_message(content: str | list[UserContent]) -> JsonObject | None:
    if isinstance(content, str):
        return {"role": "user", "content": content} if content.strip() else None
    blocks = [{"type": "text", "text": b["text"]} if b["type"] == "text" else _image(b)
              for b in content if b["type"] != "text" or b["text"].strip()]
    return {"role": "user", "content": blocks} if blocks else None


def _assistant_block(block: AssistantContent, oauth: bool, allow_empty_signature: bool) -> JsonObject | None:
    if block["type"] == "text":
        return {"type": "text", "text": block["text"]} if block["text"].strip() else None
    if block["type"] == "toolCall":
        name = tool_name(block["name"], oauth)
        return {"type": "tool_use", "id": normalize_tool_call_id(block["id"]), "name": name,
                "input": block.get("arguments") or {}}
    if block.get("redacted"):
        return {"type": "redacted_thinking", "data": block.get("thinkingSignature", "")}
    signature = (block.get("thinkingSignature") or "").strip() and block["thinkingSignature"]
    if signature:
        return {"type": "thinking", "thinking": block["thinking"], "signature": signature}
    if not block["thinking"].strip():
        return None
    # A thinking block without signature (an interrupted stream) cannot be verified: send it as text.
    if allow_empty_signature:
        return {"type": "thinking", "thinking": block["thinking"], "signature": ""}
    return {"type": "text", "text": block["thinking"]}


def effort_marker(effort: str) -> JsonObject:
    """A content-less system message setting the effort of the assistant message that follows it."""
    return {"role": "system", "content": [], "output_config": {"effort": effort}}


def convert_messages(model: Model, context: Context, oauth: bool, effort_markers: bool = False,
                     plain_preferred: bool = False) -> list[JsonObject]:
    """Anthropic messages; with ``effort_markers``, each earlier reply of this provider is preceded
    by the effort it was written with. Later system messages wait for the next reply (``anthropic_system``)."""
    allow_empty = _compat(model, "allowEmptySignature", False)
    native = native_tool_changes(model, context)
    convert = (lambda tools: convert_tools(model, tools, oauth, None, plain_preferred)) if native else None
    out: list[JsonObject] = []
    pending: list[JsonObject] = []
    for msg in tool_result_runs(context["messages"]):
        if isinstance(msg, list):
            out.append(_tool_results_message(msg))
            continue
        if msg["role"] == "user":
            converted = _user_message(msg["content"])
            if converted:
                out.append(converted)
        elif msg["role"] == "assistant":
            blocks = [_assistant_block(b, oauth, allow_empty) for b in msg["content"]]
            kept = [b for b in blocks if b is not None]
            if kept:
                out += pending
                pending.clear()
                effort = msg.get("providerThinkingLevel")
                if effort_markers and effort in EFFORTS and msg["api"] == model["api"] \
                        and msg["provider"] == model["provider"]:
                    out.append(effort_marker(effort))
                out.append({"role": "assistant", "content": kept})
        elif msg["role"] == "system" and (update := system_message(msg, convert, lambda name: tool_name(name, oauth))):
            pending.append(update)
    return out + pending


def reply_messages(model: Model, output: AssistantMessage, oauth: bool) -> list[JsonObject]:
    """The answer as the next request will send it (the results its tool calls will get left out)."""
    converted = convert_messages(model, {"messages": prepare_messages(model, [output])}, oauth)
    return [message for message in converted if message["role"] == "assistant"]


def _mark_last_user_block(messages: list[dict[str, Any]], control: dict[str, str]) -> None:
    """The conversation cache breakpoint: the last block of a trailing user (or system) message."""
    if not messages or messages[-1]["role"] not in ("user", "system"):
        return
    last = messages[-1]
    if isinstance(last["content"], str):
        last["content"] = [{"type": "text", "text": last["content"], "cache_control": control}]
    elif last["content"] and last["content"][-1]["type"] in CACHED_BLOCKS:
        last["content"][-1]["cache_control"] = control


def effort_for(model: Model, level: str) -> str:
    """Adaptive-thinking effort: the model's own mapping, else low/medium/high."""
    mapped = (model.get("thinkingLevelMap") or {}).get(level)
    if isinstance(mapped, str):
        return mapped
    return {"minimal": "low", "low": "low", "medium": "medium"}.get(level, "high")


def _thinking_disabled(model: Model, level: str) -> bool:
    """Level off on a reasoning model that may turn thinking off (its map does not null ``off``)."""
    off_allowed = (model.get("thinkingLevelMap") or {}).get("off", "") is not None
    return bool(model.get("reasoning")) and level == "off" and off_allowed


def managed_effort(model: Model, level: str) -> str | None:
    """The effort of this reply for ``compat.supportsMidConvoEffort`` models (None for others).

    Such models keep a fixed top-level effort (part of the cached prefix) and get the effort of each
    reply from a marker message placed before it.
    """
    if not _compat(model, "supportsMidConvoEffort", False) or _thinking_disabled(model, level):
        return None
    return effort_for(model, level) if level != "off" else "high"


def thinking_params(model: Model, context: Context, options: StreamOptions, level: str) -> tuple[JsonObject, int]:
    """``thinking``/``output_config`` request fields and the ``max_tokens`` that goes with them."""
    max_tokens = clamp_max_tokens(model, context, options.max_tokens)
    if _thinking_disabled(model, level):
        return {"thinking": {"type": "disabled"}}, max_tokens
    if managed_effort(model, level):
        thinking = {"type": "adaptive", "display": "summarized",
                    "block_binding": {"prefix_mismatch_behavior": "drop_block"}}
        return {"thinking": thinking, "output_config": {"effort": "low"}}, max_tokens
    if level == "off":
        return {}, max_tokens
    if _compat(model, "forceAdaptiveThinking", False):
        return {"thinking": {"type": "adaptive", "display": "summarized"},
                "output_config": {"effort": effort_for(model, level)}}, max_tokens
    budget = thinking_budget(level, options.thinking_budgets)
    widened = min(max_tokens + budget, model["maxTokens"])
    if widened <= budget:
        budget = min(budget, max(0, widened - MIN_ANSWER_TOKENS))
    max_tokens = clamp_max_tokens(model, context, widened)
    budget = min(budget, max(0, max_tokens - MIN_ANSWER_TOKENS)) or MIN_ANSWER_TOKENS
    return {"thinking": {"type": "enabled", "budget_tokens": budget, "display": "summarized"}}, max_tokens


def thinking_level(model: Model, options: StreamOptions) -> str:
    return clamp_thinking_level(model, options.thinking_level) if model.get("reasoning") else "off"


def build_body(model: Model, context: Context, options: StreamOptions, oauth: bool,
               plain_preferred: bool = False) -> JsonObject:
    """The request; ``plain_preferred`` sends tools that only prefer strict schemas plain."""
    control = cache_control(model, options.cache_retention)
    level = thinking_level(model, options)
    effort = managed_effort(model, level)
    messages = convert_messages(model, context, oauth, effort is not None, plain_preferred)
    if control:
        _mark_last_user_block(messages, control)
    if effort:
        messages.append(effort_marker(effort))
    thinking, max_tokens = thinking_params(model, context, options, level)
    body: JsonObject = {"model": model["id"], "messages": messages, "max_tokens": max_tokens, "stream": True}
    system = ([OAUTH_IDENTITY] if oauth else []) + ([context["systemPrompt"]] if context.get("systemPrompt") else [])
    if system:
        body["system"] = [{"type": "text", "text": text, **({"cache_control": control} if control else {})}
                          for text in system]
    # Sampling temperature and extended thinking exclude each other (and effort-managed models take none).
    thinking_on = level != "off" or _compat(model, "supportsMidConvoEffort", False)
    if options.temperature is not None and not thinking_on and _compat(model, "supportsTemperature", True):
        body["temperature"] = options.temperature
    if native_tool_changes(model, context):  # the list never changes: later tools come in system messages
        body["tools"] = [*convert_tools(model, context.get("tools") or [], oauth, control, plain_preferred),
                         DEFERRED_PLACEHOLDER]
    elif tools := current_tools(system_messages(context)):
        body["tools"] = convert_tools(model, tools, oauth, control, plain_preferred)
    body.update(thinking)
    fallbacks = (model.get("compat") or {}).get("allowedFallbackModels")
    if fallbacks:
        body["fallbacks"] = [{"model": f["model"]} for f in fallbacks]
    return body


def build_headers(model: Model, context: Context, options: StreamOptions, body: dict[str, Any],
                  threads: bool = False) -> dict[str, str]:
    """The request headers; ``threads``: the session may use message threads (their beta goes along)."""
    api_key = options.api_key or ""
    oauth = is_oauth_token(api_key)
    headers = {"accept": "application/json", "anthropic-version": API_VERSION}
    if oauth:
        headers.update({"authorization": f"Bearer {api_key}", "user-agent": OAUTH_USER_AGENT, "x-app": "cli"})
    elif api_key:
        headers["x-api-key"] = api_key
    betas = list(OAUTH_BETAS) if oauth else []
    if current_tools(system_messages(context)) and not _compat(model, "supportsEagerToolInputStreaming", True):
        betas.append(FINE_GRAINED_TOOL_STREAMING_BETA)
    if body.get("thinking", {}).get("type") == "enabled":
        betas.append(INTERLEAVED_THINKING_BETA)
    if (model.get("compat") or {}).get("allowedFallbackModels"):
        betas.append(SERVER_SIDE_FALLBACK_BETA)
    if _compat(model, "supportsMidConvoEffort", False):
        betas.extend(MID_CONVERSATION_EFFORT_BETAS)
    if native_tool_changes(model, context):
        betas.append(INLINE_TOOLS_BETA)
    if threads:
        betas.append(anthropic_threads.MESSAGE_THREADS_BETA)
    if betas:
        headers["anthropic-beta"] = ",".join(betas)
    # Configured headers win, including a configured anthropic-beta list.
    return {**headers, **(model.get("headers") or {}), **options.headers}
