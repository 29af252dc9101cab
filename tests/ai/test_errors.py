"""Error classification against the texts providers (and our adapters) really produce."""

import pytest

from pi_coding_agent.ai.errors import classify_error, is_context_overflow, is_retryable_error
from pi_coding_agent.ai.types import empty_usage


def _msg(stop="error", text=None, provider="openai", **usage):
    msg = {"role": "assistant", "content": [], "api": "openai-completions", "provider": provider, "model": "m",
           "usage": {**empty_usage(), **usage}, "stopReason": stop, "timestamp": 0}
    if text is not None:
        msg["errorMessage"] = text
    return msg


OVERFLOW = [
    "prompt is too long: 213462 tokens > 200000 maximum",  # Anthropic
    '413 {"error":{"type":"request_too_large","message":"Request exceeds the maximum size"}}',
    'OpenAI API error (400): {"message":"Your input exceeds the context window of this model.","type":"invalid_request_error"}',
    '400: {"message":"This model\'s maximum context length is 128000 tokens. However, your messages resulted in '
    '130000 tokens. Please reduce the length of the messages.","type":"invalid_request_error"}',
    "The input token count (1196265) exceeds the maximum number of tokens allowed (1048575)",  # Google
    "This model's maximum prompt length is 131072 but the request contains 537812 tokens",  # xAI
    "Please reduce the length of the messages or completion.",  # Groq
    "the request exceeds the available context size, try increasing it",  # llama.cpp
    "tokens to keep from the initial prompt is greater than the context length",  # LM Studio
    "Prompt contains 140000 tokens and is too large for model with 131072 maximum context length",  # Mistral
    "prompt too long; exceeded max context length by 1200 tokens",  # Ollama
    "Requested token count exceeds the model's maximum context length of 131072 tokens",  # LiteLLM
    "github-copilot API error (413): {\"message\":\"failed to parse request\",\"code\":\"\"}",
]


@pytest.mark.parametrize("text", OVERFLOW)
def test_overflow_texts(text):
    assert is_context_overflow(_msg(text=text), 128000)
    assert classify_error(text) == "overflow"
    assert not is_retryable_error(_msg(text=text))


def test_cerebras_bodiless_400_is_overflow_only_for_cerebras():
    assert is_context_overflow(_msg(text="400 status code (no body)", provider="cerebras"))
    assert classify_error("413 status code (no body)", "cerebras") == "overflow"
    assert not is_context_overflow(_msg(text="400 status code (no body)", provider="groq"))
    assert classify_error("400 status code (no body)") == "permanent"


def test_throttling_that_mentions_tokens_is_not_overflow():
    text = "ThrottlingException: Too many tokens, please wait before trying again. rate limit"
    assert not is_context_overflow(_msg(text=text))
    assert classify_error(text) == "transient"


def test_silent_overflow_and_length_at_the_brim():
    assert is_context_overflow(_msg("stop", input=120000, cacheRead=10000), 128000)
    assert not is_context_overflow(_msg("stop", input=100000), 128000)
    assert not is_context_overflow(_msg("stop", input=200000), 0)  # window unknown
    assert is_context_overflow(_msg("length", input=127000, output=0), 128000)
    assert not is_context_overflow(_msg("length", input=127000, output=5), 128000)
    assert not is_context_overflow(_msg("length", input=100000, output=0), 128000)


TRANSIENT = [
    '529: {"type":"overloaded_error","message":"Overloaded"}',
    '{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}',  # Anthropic
    '429: {"message":"Rate limit reached for requests.","type":"requests","param":null,"code":"rate_limit_exceeded"}',
    "503 Service Unavailable",
    "The service is temporarily unavailable",
    "502 Bad gateway",
    "terminated: other side closed (UND_ERR_SOCKET)",
    "Connection error: [Errno 111] Connection refused",
    "Request timed out.",
    "Stream ended without finish_reason",
    "OpenAI Responses stream ended before a terminal response event",
    "Server requested 120s retry delay (max: 60s). 429: {}",
    "Provider returned error",
    "read ECONNRESET",
    '{"error":{"code":429,"message":"Resource has been exhausted (e.g. check quota).","status":"RESOURCE_EXHAUSTED"}}',
]


@pytest.mark.parametrize("text", TRANSIENT)
def test_transient_texts(text):
    assert is_retryable_error(_msg(text=text)), text
    assert classify_error(text) == "transient"


PERMANENT = [
    '429: {"message":"You exceeded your current quota, please check your plan and billing details.",'
    '"type":"insufficient_quota","param":null,"code":"insufficient_quota"}',
    '401: {"message":"Incorrect API key provided","type":"invalid_request_error","code":"invalid_api_key"}',
    '429 {"code":"1308","message":"Usage limit reached"}',
    "No API key for provider: openai",
    "Provider finish_reason: content_filter",
    "request id req_5004291 failed validation",  # a status code inside a longer token does not count
]


@pytest.mark.parametrize("text", PERMANENT)
def test_permanent_texts(text):
    assert not is_retryable_error(_msg(text=text))
    assert classify_error(text) == "permanent"


def test_only_error_messages_are_retryable():
    assert not is_retryable_error(_msg("aborted", text="Request was aborted"))
    assert not is_retryable_error(_msg("stop"))
    assert not is_retryable_error(_msg("error"))
