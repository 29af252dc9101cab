"""The third-party ACP adapter pi-acp (npm ``pi-acp``, github svkozak/pi-acp) against our ``pi``.

pi-acp runs ``pi --version`` to show "pi v<version>" in its start-up banner and compares that version
with ``npm view @earendil-works/pi-coding-agent version`` to suggest an update. The package is installed
by scripts/install_test_deps.sh into a cache folder (the tests skip, with the reason, without it). The
update check talks to a stand-in ``npm`` on PATH that answers like the registry does today, so the
tests need no network.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from pi_coding_agent import PI_COMPATIBLE_VERSION
from tests.support.reference_pi import REFERENCE_NODE_BIN
from tests.support.requirements import PI_ACP

pytestmark = pytest.mark.pi_acp


@pytest.fixture(scope="module")
def pi_acp() -> Path:
    """pi-acp's entry script (0.0.34, installed by scripts/install_test_deps.sh)."""
    return PI_ACP


def _node_path() -> str:
    return f"{REFERENCE_NODE_BIN}:{os.environ.get('PATH', '')}"


def _shims(bin_dir: Path, latest: str) -> None:
    """``pi`` runs this checkout; ``npm view`` answers ``latest`` as the registry would."""
    bin_dir.mkdir()
    (bin_dir / "pi").write_text(f'#!/bin/sh\nexec "{sys.executable}" -m pi_coding_agent "$@"\n')
    (bin_dir / "npm").write_text(f'#!/bin/sh\n[ "$1" = view ] && echo "{latest}" && exit 0\nexit 1\n')
    for name in ("pi", "npm"):
        (bin_dir / name).chmod(0o755)


class AcpClient:
    """Newline-delimited JSON-RPC 2.0 over the adapter's stdio, as an editor speaks it."""

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc
        self._next = 0

    async def call(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self._next += 1
        request_id = self._next
        self.proc.stdin.write(json.dumps({"jsonrpc": "2.0", "id": request_id, "method": method,
                                          "params": params}).encode() + b"\n")
        await self.proc.stdin.drain()
        while True:
            line = await asyncio.wait_for(self.proc.stdout.readline(), 60)
            assert line, "pi-acp closed stdout"
            message = json.loads(line)
            if message.get("id") == request_id and "method" not in message:
                assert "error" not in message, message
                result: dict[str, Any] = message["result"]
                return result


async def _startup_banner(entry: Path, tmp_path: Path, latest: str) -> str:
    home, agent_dir, cwd = tmp_path / "home", tmp_path / "agent", tmp_path / "work"
    for folder in (home, agent_dir, cwd):
        folder.mkdir()
    (agent_dir / "models.json").write_text(json.dumps({"providers": {"fake": {
        "baseUrl": "http://127.0.0.1:9/v1", "api": "openai-completions", "apiKey": "dummy",
        "models": [{"id": "fake-model"}]}}}))
    _shims(tmp_path / "bin", latest)
    env = {**os.environ, "HOME": str(home), "PI_CODING_AGENT_DIR": str(agent_dir),
           "PATH": f"{tmp_path / 'bin'}:{_node_path()}"}
    proc = await asyncio.create_subprocess_exec(
        "node", str(entry), cwd=cwd, env=env, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL)
    try:
        client = AcpClient(proc)
        await client.call("initialize", {"protocolVersion": 1, "clientCapabilities": {}})
        session = await client.call("session/new", {"cwd": str(cwd), "mcpServers": []})
        banner: str = session["_meta"]["piAcp"]["startupInfo"] or ""
        return banner
    finally:
        proc.kill()
        await proc.wait()


@pytest.mark.slow
def test_banner_shows_the_compatible_version_and_no_update_notice(pi_acp, tmp_path):
    banner = asyncio.run(_startup_banner(pi_acp, tmp_path, latest=PI_COMPATIBLE_VERSION))
    assert banner.splitlines()[0] == f"pi v{PI_COMPATIBLE_VERSION}"
    assert "New version available" not in banner


@pytest.mark.slow
def test_update_notice_still_works_for_a_newer_pi(pi_acp, tmp_path):
    """The stand-in registry is really consulted: a newer pi there is announced against 1.6.0."""
    banner = asyncio.run(_startup_banner(pi_acp, tmp_path, latest="99.0.0"))
    assert f"New version available: v99.0.0 (installed v{PI_COMPATIBLE_VERSION})" in banner
