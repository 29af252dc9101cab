"""MCP servers for a session (pi 1.6.0's built-in ``mcp`` extension, as a plain component).

This module is all a session imports when MCP is on but no ``mcp.json`` exists: the ``/mcp`` command
entry and status, nothing else. The manager, the client and the transports load only once a config
file is found, and connect in the background so the command loop never waits for a server.

Seams in the session (each one call): ``start_mcp`` from ``create_session``; for a session
replacement ``restart_mcp`` (another directory) or ``refresh_mcp`` (the same one), then
``begin_replacement`` before the extensions reload and ``finish_replacement`` after it;
``use_client_servers`` for an ACP client's list; and on the returned ``McpSession``:
``command_entry`` (get_commands), ``handle_input`` (``/mcp``), ``before_prompt``,
``prompt_sections`` and ``close``.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

from pi_coding_agent.ai.types import JsonObject

if TYPE_CHECKING:
    from collections.abc import Callable

    from pi_coding_agent.coding.mcp.config import McpConfig
    from pi_coding_agent.coding.mcp.manager import McpManager
    from pi_coding_agent.coding.runtime import SessionRuntime
    from pi_coding_agent.coding.session_options import SessionOptions

COMMAND_DESCRIPTION = "Manage MCP servers: sign in, reconnect, enable or disable, and change exposure"
SECTION = "mcp_servers"


CODEMODE = "codemode"  # the tool a "codemode" server's tools are called through (coding/codemode)
CLIENT_SOURCE = "acp"  # servers an ACP client passed (modes/acp): they stay with the session wherever it moves


def mcp_disabled(runtime: SessionRuntime) -> bool:
    """``--no-mcp`` for one run, ``"extensions": ["-builtin:mcp"]`` in settings, or ``--no-extensions``
    without ``-e builtin:mcp`` (pi's rule for its bundled extensions)."""
    return runtime.options.no_mcp or not runtime.builtin_on("mcp")


def start_mcp(runtime: SessionRuntime, trusted: bool, connect: bool = True) -> McpSession | None:
    """The session's MCP component, servers connecting in the background; None when MCP is off.

    ``connect=False`` (the RPC mode) holds the connections back until ``connect()``: the server
    processes then start once the first command is answered, not while start-up competes with them
    for the CPU; a prompt or ``/mcp`` that comes first connects them itself."""
    if mcp_disabled(runtime):
        return None
    mcp = McpSession(runtime, trusted, connect)
    mcp.start()
    return mcp


async def restart_mcp(runtime: SessionRuntime) -> None:
    """After the runtime moved to another directory: every server of the old one is stopped (its
    process gone before this returns) and its tools withdrawn, then that directory's servers start
    under its own trust and settings, as pi rebuilds its MCP extension there. A server defined in
    both places restarts too, so a stdio server runs in the new directory; the ACP client's servers
    follow the session."""
    old = runtime.mcp
    kept = old.client_servers if isinstance(old, McpSession) else {}
    if isinstance(old, McpSession):
        await old.stop()
    runtime.mcp = mcp = start_mcp(runtime, runtime.project_trusted)
    if mcp is not None:
        mcp.restarted = True
        for name, config in kept.items():
            mcp.register_server(name, config, CLIENT_SOURCE)


async def refresh_mcp(runtime: SessionRuntime) -> None:
    """After a replacement in the same directory (new, resume, fork): pi rebuilds its MCP extension on
    every replacement, so edits to mcp.json apply; ours re-reads the files too but restarts only when
    what they configure changed, so unchanged servers keep their connections."""
    mcp = runtime.mcp
    if isinstance(mcp, McpSession) and mcp.files_changed():
        await restart_mcp(runtime)


def begin_replacement(runtime: SessionRuntime) -> None:
    """Before a replacement reloads the extensions (``McpSession.begin_reload``)."""
    if isinstance(runtime.mcp, McpSession):
        runtime.mcp.begin_reload()


async def finish_replacement(runtime: SessionRuntime) -> None:
    """After the reload: what pi's MCP support does at every session start (``McpSession.replaced``)."""
    if isinstance(runtime.mcp, McpSession):
        await runtime.mcp.replaced()


async def use_client_servers(runtime: SessionRuntime, servers: dict[str, JsonObject]) -> dict[str, str]:
    """An ACP client's ``mcpServers`` for the session (``McpSession.use_client_servers``), the ones it
    dropped stopped before this returns; every one is refused while MCP is off."""
    mcp = runtime.mcp
    if not isinstance(mcp, McpSession):
        return dict.fromkeys(servers, "MCP is disabled in this session (--no-mcp or -builtin:mcp)")
    refused = mcp.use_client_servers(servers)
    if mcp.manager is not None:
        await mcp.manager.settle_removals()
    return refused


class McpSession:
    """Binds an ``McpManager`` to one ``SessionRuntime``: declares its tools, runs ``/mcp``."""

    def __init__(self, runtime: SessionRuntime, trusted: bool, connect: bool = True) -> None:
        self.runtime = runtime
        self.trusted = trusted
        self.manager: McpManager | None = None
        self.client_servers: dict[str, JsonObject] = {}  # registered with CLIENT_SOURCE
        self.registered: dict[str, JsonObject] = {}  # by extensions: pi's RegisteredMcpServer records
        self.activated_codemode = False  # codemode was made active by these servers (not by defaultTools)
        self._held = not connect  # connections wait for ``connect()``
        self._warned = False  # the unreachable-tools warning is given once per session start
        self._unconfirmed: set[str] = set()  # extensions' servers a reload has not registered again yet
        self.restarted = False  # started by a replacement: its own start did what ``replaced`` redoes

    def start(self) -> None:
        config = self._read_files()
        if config is not None:
            self._start_manager(config)

    def _read_files(self) -> McpConfig | None:
        """The user and (trusted) project mcp.json merged; None when neither exists."""
        rt = self.runtime
        paths = [rt.agent_dir / "mcp.json", *([rt.cwd / ".pi" / "mcp.json"] if self.trusted else [])]
        if rt.options.no_mcp_files or not any(path.exists() for path in paths):
            return None
        from pi_coding_agent.coding.mcp.config import load_config

        return load_config(rt.agent_dir, rt.cwd, self.trusted)

    def files_changed(self) -> bool:
        """Whether the mcp.json files now configure other servers (or errors, or autoEnableCodemode)
        than the ones running; registered servers do not count."""
        def configured(config: McpConfig | None) -> tuple[object, ...]:
            if config is None:
                return [], [], None
            return ([e for e in config.servers if e.scope != "extension"], config.errors, config.auto_enable_codemode)

        return configured(self._read_files()) != configured(self.manager.config if self.manager else None)

    def _start_manager(self, config: McpConfig) -> McpManager:
        from pi_coding_agent.coding.mcp.manager import McpManager

        rt = self.runtime
        for error in config.errors:
            print(f"Warning: MCP config: {error}", file=sys.stderr)
        self.manager = McpManager(config, rt.cwd, rt.agent_dir, self.notify)
        # with the codemode tool available, "codemode" servers are reached through scripts, not tool_search
        self.manager.codemode_active = CODEMODE in rt.all_tools
        self.manager.on_tools_changed.append(self.sync_tools)
        self._activate_discovery()
        if not self._held:
            self.manager.start()
        return self.manager

    def connect(self) -> None:
        """Start the connections held back by ``connect=False`` (a no-op once they started)."""
        if self._held:
            self._held = False
            if self.manager is not None:
                self.manager.start()

    def register_server(self, name: str, config: JsonObject, source: str) -> None:
        """``register_mcp_server`` of the extension API: the same shape as an ``mcpServers`` entry."""
        from pi_coding_agent.coding.mcp.config import McpConfig, ServerEntry, validate_server

        validated = validate_server(name, config)
        if isinstance(validated, str):
            raise ValueError(validated)
        if source == CLIENT_SOURCE:
            self.client_servers[name] = config
        else:
            owner = self.registered.get(name, {}).get("extensionPath", source)
            if owner != source:
                raise ValueError(f'MCP server "{name}" is already registered by extension "{owner}"')
            self.registered[name] = {"name": name, "config": validated, "extensionPath": source}
        self._unconfirmed.discard(name)
        manager = self.manager or self._start_manager(McpConfig())
        overridden = manager.add_server(ServerEntry(name, validated, source, "extension"))
        if overridden:
            print(f"Warning: MCP server {overridden}", file=sys.stderr)
        self._activate_discovery()

    def unregister_server(self, name: str, source: str) -> None:
        """``unregister_mcp_server``: an extension withdraws its own server (another's is left alone);
        the connection closes and the server's tools become unreachable."""
        if self.registered.get(name, {}).get("extensionPath") != source:
            return
        del self.registered[name]
        entry = next((e for e in self.manager.config.servers if e.name == name), None) if self.manager else None
        if self.manager is not None and entry is not None and entry.source == source:
            self.manager.remove_server(name)

    def registered_servers(self) -> list[JsonObject]:
        """``get_mcp_servers``: the servers extensions registered (whether or not a file entry overrides them)."""
        return [dict(server) for server in self.registered.values()]

    def use_client_servers(self, servers: dict[str, JsonObject]) -> dict[str, str]:
        """The ACP client's servers are now ``servers``: the ones it no longer lists stop, new and
        changed ones start, unchanged ones keep their connection. Returns why each refused one was."""
        for name in [n for n in self.client_servers if n not in servers]:
            del self.client_servers[name]
            if self.manager is not None:
                self.manager.remove_server(name)
        refused: dict[str, str] = {}
        for name, config in sorted(servers.items()):
            try:
                self.register_server(name, config, CLIENT_SOURCE)
            except ValueError as exc:
                refused[name] = str(exc)
        return refused

    # ------------------------------------------------------------------ session replacements

    def begin_reload(self) -> None:
        """Before the extensions are set up again: each of their servers stays only if registered again."""
        self.registered.clear()  # the next generation registers its servers again
        if self.manager is None:
            return
        self.manager.quiet = True  # what they register joins the report ``replaced`` asks for
        servers = self.manager.config.servers
        self._unconfirmed = {e.name for e in servers if e.scope == "extension" and e.source != CLIENT_SOURCE}

    async def replaced(self) -> None:
        """After a replacement and the extensions' reload, as pi's MCP support at its session start:
        servers no extension registered again are dropped, the unreachable-tools warning may be
        given again, and servers that are not connected retry, then problems are reported."""
        unconfirmed, self._unconfirmed = self._unconfirmed, set()
        manager = self.manager
        if manager is None:
            self.restarted = False
            return
        for name in sorted(unconfirmed):
            manager.remove_server(name)
        await manager.settle_removals()
        if not self.restarted:
            self._warned = False
        self.restarted = False
        self._activate_discovery()
        if not self._held:  # held connections have not started: their start reports
            manager.renew()

    def notify(self, message: str, kind: str) -> None:
        notify = getattr(self.runtime.ui, "notify", None)
        if notify is not None:
            notify(message, kind)

    def sync_tools(self) -> None:
        """Declare the direct tools and those the transcript declares (loaded by ``tool_search`` on this
        branch), make every reachable tool known to ``get_all_tools``; withdrawn and hidden tools leave
        both. ``--tools``/``--exclude-tools`` ``mcp__`` patterns apply."""
        if self.manager is None:
            return
        from pi_coding_agent.coding.mcp.manager import AnyMcpTool
        from pi_coding_agent.coding.resources.system_prompt import SystemState

        rt = self.runtime
        keep = tool_filter(rt.options)
        reachable = {t.name: t for t in self.manager.tools() if keep(t.name)}
        for name in [n for n, t in rt.all_tools.items() if isinstance(t, AnyMcpTool) and n not in reachable]:
            del rt.all_tools[name]
        rt.all_tools.update(reachable)
        recorded = SystemState.replay(rt.agent.messages).tools
        current = [reachable[t.name] if isinstance(t, AnyMcpTool) else t for t in rt.agent.tools
                   if not isinstance(t, AnyMcpTool) or t.name in reachable]
        present = {t.name for t in current}
        current += [t for t in reachable.values()
                    if t.name not in present and (t.exposure == "direct" or t.name in recorded)]
        rt.agent.set_tools(current)
        if any(t.exposure == "codemode" for t in reachable.values()):
            self._enable_codemode()

    def _activate_discovery(self) -> None:
        """``codemode`` and ``tool_search`` are active while some server needs them, from the config on
        (before servers connect), as pi activates them."""
        manager = self.manager
        if manager is None:
            return
        if any(e.enabled and "codemode" in e.configured_exposures() for e in manager.config.servers):
            self._enable_codemode()
        self._add_tool_search(manager)
        self._warn_if_unreachable(manager)

    def _warn_if_unreachable(self, manager: McpManager) -> None:
        """pi's one warning per session start: some server's tools are reached only through
        ``codemode`` or ``tool_search`` and neither is active, so the model cannot call them."""
        from pi_coding_agent.coding.mcp.tool_search import TOOL_SEARCH

        exposures = set().union(*(e.configured_exposures() for e in manager.config.servers if e.enabled))
        active = {t.name for t in self.runtime.agent.tools}
        if self._warned or not exposures & {"codemode", "deferred"} or active & {CODEMODE, TOOL_SEARCH}:
            return
        self._warned = True
        off = "codemode" in exposures and manager.codemode_active and manager.config.auto_enable_codemode is False
        self.notify("MCP tools are only reachable from the codemode or tool_search tool, but neither is active"
                    f"{' (autoEnableCodemode is false)' if off else ''}; they cannot be called.", "warning")

    def _enable_codemode(self) -> None:
        """Activate ``codemode`` for ``codemode`` servers unless ``autoEnableCodemode`` is false."""
        from pi_coding_agent.coding.codemode.activation import enable_codemode

        manager, rt = self.manager, self.runtime
        if manager is None or not manager.codemode_active:
            return
        active = any(t.name == CODEMODE for t in rt.agent.tools)
        if enable_codemode(rt, manager.config.auto_enable_codemode is not False) and not active:
            self.activated_codemode = True

    def _add_tool_search(self, manager: McpManager) -> None:
        from pi_coding_agent.coding.mcp.tool_search import TOOL_SEARCH, ToolSearchTool

        rt = self.runtime
        if not manager.needs_tool_search() or TOOL_SEARCH in rt.all_tools or not rt.builtin_on("tool-search"):
            return

        def candidates() -> list[tuple[Any, str]]:
            active = {t.name for t in rt.agent.tools}
            return [(t, _namespace_text(manager, t)) for t in manager.tools()
                    if t.exposure in ("deferred", "codemode") and t.name not in active and t.name in rt.all_tools]

        def load(names: list[str]) -> None:
            rt.agent.set_tools([*rt.agent.tools, *(rt.all_tools[n] for n in names)])

        tool = ToolSearchTool(candidates, load, manager.wait_for_all)
        rt.all_tools[TOOL_SEARCH] = tool
        rt.agent.set_tools([*rt.agent.tools, tool])

    # ------------------------------------------------------------------ session hook points

    def command_entry(self) -> JsonObject:
        """``/mcp`` as pi's get_commands lists its built-in extension command."""
        return {"name": "mcp", "description": COMMAND_DESCRIPTION, "source": "extension",
                "sourceInfo": {"path": "builtin:mcp", "source": "builtin", "scope": "temporary",
                               "origin": "top-level"}}

    async def handle_input(self, text: str) -> JsonObject | None:
        """``/mcp [login|logout|reconnect] [server]``: handled here, never sent to the model."""
        if text != "/mcp" and not text.startswith("/mcp "):
            return None
        self.connect()
        from pi_coding_agent.coding.mcp.commands import run_mcp_command

        await run_mcp_command(self, text[4:].strip())
        return {"disposition": "handled"}

    async def before_prompt(self) -> None:
        self.connect()
        if self.manager is not None:
            from pi_coding_agent.coding.resources.system_prompt import SystemState

            await self.manager.before_prompt(set(SystemState.replay(self.runtime.agent.messages).tools))
            self.sync_tools()

    async def wait_for_reach(self, reach: str | list[str]) -> None:
        """Before a codemode script runs: the servers it may call finish connecting (their tools are
        registered on connect)."""
        if self.manager is not None:
            await self.manager.wait_for_reach(reach)

    def prompt_sections(self) -> dict[str, str]:
        section = self.manager.servers_section() if self.manager is not None else None
        return {SECTION: section} if section else {}

    async def close(self) -> None:
        if self.manager is not None:
            await self.manager.close()

    async def stop(self) -> None:
        """Close every connection and withdraw what these servers brought: their tools and our
        ``tool_search`` leave the runtime and the model's tool list, ``codemode`` the latter when they
        activated it."""
        if self.manager is None:
            return
        await self.manager.close()
        self.manager = None
        from pi_coding_agent.coding.mcp.manager import AnyMcpTool
        from pi_coding_agent.coding.mcp.tool_search import ToolSearchTool

        rt = self.runtime
        for name in [n for n, t in rt.all_tools.items() if isinstance(t, AnyMcpTool | ToolSearchTool)]:
            del rt.all_tools[name]
        rt.agent.set_tools([t for t in rt.agent.tools if not isinstance(t, AnyMcpTool | ToolSearchTool)
                            and not (self.activated_codemode and t.name == CODEMODE)])


def tool_filter(options: SessionOptions) -> Callable[[str], bool]:
    """``--tools`` keeps MCP tools unless an entry starts with ``mcp__``; ``--exclude-tools`` removes."""
    from pi_coding_agent.coding.mcp.naming import name_matcher

    include = [t for t in options.tools or () if t.startswith("mcp__")]
    exclude = list(options.exclude_tools)
    included = name_matcher(include) if include else (lambda _name: True)
    excluded = name_matcher(exclude)
    return lambda name: included(name) and not excluded(name)


def _namespace_text(manager: McpManager, tool: object) -> str:
    """The server's namespace, description and instructions, which tool search weighs lightly."""
    server = getattr(tool, "server", None)
    if server is None:
        return ""
    info = manager.namespace_info(server)
    return " ".join(str(info.get(key) or "") for key in ("name", "description", "instructions"))
