"""A fake OAuth authorization server on 127.0.0.1 for the providers' real endpoint paths.

Point the agent at it with ``PI_OAUTH_ORIGIN=<server.url>``: every sign-in and refresh request
keeps its path and comes here. It implements what the tests need of each provider:

* authorization code with PKCE (S256): ``approve(authorize_url)`` plays the user who signs in —
  it records the challenge, issues a one-time code and returns the redirect URL (the browser's
  next stop); the token endpoint checks ``code_verifier`` against the recorded challenge.
* refresh with rotation: every refresh issues a new access *and* refresh token and invalidates
  the old refresh token, so a client that refreshes twice with the same token (a lost update
  between processes) gets ``invalid_grant``. ``refresh_delay_s`` widens race windows.
* revocation: ``POST /oauth/revoke`` (RFC 7009) or ``revoke(token)`` kills a refresh token.
* device code (RFC 8628, GitHub's ``/login/device/code`` + ``/login/oauth/access_token``, Radius's
  ``/v1/oauth/device`` + the device grant at ``/v1/oauth/token``): ``authorization_pending`` until
  ``approve_device()``. Radius's ``GET /v1/oauth`` names its authorization page.
* GitHub Copilot's token exchange and model list; Meta's API key mint (``/muse-code/key``).
* Radius's gateway catalog: ``GET /v1/config`` answers ``{"baseUrl": "<url>/v1", "models":
  gateway_models}`` to a bearer token the server issued or one of ``gateway_keys`` (API keys), and 401
  to anything else.

* Anthropic workload identity federation: the RFC 7523 ``jwt-bearer`` grant at ``/v1/oauth/token``
  trades an accepted identity token (``identity_tokens``) for an access token, without a refresh token.
* Sign in with ChatGPT's dynamic client registration: an authorization request for
  ``dynamic_agent_client`` gets a newly issued ``client_id`` in its redirect, and the code exchange and
  refreshes must name that client.

Paths: Anthropic ``/v1/oauth/token`` (JSON), OpenAI Codex ``/oauth/token`` (form), xAI
``/oauth2/token`` (form), Sign in with ChatGPT ``/api/accounts/oauth/token`` (form).
"""

from __future__ import annotations

import base64
import hashlib
import json
import secrets
import threading
import time
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

from tests.support.fakes.local_server import LocalServer, send_json

CHATGPT_TOKEN_PATH = "/api/accounts/oauth/token"
TOKEN_PATHS = ("/v1/oauth/token", "/oauth/token", "/oauth2/token", "/api/oauth/token", CHATGPT_TOKEN_PATH)
# a model as Radius's /v1/config lists it (no api/provider/baseUrl: the client adds them)
GATEWAY_MODEL: dict[str, Any] = {
    "id": "house-blend", "name": "House Blend", "reasoning": True, "input": ["text"],
    "cost": {"input": 1, "output": 2, "cacheRead": 0.1, "cacheWrite": 0}, "contextWindow": 200000, "maxTokens": 32000,
    "thinkingLevelMap": {"off": None, "high": "high"}}
CHATGPT_SCOPE = "openid profile email offline_access resource.invoke chatgpt.tokens.use.direct"


def s256(verifier: str) -> str:
    return base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()


def codex_jwt(account_id: str, serial: int) -> str:
    """An unsigned JWT with the claim OpenAI puts the ChatGPT account id in."""
    def part(obj: dict[str, Any]) -> str:
        return base64.urlsafe_b64encode(json.dumps(obj).encode()).rstrip(b"=").decode()
    claims = {"n": serial, "https://api.openai.com/auth": {"chatgpt_account_id": account_id}}
    return f"{part({'alg': 'none'})}.{part(claims)}.sig"


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: Any

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _body(self) -> dict[str, Any]:
        raw = self.rfile.read(int(self.headers.get("content-length") or 0))
        if "json" in (self.headers.get("content-type") or ""):
            return json.loads(raw or b"{}")
        return {k: v[0] for k, v in parse_qs(raw.decode()).items()}

    def _reply(self, status: int, body: dict[str, Any]) -> None:
        send_json(self, status, body)

    def do_POST(self) -> None:
        fake = self.server.fake
        path, body = urlsplit(self.path).path, self._body()
        fake.log(self.command, path, body, dict(self.headers))
        if path in TOKEN_PATHS:
            self._reply(*fake.token(path, body))
        elif path == "/oauth/revoke":
            fake.revoke(body.get("token", ""))
            self._reply(200, {})
        elif path in ("/login/device/code", "/v1/oauth/device"):
            self._reply(200, fake.start_device())
        elif path == "/login/oauth/access_token":
            self._reply(200, fake.poll_device(body.get("device_code", "")))
        elif path == "/muse-code/key":
            self._reply(*fake.meta_key(self.headers.get("authorization", "")))
        else:
            self._reply(404, {"error": "not_found"})

    def do_GET(self) -> None:
        fake = self.server.fake
        path = urlsplit(self.path).path
        fake.log(self.command, path, {}, dict(self.headers))
        if path == "/copilot_internal/v2/token":
            self._reply(*fake.copilot_token(self.headers.get("authorization", "")))
        elif path == "/v1/oauth":  # Radius's discovery of its authorization page
            self._reply(200, {"authorizationEndpoint": "https://radius.pi.dev/oauth/authorize"})
        elif path == "/v1/config":
            self._reply(*fake.gateway_config(self.headers.get("authorization", "")))
        elif path == "/models":
            self._reply(200, {"data": [{"id": "gpt-4.1", "model_picker_enabled": True},
                                       {"id": "hidden", "model_picker_enabled": False}]})
        else:
            self._reply(404, {"error": "not_found"})



class FakeOAuthServer(LocalServer):
    handler = _Handler

    def __init__(self, expires_in: int = 3600) -> None:
        self.expires_in = expires_in
        self.refresh_delay_s = 0.0
        self.lock = threading.Lock()
        self.requests: list[dict[str, Any]] = []
        self.live_refresh: set[str] = set()
        self.codes: dict[str, dict[str, str]] = {}
        self.devices: dict[str, bool] = {}
        self.serial = 0
        self.issued_clients: set[str] = set()
        self.identity_tokens: set[str] = set()  # OIDC tokens the jwt-bearer grant accepts (Anthropic federation)
        self.issued_access: set[str] = set()
        self.gateway_keys: set[str] = set()  # API keys Radius's /v1/config accepts
        self.gateway_models: list[dict[str, Any]] = [GATEWAY_MODEL]
        self.gateway_down = False  # /v1/config answers 503

    def log(self, method: str, path: str, body: dict[str, Any], headers: dict[str, str]) -> None:
        with self.lock:
            self.requests.append({"method": method, "path": path, "body": body,
                                  "headers": {k.lower(): v for k, v in headers.items()}})

    def grants(self, grant_type: str) -> list[dict[str, Any]]:
        return [r["body"] for r in self.requests if r["body"].get("grant_type") == grant_type]

    # --------------------------------------------------------------------- tokens

    def issue_refresh(self) -> str:
        """A refresh token the server accepts once (as if issued by an earlier sign-in)."""
        with self.lock:
            token = f"refresh-{secrets.token_hex(8)}"
            self.live_refresh.add(token)
            return token

    def revoke(self, token: str) -> None:
        with self.lock:
            self.live_refresh.discard(token)

    def _tokens(self, path: str) -> dict[str, Any]:
        self.serial += 1
        refresh = f"refresh-{secrets.token_hex(8)}"
        self.live_refresh.add(refresh)
        access = codex_jwt("acct-1", self.serial) if path == "/oauth/token" else f"sk-ant-oat01-access-{self.serial}"
        self.issued_access.add(access)
        body = {"access_token": access, "refresh_token": refresh, "expires_in": self.expires_in, "token_type": "Bearer"}
        if path == CHATGPT_TOKEN_PATH:
            body |= {"scope": CHATGPT_SCOPE, "id_token": codex_jwt("acct-1", self.serial)}
        return body

    def token(self, path: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        grant = body.get("grant_type")
        if path == CHATGPT_TOKEN_PATH and body.get("client_id") not in self.issued_clients:
            return 401, {"error": "invalid_client", "error_description": "unknown client"}
        if grant == "refresh_token":
            time.sleep(self.refresh_delay_s)
            with self.lock:
                if body.get("refresh_token") not in self.live_refresh:
                    return 400, {"error": "invalid_grant", "error_description": "refresh token is not valid"}
                self.live_refresh.discard(body["refresh_token"])
                return 200, self._tokens(path)
        if grant == "urn:ietf:params:oauth:grant-type:device_code":  # RFC 8628 at the token endpoint (Radius)
            with self.lock:
                if not self.devices.get(body.get("device_code", "")):
                    return 400, {"error": "authorization_pending"}
                self.devices.pop(body["device_code"])
                return 200, self._tokens(path)
        if grant == "urn:ietf:params:oauth:grant-type:jwt-bearer":
            with self.lock:
                if body.get("assertion") not in self.identity_tokens or not body.get("federation_rule_id"):
                    return 401, {"error": "invalid_grant", "error_description": "assertion rejected"}
                self.serial += 1
                return 200, {"access_token": f"fed-access-{self.serial}", "expires_in": self.expires_in,
                             "token_type": "Bearer"}
        if grant == "authorization_code":
            with self.lock:
                issued = self.codes.pop(body.get("code", ""), None)
                if issued is None or s256(body.get("code_verifier", "")) != issued["challenge"]:
                    return 400, {"error": "invalid_grant", "error_description": "code or verifier rejected"}
                if issued["redirect_uri"] != body.get("redirect_uri"):
                    return 400, {"error": "invalid_grant", "error_description": "redirect_uri mismatch"}
                return 200, self._tokens(path)
        return 400, {"error": "unsupported_grant_type"}

    def approve(self, authorize_url: str) -> str:
        """Sign the user in at ``authorize_url``; the redirect URL the browser is sent to next."""
        query = {k: v[0] for k, v in parse_qs(urlsplit(authorize_url).query).items()}
        assert query["code_challenge_method"] == "S256" and query["response_type"] == "code"
        code = f"code-{secrets.token_hex(6)}"
        redirect = {"code": code, "state": query["state"]}
        with self.lock:
            self.codes[code] = {"challenge": query["code_challenge"], "redirect_uri": query["redirect_uri"]}
            if query.get("client_id") == "dynamic_agent_client":  # registered now, named in the redirect
                redirect["client_id"] = f"app_issued_{secrets.token_hex(4)}"
                self.issued_clients.add(redirect["client_id"])
        return f"{query['redirect_uri']}?{urlencode(redirect)}"

    # --------------------------------------------------------------------- device code, Copilot

    def start_device(self) -> dict[str, Any]:
        device = secrets.token_hex(6)
        with self.lock:
            self.devices[device] = False
        return {"device_code": device, "user_code": "ABCD-1234", "verification_uri": "https://github.com/login/device",
                "interval": 1, "expires_in": 60}

    def approve_device(self) -> None:
        with self.lock:
            for device in self.devices:
                self.devices[device] = True

    def poll_device(self, device: str) -> dict[str, Any]:
        with self.lock:
            if not self.devices.get(device):
                return {"error": "authorization_pending"}
            token = f"gho_{secrets.token_hex(6)}"
            self.live_refresh.add(token)
            return {"access_token": token, "token_type": "bearer", "scope": "read:user"}

    def gateway_config(self, authorization: str) -> tuple[int, dict[str, Any]]:
        token = authorization.removeprefix("Bearer ")
        if self.gateway_down:
            return 503, {"error": "unavailable"}
        if token not in self.issued_access | self.gateway_keys:
            return 401, {"error": "unauthorized"}
        return 200, {"baseUrl": f"{self.url}/v1", "models": self.gateway_models}

    def meta_key(self, authorization: str) -> tuple[int, dict[str, Any]]:
        """Meta mints a day-long API key from its (non-rotating) identity token."""
        with self.lock:
            if authorization.removeprefix("Bearer ").strip() not in self.live_refresh:
                return 401, {"error": "invalid_token"}
            self.serial += 1
            return 200, {"api_key": f"meta-key-{self.serial}"}

    def copilot_token(self, authorization: str) -> tuple[int, dict[str, Any]]:
        github_token = authorization.removeprefix("Bearer ").strip()
        with self.lock:
            if github_token not in self.live_refresh:
                return 401, {"message": "Bad credentials"}
            self.serial += 1
            proxy = urlsplit(self.url).netloc
            return 200, {"token": f"tid=t{self.serial};exp=1;proxy-ep=proxy.{proxy}",
                         "expires_at": int(time.time()) + self.expires_in}

