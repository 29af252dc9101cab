"""The model refresh of providers extensions register (pi's ``refreshModels``), with the snapshot pi
keeps for them in ``models-store.json`` (``ai/models/store.py``).

Each refresh runs in pi's phases: without network (once every extension is set up, and at once for
a provider registered later), then with it (in RPC mode in the background, after a ``/login``).
Every phase hands the provider its stored snapshot (``context.stored``) and ``context.publish``,
which persists a new snapshot (or deletes it) only while the refresh is still current: the provider
was not registered again or removed meanwhile, and the 15 seconds have not run out.

Two contracts, as in pi: ``refresh_models`` returns the list that replaces the registered models
(and persists what it chooses through ``publish``); a ``Provider``'s ``fetch_models`` (pi-ai's
``createProvider({fetchModels})``) only fetches: its last list is restored from the snapshot before
the network is asked, and each fetched list replaces it in the store and over the baseline models.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pi_coding_agent.agent.awaitables import maybe_await
from pi_coding_agent.ai.types import JsonObject

if TYPE_CHECKING:
    from pi_coding_agent.ai.abort import AbortSignal
    from pi_coding_agent.coding.extensions.host import RunnerHandle
    from pi_coding_agent.coding.extensions.registry import Registration

Credential = JsonObject
Entry = dict[str, Any]  # a models-store.json entry: {"models": [...], "checkedAt"?, "lastModified"?, "etag"?}
REFRESH_TIMEOUT_S = 15.0  # pi's bound on its background model refresh


class _Unset:
    """``publish()`` without ``persist``: the store is left alone (``persist=None`` deletes)."""


UNSET = _Unset()


@dataclass
class ModelRefresh:
    """What ``refresh_models(context)`` and ``fetch_models(context)`` receive: the credential (the
    stored one without network; the resolved one, ``{"type": "api_key", "key"}`` or a fresh OAuth
    credential, with it), whether the network may be used, a signal that fires on timeout or
    shutdown, the provider's base URL, and its snapshot from models-store.json (None without one)."""

    credential: Credential | None
    allow_network: bool
    signal: AbortSignal
    base_url: str | None
    stored: Entry | None = None
    _publish: Callable[[Entry | _Unset | None, Callable[[], None] | None], Awaitable[bool]] | None = field(
        default=None, repr=False)

    async def publish(self, *, persist: Entry | _Unset | None = UNSET, update: Callable[[], None] | None = None) -> bool:
        """pi's ``context.publish({persist, update})``: store ``persist`` as the provider's snapshot
        (None deletes it), then run ``update``; False (nothing done) when this refresh is superseded."""
        if self._publish is None:
            return False
        return await self._publish(persist, update)


ModelList = list[JsonObject] | None  # model definitions in models.json's shape; None keeps the current ones
RefreshModels = Callable[[ModelRefresh], Awaitable[ModelList] | ModelList]
FetchModels = Callable[[ModelRefresh], Awaitable[list[JsonObject]] | list[JsonObject]]


async def refresh_all(runner: RunnerHandle, allow_network: bool) -> None:
    """Every refreshing provider, concurrently, within pi's 15 s (a late one keeps its list)."""
    names = [n for n, r in runner.providers.items() if r.refreshes]
    if names:
        await asyncio.gather(*(refresh_one(runner, n, allow_network) for n in names))


async def refresh_one(runner: RunnerHandle, name: str, allow_network: bool) -> None:
    """One phase of one provider's refresh. A raising or timed-out refresh is reported on stderr and
    keeps the list there was."""
    from pi_coding_agent.ai.abort import AbortSignal
    from pi_coding_agent.ai.models import store as models_store

    registration = runner.providers.get(name)
    if registration is None or not registration.refreshes:
        return
    credential = await _credential(runner, name, allow_network)
    if allow_network and credential is None:
        return  # pi only asks the network with a resolved credential
    signal = AbortSignal()
    agent_dir = runner.rt.registry.agent_dir

    def current() -> bool:
        return not signal.aborted and runner.providers.get(name) is registration

    async def publish(persist: Entry | _Unset | None, update: Callable[[], None] | None) -> bool:
        if not current():
            return False
        if not isinstance(persist, _Unset):
            await models_store.write_entry(agent_dir, name, None if persist is None else _entry(persist))
        if not current():
            return False
        if update is not None:
            update()
        return True

    context = ModelRefresh(credential, allow_network, signal, registration.config.get("baseUrl"),
                           models_store.read_entry(agent_dir, name), publish)
    try:
        await asyncio.wait_for(_phase(runner, name, registration, context), REFRESH_TIMEOUT_S)
    except BaseException as exc:  # timed out, raised, or the session is shutting down (cancelled)
        signal.abort()
        if not isinstance(exc, Exception):
            raise
        reason = "timed out" if isinstance(exc, TimeoutError) else str(exc) or type(exc).__name__
        print(f"Extension provider {name}: model refresh failed: {reason}", file=sys.stderr)


def _entry(persist: object) -> Entry:
    """A copy of what the extension persists, checked to be a snapshot pi can read back."""
    import orjson

    if not isinstance(persist, dict) or not isinstance(persist.get("models"), list):
        raise ValueError('persist must be a dict with a "models" list, or None')
    try:
        copy: Entry = orjson.loads(orjson.dumps(persist))
    except TypeError as exc:
        raise ValueError(f"persist is not JSON: {exc}") from None
    return copy


async def _phase(runner: RunnerHandle, name: str, registration: Registration, context: ModelRefresh) -> None:
    if registration.fetch_models is not None:
        await _fetch_phase(runner, name, registration, context)
        return
    assert registration.refresh_models is not None
    models: ModelList = await maybe_await(registration.refresh_models(context))
    if models is not None:
        await context.publish(update=lambda: _install(runner, name, registration, list(models)))


async def _fetch_phase(runner: RunnerHandle, name: str, registration: Registration, context: ModelRefresh) -> None:
    """pi-ai's ``createProvider`` refresh: the snapshot's models of this provider first, then (with
    network) the fetched list, persisted with ``checkedAt`` and laid over the baseline models."""
    from pi_coding_agent.ai.models.models_json import model_from_definition
    from pi_coding_agent.ai.models.store import KNOWN_TYPES
    from pi_coding_agent.ai.types import now_ms

    def install(dynamic: list[JsonObject]) -> None:
        baseline = list(registration.config.get("models") or [])
        chat = {m["id"]: m for m in dynamic if m.get("type", "chat") == "chat" and isinstance(m.get("id"), str)}
        merged = [chat.pop(m.get("id"), m) for m in baseline] + list(chat.values())
        _install(runner, name, registration, merged)

    if context.stored is not None:
        restored = [m for m in context.stored["models"] if m.get("provider") == name]
        if not await context.publish(update=lambda: install(restored)):
            return
    if not context.allow_network or context.signal.aborted:
        return
    assert registration.fetch_models is not None
    fetched = await maybe_await(registration.fetch_models(context))
    if context.signal.aborted:
        return
    refreshed = [m for m in fetched if isinstance(m, dict) and m.get("type", "chat") in KNOWN_TYPES]
    full = [model_from_definition(name, m, registration.config, None) if m.get("type", "chat") == "chat" else m
            for m in refreshed]
    await context.publish(persist={"models": full, "checkedAt": now_ms()}, update=lambda: install(refreshed))


def _install(runner: RunnerHandle, name: str, registration: Registration, models: list[JsonObject]) -> None:
    try:
        runner.rt.registry.register_provider(name, {**registration.config, "models": models})
    except ValueError as exc:
        print(f"Extension provider {name}: refreshed models rejected: {exc}", file=sys.stderr)


async def _credential(runner: RunnerHandle, name: str, resolved: bool) -> Credential | None:
    """The stored credential, or (``resolved``) the one a request would use."""
    auth = runner.rt.auth
    stored = auth.stored_credential(name)
    if not resolved:
        return stored
    if stored is not None and stored.get("type") == "oauth":
        from pi_coding_agent.ai.auth.oauth.http import OAuthError

        try:
            return await auth.fresh_oauth(name)
        except OAuthError:
            return None
    await auth.prepare(name)
    key = auth.api_key(name)
    if not key:
        return None
    own = auth.resolution(name)  # a provider's own resolution hands its env on too, as in pi
    return {"type": "api_key", "key": key, "env": dict(own.env)} if own is not None and own.env else {
        "type": "api_key", "key": key}
