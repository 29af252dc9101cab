"""The OAuth providers of pi 1.6.0: client ids, endpoints, token refresh and request auth.

Each provider's refresh returns the credential exactly as pi stores it (``type``, ``access``,
``refresh``, ``expires`` in ms since the epoch, plus pi's extra fields: ``accountId`` for OpenAI
Codex, ``enterpriseUrl``/``availableModelIds`` for GitHub Copilot, ``clientId``/``scopes`` for
Sign in with ChatGPT), so either implementation can continue from what the other wrote.
Sign-in flows live in ``login.py``.
"""

from __future__ import annotations

import base64
import os
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import orjson

from pi_coding_agent.ai.auth.oauth.http import OAuthError, call
from pi_coding_agent.ai.types import JsonObject

Credential = dict[str, Any]
MINUTE_MS = 60_000

ANTHROPIC_CLIENT_ID = "9d1c250a-e61b-44d9-88ed-5944d1962f5e"
ANTHROPIC_TOKEN_URL = "https://platform.claude.com/v1/oauth/token"
CODEX_CLIENT_ID = "app_EMoamEEZ73f0CkXaXp7hrann"
CODEX_TOKEN_URL = "https://auth.openai.com/oauth/token"
CHATGPT_TOKEN_URL = "https://auth.openai.com/api/accounts/oauth/token"
CHATGPT_RESOURCE = "https://api.openai.com/v1"
CHATGPT_DIRECT_SCOPE = "chatgpt.tokens.use.direct"
COPILOT_CLIENT_ID = "Iv1.b507a08c87ecfe98"
COPILOT_HEADERS = {
    "User-Agent": "GitHubCopilotChat/0.35.0",
    "Editor-Version": "vscode/1.107.0",
    "Editor-Plugin-Version": "copilot-chat/0.35.0",
    "Copilot-Integration-Id": "vscode-chat",
}
COPILOT_API_VERSION = "2026-06-01"
XAI_CLIENT_ID = "b1a00492-073a-47ea-816f-4c329264a828"
XAI_TOKEN_URL = "https://auth.x.ai/oauth2/token"
KIMI_CLIENT_ID = "17e5f671-d194-4dfb-9706-5516cb48c098"
META_KEY_MINT_URL = "https://api.meta.ai/muse-code/key"
META_KEY_LIFETIME_MS = 24 * 60 * MINUTE_MS


def now_ms() -> int:
    return int(time.time() * 1000)


def token_credential(body: JsonObject, skew_ms: int, previous_refresh: str | None = None,
                     default_lifetime_s: float | None = None) -> Credential:
    """A credential from a standard token response; ``expires`` is moved ``skew_ms`` earlier."""
    access = body.get("access_token")
    refresh = body.get("refresh_token") or previous_refresh
    expires_in = body.get("expires_in", default_lifetime_s)
    if not isinstance(access, str) or not access or not isinstance(refresh, str) or not refresh:
        raise OAuthError("token response is missing access_token or refresh_token")
    if not isinstance(expires_in, int | float) or expires_in <= 0:
        raise OAuthError("token response has no valid expires_in")
    return {"type": "oauth", "refresh": refresh, "access": access,
            "expires": int(now_ms() + expires_in * 1000 - skew_ms)}


# ----------------------------------------------------------------------------- refresh, per provider


async def refresh_anthropic(cred: Credential) -> Credential:
    reply = await call("POST", ANTHROPIC_TOKEN_URL, json={
        "grant_type": "refresh_token", "client_id": ANTHROPIC_CLIENT_ID, "refresh_token": cred["refresh"]})
    if not reply.ok:
        raise reply.failure("Anthropic token refresh")
    return token_credential(reply.body, 5 * MINUTE_MS)


def jwt_claims(token: str) -> JsonObject:
    """The payload of a JWT, unverified (only used to read the account id pi stores)."""
    parts = token.split(".")
    if len(parts) != 3:
        return {}
    try:
        claims = orjson.loads(base64.urlsafe_b64decode(parts[1] + "=" * (-len(parts[1]) % 4)))
    except (ValueError, orjson.JSONDecodeError):
        return {}
    return claims if isinstance(claims, dict) else {}


def codex_credential(body: JsonObject) -> Credential:
    cred = token_credential(body, 0)
    account = jwt_claims(cred["access"]).get("https://api.openai.com/auth", {})
    account_id = account.get("chatgpt_account_id") if isinstance(account, dict) else None
    if not isinstance(account_id, str) or not account_id:
        raise OAuthError("Failed to extract accountId from token")
    return {**cred, "accountId": account_id}


async def refresh_codex(cred: Credential) -> Credential:
    reply = await call("POST", CODEX_TOKEN_URL, form={
        "grant_type": "refresh_token", "refresh_token": cred["refresh"], "client_id": CODEX_CLIENT_ID})
    if not reply.ok:
        raise reply.failure("OpenAI Codex token refresh")
    return codex_credential(reply.body)


def chatgpt_credential(body: JsonObject, client_id: str) -> Credential:
    scopes = str(body.get("scope") or "").split()
    if CHATGPT_DIRECT_SCOPE not in scopes:
        raise OAuthError(f"OpenAI OAuth grant did not include {CHATGPT_DIRECT_SCOPE}")
    cred = token_credential(body, 3 * MINUTE_MS)
    return {"type": "oauth", "access": cred["access"], "refresh": cred["refresh"], "expires": cred["expires"],
            "clientId": client_id, "scopes": scopes}  # pi's field order for this provider


async def refresh_chatgpt(cred: Credential) -> Credential:
    client_id = cred.get("clientId")
    if not isinstance(client_id, str) or not client_id.strip():
        raise OAuthError("Stored OpenAI OAuth credential does not contain an issued client ID; sign in again")
    reply = await call("POST", CHATGPT_TOKEN_URL, form={
        "grant_type": "refresh_token", "client_id": client_id, "refresh_token": cred["refresh"],
        "resource": CHATGPT_RESOURCE})
    if not reply.ok:
        raise reply.failure("OpenAI OAuth token refresh")
    return chatgpt_credential(reply.body, client_id)


def copilot_domain(cred: Credential) -> str | None:
    url = cred.get("enterpriseUrl")
    if not isinstance(url, str) or not url.strip():
        return None
    from urllib.parse import urlsplit

    host = urlsplit(url if "://" in url else f"https://{url}").hostname
    return host or None


def copilot_base_url(token: str, domain: str | None) -> str:
    """The API host a Copilot token names (``proxy-ep=``), else the enterprise or individual one."""
    for part in token.split(";"):
        if part.startswith("proxy-ep="):
            return "https://" + part.removeprefix("proxy-ep=").replace("proxy.", "api.", 1)
    return f"https://copilot-api.{domain}" if domain else "https://api.individual.githubcopilot.com"


async def copilot_token(github_token: str, domain: str | None) -> Credential:
    """Exchange the GitHub token (stored as ``refresh``) for a short-lived Copilot token."""
    reply = await call("GET", f"https://api.{domain or 'github.com'}/copilot_internal/v2/token",
                       headers={"Authorization": f"Bearer {github_token}", **COPILOT_HEADERS})
    if not reply.ok:
        raise reply.failure("GitHub Copilot token request")
    token, expires_at = reply.body.get("token"), reply.body.get("expires_at")
    if not isinstance(token, str) or not isinstance(expires_at, int | float):
        raise OAuthError("Invalid Copilot token response fields")
    cred: Credential = {"type": "oauth", "refresh": github_token, "access": token,
                        "expires": int(expires_at * 1000 - 5 * MINUTE_MS)}
    if domain:
        cred["enterpriseUrl"] = domain
    return cred


async def copilot_models(token: str, domain: str | None) -> list[JsonObject]:
    """The account's model entries from the Copilot API (tool-capable ones only)."""
    reply = await call("GET", f"{copilot_base_url(token, domain)}/models", headers={
        "Authorization": f"Bearer {token}", **COPILOT_HEADERS, "X-GitHub-Api-Version": COPILOT_API_VERSION})
    if not reply.ok or not isinstance(reply.body.get("data"), list):
        raise reply.failure("GitHub Copilot model list")
    return [m for m in reply.body["data"] if isinstance(m, dict) and isinstance(m.get("id"), str)
            and (m.get("capabilities") or {}).get("supports", {}).get("tool_calls") is not False]


def picker_model_ids(models: list[dict[str, Any]]) -> list[str]:
    return [m["id"] for m in models
            if m.get("model_picker_enabled") is True and (m.get("policy") or {}).get("state") != "disabled"]


async def refresh_copilot(cred: Credential) -> Credential:
    domain = copilot_domain(cred)
    fresh = await copilot_token(cred["refresh"], domain)
    return {**fresh, "availableModelIds": picker_model_ids(await copilot_models(fresh["access"], domain))}


async def refresh_xai(cred: Credential) -> Credential:
    reply = await call("POST", XAI_TOKEN_URL, form={
        "grant_type": "refresh_token", "client_id": XAI_CLIENT_ID, "refresh_token": cred["refresh"]})
    if not reply.ok:
        raise reply.failure("xAI OAuth token refresh")
    return token_credential(reply.body, 5 * MINUTE_MS, cred["refresh"], default_lifetime_s=3600)


def kimi_host() -> str:
    host = os.environ.get("KIMI_CODE_OAUTH_HOST") or os.environ.get("KIMI_OAUTH_HOST") or "https://auth.kimi.com"
    return host.rstrip("/")


async def refresh_kimi(cred: Credential) -> Credential:
    reply = await call("POST", f"{kimi_host()}/api/oauth/token", form={
        "client_id": KIMI_CLIENT_ID, "grant_type": "refresh_token", "refresh_token": cred["refresh"]})
    if not reply.ok:
        raise reply.failure("Kimi Code token refresh")
    return token_credential(reply.body, 0)


async def mint_meta_key(identity_token: str) -> Credential:
    """Meta issues no refresh token: the identity token (``refresh``) mints a day-long API key."""
    reply = await call("POST", META_KEY_MINT_URL, json={}, headers={
        "Authorization": f"Bearer {identity_token}", "x-api-version": "1.0.0"})
    if reply.status in (401, 403):
        raise OAuthError(f"Meta session expired (status {reply.status}). Run `pi auth login meta` to sign in again.")
    key = reply.body.get("api_key")
    if not reply.ok or not isinstance(key, str) or not key:
        raise reply.failure("Meta API key mint")
    return {"type": "oauth", "refresh": identity_token, "access": key, "expires": now_ms() + META_KEY_LIFETIME_MS}


async def refresh_meta(cred: Credential) -> Credential:
    return await mint_meta_key(cred["refresh"])


async def keep(cred: Credential) -> Credential:
    """OpenRouter's sign-in yields a non-expiring API key: nothing to refresh."""
    return cred


# ----------------------------------------------------------------------------- the table


@dataclass(frozen=True)
class OAuthProvider:
    """One provider's account sign-in. The optional callables are a provider's own behaviour (an
    extension's ``oauth``, ``coding/extensions/providers.py``); unset, the built-in rules apply."""

    id: str
    title: str  # the provider's name ("Anthropic"); ``name`` is its sign-in method's
    name: str
    refresh: Callable[[Credential], Awaitable[Credential]]
    login: Callable[[Any], Awaitable[Credential]] | None = None  # its own flow, given a ``flows.LoginUI``
    api_key: Callable[[Credential], str] | None = None  # the request key a credential gives (else ``access``)
    modify_models: Callable[[list[Any], Credential], list[Any]] | None = None  # the models a credential sees

    def base_url(self, cred: Credential) -> str | None:
        """A per-credential API base URL (GitHub Copilot's proxy endpoint), else None."""
        if self.id == "github-copilot":
            return copilot_base_url(str(cred.get("access", "")), copilot_domain(cred))
        return None

    def key_of(self, cred: Credential) -> str | None:
        """The key a request sends for this credential."""
        key = self.api_key(cred) if self.api_key is not None else cred.get("access")
        return key if isinstance(key, str) and key else None


PROVIDERS: dict[str, OAuthProvider] = {p.id: p for p in (
    OAuthProvider("anthropic", "Anthropic", "Anthropic (Claude Pro/Max)", refresh_anthropic),
    OAuthProvider("openai-codex", "OpenAI Codex", "OpenAI (ChatGPT Plus/Pro)", refresh_codex),
    OAuthProvider("openai", "OpenAI", "OpenAI (ChatGPT subscription)", refresh_chatgpt),
    OAuthProvider("github-copilot", "GitHub Copilot", "GitHub Copilot", refresh_copilot),
    OAuthProvider("xai", "xAI", "xAI (Grok/X subscription)", refresh_xai),
    OAuthProvider("kimi-coding", "Kimi For Coding", "Kimi Code (subscription)", refresh_kimi),
    OAuthProvider("meta", "Meta", "Meta (Muse subscription)", refresh_meta),
    OAuthProvider("openrouter", "OpenRouter", "OpenRouter OAuth", keep),
)}
