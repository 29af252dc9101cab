"""The ``google-generative-ai`` wire API: Gemini's ``models/<id>:streamGenerateContent?alt=sse``.

The body is what pi 1.6.0's Google SDK puts on the wire (``contents`` with roles user/model,
``systemInstruction``, ``functionDeclarations`` with ``parametersJsonSchema``, and a
``generationConfig`` holding ``maxOutputTokens`` and ``thinkingConfig``). Gemini streams whole
parts: text and thought text in pieces, function calls complete and without ids, so ids are made
here. ``thoughtSignature``s are kept on the blocks they came with and replayed to the same model.
Error texts are the SDK's: the JSON error body for HTTP errors, ``got status: <STATUS>. <json>``
for an error object inside the stream.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import AsyncGenerator, AsyncIterator
from contextlib import aclosing
from http import HTTPStatus
from typing import Any, TypedDict

import orjson

from pi_coding_agent.ai.apis.accumulate import append_text
from pi_coding_agent.ai.apis.partial_json import loads
from pi_coding_agent.ai.stream import ProviderError, StreamOptions
from pi_coding_agent.ai.thinking import clamp_max_tokens, clamp_thinking_level
from pi_coding_agent.ai.transport.http import sse_events
from pi_coding_agent.ai.types import (
    AssistantMessage,
    Context,
    ImageContent,
    JsonObject,
    Model,
    Tool,
    ToolResultMessage,
    now_ms,
)

# Token budgets (minimal, low, medium, high) of the Gemini 2.5 models; others think dynamically (-1).
BUDGETS: tuple[tuple[str, tuple[int, int, int, int]], ...] = (
    ("2.5-pro", (128, 2048, 8192, 32768)),
    ("2.5-flash-lite", (512, 2048, 8192, 24576)),
    ("2.5-flash", (128, 2048, 8192, 24576)),
)
BUDGET_LEVELS = ("minimal", "low", "medium", "high")
STOP_REASONS = {"STOP": "stop", "MAX_TOKENS": "length", "CONTINUATION": "length"}
ERROR_REASONS = frozenset({
    "BLOCKLIST", "PROHIBITED_CONTENT", "SPII", "SAFETY", "IMAGE_SAFETY", "IMAGE_PROHIBITED_CONTENT",
    "IMAGE_RECITATION", "IMAGE_OTHER", "RECITATION", "FINISH_REASON_UNSPECIFIED", "OTHER", "LANGUAGE",
    "MALFORMED_FUNCTION_CALL", "UNEXPECTED_TOOL_CALL", "TOO_MANY_TOOL_CALLS", "NO_IMAGE",
})
IMAGE_ONLY_NOTE = "(image attached)"
TOOL_IMAGES_NOTE = "Images returned by the tool:"
_THINKING_LEVEL_MODEL = re.compile(r"gemini-3(?:\.\d+)?-(?:pro|flash)|gemini-(?:[4-9]|[1-9]\d)|gemma-?4")
_GEMINI_MAJOR = re.compile(r"^gemini(?:-live)?-(\d+)")
_BASE64 = re.compile(r"^[A-Za-z0-9+/]+={0,2}$")
_UNSAFE_ID_CHARS = re.compile(r"[^a-zA-Z0-9_-]")
_call_numbers = itertools.count(1)


def google_error_text(status: int, body_text: str) -> str:
    """The SDK's message for an HTTP error: the JSON body, compact (or one built around a text body)."""
    try:
        return orjson.dumps(orjson.loads(body_text)).decode()
    except orjson.JSONDecodeError:
        try:
            phrase = HTTPStatus(status).phrase
        except ValueError:
            phrase = ""
        return orjson.dumps({"error": {"message": body_text, "code": status, "status": phrase}}).decode()


# --- model facts -----------------------------------------------------------------------------


def uses_thinking_level(model: Model) -> bool:
    """Gemini 3+ (and the *-latest flash aliases, Gemma 4) take ``thinkingLevel`` instead of a budget."""
    model_id = model["id"].lower()
    return bool(_THINKING_LEVEL_MODEL.search(model_id)) or model_id in ("gemini-flash-latest", "gemini-flash-lite-latest")


def _gemini_major(model_id: str) -> int | None:
    match = _GEMINI_MAJOR.match(model_id.lower())
    return int(match.group(1)) if match else None


def requires_tool_call_id(model_id: str) -> bool:
    major = _gemini_major(model_id)
    return model_id.startswith(("claude-", "gpt-oss-")) or (major is not None and major >= 3)


def google_level(model: Model, level: str) -> str:
    """A pi level (or the model's own mapping of it) as one of Gemini's four levels."""
    mapped = (model.get("thinkingLevelMap") or {}).get(level)
    resolved = mapped.lower() if isinstance(mapped, str) else level
    if resolved not in BUDGET_LEVELS:
        raise ProviderError(
            f"Unsupported Google thinking level mapping for {model['provider']}/{model['id']}: {level} -> {mapped}")
    return resolved


def thinking_budget_for(model: Model, level: str, budgets: dict[str, int] | None) -> int:
    if budgets and level in budgets:
        return int(budgets[level])
    for fragment, values in BUDGETS:
        if fragment in model["id"]:
            return values[BUDGET_LEVELS.index(level)]
    return -1


def thinking_config(model: Model, options: StreamOptions) -> JsonObject | None:
    if not model.get("reasoning"):
        return None
    level = "off" if options.thinking_level == "off" else clamp_thinking_level(model, options.thinking_level)
    if level == "off":
        if not uses_thinking_level(model):
            return {"thinkingBudget": 0}
        fallback = clamp_thinking_level(model, "off")  # models that cannot stop thinking
        if fallback == "off":
            return {"thinkingBudget": 0}
        return {"thinkingLevel": google_level(model, fallback).upper()}
    resolved = google_level(model, level)
    if uses_thinking_level(model):
        return {"includeThoughts": True, "thinkingLevel": resolved.upper()}
    return {"includeThoughts": True, "thinkingBudget": thinking_budget_for(model, resolved, options.thinking_budgets)}


# --- request ---------------------------------------------------------------------------------


def _signature(same_model: bool, signature: str | None) -> str | None:
    """Gemini only takes back base64 signatures it issued to this very model."""
    if not same_model or not signature or len(signature) % 4 or not _BASE64.match(signature):
        return None
    return signature


class GeminiContent(TypedDict):
    """A turn of the request's ``contents`` (its parts are the API's own JSON)."""

    parts: list[JsonObject]
    role: str


def _inline(block: ImageContent) -> JsonObject:
    return {"inlineData": {"mimeType": block["mimeType"], "data": block["data"]}}


def _model_parts(model: Model, msg: AssistantMessage) -> list[JsonObject]:
    same = msg["provider"] == model["provider"] and msg["model"] == model["id"]
    parts: list[JsonObject] = []
    for block in msg["content"]:
        part: JsonObject
        if block["type"] == "toolCall":
            call: JsonObject = {"args": block.get("arguments") or {}}
            if requires_tool_call_id(model["id"]):
                call["id"] = _UNSAFE_ID_CHARS.sub("_", block["id"])[:64]
            call["name"] = block["name"]
            part = {"functionCall": call}
            signature = _signature(same, block.get("thoughtSignature"))
        else:
            if block["type"] == "text":
                text, signature = block["text"], _signature(same, block.get("textSignature"))
            else:
                text, signature = block["thinking"], _signature(same, block.get("thinkingSignature"))
            if not text.strip() and not signature:
                continue  # an empty part is only worth sending for the signature it carries
            part = {"text": text, "thought": True} if block["type"] == "thinking" and same else {"text": text}
        if signature:
            part["thoughtSignature"] = signature
        parts.append(part)
    return parts


def _function_response(model: Model, msg: ToolResultMessage) -> tuple[JsonObject, list[JsonObject]]:
    """The functionResponse part of a tool result, and image parts that must travel separately."""
    text = "\n".join(b["text"] for b in msg["content"] if b["type"] == "text")
    images = [_inline(b) for b in msg["content"] if b["type"] == "image"] if "image" in model["input"] else []
    value = text if text.strip() else (IMAGE_ONLY_NOTE if images else "")
    response: JsonObject = {"name": msg["toolName"], "response": {"error" if msg["isError"] else "output": value}}
    major = _gemini_major(model["id"])
    nested = images and (major is None or major >= 3)
    if nested:
        response["parts"] = images
    if requires_tool_call_id(model["id"]):
        response["id"] = _UNSAFE_ID_CHARS.sub("_", msg["toolCallId"])[:64]
    return {"functionResponse": response}, ([] if nested else images)


def convert_contents(model: Model, context: Context) -> list[GeminiContent]:
    contents: list[GeminiContent] = []
    for msg in context["messages"]:
        parts: list[JsonObject]
        if msg["role"] == "user":
            raw = msg["content"]
            parts = [{"text": raw}] if isinstance(raw, str) else [
                {"text": b["text"]} if b["type"] == "text" else _inline(b) for b in raw]
            if parts:
                contents.append({"parts": parts, "role": "user"})
        elif msg["role"] == "assistant":
            parts = _model_parts(model, msg)
            if parts:
                contents.append({"parts": parts, "role": "model"})
        elif msg["role"] == "toolResult":
            part, images = _function_response(model, msg)
            last = contents[-1] if contents else None
            # All function responses of a turn share one user turn.
            if last and last["role"] == "user" and any("functionResponse" in p for p in last["parts"]):
                last["parts"].append(part)
            else:
                contents.append({"parts": [part], "role": "user"})
            if images:
                contents.append({"parts": [{"text": TOOL_IMAGES_NOTE}, *images], "role": "user"})
    return contents


def convert_tools(tools: list[Tool]) -> list[JsonObject]:
    return [{"functionDeclarations": [
        {"name": t["name"], "description": t["description"], "parametersJsonSchema": t["parameters"]} for t in tools
    ]}]


def build_body(model: Model, context: Context, options: StreamOptions) -> JsonObject:
    body: JsonObject = {"contents": convert_contents(model, context)}
    if context.get("systemPrompt"):
        body["systemInstruction"] = {"parts": [{"text": context["systemPrompt"]}], "role": "user"}
    if context.get("tools"):
        body["tools"] = convert_tools(context["tools"])
    config: JsonObject = {}
    if options.temperature is not None:
        config["temperature"] = options.temperature
    config["maxOutputTokens"] = clamp_max_tokens(model, context, options.max_tokens)
    thinking = thinking_config(model, options)
    if thinking is not None:
        config["thinkingConfig"] = thinking
    body["generationConfig"] = config
    return body


# --- response --------------------------------------------------------------------------------


class _Reader:
    """Turns GenerateContentResponse chunks into normalized events, filling the output message."""

    def __init__(self, model: Model, output: AssistantMessage) -> None:
        self.model = model
        self.msg: dict[str, Any] = output  # type: ignore[assignment]  # also gets rawStopReason
        self.current: JsonObject | None = None  # the open text/thinking block
        self.prompt_blocked: str | None = None  # promptFeedback.blockReason of a refused prompt

    def handle(self, chunk: dict[str, Any]) -> list[JsonObject]:
        error = chunk.get("error")
        if isinstance(error, dict) and isinstance(error.get("code"), int) and 400 <= error["code"] < 600:
            raise ProviderError(f"got status: {error.get('status', 'undefined')}. {orjson.dumps(chunk).decode()}")
        if chunk.get("responseId") and not self.msg.get("responseId"):
            self.msg["responseId"] = chunk["responseId"]
        blocked = (chunk.get("promptFeedback") or {}).get("blockReason")
        if blocked and not chunk.get("candidates"):
            # The prompt itself was refused: no candidate will follow (pi waits for a finish
            # reason and reports a retryable "ended without" error; a retry is refused again).
            self.msg["rawStopReason"] = self.prompt_blocked = blocked
            self.msg["stopReason"] = "error"
        events: list[JsonObject] = []
        candidate = (chunk.get("candidates") or [{}])[0]
        for part in (candidate.get("content") or {}).get("parts") or []:
            if part.get("text") is not None:
                events += self._text(part)
            if part.get("functionCall"):
                events += self.close() + self._call(part)
        if candidate.get("finishReason"):
            self._finish(candidate["finishReason"])
        if chunk.get("usageMetadata"):
            self._usage(chunk["usageMetadata"])
        return events

    def close(self) -> list[JsonObject]:
        """End the open text/thinking block, if any."""
        block, self.current = self.current, None
        if block is None:
            return []
        at = len(self.msg["content"]) - 1
        if block["type"] == "text":
            return [{"type": "text_end", "contentIndex": at, "content": block["text"]}]
        return [{"type": "thinking_end", "contentIndex": at, "content": block["thinking"]}]

    def _text(self, part: dict[str, Any]) -> list[JsonObject]:
        kind = "thinking" if part.get("thought") is True else "text"
        events: list[JsonObject] = []
        if self.current is None or self.current["type"] != kind:
            events += self.close()
            self.current = {"type": kind, kind: ""}
            self.msg["content"].append(self.current)
            events.append({"type": f"{kind}_start", "contentIndex": len(self.msg["content"]) - 1})
        append_text(self.current, kind, part["text"])
        if part.get("thoughtSignature"):  # later pieces of a part may omit it: keep the last one seen
            self.current["thinkingSignature" if kind == "thinking" else "textSignature"] = part["thoughtSignature"]
        events.append({"type": f"{kind}_delta", "contentIndex": len(self.msg["content"]) - 1, "delta": part["text"]})
        return events

    def _call(self, part: dict[str, Any]) -> list[JsonObject]:
        call = part["functionCall"]
        name = call.get("name") or ""
        given = call.get("id")
        taken = any(b["type"] == "toolCall" and b["id"] == given for b in self.msg["content"])
        call_id = given if given and not taken else f"{name}_{now_ms()}_{next(_call_numbers)}"
        block: JsonObject = {"type": "toolCall", "id": call_id, "name": name, "arguments": call.get("args") or {}}
        if part.get("thoughtSignature"):
            block["thoughtSignature"] = part["thoughtSignature"]
        self.msg["content"].append(block)
        at = len(self.msg["content"]) - 1
        return [
            {"type": "toolcall_start", "contentIndex": at, "id": call_id, "toolName": name},
            {"type": "toolcall_delta", "contentIndex": at, "delta": orjson.dumps(block["arguments"]).decode()},
            {"type": "toolcall_end", "contentIndex": at, "toolCall": block},
        ]

    def _finish(self, reason: str) -> None:
        self.msg["rawStopReason"] = reason
        if reason in STOP_REASONS:
            stop = STOP_REASONS[reason]
        elif reason in ERROR_REASONS:
            stop = "error"
        else:
            raise ProviderError(f"Unhandled stop reason: {reason}")
        if stop == "stop" and any(b["type"] == "toolCall" for b in self.msg["content"]):
            stop = "toolUse"
        self.msg["stopReason"] = stop

    def _usage(self, meta: dict[str, Any]) -> None:
        """Gemini's prompt count includes the cached part; its output count excludes thoughts."""
        cached = meta.get("cachedContentTokenCount") or 0
        thoughts = meta.get("thoughtsTokenCount") or 0
        usage = self.msg["usage"]
        cost = usage["cost"]
        usage.clear()  # rebuilt in place (others hold the dict) and in pi's key order
        usage.update({
            "input": (meta.get("promptTokenCount") or 0) - cached,
            "output": (meta.get("candidatesTokenCount") or 0) + thoughts,
            "cacheRead": cached,
            "cacheWrite": 0,
            "reasoning": thoughts,
            "totalTokens": meta.get("totalTokenCount") or 0,
            "cost": cost,
        })


async def stream(
    model: Model, context: Context, options: StreamOptions, output: AssistantMessage
) -> AsyncIterator[JsonObject]:
    if not options.api_key:
        raise ProviderError(f"No API key for provider: {model['provider']}")
    headers = {"x-goog-api-key": options.api_key, **(model.get("headers") or {}), **options.headers}
    url = f"{model['baseUrl'].rstrip('/')}/models/{model['id']}:streamGenerateContent?alt=sse"
    async with aclosing(stream_request(url, headers, model, context, options, output)) as events:
        async for event in events:
            yield event


async def stream_request(
    url: str, headers: dict[str, str], model: Model, context: Context, options: StreamOptions,
    output: AssistantMessage, label: str = "Google",
) -> AsyncGenerator[JsonObject, None]:
    """POST a Gemini body to ``url`` and translate the stream (shared with Vertex AI)."""
    body = build_body(model, context, options)
    reader = _Reader(model, output)
    async for sse in sse_events(url, headers, body, options, google_error_text):
        if not sse.data.strip():
            continue
        try:
            chunk = loads(sse.data)
        except orjson.JSONDecodeError as exc:
            raise ProviderError(f"Could not parse {label} stream chunk: {exc}; data={sse.data}") from exc
        for event in reader.handle(chunk):
            yield event
    for event in reader.close():
        yield event
    if output["stopReason"] == "pending":
        raise ProviderError(f"{label} stream ended without a finish reason")
    if output["stopReason"] == "error":
        if reader.prompt_blocked:
            raise ProviderError(f"Provider blocked the prompt: {reader.prompt_blocked}")
        raise ProviderError(f"Provider stopped with: {reader.msg.get('rawStopReason')}")
