"""Models that do not chat: classifiers and image generators, and how a provider's configuration changes them.

Their built-in entries are ``ai/models/data/nonchat.json`` (``scripts/build_catalog.py``), read the first
time a script asks for them, never at start-up. Chat commands (``set_model``, ``cycle_model``,
``get_available_models``) never see these models: only codemode's ``models.*`` and the extension
model registry reach them.

The layers apply as pi 1.6.0 composes them: the built-in entry, then the provider's models.json
entry (its ``baseUrl``, and for classifiers its provider-level ``compat``; models.json ``models`` and
``modelOverrides`` are chat-only), then a registered provider's (extension) models or ``baseUrl``.
"""

from __future__ import annotations

from functools import cache
from typing import Any

import orjson

from pi_coding_agent.ai.models.index import DATA_DIR, expand_placeholders
from pi_coding_agent.ai.types import JsonObject, Model

NONCHAT_TYPES = ("classifier", "image")
MODEL_TYPES = ("chat", *NONCHAT_TYPES)


def model_type(model: Model | JsonObject) -> str:
    """A model's type; entries without one are chat models."""
    return str(model.get("type") or "chat")


@cache
def _catalog() -> dict[str, dict[str, list[dict[str, Any]]]]:
    data: dict[str, dict[str, list[JsonObject]]] = orjson.loads((DATA_DIR / "nonchat.json").read_bytes())
    return data


def builtin(kind: str, provider: str) -> list[Model]:
    """Fresh built-in entries of one type and provider, ``provider`` back after ``api`` as pi orders keys."""
    out: list[Model] = []
    for entry in _catalog().get(kind, {}).get(provider, []):
        model: Any = {}
        for key, value in entry.items():
            model[key] = expand_placeholders(value) if key == "baseUrl" else value
            if key == "api":
                model["provider"] = provider
        out.append(model)
    return out


def apply_models_json(models: list[Model], config: dict[str, Any] | None) -> list[Model]:
    """A models.json provider entry over non-chat models: its ``baseUrl`` (not for a vendor's sign-in,
    whose gateway routes), and for classifiers its provider-level ``compat`` (how images travel)."""
    if config is None:
        return models
    base_url = None if config.get("oauth") else config.get("baseUrl")
    out: list[Model] = []
    for model in models:
        routed: Any = {**model, "baseUrl": base_url or model["baseUrl"]}
        if model_type(model) == "classifier" and isinstance(config.get("compat"), dict):
            routed["compat"] = {**(model.get("compat") or {}), **config["compat"]}
        out.append(routed)
    return out


def apply_extension(kind: str, provider: str, models: list[Model], config: dict[str, Any] | None) -> list[Model]:
    """A registered provider: its ``models`` of this type replace the built-in ones (inheriting
    ``api``/``baseUrl`` from a same-type model), else its ``baseUrl`` re-routes them."""
    if config is None:
        return models
    definitions = config.get("models")
    if not definitions:
        base_url = config.get("baseUrl")
        return [{**m, "baseUrl": base_url} for m in models] if base_url else models
    out: list[Model] = []
    for definition in definitions:
        if model_type(definition) != kind:
            continue
        defaults: Any = _defaults(models, definition) or {}
        model: Any = {**definition, "provider": provider}
        model["api"] = definition.get("api") or defaults.get("api")
        model["baseUrl"] = definition.get("baseUrl") or config.get("baseUrl") or defaults.get("baseUrl")
        model.pop("headers", None)  # sent per request (registry headers), never listed
        if model["api"] and model["baseUrl"]:
            out.append(model)
    return out


def _defaults(models: list[Model], definition: JsonObject) -> Model | None:
    """What a registered non-chat model inherits from: the same id, the same api, else the first."""
    return (next((m for m in models if m["id"] == definition.get("id")), None)
            or next((m for m in models if definition.get("api") and m["api"] == definition["api"]), None)
            or (models[0] if models else None))


def chat_definitions(config: dict[str, Any]) -> JsonObject:
    """A registered provider's entry with only its chat models (the chat catalog's share of it)."""
    definitions = config.get("models")
    if not definitions or all(model_type(d) == "chat" for d in definitions):
        return config
    return {**config, "models": [d for d in definitions if model_type(d) == "chat"]}
