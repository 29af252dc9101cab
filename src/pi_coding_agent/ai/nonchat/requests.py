"""What classifier and image API calls share: result shapes, the JSON POST, usage, cancellation.

The POST carries bearer auth, honours the payload and response hooks and retries as provider
requests do; usage is priced from the model's catalog entry. Results follow pi 1.6.0's shapes
(``api``, ``provider``, ``model``, ``answers``/``output``, ``stopReason``, ``timestamp``, then the
optional ``usage`` and ``errorMessage``).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import replace
from typing import Any

import orjson

from pi_coding_agent.ai.stream import ProviderError, StreamOptions
from pi_coding_agent.ai.types import JsonObject, Model

DEFAULT_MAX_RETRIES = 2  # pi's classifier requests retry twice unless the caller says otherwise
MAX_ERROR_BODY_CHARS = 4000


class ClassifierError(Exception):
    """A request or answer the classifier API cannot use; the text becomes ``errorMessage``."""


def is_record(value: object) -> bool:
    return isinstance(value, dict)


def required_number(label: str, value: object, field: str) -> float:
    """A finite JSON number (booleans are not numbers here, as in JavaScript)."""
    import math

    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ClassifierError(f"{label} returned an invalid {field}")
    return value


def result_of(model: Model, outputs: str = "answers") -> JsonObject:
    """A result as an API call starts it (``usage`` and ``errorMessage`` are added after ``timestamp``);
    ``outputs`` names the list or map of what the model produced."""
    return {"api": model["api"], "provider": model["provider"], "model": model["id"],
            outputs: {} if outputs == "answers" else [], "stopReason": "stop", "timestamp": int(time.time() * 1000)}


def error_result(model: Model, message: str, aborted: bool = False, outputs: str = "answers") -> JsonObject:
    """A call refused before any request (wrong model type, no credentials): pi orders it differently."""
    out = result_of(model, outputs)
    stamp = out.pop("timestamp")
    return {**out, "stopReason": "aborted" if aborted else "error", "errorMessage": message, "timestamp": stamp}


def fail(output: JsonObject, error: BaseException, options: StreamOptions) -> JsonObject:
    """``output`` ended by ``error`` during the call."""
    output["stopReason"] = "aborted" if options.signal is not None and options.signal.aborted else "error"
    output["errorMessage"] = failure_text(error)
    return output


def _http_error_text(label: str) -> Callable[[int, str], str]:
    """pi's text for a non-2xx answer: ``<label> error (<status>): <body>`` (the body trimmed and
    capped; an empty body repeats the status)."""
    def text(status: int, body: str) -> str:
        detail = body.strip()
        if len(detail) > MAX_ERROR_BODY_CHARS:
            detail = f"{detail[:MAX_ERROR_BODY_CHARS]}... [truncated {len(detail) - MAX_ERROR_BODY_CHARS} chars]"
        return f"{label} error ({status}): {detail or f'{label} returned {status}'}"
    return text


async def post_json(label: str, url: str, model: Model, body: object, options: StreamOptions,
                    no_retry_statuses: frozenset[int] = frozenset(), optional_key: bool = False) -> Any:
    """POST one JSON request with bearer auth and give the parsed answer (errors raise).

    The ``before_provider_request`` hook may replace the body; headers rank: identity, auth and
    content type, the model's, then the request's (``options.headers``, which win). A local server
    (``optional_key``) is asked without ``authorization`` when there is no key.
    """
    from pi_coding_agent.ai.transport.http import apply_payload_hook, merge_headers, post_stream

    if not options.api_key and not optional_key:
        raise ClassifierError(f"No API key for provider: {model['provider']}")
    payload = await apply_payload_hook(body, options)
    auth = {"authorization": f"Bearer {options.api_key}"} if options.api_key else {}
    headers = merge_headers({"content-type": "application/json", **auth}, model.get("headers") or {}, options.headers)
    options = replace(options, identity_provider=model["provider"])
    async with post_stream(url, headers, orjson.dumps(payload), options, _http_error_text(label),
                           no_retry_statuses=no_retry_statuses) as response:
        raw = await response.aread()
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:
        raise ClassifierError(f"{label} returned a response that is not JSON") from None


def _token_count(value: object) -> int:
    return value if isinstance(value, int | float) and not isinstance(value, bool) and value > 0 else 0  # type: ignore[return-value]


def parse_usage(value: Any, model: Model) -> JsonObject | None:
    """Usage from ``{input_tokens, output_tokens}``, priced like chat usage; a missing or malformed
    object leaves the result without usage rather than failing it."""
    from pi_coding_agent.ai.cost import apply_cost

    if not is_record(value) or ("input_tokens" not in value and "output_tokens" not in value):
        return None
    tokens_in, tokens_out = _token_count(value.get("input_tokens")), _token_count(value.get("output_tokens"))
    usage: Any = {"input": tokens_in, "output": tokens_out, "cacheRead": 0, "cacheWrite": 0,
                  "totalTokens": tokens_in + tokens_out,
                  "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}}
    apply_cost(model, usage, reported=True)  # pi marks the cost computed (totalFromProvider: false)
    return dict(usage)


async def abortable(call: Awaitable[JsonObject], options: StreamOptions,
                    aborted: Callable[[], JsonObject]) -> JsonObject:
    """Run ``call``, cancelled when ``options.signal`` fires; a cancelled call gives ``aborted()``."""
    signal = options.signal
    task = asyncio.ensure_future(call)
    remove = signal.cancel_task_on_abort(task) if signal is not None else (lambda: None)
    try:
        return await task
    except asyncio.CancelledError:
        if signal is not None and signal.aborted and not _current_cancelling():
            return aborted()
        raise
    finally:
        remove()


def _current_cancelling() -> bool:
    """Whether the awaiting task itself is being cancelled (then the cancellation must propagate)."""
    current = asyncio.current_task()
    return current is not None and current.cancelling() > 0


def failure_text(error: BaseException) -> str:
    """A failure's ``errorMessage``: our own texts as they are, anything else with its type."""
    if isinstance(error, ClassifierError | ProviderError):
        return str(error)
    return f"{type(error).__name__}: {error}" if str(error) else type(error).__name__
