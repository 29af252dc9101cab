"""``models.classify()`` and ``models.generateImages()`` for scripts: check, resolve, run, record.

A script names a model by ``provider`` and ``id`` only; the model is looked up in the session's
catalog, so a script-supplied ``baseUrl`` or header never receives the session's credentials. The
context is checked before any request, so a malformed one fails with the shape it should have. At
most four such calls run at once per script; each is a row of the tool's ``details.calls`` (model
only, never prompts or image data) and its usage is added to the tool result.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

from pi_coding_agent.ai.abort import AbortSignal
from pi_coding_agent.ai.types import JsonObject

MAX_CONCURRENT_MODEL_CALLS = 4
ERROR_PREVIEW = 500
MODEL_TYPES = ("chat", "image", "classifier")
CLASSIFIER_SHAPE = (
    '{ state: { ... }, images?: [{ type: "image", data: <base64>, mimeType }], questions: { <id>: { type: "choice", '
    "instructions, criteria: { <label>: <meaning> } } | { type: \"score\", instructions, criteria: [<lowest level>, "
    '..., <highest level>] } | { type: "bool", instructions, criteria: { true: <meaning>, false: <meaning> } } } }'
)
IMAGES_SHAPE = ('{ input: [{ type: "text", text: <prompt> }, ...optional { type: "image", data: <base64>, '
                "mimeType } references] }")


class ModelHost(Protocol):
    def find_of_type(self, kind: str, provider: str, model_id: str) -> JsonObject | None: ...

    async def run_model(self, kind: str, model: JsonObject, context: JsonObject,
                        signal: AbortSignal) -> dict[str, Any]:
        """Run a classifier or image model with the session's credentials (never raises)."""
        ...


class CallRows(Protocol):
    """Where the calls are recorded: the script's ``details.calls``, its usage, its image count."""

    def start_model_call(self, name: str, model: str) -> dict[str, Any]: ...

    def finish_model_call(self, record: JsonObject, result: JsonObject, duration_ms: float,
                          images: int) -> None: ...


def docs_path() -> str:
    """Where scripts read about ``models`` (named in the tool description and in context errors)."""
    from pi_coding_agent.coding.paths import project_root

    return str(project_root() / "docs" / "codemode.md")


def with_article(word: str) -> str:
    return f"{'an' if word[0] in 'aeiou' else 'a'} {word}"


def describe_value(value: object) -> str:
    """A script value in an error message: ``undefined``, ``a string``, ``an array``, ``{ keys }``."""
    if value is None:
        return "undefined"
    if isinstance(value, list):
        return "an empty array" if not value else "an array"
    if isinstance(value, dict):
        keys = list(value)
        return "{}" if not keys else "{ " + ", ".join(keys[:6]) + (", ..." if len(keys) > 6 else "") + " }"
    if isinstance(value, bool):
        return "a boolean"
    return "a string" if isinstance(value, str) else ("a number" if isinstance(value, int | float) else "an object")


def _is_block(value: object, kind: str) -> bool:
    if not isinstance(value, dict) or value.get("type") != kind:
        return False
    if kind == "text":
        return isinstance(value.get("text"), str)
    return isinstance(value.get("data"), str) and isinstance(value.get("mimeType"), str)


def _strings(values: list[object]) -> bool:
    return bool(values) and all(isinstance(v, str) for v in values)


def _question_problem(at: str, question: object) -> str | None:
    if not isinstance(question, dict):
        return f"{at} must be a question object, got {describe_value(question)}"
    kind, criteria = question.get("type"), question.get("criteria")
    if not isinstance(question.get("instructions"), str):
        return f"{at}.instructions must be a string"
    if kind == "choice":
        if not isinstance(criteria, dict) or not _strings(list(criteria.values())):
            return f'{at} is a "choice" question, so criteria must map each label to its meaning'
    elif kind == "score":
        if not isinstance(criteria, list) or not _strings(criteria):
            return f'{at} is a "score" question, so criteria must list the levels as strings, lowest first'
    elif kind == "bool":
        if not isinstance(criteria, dict) or not isinstance(criteria.get("true"), str) \
                or not isinstance(criteria.get("false"), str):
            return f'{at} is a "bool" question, so criteria must be {{ true: string, false: string }}'
    else:
        import json

        shown = "undefined" if kind is None else json.dumps(kind)
        return f'{at}.type must be "choice", "score", or "bool", got {shown}'
    return None


def classifier_problem(context: object) -> str | None:
    """What is wrong with a classifier context, or None."""
    if not isinstance(context, dict):
        return f"expects a context object as its second argument, got {describe_value(context)}"
    state, images, questions = context.get("state"), context.get("images"), context.get("questions")
    if not isinstance(state, dict):
        return f"context.state must be an object, got {describe_value(state)}"
    if images is not None:
        if not isinstance(images, list):
            return f"context.images must be an array, got {describe_value(images)}"
        for index, image in enumerate(images):
            if not _is_block(image, "image"):
                return f"context.images[{index}] must be an image block, got {describe_value(image)}"
    if not isinstance(questions, dict) or not questions:
        return f"context.questions must map question IDs to questions, got {describe_value(questions)}"
    return next((p for qid, q in questions.items() if (p := _question_problem(f"context.questions.{qid}", q))), None)


def images_problem(context: object) -> str | None:
    """What is wrong with an image-generation context, or None."""
    if not isinstance(context, dict):
        return f"expects a context object as its second argument, got {describe_value(context)}"
    blocks = context.get("input")
    if not isinstance(blocks, list) or not blocks:
        return f"context.input must be a non-empty array of blocks, got {describe_value(blocks)}"
    for index, block in enumerate(blocks):
        if not (_is_block(block, "text") or _is_block(block, "image")):
            return f"context.input[{index}] must be a text or image block, got {describe_value(block)}"
    return None


Executor = Callable[[list[object], AbortSignal], Awaitable[object]]
_CHECKS: dict[str, tuple[Callable[[object], str | None], str, str]] = {
    "classifier": (classifier_problem, CLASSIFIER_SHAPE, "Classify"),
    "image": (images_problem, IMAGES_SHAPE, "Generate images"),
}


class ModelCalls:
    """The two executors of one script, sharing its limit of concurrent model calls."""

    def __init__(self, host: ModelHost, rows: CallRows) -> None:
        self.host = host
        self.rows = rows
        self.slots = asyncio.Semaphore(MAX_CONCURRENT_MODEL_CALLS)

    def executor(self, name: str, kind: str) -> Executor:
        async def run(args: list[Any], signal: AbortSignal) -> object:
            model, context = ([*args, None, None])[:2]
            resolved = self._resolve(name, kind, model)
            problem_of, shape, section = _CHECKS[kind]
            problem = problem_of(context)
            if problem is not None:
                raise ValueError(f'{name}() {problem}. Expected context: {shape}. See "{section}" in {docs_path()}.')
            record = self.rows.start_model_call(name, f"{resolved['provider']}/{resolved['id']}")
            started = time.monotonic()
            async with self.slots:
                result = await self.host.run_model(kind, resolved, context, signal)
            images = sum(1 for b in result.get("output") or [] if b.get("type") == "image")
            self.rows.finish_model_call(record, result, (time.monotonic() - started) * 1000, images)
            return result
        return run

    def _resolve(self, name: str, kind: str, model: object) -> JsonObject:
        """The catalog's entry for the script's ``{provider, id}``; a clear error otherwise."""
        hint = f'List the {kind} models you can use with models.getAvailableOfType("{kind}").'
        if not isinstance(model, dict) or not isinstance(model.get("provider"), str) \
                or not isinstance(model.get("id"), str):
            missing = (" models.getModelOfType() returns undefined for an unknown provider or id."
                       if model is None else "")
            raise ValueError(f"{name}() expects {with_article(kind)} model as its first argument, got "
                             f"{describe_value(model)}.{missing} {hint}")
        provider, model_id = model["provider"], model["id"]
        found = self.host.find_of_type(kind, provider, model_id)
        if found is not None:
            return found
        ref = f"{provider}/{model_id}"
        other = next((t for t in MODEL_TYPES if t != kind and self.host.find_of_type(t, provider, model_id)), None)
        if other is not None:
            raise ValueError(f'"{ref}" is {with_article(other)} model, not {with_article(kind)} model. {hint}')
        raise ValueError(f'Unknown {kind} model "{ref}". {hint}')


def preview(text: str) -> str:
    """An error as a call row shows it (500 characters at most)."""
    return text if len(text) <= ERROR_PREVIEW else text[: ERROR_PREVIEW - 3] + "..."
