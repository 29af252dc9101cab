"""The ChatGPT subscription backend (``openai-codex-responses``): OpenAI Responses at ``/codex/responses``.

The key is the ChatGPT OAuth access token (a JWT; the sign-in and its refresh belong to the
credentials layer, which hands the current token over as ``options.api_key``). The account id the
backend wants in ``chatgpt-account-id`` is read from the token's ``https://api.openai.com/auth``
claim. The body is Codex's: the Responses input with ``store: false``, ``text.verbosity``, encrypted
reasoning included, ``tool_choice: auto`` and parallel tool calls.

Only pi's SSE transport is implemented (pi prefers a WebSocket and falls back to SSE); the request
body is sent uncompressed (pi sends zstd when its runtime has it).
"""

from __future__ import annotations

import base64
import binascii
import re
import time
from collections.abc import AsyncGenerator
from typing import Any

import orjson

from pi_coding_agent.ai.providers.openai_responses import build_request, stream_response
from pi_coding_agent.ai.stream import ProviderError, StreamOptions
from pi_coding_agent.ai.types import AssistantMessage, Context, Model

DEFAULT_BASE_URL = "https://chatgpt.com/backend-api"
JWT_CLAIM = "https://api.openai.com/auth"


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


def build_body(model: Model, context: Context, options: StreamOptions) -> dict[str, Any]:
    responses = build_request(model, context, options)
    body: dict[str, Any] = {
        "model": model["id"], "store": False, "stream": True, "input": responses["input"],
        "text": {"verbosity": "low"}, "include": ["reasoning.encrypted_content"],
    }
    if options.session_id and options.cache_retention != "none":
        body["prompt_cache_key"] = options.session_id[:64]
    body.update(tool_choice="auto", parallel_tool_calls=True)
    for key in ("max_output_tokens", "temperature", "reasoning"):
        if key in responses:
            body[key] = responses[key]
    if responses.get("tools"):
        body["tools"] = [{k: v for k, v in tool.items() if k != "strict"} for tool in responses["tools"]]
    return body


def headers_for(model: Model, options: StreamOptions, token: str) -> dict[str, str]:
    headers = {"originator": "pi", **(model.get("headers") or {}), **options.headers,
               "Authorization": f"Bearer {token}", "chatgpt-account-id": account_id(token),
               "OpenAI-Beta": "responses=experimental"}
    if options.session_id and options.cache_retention != "none":
        headers.update({"session-id": options.session_id[:64], "x-client-request-id": options.session_id[:64]})
    return headers


def stream(
    model: Model, context: Context, options: StreamOptions, output: AssistantMessage
) -> AsyncGenerator[dict[str, Any], None]:
    if not options.api_key:
        raise ProviderError(f"No API key for provider: {model['provider']}")
    headers = headers_for(model, options, options.api_key)
    return stream_response(codex_url(model["baseUrl"]), headers, build_body(model, context, options), options,
                           output, error_text, "Codex")
