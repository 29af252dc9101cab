"""The extension runner of one session: loading, session lifecycle events and the session's hook points.

Its parts live beside it by responsibility: ``dispatch`` (running handlers as one chain),
``agent_hooks`` (the Agent hooks and run events), ``boundaries`` (``turn_end`` and
``agent_before_settle``), ``commands`` (commands and ``input``). A raising handler becomes an
``extension_error`` session event and the run goes on, except ``tool_call`` and ``user_bash``, which
fail closed.

The runner installs itself into the Agent's hooks (it wraps the ones already there), so the
session's own code only calls it at the points where a session decision is made: input, switching,
forking, user bash, model selection, naming, listing commands, shutdown.
"""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any, NoReturn

from pi_coding_agent.agent.awaitables import maybe_await
from pi_coding_agent.ai.types import JsonObject
from pi_coding_agent.coding.errors import SessionError
from pi_coding_agent.coding.events import AgentEvent
from pi_coding_agent.coding.extensions.agent_hooks import AgentHooks
from pi_coding_agent.coding.extensions.api import ExtensionAPI, install_tool
from pi_coding_agent.coding.extensions.commands import Commands
from pi_coding_agent.coding.extensions.event_bus import EventBus
from pi_coding_agent.coding.extensions.loader import (
    TYPESCRIPT_SUFFIXES,
    ExtensionSource,
    discover,
    import_extension,
)
from pi_coding_agent.coding.extensions.registry import Binding, Extension, Registration
from pi_coding_agent.coding.extensions.resources_discover import discover_resources
from pi_coding_agent.coding.resources.trust import has_trust_requiring_resources, save_trust_decision

if TYPE_CHECKING:
    from pi_coding_agent.agent.tool import AgentTool
    from pi_coding_agent.ai.types import Model
    from pi_coding_agent.coding.extensions.host import ExtensionHost
    from pi_coding_agent.coding.runtime import SessionRuntime


class ExtensionRunner(Commands, AgentHooks):
    """The loaded extensions of one session and the dispatch of its events to them."""

    def __init__(self, session: ExtensionHost, runtime: SessionRuntime, sources: list[ExtensionSource]) -> None:
        super().__init__(session, runtime)
        self.sources = sources
        self.events = EventBus()  # pi.events, shared by the extensions of this session
        self._modules: dict[Path, ModuleType] = {}
        self._load_errors: list[tuple[str, str]] = []
        self._builtin_tools: dict[str, AgentTool] = dict(runtime.all_tools)
        self._thinking_level = runtime.agent.thinking_level
        self.providers: dict[str, Registration] = {}  # pi.register_provider names -> what each added
        self.virtual_models: set[tuple[str, str]] = set()  # (provider, id) of pi.register_virtual_model
        self.sidecar: Any = None  # the TypeScript extensions' Node.js process (typescript/host.py), once started
        self.loaded = False
        self.shutdown_requested = False
        self.settling = False  # agent_settled handlers are running
        self._deferred: list[Callable[[], Awaitable[object]]] = []
        self._install_hooks()
        session.subscribe(self._on_session_event, ("agent_settled", "thinking_level_changed"))
        runtime.after_sign_in = self._refresh_signed_in

    def _refresh_signed_in(self, provider: str) -> None:
        """After ``/login``: the provider's ``refresh_models`` with the network and the new credential."""
        if self._network_allowed() and self._refreshing(provider):
            from pi_coding_agent.coding.extensions.model_refresh import refresh_one

            self.spawn(refresh_one(self, provider, allow_network=True))

    def _network_allowed(self) -> bool:
        return not self.rt.options.offline and "PI_OFFLINE" not in os.environ

    def _refreshing(self, provider: str | None = None) -> bool:
        """Whether a registered provider (that one, or any) has ``refresh_models``: only then is
        ``providers.py`` imported for it."""
        return any(r.refreshes for name, r in self.providers.items() if provider in (None, name))

    # ------------------------------------------------------------------ loading

    async def load(self) -> None:
        """Import (once per process) and set up every extension; failures are kept for ``start``. Then,
        as pi before the model choice, the registered providers refresh their models without network."""
        self.loaded = False
        for source in self.sources:
            extension = Extension(source)
            pi = ExtensionAPI(self, extension, self.binding)
            try:
                await maybe_await(self._setup_of(source)(pi))
            except Exception as exc:
                message = str(exc) or type(exc).__name__
                print(f'Error: Failed to load extension "{source.path}": {message}', file=sys.stderr)
                self._load_errors.append((str(source.path), message))
                continue
            self.extensions.append(extension)
            for tool in extension.tools.values():
                install_tool(self, tool)
        self.loaded = True
        await asyncio.gather(*(self.rt.auth.check_key_source(name) for name, r in self.providers.items()
                               if r.api_key_auth is not None))
        if self._refreshing():
            from pi_coding_agent.coding.extensions.model_refresh import refresh_all

            await refresh_all(self, allow_network=False)

    def _setup_of(self, source: ExtensionSource) -> Callable[[object], object]:
        if source.setup is not None:
            return source.setup
        if source.path.suffix in TYPESCRIPT_SUFFIXES:
            from pi_coding_agent.coding.extensions.typescript.host import setup_for

            return setup_for(source.path)
        module = self._modules.get(source.path) or import_extension(source.path)
        self._modules[source.path] = module
        setup: Callable[[object], object] = module.setup
        return setup

    async def start(self, reason: str, previous_session_file: str | None = None) -> None:
        """Report load failures, then ``session_start``."""
        errors, self._load_errors = self._load_errors, []
        for path, message in errors:
            self.session.emit({"type": "extension_error", "extensionPath": path, "event": "load",
                               "error": f"Failed to load extension: {message}"})
        event: JsonObject = {"type": "session_start", "reason": reason}
        if previous_session_file is not None:
            event["previousSessionFile"] = previous_session_file
        await self.notify(event)
        await discover_resources(self, "reload" if reason == "reload" else "startup")

    def start_soon(self) -> None:
        """``start`` once the mode has subscribed to the session (it does so right after creation)."""
        self._thinking_level = self.rt.agent.thinking_level  # the session's, chosen after the extensions loaded
        self.spawn(self.start("startup"))
        if self.rt.mode == "rpc" and self._network_allowed() and self._refreshing():
            from pi_coding_agent.coding.extensions.model_refresh import refresh_all

            self.spawn(refresh_all(self, allow_network=True))  # pi's background catalog refresh in RPC mode

    def use_sources(self, sources: list[ExtensionSource]) -> None:
        """Another directory's extensions, loaded by the next ``reload``; the built-in tools are the ones
        the runtime just bound to that directory."""
        self.sources = sources
        self._builtin_tools = dict(self.rt.all_tools)

    async def reload(self, reason: str, previous_session_file: str | None) -> None:
        """Session replacement: old handles go stale, every extension is set up again."""
        self.binding.stale = True
        self.binding = Binding()
        self.rt.all_tools.clear()
        self.rt.all_tools.update(self._builtin_tools)
        agent = self.rt.agent
        agent.set_tools([self._builtin_tools[t.name] for t in agent.tools if t.name in self._builtin_tools])
        self.extensions = []
        if self.providers:  # the new generation registers its own again
            from pi_coding_agent.coding.extensions.providers import remove

            for name in list(self.providers):
                remove(self, name)
        if self.virtual_models:
            from pi_coding_agent.coding.extensions.virtual_models import drop_all

            drop_all(self)
        await self.load()
        await self.start(reason, previous_session_file)

    def activate_tool(self, tool: AgentTool) -> None:
        """Register (overriding a same-named tool) and make it active at once."""
        self.rt.all_tools[tool.name] = tool
        tools = self.rt.agent.tools
        for index, existing in enumerate(tools):
            if existing.name == tool.name:
                tools[index] = tool
                return
        tools.append(tool)

    # ------------------------------------------------------------------ settling

    async def agent_settled(self, aborted: bool) -> None:
        """``agent_settled`` handlers, awaited before the session emits the record. Runs and prompts they
        ask for start once the session is idle (``defer``), not inside the run that is ending."""
        self._system_prompt = None
        if not self.has_handlers("agent_settled"):
            return
        self.settling = True
        try:
            await self.notify({"type": "agent_settled", "aborted": aborted})
        finally:
            self.settling = False
            deferred, self._deferred = self._deferred, []
            for start in deferred:
                self.spawn(start())

    def defer(self, start: Callable[[], Awaitable[object]]) -> None:
        """Keep work an ``agent_settled`` handler requested until the session is idle."""
        self._deferred.append(start)

    def _on_session_event(self, event: AgentEvent) -> None:
        kind = event["type"]
        if kind == "agent_settled":
            if self.shutdown_requested:
                self.spawn(self.request_shutdown())
        elif event["type"] == "thinking_level_changed":
            previous, self._thinking_level = self._thinking_level, event["level"]
            if self.has_handlers("thinking_level_select"):
                self.spawn(self.notify({"type": "thinking_level_select", "level": event["level"],
                                        "previousLevel": previous}))

    # ------------------------------------------------------------------ session hook points

    async def before_replace(self, reason: str, target: Path | None, entry_id: str | None, position: str) -> bool:
        """True when a ``session_before_switch`` (new, resume) or ``session_before_fork`` handler cancels."""
        event: JsonObject
        if reason == "fork":
            event = {"type": "session_before_fork", "entryId": entry_id, "position": position}
        else:
            event = {"type": "session_before_switch", "reason": reason}
            if target is not None:
                event["targetSessionFile"] = str(target.resolve())
        return await self.first(event, lambda result: result.get("cancel")) is not None

    async def project_trust(self, cwd: Path) -> bool | None:
        """``project_trust`` for a directory a session replacement enters whose trust this process has
        not decided yet (``replacement.py`` checks; start-up asks for its own: ``trust_event.py``); only
        user and ``-e`` extensions' answers count. None: nobody decided, the usual rules apply."""
        cwd = cwd.resolve()
        if self.rt.options.approve is not None or not has_trust_requiring_resources(cwd):
            return None
        event = {"type": "project_trust", "cwd": str(cwd)}

        def step(found: JsonObject | None, result: Any, ext: Extension) -> JsonObject | None:
            decided = isinstance(result, dict) and result.get("trusted") in ("yes", "no")
            return result if found is None and decided and ext.source.scope != "project" else found

        found = await self.chain("project_trust", None, lambda _: dict(event), step, lambda f: f is not None)
        if found is None:
            return None
        if found.get("remember") is True:
            save_trust_decision(self.rt.agent_dir, cwd, found["trusted"] == "yes")
        return bool(found["trusted"] == "yes")

    async def session_shutdown(self, reason: str, target: str | None = None) -> None:
        event: JsonObject = {"type": "session_shutdown", "reason": reason}
        if target is not None:
            event["targetSessionFile"] = target
        await self.notify(event)
        if reason == "quit" and self.sidecar is not None:
            await self.sidecar.close()

    async def before_compact(self, event: JsonObject) -> JsonObject | None:
        """``session_before_compact``: ``{"cancel": True}`` or ``{"compaction": {...}}`` from the first
        handler returning either (for the compaction controller)."""
        return await self.first({"type": "session_before_compact", **event},
                                lambda result: result.get("cancel") or isinstance(result.get("compaction"), dict))

    async def before_tree(self, event: JsonObject) -> JsonObject | None:
        """``session_before_tree``: the first handler's answer that cancels, supplies or changes something."""
        return await self.first({"type": "session_before_tree", **event}, bool)

    async def user_bash(self, command: str, exclude_from_context: bool) -> JsonObject | None:
        """``user_bash``: a ``{"result": ...}`` replaces execution; a raising handler refuses the command."""
        event = {"type": "user_bash", "command": command, "excludeFromContext": exclude_from_context,
                 "cwd": str(self.rt.cwd)}

        def refuse(ext: Extension, exc: Exception) -> NoReturn:
            self.report_error(ext.path, "user_bash", exc)
            raise SessionError(str(exc) or type(exc).__name__) from exc

        found = await self.first(event, lambda result: isinstance(result.get("result"), dict), fail=refuse)
        return None if found is None else dict(found["result"])

    async def model_select(self, model: Model, previous: Model | None, source: str) -> None:
        event: JsonObject = {"type": "model_select", "model": model}
        if previous is not None:
            event["previousModel"] = previous
        event["source"] = source
        await self.notify(event)

    async def session_info_changed(self, name: str | None) -> None:
        event: JsonObject = {"type": "session_info_changed"}
        if name is not None:
            event["name"] = name
        await self.notify(event)

    async def request_shutdown(self) -> None:
        """``ctx.shutdown()``: once idle, through the mode's orderly shutdown when it offers one."""
        self.shutdown_requested = True
        if self.session.is_streaming:
            return  # re-checked at agent_settled
        if self.rt.request_shutdown is not None:
            self.rt.request_shutdown()


def runner_for_directory(session: ExtensionHost, runtime: SessionRuntime,
                         current: ExtensionRunner | None) -> ExtensionRunner | None:
    """After a move to another directory: that project's extensions (its discovered ones, with the
    ``-e`` and SDK ones kept), loaded by the next ``reload``; a new runner when there was none."""
    rt = runtime
    sources = [*discover(rt.cwd, rt.agent_dir, rt.project_trusted, list(rt.options.extensions),
                         rt.settings.extensions, include_discovered=not rt.options.no_extensions,
                         packages=rt.resources.packages),
               *(s for s in (current.sources if current is not None else []) if s.source == "sdk")]
    if current is not None:
        current.use_sources(sources)
        return current
    return ExtensionRunner(session, runtime, sources) if sources else None
