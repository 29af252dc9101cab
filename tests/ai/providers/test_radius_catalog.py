"""Radius's live model catalog: the gateway's ``/v1/config`` list, kept in models-store.json as pi keeps it.

The fake authorization server doubles as the Radius gateway (``GET /v1/config``); the built-in
``radius`` provider reaches it through ``PI_OAUTH_ORIGIN``, a models.json gateway by its ``baseUrl``
(which the reference pi reaches too).
"""

from __future__ import annotations

import asyncio
import json
import stat
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from pi_coding_agent.ai.models.catalog import builtin_models
from pi_coding_agent.ai.providers import radius
from tests.coding.cli.test_auth_cli import auth_file, home, now_ms, ours, radius_device_sign_in
from tests.support.fakes.oauth_server import GATEWAY_MODEL, FakeOAuthServer
from tests.support.reference_pi import REFERENCE_NODE_BIN, REFERENCE_PI
from tests.support.rpc_helpers import RpcProcess

needs_reference = pytest.mark.reference  # skipped, with the reason, without it (tests/conftest.py)
SHIPPED = [m["id"] for m in builtin_models("radius")]


@pytest.fixture
def oauth(monkeypatch: pytest.MonkeyPatch):
    with FakeOAuthServer() as server:
        monkeypatch.setenv("PI_OAUTH_ORIGIN", server.url)
        yield server


def store_file(env: dict[str, str]) -> Path:
    return Path(env["HOME"]) / ".pi" / "agent" / "models-store.json"


def wait_for_entry(env: dict[str, str], provider: str, timeout_s: float = 30.0) -> dict[str, Any]:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            entry: dict[str, Any] = json.loads(store_file(env).read_text())[provider]
            return entry
        except (OSError, ValueError, KeyError):
            time.sleep(0.05)
    raise AssertionError(f"no {provider} entry in models-store.json")


def expected_models(oauth: FakeOAuthServer, provider: str) -> list[dict[str, Any]]:
    return [{**GATEWAY_MODEL, "api": "pi-messages", "provider": provider, "baseUrl": f"{oauth.url}/v1"}]


def custom_gateway(tmp_path: Path, oauth: FakeOAuthServer, key: str) -> dict[str, str]:
    """A models.json Radius gateway ``acme`` at the fake server, signed in with an API key."""
    env = home(tmp_path, {"acme": {"type": "api_key", "key": key}})
    oauth.gateway_keys.add(key)
    agent = Path(env["HOME"]) / ".pi" / "agent"
    (agent / "models.json").write_text(json.dumps({"providers": {"acme": {
        "name": "Acme Gateway", "baseUrl": f"{oauth.url}/v1", "oauth": "radius"}}}))
    return env


async def available(pi: RpcProcess) -> list[str]:
    reply = await pi.request({"type": "get_available_models"})
    assert reply["success"] is True, reply
    return [f"{m['provider']}/{m['id']}" for m in reply["data"]["models"]]


def test_gateway_config_is_sanitised_and_stored_lists_replace_the_shipped_catalog(tmp_path: Path) -> None:
    config = radius.sanitize({"baseUrl": "https://gw.example/v1", "extra": 1, "models": [
        GATEWAY_MODEL, {**GATEWAY_MODEL, "id": "no-cost", "cost": None}, {**GATEWAY_MODEL, "maxTokens": True}, "x"]})
    assert config == {"baseUrl": "https://gw.example/v1", "models": [GATEWAY_MODEL]}
    assert radius.sanitize({"baseUrl": "https://gw.example/v1"}) is None
    models = radius.models_from_config("radius", config)
    assert list(models[0])[-3:] == ["api", "provider", "baseUrl"] and models[0]["api"] == "pi-messages"
    shipped = builtin_models("radius")
    assert [m["id"] for m in radius.catalog(tmp_path, "radius", radius.DEFAULT_GATEWAY, None,
                                                    shipped)] == SHIPPED
    assert radius.catalog(tmp_path, "acme", "https://gw.example", None, shipped) == []
    legacy = {"type": "oauth", "access": "a", "refresh": "r", "expires": 0, "gatewayConfig": config}
    assert radius.catalog(tmp_path, "radius", radius.DEFAULT_GATEWAY, legacy, shipped) == models
    (tmp_path / "models-store.json").write_text(json.dumps({
        "radius": {"models": [*models, {**models[0], "id": "other", "provider": "acme"}], "checkedAt": 1},
        "openrouter": {"models": []}}))
    assert radius.catalog(tmp_path, "radius", radius.DEFAULT_GATEWAY, legacy, shipped) == models
    (tmp_path / "models-store.json").write_text("{broken")
    assert radius.stored_models(tmp_path, "radius") is None


@pytest.mark.slow
async def test_rpc_refreshes_a_signed_in_radius_catalog_in_the_background(tmp_path: Path, oauth: FakeOAuthServer):
    """Expired sign-in: refreshed first, then /v1/config with the new token; the list replaces the shipped one."""
    refresh = oauth.issue_refresh()
    env = home(tmp_path, {"radius": {"type": "oauth", "refresh": refresh, "access": "stale-access",
                                     "expires": now_ms() - 1},
                          "openrouter": {"type": "api_key", "key": "sk-or-1"}})
    store_file(env).write_text(json.dumps({"openrouter": {"models": [], "checkedAt": 5}}, indent=2))
    pi = await RpcProcess.pi("--no-session", cwd=tmp_path, env=env)
    try:
        entry = await asyncio.to_thread(wait_for_entry, env, "radius")
        assert entry["models"] == expected_models(oauth, "radius") and entry["checkedAt"] >= now_ms() - 60_000
        config = [r for r in oauth.requests if r["path"] == "/v1/config"]
        access = auth_file(env)["radius"]["access"]
        assert access != "stale-access" and config[0]["headers"]["authorization"] == f"Bearer {access}"
        for _ in range(100):  # the loop takes the new list once the thread handed it over
            if "radius/house-blend" in await available(pi):
                break
            await asyncio.sleep(0.05)
        names = await available(pi)
        assert "radius/house-blend" in names and not any(f"radius/{m}" in names for m in SHIPPED)
        chosen = await pi.request({"type": "set_model", "provider": "radius", "modelId": "house-blend"})
        assert chosen["success"] is True and chosen["data"]["baseUrl"] == f"{oauth.url}/v1"
    finally:
        await pi.kill()
    data = json.loads(store_file(env).read_text())
    assert list(data) == ["openrouter", "radius"] and data["openrouter"] == {"models": [], "checkedAt": 5}
    assert store_file(env).read_text() == json.dumps(data, indent=2)


@pytest.mark.slow
async def test_offline_starts_read_the_store_and_never_ask_the_gateway(tmp_path: Path, oauth: FakeOAuthServer):
    env = {**custom_gateway(tmp_path, oauth, "gw-key-1"), "PI_OFFLINE": "1"}
    pi = await RpcProcess.pi("--no-session", cwd=tmp_path, env=env)
    try:
        assert not any(n.startswith("acme/") for n in await available(pi))  # a custom gateway ships nothing
    finally:
        await pi.kill()
    store_file(env).write_text(json.dumps({"acme": {"models": expected_models(oauth, "acme"), "checkedAt": 1}}))
    listed = ours(env, "--list-models", "acme")
    assert listed.returncode == 0 and "house-blend" in listed.stdout, listed.stderr
    pi = await RpcProcess.pi("--no-session", "--offline", cwd=tmp_path, env={**env, "PI_OFFLINE": ""})
    try:
        assert "acme/house-blend" in await available(pi)
    finally:
        await pi.kill()
    assert [r for r in oauth.requests if r["path"] == "/v1/config"] == []


@pytest.mark.slow
def test_auth_login_fetches_the_gateway_catalog_right_after_sign_in(tmp_path: Path, oauth: FakeOAuthServer):
    env = {**home(tmp_path, {}), "TERM": "dumb"}
    code, output = radius_device_sign_in(env, oauth)
    assert code == 0, output.decode()
    access = auth_file(env)["radius"]["access"]
    assert json.loads(store_file(env).read_text())["radius"]["models"] == expected_models(oauth, "radius")
    assert [r["headers"]["authorization"] for r in oauth.requests if r["path"] == "/v1/config"] == [f"Bearer {access}"]
    assert b"model catalog" not in output
    oauth.gateway_models = [{"id": "broken"}]
    code, output = radius_device_sign_in(env, oauth)
    assert code == 0 and b"The Radius model catalog could not be refreshed; pi retries on next start." not in output
    assert json.loads(store_file(env).read_text())["radius"]["models"] == []  # pi drops malformed entries
    oauth.gateway_down = True
    code, output = radius_device_sign_in(env, oauth)
    assert code == 0 and b"The Radius model catalog could not be refreshed; pi retries on next start." in output
    assert json.loads(store_file(env).read_text())["radius"]["models"] == []  # the last list stays


def reference_rpc_until_stored(env: dict[str, str], provider: str) -> dict[str, Any]:
    """The reference pi in RPC mode until its background refresh stored ``provider``'s list."""
    ref_env = {**env, "PATH": f"{REFERENCE_NODE_BIN}:{env['PATH']}", "PI_SKIP_VERSION_CHECK": "1"}
    proc = subprocess.Popen([str(REFERENCE_PI), "--mode", "rpc", "--no-session"], env=ref_env, cwd=env["HOME"],
                            stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        return wait_for_entry(env, provider, 60.0)
    finally:
        proc.kill()
        proc.wait(timeout=10)


@needs_reference
async def test_models_store_written_by_either_implementation_is_read_by_the_other(
        tmp_path: Path, oauth: FakeOAuthServer):
    theirs_env = custom_gateway(tmp_path / "theirs", oauth, "gw-key-2")
    theirs = reference_rpc_until_stored(theirs_env, "acme")
    ours_env = custom_gateway(tmp_path / "ours", oauth, "gw-key-2")
    pi = await RpcProcess.pi("--no-session", cwd=tmp_path, env=ours_env)
    try:
        mine = await asyncio.to_thread(wait_for_entry, ours_env, "acme")
    finally:
        await pi.kill()
    assert mine["models"] == theirs["models"] == expected_models(oauth, "acme")
    assert set(mine) == set(theirs) == {"models", "checkedAt"}
    assert store_file(ours_env).read_text().startswith('{\n  "acme": {\n    "models": [')
    assert stat.S_IMODE(store_file(ours_env).stat().st_mode) == stat.S_IMODE(store_file(theirs_env).stat().st_mode)
    # each side lists the other's file offline: swap them
    mine_text, theirs_text = store_file(ours_env).read_text(), store_file(theirs_env).read_text()
    store_file(ours_env).write_text(theirs_text)
    store_file(theirs_env).write_text(mine_text.replace("house-blend", "mine-blend"))
    listed = ours({**ours_env, "PI_OFFLINE": "1"}, "--list-models", "acme")
    assert "house-blend" in listed.stdout, listed.stderr
    ref_env = {**theirs_env, "PATH": f"{REFERENCE_NODE_BIN}:{theirs_env['PATH']}", "PI_OFFLINE": "1"}
    by_pi = subprocess.run([str(REFERENCE_PI), "--list-models", "acme"], env=ref_env, cwd=theirs_env["HOME"],
                           capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL, check=False)
    assert "mine-blend" in by_pi.stdout + by_pi.stderr, by_pi.stderr
