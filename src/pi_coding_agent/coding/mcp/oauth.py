"""OAuth for HTTP servers without an ``Authorization`` header, as pi signs in to them.

Discovery: the server's protected-resource metadata (RFC 9728, from the 401's ``resource_metadata``
or the well-known path), then the authorization server's metadata (RFC 8414 / OpenID), whose
``issuer`` must be the one named. A configured ``clientId`` is used as is; otherwise the client is
registered dynamically (RFC 7591) as ``pi`` (or ``oauth.clientName``). The code flow uses PKCE (S256),
a ``state`` and a loopback redirect on 127.0.0.1. Tokens are kept in ``<agentDir>/mcp-auth.json``
(mode 0600) in pi's layout, keyed ``mcp__<server>|<url>``, and refreshed when they expire or the
server answers 401. Client ID Metadata Documents (pi's ``cimd``) are not used: registration is.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import hashlib
import json
import os
import secrets
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import httpx

from pi_coding_agent.ai.atomic_file import write_atomic
from pi_coding_agent.ai.types import JsonObject
from pi_coding_agent.coding.mcp.naming import namespace

CALLBACK_PATH = "/callback"
SUCCESS_PAGE = b"<html><body><h1>Signed in</h1><p>You can close this window and return to pi.</p></body></html>"


class SignInError(Exception):
    pass


class CredentialStore:
    """``mcp-auth.json``: one state per server name and URL (pi's file, shared with it)."""

    def __init__(self, path: Path) -> None:
        self.path = path

    @staticmethod
    def key(name: str, url: str) -> str:
        return f"{namespace(name)}|{url}"

    def _read(self) -> JsonObject:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8") or "{}")
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    def load(self, name: str, url: str) -> dict[str, Any] | None:
        state = self._read().get(self.key(name, url))
        return state if isinstance(state, dict) else None

    def save(self, name: str, url: str, state: JsonObject | None) -> bool:
        """Store (or with None remove) one server's state; True when something changed."""
        states = self._read()
        key = self.key(name, url)
        if state is None and key not in states:
            return False
        if state is None:
            del states[key]
        else:
            states[key] = state
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        write_atomic(self.path, (json.dumps(states, indent=2) + "\n").encode(), 0o600)
        os.chmod(self.path, 0o600)
        return True


def _origin(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


def _well_known(base: str, name: str) -> list[str]:
    """RFC 8414 path insertion first, then the root document."""
    parts = urlsplit(base)
    path = parts.path.rstrip("/")
    urls = [f"{_origin(base)}/.well-known/{name}{path}"] if path else []
    return [*urls, f"{_origin(base)}/.well-known/{name}"]


async def _first_json(http: httpx.AsyncClient, urls: list[str]) -> dict[str, Any] | None:
    for url in urls:
        with contextlib.suppress(httpx.HTTPError, ValueError):
            response = await http.get(url, headers={"Accept": "application/json"})
            if response.status_code == 200 and isinstance(body := response.json(), dict):
                return body
    return None


def _challenge_param(header: str, name: str) -> str | None:
    for part in header.replace("Bearer ", "", 1).split(","):
        key, _, value = part.strip().partition("=")
        if key == name:
            return value.strip('"')
    return None


async def discover(http: httpx.AsyncClient, server_url: str, challenge: str, oauth: dict[str, Any]) -> dict[str, Any]:
    """The authorization server's metadata, its issuer checked; ``scopes`` from the resource."""
    resource_url = _challenge_param(challenge, "resource_metadata")
    resource = await _first_json(http, [resource_url] if resource_url else
                                 _well_known(server_url, "oauth-protected-resource")) or {}
    if configured := oauth.get("authServerMetadataUrl"):
        metadata = await _first_json(http, [configured])
        if metadata is None:
            raise SignInError(f"could not read authorization server metadata from {configured}")
        return {**metadata, "scopes": resource.get("scopes_supported")}
    servers = resource.get("authorization_servers") or [_origin(server_url)]
    issuer = str(servers[0])
    metadata = await _first_json(http, [*_well_known(issuer, "oauth-authorization-server"),
                                        *_well_known(issuer, "openid-configuration")])
    if metadata is None:
        raise SignInError(f"no authorization server metadata found for {issuer}")
    if str(metadata.get("issuer", "")).rstrip("/") != issuer.rstrip("/"):
        raise SignInError(f"authorization server metadata names issuer {metadata.get('issuer')!r}, expected {issuer!r}")
    return {**metadata, "scopes": resource.get("scopes_supported")}


async def _register(http: httpx.AsyncClient, metadata: dict[str, Any], redirect: str, oauth: JsonObject) -> dict[str, Any]:
    if oauth.get("clientId"):
        info = {"client_id": oauth["clientId"], "redirect_uris": [redirect]}
        return {**info, **({"client_secret": oauth["clientSecret"]} if oauth.get("clientSecret") else {})}
    endpoint = metadata.get("registration_endpoint")
    if not endpoint:
        raise SignInError("the authorization server does not support dynamic client registration; "
                          "configure oauth.clientId")
    response = await http.post(endpoint, json={
        "client_name": oauth.get("clientName") or "pi", "redirect_uris": [redirect],
        "grant_types": ["authorization_code", "refresh_token"], "response_types": ["code"],
        "token_endpoint_auth_method": "none"})
    if response.status_code >= 400:
        raise SignInError(f"client registration failed: HTTP {response.status_code} {response.text[:200]}")
    return dict(response.json())


async def _token_request(http: httpx.AsyncClient, endpoint: str, form: dict[str, str]) -> JsonObject:
    response = await http.post(endpoint, data=form, headers={"Accept": "application/json"})
    if response.status_code >= 400:
        raise SignInError(f"token request failed: HTTP {response.status_code} {response.text[:200]}")
    tokens = response.json()
    if not isinstance(tokens, dict) or not tokens.get("access_token"):
        raise SignInError("token response has no access_token")
    return tokens


def _with_tokens(state: dict[str, Any], tokens: dict[str, Any]) -> JsonObject:
    if "refresh_token" not in tokens and (previous := (state.get("tokens") or {}).get("refresh_token")):
        tokens = {**tokens, "refresh_token": previous}
    out = {**state, "tokens": tokens}
    out.pop("tokensExpireAt", None)
    if isinstance(tokens.get("expires_in"), int | float):
        out["tokensExpireAt"] = int(time.time() * 1000 + tokens["expires_in"] * 1000)
    return out


class _Callback:
    """The loopback redirect target: resolves with the query of the first ``/callback`` request."""

    def __init__(self) -> None:
        self.result: asyncio.Future[dict[str, str]] = asyncio.get_running_loop().create_future()

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(Exception):
            line = (await reader.readline()).decode("latin-1")
            while (await reader.readline()).strip():
                pass
            target = line.split(" ")[1] if line.count(" ") >= 2 else ""
            parts = urlsplit(target)
            query = {k: v[0] for k, v in parse_qs(parts.query).items()}
            ok = parts.path == CALLBACK_PATH and ("code" in query or "error" in query)
            body = SUCCESS_PAGE if ok else b"Not found"
            status = b"200 OK" if ok else b"404 Not Found"
            writer.write(b"HTTP/1.1 " + status + b"\r\nContent-Type: text/html\r\nContent-Length: "
                         + str(len(body)).encode() + b"\r\nConnection: close\r\n\r\n" + body)
            await writer.drain()
            if ok and not self.result.done():
                self.result.set_result(query)
        writer.close()


async def sign_in(name: str, server_url: str, oauth: dict[str, Any], store: CredentialStore, challenge: str,
                  show_url: Callable[[str], Awaitable[None] | None], timeout_s: float = 300) -> None:
    """The whole authorization-code flow; tokens saved on success, ``SignInError`` otherwise."""
    callback = _Callback()
    server = await asyncio.start_server(callback.handle, "127.0.0.1", int(oauth.get("callbackPort") or 0))
    port = server.sockets[0].getsockname()[1]
    redirect = oauth.get("callbackUrl") or f"http://127.0.0.1:{port}{CALLBACK_PATH}"
    try:
        async with httpx.AsyncClient(timeout=30.0, follow_redirects=True) as http:
            metadata = await discover(http, server_url, challenge, oauth)
            state = store.load(name, server_url) or {"serverUrl": server_url}
            client = state.get("clientInformation")
            if not client or redirect not in (client.get("redirect_uris") or []):
                client = await _register(http, metadata, redirect, oauth)
            verifier = secrets.token_urlsafe(48)
            challenge_value = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
            nonce = secrets.token_urlsafe(24)
            scope = oauth.get("scope") or " ".join(metadata.get("scopes") or [])
            query = {"response_type": "code", "client_id": client["client_id"], "redirect_uri": redirect,
                     "code_challenge": challenge_value, "code_challenge_method": "S256", "state": nonce,
                     "resource": server_url, **({"scope": scope} if scope else {})}
            shown = show_url(f"{metadata['authorization_endpoint']}?{urlencode(query)}")
            if asyncio.iscoroutine(shown):
                await shown
            try:
                answer = await asyncio.wait_for(callback.result, timeout_s)
            except TimeoutError:
                raise SignInError(f"not completed within {round(timeout_s)} seconds") from None
            if answer.get("error"):
                raise SignInError(f"the authorization server answered {answer['error']}")
            if answer.get("state") != nonce:
                raise SignInError("the redirect carried a wrong state")
            if "iss" in answer and answer["iss"].rstrip("/") != str(metadata.get("issuer", "")).rstrip("/"):
                raise SignInError("the redirect came from another issuer")
            form = {"grant_type": "authorization_code", "code": answer["code"], "redirect_uri": redirect,
                    "client_id": client["client_id"], "code_verifier": verifier, "resource": server_url}
            if client.get("client_secret"):
                form["client_secret"] = client["client_secret"]
            tokens = await _token_request(http, metadata["token_endpoint"], form)
            state = _with_tokens({**state, "clientInformation": client,
                                  "discovery": {"tokenEndpoint": metadata["token_endpoint"]}}, tokens)
            store.save(name, server_url, state)
    finally:
        server.close()


class TokenSource:
    """The bearer token of one server, refreshed when it expired (or after a 401, ``refresh()``)."""

    def __init__(self, name: str, url: str, store: CredentialStore) -> None:
        self.name, self.url, self.store = name, url, store

    async def __call__(self) -> str | None:
        state = self.store.load(self.name, self.url)
        if not state or not (state.get("tokens") or {}).get("access_token"):
            return None
        expires = state.get("tokensExpireAt")
        if isinstance(expires, int | float) and expires <= time.time() * 1000 + 30_000 and await self.refresh():
            state = self.store.load(self.name, self.url) or state
        return str(state["tokens"]["access_token"])

    async def refresh(self) -> bool:
        """A new access token from the refresh token; False when there is none or it was refused."""
        state = self.store.load(self.name, self.url) or {}
        refresh_token = (state.get("tokens") or {}).get("refresh_token")
        endpoint = (state.get("discovery") or {}).get("tokenEndpoint")
        client = state.get("clientInformation") or {}
        if not refresh_token or not endpoint or not client.get("client_id"):
            return False
        form = {"grant_type": "refresh_token", "refresh_token": refresh_token, "client_id": client["client_id"],
                "resource": self.url, **({"client_secret": client["client_secret"]} if client.get("client_secret") else {})}
        try:
            async with httpx.AsyncClient(timeout=30.0) as http:
                tokens = await _token_request(http, endpoint, form)
        except (SignInError, httpx.HTTPError):
            return False
        self.store.save(self.name, self.url, _with_tokens(state, tokens))
        return True
