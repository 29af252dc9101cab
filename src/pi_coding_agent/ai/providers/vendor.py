"""What a vendor may add to the generic layers, and where the generic code finds it.

Most vendors need nothing beyond their catalog entry (``ai/models/data/<provider>.json``). One that
does (a live model list, a key it derives itself, an account sign-in, a credential set up in the
terminal) is a ``Vendor`` in ``ai/providers/<vendor>.py``, named in ``BUILTIN``. Keys
(``ai.auth.keys``), the model registry (``ai.models.catalog``) and the front ends ask it through
``vendor``/``vendor_for`` by provider id; none of them names a vendor.

A vendor module is imported the first time its provider is looked up, so it stays light: what it
needs only on use (an HTTP client, a sign-in flow) it imports inside its hooks.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import os
import threading
from collections.abc import Awaitable, Mapping
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from pi_coding_agent.ai.auth.oauth.flows import LoginUI
    from pi_coding_agent.ai.auth.oauth.providers import OAuthProvider
    from pi_coding_agent.ai.types import JsonObject, Model

# provider id -> module under ai/providers/ that defines its ``VENDOR``
BUILTIN: dict[str, str] = {"radius": "radius", "llama.cpp": "llama_cpp"}
REFRESH_TIMEOUT_S = 15.0  # pi's bound on the background refresh of live catalogs


class Credentials(Protocol):
    """What a vendor's hooks use of the key store (``ai.auth.keys.AuthStorage``, which asks them)."""

    def stored_credential(self, provider: str) -> JsonObject | None: ...
    async def fresh_oauth(self, provider: str) -> JsonObject | None: ...
    def api_key(self, provider: str) -> str | None: ...


class Host(Protocol):
    """What a vendor's hooks use of the model registry (``ai.models.catalog.ModelRegistry``)."""

    agent_dir: Path
    errors: list[str]

    @property
    def auth(self) -> Credentials: ...

    def providers(self) -> list[str]: ...
    def config(self, provider: str) -> JsonObject: ...
    def has_auth(self, provider: str) -> bool: ...
    def forget_models(self, provider: str) -> None: ...


class Vendor:
    """A vendor's additions; every default adds nothing, so a vendor overrides only what it has."""

    id: str = ""
    title: str = ""  # its name in messages
    # its provider is not in the built-in catalog: the registry lists it after the catalog's
    listed: bool = False
    # an account sign-in (``oauth``); a models.json provider with ``"oauth": "<id>"`` then signs in
    # (and lists models) at its own ``baseUrl``
    sign_in: bool = False
    # ``key`` alone says whether the provider is configured (after a stored key)
    decides_key: bool = False
    # after a sign-in with no model chosen, its first model stands in for a missing default
    first_model_is_default: bool = False
    # what configures it, for "No API key found" (else its API-key variables)
    env_hint: str | None = None
    # its credential is set up in the terminal only (``setup``): what ``/login`` says instead
    setup_hint: str | None = None
    # its MCP server, which a sign-in adds to the global mcp.json, authenticated by that login
    mcp_url: str | None = None

    def key(self, credential: JsonObject | None) -> str | None:
        """The key its requests send when no stored or configured key comes first; None: not configured."""
        return None

    def models(self, host: Host, provider: str) -> list[Model] | None:
        """The provider's chat models now (a live list); None: the built-in catalog's."""
        return None

    def classifiers(self, host: Host, provider: str) -> list[Model] | None:
        """The provider's classifiers now; None: the built-in ones."""
        return None

    def oauth(self, provider: str, title: str | None = None, base_url: str | None = None) -> OAuthProvider | None:
        """Its sign-in and refresh for ``provider`` (``base_url``: a models.json provider's own gateway)."""
        return None

    async def setup(self, ui: LoginUI) -> JsonObject | None:
        """The credential ``pi auth login <id>`` stores, asked in the terminal; None: an API key is asked."""
        return None

    def refresh(self, host: Host, provider: str) -> Awaitable[bool] | None:
        """Fetch and store the provider's live list (False: no credential to ask with); None: nothing to refresh."""
        return None


@cache
def vendor(provider: str) -> Vendor | None:
    """The built-in vendor object of ``provider`` (imported on first use), None for a plain catalog provider."""
    module = BUILTIN.get(provider)
    if module is None:
        return None
    found: Vendor = importlib.import_module(f"{__package__}.{module}").VENDOR
    return found


def vendor_for(provider: str, config: Mapping[str, object]) -> Vendor | None:
    """The vendor serving ``provider``: the one a models.json ``"oauth"`` names (its own gateway at
    ``baseUrl``), else its built-in one."""
    named = config.get("oauth")
    if isinstance(named, str) and config.get("baseUrl") and (own := vendor(named)) is not None and own.sign_in:
        return own
    return vendor(provider)


def builtin_spec(provider: str) -> OAuthProvider | None:
    """pi's built-in sign-in of ``provider``: the sign-in table's, else its vendor's."""
    from pi_coding_agent.ai.auth.oauth.providers import PROVIDERS

    if provider in PROVIDERS:
        return PROVIDERS[provider]
    own = vendor(provider)
    return own.oauth(provider) if own is not None else None


def listed() -> list[str]:
    """Providers that built-in vendors add to the catalog's."""
    return [p for p in BUILTIN if (v := vendor(p)) is not None and v.listed]


def sign_ins() -> list[str]:
    """Providers whose built-in vendor has an account sign-in (models.json's ``"oauth"`` values)."""
    return [p for p in BUILTIN if (v := vendor(p)) is not None and v.sign_in]


def catalog_refresh(host: Host, provider: str) -> Awaitable[bool] | None:
    """The refresh of the provider's live list, when its vendor keeps one."""
    own = vendor_for(provider, host.config(provider))
    return own.refresh(host, provider) if own is not None else None


def start_refresh(host: Host, offline: bool = False) -> threading.Thread | None:
    """Refresh every signed-in provider's live list on a daemon thread (pi's background refresh).

    None when there is nothing to refresh, or the network is off (``--offline``, ``PI_OFFLINE`` set).
    Must be called on the event loop that serves the registry: the new lists are handed to it there.
    """
    if offline or os.environ.get("PI_OFFLINE") is not None:
        return None
    targets = [p for p in host.providers() if (own := vendor_for(p, host.config(p))) is not None
               and type(own).refresh is not Vendor.refresh and host.has_auth(p)]
    if not targets:
        return None
    loop = asyncio.get_running_loop()
    thread = threading.Thread(target=_refresh_all, args=(host, targets, loop), name="pi-catalog-refresh", daemon=True)
    thread.start()
    return thread


def _refresh_all(host: Host, targets: list[str], loop: asyncio.AbstractEventLoop) -> None:
    async def one(provider: str) -> bool:
        job = catalog_refresh(host, provider)
        return False if job is None else await job

    async def run() -> list[bool | BaseException]:
        jobs = asyncio.gather(*(one(p) for p in targets), return_exceptions=True)
        return await asyncio.wait_for(jobs, REFRESH_TIMEOUT_S)

    try:
        results = asyncio.run(run())
    except Exception:  # pi ignores a failed background refresh: the stored list stays in use
        return
    for provider, done in zip(targets, results, strict=True):
        if done is True:
            with contextlib.suppress(RuntimeError):  # the session ended meanwhile
                loop.call_soon_threadsafe(host.forget_models, provider)
