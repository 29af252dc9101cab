"""MCP servers that use a provider's login (``auth.provider``), and the Radius server a Radius sign-in adds.

The protected MCP server of ``tests/support/fakes/mcp_oauth_server.py`` accepts only its valid bearer tokens;
the provider's credential lives in auth.json and is refreshed at the fake authorization server.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from pi_coding_agent.ai.providers.radius import MCP_URL as RADIUS_MCP_URL
from pi_coding_agent.ai.providers.radius import VENDOR as RADIUS
from pi_coding_agent.coding.commands.login import after_sign_in
from pi_coding_agent.coding.mcp.provider_auth import add_vendor_server
from pi_coding_agent.coding.resources.settings import Settings
from tests.coding.cli.test_auth_cli import auth_file, home, ours
from tests.support.fakes.mcp_oauth_server import OAuthFixture
from tests.support.fakes.oauth_server import FakeOAuthServer

pytestmark = pytest.mark.timeout(120)


@pytest.fixture
def mcp() -> Iterator[OAuthFixture]:
    with OAuthFixture() as fixture:
        yield fixture


@pytest.fixture
def oauth(monkeypatch: pytest.MonkeyPatch):
    with FakeOAuthServer() as server:
        monkeypatch.setenv("PI_OAUTH_ORIGIN", server.url)
        yield server


def radius_env(tmp_path: Path, mcp_url: str, access: str, refresh: str, expires_ms: int) -> dict[str, str]:
    env = home(tmp_path, {"radius": {"type": "oauth", "access": access, "refresh": refresh, "expires": expires_ms}})
    (Path(env["HOME"]) / ".pi" / "agent" / "mcp.json").write_text(json.dumps(
        {"mcpServers": {"gateway": {"url": mcp_url, "auth": {"provider": "radius"}}}}))
    return env


def listed(env: dict[str, str], status: int = 0) -> dict[str, object]:
    done = ours(env, "mcp", "list", "--json")
    assert done.returncode == status, done.stderr
    servers: list[dict[str, object]] = json.loads(done.stdout)["servers"]
    return servers[0]


@pytest.mark.slow
def test_the_provider_token_opens_the_server_and_a_401_refreshes_the_login(tmp_path: Path, mcp: OAuthFixture,
                                                                           oauth: FakeOAuthServer):
    mcp.valid_tokens.add("sk-ant-oat01-access-1")  # what the fake authorization server issues first
    refresh = oauth.issue_refresh()
    env = radius_env(tmp_path, f"{mcp.base}/mcp", "radius-rejected", refresh, int(time.time() * 1000) + 3600_000)
    report = listed(env)
    assert (report["state"], report["tools"]) == ("connected", ["whoami"]), report
    stored = auth_file(env)["radius"]
    assert stored["access"] == "sk-ant-oat01-access-1" and stored["refresh"] != refresh  # refreshed after the 401
    assert oauth.grants("refresh_token")[0]["client_id"] == "pi-gateway"


@pytest.mark.slow
def test_a_login_the_server_refuses_asks_for_the_provider_sign_in(tmp_path: Path, mcp: OAuthFixture,
                                                                  oauth: FakeOAuthServer):
    env = radius_env(tmp_path, f"{mcp.base}/mcp", "radius-rejected", "revoked", int(time.time() * 1000) + 3600_000)
    report = listed(env, status=1)  # a server that is not connected fails the listing
    assert report["state"] == "needs-auth"
    assert report["error"] == 'MCP server "gateway" requires sign-in. Run /login radius to sign in.'
    assert "radius-rejected" not in json.dumps(report)


def test_signing_in_to_radius_adds_its_mcp_server_once(tmp_path: Path):
    agent = tmp_path / "agent"
    agent.mkdir()
    (agent / "mcp.json").write_text(json.dumps({"mcpServers": {"radius": {"command": "other"}}}, indent=4))
    assert add_vendor_server(RADIUS, "radius", agent, tmp_path) == \
        f'Added MCP server "radius-mcp" in {agent / "mcp.json"} to use the Radius login.'
    servers = json.loads((agent / "mcp.json").read_text())["mcpServers"]
    assert servers["radius-mcp"] == {"url": RADIUS_MCP_URL, "auth": {"provider": "radius"}}
    assert servers["radius"] == {"command": "other"} and (agent / "mcp.json").read_text().startswith('{\n    "')
    assert add_vendor_server(RADIUS, "radius", agent, tmp_path) is None  # already uses that login


def test_an_existing_radius_server_is_switched_to_the_login(tmp_path: Path):
    agent = tmp_path / "agent"
    agent.mkdir()
    (agent / "mcp.json").write_text(json.dumps({"mcpServers": {"r": {
        "url": RADIUS_MCP_URL + "/", "oauth": {"clientId": "x"}, "exposure": "direct"}}}))
    assert add_vendor_server(RADIUS, "radius", agent, tmp_path) == \
        f'Updated MCP server "r" in {agent / "mcp.json"} to use the Radius login.'
    assert json.loads((agent / "mcp.json").read_text())["mcpServers"] == {"r": {
        "url": RADIUS_MCP_URL + "/", "exposure": "direct", "auth": {"provider": "radius"}}}


def test_a_sign_in_adds_the_server_its_vendor_names(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    agent = tmp_path / "agent"
    agent.mkdir()
    settings = Settings(agent, tmp_path, {}, {}, [])
    assert after_sign_in("llama.cpp", settings) is None and after_sign_in("openai", settings) is None
    assert not (agent / "mcp.json").exists()  # vendors without an MCP server add none
    monkeypatch.setattr(RADIUS, "mcp_url", "https://gateway.example/mcp")
    assert after_sign_in("radius", settings) == f'Added MCP server "radius" in {agent / "mcp.json"} to use the Radius login.'
    servers = json.loads((agent / "mcp.json").read_text())["mcpServers"]
    assert servers == {"radius": {"url": "https://gateway.example/mcp", "auth": {"provider": "radius"}}}
