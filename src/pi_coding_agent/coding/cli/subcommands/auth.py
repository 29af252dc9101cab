"""``pi auth``: sign in and out, print credentials for other clients, check readiness.

Options, messages and exit codes follow pi 1.6.0: ``check`` prints ``ready``/``not_ready``/
``invalid`` and exits 0/1/2 (``--json`` gives ``{"status", "provider", "authType"|"reason",
"credentials"?}``); printing a credential exits 1 when there is none; usage errors exit 1
(2 for ``check``). Credentials go to stdout only when asked for; errors never contain one.
"""

from __future__ import annotations

import asyncio
import re
import sys
from dataclasses import dataclass
from typing import Any

import orjson

from pi_coding_agent.ai.auth.keys import AuthStorage
from pi_coding_agent.ai.models.catalog import ModelRegistry
from pi_coding_agent.ai.models.resolution import ModelResolutionError, resolve_model_pattern
from pi_coding_agent.coding import paths

HELP = """Usage:
  pi auth login <provider> [--api-key] [--no-browser]
  pi auth logout <provider>
  pi auth print-api-key [--provider <provider>] [--model <model>]
  pi auth print-bearer-token [--provider <provider>] [--model <model>] [--min-expiry <duration>]
  pi auth check [--provider <provider>] [--model <model>] [--json] [--credentials] [--no-refresh]

Sign in to and out of model providers, print their credentials for other clients, or check that
they are ready. Credentials are stored in ~/.pi/agent/auth.json.

Commands:
  login <provider>        Sign in with an account (browser or device code), or save an API key
  logout <provider>       Remove the stored credential; environment variables and models.json stay
  print-api-key           Print the resolved API key
  print-bearer-token      Print a resolved OAuth bearer token (refreshed when it expires soon)
  check                   Print ready, not_ready or invalid; exit with 0, 1 or 2

Options for print-api-key, print-bearer-token and check (at least one is required):
  --provider <provider>   Resolve credentials for a provider
  --model <model>         Resolve credentials from a model

Options for login:
  --api-key               Save an API key instead of signing in with an account
  --no-browser            Do not open a browser; use another sign-in method such as a device code

Other options:
  --min-expiry <duration> Minimum remaining token lifetime for print-bearer-token, e.g. 30m or 1h
  --json                  Print the check result as JSON
  --credentials           Print the credential from check, or include it in the JSON
  --no-refresh            Do not refresh expired OAuth credentials during check"""

KINDS = {"check": "check", "print-api-key": "api_key", "print-bearer-token": "bearer_token"}
NAMES = {"check": "auth check", "api_key": "auth print-api-key", "bearer_token": "auth print-bearer-token"}
USAGES = {
    "check": "pi auth check --provider <provider> [--json] [--credentials] [--no-refresh]",
    "api_key": "pi auth print-api-key --provider <provider> [--model <model>]",
    "bearer_token": "pi auth print-bearer-token --provider <provider> [--model <model>] [--min-expiry <duration>]",
}
DEFAULT_BEARER_MIN_EXPIRY_MS = 30 * 60_000
_UNITS_MS = {"ms": 1, "s": 1_000, "m": 60_000, "h": 3_600_000}


class AuthCommandError(Exception):
    """A usage or resolution problem, printed as ``Error: <message>``."""


@dataclass
class Request:
    """One ``pi auth`` command line, parsed."""

    kind: str
    provider: str | None = None
    model: str | None = None
    json: bool = False
    credentials: bool = False
    no_refresh: bool = False
    min_expiry_ms: int | None = None
    extra: bool = False  # a positional argument or --api-key: refused once parsed


def _error(message: str) -> None:
    print(f"Error: {message}", file=sys.stderr)


def main(argv: list[str]) -> int:
    if not argv or argv[0] == "help" or "--help" in argv or "-h" in argv:
        print(HELP)
        return 0
    word, rest = argv[0], [a for a in argv[1:] if a != "--offline"]
    if word in ("login", "logout"):
        from pi_coding_agent.coding.cli.subcommands import auth_login

        return auth_login.login(rest) if word == "login" else auth_login.logout(rest)
    kind = KINDS.get(word)
    if kind is None:
        _error(f'Unknown auth command "{word}". Use "pi auth login", "pi auth logout", "pi auth print-api-key", '
               '"pi auth print-bearer-token", or "pi auth check".')
        return 1
    try:
        request = parse(kind, rest)
    except AuthCommandError as exc:
        _error(str(exc))
        return 1
    except _UnknownOption as exc:
        print(f'Unknown option {exc} for "{NAMES[kind]}".', file=sys.stderr)
        print(f'Use "pi --help" or "{USAGES[kind]}".', file=sys.stderr)
        return 1
    return asyncio.run(run(request))


class _UnknownOption(Exception):
    pass


def parse(kind: str, args: list[str]) -> Request:
    request = Request(kind)
    it = iter(args)
    for arg in it:
        if arg == "--min-expiry":
            if kind != "bearer_token":
                raise AuthCommandError("--min-expiry is only supported by print-bearer-token")
            match = re.fullmatch(r"(\d+)(ms|s|m|h)", next(it, ""), re.IGNORECASE)
            if not match:
                raise AuthCommandError("--min-expiry must use a duration such as 30m or 1h")
            request.min_expiry_ms = int(match[1]) * _UNITS_MS[match[2].lower()]
        elif arg in ("--json", "--credentials", "--no-refresh"):
            if kind != "check":
                raise AuthCommandError(f"{arg} is only supported by auth check")
            setattr(request, arg[2:].replace("-", "_"), True)
        elif arg in ("--provider", "--model"):
            setattr(request, arg[2:], (next(it, "") or "").strip() or None)
        elif arg == "--api-key":
            next(it, None)
            request.extra = True
        elif arg.startswith("-"):
            raise _UnknownOption(arg)
        else:
            request.extra = True
    return request


async def run(request: Request) -> int:
    try:
        if request.extra:
            raise AuthCommandError("Auth commands only accept --provider and --model")
        if request.kind == "check":
            return await run_check(request)
        print(await credential_for_print(request))
        return 0
    except AuthCommandError as exc:
        _error(str(exc))
    except Exception:  # a refresh or store failure: its details may name a credential source
        _error("Failed to resolve credential")
    return 2 if request.kind == "check" else 1


def _context() -> tuple[AuthStorage, ModelRegistry]:
    agent = paths.agent_dir()
    auth = AuthStorage(agent)
    return auth, ModelRegistry(agent, auth)


def known_provider(registry: ModelRegistry, provider: str) -> bool:
    from pi_coding_agent.ai.providers.vendor import builtin_spec

    return provider in registry.providers() or builtin_spec(provider) is not None


def _provider_of(registry: ModelRegistry, provider: str | None, model: str) -> str:
    try:
        found, _, _ = resolve_model_pattern(registry, model, provider)
    except ModelResolutionError as exc:
        raise AuthCommandError(str(exc)) from None
    return found["provider"]


async def check(request: Request) -> tuple[dict[str, Any], str | None]:
    """The check result and, with ``--credentials``, the credential it found."""
    if not request.provider and not request.model:
        raise AuthCommandError("Auth checks require --provider <provider> or --model <model>")
    auth, registry = _context()
    provider = _provider_of(registry, request.provider, request.model) if request.model else request.provider
    assert provider is not None
    if auth.errors or registry.errors:
        return {"status": "invalid", "provider": provider, "reason": "invalid_state"}, None
    if not known_provider(registry, provider):
        return {"status": "not_ready", "provider": provider, "reason": "provider_not_found"}, None
    if not auth.has_auth(provider):
        return {"status": "not_ready", "provider": provider, "reason": "credentials_not_configured"}, None
    auth_type = auth.stored_type(provider) or "api_key"
    try:
        if not request.no_refresh:
            await auth.prepare(provider)
        value = auth.api_key(provider) or auth.bearer_token(provider)
    except Exception:
        return {"status": "invalid", "provider": provider, "reason": "invalid_state"}, None
    if not value:
        reason = "credential_not_available" if request.credentials else "credentials_not_configured"
        return {"status": "not_ready", "provider": provider, "reason": reason}, None
    return {"status": "ready", "provider": provider, "authType": auth_type}, value if request.credentials else None


async def run_check(request: Request) -> int:
    result, credential = await check(request)
    if request.json:
        print(orjson.dumps({**result, **({"credentials": credential} if credential else {})}).decode())
    else:
        print(credential or result["status"])
    return {"ready": 0, "not_ready": 1}.get(result["status"], 2)


async def credential_for_print(request: Request) -> str:
    """The one API key or bearer token ``print-api-key``/``print-bearer-token`` asks for."""
    if not request.provider and not request.model:
        raise AuthCommandError("Credential printing requires --provider <provider> or --model <model>")
    auth, registry = _context()
    if request.provider:
        if not known_provider(registry, request.provider):
            raise AuthCommandError(f'Unknown provider "{request.provider}". Use --list-models to see available providers.')
        if request.model:
            _provider_of(registry, request.provider, request.model)
        candidates = [request.provider]
    else:
        assert request.model is not None
        candidates = [p for p in registry.providers() if auth.stored_type(p) and _matches(registry, p, request.model)]
        if not candidates:
            raise AuthCommandError(f'Model "{request.model}" not found. Use --list-models to see available models.')
    found: list[tuple[str, str]] = []
    for provider in candidates:
        value = await _printable(auth, provider, request)
        if value:
            found.append((provider, value))
    if len(found) == 1:
        return found[0][1]
    if found:
        raise AuthCommandError(f"Multiple configured providers matched ({', '.join(p for p, _ in found)}). "
                               "Specify --provider.")
    kind = auth.stored_type(candidates[0])
    if request.provider and request.kind == "api_key" and kind == "oauth":
        raise AuthCommandError(f'Provider "{request.provider}" is configured with OAuth, not an API key')
    if request.provider and request.kind == "bearer_token" and kind != "oauth":
        raise AuthCommandError(f'Provider "{request.provider}" is not configured with an OAuth bearer token')
    raise AuthCommandError(f"No usable {'API key' if request.kind == 'api_key' else 'OAuth bearer token'} is configured")


def _matches(registry: ModelRegistry, provider: str, model: str) -> bool:
    """Whether ``model`` names one of the provider's models (a synthesised custom id does not count)."""
    try:
        found, _, _ = resolve_model_pattern(registry, model, provider)
    except ModelResolutionError:
        return False
    return any(m["id"] == found["id"] for m in registry.provider_models(provider))


async def _printable(auth: AuthStorage, provider: str, request: Request) -> str | None:
    kind = auth.stored_type(provider)
    if request.kind == "api_key":
        return None if kind == "oauth" else (auth.api_key(provider) or auth.bearer_token(provider))
    if kind != "oauth":
        return None
    cred = await auth.fresh_oauth(provider, request.min_expiry_ms or DEFAULT_BEARER_MIN_EXPIRY_MS)
    return str(cred["access"]) if cred else None
