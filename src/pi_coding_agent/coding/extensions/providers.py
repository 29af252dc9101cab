"""Providers that extensions register (pi's ``registerProvider``), in both of pi's forms.

``pi.register_provider(name, config, stream=, oauth=, refresh_models=)`` is pi's legacy form: a
models.json provider entry plus the behaviour pi keeps beside it as functions. ``pi.register_provider(
Provider(...))`` is the object form (pi-ai's ``Provider``), which adds ``filter_models``,
``fetch_models`` and ``auth.api_key``. Either way the pieces go to the layer that already owns them:
the entry to ``ModelRegistry``, the stream to ``ai/stream.py``, the sign-in and the provider's own key
resolution to ``AuthStorage`` (so ``/login``, auth.json, refresh before a request and request keys
work as for a built-in provider), the filter to the registry's available models. The model refresh
is in ``model_refresh.py``, the API-key functions in ``provider_auth.py``.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pi_coding_agent.ai.types import JsonObject
from pi_coding_agent.coding.extensions.registry import Registration, from_fields

if TYPE_CHECKING:
    from pi_coding_agent.ai.abort import AbortSignal
    from pi_coding_agent.ai.auth.oauth.flows import LoginUI
    from pi_coding_agent.ai.auth.oauth.providers import OAuthProvider
    from pi_coding_agent.ai.models.catalog import ModelFilter
    from pi_coding_agent.ai.stream import Adapter
    from pi_coding_agent.ai.types import Model
    from pi_coding_agent.coding.extensions.host import RunnerHandle
    from pi_coding_agent.coding.extensions.model_refresh import FetchModels, RefreshModels
    from pi_coding_agent.coding.extensions.provider_auth import ProviderAuth

Credential = JsonObject


@dataclass
class ProviderOAuth:
    """A subscription sign-in (pi's ``oauth`` of ``registerProvider``): ``login(callbacks)`` returns
    the credential to store (``access``, ``refresh``, ``expires`` in ms, anything else the provider
    needs), ``refresh_token(credentials, signal)`` a renewed one, ``get_api_key(credentials)`` the key
    a request sends; ``modify_models(models, credentials)`` shapes the models a signed-in user sees."""

    name: str
    login: Callable[[LoginCallbacks], Awaitable[Credential]]
    refresh_token: Callable[[Credential, AbortSignal], Awaitable[Credential]]
    get_api_key: Callable[[Credential], str]
    modify_models: Callable[[list[Model], Credential], list[Model]] | None = None


@dataclass
class Provider:
    """pi-ai's ``Provider`` object in Python (``pi.register_provider(provider)``): the provider's
    models and endpoint as data, and its behaviour as optional functions."""

    id: str
    models: list[JsonObject] = field(default_factory=list)
    name: str | None = None
    base_url: str | None = None
    api: str | None = None
    api_key: str | None = None
    headers: dict[str, str] | None = None
    stream: Adapter | None = None
    oauth: ProviderOAuth | Mapping[str, object] | None = None
    refresh_models: RefreshModels | None = None
    fetch_models: FetchModels | None = None
    filter_models: ModelFilter | None = None
    auth: ProviderAuth | Mapping[str, object] | None = None

    def config(self) -> JsonObject:
        """The models.json-shaped entry (camelCase, unset fields left out)."""
        entry = {"name": self.name, "baseUrl": self.base_url, "api": self.api, "apiKey": self.api_key,
                 "headers": self.headers, "models": self.models or None}
        return {key: value for key, value in entry.items() if value is not None}


class LoginCallbacks:
    """What an extension's ``login`` gets (pi's ``OAuthLoginCallbacks``), over the session's sign-in UI."""

    def __init__(self, ui: LoginUI, signal: AbortSignal) -> None:
        self._ui = ui
        self.signal = signal

    def on_auth(self, info: Mapping[str, object]) -> None:
        """Show the authorization URL (``url``, ``instructions?``)."""
        self._ui.notify({"type": "auth_url", **info})

    def on_device_code(self, info: Mapping[str, object]) -> None:
        """Show a device code (``userCode``, ``verificationUri``, ...)."""
        self._ui.notify({"type": "device_code", **info})

    def on_progress(self, message: str) -> None:
        self._ui.notify({"type": "progress", "message": message})

    async def on_prompt(self, prompt: Mapping[str, Any]) -> str:
        """Ask for text (``message``, ``placeholder?``)."""
        return await self._ui.prompt("text", str(prompt["message"]), placeholder=prompt.get("placeholder"))

    async def on_manual_code_input(self) -> str:
        return await self._ui.prompt("manual_code", "Paste the authorization code")

    async def on_select(self, prompt: Mapping[str, Any]) -> str:
        """Let the user pick one of ``options`` (``[{"id", "label"}]``); returns the id."""
        options = [(str(o["id"]), str(o.get("label", o["id"]))) for o in prompt["options"]]
        return await self._ui.prompt("select", str(prompt["message"]), options=options)


def as_oauth(value: ProviderOAuth | Mapping[str, object]) -> ProviderOAuth:
    """A ``ProviderOAuth`` from itself or a dict of its fields; ValueError names what is wrong."""
    oauth = from_fields(ProviderOAuth, value, "oauth")
    if not isinstance(oauth.name, str) or not all(callable(f) for f in (oauth.login, oauth.refresh_token,
                                                                       oauth.get_api_key)):
        raise ValueError("oauth needs a name and the functions login, refresh_token and get_api_key")
    return oauth


def oauth_spec(provider: str, title: str, oauth: ProviderOAuth) -> OAuthProvider:
    """The extension's sign-in as the OAuth machinery's provider entry. What its functions return is
    checked and stored with ``type: "oauth"``; anything they raise fails the sign-in or refresh with
    its message, never the process."""
    from pi_coding_agent.ai.abort import AbortSignal
    from pi_coding_agent.ai.auth.oauth.http import OAuthError
    from pi_coding_agent.ai.auth.oauth.providers import OAuthProvider
    from pi_coding_agent.ai.auth.oauth.store import is_oauth
    from pi_coding_agent.coding.commands.login import LoginCancelled

    def checked(value: object, step: str) -> Credential:
        credential = {**value, "type": "oauth"} if isinstance(value, Mapping) else None
        if credential is None or not is_oauth(credential):
            raise OAuthError(f"{step} must return a dict with access, refresh and expires")
        return credential

    async def run(call: Callable[[], Awaitable[object]]) -> object:
        """The extension function's result; what it raises (but a cancelled dialog) as an OAuthError."""
        try:
            return await call()
        except (LoginCancelled, OAuthError):
            raise
        except Exception as exc:
            raise OAuthError(str(exc) or type(exc).__name__) from None

    async def login(ui: LoginUI) -> Credential:
        signal = AbortSignal()  # fires once the sign-in is over (a dismissed dialog ends it): stop polling
        try:
            value = await run(lambda: oauth.login(LoginCallbacks(ui, signal)))
        finally:
            signal.abort()
        return checked(value, "login")

    async def refresh(credential: Credential) -> Credential:
        from pi_coding_agent.ai.auth.oauth.refresh import REFRESH_TIMEOUT_S as LIMIT_S

        signal = AbortSignal()
        timer = asyncio.get_running_loop().call_later(LIMIT_S, signal.abort)
        try:
            value = await run(lambda: oauth.refresh_token(dict(credential), signal))
        finally:
            timer.cancel()
        return checked(value, "refresh_token")

    def key(credential: Credential) -> str:
        try:
            return str(oauth.get_api_key(dict(credential)))
        except Exception as exc:  # no key: the request is refused as for a provider without credentials
            print(f"Extension provider {provider}: get_api_key failed: {type(exc).__name__}", file=sys.stderr)
            return ""

    def modify(models: list[Model], credential: Credential) -> list[Model]:
        assert oauth.modify_models is not None
        try:
            return list(oauth.modify_models(models, credential))
        except Exception as exc:  # a broken hook keeps the list it was given
            print(f"Extension provider {provider}: modify_models failed: {exc}", file=sys.stderr)
            return models

    return OAuthProvider(provider, title, oauth.name, refresh, login=login, api_key=key,
                         modify_models=modify if oauth.modify_models is not None else None)


def register(runner: RunnerHandle, name: str, config: JsonObject, extension_path: str, *,
             stream: Adapter | None = None, oauth: ProviderOAuth | Mapping[str, object] | None = None,
             refresh_models: RefreshModels | None = None, filter_models: ModelFilter | None = None,
             native: Provider | None = None) -> None:
    """Register one provider with every layer that serves it; ValueError (nothing changed) when it
    could not work. As in pi, a registration by name is merged over the previous one by name (what
    it leaves out is kept); a ``Provider`` object (``native``) replaces whatever was there."""
    from pi_coding_agent.coding.extensions.provider_auth import as_api_key_auth

    previous = runner.providers.get(name)
    if previous is not None and not previous.native and native is None:
        config = {**previous.config, **{key: value for key, value in config.items() if value is not None}}
        stream, oauth = stream or previous.stream, oauth or previous.oauth
        refresh_models = refresh_models or previous.refresh_models
    if stream is not None and not config.get("api"):
        raise ValueError(f"Provider {name}: a custom stream needs the provider's \"api\"")
    sign_in = as_oauth(oauth) if oauth is not None else None
    if sign_in is not None and not config.get("baseUrl"):
        raise ValueError(f'Provider {name}: "baseUrl" is required when "oauth" is set.')
    key_auth = as_api_key_auth(native.auth) if native is not None else None
    runner.rt.registry.register_provider(name, config)
    if previous is not None:
        _drop_behaviour(runner, name)
    registration = Registration(config, stream, sign_in, refresh_models, filter_models, native is not None,
                                extension_path, native.fetch_models if native is not None else None, key_auth)
    _install_behaviour(runner, name, registration)
    if runner.loaded:  # during setup the runner checks and refreshes once all are in
        if key_auth is not None:
            runner.spawn(runner.rt.auth.check_key_source(name))
        if registration.refreshes:
            from pi_coding_agent.coding.extensions.model_refresh import refresh_one

            runner.spawn(refresh_one(runner, name, allow_network=False))


def register_object(runner: RunnerHandle, provider: Provider, extension_path: str) -> None:
    if not isinstance(provider.id, str) or not provider.id.strip():
        raise ValueError("Provider id must not be empty.")
    register(runner, provider.id, provider.config(), extension_path, stream=provider.stream, oauth=provider.oauth,
             refresh_models=provider.refresh_models, filter_models=provider.filter_models, native=provider)


def _install_behaviour(runner: RunnerHandle, name: str, registration: Registration) -> None:
    rt = runner.rt
    if registration.stream is not None:
        from pi_coding_agent.ai.stream import set_provider_adapter

        set_provider_adapter(name, registration.config["api"], registration.stream)
    if (sign_in := registration.oauth) is not None:
        rt.auth.set_extension_oauth(name, oauth_spec(name, registration.config.get("name") or sign_in.name, sign_in))
    if registration.api_key_auth is not None:
        from pi_coding_agent.coding.extensions.provider_auth import ExtensionKeySource

        rt.auth.set_key_source(name, ExtensionKeySource(name, registration.api_key_auth))
    rt.registry.set_model_filter(name, registration.filter_models)
    runner.providers[name] = registration


def _drop_behaviour(runner: RunnerHandle, name: str) -> None:
    registration = runner.providers[name]
    if registration.stream_api is not None:
        from pi_coding_agent.ai.stream import set_provider_adapter

        set_provider_adapter(name, registration.stream_api, None)
    runner.rt.auth.set_extension_oauth(name, None)
    runner.rt.auth.set_key_source(name, None)
    runner.rt.registry.set_model_filter(name, None)


def remove(runner: RunnerHandle, name: str) -> None:
    """Unregister one extension provider and everything it added; nothing when it was not registered."""
    if name not in runner.providers:
        return
    _drop_behaviour(runner, name)
    del runner.providers[name]
    runner.rt.registry.unregister_provider(name)
