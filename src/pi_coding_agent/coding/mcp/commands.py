"""``/mcp`` outside an interactive UI, as pi answers it: status text, or one action on one server."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pi_coding_agent.coding.mcp import USAGE
from pi_coding_agent.coding.mcp.manager import describe_state, no_servers_text

if TYPE_CHECKING:
    from pi_coding_agent.coding.mcp import McpSession

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
        _oauth(mcp, action, rest[0] if rest else None)


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


def _oauth(mcp: McpSession, action: str, name: str | None) -> None:
    """OAuth sign-in is not implemented here yet (docs/mcp.md): say so for the servers that would use it."""
    manager = mcp.manager
    oauth = [e for e in (manager.config.servers if manager else []) if e.enabled and uses_oauth(e.config)]
    if name is not None and manager is not None and not any(e.name == name for e in manager.config.servers):
        mcp.notify(f'No MCP server named "{name}".', "error")
    elif not oauth or (name is not None and name not in {e.name for e in oauth}):
        mcp.notify(OAUTH_NONE, "error" if name else "info")
    else:
        mcp.notify(f"/mcp {action}: OAuth sign-in for MCP servers is not supported by this implementation; "
                   "set an Authorization header in mcp.json instead.", "error")


def uses_oauth(config: dict[str, Any]) -> bool:
    """HTTP servers without an ``Authorization`` header (or ``auth``) sign in with OAuth."""
    headers: dict[str, str] = config.get("headers") or {}
    return "url" in config and not config.get("auth") and not any(h.lower() == "authorization" for h in headers)
