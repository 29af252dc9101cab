"""Anthropic workload identity federation: an OIDC identity token traded for a short-lived access token.

pi leaves this to the Anthropic SDK, as the last way in for the ``anthropic`` provider (after a
stored key, ``ANTHROPIC_AUTH_TOKEN``, ``ANTHROPIC_OAUTH_TOKEN`` and ``ANTHROPIC_API_KEY``): when
``ANTHROPIC_FEDERATION_RULE_ID``, ``ANTHROPIC_ORGANIZATION_ID`` and ``ANTHROPIC_IDENTITY_TOKEN_FILE``
are set, the identity token read from that file is exchanged in an RFC 7523 ``jwt-bearer`` grant
at ``<baseUrl>/v1/oauth/token`` (``ANTHROPIC_SERVICE_ACCOUNT_ID`` and ``ANTHROPIC_WORKSPACE_ID`` go
along when set), and the access token is sent as ``Authorization: Bearer`` with the OAuth beta.

The grant yields no refresh token, so a token is exchanged again: when less than two minutes are
left (the SDK's early-refresh window) and after a 401. The file is re-read at each exchange, so a
rotated projected token (Kubernetes, CI) is picked up. Tokens live in memory only, one per base URL
and configuration; concurrent requests share one exchange. No token reaches a message.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from pi_coding_agent.ai.auth.provider_env import FEDERATION_ENV, env_value
from pi_coding_agent.ai.stream import ProviderError
from pi_coding_agent.ai.types import Model

TOKEN_PATH = "/v1/oauth/token"
GRANT = "urn:ietf:params:oauth:grant-type:jwt-bearer"
OAUTH_BETA = "oauth-2025-04-20"
FEDERATION_BETA = "oidc-federation-2026-04-01"
REFRESH_WITHIN_S = 120.0
MAX_ASSERTION_BYTES = 16 * 1024


class FederationError(Exception):
    """The exchange failed; the message names the cause, never a token."""


@dataclass(frozen=True)
class Federation:
    """Anthropic workload-identity federation: the token file exchanged for an access token."""

    rule_id: str
    organization_id: str
    token_file: str
    service_account_id: str | None = None
    workspace_id: str | None = None


def configured() -> Federation | None:
    """The federation settings of the current request's environment, when the three required ones are set."""
    rule, org, path = (env_value(n) for n in FEDERATION_ENV)
    if not (rule and org and path):
        return None
    return Federation(rule, org, path, env_value("ANTHROPIC_SERVICE_ACCOUNT_ID"), env_value("ANTHROPIC_WORKSPACE_ID"))


_tokens: dict[tuple[str, Federation], tuple[str, float]] = {}  # -> (access token, expiry on the monotonic clock)
_exchanges: dict[tuple[str, Federation], asyncio.Lock] = {}


def _secure(base_url: str) -> None:
    parts = urlsplit(base_url)
    if parts.scheme == "https" or (parts.scheme == "http" and parts.hostname in ("localhost", "127.0.0.1", "::1")):
        return
    raise FederationError(f'Refusing to send credential over non-https token endpoint "{base_url}"')


def _assertion(fed: Federation) -> str:
    try:
        token = Path(fed.token_file).expanduser().read_text(encoding="utf-8").strip()
    except OSError as exc:
        raise FederationError(f"Failed to read identity token file at {fed.token_file}: {exc.strerror}") from None
    if not token:
        raise FederationError(f"Identity token file at {fed.token_file} is empty")
    if len(token) > MAX_ASSERTION_BYTES:
        raise FederationError(f"Identity token is {-(-len(token) // 1024)} KiB, exceeds the 16 KiB assertion limit")
    return token


async def _exchange(fed: Federation, base_url: str) -> tuple[str, float]:
    from pi_coding_agent.ai.auth.oauth.http import OAuthError, call

    _secure(base_url)
    body = {"grant_type": GRANT, "assertion": _assertion(fed), "federation_rule_id": fed.rule_id,
            "organization_id": fed.organization_id}
    if fed.service_account_id:
        body["service_account_id"] = fed.service_account_id
    if fed.workspace_id:
        body["workspace_id"] = fed.workspace_id
    try:
        reply = await call("POST", base_url.rstrip("/") + TOKEN_PATH, json=body,
                           headers={"anthropic-beta": f"{OAUTH_BETA},{FEDERATION_BETA}"})
    except OAuthError as exc:
        raise FederationError(f"Anthropic workload identity token exchange failed: {exc}") from None
    if not reply.ok:
        hint = " Ensure your federation rule matches your identity token." if reply.status == 401 else ""
        raise FederationError(f"{reply.failure('Anthropic workload identity token exchange')}.{hint}")
    access, expires_in = reply.body.get("access_token"), reply.body.get("expires_in")
    if not isinstance(access, str) or not access or not isinstance(expires_in, int | float):
        raise FederationError("Anthropic workload identity token response is missing access_token or expires_in")
    return access, time.monotonic() + float(expires_in)


async def access_token(fed: Federation, base_url: str) -> str:
    """A current access token for ``fed`` at ``base_url``, exchanged when none is cached or it is due."""
    key = (base_url, fed)
    async with _exchanges.setdefault(key, asyncio.Lock()):
        cached = _tokens.get(key)
        if cached is None or cached[1] - time.monotonic() < REFRESH_WITHIN_S:
            cached = _tokens[key] = await _exchange(fed, base_url)
        return cached[0]


async def token_for(model: Model) -> str:
    """For a request without a key or auth header: a federated token (``anthropic`` only), else the no-key error."""
    fed = configured() if model["provider"] == "anthropic" else None
    if fed is None:
        raise ProviderError(f"No API key for provider: {model['provider']}")
    try:
        return await access_token(fed, model["baseUrl"])
    except FederationError as exc:
        raise ProviderError(str(exc)) from None


def invalidate() -> bool:
    """Forget every cached token (a server rejected one); whether there was any."""
    had = bool(_tokens)
    _tokens.clear()
    return had


def with_token(headers: dict[str, str], token: str) -> dict[str, str]:
    """Request headers carrying the federated token: the bearer header and the OAuth beta added to any others."""
    out = {k: v for k, v in headers.items() if k.lower() not in ("x-api-key", "authorization", "anthropic-beta")}
    betas = [b for k, v in headers.items() if k.lower() == "anthropic-beta" for b in v.split(",") if b.strip()]
    return {**out, "authorization": f"Bearer {token}", "anthropic-beta": ",".join(dict.fromkeys([*betas, OAUTH_BETA]))}
