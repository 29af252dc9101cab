"""The seams between the ACP mode and the rest of pi: everything it needs, as two small protocols.

``SessionPort`` is the part of a pi session the mode drives: public methods of ``AgentSession``
(and of the SDK session that replaces it) plus its event stream. ``SessionHost`` is what a session
alone does not offer: opening one for a cwd, gating tool calls, swapping the tools' file and
command backends, reading a setting, handing over the client's MCP servers. ``host.BootstrapHost``
implements it over today's ``bootstrap.create_session``; porting the mode onto another session
object means writing one more host, nothing else.

Events consumed (pi's RPC event names): ``message_start``, ``message_update`` (``text_delta``,
``thinking_delta``, ``toolcall_end``), ``message_end``, ``tool_execution_start``,
``tool_execution_update``, ``tool_execution_end``, ``agent_settled``, ``session_info_changed``,
``thinking_level_changed``, ``compaction_start``, ``compaction_end``, ``auto_retry_start``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from pi_coding_agent.agent.events import AgentMessage
from pi_coding_agent.ai.types import JsonObject
from pi_coding_agent.coding.events import AgentEvent

if TYPE_CHECKING:
    from pi_coding_agent.coding.tools.backend import CommandBackend, FileBackend

Listener = Callable[[AgentEvent], None]
# (tool call, validated args) -> None to run it, or {"block": True, "reason": ...}
ToolGate = Callable[[JsonObject, JsonObject], Awaitable[JsonObject | None]]


class SessionPort(Protocol):
    """The session methods the ACP mode calls."""

    @property
    def is_streaming(self) -> bool: ...

    def subscribe(self, listener: Listener, types: Iterable[str] | None = None) -> Callable[[], None]: ...

    async def prompt(
        self, message: str, images: list[JsonObject] | None = None, streaming_behavior: str | None = None
    ) -> JsonObject: ...

    async def abort(self) -> None: ...

    def get_state(self) -> dict[str, Any]: ...

    def get_messages(self) -> list[AgentMessage]: ...

    def get_entries(self, since: str | None = None) -> dict[str, Any]:
        """``{"entries": [...], "leafId": ...}``: the session file's entries (for replay)."""
        ...

    def get_available_models(self) -> list[Any]: ...

    async def set_model(self, provider: str, model_id: str) -> object: ...

    def get_available_thinking_levels(self) -> list[str]: ...

    def set_thinking_level(self, level: str) -> None: ...

    @property
    def sandbox_mode(self) -> str: ...

    def set_sandbox_mode(self, mode: str) -> None: ...

    def get_commands(self) -> list[JsonObject]: ...

    def get_session_stats(self) -> dict[str, Any]: ...

    def set_shutdown_handler(self, stop: Callable[[], None]) -> None:
        """How an extension's ``ctx.shutdown()`` ends the process."""
        ...

    async def shutdown(self) -> None: ...


@dataclass
class SessionSpec:
    """What the client asked for in ``session/new`` or ``session/load``."""

    cwd: Path
    load_id: str | None = None  # a saved session to open; None for a new one
    mcp_servers: dict[str, JsonObject] = field(default_factory=dict)  # mcp.json entries by name
    ui: Any = None  # the extension UI bound to this session (acp.ui.AcpExtensionUI)


class SessionNotFound(LookupError):
    """``load_id`` names no saved session for that cwd."""


class SessionHost(Protocol):
    """Opens sessions and reaches the few things ``SessionPort`` does not cover."""

    async def open(self, spec: SessionSpec) -> SessionPort: ...

    def install_tool_gate(self, session: SessionPort, gate: ToolGate) -> None:
        """Run ``gate`` before every tool call, after any gate already installed (extensions)."""
        ...

    def install_tool_backends(self, session: SessionPort, files: FileBackend | None,
                              commands: CommandBackend | None) -> None: ...

    def default_mode(self, session: SessionPort) -> str | None: ...

    async def connect_mcp_servers(self, session: SessionPort, servers: dict[str, JsonObject]) -> None:
        """Hand the client's MCP servers to pi's MCP manager (the seam for ``coding/mcp``); a later
        list for the same session replaces the earlier one."""
        ...

    def list_sessions(self, cwd: Path | None) -> list[JsonObject]: ...
