"""``ctx.model_registry``: the session's models, and model calls made with the session's credentials.

An extension that asks a second model (a reviewer, a summariser) should not have to find keys or
headers itself: these calls resolve them as the session's own requests do (``--api-key``, auth.json,
models.json keys and headers, the idle timeout).
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from pi_coding_agent.agent.events import AgentMessage
from pi_coding_agent.ai.stream import AssistantStream, stream
from pi_coding_agent.ai.types import JsonObject

if TYPE_CHECKING:
    from pi_coding_agent.ai.abort import AbortSignal
    from pi_coding_agent.ai.types import AssistantMessage, Context, Model
    from pi_coding_agent.coding.runtime import SessionRuntime


class ModelRegistryView:
    """pi's ``ctx.modelRegistry`` in snake_case: ``find``, ``get_all``, ``get_available``,
    ``stream_simple`` and ``complete``, and for classifier and image models ``get_models_of_type``,
    ``get_available_of_type``, ``find_of_type``, ``classify`` and ``generate_images``."""

    def __init__(self, runtime: SessionRuntime) -> None:
        self._rt = runtime

    def find(self, provider: str, model_id: str) -> Model | None:
        return self._rt.registry.find(provider, model_id)

    def get_all(self) -> list[Model]:
        return self._rt.registry.all_models()

    def get_available(self) -> list[Model]:
        """The models with credentials, as ``get_available_models`` lists them."""
        return self._rt.available_models()

    def has_configured_auth(self, model: Model) -> bool:
        return self._rt.has_auth(model["provider"])

    def is_using_oauth(self, model: Model) -> bool:
        from pi_coding_agent.ai.auth.oauth.store import is_oauth

        return is_oauth(self._rt.auth.stored_credential(model["provider"]))

    async def get_api_key_and_headers(self, model: Model) -> JsonObject:
        """pi's ``getApiKeyAndHeaders``: ``{"ok": True, "apiKey"?, "headers"?}`` as the session's requests
        would send them, or ``{"ok": False, "error"}``."""
        try:
            await self._rt.auth.prepare(model["provider"])
            options = self._rt.request_options(model)
        except Exception as exc:
            return {"ok": False, "error": str(exc)}
        found: JsonObject = {"ok": True}
        if options.api_key is not None:
            found["apiKey"] = options.api_key
        if options.headers:
            found["headers"] = dict(options.headers)
        return found

    async def get_api_key_for_provider(self, provider: str) -> str | None:
        await self._rt.auth.prepare(provider)
        models = self._rt.registry.provider_models(provider)
        return self._rt.api_key_for(models[0]) if models else self._rt.registry.configured_api_key(provider)

    def stream_simple(self, model: Model, context: Context, *, reasoning: str | None = None,
                      max_tokens: int | None = None, temperature: float | None = None,
                      signal: AbortSignal | None = None) -> AssistantStream:
        """Stream one request (iterate it for events; ``await .result()`` for the final message)."""
        options = replace(self._rt.request_options(model), thinking_level=reasoning or "off",
                          max_tokens=max_tokens, temperature=temperature, signal=signal)
        return stream(model, context, options)

    async def complete(self, model: Model, context: Context, *, reasoning: str | None = None,
                       max_tokens: int | None = None, temperature: float | None = None,
                       signal: AbortSignal | None = None) -> AssistantMessage:
        """The final assistant message of one request (an error is a message with ``stopReason: "error"``).
        The provider's credential is made ready first (a due sign-in refreshed, a provider's own key
        resolved); ``stream_simple`` uses what the session's last request made ready. A virtual model
        is routed first (a ``direct`` request), the output budget capped to the routed model's."""
        import contextlib

        from pi_coding_agent.ai.auth.oauth.http import OAuthError
        from pi_coding_agent.ai.models.virtual import is_virtual

        if is_virtual(model):
            messages: list[AgentMessage] = [*context["messages"]]
            route = await self._rt.virtual_models.resolve(model, messages, "direct", reasoning or "off", signal)
            model, limit = route.model, route.model.get("maxTokens", 0)
            reasoning = None if route.thinking_level == "off" else route.thinking_level
            max_tokens = min(max_tokens, limit) if max_tokens and limit > 0 else max_tokens

        with contextlib.suppress(OAuthError):  # a failed refresh: the request itself reports it
            await self._rt.auth.prepare(model["provider"])
        return await self.stream_simple(model, context, reasoning=reasoning, max_tokens=max_tokens,
                                        temperature=temperature, signal=signal).result()

    def get_models_of_type(self, kind: str, provider: str | None = None) -> list[Model]:
        """Every known model of a type: ``"chat"``, ``"classifier"`` or ``"image"``."""
        return self._rt.registry.models_of_type(kind, provider)

    def get_available_of_type(self, kind: str, provider: str | None = None) -> list[Model]:
        if kind == "chat":
            return [m for m in self._rt.available_models() if provider is None or m["provider"] == provider]
        return self._rt.registry.available_of_type(kind, provider, self._rt.has_auth)

    def find_of_type(self, kind: str, provider: str, model_id: str) -> Model | None:
        return self._rt.registry.find_of_type(kind, provider, model_id)

    async def classify(self, model: Model, context: JsonObject, *,
                       signal: AbortSignal | None = None) -> JsonObject:
        """Answer ``context["questions"]`` about ``context["state"]`` with a classifier model; a failure
        is a result with ``stopReason: "error"``, never an exception."""
        from pi_coding_agent.coding.codemode.nonchat_calls import run_nonchat_model

        return await run_nonchat_model(self._rt, "classifier", dict(model), context, signal)

    async def generate_images(self, model: Model, context: JsonObject, *,
                              signal: AbortSignal | None = None) -> JsonObject:
        """Images from ``context["input"]`` blocks with an image model (failures are results)."""
        from pi_coding_agent.coding.codemode.nonchat_calls import run_nonchat_model

        return await run_nonchat_model(self._rt, "image", dict(model), context, signal)
