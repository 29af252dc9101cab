"""An ACP client built on the official SDK (``agent-client-protocol``) that drives ``pi --mode acp``.

``RecordingClient`` implements the client side of the protocol: it records every
``session/update``, answers ``session/request_permission`` from a scripted queue, serves
``fs/*`` from an in-memory buffer map (falling back to disk, like an editor with unsaved files),
and runs ``terminal/*`` commands as real subprocesses.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from acp import spawn_agent_process
from acp.client.connection import ClientSideConnection
from acp.schema import (
    AllowedOutcome,
    CreateTerminalResponse,
    DeniedOutcome,
    ReadTextFileResponse,
    RequestPermissionResponse,
    TerminalOutputResponse,
    WaitForTerminalExitResponse,
)

from tests.support.fakes.llm_server import FakeLLMServer
from tests.support.rpc_helpers import PYTHON

MODEL_ID = "fake-model"


def make_workspace(root: Path, fake_llm: FakeLLMServer, settings: dict[str, Any] | None = None
                   ) -> tuple[Path, dict[str, str]]:
    """A project dir and an environment whose agent dir routes provider ``fake`` to the fake server."""
    agent_dir = root / "agent"
    agent_dir.mkdir(exist_ok=True)
    (agent_dir / "models.json").write_text(json.dumps({"providers": {"fake": {
        "baseUrl": f"{fake_llm.url}/v1", "api": "openai-completions", "apiKey": "dummy",
        "models": [{"id": MODEL_ID, "contextWindow": 100000, "maxTokens": 4096},
                   {"id": "fake-reasoner", "reasoning": True, "contextWindow": 100000, "maxTokens": 4096}]}}}))
    (agent_dir / "settings.json").write_text(json.dumps({"retry": {"enabled": False}, **(settings or {})}))
    cwd = root / "work"
    cwd.mkdir(exist_ok=True)
    env = {"PI_CODING_AGENT_DIR": str(agent_dir), "HOME": str(root), "TMPDIR": str(root)}
    return cwd, env


def dump(model: Any) -> dict[str, Any]:
    data: dict[str, Any] = model.model_dump(by_alias=True, exclude_none=True, mode="json")
    return data


class RecordingClient:
    """The client half of the SDK's protocol, with scripted permission answers."""

    def __init__(self, buffers: dict[str, str] | None = None) -> None:
        self.updates: list[dict[str, Any]] = []
        self.permission_answers: list[str | None] = []  # option ids; None = cancelled
        self.permission_requests: list[dict[str, Any]] = []
        self.buffers = buffers if buffers is not None else {}
        self.fs_calls: list[tuple[str, str]] = []
        self.terminals: dict[str, tuple[asyncio.subprocess.Process, list[bytes]]] = {}
        self._pumps: list[asyncio.Future[None]] = []
        self.chunk_seen = asyncio.Event()

    async def request_permission(self, options: Any, session_id: str, tool_call: Any, **_: Any
                                 ) -> RequestPermissionResponse:
        self.permission_requests.append({"toolCall": dump(tool_call), "options": [dump(o) for o in options]})
        answer = self.permission_answers.pop(0) if self.permission_answers else None
        if answer is None:
            return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))
        return RequestPermissionResponse(outcome=AllowedOutcome(outcome="selected", option_id=answer))

    async def session_update(self, session_id: str, update: Any, **_: Any) -> None:
        record = dump(update)
        self.updates.append(record)
        if record.get("sessionUpdate") == "agent_message_chunk":
            self.chunk_seen.set()

    async def read_text_file(self, path: str, session_id: str, line: int | None = None, limit: int | None = None,
                             **_: Any) -> ReadTextFileResponse:
        self.fs_calls.append(("read", path))
        content = self.buffers[path] if path in self.buffers else Path(path).read_text()
        return ReadTextFileResponse(content=content)

    async def write_text_file(self, content: str, path: str, session_id: str, **_: Any) -> None:
        self.fs_calls.append(("write", path))
        self.buffers[path] = content

    async def create_terminal(self, command: str, session_id: str, args: list[str] | None = None,
                              cwd: str | None = None, env: Any = None, output_byte_limit: int | None = None,
                              **_: Any) -> CreateTerminalResponse:
        extra = {v.name: v.value for v in env or []}
        proc = await asyncio.create_subprocess_exec(command, *(args or []), cwd=cwd, env={**os.environ, **extra},
                                                    stdout=asyncio.subprocess.PIPE,
                                                    stderr=asyncio.subprocess.STDOUT)
        terminal_id = f"term-{len(self.terminals)}"
        chunks: list[bytes] = []
        self.terminals[terminal_id] = (proc, chunks)
        self._pumps.append(asyncio.ensure_future(self._pump(proc, chunks)))
        return CreateTerminalResponse(terminal_id=terminal_id)

    @staticmethod
    async def _pump(proc: asyncio.subprocess.Process, chunks: list[bytes]) -> None:
        assert proc.stdout is not None
        while data := await proc.stdout.read(4096):
            chunks.append(data)

    async def terminal_output(self, session_id: str, terminal_id: str, **_: Any) -> TerminalOutputResponse:
        _, chunks = self.terminals[terminal_id]
        return TerminalOutputResponse(output=b"".join(chunks).decode(), truncated=False)

    async def wait_for_terminal_exit(self, session_id: str, terminal_id: str, **_: Any
                                     ) -> WaitForTerminalExitResponse:
        proc, _ = self.terminals[terminal_id]
        code = await proc.wait()
        await asyncio.sleep(0.05)  # let the pump collect the last bytes
        return WaitForTerminalExitResponse(exit_code=code)

    async def kill_terminal(self, session_id: str, terminal_id: str, **_: Any) -> None:
        with contextlib.suppress(ProcessLookupError):
            self.terminals[terminal_id][0].kill()

    async def release_terminal(self, session_id: str, terminal_id: str, **_: Any) -> None:
        await self.kill_terminal(session_id, terminal_id)

    def of_kind(self, kind: str) -> list[dict[str, Any]]:
        return [u for u in self.updates if u["sessionUpdate"] == kind]

    def text(self, kind: str = "agent_message_chunk") -> str:
        return "".join(u["content"].get("text", "") for u in self.of_kind(kind))


@asynccontextmanager
async def acp_pi(client: RecordingClient, cwd: Path, env: dict[str, str], *args: str
                 ) -> AsyncIterator[tuple[ClientSideConnection, asyncio.subprocess.Process]]:
    """``pi --mode acp`` as a subprocess with the SDK's client connection on its pipes."""
    argv = ["-m", "pi_coding_agent", "--mode", "acp", "--provider", "fake", "--model", MODEL_ID, *args]
    async with spawn_agent_process(client, PYTHON, *argv, cwd=cwd, env=env,
                                   transport_kwargs={"stderr": None}) as (conn, proc):
        yield conn, proc
