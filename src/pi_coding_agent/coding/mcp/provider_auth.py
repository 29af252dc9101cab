"""MCP servers that use a provider's login (``"auth": {"provider": "<id>"}``), and a vendor's own server.

pi lets an HTTP server in mcp.json borrow the credential of a signed-in provider instead of its own
OAuth sign-in: the token is read from auth.json at each connection (so the provider's refreshes
apply, and MCP keeps no copy), refreshed before expiry, and once more after a 401. Signing in to
a vendor with an MCP server (``Vendor.mcp_url``: Radius's gateway) adds that server to the global
mcp.json that way, unless a global server already uses that login, as pi does.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from pi_coding_agent.ai.auth.keys import AuthStorage
from pi_coding_agent.ai.types import JsonObject
from pi_coding_agent.coding.mcp.naming import namespace

if TYPE_CHECKING:
    from pi_coding_agent.ai.providers.vendor import Vendor


class ProviderToken:
    """The bearer token of a provider's login, for an MCP server (the ``TokenSource`` interface)."""

    def __init__(self, provider: str, agent_dir: Path) -> None:
        self.provider, self.agent_dir = provider, agent_dir

    def _auth(self) -> AuthStorage:
        return AuthStorage(self.agent_dir, create_missing=False)  # read fresh: another process may have refreshed

    async def __call__(self) -> str | None:
        from pi_coding_agent.ai.auth.oauth.http import OAuthError

        auth = self._auth()
        try:
            await auth.prepare(self.provider)
        except OAuthError:
            return None
        return auth.api_key(self.provider) or None

    async def refresh(self) -> bool:
        """After a 401: a refreshed token when the rejected one was the provider's OAuth token."""
        from pi_coding_agent.ai.auth.oauth.http import OAuthError

        auth = self._auth()
        try:
            return await auth.unauthorized(self.provider, auth.api_key(self.provider))
        except OAuthError:
            return False


def vendor_server_plan(own: Vendor, provider: str, agent_dir: Path, cwd: Path) -> tuple[str, JsonObject] | None:
    """(name, config) of the global mcp.json entry that makes the vendor's MCP server (``own.mcp_url``)
    use ``provider``'s login, adding it when missing; None when a global server already does."""
    from pi_coding_agent.coding.mcp.config import load_config

    url = str(own.mcp_url).rstrip("/")
    servers = load_config(agent_dir, cwd, trusted=False).servers
    existing = next((s for s in servers if str(s.config.get("url", "")).rstrip("/") == url), None)
    if existing is not None and (existing.config.get("auth") or {}).get("provider") == provider:
        return None
    if existing is not None:
        return existing.name, {**{k: v for k, v in existing.config.items() if k != "oauth"}, "auth": {"provider": provider}}
    taken = {namespace(s.name) for s in servers}
    name, suffix = own.id, 1
    while namespace(name) in taken:
        name = f"{own.id}-mcp" if suffix == 1 else f"{own.id}-mcp-{suffix}"
        suffix += 1
    return name, {"url": own.mcp_url, "auth": {"provider": provider}}


def add_vendor_server(own: Vendor, provider: str, agent_dir: Path, cwd: Path) -> str | None:
    """Add or update the vendor's MCP server after signing in to ``provider``: the line to show, if any."""
    from pi_coding_agent.coding.mcp.config import add_server

    plan = vendor_server_plan(own, provider, agent_dir, cwd)
    if plan is None:
        return None
    path = agent_dir / "mcp.json"
    try:
        replaced = add_server(path, *plan)
    except (OSError, ValueError) as exc:
        return f"Could not update {path}: {exc}"
    return f'{"Updated" if replaced else "Added"} MCP server "{plan[0]}" in {path} to use the {own.title} login.'
