"""``<agentDir>/models.json``: custom providers and models, and changes to built-in providers.

The file is schema-checked with pydantic only when its content changed (``config_validation``);
the merge itself works on the plain parsed dicts, so an unchanged file costs one orjson parse.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

from pi_coding_agent.ai.config_validation import ConfigError, pydantic_messages, validated_json
from pi_coding_agent.ai.types import JsonObject, Model

LABEL = "models.json"
CUSTOM_DEFAULTS: JsonObject = {
    "reasoning": False,
    "input": ["text"],
    "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0},
    "contextWindow": 128000,
    "maxTokens": 16384,
}
# Optional model fields copied as given from a models.json definition.
OPTIONAL_FIELDS = ("thinkingLevelMap", "inputLimits", "promptCache", "samplingParams", "samplingParamsByThinkingLevel")
# Compat sub-objects merged one level deeper instead of replaced.
NESTED_COMPAT = ("openRouterRouting", "vercelGatewayRouting", "chatTemplateKwargs", "chatTemplateArgs")
THINKING_KEYS = ("off", "minimal", "low", "medium", "high", "xhigh", "max")


def load_models_json(agent_dir: Path) -> tuple[dict[str, dict[str, Any]], list[str]]:
    """Provider configs of models.json (empty when missing or invalid) and one-line error messages."""
    try:
        data = validated_json(agent_dir / LABEL, agent_dir / ".cache", validate_models_json)
    except ConfigError as exc:
        return {}, [m if m.startswith(LABEL) else f"{LABEL}: {m}" for m in exc.messages]
    if data is None:
        return {}, []
    providers = data.get("providers") if isinstance(data, dict) else None
    return (dict(providers) if isinstance(providers, dict) else {}), []


def validate_models_json(data: object) -> None:
    """Schema check (imports pydantic); raises ``ConfigError`` with one line per problem."""
    from pydantic import ValidationError

    try:
        _schema().model_validate(data)
    except ValidationError as exc:
        raise ConfigError(pydantic_messages(LABEL, exc)) from None


@cache
def _schema() -> Any:
    """The pydantic model of models.json, built on first use so importing this module stays cheap."""
    from typing import Literal

    from pydantic import BaseModel, ConfigDict, Field

    from pi_coding_agent.ai.providers.vendor import sign_ins

    level_value = str | None
    sign_in = Literal[tuple(sign_ins())]  # type: ignore[valid-type]  # the vendors with an account sign-in (``ai.providers``)
    params = dict[str, Any]

    class Strict(BaseModel):
        model_config = ConfigDict(strict=True, extra="allow")

    class ThinkingLevelMap(Strict):
        off: level_value = None
        minimal: level_value = None
        low: level_value = None
        medium: level_value = None
        high: level_value = None
        xhigh: level_value = None
        max: level_value = None

    class Rates(Strict):
        input: float
        output: float
        cacheRead: float
        cacheWrite: float

    class Tier(Rates):
        inputTokensAbove: float

    class Cost(Rates):
        tiers: list[Tier] | None = None

    class PartialCost(Strict):
        input: float | None = None
        output: float | None = None
        cacheRead: float | None = None
        cacheWrite: float | None = None
        tiers: list[Tier] | None = None

    class Resize(Strict):
        maxWidth: int | None = Field(default=None, ge=1)
        maxHeight: int | None = Field(default=None, ge=1)
        maxBytes: int | None = Field(default=None, ge=1)
        jpegQuality: int | None = Field(default=None, ge=1, le=100)

    class Images(Strict):
        resize: Resize | None = None
        maxPerMessage: int | None = None
        maxPerRequest: int | None = None

    class InputLimits(Strict):
        maxRequestBytes: int | None = None
        images: Images | None = None

    class PromptCache(Strict):
        short: float | None = Field(default=None, gt=0)
        long: float | None = Field(default=None, gt=0)

    class ByLevel(Strict):
        off: params | None = None
        minimal: params | None = None
        low: params | None = None
        medium: params | None = None
        high: params | None = None
        xhigh: params | None = None
        max: params | None = None

    class Override(Strict):
        name: str | None = Field(default=None, min_length=1)
        reasoning: bool | None = None
        thinkingLevelMap: ThinkingLevelMap | None = None
        input: list[Literal["text", "image"]] | None = None
        inputLimits: InputLimits | None = None
        cost: PartialCost | None = None
        promptCache: PromptCache | None = None
        contextWindow: int | None = Field(default=None, gt=0)
        maxTokens: int | None = Field(default=None, gt=0)
        samplingParams: params | None = None
        samplingParamsByThinkingLevel: ByLevel | None = None
        headers: dict[str, str] | None = None
        compat: params | None = None

    class Definition(Override):
        id: str = Field(min_length=1)
        api: str | None = Field(default=None, min_length=1)
        baseUrl: str | None = Field(default=None, min_length=1)
        cost: Cost | None = None  # type: ignore[assignment]

    class Provider(Strict):
        name: str | None = Field(default=None, min_length=1)
        baseUrl: str | None = Field(default=None, min_length=1)
        apiKey: str | None = Field(default=None, min_length=1)
        api: str | None = Field(default=None, min_length=1)
        oauth: sign_in | None = None  # type: ignore[valid-type]
        headers: dict[str, str] | None = None
        compat: params | None = None
        authHeader: bool | None = None
        models: list[Definition] | None = None
        modelOverrides: dict[str, Override] | None = None

    class ModelsFile(Strict):
        providers: dict[str, Provider]

    return ModelsFile


def check_provider(provider: str, config: dict[str, Any], base: list[Model]) -> str | None:
    """The structural problem pi reports for a provider entry (beyond the schema), if any."""
    if config.get("oauth") and not config.get("baseUrl"):
        return f'Provider {provider}: "baseUrl" is required when "oauth" is set.'
    settings = ("models", "baseUrl", "headers", "compat", "modelOverrides", "apiKey", "oauth")
    if not any(config.get(key) for key in settings) and "authHeader" not in config:
        return f'Provider {provider}: must specify "baseUrl", "headers", "compat", "modelOverrides", or "models".'
    for definition in config.get("models") or []:
        defaults = _defaults_for(base, definition["id"], definition.get("api") or config.get("api"))
        if not (definition.get("api") or config.get("api") or defaults):
            return f'Provider {provider}, model {definition["id"]}: no "api" specified. Set at provider or model level.'
        if not (definition.get("baseUrl") or config.get("baseUrl") or _field(defaults, "baseUrl")):
            return f'Provider {provider}: "baseUrl" is required when defining custom models.'
    return None


def apply_provider_config(provider: str, base: list[Model], config: dict[str, Any]) -> list[Model]:
    """Built-in models re-routed and extended by a provider entry (assumes ``check_provider`` passed)."""
    base_url = None if config.get("oauth") else config.get("baseUrl")  # a sign-in's gateway routes itself
    models: list[Model] = []
    for model in base:
        routed: Any = {**model, "baseUrl": base_url or model["baseUrl"]}
        _set_optional(routed, "compat", merge_compat(model.get("compat"), config.get("compat")))
        models.append(routed)
    for definition in config.get("models") or []:
        defaults = _defaults_for(models, definition["id"], definition.get("api") or config.get("api"))
        custom = model_from_definition(provider, definition, config, defaults)
        index = next((i for i, m in enumerate(models) if m["id"] == definition["id"]), None)
        if index is None:
            models.append(custom)
        else:
            models[index] = custom
    overrides = config.get("modelOverrides") or {}
    return [apply_override(m, overrides[m["id"]]) if m["id"] in overrides else m for m in models]


def model_from_definition(
    provider: str, definition: dict[str, Any], config: dict[str, Any], defaults: Model | None
) -> Model:
    """A models.json ``models`` entry as a full Model (custom-model defaults filled in)."""
    model: Any = {
        "id": definition["id"],
        "name": definition.get("name") or definition["id"],
        "api": definition.get("api") or config.get("api") or _field(defaults, "api"),
        "provider": provider,
        "baseUrl": definition.get("baseUrl") or config.get("baseUrl") or _field(defaults, "baseUrl"),
    }
    for key, default in CUSTOM_DEFAULTS.items():
        model[key] = definition.get(key, default)
    for key in OPTIONAL_FIELDS:
        _set_optional(model, key, definition.get(key))
    _set_optional(model, "compat", merge_compat(config.get("compat"), definition.get("compat")))
    result: Model = model
    return result


def apply_override(model: Model, override: dict[str, Any]) -> Model:
    """A ``modelOverrides`` entry merged into a model: scalars replace, objects merge."""
    out: Any = dict(model)
    for key in ("name", "reasoning", "input", "contextWindow", "maxTokens"):
        if override.get(key) is not None:
            out[key] = override[key]
    if override.get("cost"):
        out["cost"] = {**model["cost"], **{k: v for k, v in override["cost"].items() if v is not None}}
    for key in ("thinkingLevelMap", "promptCache", "samplingParams"):
        if override.get(key):
            out[key] = {**(out.get(key) or {}), **override[key]}
    if override.get("samplingParamsByThinkingLevel"):
        current = dict(out.get("samplingParamsByThinkingLevel") or {})
        for level, params in override["samplingParamsByThinkingLevel"].items():
            if params:
                current[level] = {**current.get(level, {}), **params}
        out["samplingParamsByThinkingLevel"] = current
    if override.get("inputLimits"):
        out["inputLimits"] = _merge_input_limits(model.get("inputLimits"), override["inputLimits"])
    _set_optional(out, "compat", merge_compat(model.get("compat"), override.get("compat")))
    result: Model = out
    return result


def merge_compat(base: dict[str, Any] | None, override: dict[str, Any] | None) -> JsonObject | None:
    if not override:
        return base
    merged = {**(base or {}), **override}
    for key in NESTED_COMPAT:
        if isinstance((base or {}).get(key), dict) or isinstance(override.get(key), dict):
            merged[key] = {**((base or {}).get(key) or {}), **(override.get(key) or {})}
    return merged


def raw_headers(config: dict[str, Any], model_id: str | None) -> dict[str, str]:
    """Unresolved header values for one model: provider, then its override, then its definition
    (``model_id`` None: a classifier or image model, which only the provider's headers reach)."""
    definition: dict[str, Any] = next((d for d in config.get("models") or [] if d["id"] == model_id), {})
    override = (config.get("modelOverrides") or {}).get(model_id, {}) if model_id is not None else {}
    return {**(config.get("headers") or {}), **(override.get("headers") or {}), **(definition.get("headers") or {})}


def _merge_input_limits(base: dict[str, Any] | None, override: dict[str, Any]) -> JsonObject:
    base = base or {}
    merged = {**base, **override}
    if override.get("images"):
        images = {**(base.get("images") or {}), **override["images"]}
        if override["images"].get("resize"):
            images["resize"] = {**((base.get("images") or {}).get("resize") or {}), **override["images"]["resize"]}
        elif (base.get("images") or {}).get("resize"):
            images["resize"] = base["images"]["resize"]
        merged["images"] = images
    elif base.get("images"):
        merged["images"] = base["images"]
    return merged


def _defaults_for(models: list[Model], model_id: str, api: str | None) -> Model | None:
    """The built-in model a custom one inherits api/baseUrl from: same id, same api, any chat API, first."""
    return (
        next((m for m in models if m["id"] == model_id), None)
        or (next((m for m in models if m["api"] == api), None) if api else None)
        or next((m for m in models if m["api"] == "openai-completions"), None)
        or (models[0] if models else None)
    )


def _field(model: Model | None, key: str) -> object:
    return model.get(key) if model is not None else None


def _set_optional(target: JsonObject, key: str, value: object) -> None:
    """Optional wire fields are omitted, never null."""
    if value is None:
        target.pop(key, None)
    else:
        target[key] = value
