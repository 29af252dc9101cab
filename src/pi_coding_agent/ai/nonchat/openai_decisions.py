"""OpenAI's Decisions API (``openai-decisions``): ``POST <baseUrl>/decisions`` with ``{model, input, questions}``.

The state travels as JSON text; with images, ``input`` is one user message holding that text as
``input_text`` and each image as an ``input_image`` data URL (at most 128). Questions become a list:
``choice`` keeps its labels as ``choices`` (``{value, description}``), ``score`` its levels as
``levels`` (``{label}``), and ``bool`` becomes a ``predicate``, whose meanings of true and false
are appended to the instructions. Answers come back as a list matched by ``name``. A 504 is the
gateway's time limit on very large inputs and is not retried. Only API keys work here: a
ChatGPT sign-in is refused (the registry does not offer these models then).
"""

from __future__ import annotations

from typing import Any

import orjson

from pi_coding_agent.ai.nonchat import requests as shared
from pi_coding_agent.ai.nonchat.requests import ClassifierError, is_record, required_number
from pi_coding_agent.ai.stream import ProviderError, StreamOptions
from pi_coding_agent.ai.types import JsonObject, Model

LABEL = "OpenAI Decisions"
MAX_IMAGES = 128
NO_RETRY_STATUSES = frozenset({504})
GATEWAY_TIMEOUT = (f"{LABEL} error (504): the request timed out at the gateway. Very large inputs (above roughly "
                   "600K tokens) currently exceed its time limit.")


def _predicate_instructions(question: dict[str, Any]) -> str:
    criteria = question["criteria"]
    meanings = [text for text in (f"True means: {criteria['true']}" if criteria.get("true") else "",
                                  f"False means: {criteria['false']}" if criteria.get("false") else "") if text]
    return f"{question['instructions']}\n\n" + "\n".join(meanings) if meanings else question["instructions"]


def wire_question(name: str, question: dict[str, Any]) -> JsonObject:
    if question["type"] == "choice":
        choices = [{"value": value, "description": text} if text else {"value": value}
                   for value, text in question["criteria"].items()]
        return {"type": "choice", "name": name, "instructions": question["instructions"], "choices": choices}
    if question["type"] == "score":
        return {"type": "score", "name": name, "instructions": question["instructions"],
                "levels": [{"label": label} for label in question["criteria"]]}
    return {"type": "predicate", "name": name, "instructions": _predicate_instructions(question)}


def wire_input(context: dict[str, Any]) -> object:
    state = orjson.dumps(context["state"]).decode()
    images = context.get("images") or []
    if not images:
        return state
    if len(images) > MAX_IMAGES:
        raise ClassifierError(f"{LABEL} accepts at most {MAX_IMAGES} images, got {len(images)}")
    parts = [{"type": "input_image", "image_url": f"data:{i['mimeType']};base64,{i['data']}"} for i in images]
    return [{"role": "user", "content": [{"type": "input_text", "text": state}, *parts]}]


def _probabilities(value: object, qid: str) -> dict[str, float]:
    if not isinstance(value, list):
        raise ClassifierError(f"{LABEL} returned invalid probabilities for {qid}")
    out: dict[str, float] = {}
    for entry in value:
        if not is_record(entry) or not isinstance(entry.get("value"), str):
            raise ClassifierError(f"{LABEL} returned invalid probabilities for {qid}")
        out[entry["value"]] = required_number(LABEL, entry.get("probability"), f"probability for {qid}.{entry['value']}")
    return out


def _answer(qid: str, question: JsonObject, answer: JsonObject) -> JsonObject:
    kind = answer.get("type")
    if kind == "refusal":
        raise ClassifierError(f"{LABEL} refused to answer {qid}")
    confidence = f"confidence for {qid}"
    if question["type"] == "choice":
        if kind != "choice" or not isinstance(answer.get("choice"), str):
            raise ClassifierError(f"{LABEL} did not return a choice answer for {qid}")
        return {"type": "choice", "choice": answer["choice"],
                "probabilities": _probabilities(answer.get("probabilities"), qid),
                "confidence": required_number(LABEL, answer.get("confidence"), confidence)}
    if question["type"] == "score":
        if kind != "score":
            raise ClassifierError(f"{LABEL} did not return a score answer for {qid}")
        return {"type": "score", "score": required_number(LABEL, answer.get("score"), f"score for {qid}"),
                "confidence": required_number(LABEL, answer.get("confidence"), confidence)}
    if kind != "predicate":
        raise ClassifierError(f"{LABEL} did not return a predicate answer for {qid}")
    return {"type": "bool", "probability": required_number(LABEL, answer.get("probability"), f"probability for {qid}")}


def parse_answers(value: Any, context: dict[str, Any]) -> JsonObject:
    if not isinstance(value, list):
        raise ClassifierError(f"{LABEL} returned an unexpected response")
    by_name = {a["name"]: a for a in value if is_record(a) and isinstance(a.get("name"), str)}
    answers: JsonObject = {}
    for qid, question in context["questions"].items():
        if qid not in by_name:
            raise ClassifierError(f"{LABEL} did not return an answer for {qid}")
        answers[qid] = _answer(qid, question, by_name[qid])
    return answers


async def classify(model: Model, context: dict[str, Any], options: StreamOptions) -> JsonObject:
    output = shared.result_of(model)
    try:
        request = {"model": model["id"], "input": wire_input(context),
                   "questions": [wire_question(qid, q) for qid, q in context["questions"].items()]}
        url = f"{model['baseUrl'].rstrip('/')}/decisions"
        body = await shared.post_json(LABEL, url, model, request, options, NO_RETRY_STATUSES)
        if not is_record(body):
            raise ClassifierError(f"{LABEL} returned an unexpected response")
        usage = shared.parse_usage(body.get("usage"), model)  # before the answers: a refused answer was billed too
        if usage is not None:
            output["usage"] = usage
        output["answers"] = parse_answers(body.get("answers"), context)
        return output
    except Exception as error:  # classify never raises: the failure is the result
        output["answers"] = {}
        if isinstance(error, ProviderError) and error.status == 504:
            error = ProviderError(GATEWAY_TIMEOUT, 504)
        return shared.fail(output, error, options)
