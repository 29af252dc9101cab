"""The ``compat`` switches of Chat Completions hosts and the request fields they set.

A model's switches are detected from its provider name and base URL, then overridden by what
models.json sets (a null there counts as unset). Each switch maps onto the request exactly as pi
1.6.0 sends it (diffed side by side in ``tests/reference/test_openai_compat_reference.py``): the reasoning
dialect (``thinkingFormat``), a thinking-token budget field for servers that share ``max_tokens``
between reasoning and answer (vLLM), ``vllmPriority``, Anthropic-style ``cache_control`` marks for
gateways in front of Claude, session-affinity headers and gateway routing.
"""

from __future__ import annotations

from typing import TypedDict, cast

from pi_coding_agent.ai.apis.usage import is_openrouter
from pi_coding_agent.ai.stream import StreamOptions
from pi_coding_agent.ai.thinking import MIN_ANSWER_TOKENS, clamp_thinking_level, thinking_budget
from pi_coding_agent.ai.types import JsonObject, Model

_UNSET = object()  # a chat-template value that resolves to nothing is left out


class ChatCompat(TypedDict, total=False):
    """The switches of a Chat Completions host: detected defaults, then the model's ``compat``."""

    supportsStore: bool
    supportsDeveloperRole: bool
    supportsReasoningEffort: bool
    supportsUsageInStreaming: bool
    supportsFinishReason: bool
    maxTokensField: str  # "max_tokens" | "max_completion_tokens"
    requiresToolResultName: bool
    requiresAssistantAfterToolResult: bool
    requiresNonNullAssistantContent: bool
    requiresToolsWithToolHistory: bool
    requiresThinkingAsText: bool
    requiresReasoningContentOnAssistantMessages: bool
    thinkingFormat: str
    chatTemplateKwargs: JsonObject
    chatTemplateArgs: JsonObject
    zaiToolStream: bool
    supportsThinkingTokenBudget: bool
    thinkingTokenBudgetField: str
    supportsStrictMode: bool
    supportsOpenAIGrammarTools: bool
    supportsMidConvoSystemMessages: bool
    supportsMidConvoToolAdditions: bool
    cacheControlFormat: str | None
    sendSessionAffinityHeaders: bool
    sessionAffinityFormat: str  # "openrouter" | "openai"
    supportsLongCacheRetention: bool
    promptCacheKeyMode: str  # "auto" | "enabled" | "disabled"
    openRouterRouting: JsonObject
    vercelGatewayRouting: JsonObject
    vllmPriority: int


def detect_compat(model: Model) -> ChatCompat:
    """Switch defaults for a host, from its provider name and base URL."""
    provider, url = model["provider"], model["baseUrl"]

    def host(name: str, *fragments: str) -> bool:
        return provider == name or any(f in url.lower() for f in fragments)

    zai = host("zai", "api.z.ai", "open.bigmodel.cn") or provider == "zai-coding-cn"
    together = host("together", "api.together.ai", "api.together.xyz")
    moonshot = host("moonshotai", "api.moonshot.") or provider == "moonshotai-cn"
    openrouter = is_openrouter(model)
    nvidia = host("nvidia", "integrate.api.nvidia.com")
    ant_ling = host("ant-ling", "api.ant-ling.com")
    cerebras = host("cerebras", "cerebras.ai")
    deepseek = host("deepseek", "deepseek.com")
    xai = host("xai", "api.x.ai")
    cloudflare = host("cloudflare-ai-gateway", "gateway.ai.cloudflare.com")
    workers_ai = host("cloudflare-workers-ai", "api.cloudflare.com")
    opencode = host("opencode", "opencode.ai")
    chutes = "chutes.ai" in url
    non_standard = (nvidia or cerebras or xai or together or chutes or deepseek or zai or moonshot or opencode
                    or cloudflare or workers_ai or ant_ling)
    use_max_tokens = chutes or deepseek or moonshot or cloudflare or together or nvidia or ant_ling or zai
    thinking_format = ("deepseek" if deepseek else "zai" if zai else "together" if together
                       else "ant-ling" if ant_ling else "openrouter" if openrouter else "openai")
    return {
        "supportsStore": not non_standard,
        "supportsDeveloperRole": host("openai", "api.openai.com"),
        "supportsReasoningEffort": not (xai or zai or moonshot or together or cloudflare or nvidia or ant_ling),
        "supportsUsageInStreaming": True,
        "supportsFinishReason": True,
        "maxTokensField": "max_tokens" if use_max_tokens else "max_completion_tokens",
        "requiresToolResultName": False,
        "requiresAssistantAfterToolResult": False,
        "requiresNonNullAssistantContent": False,
        "requiresToolsWithToolHistory": False,
        "requiresThinkingAsText": False,
        "requiresReasoningContentOnAssistantMessages": deepseek,
        "thinkingFormat": thinking_format,
        "chatTemplateKwargs": {},
        "chatTemplateArgs": {},
        "zaiToolStream": False,
        "supportsThinkingTokenBudget": False,
        "supportsStrictMode": False,
        "supportsOpenAIGrammarTools": False,
        "cacheControlFormat": "anthropic" if provider == "openrouter" and model["id"].startswith("anthropic/") else None,
        "sendSessionAffinityHeaders": openrouter,
        "sessionAffinityFormat": "openrouter" if openrouter else "openai",
        "supportsLongCacheRetention": not (together or workers_ai or cloudflare or nvidia or ant_ling),
    }


def resolve_compat(model: Model) -> ChatCompat:
    """Detected switches overridden by the ones the model sets (null means unset)."""
    configured = {k: v for k, v in (model.get("compat") or {}).items() if v is not None}
    return cast(ChatCompat, {**detect_compat(model), **configured})


# ------------------------------------------------------------------------------------- reasoning


def reasoning_level(model: Model, options: StreamOptions) -> str | None:
    """The requested level clamped to what the model supports; None when reasoning is off."""
    if options.thinking_level == "off":
        return None
    level = clamp_thinking_level(model, options.thinking_level)
    return None if level == "off" else level


def _mapped_or_level(model: Model, level: str) -> str:
    """The model's name for ``level`` (a null mapping falls back to the level itself)."""
    mapped = (model.get("thinkingLevelMap") or {}).get(level)
    return level if mapped is None else mapped


def _strict_mapping(model: Model, level: str | None) -> str | None:
    """The model's name for ``level`` (or for ``off``); a null mapping stays null, no mapping gives the level."""
    mapping = model.get("thinkingLevelMap") or {}
    key = level or "off"
    return mapping.get(key, level)


def _off_allowed(model: Model) -> bool:
    return (model.get("thinkingLevelMap") or {}).get("off", "") is not None


def _off_name(model: Model) -> str:
    off = (model.get("thinkingLevelMap") or {}).get("off")
    return "none" if off is None else off


def thinking_budget_tokens(model: Model, options: StreamOptions, body: JsonObject) -> int | None:
    """The reasoning budget left under the request's output cap, keeping room for the answer."""
    level = reasoning_level(model, options)
    if level is None or not model.get("reasoning"):
        return None
    ceiling = cast(int, body.get("max_tokens") or body.get("max_completion_tokens") or model["maxTokens"])
    budget = min(thinking_budget(level, options.thinking_budgets), max(0, ceiling - MIN_ANSWER_TOKENS))
    return budget if budget > 0 else None


def _template_values(model: Model, level: str | None, values: JsonObject, budget: int | None) -> JsonObject:
    """``chatTemplateKwargs``/``chatTemplateArgs`` with their ``$var`` placeholders resolved."""
    out: JsonObject = {}
    for key, value in values.items():
        resolved: object = value
        if isinstance(value, dict):
            if level is None and value.get("omitWhenOff"):
                resolved = _UNSET
            elif value.get("$var") == "thinking.enabled":
                resolved = level is not None
            elif value.get("$var") == "thinking.budget":
                resolved = _UNSET if budget is None else budget
            else:
                mapped = _strict_mapping(model, level)
                resolved = mapped if isinstance(mapped, str) else _UNSET
        if resolved is not _UNSET:
            out[key] = resolved
    return out


def _effort_field(body: JsonObject, model: Model, level: str | None, compat: ChatCompat,
                  strict: bool = False) -> None:
    """``reasoning_effort`` for a reasoning level, when the host takes one."""
    if level is None or not compat["supportsReasoningEffort"]:
        return
    effort = _strict_mapping(model, level) if strict else _mapped_or_level(model, level)
    if isinstance(effort, str):
        body["reasoning_effort"] = effort


def apply_thinking(body: JsonObject, model: Model, options: StreamOptions, compat: ChatCompat) -> None:
    """Ask for reasoning in the host's dialect; ``off`` may need saying too."""
    level = reasoning_level(model, options)
    budget = thinking_budget_tokens(model, options, body)
    if model.get("reasoning"):
        _THINKING_FORMATS.get(compat["thinkingFormat"], _openai_format)(body, model, level, compat, budget)
    field = compat.get("thinkingTokenBudgetField") or (
        "thinking_token_budget" if compat.get("supportsThinkingTokenBudget") else None)
    if field and budget is not None:
        body[field] = budget


def _openai_format(body: JsonObject, model: Model, level: str | None, compat: ChatCompat,
                   budget: int | None) -> None:
    if level is not None:
        _effort_field(body, model, level, compat)
    elif compat["supportsReasoningEffort"] and isinstance((model.get("thinkingLevelMap") or {}).get("off"), str):
        body["reasoning_effort"] = model.get("thinkingLevelMap", {})["off"]


def _zai_format(body: JsonObject, model: Model, level: str | None, compat: ChatCompat,
                budget: int | None) -> None:
    body["thinking"] = {"type": "enabled", "clear_thinking": False} if level else {"type": "disabled"}
    _effort_field(body, model, level, compat, strict=True)


def _qwen_format(body: JsonObject, model: Model, level: str | None, compat: ChatCompat,
                 budget: int | None) -> None:
    body["enable_thinking"] = level is not None
    _effort_field(body, model, level, compat)


def _qwen_template_format(body: JsonObject, model: Model, level: str | None, compat: ChatCompat,
                          budget: int | None) -> None:
    body["chat_template_kwargs"] = {"enable_thinking": level is not None, "preserve_thinking": True}


def _chat_template_format(body: JsonObject, model: Model, level: str | None, compat: ChatCompat,
                          budget: int | None) -> None:
    values = _template_values(model, level, compat.get("chatTemplateKwargs") or {}, budget)
    if values:
        body["chat_template_kwargs"] = values


def _baseten_format(body: JsonObject, model: Model, level: str | None, compat: ChatCompat,
                    budget: int | None) -> None:
    values = _template_values(model, level, compat.get("chatTemplateArgs") or {}, budget)
    if values:
        body["chat_template_args"] = values
    effort = _strict_mapping(model, level)
    if compat["supportsReasoningEffort"] and isinstance(effort, str):
        body["reasoning_effort"] = effort


def _deepseek_format(body: JsonObject, model: Model, level: str | None, compat: ChatCompat,
                     budget: int | None) -> None:
    if level or _off_allowed(model):
        body["thinking"] = {"type": "enabled" if level else "disabled"}
    _effort_field(body, model, level, compat)


def _openrouter_format(body: JsonObject, model: Model, level: str | None, compat: ChatCompat,
                       budget: int | None) -> None:
    if level:
        body["reasoning"] = {"effort": _mapped_or_level(model, level)}
    elif _off_allowed(model):
        body["reasoning"] = {"effort": _off_name(model)}


def _ant_ling_format(body: JsonObject, model: Model, level: str | None, compat: ChatCompat,
                     budget: int | None) -> None:
    if level is None:  # off: the plain OpenAI way
        _openai_format(body, model, level, compat, budget)
        return
    effort = (model.get("thinkingLevelMap") or {}).get(level)
    if isinstance(effort, str):
        body["reasoning"] = {"effort": effort}


def _together_format(body: JsonObject, model: Model, level: str | None, compat: ChatCompat,
                     budget: int | None) -> None:
    body["reasoning"] = {"enabled": level is not None}
    _effort_field(body, model, level, compat)


def _string_thinking_format(body: JsonObject, model: Model, level: str | None, compat: ChatCompat,
                            budget: int | None) -> None:
    if level:
        body["thinking"] = _mapped_or_level(model, level)
    elif _off_allowed(model):
        body["thinking"] = _off_name(model)


_THINKING_FORMATS = {
    "zai": _zai_format, "qwen": _qwen_format, "qwen-chat-template": _qwen_template_format,
    "chat-template": _chat_template_format, "baseten": _baseten_format, "deepseek": _deepseek_format,
    "openrouter": _openrouter_format, "ant-ling": _ant_ling_format, "together": _together_format,
    "string-thinking": _string_thinking_format,
}


# ------------------------------------------------------------------------------ caching, routing


def cache_control(compat: ChatCompat, retention: str) -> dict[str, str] | None:
    """Anthropic-style ``cache_control`` for gateways in front of Claude (``cacheControlFormat``)."""
    if compat.get("cacheControlFormat") != "anthropic" or retention == "none":
        return None
    long = retention == "long" and compat["supportsLongCacheRetention"]
    return {"type": "ephemeral", "ttl": "1h"} if long else {"type": "ephemeral"}


def _mark_text(message: JsonObject, control: dict[str, str]) -> bool:
    """Put ``control`` on the message's last text (a string content becomes one text part)."""
    content = message.get("content")
    if isinstance(content, str):
        if not content:
            return False
        message["content"] = [{"type": "text", "text": content, "cache_control": control}]
        return True
    for part in reversed(content if isinstance(content, list) else []):
        if part.get("type") == "text":
            part["cache_control"] = control
            return True
    return False


def apply_cache_control(messages: list[JsonObject], tools: list[JsonObject] | None,
                        control: dict[str, str]) -> None:
    """Breakpoints on the instructions, the last tool and the last conversation message with text."""
    instructions = next((m for m in messages if m["role"] in ("system", "developer")), None)
    if instructions is not None:
        _mark_text(instructions, control)
    if tools:
        tools[-1]["cache_control"] = control
    for message in reversed(messages):
        if message["role"] in ("user", "assistant", "tool") and _mark_text(message, control):
            return


def prompt_cache_fields(model: Model, options: StreamOptions, compat: ChatCompat) -> JsonObject:
    """``prompt_cache_key`` (the session id) and ``prompt_cache_retention`` where the host honours them."""
    retention = options.cache_retention
    long = retention == "long" and bool(compat["supportsLongCacheRetention"])
    mode = compat.get("promptCacheKeyMode") or "auto"
    keyed = mode == "enabled" or (mode == "auto" and ("api.openai.com" in model["baseUrl"] or long))
    fields: JsonObject = {}
    if retention != "none" and keyed and options.session_id:
        fields["prompt_cache_key"] = options.session_id[:64]
    if long:
        fields["prompt_cache_retention"] = "24h"
    return fields


def routing_fields(model: Model) -> JsonObject:
    """OpenRouter provider preferences and Vercel AI Gateway routing, from the model's own compat."""
    compat = model.get("compat") or {}
    fields: JsonObject = {}
    if compat.get("openRouterRouting"):
        fields["provider"] = compat["openRouterRouting"]
    gateway = {k: v for k, v in (compat.get("vercelGatewayRouting") or {}).items() if k in ("only", "order") and v}
    if gateway:
        fields["providerOptions"] = {"gateway": gateway}
    return fields


def affinity_headers(compat: ChatCompat, session_id: str | None) -> dict[str, str]:
    """Headers that keep a session on one backend (OpenRouter's, or OpenAI-style ones)."""
    if not session_id or not compat.get("sendSessionAffinityHeaders"):
        return {}
    if compat.get("sessionAffinityFormat") == "openrouter":
        return {"x-session-id": session_id}
    own = {"session_id": session_id} if compat.get("sessionAffinityFormat") == "openai" else {}
    return {**own, "x-client-request-id": session_id, "x-session-affinity": session_id}
