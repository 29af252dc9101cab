"""Virtual models: one selectable model whose router picks the physical model of each request.

``VirtualModels`` keeps the routers beside the catalog entries it lists in the model registry
(``ai/models/virtual.py``); extensions (``pi.register_virtual_model``) and SDK hosts
(``session.register_virtual_model``) add to it. ``resolve`` asks a router for one request and checks
its answer as pi does: a physical model of the catalog whose provider has credentials, the thinking
level clamped to it. Why the request is made (``reason``) and the router's state on the session
branch are the session's to know (``services/virtual_routing.py``).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from pi_coding_agent.ai.models.virtual import is_virtual, virtual_entry
from pi_coding_agent.ai.thinking import clamp_thinking_level
from pi_coding_agent.ai.types import AssistantMessage, JsonObject, Message, Model

if TYPE_CHECKING:
    from pi_coding_agent.agent.events import AgentMessage
    from pi_coding_agent.ai.abort import AbortSignal
    from pi_coding_agent.ai.models.catalog import ModelRegistry

RouteReason = Literal["user", "continuation", "retry", "direct"]


@dataclass
class Routed:
    """A physical model and level that answered (``previous``) or failed (``failed``, with its message)."""

    model: Model
    thinking_level: str | None
    message: AssistantMessage | None = None


@dataclass
class RouteRequest:
    """What a router is asked for one request (pi's ``ModelRouteRequest``)."""

    model: Model  # the selected virtual model
    thinking_level: str  # the selected level
    reason: RouteReason
    messages: list[Message]  # the conversation of this request, system messages included
    signal: AbortSignal | None = None
    previous: Routed | None = None  # the latest successful response in ``messages``
    failed: Routed | None = None  # for ``retry``: the failed request, no longer in ``messages``
    state: object = None  # the state the router last returned on this branch (None for ``direct``)


@dataclass
class Route:
    """A router's answer: the physical model and level of the request, and optionally new state."""

    model: Model
    thinking_level: str
    state: object = None


Router = Callable[[RouteRequest], "Route | Mapping[str, Any] | Awaitable[Route | Mapping[str, Any]]"]


@dataclass
class VirtualModel:
    """A virtual model (pi's ``VirtualModelDefinition``). ``route(request)`` returns a ``Route`` or a
    dict with ``model``, ``thinking_level`` and optionally ``state``, directly or awaited."""

    provider: str
    id: str
    name: str
    route: Router
    thinking_levels: Sequence[str] | None = None  # offered for selection; default ["off"]
    context_window: int | None = None  # shown before the first response; unset: unknown
    max_tokens: int | None = None
    input: Sequence[str] | None = None  # default text and images

    def entry(self) -> Model:
        return virtual_entry(self.provider, self.id, self.name, self.thinking_levels, self.context_window,
                             self.max_tokens, self.input)


class VirtualModels:
    """The routers of the virtual models the registry lists."""

    def __init__(self, registry: ModelRegistry, has_auth: Callable[[str], bool]) -> None:
        self._registry = registry
        self._has_auth = has_auth
        self._routers: dict[tuple[str, str], Router] = {}

    def register(self, definition: VirtualModel) -> None:
        """List the model and keep its router; the same provider and id again replaces it.
        ValueError (nothing changed) when it is incomplete or would shadow a physical model."""
        if not callable(definition.route):
            raise ValueError(f"Virtual model {definition.provider}/{definition.id} needs a route function.")
        self._registry.register_virtual_model(definition.entry())
        self._routers[(definition.provider, definition.id)] = definition.route

    def unregister(self, provider: str, model_id: str) -> None:
        self._routers.pop((provider, model_id), None)
        self._registry.unregister_virtual_model(provider, model_id)

    async def resolve(self, model: Model, transcript: list[AgentMessage], reason: RouteReason, thinking_level: str,
                      signal: AbortSignal | None = None, failed: AssistantMessage | None = None,
                      state: object = None) -> Route:
        """The routed model and level of one request over ``transcript`` (the agent's messages); raises
        (with pi's wording) when routing fails."""
        from pi_coding_agent.agent.awaitables import maybe_await
        from pi_coding_agent.coding.session.conversion import convert_to_llm

        messages = convert_to_llm(transcript)

        name = f"Virtual model {model['provider']}/{model['id']}"
        router = self._routers.get((model["provider"], model["id"]))
        if router is None:
            raise RuntimeError(f"{name} is not registered.")
        latest = _latest_response(messages)
        previous = latest and self._physical(latest["provider"], latest["model"])
        failed_model = failed and self._physical(failed["provider"], failed["model"])
        request = RouteRequest(
            model, thinking_level, reason, messages, signal,
            previous=Routed(previous, latest.get("thinkingLevel")) if previous and latest else None,
            failed=Routed(failed_model, failed.get("thinkingLevel"), failed) if failed_model and failed else None,
            state=state)
        answer = _as_route(await maybe_await(router(request)))
        target = self._physical(answer.model["provider"], answer.model["id"])
        routed = f"{name} routed to {answer.model['provider']}/{answer.model['id']}"
        if target is None:
            raise RuntimeError(f"{routed}, which is not a physical model.")
        if not self._has_auth(target["provider"]):
            raise RuntimeError(f"{routed}, which has no credentials.")
        return Route(target, clamp_thinking_level(target, answer.thinking_level), answer.state)

    def _physical(self, provider: str, model_id: str) -> Model | None:
        found = self._registry.find(provider, model_id)
        return found if found is not None and not is_virtual(found) else None


def branch_selection(branch: list[JsonObject], registry: ModelRegistry) -> tuple[str, str] | None:
    """The selection a branch records when a virtual model holds it (pi's rule): replies name the
    physical models it routed to, so after the latest reply the ``model_change`` before it still
    holds if it names a registered virtual model. None: the usual rule applies."""
    for index in range(len(branch) - 1, -1, -1):
        entry = branch[index]
        if entry.get("type") == "model_change":
            return None
        message = entry.get("message") if entry.get("type") == "message" else None
        if isinstance(message, dict) and message.get("role") == "assistant" and not is_virtual(message):  # type: ignore[arg-type]
            change = next((e for e in reversed(branch[:index]) if e.get("type") == "model_change"), None)
            model = change and registry.find(str(change.get("provider")), str(change.get("modelId")))
            return (model["provider"], model["id"]) if model and is_virtual(model) else None
    return None


def _latest_response(messages: list[Message]) -> AssistantMessage | None:
    """The latest successful response: failed and aborted requests (failed routing too) are skipped."""
    for message in reversed(messages):
        if message["role"] == "assistant" and message.get("stopReason") not in ("error", "aborted"):
            return message
    return None


def _as_route(answer: Route | Mapping[str, Any]) -> Route:
    if isinstance(answer, Route):
        return answer
    if not isinstance(answer, Mapping) or not isinstance(answer.get("model"), Mapping):
        raise TypeError("route() must return a Route or a dict with a model")
    return Route(answer["model"], str(answer.get("thinking_level") or "off"), answer.get("state"))
