"""``pi auth login`` and ``pi auth logout`` in a terminal.

The sign-in flows themselves (``ai/auth/oauth/login.py``) only see a ``LoginUI``; this module is the
terminal one. ``--no-browser`` picks a provider's other method (device code, pasted code) and
never opens a browser; without it the browser method comes first, as in pi.
"""

from __future__ import annotations

import asyncio
import contextlib
import getpass
import os
import sys
from typing import TYPE_CHECKING

from pi_coding_agent.ai.auth.keys import AuthStorage
from pi_coding_agent.ai.providers.vendor import vendor
from pi_coding_agent.ai.types import JsonObject
from pi_coding_agent.coding import paths
from pi_coding_agent.coding.commands.login import after_sign_in, device_id
from pi_coding_agent.coding.commands.login import title as _title

if TYPE_CHECKING:
    from pi_coding_agent.coding.resources.settings import Settings

LOGIN_USAGE = "pi auth login <provider> [--api-key] [--no-browser]"
LOGOUT_USAGE = "pi auth logout <provider>"


def _say(line: str) -> None:
    print(line, flush=True)


class TerminalUI:
    """Prompts on the terminal; events as lines of text (pi's wording)."""

    def __init__(self, provider: str, browser: bool) -> None:
        self.provider = provider
        self.browser = browser
        self.skipped: list[str] = []

    async def prompt(self, kind: str, message: str, *, placeholder: str | None = None,
                     options: list[tuple[str, str]] | None = None) -> str:
        if kind == "select" and options:
            return self._select(message, options)
        text = f"{message}{f' ({placeholder})' if placeholder else ''}: "
        read = getpass.getpass if kind == "secret" else input
        return await asyncio.to_thread(read, text)

    def _select(self, message: str, options: list[tuple[str, str]]) -> str:
        first, *others = options
        if self.browser or not others:
            self.skipped = [label for _, label in others] if self.browser else []
            return first[0]
        if len(others) == 1:
            _say(f"{message} {others[0][1]}")
            return others[0][0]
        return _choose_in_terminal(message, others)

    def notify(self, event: JsonObject) -> None:
        kind = event.get("type")
        if kind == "auth_url":
            _say(f"Open this URL to sign in:\n  {event['url']}")
            if event.get("instructions"):
                _say(str(event["instructions"]))
            if self.browser:
                _open(str(event["url"]))
            rerun = f'"pi auth login {self.provider} --no-browser"'
            if len(self.skipped) == 1:
                _say(f'To use "{self.skipped[0]}" instead, run {rerun}')
        elif kind == "device_code":
            _say(f"Open {event['verificationUri']} and enter code: {event['userCode']}")
            if self.browser:
                _open(str(event["verificationUri"]))
            _say("Waiting for authentication...")
        else:
            _say(str(event.get("message", "")))


def _choose_in_terminal(message: str, options: list[tuple[str, str]]) -> str:
    _say(message)
    for index, (_, label) in enumerate(options, 1):
        _say(f"  {index}. {label}")
    while True:
        answer = input("> ").strip()
        if answer.isdigit() and 1 <= int(answer) <= len(options):
            return options[int(answer) - 1][0]
        _say(f"Enter a number from 1 to {len(options)}.")


def _open(url: str) -> None:
    import webbrowser

    with contextlib.suppress(Exception):  # the URL is printed; opening it is a convenience
        webbrowser.open(url)


def _parse_login(args: list[str]) -> tuple[str, bool, bool] | str:
    provider, api_key, browser = "", False, True
    for arg in args:
        if arg == "--api-key":
            api_key = True
        elif arg == "--no-browser":
            browser = False
        elif arg.startswith("-") or provider:
            return f"Usage: {LOGIN_USAGE}"
        else:
            provider = arg
    if not provider:
        return f"Usage: {LOGIN_USAGE}"
    if api_key and not browser:
        return "--no-browser only applies to account sign-in; omit it with --api-key."
    return provider, api_key, browser


def _registered_auth() -> tuple[AuthStorage, list[str]]:
    """auth.json as the model registry sees it (models.json sign-in gateways included), and the providers."""
    from pi_coding_agent.ai.models.catalog import ModelRegistry

    agent = paths.agent_dir()
    auth = AuthStorage(agent)
    return auth, ModelRegistry(agent, auth).providers()


def login(args: list[str]) -> int:
    parsed = _parse_login(args)
    if isinstance(parsed, str):
        print(parsed, file=sys.stderr)
        return 1
    provider, api_key, browser = parsed
    from pi_coding_agent.ai.auth.oauth.login import SIGN_IN_PROVIDERS

    auth, providers = _registered_auth()
    known = [p for p in providers if p != "faux"]
    if provider not in known and auth.oauth_spec(provider) is None:
        print(f'Unknown provider "{provider}".', file=sys.stderr)
        print(f"Providers: {', '.join(sorted(set(known) | set(SIGN_IN_PROVIDERS)))}", file=sys.stderr)
        return 1
    if not sys.stdin.isatty():
        print(f'"{LOGIN_USAGE}" requires an interactive terminal', file=sys.stderr)
        return 1
    try:
        return asyncio.run(_login(auth, provider, api_key, browser))
    except KeyboardInterrupt:
        print("Login cancelled.", file=sys.stderr)
        return 1


async def _login(auth: AuthStorage, provider: str, api_key: bool, browser: bool) -> int:
    from pi_coding_agent.ai.auth.oauth.http import OAuthError
    from pi_coding_agent.ai.auth.oauth.login import login

    spec = None if api_key else auth.oauth_spec(provider)
    account = spec is not None
    name = spec.title if spec is not None else _title(provider)
    ui = TerminalUI(provider, browser)
    try:
        own = vendor(provider)
        set_up = await own.setup(ui) if own is not None and not account else None
        if set_up is not None:  # the vendor's own terminal set-up (a server URL, checked live)
            credential: JsonObject = set_up
        elif not account:
            key = (await ui.prompt("secret", f"Enter {name} API key")).strip()
            if not key:
                raise OAuthError("No API key entered")
            credential = {"type": "api_key", "key": key}
        else:
            credential = await login(provider, ui, _device_id, spec)
        await auth.store_credential(provider, credential)
    except (OAuthError, OSError, EOFError) as exc:
        print(f"Failed to log in to {name}: {exc}", file=sys.stderr)
        return 1
    done = f"Logged in to {name}" if account else f"Saved API key for {name}"
    _say(f"{done}. Credentials saved to {auth.path}")
    await _refresh_catalog(auth, provider, name)
    if account and (line := after_sign_in(provider, _settings())) is not None:
        _say(line)
    return 0


async def _refresh_catalog(auth: AuthStorage, provider: str, name: str) -> None:
    """A vendor's live model list, fetched right after its sign-in as pi does (unless offline)."""
    from pi_coding_agent.ai.models.catalog import ModelRegistry
    from pi_coding_agent.ai.providers.vendor import REFRESH_TIMEOUT_S, catalog_refresh

    if os.environ.get("PI_OFFLINE") is not None:
        return
    job = catalog_refresh(ModelRegistry(paths.agent_dir(), auth), provider)
    if job is None:
        return
    try:
        await asyncio.wait_for(job, REFRESH_TIMEOUT_S)
    except TimeoutError:
        _say(f"The {name} model catalog refresh timed out; pi refreshes it on next start.")
    except Exception:  # pi reports any failure so and keeps the sign-in
        _say(f"The {name} model catalog could not be refreshed; pi retries on next start.")


def _settings() -> Settings:
    from pathlib import Path

    from pi_coding_agent.coding.resources.settings import Settings

    return Settings.load(paths.agent_dir(), Path.cwd(), project_trusted=False)


def _device_id() -> str:
    return device_id(_settings())


def logout(args: list[str]) -> int:
    if len(args) != 1 or args[0].startswith("-"):
        print(f"Usage: {LOGOUT_USAGE}", file=sys.stderr)
        return 1
    provider = args[0]
    auth, providers = _registered_auth()
    kind = auth.stored_type(provider)
    if kind is None and provider not in providers:
        stored = sorted(auth.stored_providers())
        print(f'Unknown provider "{provider}".', file=sys.stderr)
        print(f"Stored credentials: {', '.join(stored) or 'none'}", file=sys.stderr)
        return 1
    name = _title(provider)
    if kind is None:
        _say(f"No stored credentials for {name}. Environment variables and models.json config are unchanged.")
        return 0
    try:
        asyncio.run(auth.remove_credential(provider))
    except OSError as exc:
        print(f"Logout failed: {exc}", file=sys.stderr)
        return 1
    _say(f"Logged out of {name}." if kind == "oauth" else
         f"Removed stored API key for {name}. Environment variables and models.json config are unchanged.")
    return 0
