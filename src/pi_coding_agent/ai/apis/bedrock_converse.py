"""Amazon Bedrock's Converse stream API (``bedrock-converse-stream``).

``POST <endpoint>/model/<modelId>/converse-stream`` with a JSON body (messages, system, inferenceConfig,
toolConfig, additionalModelRequestFields); the answer is AWS's binary event stream
(``application/vnd.amazon.eventstream``: length-prefixed frames with a CRC-checked prelude, typed headers
and a CRC-checked JSON payload), decoded by botocore's parser. Blobs (images, redacted reasoning) are
base64 strings in the JSON form of the API.

What pi sends and how it reads the answer, kept here:

* Claude models get cache points after the system prompt and the last user message (a one-hour TTL
  with long retention; ``AWS_BEDROCK_FORCE_CACHE=1`` forces them for inference-profile ARNs);
* thinking: adaptive Claude models (4.6 and later) take ``thinking: adaptive`` with an effort; older
  Claude models a token budget inside ``max_tokens``; gpt-oss a flat ``reasoning_effort``; GPT models
  a nested ``reasoning.effort``;
* signed reasoning is replayed to Claude only; redacted reasoning (opaque bytes) is kept base64 in
  ``thinkingSignature`` and replayed as ``redactedContent``;
* errors keep pi's prefixes (``Throttling error: ...``), which the retry classifier matches.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import Any, TypedDict
from urllib.parse import quote

import orjson

from pi_coding_agent.ai.apis import strict_schema
from pi_coding_agent.ai.apis.partial_json import loads, parse_arguments
from pi_coding_agent.ai.auth import aws as aws_auth
from pi_coding_agent.ai.auth.provider_env import env_value
from pi_coding_agent.ai.stream import ProviderError, StreamOptions
from pi_coding_agent.ai.thinking import (
    MIN_ANSWER_TOKENS,
    clamp_max_tokens,
    clamp_thinking_level,
    thinking_budget,
)
from pi_coding_agent.ai.transform import tool_result_runs
from pi_coding_agent.ai.transport.http import apply_payload_hook, post_stream
from pi_coding_agent.ai.types import (
    AssistantMessage,
    Context,
    ImageContent,
    JsonObject,
    Model,
    ThinkingContent,
    Tool,
    ToolResultMessage,
    UserContent,
)

EMPTY_TEXT = "<empty>"
REDACTED_PLACEHOLDER = "[Reasoning redacted]"
THINKING_BINDING_BETA = "thinking-binding-controls-2026-08-01"
INTERLEAVED_BETA = "interleaved-thinking-2025-05-14"
IMAGE_FORMATS = {"image/jpeg": "jpeg", "image/jpg": "jpeg", "image/png": "png", "image/gif": "gif",
                 "image/webp": "webp"}
STOP_REASONS = {"end_turn": "stop", "stop_sequence": "stop", "max_tokens": "length",
                "model_context_window_exceeded": "length", "tool_use": "toolUse"}
ERROR_PREFIXES = {
    "InternalServerException": "Internal server error",
    "ModelStreamErrorException": "Model stream error",
    "ValidationException": "Validation error",
    "ThrottlingException": "Throttling error",
    "ServiceUnavailableException": "Service unavailable",
}
ADAPTIVE = ("opus-4-6", "opus-4-7", "opus-4-8", "opus-5", "sonnet-4-6", "sonnet-5", "haiku-5", "fable-5")
NATIVE_XHIGH = ("opus-4-7", "opus-4-8", "opus-5", "sonnet-5", "haiku-5", "fable-5")
GPT_EFFORT = {"minimal": "low", "low": "low", "medium": "medium", "high": "high", "xhigh": "xhigh", "max": "max"}
GPT_OSS_EFFORT = {"minimal": "low", "low": "low", "medium": "medium", "high": "high", "xhigh": "high", "max": "high"}
DATA_RETENTION_DOCS = "https://docs.aws.amazon.com/bedrock/latest/userguide/data-retention.html"


# ------------------------------------------------------------------------------------------ model traits


def _candidates(model: Model) -> list[str]:
    out: list[str] = []
    for value in (model["id"], model.get("name") or ""):
        lower = value.lower()
        out += [lower, re.sub(r"[\s_.:]+", "-", lower)]
    return out


def _has(model: Model, fragments: tuple[str, ...]) -> bool:
    return any(f in c for c in _candidates(model) for f in fragments)


def is_claude(model: Model) -> bool:
    lower_id, name = model["id"].lower(), (model.get("name") or "").lower()
    return "anthropic.claude" in lower_id or "anthropic/claude" in lower_id or "claude" in name


def supports_caching(model: Model) -> bool:
    if not _has(model, ("claude",)):
        return env_value("AWS_BEDROCK_FORCE_CACHE") == "1"  # the request's credential env, then os.environ
    return _has(model, ("fable-5", "opus-5", "sonnet-5", "haiku-5", "-4-", "claude-3-7-sonnet", "claude-3-5-haiku"))


def _is_gov_cloud(model: Model) -> bool:
    region = (aws_auth.configured_region() or "").lower()
    lower = model["id"].lower()
    return region.startswith("us-gov-") or lower.startswith(("us-gov.", "arn:aws-us-gov:"))


# ----------------------------------------------------------------------------------------------- request


class ConverseMessage(TypedDict):
    """A message of the Converse request (its blocks are the API's own JSON)."""

    role: str
    content: list[JsonObject]


def _text(text: str) -> JsonObject | None:
    return {"text": text} if text.strip() else None


def _image(block: ImageContent) -> JsonObject:
    fmt = IMAGE_FORMATS.get(block["mimeType"])
    if fmt is None:
        raise ProviderError(f"Unknown image type: {block['mimeType']}")
    return {"image": {"format": fmt, "source": {"bytes": block["data"]}}}


def _tool_id(call_id: str) -> str:
    return re.sub(r"[^a-zA-Z0-9_-]", "_", call_id)[:64]


def _clean_document(value: object) -> object:
    """Bedrock documents reject empty keys."""
    if isinstance(value, list):
        return [_clean_document(v) for v in value]
    if isinstance(value, dict):
        return {k: _clean_document(v) for k, v in value.items() if k}
    return value


def _user_content(content: str | list[UserContent]) -> list[JsonObject]:
    if isinstance(content, str):
        return [_text(content) or {"text": EMPTY_TEXT}]
    blocks: list[JsonObject | None] = [_image(b) if b["type"] == "image" else _text(b["text"]) for b in content]
    kept = [b for b in blocks if b is not None]
    return kept or [{"text": EMPTY_TEXT}]


def _assistant_content(model: Model, msg: AssistantMessage) -> list[JsonObject]:
    out: list[JsonObject] = []
    for block in msg["content"]:
        if block["type"] == "text":
            if block["text"].strip():
                out.append({"text": block["text"]})
        elif block["type"] == "toolCall":
            out.append({"toolUse": {"toolUseId": _tool_id(block["id"]), "name": block["name"],
                                    "input": _clean_document(block["arguments"])}})
        elif block["type"] == "thinking":
            out += _reasoning(model, block)
    return out


def _reasoning(model: Model, block: ThinkingContent) -> list[JsonObject]:
    if block.get("redacted"):
        signature = block.get("thinkingSignature")
        return [{"reasoningContent": {"redactedContent": signature}}] if signature else []
    text = block["thinking"]
    if not text.strip():
        return []
    if not is_claude(model):
        return [{"reasoningContent": {"reasoningText": {"text": text}}}]
    signature = (block.get("thinkingSignature") or "").strip()
    if not signature:
        return [{"text": text}]  # unsigned reasoning cannot be replayed as reasoning
    return [{"reasoningContent": {"reasoningText": {"text": text, "signature": block["thinkingSignature"]}}}]


def _tool_results(model: Model, results: list[ToolResultMessage]) -> list[JsonObject]:
    """One user message for a run of tool results; Claude takes error results' images after them."""
    blocks: list[JsonObject] = []
    trailing: list[JsonObject] = []
    for result in results:
        content = result["content"]
        images = [b for b in content if b["type"] == "image"]
        if result.get("isError") and images and is_claude(model):
            trailing += [{"text": f"Images from the failed {result.get('toolName', 'tool')} call:"},
                         *(_image(b) for b in images)]
            content = [b for b in content if b["type"] != "image"]
        parts: list[JsonObject | None] = [_image(b) if b["type"] == "image" else _text(b["text"]) for b in content]
        kept = [p for p in parts if p is not None] or [{"text": EMPTY_TEXT}]
        blocks.append({"toolResult": {"toolUseId": _tool_id(result["toolCallId"]), "content": kept,
                                      "status": "error" if result.get("isError") else "success"}})
    return blocks + trailing


def _cache_point(retention: str) -> JsonObject:
    return {"cachePoint": {"type": "default", **({"ttl": "1h"} if retention == "long" else {})}}


def convert_messages(model: Model, context: Context, retention: str) -> list[ConverseMessage]:
    out: list[ConverseMessage] = []
    for msg in tool_result_runs([m for m in context["messages"] if m["role"] != "system"]):
        if isinstance(msg, list):
            out.append({"role": "user", "content": _tool_results(model, msg)})
        elif msg["role"] == "user":
            out.append({"role": "user", "content": _user_content(msg["content"])})
        elif msg["role"] == "assistant":
            content = _assistant_content(model, msg)
            if content:
                out.append({"role": "assistant", "content": content})
    if retention != "none" and supports_caching(model) and out and out[-1]["role"] == "user":
        out[-1]["content"].append(_cache_point(retention))
    return out


def system_blocks(model: Model, context: Context, retention: str) -> list[JsonObject] | None:
    """The system prompt with the conversation's system messages folded in (Converse has no others)."""
    parts = [context.get("systemPrompt") or ""]
    parts += [m["content"] for m in context["messages"] if m["role"] == "system" and m.get("content")]
    text = "\n\n".join(p for p in parts if p)
    if not text:
        return None
    blocks: list[JsonObject] = [{"text": text}]
    if retention != "none" and supports_caching(model):
        blocks.append(_cache_point(retention))
    return blocks


def _supports_strict(model: Model) -> bool:
    return bool((model.get("compat") or {}).get("supportsStrictMode"))


def _goes_strict(tool: Tool, supports_strict: bool, plain_preferred: bool) -> bool:
    return not (plain_preferred and strict_schema.prefers_strict(tool)) and strict_schema.strict_for(tool, supports_strict)


def tool_config(context: Context, supports_strict: bool, plain_preferred: bool = False) -> JsonObject | None:
    """``toolConfig``: strict specs for the tools that ask for it (``plain_preferred``: not the preferring ones)."""
    tools = context.get("tools") or []
    if not tools:
        return None
    specs: list[JsonObject] = []
    for tool in tools:
        strict = _goes_strict(tool, supports_strict, plain_preferred)
        schema = strict_schema.make_strict(tool["parameters"]) if strict else tool["parameters"]
        specs.append({"toolSpec": {"name": tool["name"], "description": tool["description"],
                                   "inputSchema": {"json": schema}, **({"strict": True} if strict else {})}})
    return {"tools": specs}


def has_preferred_strict(model: Model, context: Context) -> bool:
    """A ``strict: "prefer"`` tool goes strict, so a refused request can go again with it plain."""
    supports = _supports_strict(model)
    return any(strict_schema.prefers_strict(t) and _goes_strict(t, supports, False) for t in context.get("tools") or [])


def _effort(model: Model, level: str) -> str:
    if level == "xhigh" and _has(model, NATIVE_XHIGH):
        return "xhigh"
    mapped = (model.get("thinkingLevelMap") or {}).get(level)
    if isinstance(mapped, str):
        return mapped
    return {"minimal": "low", "low": "low", "medium": "medium"}.get(level, "high")


def thinking_fields(model: Model, context: Context, options: StreamOptions) -> tuple[JsonObject | None, int]:
    """``additionalModelRequestFields`` and the ``maxTokens`` that goes with them."""
    level = clamp_thinking_level(model, options.thinking_level) if model["reasoning"] else "off"
    claude = is_claude(model)
    max_tokens = clamp_max_tokens(model, context, options.max_tokens)  # pi's agent always sends one
    if level == "off":
        return None, max_tokens
    if not claude:
        if _has(model, ("gpt-oss",)):
            return {"reasoning_effort": GPT_OSS_EFFORT[level]}, max_tokens
        if _has(model, ("gpt-",)):
            mapped = (model.get("thinkingLevelMap") or {}).get(level)
            return {"reasoning": {"effort": mapped if isinstance(mapped, str) else GPT_EFFORT[level]}}, max_tokens
        return None, max_tokens
    gov = _is_gov_cloud(model)
    display = {} if gov else {"display": "summarized"}
    if _has(model, ADAPTIVE):
        binding = not gov and _has(model, NATIVE_XHIGH)
        fields: JsonObject = {
            "thinking": {"type": "adaptive", **display,
                         **({"block_binding": {"prefix_mismatch_behavior": "drop_block"}} if binding else {})},
            "output_config": {"effort": _effort(model, level)}}
        if binding:
            fields["anthropic_beta"] = [THINKING_BINDING_BETA]
        return fields, max_tokens
    budget = thinking_budget(level, options.thinking_budgets)
    base = options.max_tokens
    widened = model["maxTokens"] if base is None else min(base + budget, model["maxTokens"])
    if widened <= budget:
        budget = max(0, widened - MIN_ANSWER_TOKENS)
    max_tokens = clamp_max_tokens(model, context, widened)
    budget = min(budget, max(0, max_tokens - MIN_ANSWER_TOKENS))
    return {"thinking": {"type": "enabled", "budget_tokens": budget, **display},
            "anthropic_beta": [INTERLEAVED_BETA]}, max_tokens


def build_request(model: Model, context: Context, options: StreamOptions,
                  plain_preferred: bool = False) -> JsonObject:
    """The Converse body (``modelId`` goes in the URL, not here)."""
    retention = options.cache_retention
    extra, max_tokens = thinking_fields(model, context, options)
    inference: JsonObject = {"maxTokens": max_tokens}
    if options.temperature is not None:
        inference["temperature"] = options.temperature
    body: JsonObject = {"messages": convert_messages(model, context, retention)}
    system = system_blocks(model, context, retention)
    if system is not None:
        body["system"] = system
    body["inferenceConfig"] = inference
    tools = tool_config(context, _supports_strict(model), plain_preferred)
    if tools is not None:
        body["toolConfig"] = tools
    if extra is not None:
        body["additionalModelRequestFields"] = extra
    return body


# ------------------------------------------------------------------------------------------------ stream


class _Reader:
    """Converse stream events -> normalized events; blocks are keyed by Bedrock's contentBlockIndex."""

    def __init__(self, output: AssistantMessage) -> None:
        self.output = output
        self.blocks: list[Any] = output["content"]
        self.open: dict[int, dict[str, Any]] = {}

    def feed(self, kind: str, event: dict[str, Any]) -> list[JsonObject]:
        if kind == "contentBlockStart":
            return self._start(event)
        if kind == "contentBlockDelta":
            return self._delta(event)
        if kind == "contentBlockStop":
            return self._stop(event)
        if kind == "messageStop":
            reason = event.get("stopReason")
            if reason:
                self.output["rawStopReason"] = reason
            mapped = STOP_REASONS.get(reason or "")
            self.output["stopReason"] = mapped or "error"  # type: ignore[typeddict-item]
            if mapped is None and reason:
                self.output["errorMessage"] = f"Provider stopped with: {reason}"
        elif kind == "metadata" and event.get("usage"):
            self._usage(event["usage"])
        return []

    def _open_block(self, index: int, block: JsonObject, kind: str) -> list[JsonObject]:
        self.blocks.append(block)
        self.open[index] = {"at": len(self.blocks) - 1, "args": "", "redacted": []}
        return [{"type": f"{kind}_start", "contentIndex": len(self.blocks) - 1}]

    def _start(self, event: dict[str, Any]) -> list[JsonObject]:
        tool = (event.get("start") or {}).get("toolUse")
        if not tool:
            return []
        block: JsonObject = {"type": "toolCall", "id": tool.get("toolUseId") or "", "name": tool.get("name") or "", "arguments": {}}
        events = self._open_block(event.get("contentBlockIndex", 0), block, "toolcall")
        events[0].update(id=block["id"], toolName=block["name"])
        return events

    def _delta(self, event: dict[str, Any]) -> list[JsonObject]:
        index = event.get("contentBlockIndex", 0)
        delta = event.get("delta") or {}
        events: list[JsonObject] = []
        state = self.open.get(index)
        if "text" in delta:
            if state is None:
                events += self._open_block(index, {"type": "text", "text": ""}, "text")
                state = self.open[index]
            block = self.blocks[state["at"]]
            if block["type"] == "text":
                block["text"] += delta["text"]
                events.append({"type": "text_delta", "contentIndex": state["at"], "delta": delta["text"]})
        elif "toolUse" in delta and state is not None and self.blocks[state["at"]]["type"] == "toolCall":
            piece = delta["toolUse"].get("input") or ""
            state["args"] += piece
            self.blocks[state["at"]]["arguments"] = parse_arguments(state["args"])
            events.append({"type": "toolcall_delta", "contentIndex": state["at"], "delta": piece})
        elif "reasoningContent" in delta:
            if state is None:
                events += self._open_block(index, {"type": "thinking", "thinking": "", "thinkingSignature": ""},
                                           "thinking")
                state = self.open[index]
            events += self._reasoning(state, delta["reasoningContent"])
        return events

    def _reasoning(self, state: dict[str, Any], part: dict[str, Any]) -> list[JsonObject]:
        block = self.blocks[state["at"]]
        if block["type"] != "thinking":
            return []
        events: list[JsonObject] = []
        if part.get("text"):
            block["thinking"] += part["text"]
            events.append({"type": "thinking_delta", "contentIndex": state["at"], "delta": part["text"]})
        if part.get("signature") and not block.get("redacted"):
            block["thinkingSignature"] = (block.get("thinkingSignature") or "") + part["signature"]
        if part.get("redactedContent"):
            if not block.get("redacted"):
                block.update(redacted=True, thinkingSignature="")
                block["thinking"] += REDACTED_PLACEHOLDER
                events.append({"type": "thinking_delta", "contentIndex": state["at"], "delta": REDACTED_PLACEHOLDER})
            state["redacted"].append(part["redactedContent"])
        return events

    def _stop(self, event: dict[str, Any]) -> list[JsonObject]:
        state = self.open.pop(event.get("contentBlockIndex", 0), None)
        if state is None:
            return []
        at = state["at"]
        block = self.blocks[at]
        if block["type"] == "text":
            return [{"type": "text_end", "contentIndex": at, "content": block["text"]}]
        if block["type"] == "thinking":
            self._flush_redacted(state)
            return [{"type": "thinking_end", "contentIndex": at, "content": block["thinking"]}]
        block["arguments"] = parse_arguments(state["args"])
        return [{"type": "toolcall_end", "contentIndex": at, "toolCall": block}]

    def _flush_redacted(self, state: dict[str, Any]) -> None:
        """Redacted chunks arrive as base64 pieces; the signature is the base64 of their joined bytes."""
        if state["redacted"]:
            import base64

            raw = b"".join(base64.b64decode(chunk) for chunk in state["redacted"])
            self.blocks[state["at"]]["thinkingSignature"] = base64.b64encode(raw).decode()
            state["redacted"] = []

    def flush(self) -> None:
        for state in self.open.values():
            self._flush_redacted(state)

    def _usage(self, raw: dict[str, Any]) -> None:
        usage = self.output["usage"]
        usage["input"] = raw.get("inputTokens") or 0
        usage["output"] = raw.get("outputTokens") or 0
        usage["cacheRead"] = raw.get("cacheReadInputTokens") or 0
        usage["cacheWrite"] = raw.get("cacheWriteInputTokens") or 0
        one_hour = sum(d.get("inputTokens") or 0 for d in raw.get("cacheDetails") or [] if d.get("ttl") == "1h")
        if raw.get("cacheDetails") is not None:
            usage["cacheWrite1h"] = one_hour
        usage["totalTokens"] = raw.get("totalTokens") or usage["input"] + usage["output"]


def error_text(name: str | None, status: int | None, body_text: str) -> str:
    """pi's text: a prefix for a named AWS exception, else the status and raw body."""
    message = body_text
    try:
        parsed = orjson.loads(body_text) if body_text.strip().startswith("{") else None
    except orjson.JSONDecodeError:
        parsed = None
    if isinstance(parsed, dict) and isinstance(parsed.get("message") or parsed.get("Message"), str):
        message = parsed.get("message") or parsed["Message"]
    elif name is None and status is not None:
        message = f"{status}: {body_text}"
    hint = f" See {DATA_RETENTION_DOCS} for supported data retention modes." if re.search(
        r"data retention mode", message, re.I) else ""
    if name is None:
        return f"{message}{hint}"
    return f"{ERROR_PREFIXES.get(name, name)}: {message}{hint}"


def _http_error_text(status: int, headers: Mapping[str, str], body_text: str) -> str:
    raw = headers.get("x-amzn-errortype") or ""
    name = raw.split(":", 1)[0] or None
    if name is None:
        try:
            parsed = orjson.loads(body_text)
            name = parsed.get("__type", "").rsplit("#", 1)[-1] or None if isinstance(parsed, dict) else None
        except orjson.JSONDecodeError:
            name = None
    return error_text(name, status, body_text)


def _request_headers(model: Model, options: StreamOptions) -> dict[str, str]:
    """Caller and model headers, minus those SigV4 or the bearer token own."""
    reserved = re.compile(r"^(?:x-amz-.*|authorization|host)$", re.I)
    headers = {"content-type": "application/json"}
    headers.update({k: v for k, v in {**(model.get("headers") or {}), **options.headers}.items()
                    if not reserved.match(k)})
    return headers


async def _authorised(model: Model, options: StreamOptions, body: bytes) -> tuple[str, dict[str, str]]:
    """The request URL and headers carrying bearer or SigV4 auth."""
    headers = _request_headers(model, options)
    path = f"/model/{quote(model['id'], safe='')}/converse-stream"
    region = aws_auth.region_for(model["id"], model["baseUrl"])
    token = aws_auth.bearer_token(options.api_key)
    if token is not None:
        url = aws_auth.endpoint_for(model["baseUrl"], region or aws_auth.DEFAULT_REGION) + path
        return url, {**headers, "authorization": f"Bearer {token}"}
    credentials, profile_region = await aws_auth.signing_credentials()
    region = region or profile_region or aws_auth.DEFAULT_REGION
    url = aws_auth.endpoint_for(model["baseUrl"], region) + path
    return url, aws_auth.sign(credentials, region, url, headers, body)


def _strict_limits_refused(error: ProviderError) -> bool:
    """Bedrock validates tool schemas before it streams, so this refusal comes with nothing streamed."""
    text = str(error)
    return text.startswith(f"{ERROR_PREFIXES['ValidationException']}: ") and strict_schema.is_strict_limit_error(text)


@asynccontextmanager
async def _open(model: Model, context: Context, options: StreamOptions,
                output: AssistantMessage) -> AsyncIterator[Any]:
    """The open event-stream response; strict tools over Claude's limits are sent again plain, as pi does."""
    plain = strict_schema.over_limits(options.session_id)
    retry_plain = has_preferred_strict(model, context)
    while True:
        body = build_request(model, context, options, plain)
        content = orjson.dumps(await apply_payload_hook(body, options))
        url, headers = await _authorised(model, options, content)
        opened = False
        try:
            async with post_stream(url, headers, content, options, describe=_http_error_text) as response:
                opened = True
                yield response
                return
        except ProviderError as error:
            if opened or plain or not retry_plain or not _strict_limits_refused(error):
                raise
            plain = True
            strict_schema.fall_back_plain(output, options.session_id, "bedrock", error)


async def stream(
    model: Model, context: Context, options: StreamOptions, output: AssistantMessage
) -> AsyncIterator[JsonObject]:
    from botocore.eventstream import EventStreamBuffer, ParserError

    reader = _Reader(output)
    buffer = EventStreamBuffer()
    try:
        async with _open(model, context, options, output) as response:
            async for chunk in response.aiter_bytes():
                buffer.add_data(chunk)
                for message in buffer:
                    if options.on_stream_event is not None and (raw := raw_event(message.headers, message.payload)):
                        await options.on_stream_event(raw)
                    for event in _handle_frame(reader, message.headers, message.payload):
                        yield event
    except ParserError as exc:  # bad CRCs or lengths
        reader.flush()
        raise ProviderError(f"Bedrock event stream: {exc}") from exc
    reader.flush()
    if output["stopReason"] == "pending":
        raise ProviderError("Bedrock stream ended without a stop reason")
    if output["stopReason"] == "error":
        raise ProviderError(output.get("errorMessage") or "An unknown error occurred")


def raw_event(headers: Mapping[str, object], payload: bytes) -> JsonObject | None:
    """A decoded frame as pi's AWS client hands it over before pi reads it (``provider_stream_event``):
    ``{"contentBlockDelta": {...}}``, an exception under its lower-camel name
    (``{"throttlingException": {"message": ...}}``); None for a transport error frame."""
    kind = headers.get(":message-type")
    name = str(headers.get(":event-type" if kind == "event" else ":exception-type" if kind == "exception" else "")
               or "")
    if not name:
        return None
    try:
        data: object = loads(payload) if payload else {}
    except orjson.JSONDecodeError:
        data = payload.decode(errors="replace")
    return {name[:1].lower() + name[1:]: data}


def _handle_frame(reader: _Reader, headers: Mapping[str, object], payload: bytes) -> list[JsonObject]:
    kind = headers.get(":message-type")
    if kind == "exception":
        name = str(headers.get(":exception-type") or "")
        raise ProviderError(error_text(name[:1].upper() + name[1:] or None, None, payload.decode(errors="replace")))
    if kind == "error":
        raise ProviderError(f"{headers.get(':error-code')}: {headers.get(':error-message')}")
    event_type = str(headers.get(":event-type") or "")
    data = loads(payload) if payload else {}
    if event_type == "messageStart" and data.get("role") not in (None, "assistant"):
        raise ProviderError("Unexpected assistant message start but got user message start instead")
    return reader.feed(event_type, data)
