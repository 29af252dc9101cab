"""``SessionHost`` over ``bootstrap.create_session`` and ``AgentSession``.

This is the only ACP module that reaches past the session's public methods (its runtime's tools,
agent hooks and settings). Porting ``pi --mode acp`` onto another session object means replacing
this file; see ``port.py`` for the contract.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pi_coding_agent.ai.types import JsonObject
from pi_coding_agent.coding.modes.acp.port import SessionNotFound, SessionPort, SessionSpec, ToolGate

if TYPE_CHECKING:
    from pi_coding_agent.coding.agent_session import AgentSession
    from pi_coding_agent.coding.options import CliArgs
    from pi_coding_agent.coding.tools.backend import CommandBackend, FileBackend

SESSION_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$")


class BootstrapHost:
    """Sessions built from the ``pi --mode acp`` command line, one per ``session/new``/``session/load``."""

    supports_mcp_http = True  # client servers join the session's MCP manager (``coding/mcp``)

    def __init__(self, args: CliArgs) -> None:
        self._args = args

    async def open(self, spec: SessionSpec) -> SessionPort:
        from pi_coding_agent.coding.bootstrap import create_session

        args = self._args.replace(continue_session=False, resume=False, fork=None, session_id=None, session=None)
        if spec.load_id is not None:
            args = args.replace(session=str(self._saved_path(spec.load_id, spec.cwd)), no_session=False)
        return await create_session(args, "acp", spec.ui, cwd=Path(spec.cwd))

    def _saved_path(self, session_id: str, cwd: Path) -> Path:
        """The file of a saved session with exactly this id (never a prefix or a path from the client)."""
        if SESSION_ID.match(session_id):
            for info in self.list_sessions(cwd, same_cwd=False):
                if info["id"] == session_id:
                    return Path(info["path"])
        raise SessionNotFound(f"Session not found: {session_id}")

    def _session_dir(self, cwd: Path) -> Path:
        from pi_coding_agent.coding import paths
        from pi_coding_agent.coding.resources.settings import Settings

        agent_dir = paths.agent_dir()
        settings = Settings.load(agent_dir, cwd, project_trusted=True)
        return paths.resolve_session_dir(self._args.session_dir, settings.session_dir, agent_dir, cwd)

    def list_sessions(self, cwd: Path | None, same_cwd: bool = True) -> list[dict[str, Any]]:
        from pi_coding_agent.coding.session import list_sessions

        base = cwd or Path.cwd()
        return list_sessions(self._session_dir(base), base if same_cwd and cwd is not None else None)

    def install_tool_gate(self, session: SessionPort, gate: ToolGate) -> None:
        hooks = _agent_session(session).agent.hooks
        previous = hooks.before_tool_call

        async def before_tool_call(call: Any, args: dict[str, Any]) -> JsonObject | None:
            if previous is not None and (decision := await previous(call, args)):
                return decision
            return await gate(call, args)

        hooks.before_tool_call = before_tool_call

    def install_tool_backends(self, session: SessionPort, files: FileBackend | None,
                              commands: CommandBackend | None) -> None:
        from pi_coding_agent.coding.tools.base import ToolEnv
        from pi_coding_agent.coding.tools.builtin import LazyTool

        rt = _agent_session(session).rt
        envs = [rt.tool_env]  # the built-in tools' (a handle not yet loaded is bound to it too)
        envs += [env for tool in rt.all_tools.values() if not isinstance(tool, LazyTool)
                 if isinstance(env := getattr(tool, "env", None), ToolEnv)]
        for env in envs:
            env.files, env.commands = files, commands

    def default_mode(self, session: SessionPort) -> str | None:
        return _agent_session(session).rt.settings.acp_default_mode

    async def connect_mcp_servers(self, session: SessionPort, servers: dict[str, JsonObject]) -> None:
        """The client's servers become the session's client servers (a later list replaces an earlier
        one); one that cannot join is reported on stderr."""
        from pi_coding_agent.coding.mcp.session import use_client_servers

        for name, reason in sorted((await use_client_servers(_agent_session(session).rt, servers)).items()):
            print(f"pi: MCP server {name} from the ACP client not connected: {reason}", file=sys.stderr)


def _agent_session(session: SessionPort) -> AgentSession:
    from pi_coding_agent.coding.agent_session import AgentSession

    assert isinstance(session, AgentSession)
    return session
