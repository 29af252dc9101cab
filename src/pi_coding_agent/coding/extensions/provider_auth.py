"""API-key authentication an extension ``Provider`` carries itself (pi-ai's ``auth.apiKey``).

``Provider(auth=ProviderAuth(api_key=ApiKeyAuth(name, resolve, login=, check=)))``: ``resolve``
turns the stored credential (or the environment) into the key a request sends, ``check`` says
without side effects whether the provider is configured, ``login`` asks the user for what it needs
and returns the credential stored in auth.json. ``ExtensionKeySource`` is that trio as the
``KeySource`` ``AuthStorage`` consults (``ai/auth/keys.py``): before each request (``prepare``), for the
available models, and in ``/login``. What the functions raise is reported on stderr (never their
values) and counts as not configured; a failing ``login`` fails the sign-in with its message.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pi_coding_agent.agent.awaitables import maybe_await
from pi_coding_agent.ai.auth.keys import ResolvedKey
from pi_coding_agent.ai.types import JsonObject
from pi_coding_agent.coding.extensions.registry import from_fields

if TYPE_CHECKING:
    from pi_coding_agent.ai.abort import AbortSignal
    from pi_coding_agent.ai.auth.oauth.flows import LoginUI

Credential = JsonObject


class AuthContext:
    """pi-ai's ``AuthContext``: the environment as key resolution sees it (blank values are unset)."""

    async def env(self, name: str) -> str | None:
        value = os.environ.get(name)
        return value if value is not None and value.strip() else None

    async def file_exists(self, path: str) -> bool:
        return os.path.exists(os.path.expanduser(path))


@dataclass
class AuthInput:
    """What ``resolve`` and ``check`` receive: ``ctx``, the stored ``api_key`` credential (None when
    nothing is stored) and a ``signal``."""

    ctx: AuthContext
    credential: Credential | None
    signal: AbortSignal


class AuthInteraction:
    """What ``login`` receives (pi-ai's ``ProviderAuthInteraction``) over the session's sign-in dialogs:
    ``await prompt({"type": "secret"|"text"|"manual_code"|"select", "message", "placeholder"?,
    "options"?: [{"id", "label"}]})`` returns the text (a select returns the id), ``notify(event)``
    shows an ``info``/``progress``/``auth_url``/``device_code`` event, ``signal`` ends with the sign-in."""

    def __init__(self, ui: LoginUI, signal: AbortSignal) -> None:
        self._ui = ui
        self.signal = signal

    async def prompt(self, prompt: Mapping[str, Any]) -> str:
        kind = str(prompt.get("type", "text"))
        options = [(str(o["id"]), str(o.get("label", o["id"]))) for o in prompt.get("options") or []]
        return await self._ui.prompt(kind, str(prompt.get("message", "")), placeholder=prompt.get("placeholder"),
                                     options=options or None)

    def notify(self, event: Mapping[str, object]) -> None:
        self._ui.notify(dict(event))


Resolve = Callable[[AuthInput], Awaitable[Mapping[str, object] | None]]


@dataclass
class ApiKeyAuth:
    """pi-ai's ``ApiKeyAuth``. ``resolve(input)`` returns ``{"auth": {"apiKey", "headers"?, "baseUrl"?}, "env"?,
    "source"?}`` or None (not configured); ``check(input)`` returns ``{"type": "api_key", "source"?}``
    or None; ``login(interaction)`` returns ``{"type": "api_key", "key"?, "env"?}``."""

    name: str
    resolve: Resolve
    login: Callable[[AuthInteraction], Awaitable[Mapping[str, object]]] | None = None
    check: Resolve | None = None


@dataclass
class ProviderAuth:
    """pi-ai's ``ProviderAuth`` (its ``oauth`` stays ``Provider.oauth``, pi's extension sign-in shape)."""

    api_key: ApiKeyAuth | Mapping[str, object] | None = None


def as_api_key_auth(value: ProviderAuth | Mapping[str, object] | None) -> ApiKeyAuth | None:
    """The ``ApiKeyAuth`` of a ``Provider.auth`` (a ``ProviderAuth`` or a dict of its fields); ValueError
    naming what is wrong."""
    if value is None:
        return None
    raw = from_fields(ProviderAuth, value, "auth").api_key
    auth = None if raw is None else from_fields(ApiKeyAuth, raw, "auth.api_key")
    if auth is not None and (not isinstance(auth.name, str) or not callable(auth.resolve)):
        raise ValueError("auth.api_key needs a name and a resolve function")
    return auth


class ExtensionKeySource:
    """An ``ApiKeyAuth`` as ``AuthStorage``'s ``KeySource``, composed as pi composes it over a
    registered ``Provider``: with a stored key and no ``check``, the key makes it configured."""

    def __init__(self, provider: str, auth: ApiKeyAuth) -> None:
        self.provider = provider
        self.auth = auth
        self.can_login = auth.login is not None

    async def _call(self, step: str, function: Resolve, credential: Credential | None) -> Mapping[str, object] | None:
        from pi_coding_agent.ai.abort import AbortSignal

        try:
            result: object = await maybe_await(function(AuthInput(AuthContext(), credential, AbortSignal())))
        except Exception as exc:
            print(f"Extension provider {self.provider}: API key {step} failed: {type(exc).__name__}", file=sys.stderr)
            return None
        return result if isinstance(result, Mapping) else None

    async def resolve(self, credential: Credential | None) -> ResolvedKey | None:
        result = await self._call("resolve", self.auth.resolve, _api_key(credential))
        auth = result.get("auth") if result is not None else None
        if not isinstance(auth, Mapping):
            return None
        key, base_url = auth.get("apiKey"), auth.get("baseUrl")
        return ResolvedKey(key if isinstance(key, str) else "", _strings(auth.get("headers")),
                           _strings(result.get("env") if result is not None else None),
                           base_url if isinstance(base_url, str) and base_url else None)

    async def check(self, credential: Credential | None) -> bool:
        credential = _api_key(credential)
        if self.auth.check is not None:
            return await self._call("check", self.auth.check, credential) is not None
        if credential is not None and credential.get("key"):
            return True
        return await self.resolve(credential) is not None

    async def login(self, ui: LoginUI) -> Credential:
        """The extension's ``login`` over ``ui``; its credential checked and typed ``api_key``."""
        from pi_coding_agent.ai.abort import AbortSignal
        from pi_coding_agent.ai.auth.oauth.http import OAuthError
        from pi_coding_agent.coding.commands.login import LoginCancelled

        assert self.auth.login is not None
        signal = AbortSignal()
        try:
            value: object = await maybe_await(self.auth.login(AuthInteraction(ui, signal)))
        except (LoginCancelled, OAuthError):
            raise
        except Exception as exc:
            raise OAuthError(str(exc) or type(exc).__name__) from None
        finally:
            signal.abort()
        if not isinstance(value, Mapping) or value.get("type", "api_key") != "api_key":
            raise OAuthError('login must return a dict with "type": "api_key"')
        return {**value, "type": "api_key"}


def _api_key(credential: Credential | None) -> Credential | None:
    """Only an ``api_key`` credential reaches ``resolve``/``check``, as in pi."""
    return credential if credential is not None and credential.get("type") == "api_key" else None


def _strings(value: object) -> dict[str, str]:
    return {str(k): v for k, v in value.items() if isinstance(v, str)} if isinstance(value, Mapping) else {}
