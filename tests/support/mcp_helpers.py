"""Shared set-up for the MCP tests: a workspace with models.json for the fake LLM and an mcp.json."""

from __future__ import annotations

import json
import os
import socket
from pathlib import Path
from typing import Any

from tests.support.fakes.llm_server import FakeLLMServer
from tests.support.rpc_helpers import PYTHON, ROOT, RpcProcess

MODEL_ID = "fake-model"
FAKE_SERVER = ["-m", "tests.support.fakes.mcp_server"]


def stdio_server(**extra: Any) -> dict[str, Any]:
    """An mcp.json entry running the FastMCP test server over stdio."""
    return {"command": PYTHON, "args": [*FAKE_SERVER, "stdio"], "cwd": str(ROOT), **extra}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class McpWorkspace:
    def __init__(self, root: Path, llm: FakeLLMServer) -> None:
        self.root = root
        self.agent_dir = root / "agent"
        self.cwd = root / "work"
        self.llm = llm
        self.agent_dir.mkdir()
        self.cwd.mkdir()
        (self.agent_dir / "models.json").write_text(json.dumps({"providers": {"fake": {
            "baseUrl": f"{llm.url}/v1", "api": "openai-completions", "apiKey": "dummy",
            "models": [{"id": MODEL_ID, "contextWindow": 100000, "maxTokens": 4096}]}}}))
        self.env = {**os.environ, "PI_CODING_AGENT_DIR": str(self.agent_dir), "HOME": str(root)}

    def servers(self, servers: dict[str, Any], path: Path | None = None) -> None:
        target = path or self.agent_dir / "mcp.json"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(json.dumps({"mcpServers": servers}))

    async def pi(self, *args: str, session: bool = False) -> RpcProcess:
        """``pi --mode rpc`` on the fake model; ``--no-session`` unless ``session``."""
        flags = () if session else ("--no-session",)
        return await RpcProcess.pi("--provider", "fake", "--model", MODEL_ID, *flags, *args, cwd=self.cwd, env=self.env)


async def run_prompt(pi: RpcProcess, message: str) -> list[dict[str, Any]]:
    """Prompt and read every record through ``agent_settled``."""
    await pi.send({"type": "prompt", "message": message, "id": "run"})
    return await pi.read_until(lambda r: r.get("type") == "agent_settled")


def tool_call(name: str, arguments: dict[str, Any], call_id: str = "call_1") -> dict[str, Any]:
    return {"content": [{"type": "toolCall", "id": call_id, "name": name, "arguments": arguments}]}


def tool_end(records: list[dict[str, Any]]) -> dict[str, Any]:
    return next(r for r in records if r.get("type") == "tool_execution_end")


def declared_tools(request: dict[str, Any]) -> list[str]:
    return [t["function"]["name"] for t in request["body"].get("tools", [])]
