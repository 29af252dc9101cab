"""Signing in through extension UI dialogs, so a headless host (an RPC client) can sign a user in.

pi 1.6.0 has no sign-in over RPC (``/login`` is a terminal-UI command). Here a sign-in flow runs on
any ``ctx.ui``-shaped object (``RpcExtensionUI`` in RPC mode): the authorization URL or device
code goes out in a ``notify``, a pasted code or redirect URL and any typed value come back through
``input``, a choice of method through ``select``. A dismissed dialog cancels the sign-in.
"""

from __future__ import annotations

from typing import Any

from pi_coding_agent.ai.keys import AuthStorage


class LoginCancelled(Exception):
    """The user dismissed a sign-in dialog."""


class DialogLoginUI:
    """The ``LoginUI`` of ``ai/oauth/flows.py`` over select/input/notify dialogs."""

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

    def notify(self, event: dict[str, Any]) -> None:
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


async def sign_in(auth: AuthStorage, ui: Any, provider: str) -> bool:
    """Run ``provider``'s sign-in over ``ui`` and store the credential; whether it succeeded.

    Failures are reported with ``notify`` (the message never contains a token).
    """
    from pi_coding_agent.ai.oauth.http import OAuthError
    from pi_coding_agent.ai.oauth.login import LOGINS
    from pi_coding_agent.ai.oauth.providers import PROVIDERS

    flow = LOGINS.get(provider)
    if flow is None:
        ui.notify(f"{provider} has no account sign-in; run `pi auth login {provider}` to save an API key", "error")
        return False
    title = PROVIDERS[provider].title
    try:
        await auth.store_credential(provider, await flow(DialogLoginUI(ui)))
    except (OAuthError, LoginCancelled, OSError) as exc:
        ui.notify(f"Failed to log in to {title}: {exc}", "error")
        return False
    ui.notify(f"Logged in to {title}. Credentials saved to {auth.path}", "info")
    return True
