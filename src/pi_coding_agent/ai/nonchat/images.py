"""Image models: ``generate_images(model, context, options)`` turns text and image blocks into images.

It dispatches on ``model["api"]`` and never raises; the result is pi 1.6.0's (``api``, ``provider``,
``model``, ``output`` of text and image blocks, ``stopReason``, ``timestamp``, optional
``responseId``, ``usage`` and ``errorMessage``). The one API pi ships, ``openrouter-images``, is
OpenRouter's chat completions endpoint asked for image output (``modalities``), answered with the
images as data URLs in ``choices[0].message.images``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import orjson

from pi_coding_agent.ai.nonchat.requests import abortable, error_result, fail, result_of
from pi_coding_agent.ai.stream import StreamOptions
from pi_coding_agent.ai.types import JsonObject, Model

DATA_URL = re.compile(r"^data:([^;]+);base64,(.+)$", re.S)
LONE_SURROGATE = re.compile("[\ud800-\udfff]")  # a pair decodes to one code point, so any left is unpaired


def _request(model: Model, context: Mapping[str, Any]) -> JsonObject:
    content = [{"type": "text", "text": LONE_SURROGATE.sub("", block["text"])} if block["type"] == "text" else
               {"type": "image_url", "image_url": {"url": f"data:{block['mimeType']};base64,{block['data']}"}}
               for block in context["input"]]
    return {"model": model["id"], "messages": [{"role": "user", "content": content}], "stream": False,
            "modalities": ["image", "text"] if "text" in _outputs(model) else ["image"]}


def _outputs(model: Model) -> list[str]:
    """What an image model produces (``output``: ``["image"]`` or ``["image", "text"]``)."""
    entry: Any = model
    outputs: list[str] = entry.get("output") or []
    return outputs


def _usage(raw: dict[str, Any], model: Model) -> JsonObject:
    """OpenRouter's token counts (cached and cache-written prompt tokens apart), priced from the catalog."""
    details = raw.get("prompt_tokens_details") or {}
    prompt = raw.get("prompt_tokens") or 0
    cached = details.get("cached_tokens") or 0
    written = details.get("cache_write_tokens") or 0
    read = max(0, cached - written) if written > 0 else cached
    tokens_in = max(0, prompt - read - written)
    tokens_out = raw.get("completion_tokens") or 0
    rates: Any = model["cost"]
    cost = {"input": rates["input"] / 1e6 * tokens_in, "output": rates["output"] / 1e6 * tokens_out,
            "cacheRead": rates["cacheRead"] / 1e6 * read, "cacheWrite": rates["cacheWrite"] / 1e6 * written}
    total = cost["input"] + cost["output"] + cost["cacheRead"] + cost["cacheWrite"]
    return {"input": tokens_in, "output": tokens_out, "cacheRead": read, "cacheWrite": written,
            "totalTokens": tokens_in + tokens_out + read + written,
            "cost": {**{k: _js_number(v) for k, v in cost.items()}, "total": _js_number(total),
                     "totalFromProvider": False}}


def _js_number(value: float) -> float:
    """A whole float as an int, as ``JSON.stringify`` writes it."""
    return int(value) if value == int(value) else value


def _blocks(message: object) -> list[JsonObject]:
    """The answer's text, then each image given as a base64 data URL (remote URLs are skipped)."""
    blocks: list[JsonObject] = []
    if not isinstance(message, dict):
        return blocks
    if isinstance(message.get("content"), str) and message["content"]:
        blocks.append({"type": "text", "text": message["content"]})
    for image in message.get("images") or []:
        url = image.get("image_url") if isinstance(image, dict) else None
        url = url.get("url") if isinstance(url, dict) else url
        match = DATA_URL.match(url) if isinstance(url, str) and url.startswith("data:") else None
        if match:
            blocks.append({"type": "image", "mimeType": match.group(1), "data": match.group(2)})
    return blocks


async def _openrouter(model: Model, context: Mapping[str, object], options: StreamOptions) -> JsonObject:
    from dataclasses import replace

    from pi_coding_agent.ai.stream import ProviderError
    from pi_coding_agent.ai.transport.http import apply_payload_hook, merge_headers, post_stream

    output = result_of(model, "output")
    try:
        if not options.api_key:
            raise ProviderError(f"No API key for provider: {model['provider']}")
        body = await apply_payload_hook(_request(model, context), options)
        headers = merge_headers({"authorization": f"Bearer {options.api_key}", "content-type": "application/json",
                                 "accept": "application/json"}, model.get("headers") or {}, options.headers)
        url = f"{model['baseUrl'].rstrip('/')}/chat/completions"
        async with post_stream(url, headers, orjson.dumps(body),
                               replace(options, identity_provider=model["provider"])) as response:
            answer = orjson.loads(await response.aread())
        if not isinstance(answer, dict):
            raise ProviderError("OpenRouter returned an unexpected response")
        if "id" in answer:
            output["responseId"] = answer["id"]
        if isinstance(answer.get("usage"), dict):
            output["usage"] = _usage(answer["usage"], model)
        choices = answer.get("choices")
        if isinstance(choices, list) and choices:
            output["output"] = _blocks(choices[0].get("message") if isinstance(choices[0], dict) else None)
        return output
    except Exception as error:  # generate_images never raises: the failure is the result
        return fail(output, error, options)


def refusal(model: Model) -> str | None:
    """Why the call cannot be made at all (checked before credentials are looked up, as in pi)."""
    return None if model.get("type") == "image" else f"Model {model['provider']}/{model['id']} is not an image model"


async def generate_images(model: Model, context: Mapping[str, object], options: StreamOptions) -> JsonObject:
    """Images from ``context["input"]`` (text blocks, plus image blocks to edit or follow)."""
    problem = refusal(model)
    if problem is not None:
        return error_result(model, problem, outputs="output")
    if model["api"] != "openrouter-images":
        return error_result(model, f"Provider {model['provider']} has no image implementation for "
                                   f'"{model["api"]}" in this Python implementation of pi', outputs="output")
    return await abortable(_openrouter(model, context, options), options,
                           lambda: error_result(model, "This operation was aborted", aborted=True, outputs="output"))
