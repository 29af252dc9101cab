"""OAuth sign-in for an HTTP MCP server, against a local authorization server (tests.support.fakes.mcp_oauth_server.py):
discovery with the issuer check, dynamic registration, PKCE, the loopback redirect, tokens in
mcp-auth.json (0600), refresh after a 401, and the sign-in URL reaching an RPC client as a notify."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.support.fakes.llm_server import FakeLLMServer
from tests.support.fakes.mcp_oauth_server import OAuthFixture
from tests.support.mcp_helpers import McpWorkspace, run_prompt, tool_call, tool_end
from tests.support.rpc_helpers import PYTHON

pytestmark = pytest.mark.timeout(120)


@pytest.fixture
def oauth() -> Iterator[OAuthFixture]:
    with OAuthFixture() as fixture:
        yield fixture


@pytest.mark.slow
async def test_sign_in_over_rpc_then_calls_refresh_after_a_401(
        tmp_path: Path, fake_llm: FakeLLMServer, oauth: OAuthFixture) -> None:
    ws = McpWorkspace(tmp_path, fake_llm)
    ws.servers({"secure": {"url": f"{oauth.base}/mcp", "exposure": "direct"}})
    pi = await ws.pi()
    try:
        await pi.send({"type": "prompt", "message": "/mcp", "id": "status"})
        records = await pi.read_until(lambda r: r.get("id") == "status")
        status = [r["message"] for r in records if r.get("method") == "notify"][-1]
        assert status == "secure: needs sign-in, run /mcp login secure (direct)"
        await pi.send({"type": "prompt", "message": "/mcp login secure", "id": "login"})
        note = await pi.read_until(lambda r: r.get("method") == "notify" and "in your browser" in r["message"])
        url = note[-1]["message"].split("\n", 1)[1]
        assert note[-1]["message"].startswith('Sign in to MCP server "secure" in your browser:\n')
        async with httpx.AsyncClient(follow_redirects=True) as browser:  # the user approving in a browser
            page = await browser.get(url)
        assert page.status_code == 200 and b"Signed in" in page.content
        done = await pi.read_until(lambda r: r.get("id") == "login")
        assert [r["message"] for r in done if r.get("method") == "notify"] == [
            'Signed in to MCP server "secure" (1 tools).']
        assert oauth.registrations[0]["client_name"] == "pi"
        auth_file = ws.agent_dir / "mcp-auth.json"
        assert os.stat(auth_file).st_mode & 0o777 == 0o600
        stored = json.loads(auth_file.read_text())[f"mcp__secure|{oauth.base}/mcp"]
        assert stored["tokens"]["access_token"] == "tok-1" and stored["clientInformation"]["client_id"] == "client-1"

        oauth.valid_tokens = set()  # revoked: the next call gets a 401, refreshes and retries
        ws.llm.add(tool_call("mcp__secure__whoami", {}), {"content": [{"type": "text", "text": "ok"}]})
        end = tool_end(await run_prompt(pi, "who"))
        assert end["result"]["content"] == [{"type": "text", "text": "authorized by token #2"}]
        assert all(b"tok-" not in line and b"refresh-1" not in line for line in pi.raw_lines)  # no secret on stdout
    finally:
        await pi.kill()


@pytest.mark.slow
def test_pi_mcp_login_and_logout(tmp_path: Path, oauth: OAuthFixture) -> None:
    agent = tmp_path / "agent"
    agent.mkdir()
    (agent / "mcp.json").write_text(json.dumps({"mcpServers": {"secure": {"url": f"{oauth.base}/mcp"}}}))
    env = {**os.environ, "HOME": str(tmp_path), "PI_CODING_AGENT_DIR": str(agent)}
    proc = subprocess.Popen([PYTHON, "-m", "pi_coding_agent", "mcp", "login", "secure", "--timeout", "60"],
                            cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    assert proc.stdout.readline() == 'Sign in to MCP server "secure" in your browser:\n'
    assert httpx.get(proc.stdout.readline().strip(), follow_redirects=True).status_code == 200
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert out == 'Signed in to MCP server "secure" (1 tools).\n'
    logout = subprocess.run([PYTHON, "-m", "pi_coding_agent", "mcp", "logout", "secure"], cwd=tmp_path, env=env,
                            capture_output=True, text=True, timeout=60, check=False)
    assert logout.stdout == 'Signed out of MCP server "secure".\n'
    assert json.loads((agent / "mcp-auth.json").read_text()) == {}
