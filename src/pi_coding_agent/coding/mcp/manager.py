"""The MCP servers of one session: background connections, tool naming and exposure, the prompt
section, ``/mcp`` status, and the tool interface codemode consumes (``tools()``, ``McpTool.call``).

Nothing here touches the session directly: the session bridge (``coding/mcp/__init__``) gives the
manager a ``notify`` callback and subscribes to ``on_tools_changed`` to declare the direct tools.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from pi_coding_agent.ai.env_limits import env_seconds
from pi_coding_agent.coding.mcp.config import McpConfig, ServerEntry
from pi_coding_agent.coding.mcp.log import ServerLog
from pi_coding_agent.coding.mcp.naming import namespace, server_summary, tool_name
from pi_coding_agent.coding.mcp.resources import RESOURCE_TOOLS, ResourceTool, resource_exposure
from pi_coding_agent.coding.mcp.tools import McpTool, schema_problem

if TYPE_CHECKING:  # the connection stack (client, connection) loads when the first server connects
    from pi_coding_agent.coding.mcp.connection import ServerConnection
    from pi_coding_agent.coding.mcp.oauth import CredentialStore, TokenSource
    from pi_coding_agent.coding.mcp.provider_auth import ProviderToken

AnyMcpTool = McpTool | ResourceTool

STARTUP_WAIT_S = 10.0  # pi's wait for direct servers before the first prompt; PI_MCP_STARTUP_WAIT_S changes it
MAX_DESCRIPTION_CHARS = 250
MAX_SECTION_CHARS = 4096
Notify = Callable[[str, str], None]


class McpManager:
    def __init__(self, config: McpConfig, cwd: Path, agent_dir: Path, notify: Notify) -> None:
        self.config = config
        self.cwd = cwd
        self.agent_dir = agent_dir
        self.notify = notify
        self.log = ServerLog(agent_dir / "mcp.log")
        self.connections: dict[str, ServerConnection] = {}
        self.on_tools_changed: list[Callable[[], None]] = []
        self._tools: dict[str, McpTool] = {}  # pi name -> adapter, withdrawn ones kept but unavailable
        self._owners: dict[str, str] = {}  # pi name -> "server\0tool", so names stay stable
        self._resource_tools = [ResourceTool(name, "hidden", self.resource_servers) for name in RESOURCE_TOOLS]
        self._startup: asyncio.Task[None] | None = None
        self._closing: set[asyncio.Task[None]] = set()  # connections of removed servers, still stopping
        self._late: set[asyncio.Task[None]] = set()  # reports for servers registered after start-up
        self.quiet = False  # a replacement reloads the extensions: their servers join its report instead
        self._reported: set[tuple[str, str]] = set()  # (server, tool) whose bad schema was reported
        self._waited_for_direct = False
        # set by the codemode tool once it exists; until then codemode servers are reached like deferred ones
        self.codemode_active = False

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> None:
        """Connect every enabled server in the background; report problems once all settled."""
        for entry in self.config.servers:
            if entry.name not in self.connections:  # an extension's server may have connected already
                self._connect(entry)
        self.report_when_settled()

    def renew(self) -> None:
        """A session replacement kept these connections: do what pi's rebuilt runtime does again.
        Servers that are not connected (failed, waiting for sign-in, dropped) try again, the next
        prompt waits for direct servers again, and problems are reported once the attempts settled;
        connected servers are left alone."""
        for connection in self.connections.values():
            if connection.state in ("failed", "needs-auth", "disconnected"):
                connection.start()
        self._waited_for_direct = False
        self.report_when_settled()

    def report_when_settled(self) -> None:
        """One "need attention" report once every connection attempt settled; pending ones are dropped
        (the session they were for is gone, or this one covers their servers)."""
        self._cancel_reports()
        self.quiet = False
        self._startup = asyncio.create_task(self._report_after_startup())

    def _connect(self, entry: ServerEntry) -> None:
        from pi_coding_agent.coding.mcp.connection import ServerConnection

        if entry.enabled:
            connection = ServerConnection(entry, self.cwd, self.log, self._register_tools, self._changed,
                                          token_source(entry, self.agent_dir))
            self.connections[entry.name] = connection
            connection.start()

    def add_server(self, entry: ServerEntry) -> str | None:
        """A server an extension registered: connects at once unless a file entry of the same
        namespace overrides it (then the reason is returned)."""
        clash = next((e for e in self.config.servers if namespace(e.name) == namespace(entry.name)), None)
        if clash is not None and (clash.name, clash.source, clash.config) == (entry.name, entry.source, entry.config):
            return None  # registered again by the extension's next generation (a reload): it stays connected
        if clash is not None and (clash.scope, clash.name, clash.source) == (entry.scope, entry.name, entry.source):
            self.remove_server(clash.name)  # the same registrant with another config replaces its server
        elif clash is not None:
            return f'"{entry.name}" registered by {entry.source} is overridden by "{clash.name}" in {clash.source}'
        self.config.servers.append(entry)
        self._connect(entry)
        connection = self.connections.get(entry.name)
        if connection is not None and not self.quiet and self._startup is not None and self._startup.done():
            self._track(asyncio.create_task(self._report_late(connection)))
        return None

    def remove_server(self, name: str) -> None:
        """Withdraw a registered server at once (its tools become unreachable); its process is stopped
        in the background, and ``close`` waits for that."""
        self.config.servers = [e for e in self.config.servers if e.name != name]
        connection = self.connections.pop(name, None)
        for tool in self._tools.values():
            if tool.server == name:
                tool.available = False
        self._sync_resource_tools()
        for listener in self.on_tools_changed:
            listener()
        if connection is not None:
            self._closing.add(closing := asyncio.create_task(connection.close()))
            closing.add_done_callback(self._closing.discard)

    def _cancel_reports(self) -> None:
        for task in [self._startup, *self._late]:
            if task is not None:
                task.cancel()

    def _track(self, task: asyncio.Task[None]) -> None:
        self._late.add(task)
        task.add_done_callback(self._late.discard)

    async def settle_removals(self) -> None:
        """Wait until the servers ``remove_server`` withdrew have stopped."""
        if self._closing:
            await asyncio.wait(self._closing)  # a cancelled waiter must not cut a stop short

    async def _report_after_startup(self) -> None:
        """Config errors and the servers needing attention, files first; servers registered while
        the others were still connecting are waited for and join this report."""
        waited: list[ServerConnection] = []
        while pending := [c for c in self.connections.values() if c not in waited]:
            await self.wait_for(pending)
            waited += pending
        listed = [c for e in self.config.servers if (c := self.connections.get(e.name)) is not None]
        self._report([f"config: {error}" for error in self.config.errors], listed)

    async def _report_late(self, connection: ServerConnection) -> None:
        """A server registered after the start-up report: its own report once it settled, as pi's."""
        await self.wait_for([connection])
        if not self.quiet and self.connections.get(connection.name) is connection:
            self._report([], [connection])

    def _report(self, lines: list[str], connections: list[ServerConnection]) -> None:
        lines = lines + [f"{c.name}: {describe_state(c)}" for c in connections if c.state in ("failed", "needs-auth")]
        if lines:
            body = "\n".join(f"  {line}" for line in lines)
            self.notify(f"MCP servers need attention:\n{body}\nRun /mcp to fix.", "warning")

    async def wait_for(self, connections: list[ServerConnection]) -> None:
        """Until these connection attempts settled. A waiter that is cancelled (a report a replacement
        drops, the first prompt's 10 s) leaves them running: ``asyncio.wait``, not ``gather``, whose
        cancellation would cancel them and kill a server process half spawned."""
        starting = [task for c in connections if (task := c._opening) is not None and not task.done()]
        if starting:
            await asyncio.wait(starting)

    async def wait_for_reach(self, reach: str | list[str]) -> None:
        """A tool that reaches others (a codemode script) waits for the servers it may call: all of them
        (``"all"``), else those whose namespace (``mcp__<server>``) one of its words contains."""
        if reach == "all":
            await self.wait_for_all()
            return
        await self.wait_for([c for name, c in self.connections.items()
                             if any(namespace(name) in word for word in reach)])

    async def wait_for_all(self) -> None:
        """tool_search and the resource tools reach every server, so they wait for all of them."""
        await self.wait_for(list(self.connections.values()))

    async def before_prompt(self, declared: set[str]) -> None:
        """The first prompt waits (10 s at most) only for servers whose tools it must declare: those
        with ``direct`` tools and those owning tools the transcript declares (loaded on this branch)."""
        if self._waited_for_direct:
            return
        self._waited_for_direct = True
        direct = [c for c in self.connections.values() if "direct" in c.entry.configured_exposures()
                  or any(name.startswith(tool_name(c.name, "")) for name in declared)]
        if not direct:
            return
        try:
            await asyncio.wait_for(self.wait_for(direct), env_seconds("PI_MCP_STARTUP_WAIT_S", STARTUP_WAIT_S))
        except TimeoutError:
            self.notify("MCP servers are still connecting; their tools become available once connected.", "info")

    async def close(self) -> None:
        self._cancel_reports()
        await asyncio.gather(*(c.close() for c in self.connections.values()), return_exceptions=True)
        await self.settle_removals()

    async def reconnect(self, name: str) -> str | None:
        """Drop and reopen one connection; an error message when it did not come back."""
        connection = self.connections.get(name)
        if connection is None:
            return f'MCP server "{name}" is disabled.'
        await self.wait_for([connection])
        await connection.close()
        await connection.start()
        return None if connection.state == "connected" else (connection.error or connection.state)

    async def sign_in(self, name: str, show_url: Callable[[str], None], timeout_s: float = 300) -> str | None:
        """OAuth sign-in, then reconnect; an error message on failure."""
        from pi_coding_agent.coding.mcp.oauth import SignInError, sign_in

        connection = self.connections[name]
        entry = connection.entry
        try:
            await sign_in(name, entry.config["url"], entry.config.get("oauth") or {}, credential_store(self.agent_dir),
                          connection.challenge, show_url, timeout_s)
        except (SignInError, OSError) as exc:
            return f'Sign-in to MCP server "{name}" failed: {exc}'
        return await self.reconnect(name)

    # ------------------------------------------------------------------ tools

    def tools(self) -> list[AnyMcpTool]:
        """Every reachable tool with its exposure (server tools, then the resource tools): the
        interface codemode and tool_search consume."""
        tools: list[AnyMcpTool] = [t for t in self._tools.values() if t.available and t.exposure != "hidden"]
        return tools + [t for t in self._resource_tools if t.exposure != "hidden"]

    def declared_tools(self) -> list[AnyMcpTool]:
        return [t for t in self.tools() if t.exposure == "direct"]

    def resource_servers(self) -> list[ServerConnection]:
        """Connected, enabled, not hidden servers that offer resources."""
        return [c for c in self.connections.values()
                if c.has_resources and c.state == "connected" and c.entry.exposure != "hidden"]

    def _sync_resource_tools(self) -> None:
        exposures = {c.entry.exposure for c in self.connections.values()
                     if c.has_resources and c.entry.exposure != "hidden"}
        for tool in self._resource_tools:
            tool.exposure = resource_exposure(exposures)

    def _register_tools(self, connection: ServerConnection) -> None:
        """Name the server's current tools (hash suffix for every sanitised collision, like pi) and
        mark the ones it withdrew unavailable."""
        server, entry = connection.name, connection.entry
        usable = []
        for tool in connection.tools:
            problem = schema_problem(tool.get("inputSchema", {}))
            if problem is None:
                usable.append(tool)
            elif (server, tool["name"]) not in self._reported:
                self._reported.add((server, tool["name"]))
                self.notify(f'MCP server "{server}": tool "{tool["name"]}" skipped, its {problem}.', "warning")
        offered = list(dict.fromkeys(t["name"] for t in usable))
        plain = [tool_name(server, t) for t in offered]
        current: set[str] = set()
        for tool in usable:
            owner = f"{server}\0{tool['name']}"

            def taken(candidate: str, owner: str = owner) -> bool:
                existing = self._owners.get(candidate)
                return ((existing is not None and existing != owner) or candidate in current
                        or plain.count(candidate) > 1)

            name = tool_name(server, tool["name"], taken)
            self._owners[name] = owner
            current.add(name)
            self._tools[name] = McpTool(name, server, tool, entry.tool_exposure(tool["name"]), namespace(server),
                                        connection)
        for name, adapter in self._tools.items():
            if adapter.server == server and name not in current:
                adapter.available = False
        self._sync_resource_tools()
        for listener in self.on_tools_changed:
            listener()

    def namespace_info(self, server: str) -> dict[str, object]:
        """What codemode's ``describeNamespace()`` returns and what tool search ranks a server by."""
        connection = self.connections.get(server)
        entry = connection.entry if connection else next(e for e in self.config.servers if e.name == server)
        info: dict[str, object] = {"name": namespace(server), "aliases": [server]}
        if description := str(entry.config.get("description") or "").strip():
            info["description"] = description
        if connection is not None and connection.instructions:
            info["instructions"] = connection.instructions
        info["tools"] = [t.name for t in self.tools() if isinstance(t, McpTool) and t.server == server]
        return info

    def needs_tool_search(self) -> bool:
        """Some enabled server has tools only ``tool_search`` reaches (``codemode`` ones too until codemode)."""
        wanted = {"deferred"} if self.codemode_active else {"deferred", "codemode"}
        return any(e.enabled and e.configured_exposures() & wanted for e in self.config.servers)

    def _changed(self, connection: ServerConnection) -> None:
        """State changes need no action: status is computed when asked."""

    # ------------------------------------------------------------------ prompt section and status

    def servers_section(self) -> str | None:
        """The ``mcp_servers`` section: enabled servers with tools not declared to the model."""
        listed = sorted((e for e in self.config.servers if e.enabled and e.configured_exposures() & {"codemode", "deferred"}),
                        key=lambda e: e.name)
        if not listed:
            return None
        reaches = ["codemode" if self.codemode_active and "codemode" in e.configured_exposures() else "tool_search"
                   for e in listed]
        intro = "MCP servers whose tools are not declared to you."
        if "codemode" in reaches:
            intro += " Call the tools of `codemode` servers from codemode scripts."
        if "tool_search" in reaches:
            intro += " Load the tools of `tool_search` servers with `tool_search`."
        heads = [f"- {namespace(e.name)} ({reach})" for e, reach in zip(listed, reaches, strict=True)]

        def omitted(count: int) -> list[str]:
            plural = "" if count == 1 else "s"
            return [f"- … {count} more server{plural}; find their tools with searchTools()"] if count > 0 else []

        def size(kept: int) -> int:
            return len("\n".join([intro, *heads[:kept], *omitted(len(listed) - kept)]))

        kept = len(listed)
        while kept > 0 and size(kept) > MAX_SECTION_CHARS:
            kept -= 1
        per_server = 0 if kept == 0 else min(MAX_DESCRIPTION_CHARS, (MAX_SECTION_CHARS - size(kept)) // kept - 2)
        lines = []
        for entry, head in zip(listed[:kept], heads, strict=False):
            connection = self.connections.get(entry.name)
            summary = server_summary(entry.config.get("description"), connection.instructions if connection else None)
            summary = _clip(summary, per_server) if per_server > 0 else ""
            lines.append(f"{head}: {summary}" if summary else head)
        return "\n".join([intro, *lines, *omitted(len(listed) - kept)])

    def status_text(self, agent_dir: Path) -> str:
        """What ``/mcp`` prints outside an interactive UI."""
        if not self.config.servers and not self.config.errors:
            return no_servers_text(agent_dir)
        lines = [self._status_line(entry) for entry in self.config.servers]
        lines += [f"config error: {error}" for error in self.config.errors]
        return "\n".join(lines)

    def _status_line(self, entry: ServerEntry) -> str:
        connection = self.connections.get(entry.name)
        if connection is not None and connection.state == "needs-auth":
            return f"{entry.name}: needs sign-in, run /mcp login {entry.name} ({entry.exposure})"
        if not entry.enabled:
            state = "disabled"
        elif connection is None:
            state = "starting"
        elif connection.state == "disconnected":
            state = "disconnected, reconnects on next call"
        else:
            state = connection.state
        tools = f", {len(connection.tools)} tools" if connection is not None and connection.state == "connected" else ""
        error = ""
        if connection is not None and connection.error and connection.state != "connected":
            error = "\n    " + connection.error.replace("\n", "\n    ")
        return f"{entry.name}: {state}{tools} ({entry.exposure}){error}"


def credential_store(agent_dir: Path) -> CredentialStore:
    from pi_coding_agent.coding.mcp.oauth import CredentialStore

    return CredentialStore(agent_dir / "mcp-auth.json")


def token_source(entry: ServerEntry, agent_dir: Path) -> TokenSource | ProviderToken | None:
    """The stored OAuth token of an HTTP server that signs in with OAuth, the provider login's token of
    one with ``auth.provider``, else None."""
    provider = (entry.config.get("auth") or {}).get("provider") if entry.is_http else None
    if isinstance(provider, str) and provider:
        from pi_coding_agent.coding.mcp.provider_auth import ProviderToken

        return ProviderToken(provider, agent_dir)
    if not entry.uses_oauth:
        return None
    from pi_coding_agent.coding.mcp.oauth import TokenSource

    return TokenSource(entry.name, entry.config["url"], credential_store(agent_dir))


def no_servers_text(agent_dir: Path) -> str:
    return f"No MCP servers configured. Add them to {agent_dir.resolve() / 'mcp.json'} or .pi/mcp.json."


def describe_state(connection: ServerConnection) -> str:
    if connection.state == "needs-auth":
        return "needs sign-in"
    if connection.state == "failed":
        return f"failed: {(connection.error or 'unknown error').split(chr(10), 1)[0]}"
    if connection.state == "connected":
        count = len(connection.tools)
        resources = " · resources" if connection.has_resources else ""
        return f"connected · {count} tool{'' if count == 1 else 's'}{resources}"
    return "connecting…" if connection.state == "connecting" else connection.state


def _clip(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return "" if limit <= 1 else text[: limit - 1].rstrip() + "…"
