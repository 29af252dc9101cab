"""The ChatGPT subscription backend (``openai-codex-responses``): OpenAI Responses at ``/codex/responses``.

The key is the ChatGPT OAuth access token (a JWT; the sign-in and its refresh belong to the
credentials layer, which hands the current token over as ``options.api_key``). The account id the
backend wants in ``chatgpt-account-id`` is read from the token's ``https://api.openai.com/auth``
claim. The body is Codex's: the Responses input with ``store: false``, ``text.verbosity``, encrypted
reasoning included, ``tool_choice: auto`` and parallel tool calls.

Transports, as pi picks them from the ``transport`` setting: ``auto`` (the default),
``websocket`` and ``websocket-cached`` go over the WebSocket first (``codex_websocket``) and fall
back to SSE when the socket fails before the answer starts; the session then stays on SSE. ``sse``
posts the body zstd-compressed (level 3, ``content-encoding: zstd``), as pi does wherever its
runtime has zstd; the WebSocket frame carries the plain JSON.
"""

from __future__ import annotations

import base64
import binascii
import os
import re
import sys
import time
import uuid
from collections.abc import AsyncGenerator, AsyncIterator, Mapping
from contextlib import aclosing
from dataclasses import dataclass, replace
from typing import Any

import orjson

from pi_coding_agent.ai.apis import codex_websocket as ws
from pi_coding_agent.ai.apis.diagnostics import append_diagnostic
from pi_coding_agent.ai.apis.openai_responses import record_update_effort, sse_json, translate_events
from pi_coding_agent.ai.apis.openai_responses_request import (
    MIN_OUTPUT_TOKENS,
    UPDATE_REQUEST_EFFORT,
    Converter,
    convert_input,
    custom_tools,
)
from pi_coding_agent.ai.apis.responses_tools import ToolFormat, declarations_for
from pi_coding_agent.ai.identity import with_identity
from pi_coding_agent.ai.stream import ProviderError, StreamOptions
from pi_coding_agent.ai.thinking import clamp_max_tokens, clamp_thinking_level
from pi_coding_agent.ai.transport.http import apply_payload_hook, sse_batches
from pi_coding_agent.ai.types import AssistantMessage, Context, JsonObject, Model, now_ms

DEFAULT_BASE_URL = "https://chatgpt.com/backend-api"
JWT_CLAIM = "https://api.openai.com/auth"
ZSTD_LEVEL = 3
CONNECTION_LIMIT = "websocket_connection_limit_reached"
PREVIOUS_RESPONSE_NOT_FOUND = "previous_response_not_found"
STATUSES = frozenset({"completed", "incomplete", "failed", "cancelled", "queued", "in_progress"})
TOOL_OUTPUTS = frozenset({"function_call_output", "custom_tool_call_output"})
_sse_sessions: set[str] = set()  # sessions whose socket failed: they stay on SSE, as in pi


class CodexApiError(ProviderError):
    """An ``error`` or ``response.failed`` event: the backend's answer, never a transport fault."""

    def __init__(self, message: str, code: object) -> None:
        super().__init__(message)
        self.code = code if isinstance(code, str) else None


def codex_url(base_url: str) -> str:
    base = (base_url.strip() or DEFAULT_BASE_URL).rstrip("/")
    if base.endswith("/codex/responses"):
        return base
    return f"{base}/responses" if base.endswith("/codex") else f"{base}/codex/responses"


def account_id(token: str) -> str:
    """The ChatGPT account id inside the access token (never echoing the token on failure)."""
    parts = token.split(".")
    try:
        if len(parts) != 3:
            raise ValueError
        claims = orjson.loads(base64.urlsafe_b64decode(parts[1] + "=" * (-len(parts[1]) % 4)))
        found = claims[JWT_CLAIM]["chatgpt_account_id"]
        if not isinstance(found, str) or not found:
            raise ValueError
        return found
    except (ValueError, KeyError, TypeError, binascii.Error, orjson.JSONDecodeError):
        raise ProviderError("Failed to extract accountId from token") from None


def error_text(status: int, body_text: str) -> str:
    """The backend's message, or pi's notice for a spent ChatGPT plan (never retried by the agent)."""
    try:
        error = orjson.loads(body_text).get("error") if body_text.strip() else None
    except (orjson.JSONDecodeError, AttributeError):
        error = None
    if not isinstance(error, dict):
        return body_text or "Request failed"
    code = str(error.get("code") or error.get("type") or "")
    if status == 429 or re.search(r"usage_limit_reached|usage_not_included|rate_limit_exceeded", code, re.I):
        plan = f" ({str(error['plan_type']).lower()} plan)" if error.get("plan_type") else ""
        resets = error.get("resets_at")
        when = (f" Try again in ~{max(0, round((resets * 1000 - time.time() * 1000) / 60000))} min."
                if isinstance(resets, int | float) else "")
        return f"You have hit your ChatGPT usage limit{plan}.{when}"
    return str(error.get("message") or body_text)


def native_effort(model: Model, level: str) -> str | None:
    """The backend's effort for a level (off is ``none``); None where the model takes no reasoning field."""
    mapping = model.get("thinkingLevelMap") or {}
    if level == "none":
        return mapping.get("off", "none")
    return mapping.get(level) or level


def build_body(model: Model, context: Context, options: StreamOptions,
               grammar: Mapping[str, str] | None = None) -> JsonObject:
    """The Codex body: tools strict-capable by default (``strict: null``), off sent as effort ``none``
    (``grammar``: the custom tools, ``custom_tools`` when not given)."""
    compat = model.get("compat") or {}
    clamped = clamp_thinking_level(model, options.thinking_level) if options.thinking_level != "off" else "off"
    level = clamped if clamped != "off" else "none" if model["reasoning"] else None
    effort = native_effort(model, level) if level is not None and compat.get("supportsMidConvoEffort") else None
    tool_format = ToolFormat(compat.get("supportsStrictMode", True) is not False, None,
                             bool(compat.get("supportsOpenAIGrammarTools")))
    declarations = declarations_for(model, context, tool_format)
    grammar = custom_tools(model, context) if grammar is None else grammar
    body: JsonObject = {
        "model": model["id"], "store": False, "stream": True,
        "input": Converter(model, declarations, effort, grammar).convert(context),
        "text": {"verbosity": "low"}, "include": ["reasoning.encrypted_content"],
    }
    session = cache_session(options)
    if session:
        body["prompt_cache_key"] = session
    body.update(tool_choice="auto", parallel_tool_calls=True)
    if compat.get("supportsMaxOutputTokens", True) is not False:
        body["max_output_tokens"] = max(clamp_max_tokens(model, context, options.max_tokens), MIN_OUTPUT_TOKENS)
    if options.temperature is not None:
        body["temperature"] = options.temperature
    if declarations.top_level:
        body["tools"] = tool_format.convert(declarations.top_level)
    chosen = UPDATE_REQUEST_EFFORT if effort is not None else native_effort(model, level) if level else None
    if chosen is not None:
        body["reasoning"] = {"effort": chosen, "summary": "auto"}
    return body


def headers_for(model: Model, options: StreamOptions, token: str) -> dict[str, str]:
    headers = {"originator": "pi", **(model.get("headers") or {}), **options.headers,
               "Authorization": f"Bearer {token}", "chatgpt-account-id": account_id(token),
               "OpenAI-Beta": "responses=experimental"}
    session = cache_session(options)
    if session:
        headers.update({"session-id": session, "x-client-request-id": session})
    return headers


def cache_session(options: StreamOptions) -> str | None:
    return options.session_id[:64] if options.session_id and options.cache_retention != "none" else None


def websocket_headers(model: Model, options: StreamOptions, token: str, request_id: str) -> dict[str, str]:
    """The SSE headers less the HTTP-only ones, with the WebSocket beta and the request id."""
    dropped = {"accept", "content-type", "openai-beta", "session-id", "x-client-request-id"}
    headers = {k: v for k, v in headers_for(model, options, token).items() if k.lower() not in dropped}
    return {**headers, "OpenAI-Beta": ws.BETA, "x-client-request-id": request_id, "session-id": request_id}


def uuid7() -> str:
    """A time-ordered request id (RFC 9562 version 7) for socket requests outside a session."""
    millis, rand = time.time_ns() // 1_000_000, int.from_bytes(os.urandom(10), "big")
    value = (millis << 80) | (0x7 << 76) | (((rand >> 62) & 0xFFF) << 64) | (0b10 << 62) | (rand & ((1 << 62) - 1))
    return str(uuid.UUID(int=value))


def zstd_compress(data: bytes) -> bytes | None:
    """``data`` zstd-compressed, or None where no zstd module is installed (then sent plain, as pi does)."""
    try:
        if sys.version_info >= (3, 14):
            from compression import zstd
        else:
            from backports import zstd
    except ImportError:
        return None
    return bytes(zstd.compress(data, level=ZSTD_LEVEL))


def _event_error(event: dict[str, Any]) -> tuple[object, object]:
    nested: JsonObject = event["error"] if isinstance(event.get("error"), dict) else {}
    code = event.get("code") if isinstance(event.get("code"), str) else nested.get("code")
    message = event.get("message") if isinstance(event.get("message"), str) else nested.get("message")
    return code if isinstance(code, str) else None, message if isinstance(message, str) else None


async def codex_events(events: AsyncIterator[dict[str, Any]]) -> AsyncGenerator[JsonObject, None]:
    """Codex's event dialect as plain Responses events: its errors raised, ``response.done`` completing."""
    async for event in events:
        kind = event.get("type")
        if kind == "error":
            code, message = _event_error(event)
            raise CodexApiError(f"Codex error: {message or code or orjson.dumps(event).decode()}", code)
        if kind == "response.failed":
            error = (event.get("response") or {}).get("error") or {}
            raise CodexApiError(error.get("message") or "Codex response failed", error.get("code"))
        if kind in ws.COMPLETIONS:
            response = dict(event.get("response") or {})
            response["status"] = response.get("status") if response.get("status") in STATUSES else None
            yield {**event, "type": "response.completed", "response": response}
            return
        if isinstance(kind, str):
            yield event


class _Started:
    """Whether the socket delivered an event yet: a failure after that cannot move to SSE."""

    def __init__(self) -> None:
        self.value = False

    async def watch(self, events: AsyncGenerator[JsonObject, None]) -> AsyncGenerator[JsonObject, None]:
        async with aclosing(events) as source:
            async for event in source:
                self.value = True
                yield event


@dataclass(frozen=True)
class _Turn:
    """One request, as every transport attempt needs it (``grammar``: the custom tools)."""

    model: Model
    options: StreamOptions
    output: AssistantMessage
    body: JsonObject
    grammar: Mapping[str, str]
    account: str
    session: str | None


def _answer_items(turn: _Turn) -> list[object]:
    items = convert_input(turn.model, {"messages": [turn.output]}, turn.grammar)
    return [item for item in items if item.get("type") not in TOOL_OUTPUTS]


async def _websocket_once(turn: _Turn, started: _Started) -> AsyncGenerator[list[JsonObject], None]:
    model, options, output, body = turn.model, turn.options, turn.output, turn.body
    url = ws.websocket_url(codex_url(model["baseUrl"]))
    token = options.api_key or ""
    headers = with_identity(url, websocket_headers(model, options, token, turn.session or uuid7()),
                            options.attribution, model["provider"])
    lease = await ws.acquire(url, headers, turn.session, turn.account, options.websocket_connect_timeout_s)
    cached = options.transport in ("auto", "websocket-cached")
    keep = False
    try:
        request = ws.request_body(lease, body) if cached else body
        events = codex_events(started.watch(ws.events(lease, request, options.idle_timeout_s)))
        async for item in translate_events(events, output, "Codex", turn.grammar):
            yield item
        keep = not (options.signal is not None and options.signal.aborted)
        if keep and cached and output.get("responseId"):
            ws.remember(lease, body, _answer_items(turn), str(output["responseId"]))
    except BaseException:
        ws.forget(lease)
        raise
    finally:
        await lease.release(keep)


def _transport_failure(output: AssistantMessage, options: StreamOptions, error: Exception, started: bool,
                       body: JsonObject) -> None:
    """pi's diagnostic for a failed socket, kept in the message (and so in the session)."""
    details = {"configuredTransport": options.transport, **({} if started else {"fallbackTransport": "sse"}),
               "eventsEmitted": started, "phase": "after_message_stream_start" if started else "before_message_stream_start",
               "requestBytes": len(orjson.dumps(body))}
    append_diagnostic(output, {"type": "provider_transport_failure", "timestamp": now_ms(),
                               "error": {"name": type(error).__name__, "message": str(error)}, "details": details})


class _UseSse(Exception):
    """The socket failed before the answer started: send the request again over SSE."""


async def _websocket(turn: _Turn) -> AsyncGenerator[list[JsonObject], None]:
    """pi's WebSocket attempt: one retry for a lost continuation or a full connection pool, then SSE."""
    options = turn.options
    retried_missing = retried_limit = False
    while True:
        started = _Started()
        try:
            async for item in _websocket_once(turn, started):
                yield item
            return
        except Exception as error:
            if options.signal is not None and options.signal.aborted:
                raise
            code = getattr(error, "code", None)
            if code == PREVIOUS_RESPONSE_NOT_FOUND and not retried_missing:
                retried_missing = True
                continue
            limit = not started.value and code == CONNECTION_LIMIT
            if limit and not retried_limit:
                retried_limit = True
                continue
            if isinstance(error, CodexApiError | ws.CodexProtocolError) and not limit:
                raise
            _transport_failure(turn.output, options, error, started.value, turn.body)
            if turn.session:
                _sse_sessions.add(turn.session)
            if started.value:
                raise
            raise _UseSse(str(error)) from error


async def _sse(turn: _Turn) -> AsyncGenerator[list[JsonObject], None]:
    options = turn.options
    headers = headers_for(turn.model, options, options.api_key or "")
    plain = orjson.dumps(turn.body)
    compressed = zstd_compress(plain)
    if compressed is not None:
        headers["content-encoding"] = "zstd"
    events = sse_json(sse_batches(codex_url(turn.model["baseUrl"]), headers, compressed or plain,
                                 replace(options, on_payload=None), error_text))
    async for item in translate_events(codex_events(events), turn.output, "Codex", turn.grammar):
        yield item


async def stream(
    model: Model, context: Context, options: StreamOptions, output: AssistantMessage
) -> AsyncGenerator[list[JsonObject], None]:
    if not options.api_key:
        raise ProviderError(f"No API key for provider: {model['provider']}")
    account = account_id(options.api_key)
    grammar = custom_tools(model, context)
    body = build_body(model, context, options, grammar)
    record_update_effort(output, body)
    body = await apply_payload_hook(body, options)
    session = cache_session(options)
    turn = _Turn(model, options, output, body, grammar, account, session)
    if options.transport != "sse" and not (session and session in _sse_sessions):
        try:
            async for item in _websocket(turn):
                yield item
            return
        except _UseSse:
            pass
    async for item in _sse(turn):
        yield item
