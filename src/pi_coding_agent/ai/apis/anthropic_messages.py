"""The ``anthropic-messages`` wire API: Anthropic's ``POST /v1/messages`` with server-sent events.

Request shape, headers, beta flags, thinking parameters, cache breakpoints and error texts follow
what pi 1.6.0 sends and records (checked against the reference build over a fake server):

* cache breakpoints (``cache_control``) on the system block, the last tool and the last block of a
  trailing user message, with a one-hour TTL for ``cache_retention="long"`` and none for ``"none"``;
* thinking: ``disabled`` for reasoning models at level off, ``adaptive`` + ``output_config.effort``
  for ``compat.forceAdaptiveThinking`` models, else a token budget (``max_tokens`` grows to hold it);
* HTTP errors read ``"<status> <compact JSON body>"`` (the Anthropic SDK's message); an
  ``event: error`` mid-stream fails with its raw data.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from typing import Any, cast

import orjson

from pi_coding_agent.ai.apis import anthropic_threads
from pi_coding_agent.ai.apis.accumulate import append_text
from pi_coding_agent.ai.apis.anthropic_system import (
    DEFERRED_PLACEHOLDER,
    INLINE_TOOLS_BETA,
    native_tool_changes,
    system_message,
)
from pi_coding_agent.ai.apis.anthropic_tools import (
    convert_tools,
    has_preferred_strict,
    strict_fallback,
    tool_name,
)
from pi_coding_agent.ai.apis.diagnostics import append_transformations
from pi_coding_agent.ai.apis.partial_json import lenient_loads, loads, repair_arguments
from pi_coding_agent.ai.apis.usage import apply_reported_cost, is_openrouter
from pi_coding_agent.ai.stream import ProviderError, StreamOptions
from pi_coding_agent.ai.thinking import clamp_max_tokens, clamp_thinking_level, thinking_budget
from pi_coding_agent.ai.tool_changes import current_tools, system_messages
from pi_coding_agent.ai.transform import prepare_messages, tool_result_runs
from pi_coding_agent.ai.transport.http import apply_payload_hook, sse_batches
from pi_coding_agent.ai.transport.sse import ServerSentEvent
from pi_coding_agent.ai.types import (
    AssistantContent,
    AssistantMessage,
    BlockEvent,
    Context,
    ImageContent,
    JsonObject,
    Model,
    Tool,
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
STOP_REASONS = {"end_turn": "stop", "max_tokens": "length", "tool_use": "toolUse", "pause_turn": "stop",
                "stop_sequence": "stop"}
MESSAGE_EVENTS = frozenset({"message_start", "message_delta", "message_stop", "content_block_start",
                            "content_block_delta", "content_block_stop"})
_UNSAFE_ID_CHARS = re.compile(r"[^a-zA-Z0-9_-]")
# argumentsError texts of a tool call whose content_block_stop never came
CUT_BY_LIMIT = "Tool call cut off by the output token limit (max_tokens) before its arguments were complete"
CUT_BY_END = "Tool call cut off: the stream ended before its arguments were complete"
CUT_BY_RESTART = "Tool call cut off by a second message_start in the same stream"


def is_oauth_token(api_key: str | None) -> bool:
    return bool(api_key) and "sk-ant-oat" in str(api_key)


def normalize_tool_call_id(call_id: str) -> str:
    """Anthropic accepts ``^[a-zA-Z0-9_-]+$`` up to 64 characters (other APIs' ids may not fit)."""
    return _UNSAFE_ID_CHARS.sub("_", call_id)[:64]


def anthropic_error_text(status: int, body_text: str) -> str:
    """The SDK's message: the body's top-level ``message`` if any, else the whole body as compact JSON."""
    try:
        body: object = orjson.loads(body_text) if body_text.strip() else None
    except orjson.JSONDecodeError:
        return f"{status} {body_text}"
    if body is None:
        return f"{status} status code (no body)"
    message = body.get("message") if isinstance(body, dict) else None
    if isinstance(message, str) and message:
        return f"{status} {message}"
    return f"{status} {orjson.dumps(message if message else body).decode()}"


# --- request ---------------------------------------------------------------------------------


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


def _reply_messages(model: Model, output: AssistantMessage, oauth: bool) -> list[JsonObject]:
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


# --- response --------------------------------------------------------------------------------


def finish_arguments(raw: str) -> tuple[JsonObject, str | None]:
    """Parse streamed tool arguments: ``({}, None)`` for none, ``({}, reason)`` for bad JSON."""
    if not raw.strip():
        return {}, None
    try:
        value = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        try:
            value = lenient_loads(raw, exc)
        except orjson.JSONDecodeError:
            return {}, f"{exc}\n\nReceived arguments:\n{raw}"
    if not isinstance(value, dict):
        return {}, f"Tool arguments must be a JSON object\n\nReceived arguments:\n{raw}"
    return value, None


class _Reader:
    """Turns Anthropic stream events into normalized events, filling the output message."""

    def __init__(self, model: Model, tools: list[Tool], output: AssistantMessage, oauth: bool) -> None:
        self.model = model
        self.msg: dict[str, Any] = output  # type: ignore[assignment]  # the reader fills blocks by computed keys
        self.tool_names = {t["name"].lower(): t["name"] for t in tools} if oauth else {}
        self.open: dict[int, tuple[int, list[str]]] = {}  # anthropic index -> (content index, json pieces)
        self.started = False
        self.stopped = False
        self.failure: str | None = None  # set when the stream turned out malformed (raised after its events)
        self.transformations: list[object] | None = None  # input_transformations the API reported, the last wins

    def handle(self, event: dict[str, Any]) -> list[BlockEvent]:
        kind = event["type"]
        if kind == "message_start":
            if self.started:  # a second message inside this one: what came before it is broken
                self.failure = "Anthropic stream sent a second message_start before message_stop (malformed response)"
                return self.close_open(CUT_BY_RESTART)
            return self._start(event["message"])
        elif kind == "content_block_start":
            return self._block_start(event["index"], event["content_block"])
        elif kind == "content_block_delta":
            return self._block_delta(event["index"], event["delta"])
        elif kind == "content_block_stop":
            return self._block_stop(event["index"])
        elif kind == "message_delta":
            self._message_delta(event)
        elif kind == "message_stop":
            self.stopped = True
        return []

    def _start(self, message: dict[str, Any]) -> list[BlockEvent]:
        self.started = True
        if isinstance(message.get("input_transformations"), list):
            self.transformations = message["input_transformations"]
        if message.get("id"):
            self.msg["responseId"] = message["id"]
        if message.get("model") and message["model"] != self.model["id"]:
            self.msg["responseModel"] = message["model"]
        usage = message.get("usage") or {}
        u = self.msg["usage"]
        u["input"] = usage.get("input_tokens") or 0
        u["output"] = usage.get("output_tokens") or 0
        u["cacheRead"] = usage.get("cache_read_input_tokens") or 0
        u["cacheWrite"] = usage.get("cache_creation_input_tokens") or 0
        u["cacheWrite1h"] = (usage.get("cache_creation") or {}).get("ephemeral_1h_input_tokens") or 0
        u["totalTokens"] = u["input"] + u["output"] + u["cacheRead"] + u["cacheWrite"]
        return self._whole_content(message)

    def _whole_content(self, message: dict[str, Any]) -> list[BlockEvent]:
        """A message that arrives complete in ``message_start`` (proxies, programmatic tool calling)."""
        events: list[BlockEvent] = []
        for offset, block in enumerate(message.get("content") or []):
            index = -1 - offset  # out of the stream's own index range
            started = self._block_start(index, block)
            events += started
            kind = {"text_start": "text", "thinking_start": "thinking"}.get(started[0]["type"]) if started else None
            if kind and self.msg["content"][-1][kind] and not self.msg["content"][-1].get("redacted"):
                events.append(cast(BlockEvent, {"type": f"{kind}_delta", "contentIndex": started[0]["contentIndex"],
                               "delta": self.msg["content"][-1][kind]}))
            events += self._block_stop(index)
        if message.get("stop_reason"):
            self._message_delta({"delta": {"stop_reason": message["stop_reason"],
                                           "stop_details": message.get("stop_details")}})
            self.stopped = True  # nothing more is owed; a later message_stop changes nothing
        return events

    def close_open(self, cause: str) -> list[BlockEvent]:
        """End every block still open; a tool call keeps its repaired partial input, marked incomplete."""
        events: list[BlockEvent] = []
        for index in sorted(self.open, key=lambda i: self.open[i][0]):
            at, pieces = self.open[index]
            block = self.msg["content"][at]
            if block["type"] == "toolCall":
                raw = "".join(pieces)
                if raw:
                    block["arguments"] = repair_arguments(raw)[0]
                block["argumentsError"] = f"{cause}\n\nReceived arguments:\n{raw}"
            events += self._block_stop(index, keep_arguments=True)
        return events

    def _block_start(self, index: int, block: dict[str, Any]) -> list[BlockEvent]:
        content = self.msg["content"]
        at = len(content)
        kind = block["type"]
        event: BlockEvent
        if kind == "text":
            content.append({"type": "text", "text": block.get("text") or ""})
            event = {"type": "text_start", "contentIndex": at}
        elif kind == "thinking":
            content.append({"type": "thinking", "thinking": block.get("thinking") or "",
                            "thinkingSignature": block.get("signature") or ""})
            event = {"type": "thinking_start", "contentIndex": at}
        elif kind == "redacted_thinking":
            content.append({"type": "thinking", "thinking": "[Reasoning redacted]",
                            "thinkingSignature": block.get("data", ""), "redacted": True})
            event = {"type": "thinking_start", "contentIndex": at}
        elif kind == "tool_use":
            name = self.tool_names.get(block["name"].lower(), block["name"])
            content.append({"type": "toolCall", "id": block["id"], "name": name, "arguments": block.get("input") or {}})
            event = {"type": "toolcall_start", "contentIndex": at, "id": block["id"], "toolName": name}
        elif kind == "fallback":  # another model answers: fine before any output, fatal after it
            if content:
                raise ProviderError("Anthropic performed an unsupported mid-output model fallback")
            return []
        else:
            return []  # server tool blocks and the like are not part of pi's message
        self.open[index] = (at, [])
        return [event]

    def _block_delta(self, index: int, delta: dict[str, Any]) -> list[BlockEvent]:
        if index not in self.open:
            return []
        at, pieces = self.open[index]
        block = self.msg["content"][at]
        kind = delta["type"]
        if kind == "text_delta" and block["type"] == "text":
            append_text(block, "text", delta["text"])
            return [{"type": "text_delta", "contentIndex": at, "delta": delta["text"]}]
        if kind == "thinking_delta" and block["type"] == "thinking":
            append_text(block, "thinking", delta["thinking"])
            return [{"type": "thinking_delta", "contentIndex": at, "delta": delta["thinking"]}]
        if kind == "signature_delta" and block["type"] == "thinking":
            block["thinkingSignature"] = (block.get("thinkingSignature") or "") + delta["signature"]
        elif kind == "input_json_delta" and block["type"] == "toolCall":
            pieces.append(delta["partial_json"])
            return [{"type": "toolcall_delta", "contentIndex": at, "delta": delta["partial_json"]}]
        return []

    def _block_stop(self, index: int, keep_arguments: bool = False) -> list[BlockEvent]:
        if index not in self.open:
            return []
        at, pieces = self.open.pop(index)
        block = self.msg["content"][at]
        if block["type"] == "text":
            return [{"type": "text_end", "contentIndex": at, "content": block["text"]}]
        if block["type"] == "thinking":
            return [{"type": "thinking_end", "contentIndex": at, "content": block["thinking"]}]
        if pieces and not keep_arguments:  # else the input came whole with content_block_start
            arguments, error = finish_arguments("".join(pieces))
            block["arguments"] = arguments
            if error:
                block["argumentsError"] = error
        return [{"type": "toolcall_end", "contentIndex": at, "toolCall": block}]

    def _message_delta(self, event: dict[str, Any]) -> None:
        if isinstance(event.get("input_transformations"), list):
            self.transformations = event["input_transformations"]
        reason = (event.get("delta") or {}).get("stop_reason")
        if reason:
            self.msg["rawStopReason"] = reason
            self.msg["stopReason"] = self._map_stop(reason, (event.get("delta") or {}).get("stop_details"))
        usage = event.get("usage") or {}
        u = self.msg["usage"]
        for wire, ours in (("input_tokens", "input"), ("output_tokens", "output"),
                           ("cache_read_input_tokens", "cacheRead"), ("cache_creation_input_tokens", "cacheWrite")):
            if usage.get(wire) is not None:
                u[ours] = usage[wire]
        one_hour = (usage.get("cache_creation") or {}).get("ephemeral_1h_input_tokens")
        if one_hour is not None:
            u["cacheWrite1h"] = one_hour
        thinking = (usage.get("output_tokens_details") or {}).get("thinking_tokens")
        if thinking is not None:
            u["reasoning"] = thinking
        u["totalTokens"] = u["input"] + u["output"] + u["cacheRead"] + u["cacheWrite"]
        if usage and is_openrouter(self.model):
            apply_reported_cost(u, usage)

    def _map_stop(self, reason: str, details: object) -> str:
        if reason in STOP_REASONS:
            return STOP_REASONS[reason]
        if reason == "refusal":
            explanation = (details or {}).get("explanation") if isinstance(details, dict) else None
            self.msg["errorMessage"] = explanation or "The model refused to complete the request"
        elif reason == "sensitive":
            self.msg["errorMessage"] = "Provider stopped with: sensitive"
        else:
            raise ProviderError(f"Unhandled stop reason: {reason}")
        return "error"


def _parsed(sse: ServerSentEvent) -> JsonObject | None:
    """The JSON of a message event (None for the rest); a stream ``error`` event raises its text."""
    if sse.event == "error":
        raise ProviderError(sse.data)
    if sse.event not in MESSAGE_EVENTS:
        return None
    try:
        parsed: JsonObject = loads(sse.data)
    except orjson.JSONDecodeError as exc:
        raise ProviderError(f"Could not parse Anthropic SSE event {sse.event}: {exc}; data={sse.data}") from exc
    return parsed


async def stream(
    model: Model, context: Context, options: StreamOptions, output: AssistantMessage
) -> AsyncIterator[list[BlockEvent]]:
    oauth = is_oauth_token(options.api_key)
    configured = {k.lower() for k, v in {**(model.get("headers") or {}), **options.headers}.items() if v.strip()}
    federated = None
    if not options.api_key and not configured & {"authorization", "x-api-key"}:
        from pi_coding_agent.ai.auth import anthropic_federation

        federated = await anthropic_federation.token_for(model)

    url = f"{model['baseUrl'].rstrip('/')}/v1/messages"
    thread_session = anthropic_threads.session_for(model, options)
    sending = anthropic_threads.without_payload_hook(options)
    threaded: list[anthropic_threads.ThreadedRequest] = []  # the last request, when it may use a thread

    async def request(plain: bool) -> AsyncIterator[object]:
        body = build_body(model, context, options, oauth, plain)
        headers = build_headers(model, context, options, body, thread_session is not None)
        if federated is not None:
            headers = anthropic_federation.with_token(headers, federated)
        body = await apply_payload_hook(body, options)  # the hook sees the full request, never a thread's
        threaded[:] = anthropic_threads.requests_for(model, thread_session, body, headers, options)
        if not threaded:
            return sse_batches(url, headers, body, sending, anthropic_error_text)
        return threaded[0].events(url, headers, sending, output, anthropic_error_text)

    effort = managed_effort(model, thinking_level(model, options))
    if effort:
        output["providerThinkingLevel"] = effort
    tools = current_tools(system_messages(context))
    reader = _Reader(model, tools, output, oauth)
    async for batch in strict_fallback(request, options, output, has_preferred_strict(model, tools)):
        items: list[BlockEvent] = []  # a network read's events go on as one list
        try:
            for sse in batch:
                if (event := _parsed(sse)) is not None:
                    items += reader.handle(event)
                    if reader.failure:
                        raise ProviderError(reader.failure)
        finally:  # what came before a failing event goes on first, as it would one by one
            if items:
                yield items
    cause = CUT_BY_LIMIT if output["stopReason"] == "length" else CUT_BY_END
    if closing := reader.close_open(cause):  # blocks the stream never stopped (max_tokens inside a call)
        yield closing
    if reader.started and not reader.stopped:
        raise ProviderError("Anthropic stream ended before message_stop")
    if output["stopReason"] == "pending":
        raise ProviderError("Anthropic stream ended without a stop reason")
    if output["stopReason"] == "error":
        raise ProviderError(output.get("errorMessage") or "An unknown error occurred")
    if threaded:
        threaded[0].record(output, _reply_messages(model, output, oauth))
    append_transformations(reader.msg, "anthropic_input_transformations", reader.transformations or [],
                           ("type", "path", "reason"))
