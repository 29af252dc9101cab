"""Sign-in flows of pi's OAuth providers, each returning the credential pi would store.

Browser flows listen on 127.0.0.1 (``PI_OAUTH_CALLBACK_HOST`` overrides, as in pi) and accept the
pasted redirect URL or code at the same time, for a browser on another machine; device flows show a
code and poll. Methods are offered as pi offers them (a ``select`` prompt where a provider has two).
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Awaitable, Callable
from urllib.parse import parse_qs, urlencode, urlsplit

from pi_coding_agent.ai.auth.oauth import providers as p
from pi_coding_agent.ai.auth.oauth.flows import (
    LoginUI,
    Poll,
    b64url,
    callback_or_pasted,
    parse_authorization_input,
    pkce,
    poll_device,
    rfc8628_poll_result,
    start_callback,
    trusted_url,
)
from pi_coding_agent.ai.auth.oauth.http import OAuthError, call
from pi_coding_agent.ai.providers.vendor import builtin_spec, sign_ins
from pi_coding_agent.ai.types import JsonObject

Credential = JsonObject
LoginFlow = Callable[[LoginUI], Awaitable[Credential]]
PASTE_HINT = "Complete login in your browser, or paste the authorization code / redirect URL here:"

ANTHROPIC_AUTHORIZE_URL = "https://claude.ai/oauth/authorize"
ANTHROPIC_CALLBACK_PORT = 53692
ANTHROPIC_COPY_CODE_REDIRECT = "https://platform.claude.com/oauth/code/callback"
ANTHROPIC_SCOPES = ("org:create_api_key user:profile user:inference user:sessions:claude_code "
                    "user:mcp_servers user:file_upload")
CODEX_AUTHORIZE_URL = "https://auth.openai.com/oauth/authorize"
CODEX_REDIRECT = "http://localhost:1455/auth/callback"
CODEX_DEVICE_CODE_URL = "https://auth.openai.com/api/accounts/deviceauth/usercode"
CODEX_DEVICE_TOKEN_URL = "https://auth.openai.com/api/accounts/deviceauth/token"
CODEX_DEVICE_PAGE = "https://auth.openai.com/codex/device"
CODEX_DEVICE_REDIRECT = "https://auth.openai.com/deviceauth/callback"
CODEX_DEVICE_TIMEOUT_S = 15 * 60
CHATGPT_AUTHORIZE_URL = "https://auth.openai.com/api/accounts/authorize"
CHATGPT_DYNAMIC_CLIENT = "dynamic_agent_client"  # OpenAI registers a new client per sign-in
CHATGPT_CALLBACK_PORT = 1455
CHATGPT_REDIRECT = f"http://127.0.0.1:{CHATGPT_CALLBACK_PORT}/auth/callback"
CHATGPT_SCOPE = f"openid profile email offline_access resource.invoke {p.CHATGPT_DIRECT_SCOPE}"
_UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$", re.IGNORECASE)
XAI_DEVICE_CODE_URL = "https://auth.x.ai/oauth2/device/code"
XAI_SCOPE = "openid profile email offline_access grok-cli:access api:access"
META_DEVICE_URL = "https://auth.meta.com/oidc/device/authorization/"
META_TOKEN_URL = "https://auth.meta.com/oidc/device/token/"
META_CLIENT_ID = "1031625952748946"
OPENROUTER_AUTHORIZE_URL = "https://openrouter.ai/auth"
OPENROUTER_KEYS_URL = "https://openrouter.ai/api/v1/auth/keys"
DEVICE_GRANT = "urn:ietf:params:oauth:grant-type:device_code"


async def _choose(ui: LoginUI, provider: str, second: tuple[str, str]) -> str:
    return await ui.prompt("select", f"Select {provider} login method:",
                           options=[("browser", "Browser login (default)"), second])


def pasted_code(text: str, state: str) -> str:
    code, pasted_state = parse_authorization_input(text)
    if pasted_state and pasted_state != state:
        raise OAuthError("OAuth state mismatch")
    if not code:
        raise OAuthError("Missing authorization code")
    return code


# ----------------------------------------------------------------------------- Anthropic


async def _anthropic_exchange(code: str, state: str, verifier: str, redirect_uri: str) -> Credential:
    reply = await call("POST", p.ANTHROPIC_TOKEN_URL, json={
        "grant_type": "authorization_code", "client_id": p.ANTHROPIC_CLIENT_ID, "code": code, "state": state,
        "redirect_uri": redirect_uri, "code_verifier": verifier})
    if not reply.ok:
        raise reply.failure("Anthropic token exchange")
    return p.token_credential(reply.body, 5 * p.MINUTE_MS)


def _anthropic_url(challenge: str, verifier: str, redirect_uri: str) -> str:
    return ANTHROPIC_AUTHORIZE_URL + "?" + urlencode({
        "code": "true", "client_id": p.ANTHROPIC_CLIENT_ID, "response_type": "code", "redirect_uri": redirect_uri,
        "scope": ANTHROPIC_SCOPES, "code_challenge": challenge, "code_challenge_method": "S256", "state": verifier})


async def login_anthropic(ui: LoginUI) -> Credential:
    method = await _choose(ui, "Anthropic", ("copy_code", "Copy code login (headless)"))
    verifier, challenge = pkce()
    if method == "copy_code":
        ui.notify({"type": "auth_url", "url": _anthropic_url(challenge, verifier, ANTHROPIC_COPY_CODE_REDIRECT),
                   "instructions": "Complete login in your browser, then copy the code Anthropic shows and paste it here."})
        text = await ui.prompt("manual_code", "Paste the code Anthropic shows after you sign in:", placeholder="code#state")
        code, state = pasted_code(text, verifier), parse_authorization_input(text)[1] or verifier
        ui.notify({"type": "progress", "message": "Exchanging authorization code for tokens..."})
        return await _anthropic_exchange(code, state, verifier, ANTHROPIC_COPY_CODE_REDIRECT)
    if method != "browser":
        raise OAuthError(f"Unknown Anthropic login method: {method}")
    server = await start_callback("Anthropic", "/callback", verifier, (ANTHROPIC_CALLBACK_PORT, 0))
    redirect = server.redirect_uri("localhost") if server else f"http://localhost:{ANTHROPIC_CALLBACK_PORT}/callback"
    try:
        ui.notify({"type": "auth_url", "url": _anthropic_url(challenge, verifier, redirect),
                   "instructions": "Complete login in your browser. If the browser is on another machine, "
                                   "paste the final redirect URL here."})
        how, value = await callback_or_pasted(ui, server, PASTE_HINT, redirect)
        code = value if how == "callback" else pasted_code(value, verifier)
        ui.notify({"type": "progress", "message": "Exchanging authorization code for tokens..."})
        return await _anthropic_exchange(code, verifier, verifier, redirect)
    finally:
        if server is not None:
            server.close()


# ----------------------------------------------------------------------------- OpenAI Codex


async def _codex_exchange(code: str, verifier: str, redirect_uri: str) -> Credential:
    reply = await call("POST", p.CODEX_TOKEN_URL, form={
        "grant_type": "authorization_code", "client_id": p.CODEX_CLIENT_ID, "code": code,
        "code_verifier": verifier, "redirect_uri": redirect_uri})
    if not reply.ok:
        raise reply.failure("OpenAI Codex token exchange")
    return p.codex_credential(reply.body)


async def _codex_browser(ui: LoginUI) -> Credential:
    verifier, challenge = pkce()
    state = secrets.token_hex(16)
    url = CODEX_AUTHORIZE_URL + "?" + urlencode({
        "response_type": "code", "client_id": p.CODEX_CLIENT_ID, "redirect_uri": CODEX_REDIRECT,
        "scope": "openid profile email offline_access", "code_challenge": challenge,
        "code_challenge_method": "S256", "state": state, "id_token_add_organizations": "true",
        "codex_cli_simplified_flow": "true", "originator": "pi"})
    server = await start_callback("OpenAI", "/auth/callback", state, (1455,))
    try:
        ui.notify({"type": "auth_url", "url": url, "instructions": "A browser window should open. Complete login to finish."})
        how, value = await callback_or_pasted(ui, server, PASTE_HINT, CODEX_REDIRECT)
        code = value if how == "callback" else pasted_code(value, state)
        return await _codex_exchange(code, verifier, CODEX_REDIRECT)
    finally:
        if server is not None:
            server.close()


async def _codex_device(ui: LoginUI) -> Credential:
    reply = await call("POST", CODEX_DEVICE_CODE_URL, json={"client_id": p.CODEX_CLIENT_ID})
    if not reply.ok:
        raise reply.failure("OpenAI Codex device code request")
    device_id, user_code = reply.body.get("device_auth_id"), reply.body.get("user_code")
    interval = float(reply.body.get("interval") or 5)
    if not isinstance(device_id, str) or not isinstance(user_code, str):
        raise OAuthError("Invalid OpenAI Codex device code response")
    ui.notify({"type": "device_code", "userCode": user_code, "verificationUri": CODEX_DEVICE_PAGE,
               "intervalSeconds": interval, "expiresInSeconds": CODEX_DEVICE_TIMEOUT_S})

    async def poll() -> Poll:
        answer = await call("POST", CODEX_DEVICE_TOKEN_URL, json={"device_auth_id": device_id, "user_code": user_code})
        if answer.ok:
            code, verifier = answer.body.get("authorization_code"), answer.body.get("code_verifier")
            if isinstance(code, str) and isinstance(verifier, str):
                return Poll("complete", (code, verifier))
            return Poll("failed", message="Invalid OpenAI Codex device auth token response")
        if answer.status in (403, 404) or answer.detail().startswith("deviceauth_authorization_pending"):
            return Poll("pending")
        if answer.detail().startswith("slow_down"):
            return Poll("slow_down")
        return Poll("failed", message=str(answer.failure("OpenAI Codex device auth")))

    code, verifier = await poll_device(poll, interval, CODEX_DEVICE_TIMEOUT_S)
    return await _codex_exchange(code, verifier, CODEX_DEVICE_REDIRECT)


async def login_codex(ui: LoginUI) -> Credential:
    method = await _choose(ui, "OpenAI Codex", ("device_code", "Device code login (headless)"))
    if method == "device_code":
        return await _codex_device(ui)
    if method != "browser":
        raise OAuthError(f"Unknown OpenAI Codex login method: {method}")
    return await _codex_browser(ui)


# ----------------------------------------------------------------------------- Sign in with ChatGPT (openai)


def _chatgpt_callback(query: dict[str, list[str]], state: str) -> tuple[str, str]:
    """(code, issued client id) from the redirect OpenAI sends after registering the client."""
    def first(name: str) -> str:
        return (query.get(name) or [""])[0].strip()

    if error := first("error"):
        raise OAuthError(f"ChatGPT authorization failed: {error}")
    if not first("code"):
        raise OAuthError("Missing authorization code")
    if first("state") != state:
        raise OAuthError("OAuth state mismatch")
    if not first("client_id"):
        raise OAuthError("OpenAI OAuth registration callback did not contain an issued client ID")
    return first("code"), first("client_id")


def _chatgpt_pasted(text: str, state: str) -> tuple[str, str]:
    parts, expected = urlsplit(text.strip()), urlsplit(CHATGPT_REDIRECT)
    if (parts.scheme, parts.netloc, parts.path) != (expected.scheme, expected.netloc, expected.path):
        raise OAuthError(f"The pasted callback URL must start with {CHATGPT_REDIRECT}")
    return _chatgpt_callback(parse_qs(parts.query), state)


async def login_chatgpt(ui: LoginUI, device_id: str) -> Credential:
    """Sign in with ChatGPT for the ``openai`` provider: the client is registered during the sign-in
    (its id comes back with the code) and the installation is named by its device id."""
    if not _UUID.match(device_id):
        raise OAuthError("Sign in with ChatGPT requires a device ID (UUID) for this installation")
    verifier, challenge = pkce()
    state = b64url(secrets.token_bytes(32))
    server = await start_callback("ChatGPT", "/auth/callback", state, (CHATGPT_CALLBACK_PORT,))
    if server is None:
        raise OAuthError(f"Port {CHATGPT_CALLBACK_PORT} is in use, probably by an unfinished login in another "
                         "pi session or by the Codex CLI. Cancel that login and try again.")
    url = CHATGPT_AUTHORIZE_URL + "?" + urlencode({
        "client_id": CHATGPT_DYNAMIC_CLIENT, "agent_name_hint": "Pi", "ext_agent_host_id": f"urn:uuid:{device_id.lower()}",
        "response_type": "code", "redirect_uri": CHATGPT_REDIRECT, "resource": p.CHATGPT_RESOURCE,
        "scope": CHATGPT_SCOPE, "state": state, "code_challenge": challenge, "code_challenge_method": "S256",
        "nonce": b64url(secrets.token_bytes(32))})
    try:
        ui.notify({"type": "auth_url", "url": url, "instructions": "Complete sign-in in your browser. If the "
                   "callback does not complete, paste the final redirect URL here."})
        how, value = await callback_or_pasted(ui, server, "Complete login in your browser, or paste the final "
                                              "redirect URL here:", CHATGPT_REDIRECT)
        code, client_id = _chatgpt_callback(server.query, state) if how == "callback" else _chatgpt_pasted(value, state)
    finally:
        server.close()
    ui.notify({"type": "progress", "message": "Exchanging authorization code for tokens..."})
    reply = await call("POST", p.CHATGPT_TOKEN_URL, form={
        "grant_type": "authorization_code", "client_id": client_id, "code": code, "code_verifier": verifier,
        "redirect_uri": CHATGPT_REDIRECT, "resource": p.CHATGPT_RESOURCE})
    if not reply.ok:
        raise reply.failure("OpenAI OAuth token request")
    if not isinstance(reply.body.get("id_token"), str) or not reply.body["id_token"].strip():
        raise OAuthError("OpenAI OAuth token response did not contain an ID token")
    return p.chatgpt_credential(reply.body, client_id)


# ----------------------------------------------------------------------------- device-code providers


async def device_start(ui: LoginUI, url: str, form: dict[str, str], name: str, complete_first: bool,
                        headers: dict[str, str] | None = None) -> tuple[str, float | None, float | None]:
    """Request a device code, show it, and return (device_code, interval, expires_in)."""
    reply = await call("POST", url, form=form, headers=headers)
    if not reply.ok:
        raise reply.failure(f"{name} device authorization")
    body = reply.body
    device_code, user_code = body.get("device_code"), body.get("user_code")
    complete = trusted_url(body.get("verification_uri_complete"))
    verification = (complete if complete_first else None) or trusted_url(body.get("verification_uri")) or complete
    if not isinstance(device_code, str) or not isinstance(user_code, str) or verification is None:
        raise OAuthError(f"Invalid {name} device authorization response")
    interval, expires = body.get("interval"), body.get("expires_in")
    event: JsonObject = {"type": "device_code", "userCode": user_code, "verificationUri": verification}
    if isinstance(interval, int | float):
        event["intervalSeconds"] = interval
    if isinstance(expires, int | float):
        event["expiresInSeconds"] = expires
    ui.notify(event)
    return (device_code, interval if isinstance(interval, int | float) and interval > 0 else None,
            expires if isinstance(expires, int | float) else None)


async def device_tokens(token_url: str, form: dict[str, str], name: str, interval: float | None,
                         expires: float | None, headers: dict[str, str] | None = None) -> JsonObject:
    async def poll() -> Poll:
        reply = await call("POST", token_url, form=form, headers=headers)
        if reply.ok and isinstance(reply.body.get("access_token"), str):
            return Poll("complete", reply.body)
        return rfc8628_poll_result(False, reply.body, name) or Poll("failed")

    body: JsonObject = await poll_device(poll, interval, expires, wait_first=True)
    return body


async def login_xai(ui: LoginUI) -> Credential:
    device, interval, expires = await device_start(ui, XAI_DEVICE_CODE_URL, {
        "client_id": p.XAI_CLIENT_ID, "scope": XAI_SCOPE, "referrer": "pi"}, "xAI", complete_first=True)
    body = await device_tokens(p.XAI_TOKEN_URL, {"grant_type": DEVICE_GRANT, "client_id": p.XAI_CLIENT_ID,
                                                  "device_code": device}, "xAI", interval, expires)
    return p.token_credential(body, 5 * p.MINUTE_MS, default_lifetime_s=3600)


async def login_kimi(ui: LoginUI) -> Credential:
    host = p.kimi_host()
    device, interval, expires = await device_start(ui, f"{host}/api/oauth/device_authorization", {
        "client_id": p.KIMI_CLIENT_ID}, "Kimi Code", complete_first=True)
    body = await device_tokens(f"{host}/api/oauth/token", {"client_id": p.KIMI_CLIENT_ID, "device_code": device,
                                                            "grant_type": DEVICE_GRANT}, "Kimi Code",
                                interval, expires or 15 * 60)
    return p.token_credential(body, 0)


async def login_meta(ui: LoginUI) -> Credential:
    device, interval, expires = await device_start(ui, META_DEVICE_URL, {"client_id": META_CLIENT_ID}, "Meta",
                                                    complete_first=True)
    body = await device_tokens(META_TOKEN_URL, {"client_id": META_CLIENT_ID, "device_code": device,
                                                 "grant_type": DEVICE_GRANT}, "Meta", interval, expires)
    ui.notify({"type": "progress", "message": "Enabling Meta Model API access..."})
    return await p.mint_meta_key(str(body["access_token"]))


async def login_copilot(ui: LoginUI) -> Credential:
    answer = await ui.prompt("text", "GitHub Enterprise URL/domain (blank for github.com)", placeholder="company.ghe.com")
    domain = p.copilot_domain({"enterpriseUrl": answer}) if answer.strip() else None
    if answer.strip() and not domain:
        raise OAuthError("Invalid GitHub Enterprise URL/domain")
    host = domain or "github.com"
    agent = {"User-Agent": p.COPILOT_HEADERS["User-Agent"]}
    device, interval, expires = await device_start(ui, f"https://{host}/login/device/code", {
        "client_id": p.COPILOT_CLIENT_ID, "scope": "read:user"}, "GitHub", False, agent)
    body = await device_tokens(f"https://{host}/login/oauth/access_token", {
        "client_id": p.COPILOT_CLIENT_ID, "device_code": device, "grant_type": DEVICE_GRANT},
        "GitHub", interval, expires, agent)
    cred = await p.copilot_token(str(body["access_token"]), domain)
    models = await p.copilot_models(cred["access"], domain)
    return {**cred, "availableModelIds": p.picker_model_ids(models)}


# ----------------------------------------------------------------------------- OpenRouter


async def login_openrouter(ui: LoginUI) -> Credential:
    verifier, challenge = pkce()
    server = await start_callback("OpenRouter", f"/oauth/callback/{secrets.token_hex(16)}", None, (0,))
    if server is None:
        raise OAuthError("Could not listen for the OpenRouter callback on the loopback interface")
    try:
        redirect = server.redirect_uri("127.0.0.1")
        url = OPENROUTER_AUTHORIZE_URL + "?" + urlencode({"callback_url": redirect, "code_challenge": challenge,
                                                          "code_challenge_method": "S256"})
        ui.notify({"type": "auth_url", "url": url, "instructions": "Complete sign-in in your browser. If the browser "
                   "is on another machine, paste the final redirect URL here."})
        how, value = await callback_or_pasted(ui, server, PASTE_HINT, redirect)
        code = value if how == "callback" else parse_authorization_input(value)[0]
        if not code:
            raise OAuthError("Missing authorization code")
        reply = await call("POST", OPENROUTER_KEYS_URL, json={
            "code": code, "code_verifier": verifier, "code_challenge_method": "S256"})
        key = reply.body.get("key")
        if not reply.ok or not isinstance(key, str) or not key:
            raise reply.failure("OpenRouter OAuth key exchange")
        return {"type": "oauth", "access": key, "refresh": "", "expires": 9007199254740991}
    finally:
        server.close()


# Every provider with an account sign-in; ``login`` runs one (``openai`` also needs the device id).
LOGINS: dict[str, LoginFlow] = {
    "anthropic": login_anthropic,
    "openai-codex": login_codex,
    "github-copilot": login_copilot,
    "xai": login_xai,
    "kimi-coding": login_kimi,
    "meta": login_meta,
    "openrouter": login_openrouter,
}
SIGN_IN_PROVIDERS = (*LOGINS, *sign_ins(), "openai")  # and the sign-ins of vendors (``ai.providers``)


async def login(provider: str, ui: LoginUI, device_id: Callable[[], str] | None = None,
                spec: p.OAuthProvider | None = None) -> Credential:
    """Run ``provider``'s sign-in; ``device_id`` gives the installation's id (settings ``deviceId``),
    ``spec`` the provider's own sign-in (a vendor's, ``ai.providers``, or an extension's)."""
    spec = spec or builtin_spec(provider)
    if spec is not None and spec.login is not None:
        return await spec.login(ui)
    if provider == "openai":
        if device_id is None:
            raise OAuthError("Sign in with ChatGPT requires a device ID (UUID) for this installation")
        return await login_chatgpt(ui, device_id())
    return await LOGINS[provider](ui)
