"""``/login [provider]``: signing in through extension UI dialogs, so a headless host (an RPC client)
can sign a user in.

pi 1.6.0 has no sign-in over RPC: its ``/login`` is a terminal-UI command, and a prompt ``/login``
sent over RPC reaches the model as text. Here the prompt ``/login`` is handled before the model and
runs the same flows as ``pi auth login`` on the session's ``ctx.ui`` (``RpcExtensionUI`` in RPC
mode): the provider and the method are chosen through ``select``, the authorization URL or device
code goes out in a ``notify``, a pasted code or redirect URL (or an API key, for a provider without
account sign-in) comes back through ``input``. A dismissed dialog cancels the sign-in. Like pi's
built-in commands it is not listed by ``get_commands``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from pi_coding_agent.ai.auth.keys import AuthStorage
from pi_coding_agent.ai.providers.vendor import vendor
from pi_coding_agent.ai.types import JsonObject

if TYPE_CHECKING:
    from pi_coding_agent.ai.auth.keys import KeySource
    from pi_coding_agent.ai.auth.oauth.providers import OAuthProvider
    from pi_coding_agent.coding.resources.settings import Settings
    from pi_coding_agent.coding.runtime import SessionRuntime

NAME = "login"
PROVIDER_PROMPT = "Select provider to login:"


class LoginCancelled(Exception):
    """The user dismissed a sign-in dialog."""


class DialogLoginUI:
    """The ``LoginUI`` of ``ai/auth/oauth/flows.py`` over select/input/notify dialogs."""

    def __init__(self, ui: Any) -> None:
        self.ui = ui

    async def prompt(self, kind: str, message: str, *, placeholder: str | None = None,
                     options: list[tuple[str, str]] | None = None) -> str:
        if kind == "select" and options:
            labels = [label for _, label in options]
            choice = await self.ui.select(message, labels)
            if choice not in labels:
                raise LoginCancelled("Login cancelled")
            return options[labels.index(choice)][0]
        value = await self.ui.input(message, placeholder)
        if value is None:
            raise LoginCancelled("Login cancelled")
        return str(value)

    def notify(self, event: JsonObject) -> None:
        kind = event.get("type")
        if kind == "auth_url":
            text = f"Open this URL to sign in:\n{event['url']}"
            if event.get("instructions"):
                text += f"\n{event['instructions']}"
        elif kind == "device_code":
            text = f"Open {event['verificationUri']} and enter code: {event['userCode']}"
        else:
            text = str(event.get("message", ""))
        self.ui.notify(text, "info")


def device_id(settings: Settings) -> str:
    """The installation's id (global settings ``deviceId``, created on first use as pi does)."""
    import uuid

    current = settings.device_id
    if current:
        return current
    created = str(uuid.uuid4())
    settings.set_global("deviceId", created)
    return created


def title(provider: str) -> str:
    from pi_coding_agent.ai.providers.vendor import builtin_spec

    spec = builtin_spec(provider)
    return spec.title if spec else provider


async def _credential(provider: str, spec: OAuthProvider | None, dialogs: DialogLoginUI,
                      settings: Settings | None, source: KeySource | None) -> JsonObject:
    from pi_coding_agent.ai.auth.oauth.http import OAuthError
    from pi_coding_agent.ai.auth.oauth.login import login

    if spec is not None:
        return await login(provider, dialogs, None if settings is None else lambda: device_id(settings), spec)
    if source is not None and source.can_login:  # an extension provider's own API-key setup
        return await source.login(dialogs)
    key = (await dialogs.prompt("secret", f"Enter {provider} API key")).strip()
    if not key:
        raise OAuthError("No API key entered")
    return {"type": "api_key", "key": key}


async def sign_in(auth: AuthStorage, ui: Any, provider: str, settings: Settings | None = None) -> bool:
    """Run ``provider``'s account sign-in (or ask its API key) over ``ui`` and store the credential.

    Whether it succeeded; failures are reported with ``notify`` (the message never contains a token).
    ``settings`` holds the installation's ``deviceId`` that Sign in with ChatGPT needs.
    """
    from pi_coding_agent.ai.auth.oauth.http import OAuthError

    spec = auth.oauth_spec(provider)
    name = spec.title if spec is not None else provider
    try:
        credential = await _credential(provider, spec, DialogLoginUI(ui), settings, auth.key_source(provider))
        await auth.store_credential(provider, credential)
    except (OAuthError, LoginCancelled, OSError) as exc:
        ui.notify(f"Failed to log in to {name}: {exc}", "error")
        return False
    done = "Logged in to" if spec is not None else "Saved API key for"
    ui.notify(f"{done} {name}. Credentials saved to {auth.path}", "info")
    if (line := after_sign_in(provider, settings)) is not None:
        ui.notify(line, "info")
    return True


def after_sign_in(provider: str, settings: Settings | None) -> str | None:
    """What follows a sign-in, as in pi: the vendor's MCP server (Radius's) joins the global mcp.json.
    The line to show."""
    own = vendor(provider)
    if own is None or own.mcp_url is None or settings is None:
        return None
    from pi_coding_agent.coding.mcp.provider_auth import add_vendor_server

    return add_vendor_server(own, provider, settings.agent_dir, settings.cwd)


def _setup_hint(provider: str) -> str | None:
    own = vendor(provider)
    return own.setup_hint if own is not None else None


def is_invocation(text: str) -> bool:
    return text == f"/{NAME}" or text.startswith(f"/{NAME} ")


async def run(rt: SessionRuntime, text: str, select: Callable[[str, str], Awaitable[object]]) -> None:
    """The command: ``/login <provider>``, or a provider menu (account sign-ins first) for ``/login``.
    With no model chosen yet, ``select(provider, model_id)`` picks the signed-in provider's default."""
    from pi_coding_agent.ai.auth.oauth.login import SIGN_IN_PROVIDERS

    provider = text[len(NAME) + 1:].strip()
    if (hint := _setup_hint(provider)) is not None:  # set up in the terminal (a server URL, checked live)
        rt.ui.notify(hint, "warning")
        return
    known = [p for p in rt.registry.providers() if p != "faux" and _setup_hint(p) is None]
    if not provider:
        accounts = [(spec.name, p) for p in dict.fromkeys([*SIGN_IN_PROVIDERS, *known])
                    if (spec := rt.auth.oauth_spec(p)) is not None]
        menu = dict(accounts) | {p: p for p in known if rt.auth.oauth_spec(p) is None}
        choice = await rt.ui.select(PROVIDER_PROMPT, list(menu))
        if choice not in menu:
            return
        provider = menu[choice]
    elif provider not in known and rt.auth.oauth_spec(provider) is None:
        rt.ui.notify(f'Unknown provider "{provider}"', "error")
        return
    if await sign_in(rt.auth, rt.ui, provider, rt.settings):
        rt.registry.forget_models(provider)  # the models a credential shapes (``modify_models``) are rebuilt
        if rt.after_sign_in is not None:  # and, as pi, the provider's catalog is refreshed in the background
            rt.after_sign_in(provider)
        if rt.agent.model["provider"] == "unknown":
            await _select_default(rt, provider, select)


async def _select_default(rt: SessionRuntime, provider: str, select: Callable[[str, str], Awaitable[object]]) -> None:
    """What pi does after a sign-in while no model is chosen: select the provider's default model
    (or its first one when its vendor says so and the default is missing), or say why it could not."""
    from pi_coding_agent.ai.models.index import catalog_index

    wanted = catalog_index()["providers"].get(provider, {}).get("defaultModel")
    models = [m for m in rt.available_models() if m["provider"] == provider]
    match = next((m for m in models if m["id"] == wanted), None) or (
        models[0] if models and (own := vendor(provider)) is not None and own.first_model_is_default else None)
    if wanted is None:
        reason = f'no default model is configured for provider "{provider}"'
    elif not models:
        reason = "no models are available for that provider"
    elif match is None:
        reason = f'its default model "{wanted}" is not available'
    else:
        await select(provider, match["id"])
        rt.ui.notify(f"Selected {match['id']}", "info")
        return
    rt.ui.notify(f"Signed in, but {reason}. Choose a model with set_model.", "warning")
