"""Radius's account sign-in and token refresh, at the built-in gateway or a models.json provider's own.

Loaded on first use (a sign-in, a due refresh): the catalog side (``radius``) must stay light.
"""

from __future__ import annotations

import uuid
from urllib.parse import urlencode

from pi_coding_agent.ai.auth.oauth import providers as p
from pi_coding_agent.ai.auth.oauth.flows import LoginUI, callback_or_pasted, pkce, start_callback, trusted_url
from pi_coding_agent.ai.auth.oauth.http import OAuthError, call
from pi_coding_agent.ai.auth.oauth.login import (
    DEVICE_GRANT,
    PASTE_HINT,
    device_start,
    device_tokens,
    pasted_code,
)
from pi_coding_agent.ai.types import JsonObject

CLIENT_ID = "pi-gateway"
SCOPE = "gateway offline_access"
CALLBACK_PORT = 1456
REDIRECT = f"http://127.0.0.1:{CALLBACK_PORT}/oauth/callback"


def credential(body: JsonObject) -> p.Credential:
    """pi's Radius credential: one minute of skew, and the granted ``scope`` when the gateway names one."""
    cred = p.token_credential(body, p.MINUTE_MS)
    out = {"type": "oauth", "access": cred["access"], "refresh": cred["refresh"], "expires": cred["expires"]}
    return {**out, "scope": body["scope"]} if isinstance(body.get("scope"), str) else out


async def _token(gateway: str, name: str, form: dict[str, str]) -> p.Credential:
    reply = await call("POST", f"{gateway}/v1/oauth/token", form={"client_id": CLIENT_ID, **form})
    if not reply.ok:
        raise reply.failure(f"{name} OAuth token request")
    return credential(reply.body)


async def refresh(cred: p.Credential, gateway: str) -> p.Credential:
    return await _token(gateway, "Radius", {"grant_type": "refresh_token", "refresh_token": cred["refresh"]})


async def _browser(ui: LoginUI, gateway: str, name: str) -> p.Credential:
    """The gateway names its authorization page (``/v1/oauth``); the code comes back on port 1456."""
    discovery = await call("GET", f"{gateway}/v1/oauth")
    authorize = trusted_url(discovery.body.get("authorizationEndpoint")) if discovery.ok else None
    if authorize is None:
        raise OAuthError(f"Invalid Radius OAuth config from {gateway}")
    verifier, challenge = pkce()
    state = str(uuid.uuid4())
    server = await start_callback(name, "/oauth/callback", state, (CALLBACK_PORT,))
    if server is None:
        raise OAuthError(f"Could not listen for the {name} callback on port {CALLBACK_PORT}")
    url = authorize + "?" + urlencode({
        "response_type": "code", "client_id": CLIENT_ID, "redirect_uri": REDIRECT, "scope": SCOPE,
        "code_challenge": challenge, "code_challenge_method": "S256", "handoff": "url", "state": state})
    try:
        ui.notify({"type": "progress", "message": f"Listening for OAuth callback on {REDIRECT}"})
        ui.notify({"type": "auth_url", "url": url, "instructions": "Continue in your browser."})
        how, value = await callback_or_pasted(ui, server, PASTE_HINT, REDIRECT)
        code = value if how == "callback" else pasted_code(value, state)
    finally:
        server.close()
    return await _token(gateway, name, {"grant_type": "authorization_code", "redirect_uri": REDIRECT,
                                        "code": code, "code_verifier": verifier})


async def login(ui: LoginUI, gateway: str, name: str) -> p.Credential:
    """Radius's sign-in at ``gateway``: in the browser or with a device code, as the user picks."""
    method = await ui.prompt("select", f"Sign in to {name}:", options=[
        ("browser", "Sign in with browser (recommended)"),
        ("device-code", "Sign in with device code (when signing in from another device)")])
    if method == "browser":
        return await _browser(ui, gateway, name)
    if method != "device-code":
        raise OAuthError(f"Unknown {name} sign-in method: {method}")
    device, interval, expires = await device_start(ui, f"{gateway}/v1/oauth/device", {
        "client_id": CLIENT_ID, "scope": SCOPE}, name, complete_first=False)
    body = await device_tokens(f"{gateway}/v1/oauth/token", {
        "grant_type": DEVICE_GRANT, "client_id": CLIENT_ID, "device_code": device}, name, interval, expires)
    return credential(body)


def spec(provider: str, name: str, gateway: str) -> p.OAuthProvider:
    """``provider``'s sign-in and refresh at ``gateway`` (the built-in one, or a models.json provider's own)."""

    async def refresh_at(cred: p.Credential) -> p.Credential:
        return await refresh(cred, gateway)

    async def login_at(ui: LoginUI) -> p.Credential:
        return await login(ui, gateway, name)

    return p.OAuthProvider(provider, name, name, refresh_at, login=login_at)
