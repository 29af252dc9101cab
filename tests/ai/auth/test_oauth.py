"""OAuth credentials in auth.json: refresh when due, rotation, revocation, the lock, sign-in flows.

All provider endpoints are served by ``tests/support/fakes/oauth_server.py`` through ``PI_OAUTH_ORIGIN``.
"""

from __future__ import annotations

import asyncio
import json
import os
import stat
import subprocess
import time
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest

from pi_coding_agent.ai.auth.keys import AuthStorage
from pi_coding_agent.ai.auth.oauth import login as flows_login
from pi_coding_agent.ai.auth.oauth.http import OAuthError
from pi_coding_agent.ai.auth.oauth.lock import auth_file_lock, lock_dir
from pi_coding_agent.ai.auth.oauth.store import CredentialFile
from tests.support.fakes.oauth_server import FakeOAuthServer, s256
from tests.support.reference_pi import REFERENCE_NODE_BIN, REFERENCE_ROOT

REFERENCE_NODE_MODULES = REFERENCE_ROOT / "pi-1.6.0" / "node_modules"
NODE = str(REFERENCE_NODE_BIN / "node")


@pytest.fixture
def oauth(monkeypatch: pytest.MonkeyPatch):
    with FakeOAuthServer() as server:
        monkeypatch.setenv("PI_OAUTH_ORIGIN", server.url)
        yield server


def now_ms() -> int:
    return int(time.time() * 1000)


def write_auth(agent: Path, data: dict[str, Any]) -> Path:
    agent.mkdir(parents=True, exist_ok=True)
    path = agent / "auth.json"
    path.write_text(json.dumps(data, indent=2))
    path.chmod(0o600)
    return path


def expired(refresh: str, **extra: Any) -> dict[str, Any]:
    return {"type": "oauth", "refresh": refresh, "access": "sk-ant-oat01-old", "expires": now_ms() - 1000, **extra}


async def test_due_credential_is_refreshed_rotated_and_saved_as_pi_writes_it(tmp_path: Path, oauth: FakeOAuthServer):
    refresh = oauth.issue_refresh()
    path = write_auth(tmp_path, {"openai": {"type": "api_key", "key": "sk-kept"}, "anthropic": expired(refresh)})
    auth = AuthStorage(tmp_path)
    assert auth.api_key("anthropic") == "sk-ant-oat01-old"
    await auth.prepare("anthropic")
    stored = json.loads(path.read_text())
    new = stored["anthropic"]
    assert list(new) == ["type", "refresh", "access", "expires"]  # pi's field order
    assert new["access"] == auth.api_key("anthropic") == "sk-ant-oat01-access-1"
    assert new["refresh"] != refresh and new["refresh"] in oauth.live_refresh
    # expires_in 3600 s, less pi's five-minute margin
    assert abs(new["expires"] - (now_ms() + 3300_000)) < 5000
    assert stored["openai"] == {"type": "api_key", "key": "sk-kept"}
    assert path.read_bytes() == json.dumps(stored, indent=2).encode()  # JSON.stringify(data, null, 2)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    body = oauth.grants("refresh_token")[0]
    assert body == {"grant_type": "refresh_token", "client_id": "9d1c250a-e61b-44d9-88ed-5944d1962f5e",
                    "refresh_token": refresh}
    assert not lock_dir(path).exists()


async def test_credential_with_time_left_is_used_without_a_request(tmp_path: Path, oauth: FakeOAuthServer):
    write_auth(tmp_path, {"anthropic": {"type": "oauth", "refresh": "r", "access": "sk-ant-oat01-live",
                                        "expires": now_ms() + 3600_000}})
    auth = AuthStorage(tmp_path)
    await auth.prepare("anthropic")
    assert auth.api_key("anthropic") == "sk-ant-oat01-live" and oauth.requests == []
    with pytest.raises(OAuthError, match="OAuth refresh failed for anthropic"):
        await auth.fresh_oauth("anthropic", min_validity_ms=2 * 3600_000)  # asks more than is left: refresh


async def test_revoked_refresh_token_fails_clearly_and_loses_nothing(tmp_path: Path, oauth: FakeOAuthServer):
    refresh = oauth.issue_refresh()
    path = write_auth(tmp_path, {"anthropic": expired(refresh)})
    async with httpx.AsyncClient() as client:
        assert (await client.post(f"{oauth.url}/oauth/revoke", data={"token": refresh})).status_code == 200
    with pytest.raises(OAuthError) as caught:
        await AuthStorage(tmp_path).prepare("anthropic")
    message = str(caught.value)
    assert "OAuth refresh failed for anthropic" in message and "invalid_grant" in message
    assert refresh not in message and "sk-ant-oat01-old" not in message
    assert json.loads(path.read_text())["anthropic"]["refresh"] == refresh


async def test_a_401_forces_one_refresh_of_the_rejected_token(tmp_path: Path, oauth: FakeOAuthServer):
    write_auth(tmp_path, {"anthropic": {"type": "oauth", "refresh": oauth.issue_refresh(),
                                        "access": "sk-ant-oat01-rejected", "expires": now_ms() + 3600_000}})
    auth = AuthStorage(tmp_path)
    assert await auth.unauthorized("anthropic", "sk-ant-oat01-rejected") is True
    assert auth.api_key("anthropic") == "sk-ant-oat01-access-1"
    assert await auth.unauthorized("anthropic", "sk-ant-oat01-rejected") is False  # already replaced
    assert len(oauth.grants("refresh_token")) == 1


@pytest.mark.slow
async def test_codex_and_copilot_refresh_keep_pi_extra_fields(tmp_path: Path, oauth: FakeOAuthServer):
    github = oauth.issue_refresh()
    write_auth(tmp_path, {
        "openai-codex": {**expired(oauth.issue_refresh()), "accountId": "acct-1"},
        "github-copilot": {"type": "oauth", "refresh": github, "access": "tid=old", "expires": now_ms()},
    })
    auth = AuthStorage(tmp_path)
    codex = await auth.fresh_oauth("openai-codex")
    assert codex is not None and codex["accountId"] == "acct-1" and list(codex)[:4] == ["type", "refresh", "access", "expires"]
    assert oauth.grants("refresh_token")[0]["client_id"] == "app_EMoamEEZ73f0CkXaXp7hrann"
    copilot = await auth.fresh_oauth("github-copilot")
    assert copilot is not None and copilot["refresh"] == github and copilot["availableModelIds"] == ["gpt-4.1"]
    assert copilot["access"].startswith("tid=t") and str(auth.oauth_base_url("github-copilot")).startswith("https://api.")


EXTRA_FIELDS: dict[str, dict[str, Any]] = {
    "openai-codex": {"accountId": "acct-1"}, "openai": {"clientId": "app_issued_x"},
    "github-copilot": {"enterpriseUrl": ""}}


@pytest.mark.parametrize("provider", ["anthropic", "openai-codex", "openai", "github-copilot", "xai", "kimi-coding",
                                      "meta", "openrouter", "radius"])
@pytest.mark.slow
async def test_every_provider_refreshes_when_due_and_after_a_401(tmp_path: Path, oauth: FakeOAuthServer,
                                                                 provider: str):
    from pi_coding_agent.ai.auth.oauth.providers import PROVIDERS

    oauth.issued_clients.add("app_issued_x")
    refresh = oauth.issue_refresh()
    path = write_auth(tmp_path, {provider: expired(refresh, **EXTRA_FIELDS.get(provider, {}))})
    auth = AuthStorage(tmp_path)
    await auth.prepare(provider)
    stored = json.loads(path.read_text())[provider]
    if provider == "openrouter":  # its sign-in yields a key that never expires: nothing to refresh
        assert stored["access"] == "sk-ant-oat01-old" and oauth.requests == [] and provider in PROVIDERS
        return
    assert stored["access"] != "sk-ant-oat01-old" and auth.api_key(provider) == stored["access"]
    assert stored["expires"] > now_ms() + 60_000 and not lock_dir(path).exists()
    rotates = provider not in ("github-copilot", "meta")  # these keep their long-lived token as ``refresh``
    assert (stored["refresh"] != refresh) == rotates and stored["refresh"] in oauth.live_refresh
    assert all(stored.get(k) == v for k, v in EXTRA_FIELDS.get(provider, {}).items() if v)
    # a 401 to the fresh token refreshes again, at once, and the next request gets another token
    assert await auth.unauthorized(provider, stored["access"]) is True
    assert json.loads(path.read_text())[provider]["access"] not in (stored["access"], "sk-ant-oat01-old")


@pytest.mark.slow
async def test_refresh_waits_for_a_lock_held_by_another_process(tmp_path: Path, oauth: FakeOAuthServer):
    path = write_auth(tmp_path, {"anthropic": expired(oauth.issue_refresh())})
    holder = subprocess.Popen(["python3", "-c", (
        "import os, sys, time; os.mkdir(sys.argv[1]); print('held', flush=True); time.sleep(1.5); os.rmdir(sys.argv[1])"),
        str(lock_dir(path))], stdout=subprocess.PIPE, text=True)
    assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
    started = time.monotonic()
    await AuthStorage(tmp_path).prepare("anthropic")
    assert time.monotonic() - started > 1.0  # waited for the holder's release
    holder.wait(5)
    assert json.loads(path.read_text())["anthropic"]["access"] == "sk-ant-oat01-access-1"


async def test_a_lock_left_by_a_dead_process_is_taken_over(tmp_path: Path):
    path = write_auth(tmp_path, {})
    lock = lock_dir(path)
    lock.mkdir()
    os.utime(lock, (time.time() - 60, time.time() - 60))
    async with auth_file_lock(path, timeout_s=5):
        assert lock.exists()
    assert not lock.exists()


@pytest.mark.reference
async def test_lock_is_exclusive_with_pi_proper_lockfile(tmp_path: Path):
    """pi's own lock library, holding auth.json, keeps us out until it releases, and the reverse."""
    path = write_auth(tmp_path, {})
    script = ("const l=require('proper-lockfile');const f=process.argv[1];"
              "l.lock(f,{retries:{retries:200,minTimeout:20,maxTimeout:50},stale:30000}).then(r=>{"
              "console.log('held');setTimeout(()=>r().then(()=>console.log('released')),1200)})"
              ".catch(e=>{console.log('error '+e.code);process.exit(1)})")
    env = {**os.environ, "NODE_PATH": str(REFERENCE_NODE_MODULES)}
    node = await asyncio.create_subprocess_exec(NODE, "-e", script, str(path), env=env, stdout=subprocess.PIPE)
    assert node.stdout is not None and (await node.stdout.readline()).strip() == b"held"
    started = time.monotonic()
    async with auth_file_lock(path, timeout_s=10):
        waited = time.monotonic() - started
    assert waited > 0.8
    await node.wait()
    # reverse: we hold, pi's library waits
    async with auth_file_lock(path):
        node = await asyncio.create_subprocess_exec(NODE, "-e", script, str(path), env=env, stdout=subprocess.PIPE)
        await asyncio.sleep(1.0)
        assert node.returncode is None  # still waiting for us
    assert node.stdout is not None and (await node.stdout.readline()).strip() == b"held"
    await node.wait()


# ----------------------------------------------------------------------------- sign-in flows


class ScriptedUI:
    """Plays the user: approves sign-ins at the fake server, as a browser or by pasting."""

    def __init__(self, oauth: FakeOAuthServer, method: str = "browser", paste: bool = False) -> None:
        self.oauth, self.method, self.paste = oauth, method, paste
        self.events: list[dict[str, Any]] = []
        self.redirect: asyncio.Future[str] = asyncio.get_running_loop().create_future()

    async def prompt(self, kind: str, message: str, *, placeholder: str | None = None,
                     options: list[tuple[str, str]] | None = None) -> str:
        if kind == "select":
            assert options is not None and self.method in [o[0] for o in options]
            return self.method
        if kind == "manual_code":
            redirect = await self.redirect
            if self.paste:
                return redirect
            await asyncio.Event().wait()  # the browser answers instead; this prompt is cancelled
        return ""

    def notify(self, event: dict[str, Any]) -> None:
        self.events.append(event)
        if event["type"] == "auth_url":
            redirect = self.oauth.approve(event["url"])
            self.redirect.set_result(redirect)
            if not self.paste:
                asyncio.get_running_loop().create_task(self._browse(redirect))
        if event["type"] == "device_code":
            self.oauth.approve_device()

    async def _browse(self, redirect: str) -> None:
        async with httpx.AsyncClient() as client:
            page = await client.get(redirect)
        assert page.status_code == 200 and "Signed in to" in page.text


async def test_anthropic_browser_sign_in_with_loopback_callback(oauth: FakeOAuthServer):
    ui = ScriptedUI(oauth)
    cred = await flows_login.login_anthropic(ui)
    assert cred["type"] == "oauth" and cred["access"] == "sk-ant-oat01-access-1" and cred["refresh"] in oauth.live_refresh
    url = ui.events[0]["url"]
    assert url.startswith("https://claude.ai/oauth/authorize?") and "user%3Ainference" in url
    exchange = oauth.grants("authorization_code")[0]
    assert exchange["redirect_uri"].startswith("http://localhost:") and exchange["state"] == exchange["code_verifier"]
    assert s256(exchange["code_verifier"]) in url


async def test_anthropic_copy_code_sign_in_with_pasted_url(oauth: FakeOAuthServer):
    cred = await flows_login.login_anthropic(ScriptedUI(oauth, method="copy_code", paste=True))
    assert cred["access"].startswith("sk-ant-oat01-access-")
    assert oauth.grants("authorization_code")[0]["redirect_uri"] == "https://platform.claude.com/oauth/code/callback"


async def test_pasted_redirect_with_a_foreign_state_is_refused(oauth: FakeOAuthServer):
    class Tampered(ScriptedUI):
        async def prompt(self, kind: str, message: str, **kw: Any) -> str:
            answer = await super().prompt(kind, message, **kw)
            return answer.replace("state=", "state=x") if kind == "manual_code" else answer

    with pytest.raises(OAuthError, match="state mismatch"):
        await flows_login.login_anthropic(Tampered(oauth, method="copy_code", paste=True))
    assert oauth.grants("authorization_code") == []


async def test_codex_browser_sign_in_by_pasted_redirect_url(oauth: FakeOAuthServer):
    cred = await flows_login.login_codex(ScriptedUI(oauth, paste=True))
    assert cred["accountId"] == "acct-1" and cred["refresh"] in oauth.live_refresh
    assert oauth.grants("authorization_code")[0]["redirect_uri"] == "http://localhost:1455/auth/callback"


@pytest.mark.slow
async def test_sign_in_with_chatgpt_registers_a_client_and_refreshes_with_it(tmp_path: Path, oauth: FakeOAuthServer):
    from pi_coding_agent.coding.commands.login import device_id
    from pi_coding_agent.coding.resources.settings import Settings

    settings = Settings.load(tmp_path, tmp_path, project_trusted=False)
    device = device_id(settings)
    assert json.loads((tmp_path / "settings.json").read_text())["deviceId"] == device == device_id(settings)
    ui = ScriptedUI(oauth)
    cred = await flows_login.login("openai", ui, lambda: device)
    query = parse_qs(urlsplit(ui.events[0]["url"]).query)
    assert ui.events[0]["url"].startswith("https://auth.openai.com/api/accounts/authorize?")
    assert query["client_id"] == ["dynamic_agent_client"] and query["ext_agent_host_id"] == [f"urn:uuid:{device}"]
    assert query["redirect_uri"] == ["http://127.0.0.1:1455/auth/callback"] and query["nonce"][0]
    issued = oauth.grants("authorization_code")[0]["client_id"]
    assert issued.startswith("app_issued_") and cred["clientId"] == issued
    assert cred["scopes"] == ["openid", "profile", "email", "offline_access", "resource.invoke",
                              "chatgpt.tokens.use.direct"]
    assert list(cred) == ["type", "access", "refresh", "expires", "clientId", "scopes"]
    write_auth(tmp_path, {"openai": {**cred, "expires": now_ms() - 1}})
    auth = AuthStorage(tmp_path)
    await auth.prepare("openai")
    assert auth.api_key("openai") == "sk-ant-oat01-access-2"
    assert oauth.grants("refresh_token")[0] == {"grant_type": "refresh_token", "client_id": issued,
                                                "refresh_token": cred["refresh"], "resource": "https://api.openai.com/v1"}
    with pytest.raises(OAuthError, match="requires a device ID"):
        await flows_login.login("openai", ui, lambda: "not-a-uuid")


@pytest.mark.parametrize("method", ["browser", "device-code"])
@pytest.mark.slow
async def test_radius_sign_in_by_browser_and_by_device_code(tmp_path: Path, oauth: FakeOAuthServer, method: str):
    ui = ScriptedUI(oauth, method=method)
    cred = await flows_login.login("radius", ui)
    assert list(cred) == ["type", "access", "refresh", "expires"] and cred["refresh"] in oauth.live_refresh
    assert abs(cred["expires"] - (now_ms() + 3600_000 - 60_000)) < 5000  # one minute of skew, as pi
    grant = oauth.requests[-1]
    assert grant["path"] == "/v1/oauth/token" and grant["body"]["client_id"] == "pi-gateway"
    if method == "browser":
        query = parse_qs(urlsplit(next(e for e in ui.events if e["type"] == "auth_url")["url"]).query)
        assert query["redirect_uri"] == ["http://127.0.0.1:1456/oauth/callback"] and query["handoff"] == ["url"]
        assert query["scope"] == ["gateway offline_access"] and grant["body"]["grant_type"] == "authorization_code"
    else:
        assert ui.events[0]["type"] == "device_code" and grant["body"]["grant_type"].endswith(":device_code")
    write_auth(tmp_path, {"radius": {**cred, "expires": now_ms() - 1}})
    refreshed = await AuthStorage(tmp_path).fresh_oauth("radius")
    assert refreshed is not None and refreshed["access"] != cred["access"]
    assert oauth.grants("refresh_token")[-1] == {"grant_type": "refresh_token", "client_id": "pi-gateway",
                                                 "refresh_token": cred["refresh"]}


@pytest.mark.slow
async def test_copilot_device_code_sign_in(oauth: FakeOAuthServer):
    ui = ScriptedUI(oauth)
    cred = await flows_login.login_copilot(ui)
    assert ui.events[0] == {"type": "device_code", "userCode": "ABCD-1234",
                            "verificationUri": "https://github.com/login/device", "intervalSeconds": 1,
                            "expiresInSeconds": 60}
    assert cred["refresh"].startswith("gho_") and cred["availableModelIds"] == ["gpt-4.1"]
    assert "enterpriseUrl" not in cred


async def test_store_modify_keeps_entries_written_meanwhile(tmp_path: Path):
    """A write starts from the file's current content, not from what this process read earlier."""
    path = write_auth(tmp_path, {"a": {"type": "api_key", "key": "1"}})
    auth = AuthStorage(tmp_path)
    CredentialFile(path)._write({"a": {"type": "api_key", "key": "1"}, "b": {"type": "api_key", "key": "2"}})
    await auth.store_credential("c", {"type": "api_key", "key": "3"})
    assert sorted(json.loads(path.read_text())) == ["a", "b", "c"]


# ----------------------------------------------------------------------------- sign-in over RPC dialogs


class RpcClient:
    """Plays an RPC client answering ``extension_ui_request`` records written by ``RpcExtensionUI``."""

    def __init__(self, oauth: FakeOAuthServer, dismiss: bool = False) -> None:
        from pi_coding_agent.coding.modes.rpc.ui_bridge import RpcExtensionUI

        self.oauth = oauth
        self.dismiss = dismiss
        self.records: list[dict[str, Any]] = []
        self.ui = RpcExtensionUI(self.receive)

    def receive(self, record: dict[str, Any]) -> None:
        self.records.append(record)
        method = record["method"]
        if method == "select":
            self._answer(record, {"cancelled": True} if self.dismiss else {"value": "Copy code login (headless)"})
        elif method == "notify" and record["message"].startswith("Open this URL"):
            self.redirect = self.oauth.approve(record["message"].splitlines()[1])
        elif method == "input":
            self._answer(record, {"value": self.redirect})

    def _answer(self, record: dict[str, Any], reply: dict[str, Any]) -> None:
        asyncio.get_running_loop().call_soon(self.ui.resolve, {"type": "extension_ui_response", "id": record["id"], **reply})


async def test_sign_in_over_rpc_dialogs_stores_the_credential(tmp_path: Path, oauth: FakeOAuthServer):
    from pi_coding_agent.coding.commands.login import sign_in

    client = RpcClient(oauth)
    auth = AuthStorage(tmp_path)
    assert await sign_in(auth, client.ui, "anthropic") is True
    methods = [(r["method"], r.get("title") or r.get("message", "").splitlines()[0]) for r in client.records]
    assert methods == [("select", "Select Anthropic login method:"), ("notify", "Open this URL to sign in:"),
                       ("input", "Paste the code Anthropic shows after you sign in:"),
                       ("notify", "Exchanging authorization code for tokens..."),
                       ("notify", f"Logged in to Anthropic. Credentials saved to {auth.path}")]
    stored = json.loads(auth.path.read_text())["anthropic"]
    assert stored["type"] == "oauth" and stored["access"] == "sk-ant-oat01-access-1"
    assert all(stored["access"] not in json.dumps(r) and stored["refresh"] not in json.dumps(r) for r in client.records)


async def test_a_dismissed_sign_in_dialog_cancels_and_stores_nothing(tmp_path: Path, oauth: FakeOAuthServer):
    from pi_coding_agent.coding.commands.login import sign_in

    client = RpcClient(oauth, dismiss=True)
    auth = AuthStorage(tmp_path)
    assert await sign_in(auth, client.ui, "anthropic") is False
    assert client.records[-1]["message"] == "Failed to log in to Anthropic: Login cancelled"
    assert json.loads(auth.path.read_text()) == {}


def test_copilot_oauth_credential_shapes_its_model_list(tmp_path: Path):
    from pi_coding_agent.ai.models.catalog import ModelRegistry, builtin_models

    catalog = [m["id"] for m in builtin_models("github-copilot")]
    write_auth(tmp_path, {"github-copilot": {
        "type": "oauth", "refresh": "gho_x", "access": "tid=1;proxy-ep=proxy.business.githubcopilot.com;x=1",
        "expires": now_ms() + 3600_000, "availableModelIds": catalog[:2]}})
    models = ModelRegistry(tmp_path, AuthStorage(tmp_path)).provider_models("github-copilot")
    assert [m["id"] for m in models] == catalog[:2]
    assert {m["baseUrl"] for m in models} == {"https://api.business.githubcopilot.com"}


def test_anthropic_auth_token_is_a_bearer_header_after_stored_and_configured_keys(tmp_path: Path,
                                                                                 monkeypatch: pytest.MonkeyPatch):
    for name in ("ANTHROPIC_API_KEY", "ANTHROPIC_OAUTH_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("ANTHROPIC_AUTH_TOKEN", "bearer-1")
    auth = AuthStorage(tmp_path)
    assert auth.has_auth("anthropic") and auth.api_key("anthropic") == "" and auth.bearer_token("anthropic") == "bearer-1"
    assert auth.bearer_token("anthropic", runtime_override="sk-cli") is None  # --api-key wins
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-env")
    assert auth.bearer_token("anthropic") == "bearer-1" and auth.api_key("anthropic") == ""  # pi: token before key
    write_auth(tmp_path, {"anthropic": {"type": "api_key", "key": "sk-stored"}})
    stored = AuthStorage(tmp_path)
    assert stored.bearer_token("anthropic") is None and stored.api_key("anthropic") == "sk-stored"
