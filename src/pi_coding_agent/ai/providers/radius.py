"""Radius gateways' live model catalogs, kept in ``<agentDir>/models-store.json`` as pi keeps them.

A Radius gateway lists the models an account may use at ``GET <gateway>/v1/config`` (an organisation
can switch models off), so once a list is known it replaces the shipped catalog instead of adding to
it; the shipped one only covers the public gateway until then. pi stores each provider's last list
under the provider's id as ``{"models": [...], "checkedAt": <ms>}`` (two-space JSON, the auth.json
lock convention), so either implementation reads what the other wrote.

Reading the file is cheap and happens when the registry builds a Radius provider. The network
refresh only runs where pi runs it in this headless program (in the background after an RPC session
started, never with ``--offline`` or ``PI_OFFLINE``), on a thread of its own, so the command loop
never waits for the gateway; the registry drops its cached list when a new one was stored.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pi_coding_agent.ai.providers.vendor import Host, Vendor
from pi_coding_agent.ai.types import JsonObject, Model, now_ms

if TYPE_CHECKING:
    from pi_coding_agent.ai.auth.oauth.providers import OAuthProvider

PROVIDER_ID = "radius"
DEFAULT_GATEWAY = "https://radius.pi.dev"
MCP_URL = f"{DEFAULT_GATEWAY}/mcp"
# fields a gateway model must have, with their JSON types (pi drops entries that lack one)
_REQUIRED: dict[str, type | tuple[type, ...]] = {
    "id": str, "name": str, "reasoning": bool, "input": list, "cost": dict,
    "contextWindow": (int, float), "maxTokens": (int, float)}


def stored_models(agent_dir: Path, provider: str) -> list[Model] | None:
    """The provider's last stored list (chat models only), or None when the store has no entry.

    A missing, unreadable or broken file counts as no entry: the next refresh writes a good one.
    """
    from pi_coding_agent.ai.models.store import read_entry

    entry = read_entry(agent_dir, provider)
    if entry is None:
        return None
    models: list[Model] = [m for m in entry["models"] if _is_gateway_model(m) and m.get("provider") == provider
                           and m.get("type", "chat") == "chat"]
    return models


def catalog(agent_dir: Path, provider: str, gateway: str, credential: JsonObject | None,
            shipped: list[Model]) -> list[Model]:
    """The models a Radius provider lists now: the stored gateway list, else one an older pi kept in
    the credential (``gatewayConfig``), else ``shipped`` (pi's baseline, public gateway only)."""
    stored = stored_models(agent_dir, provider)
    if stored is not None:
        return stored
    legacy = legacy_models(provider, credential)
    if legacy:
        return legacy
    return [{**m, "provider": provider} for m in shipped] if gateway == DEFAULT_GATEWAY else []


def legacy_models(provider: str, credential: JsonObject | None) -> list[Model]:
    """The catalog pi kept inside a Radius OAuth credential before models-store.json existed."""
    if not credential or credential.get("type") != "oauth":
        return []
    config = sanitize(credential.get("gatewayConfig"))
    return models_from_config(provider, config) if config is not None else []


def _is_gateway_model(value: object) -> bool:
    return isinstance(value, dict) and all(
        isinstance(value.get(k), t) and (t is bool or not isinstance(value.get(k), bool))
        for k, t in _REQUIRED.items())


def sanitize(config: object) -> JsonObject | None:
    """A gateway's ``/v1/config`` answer as pi accepts it: ``baseUrl`` and the well-formed models."""
    if not isinstance(config, dict) or not isinstance(config.get("baseUrl"), str):
        return None
    if not isinstance(config.get("models"), list):
        return None
    return {"baseUrl": config["baseUrl"], "models": [dict(m) for m in config["models"] if _is_gateway_model(m)]}


def models_from_config(provider: str, config: dict[str, Any]) -> list[Model]:
    """Gateway models as the provider's models (pi's field order: the gateway's, then api/provider/baseUrl)."""
    return [{**m, "api": "pi-messages", "provider": provider, "baseUrl": config["baseUrl"]}  # type: ignore[typeddict-item]
            for m in config["models"]]


async def fetch_models(gateway: str, provider: str, token: str | None) -> list[Model]:
    """``GET <gateway>/v1/config`` with the account's bearer token. Raises ``OAuthError`` (no token in it)."""
    from pi_coding_agent.ai.auth.oauth.http import OAuthError, call

    reply = await call("GET", f"{gateway}/v1/config",
                       headers={"authorization": f"Bearer {token}"} if token else None)
    if not reply.ok:
        raise OAuthError(f"Could not load Radius config from {gateway}: {reply.status}")
    config = sanitize(reply.body)
    if config is None:
        raise OAuthError(f"Invalid Radius config from {gateway}")
    return models_from_config(provider, config)


async def store(agent_dir: Path, provider: str, models: list[Model]) -> None:
    """Replace the provider's entry in models-store.json under pi's lock (other entries are kept)."""
    from pi_coding_agent.ai.models.store import write_entry

    await write_entry(agent_dir, provider, {"models": models, "checkedAt": now_ms()})


async def refresh(host: Host, provider: str, gateway: str) -> bool:
    """Fetch and store one provider's list; False when it has no credential to ask with.

    An expired OAuth credential is refreshed first (under the auth.json lock), as pi does.
    """
    auth = host.auth
    credential = auth.stored_credential(provider)
    if stored_models(host.agent_dir, provider) is None and (legacy := legacy_models(provider, credential)):
        await store(host.agent_dir, provider, legacy)
    if credential is not None and credential.get("type") == "oauth":
        fresh = await auth.fresh_oauth(provider)
        access = fresh.get("access") if fresh else None
        token = access if isinstance(access, str) else None
    else:
        token = auth.api_key(provider)
    if not token:
        return False
    await store(host.agent_dir, provider, await fetch_models(gateway, provider, token))
    return True


def gateway_url(base_url: str) -> str:
    """The gateway a models.json ``baseUrl`` names, as pi reads it: without a trailing ``/v1``,
    ``https://`` when it has no scheme."""
    gateway = re.sub(r"/v1/?$", "", base_url)
    return (gateway if re.match(r"https?://", gateway, re.IGNORECASE) else f"https://{gateway}").rstrip("/")


def gateway_of(provider: str, config: JsonObject) -> str:
    """The gateway whose catalog and sign-in ``provider`` uses: its models.json ``baseUrl`` when it
    signs in with ``"oauth": "radius"``, else the built-in provider's."""
    base_url = config.get("baseUrl") if config.get("oauth") == PROVIDER_ID else None
    return gateway_url(base_url) if isinstance(base_url, str) and base_url else DEFAULT_GATEWAY


class Radius(Vendor):
    """A gateway's account sign-in and the live catalog it serves to that account."""

    id = PROVIDER_ID
    title = "Radius"
    sign_in = True
    mcp_url = MCP_URL
    first_model_is_default = True

    def models(self, host: Host, provider: str) -> list[Model]:
        from pi_coding_agent.ai.models.catalog import builtin_models

        return catalog(host.agent_dir, provider, gateway_of(provider, host.config(provider)),
                       host.auth.stored_credential(provider), builtin_models(PROVIDER_ID))

    def oauth(self, provider: str, title: str | None = None, base_url: str | None = None) -> OAuthProvider:
        from pi_coding_agent.ai.providers import radius_login

        gateway = gateway_url(base_url) if base_url else DEFAULT_GATEWAY
        return radius_login.spec(provider, title or self.title, gateway)

    def refresh(self, host: Host, provider: str) -> Awaitable[bool]:
        return refresh(host, provider, gateway_of(provider, host.config(provider)))


VENDOR = Radius()
