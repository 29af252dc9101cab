"""``pi mcp add|remove|list|login|logout`` as a real process: pi's flags, messages and exit codes."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from tests.support.mcp_helpers import FAKE_SERVER
from tests.support.rpc_helpers import PYTHON, ROOT

pytestmark = pytest.mark.timeout(120)


def pi_mcp(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HOME": str(tmp_path), "PI_CODING_AGENT_DIR": str(tmp_path / "agent")}
    work = tmp_path / "work"
    work.mkdir(exist_ok=True)
    return subprocess.run([PYTHON, "-m", "pi_coding_agent", "mcp", *args], cwd=work, env=env, capture_output=True,
                          text=True, timeout=100, check=False)


@pytest.mark.slow
def test_add_list_remove_a_stdio_server(tmp_path: Path) -> None:
    mcp_json = tmp_path / "agent" / "mcp.json"
    added = pi_mcp(tmp_path, "add", "fake", "--exposure", "direct", "--env", "A=${HOME}", "--cwd", str(ROOT),
                   "--", PYTHON, *FAKE_SERVER, "stdio")
    assert added.returncode == 0, added.stderr
    assert added.stdout == f'Added global MCP server "fake" in {mcp_json}.\nCheck it with: pi mcp list\n'
    assert json.loads(mcp_json.read_text()) == {"mcpServers": {"fake": {
        "command": PYTHON, "args": [*FAKE_SERVER, "stdio"], "env": {"A": "${HOME}"}, "cwd": str(ROOT),
        "exposure": "direct"}}}
    listed = pi_mcp(tmp_path, "list")
    assert listed.returncode == 0, listed.stdout + listed.stderr
    lines = listed.stdout.splitlines()
    assert lines[0] == "fake: connected, 11 tools (direct, global)"
    assert lines[1] == f"  {PYTHON} -m tests.support.fakes.mcp_server stdio"
    assert lines[2].startswith("  tools: echo, add, big,") and lines[3] == "  offers resources"
    as_json = json.loads(pi_mcp(tmp_path, "list", "--json").stdout)
    assert as_json["servers"][0]["state"] == "connected" and as_json["errors"] == []
    removed = pi_mcp(tmp_path, "remove", "fake")
    assert removed.returncode == 0 and removed.stdout == f'Removed global MCP server "fake" from {mcp_json}.\n'
    again = pi_mcp(tmp_path, "remove", "fake")
    assert again.returncode == 1 and again.stderr == f'No global MCP server named "fake" in {mcp_json}.\n'


def test_list_fails_for_an_invalid_entry_or_a_dead_server(tmp_path: Path) -> None:
    agent = tmp_path / "agent"
    agent.mkdir()
    (agent / "mcp.json").write_text(json.dumps({"mcpServers": {"dead": {"command": "/nonexistent/x"},
                                                               "bad": {"url": "ftp://x"}}}))
    listed = pi_mcp(tmp_path, "list")
    assert listed.returncode == 1
    assert "dead: failed (codemode, global)\n  /nonexistent/x\n  spawn /nonexistent/x ENOENT\n" in listed.stdout
    assert f'config error: {agent / "mcp.json"}: server "bad": url must be an http or https URL' in listed.stdout


@pytest.mark.slow
def test_add_http_with_bearer_and_bad_input(tmp_path: Path) -> None:
    added = pi_mcp(tmp_path, "add", "docs", "--url", "https://example.com/mcp", "--bearer-token-env-var", "TOKEN",
                   "--header", "X-A=1")
    assert added.returncode == 0, added.stderr
    config = json.loads((tmp_path / "agent" / "mcp.json").read_text())["mcpServers"]["docs"]
    assert config == {"url": "https://example.com/mcp", "headers": {"X-A": "1", "Authorization": "Bearer ${TOKEN}"}}
    assert pi_mcp(tmp_path, "add", "x", "--env", "A=1", "--url", "https://e/mcp").stderr == \
        "--env only applies to stdio servers.\n"
    assert pi_mcp(tmp_path, "add", "x", "--bogus", "1").stderr == 'Unknown option --bogus.\nUse "pi mcp --help" for usage.\n'
    assert pi_mcp(tmp_path, "add", "bad name", "--", "x").stderr == \
        'invalid server name "bad name" (use letters, digits, "_" and "-")\n'
    login = pi_mcp(tmp_path, "login", "docs")
    assert login.returncode == 1 and login.stderr == \
        'MCP server "docs" does not use OAuth. Only HTTP servers without an Authorization header do.\n'
    missing = pi_mcp(tmp_path, "logout", "dosc")
    assert missing.returncode == 1 and missing.stderr == 'No MCP server named "dosc". Did you mean "docs"? Configured: docs.\n'
