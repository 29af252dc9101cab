"""What a failed (or suspiciously successful) assistant message means: overflow, transient or permanent.

The session layer decides between compaction (overflow), auto-retry (transient) and giving up
(permanent) from the recorded ``errorMessage`` alone, so these patterns are matched against the
exact texts the adapters produce from each provider's error responses. Compiled on first use.
"""

from __future__ import annotations

import re
from functools import cache
from typing import Literal

from pi_coding_agent.ai.types import AssistantMessage

ErrorClass = Literal["overflow", "transient", "permanent"]

# Provider texts meaning "the request did not fit the context window / size limit".
_OVERFLOW = (
    r"prompt (?:is )?too long",  # Anthropic, z.ai
    r"prompt exceeds max length",  # z.ai (CN)
    r"request_too_large",  # Anthropic byte-size limit
    r"input is too long for requested model",  # Bedrock
    r"exceeds the context window",  # OpenAI
    r"exceeds (?:the )?(?:model'?s )?maximum context length(?: of [\d,]+ tokens?|\s*\([\d,]+\))",  # LiteLLM & co
    r"context window exceeded",
    r"input token count.*exceeds the maximum",  # Google
    r"maximum prompt length is \d+",  # xAI
    r"reduce the length of the messages",  # Groq
    r"maximum context length is \d+ tokens",  # OpenRouter, OpenAI
    r"exceeds (?:the )?maximum allowed input length of [\d,]+ tokens?",
    r"input \(\d+ tokens\) is longer than the model'?s context length \(\d+ tokens\)",  # Together
    r"exceeds the limit of \d+",  # GitHub Copilot
    r"exceeds the available context size",  # llama.cpp
    r"greater than the context length",  # LM Studio
    r"context window exceeds limit",  # MiniMax
    r"exceeded model token limit",  # Kimi
    r"too large for model with \d+ maximum context length",  # Mistral
    r"prompt has [\d,]+ tokens?, but the configured context size is [\d,]+ tokens?",
    r"model_context_window_exceeded",
    r"prompt too long; exceeded (?:max )?context length",  # Ollama
    r"range of input length should be",  # DashScope / Qwen
    r"context[_ ]length[_ ]exceeded",
    r"too many tokens",
    r"token limit exceeded",
    r"^(?:[\w -]+ API error \(413\):|413(?:\s|:|$))",  # HTTP 413, whatever the body says
)
# Texts that look like overflow but are throttling.
_NOT_OVERFLOW = (r"^(?:Throttling error|Service unavailable):", r"rate limit", r"too many requests")
# Cerebras answers an oversized request with a bare 400/413.
_CEREBRAS_BODYLESS = r"^4(?:00|13)\s*(?:status code)?\s*\(no body\)"

# Account limits that a retry in a few seconds cannot fix.
_LIMITS = (
    r"GoUsageLimitError", r"FreeUsageLimitError", r"Monthly usage limit reached", r"available balance",
    r"insufficient_quota", r"out of budget", r"quota exceeded", r"billing",
    r"subscription_sharing_usage_limit_exceeded",
    r"subscription_sharing_workplace_individual_usage_limit_exceeded",
    r'"code"\s*:\s*"?1308(?![0-9])',  # Z.ai plan limit
)
# Load, throttling, server and transport failures worth retrying.
_TRANSIENT = (
    r"overloaded", r"server_busy", r"servers are currently busy", r"currently experiencing high demand",
    r"model is at capacity", r"rate.?limit", r"too many requests",
    r"(?<![a-z0-9])(?:429|500|502|503|504|520|524)(?![a-z0-9])",
    r"service.?(?:is.?)?(?:temporarily.?)?unavailable", r"server.?error", r"internal.?error",
    r"provider.?returned.?(?:an.?)?error", r"exceeded request buffer limit while retrying upstream",
    r"unable to forward upstream", r"upstream.?request.?failed", r"upstream_stream_read_error",
    r"stream was interrupted", r"http/?2 stream failed",
    r"network.?error", r"connection.?error", r"connection.?refused", r"connection.?lost",
    r"connection.?closed", r"other side closed", r"fetch failed", r"request to \S+ failed, reason:",
    r"getaddrinfo", r"(?<![a-z0-9_])(?:ECONNRESET|ECONNABORTED|ECONNREFUSED|ETIMEDOUT|EPIPE)(?![a-z0-9_])",
    r"connection reset by peer", r"ENOTFOUND", r"EAI_AGAIN", r"upstream.?connect", r"reset before headers",
    r"socket hang up", r"socket connection was closed", r"timed? out", r"timeout", r"terminated",
    r"websocket.?closed", r"websocket.?error", r"websocket.?connection.?limit.?reached",
    r"ended without", r"stream ended before message_stop", r"stream ended before a terminal response event",
    r"http2 request did not get a response", r"stream disconnected before completion",
    r"cut short after the reply had begun", r"pending stream has been canceled",
    r"retry delay", r"you can retry your request", r"try your request again", r"please retry your request",
    r"ResourceExhausted", r"subscription_sharing_usage_unavailable", r"subscription_sharing_user_unavailable",
)


@cache
def _pattern(name: str) -> re.Pattern[str]:
    parts = {"overflow": _OVERFLOW, "not_overflow": _NOT_OVERFLOW, "cerebras": (_CEREBRAS_BODYLESS,),
             "limits": _LIMITS, "transient": _TRANSIENT}[name]
    return re.compile("|".join(f"(?:{p})" for p in parts), re.IGNORECASE)


def is_overflow_text(text: str, provider: str | None = None) -> bool:
    """True when an error text says the request exceeded the context window or size limit."""
    if not text or _pattern("not_overflow").search(text):
        return False
    if _pattern("overflow").search(text):
        return True
    return provider == "cerebras" and bool(_pattern("cerebras").search(text))


def is_context_overflow(message: AssistantMessage, context_window: int = 0) -> bool:
    """Overflow by error text, or silently: input beyond the window, or a zero-output length stop at the brim."""
    reason = message["stopReason"]
    if reason == "error" and is_overflow_text(message.get("errorMessage", ""), message.get("provider")):
        return True
    if not context_window:
        return False
    usage = message["usage"]
    prompt = usage["input"] + usage["cacheRead"]
    if reason == "stop":
        return prompt > context_window
    return reason == "length" and usage["output"] == 0 and prompt >= context_window * 0.99


def is_transient_text(text: str) -> bool:
    """A load/transport failure that a later attempt may not hit (account limits excluded)."""
    return bool(text) and not _pattern("limits").search(text) and bool(_pattern("transient").search(text))


def is_retryable_error(message: AssistantMessage) -> bool:
    """An error message worth an automatic retry: transient and not a context overflow."""
    text = message.get("errorMessage", "")
    if message["stopReason"] != "error" or not text:
        return False
    return not is_overflow_text(text, message.get("provider")) and is_transient_text(text)


def classify_error(text: str, provider: str | None = None) -> ErrorClass:
    """Bucket an error text: overflow (compact and retry), transient (retry) or permanent."""
    if is_overflow_text(text, provider):
        return "overflow"
    return "transient" if is_transient_text(text) else "permanent"
