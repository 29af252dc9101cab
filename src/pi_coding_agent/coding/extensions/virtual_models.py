"""Virtual models that extensions register (pi's ``registerVirtualModel`` / ``unregisterVirtualModel``).

The extension's router is called as ``route(request, ctx)`` (the ``ctx`` of its handlers, for
``ctx.model_registry``); the session's ``VirtualModels`` calls it with the request alone, as an SDK
host's router. The runner remembers what its extensions registered: a reload drops those, and the
new generation registers its own again, as it does for providers. ``unregister_provider`` leaves
virtual models alone.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import TYPE_CHECKING

from pi_coding_agent.agent.awaitables import maybe_await
from pi_coding_agent.coding.extensions.registry import from_fields
from pi_coding_agent.coding.virtual_models import Route, RouteRequest, VirtualModel

if TYPE_CHECKING:
    from pi_coding_agent.coding.extensions.host import RunnerHandle


def register(runner: RunnerHandle, model: VirtualModel | Mapping[str, object]) -> None:
    definition = from_fields(VirtualModel, model, "virtual model")
    route = definition.route

    async def with_context(request: RouteRequest) -> Route | Mapping[str, object]:
        answer: Route | Mapping[str, object] = await maybe_await(route(request, runner.context))  # type: ignore[call-arg]
        return answer

    runner.rt.virtual_models.register(replace(definition, route=with_context))
    runner.virtual_models.add((definition.provider, definition.id))


def unregister(runner: RunnerHandle, provider: str, model_id: str) -> None:
    runner.rt.virtual_models.unregister(provider, model_id)
    runner.virtual_models.discard((provider, model_id))


def drop_all(runner: RunnerHandle) -> None:
    """Before a reload: what this runner's extensions registered goes."""
    for provider, model_id in list(runner.virtual_models):
        unregister(runner, provider, model_id)
