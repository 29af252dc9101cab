"""The built-in ``llama.cpp`` provider: a llama.cpp router server whose model list is live.

Like pi, the provider is configured by ``LLAMA_BASE_URL`` (or a stored ``llama.cpp`` credential
whose ``env`` holds it), with ``LLAMA_API_KEY`` (or the stored key) as bearer token;
``http://127.0.0.1:9931`` is what ``pi auth login llama.cpp`` proposes. The router client
(``llama_router``) loads only when the provider is configured.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

from pi_coding_agent.ai.providers.vendor import Host, Vendor

if TYPE_CHECKING:
    from pi_coding_agent.ai.auth.oauth.flows import LoginUI
    from pi_coding_agent.ai.providers.llama_router import LlamaClient
    from pi_coding_agent.ai.types import JsonObject, Model

PROVIDER_ID = "llama.cpp"  # the router module's too: it loads only once the provider is configured
SETUP_HINT = f"Configure llama.cpp with `pi auth login {PROVIDER_ID}` or LLAMA_BASE_URL"


def configured_url(credential: Mapping[str, object] | None) -> str | None:
    """The router URL when the provider is configured (a stored credential or ``LLAMA_BASE_URL``)."""
    if credential is None and not os.environ.get("LLAMA_BASE_URL", "").strip():
        return None  # not configured: decided without importing the router client
    from pi_coding_agent.ai.providers.llama_router import server_url

    return server_url(credential, os.environ)


def client(credential: Mapping[str, object] | None) -> LlamaClient | None:
    """A client for the configured router, or None when it is not configured."""
    if (url := configured_url(credential)) is None:
        return None
    from pi_coding_agent.ai.providers.llama_router import LlamaClient, api_key

    return LlamaClient(url, api_key(credential, os.environ))


class LlamaCpp(Vendor):
    """A router's live list (chat models and classifiers), its key from the router's configuration."""

    id = PROVIDER_ID
    listed = True
    decides_key = True
    env_hint = "LLAMA_BASE_URL (and LLAMA_API_KEY when the router has one)"
    setup_hint = SETUP_HINT

    def key(self, credential: JsonObject | None) -> str | None:
        """The router's key (``local`` when it has none), once a router is configured."""
        if configured_url(credential) is None:
            return None
        from pi_coding_agent.ai.providers.llama_router import api_key

        return api_key(credential, os.environ)

    def models(self, host: Host, provider: str) -> list[Model]:
        """The router's live list, read once per registry (``ModelRegistry.set_models`` replaces it)."""
        from pi_coding_agent.ai.providers import llama_router

        return _read(host, llama_router.router_models)

    def classifiers(self, host: Host, provider: str) -> list[Model]:
        """The router's models as classifiers, read when a script first asks for classifiers."""
        from pi_coding_agent.ai.providers import llama_router

        return _read(host, llama_router.router_classifiers)

    async def setup(self, ui: LoginUI) -> JsonObject:
        """The router's URL (kept in the credential's ``env``, as pi does) and an optional key, checked live."""
        import asyncio

        from pi_coding_agent.ai.providers.llama_router import (
            DEFAULT_SERVER_URL,
            LlamaClient,
            LlamaError,
            normalize_server_url,
        )

        default = os.environ.get("LLAMA_BASE_URL") or DEFAULT_SERVER_URL
        try:
            url = normalize_server_url((await ui.prompt("text", "llama.cpp server URL",
                                                        placeholder=default)).strip() or default)
            key = (await ui.prompt("secret", "API key (optional)")).strip()
            await asyncio.to_thread(LlamaClient(url, key or None).list)
        except LlamaError as exc:
            raise OSError(str(exc)) from None
        credential: JsonObject = {"type": "api_key"}
        if key:
            credential["key"] = key
        credential["env"] = {"LLAMA_BASE_URL": url}
        return credential


def _read(host: Host, read: Callable[[LlamaClient, float], list[Model]]) -> list[Model]:
    """``read(client, timeout)`` of the configured router; nothing (and an error noted) when it fails."""
    from pi_coding_agent.ai.providers.llama_router import LIST_TIMEOUT_S, LlamaError

    router = client(host.auth.stored_credential(PROVIDER_ID))
    if router is None:
        return []
    try:
        return read(router, LIST_TIMEOUT_S)
    except LlamaError as exc:
        host.errors.append(f"{PROVIDER_ID}: {exc}")
        return []


VENDOR = LlamaCpp()
