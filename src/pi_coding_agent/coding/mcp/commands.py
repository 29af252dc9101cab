"""``/mcp`` outside an interactive UI, as pi answers it: status text, or one action on one server."""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

from pi_coding_agent.coding.mcp.manager import McpManager, credential_store, describe_state, no_servers_text

USAGE = "Usage: /mcp, /mcp login [server], /mcp logout [server], /mcp reconnect [server]"


class _Runtime(Protocol):
    agent_dir: Path


class McpSession(Protocol):
    """What ``/mcp`` uses of the session's MCP bridge (``coding/mcp/__init__.py``)."""

    manager: McpManager | None

    @property
    def runtime(self) -> _Runtime: ...

    def notify(self, message: str, level: str) -> None: ...
    def sync_tools(self) -> None: ...

OAUTH_NONE = "No enabled MCP server uses OAuth. Only HTTP servers without an Authorization header do."


async def run_mcp_command(mcp: McpSession, args: str) -> None:
    words = args.split()
    manager = mcp.manager
    if not words:
        if manager is None:
            mcp.notify(no_servers_text(mcp.runtime.agent_dir), "info")
            return
        await manager.wait_for_all()
        mcp.notify(manager.status_text(mcp.runtime.agent_dir), "info")
        return
    action, rest = words[0], words[1:]
    if len(rest) > 1 or action not in ("login", "logout", "reconnect"):
        mcp.notify(USAGE, "warning")
        return
    if manager is not None:
        await manager.wait_for_all()
    if action == "reconnect":
        await _reconnect(mcp, rest[0] if rest else None)
    else:
        await _oauth(mcp, action, rest[0] if rest else None)


async def _reconnect(mcp: McpSession, name: str | None) -> None:
    manager = mcp.manager
    candidates = list(manager.connections.values()) if manager is not None else []
    if name is not None and name not in {c.name for c in candidates}:
        known = manager is not None and any(e.name == name for e in manager.config.servers)
        mcp.notify("No enabled MCP server to reconnect." if known else f'No MCP server named "{name}".', "error")
        return
    if name is None:
        preferred = [c for c in candidates if c.state in ("failed", "disconnected")]
        pick = candidates if len(candidates) == 1 else preferred
        if len(pick) != 1:
            mcp.notify("No enabled MCP server to reconnect." if not candidates else USAGE, "info")
            return
        name = pick[0].name
    assert manager is not None
    failure = await manager.reconnect(name)
    if failure:
        mcp.notify(failure, "error")
        return
    mcp.sync_tools()
    connection = manager.connections[name]
    mcp.notify(f'Reconnected to MCP server "{name}" ({describe_state(connection)}).', "info")


async def _oauth(mcp: McpSession, action: str, name: str | None) -> None:
    """``/mcp login|logout``: the sign-in URL reaches the client as a ``notify`` it can show."""
    manager = mcp.manager
    entries = manager.config.servers if manager else []
    oauth = [e for e in entries if e.enabled and e.uses_oauth and manager and e.name in manager.connections]
    if name is not None and not any(e.name == name for e in entries):
        mcp.notify(f'No MCP server named "{name}".', "error")
        return
    picked = [e for e in oauth if e.name == name] if name else oauth
    if not picked or (name is None and len(picked) > 1):
        mcp.notify(OAUTH_NONE if not picked else USAGE, "error" if name else "info")
        return
    entry = picked[0]
    assert manager is not None
    if action == "logout":
        removed = credential_store(mcp.runtime.agent_dir).save(entry.name, entry.config["url"], None)
        await manager.reconnect(entry.name)
        mcp.notify(f'Signed out of MCP server "{entry.name}".' if removed
                   else f'No stored credentials for MCP server "{entry.name}".', "info")
        return

    def show(url: str) -> None:
        mcp.notify(f'Sign in to MCP server "{entry.name}" in your browser:\n{url}', "info")

    failure = await manager.sign_in(entry.name, show)
    if failure:
        mcp.notify(failure, "error")
        return
    mcp.sync_tools()
    count = len(manager.connections[entry.name].tools)
    mcp.notify(f'Signed in to MCP server "{entry.name}" ({count} tools).', "info")
