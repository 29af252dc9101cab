"""The System One classifier protocol, as TypeSafe, OpenRouter, Vercel, OpenCode and Workers AI serve it.

Two APIs share it. ``typesafe-system-one`` posts ``{model, state, questions[, assets|images]}`` to
``<baseUrl>/systemone``; ``cloudflare-workers-ai-system-one`` posts ``{model, input: {...}}`` to
``<baseUrl>/run`` and unwraps Cloudflare's envelope (``{success, result}``, third-party models add a
run record ``{state: "Completed", result}``). Public ``bool`` questions travel as the wire type
``noul``; their answer's ``noul`` is the probability of true.

Images go in the form the service takes, chosen by ``compat.imageInput`` (else detected):
``assets`` (a map of ``<image-N>`` PNG/JPEG assets whose names lead the state: TypeSafe, Jev on
Workers AI), ``images`` (up to four PNG/JPEG/WebP data URLs: Clef on Workers AI) or
``state-image-urls`` (``image_url`` parts before the state: OpenRouter, which drops assets without
an error). ``compat.sendImageOptInHeader`` adds ``TypeSafe-Danger-Zone-Images: true``, which
TypeSafe's own API needs for images (the default for ``typesafe-system-one`` off OpenRouter).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from pi_coding_agent.ai.nonchat.requests import (
    ClassifierError,
    fail,
    is_record,
    parse_usage,
    post_json,
    required_number,
    result_of,
)
from pi_coding_agent.ai.stream import StreamOptions
from pi_coding_agent.ai.types import JsonObject, Model

IMAGE_OPT_IN_HEADERS = {"TypeSafe-Danger-Zone-Images": "true"}
ASSET_FORMATS = {"image/png": "png", "image/jpeg": "jpeg"}
DATA_URL_TYPES = frozenset({"image/png", "image/jpeg", "image/webp"})
MAX_DATA_URL_IMAGES = 4  # Clef's limit per request
CLOUDFLARE = "Cloudflare Workers AI"


@dataclass(frozen=True)
class Transport:
    """What differs between the System One services: where to post, how to wrap and unwrap."""

    label: str
    detect: Callable[[Model], tuple[str, bool]]  # (imageInput, sendImageOptInHeader) without compat
    path: str
    wrap: Callable[[Model, JsonObject], JsonObject]
    unwrap: Callable[[object], JsonObject]


def _is_openrouter(model: Model) -> bool:
    return model["provider"] == "openrouter" or "openrouter.ai" in model["baseUrl"]


def _typesafe_unwrap(body: Any) -> JsonObject:
    if not is_record(body):
        raise ClassifierError("System One API returned an unexpected response")
    result: JsonObject = body
    return result


def _cloudflare_errors(errors: object) -> str:
    messages = [e["message"] for e in errors if is_record(e) and isinstance(e.get("message"), str)] \
        if isinstance(errors, list) else []
    return f"{CLOUDFLARE} error: {'; '.join(messages)}" if messages else f"{CLOUDFLARE} request failed"


def _cloudflare_unwrap(body: Any) -> JsonObject:
    unexpected = ClassifierError(f"{CLOUDFLARE} returned an unexpected response")
    if not is_record(body):
        raise unexpected
    if body.get("success") is False:
        raise ClassifierError(_cloudflare_errors(body.get("errors")))
    result = body.get("result")
    if not is_record(result):
        raise unexpected
    if "answers" in result:
        direct: JsonObject = result
        return direct
    if result.get("state") != "Completed":
        state = result.get("state")
        shown = "undefined" if state is None and "state" not in result else ("null" if state is None else str(state))
        raise ClassifierError(f"{CLOUDFLARE} run did not complete (state: {shown})")
    if not is_record(result.get("result")):
        raise unexpected
    inner: JsonObject = result["result"]
    return inner


TYPESAFE = Transport(
    label="System One API",
    detect=lambda m: ("state-image-urls", False) if _is_openrouter(m) else ("assets", True),
    path="systemone",
    wrap=lambda m, request: {"model": m["id"], **request},
    unwrap=_typesafe_unwrap,
)
WORKERS_AI = Transport(
    label=CLOUDFLARE,
    detect=lambda m: ("images" if m["id"].startswith("@cf/cloudflare/clef") else "assets", False),
    path="run",
    wrap=lambda m, request: {"model": m["id"], "input": request},
    unwrap=_cloudflare_unwrap,
)


def wire_request(context: dict[str, Any]) -> JsonObject:
    """State and questions, ``bool`` questions renamed to the wire's ``noul``."""
    questions = {qid: ({**q, "type": "noul"} if q.get("type") == "bool" else q)
                 for qid, q in context["questions"].items()}
    return {"state": context["state"], "questions": questions}


def add_images(label: str, model: Model, form: str, images: list[dict[str, Any]], request: dict[str, Any]) -> None:
    """Put the context's images into ``request`` as the service takes them (``form``: imageInput)."""
    if form == "images":
        if len(images) > MAX_DATA_URL_IMAGES:
            raise ClassifierError(f"{label} accepts at most {MAX_DATA_URL_IMAGES} images for {model['id']}, "
                                  f"got {len(images)}")
        for image in images:
            if image["mimeType"] not in DATA_URL_TYPES:
                raise ClassifierError(f"{label} accepts PNG, JPEG, and WebP images for {model['id']}, "
                                      f"got {image['mimeType']}")
        request["images"] = [f"data:{i['mimeType']};base64,{i['data']}" for i in images]
        return
    if form == "state-image-urls":
        parts = [{"type": "image_url", "image_url": {"url": f"data:{i['mimeType']};base64,{i['data']}"}}
                 for i in images]
        request["state"] = [*parts, request["state"]]
        return
    assets: JsonObject = {}
    for index, image in enumerate(images):
        kind = ASSET_FORMATS.get(image["mimeType"])
        if kind is None:
            raise ClassifierError(f"{label} accepts PNG and JPEG images for {model['id']}, got {image['mimeType']}")
        assets[f"<image-{index + 1}>"] = {"type": "image", "format": kind, "data_base64": image["data"]}
    request["assets"] = assets
    request["state"] = [*assets, request["state"]]  # every asset is named before the state


def _probabilities(label: str, value: Any, qid: str) -> dict[str, float]:
    if not is_record(value):
        raise ClassifierError(f"{label} returned invalid probabilities for {qid}")
    return {key: required_number(label, p, f"probability for {qid}.{key}") for key, p in value.items()}


def parse_answers(label: str, value: Any, context: dict[str, Any]) -> JsonObject:
    """The answer to every question, in the public shape (``noul`` back to ``bool``)."""
    if not is_record(value):
        raise ClassifierError(f"{label} returned an unexpected response")
    answers: JsonObject = {}
    for qid, question in context["questions"].items():
        answer = value.get(qid)
        if not is_record(answer):
            raise ClassifierError(f"{label} did not return an answer for {qid}")
        kind = question.get("type")
        if kind == "choice":
            if answer.get("type") != "choice" or not isinstance(answer.get("choice"), str):
                raise ClassifierError(f"{label} did not return a choice answer for {qid}")
            answers[qid] = {"type": "choice", "choice": answer["choice"],
                            "probabilities": _probabilities(label, answer.get("probabilities"), qid),
                            "confidence": required_number(label, answer.get("confidence"), f"confidence for {qid}")}
        elif kind == "score":
            if answer.get("type") != "score":
                raise ClassifierError(f"{label} did not return a score answer for {qid}")
            answers[qid] = {"type": "score", "score": required_number(label, answer.get("score"), f"score for {qid}"),
                            "confidence": required_number(label, answer.get("confidence"), f"confidence for {qid}")}
        else:
            if answer.get("type") != "noul":
                raise ClassifierError(f"{label} did not return a bool answer for {qid}")
            answers[qid] = {"type": "bool",
                            "probability": required_number(label, answer.get("noul"), f"probability for {qid}")}
    return answers


async def _classify(transport: Transport, model: Model, context: dict[str, Any],
                    options: StreamOptions) -> JsonObject:
    output = result_of(model)
    try:
        request = wire_request(context)
        images = context.get("images") or []
        if images:
            if "image" not in model["input"]:
                raise ClassifierError(f"{transport.label} does not support image input for {model['id']}")
            detected_form, detected_header = transport.detect(model)
            compat = model.get("compat") or {}
            form = compat.get("imageInput") or detected_form
            add_images(transport.label, model, form, images, request)
            send_header = compat.get("sendImageOptInHeader")
            if send_header if send_header is not None else detected_header:
                options = replace(options, headers={**IMAGE_OPT_IN_HEADERS, **options.headers})
        url = f"{model['baseUrl'].rstrip('/')}/{transport.path}"
        body = await post_json(transport.label, url, model, transport.wrap(model, request), options)
        answer = transport.unwrap(body)
        usage = parse_usage(answer.get("usage"), model)  # before the answers: a malformed answer was billed too
        if usage is not None:
            output["usage"] = usage
        output["answers"] = parse_answers(transport.label, answer.get("answers"), context)
        return output
    except Exception as error:  # classify never raises: the failure is the result
        return fail(output, error, options)


async def classify_typesafe(model: Model, context: JsonObject, options: StreamOptions) -> JsonObject:
    return await _classify(TYPESAFE, model, context, options)


async def classify_cloudflare(model: Model, context: JsonObject, options: StreamOptions) -> JsonObject:
    return await _classify(WORKERS_AI, model, context, options)
