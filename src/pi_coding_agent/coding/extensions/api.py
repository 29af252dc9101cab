"""``pi``: the object an extension's ``setup(pi)`` receives (docs/extensions.md), and extension tools."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal as signals
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Literal

from pi_coding_agent.agent.awaitables import maybe_await
from pi_coding_agent.agent.tool import AgentTool, ToolResult, UpdateCallback
from pi_coding_agent.ai.types import JsonObject
from pi_coding_agent.coding.extensions.registry import (
    Binding,
    Command,
    Extension,
    Shortcut,
    ToolRenderer,
    custom_message,
)

if TYPE_CHECKING:
    from pi_coding_agent.ai.abort import AbortSignal
    from pi_coding_agent.ai.stream import Adapter
    from pi_coding_agent.ai.types import Model
    from pi_coding_agent.coding.extensions.event_bus import EventBus
    from pi_coding_agent.coding.extensions.host import RunnerHandle
    from pi_coding_agent.coding.extensions.model_refresh import RefreshModels
    from pi_coding_agent.coding.extensions.providers import Provider, ProviderOAuth
    from pi_coding_agent.coding.session_options import SessionOptions
    from pi_coding_agent.coding.virtual_models import VirtualModel

DELIVERY_MODES = ("steer", "followUp", "nextTurn")
KILL_GRACE_S = 5.0


def to_tool_result(value: object) -> ToolResult:
    """What an extension tool returned (a ToolResult, a wire-style dict, or text) as a ToolResult."""
    if isinstance(value, ToolResult):
        return value
    if isinstance(value, str):
        return ToolResult(content=[{"type": "text", "text": value}])
    if not isinstance(value, dict):
        raise TypeError(f"Extension tool returned {type(value).__name__}; expected a dict with 'content'")
    content = value.get("content", [])
    if isinstance(content, str):
        content = [{"type": "text", "text": content}]
    return ToolResult(content=content, details=value.get("details"), is_error=bool(value.get("isError")),
                      terminate=bool(value.get("terminate")), structured_content=value.get("structuredContent"),
                      usage=value.get("usage"))


class ExtensionTool(AgentTool):
    """An AgentTool whose ``execute`` is the extension's ``execute(tool_call_id, params, signal,
    on_update, ctx)``. ``parameters`` may be a JSON schema or a pydantic model class; with a model
    class, ``params`` arrives as a validated model instance. ``prepare_arguments`` (optional) turns
    stored arguments of an older shape into the current one before validation."""

    def __init__(self, runner: RunnerHandle, *, name: str, label: str | None, description: str,
                 parameters: Any, execute: Callable[..., object],
                 execution_mode: Literal["parallel", "sequential"] = "parallel",
                 prompt_snippet: str | None = None, prompt_guidelines: list[str] | None = None,
                 prepare_arguments: Callable[[object], object] | None = None, default_active: bool = True,
                 annotations: JsonObject | None = None, output_schema: JsonObject | None = None,
                 constrained_sampling: JsonObject | Literal[False] | None = None, handles_abort: bool = False) -> None:
        self._runner = runner
        self.handles_abort = handles_abort
        self.constrained_sampling = constrained_sampling  # pi's ``constrainedSampling``: strict schema or grammar
        self._execute = execute
        self._prepare = prepare_arguments
        self.default_active = default_active
        self.annotations = annotations  # MCP-style hints (readOnlyHint, destructiveHint, ...), unverified
        self.output_schema = output_schema  # the shape of ``structuredContent`` for programmatic callers
        self._model_class: Any = None
        if isinstance(parameters, type):
            self._model_class = parameters
            parameters = parameters.model_json_schema()  # type: ignore[attr-defined]
        self.name = name
        self.label = label or name
        self.description = description
        self.parameters: JsonObject = parameters or {"type": "object", "properties": {}}
        self.execution_mode: Literal["parallel", "sequential"] = execution_mode
        self.prompt_snippet = prompt_snippet
        self.prompt_guidelines = list(prompt_guidelines or [])

    def prepare_arguments(self, args: object) -> object:
        return args if self._prepare is None else self._prepare(args)

    async def execute(self, tool_call_id: str, params: JsonObject, signal: AbortSignal,
                      on_update: UpdateCallback) -> ToolResult:
        args = self._model_class.model_validate(params) if self._model_class is not None else params

        def update(partial: object) -> None:
            on_update(to_tool_result(partial))

        from pi_coding_agent.coding.extensions.tool_calls import ToolContext, add_usage

        ctx = ToolContext(self._runner, self._runner.binding, tool_call_id, signal)
        result = to_tool_result(await maybe_await(self._execute(tool_call_id, args, signal, update, ctx)))
        result.nested_calls = ctx.nested.snapshot()
        if ctx.nested_usage is not None:  # the calling tool reports its own usage, pi adds the nested calls'
            result.usage = add_usage(result.usage, ctx.nested_usage)
        return result


class ExtensionAPI:
    """``pi`` for one extension; stale (raises) once the session it was bound to is replaced."""

    def __init__(self, runner: RunnerHandle, extension: Extension, binding: Binding) -> None:
        self._runner = runner
        self._extension = extension
        self._binding = binding

    def _live(self) -> RunnerHandle:
        self._binding.check()
        return self._runner

    # ------------------------------------------------------------------ events

    def on(self, event: str, handler: Callable[[JsonObject, object], object]) -> Callable[[], None]:
        """Subscribe ``handler(event, ctx)`` (sync or async); returns the unsubscriber."""
        self._live()
        handlers = self._extension.handlers.setdefault(event, [])
        handlers.append(handler)

        def unsubscribe() -> None:
            with contextlib.suppress(ValueError):
                handlers.remove(handler)

        return unsubscribe

    @property
    def events(self) -> EventBus:
        """The bus every extension of this session shares: ``events.on(channel, handler)``, ``events.emit``."""
        return self._live().events

    # ------------------------------------------------------------------ flags and settings

    def register_flag(self, name: str, *, type: Literal["boolean", "string"] = "boolean",
                      description: str | None = None, default: bool | str | None = None) -> None:
        """A command-line flag ``--name``; its default applies unless the command line gave one."""
        runtime = self._live().rt
        expected = bool if type == "boolean" else str
        if default is not None and not isinstance(default, expected):
            raise TypeError(f'Invalid default for flag "{name}": expected {type}, got {_js_type(default)}')
        self._extension.flags[name] = {"name": name, "type": type, "description": description, "default": default,
                                       "extensionPath": self._extension.path}
        if default is not None:
            runtime.flag_values.setdefault(name, default)

    def get_flag(self, name: str) -> bool | str | None:
        """The flag's value; None for a flag this extension did not register."""
        runtime = self._live().rt
        return runtime.flag_values.get(name) if name in self._extension.flags else None

    def get_settings(self) -> JsonObject:
        """A copy of the effective settings (global and project merged, overrides applied)."""
        return self._live().rt.settings.effective()

    # ------------------------------------------------------------------ providers

    def register_provider(self, provider: str | Provider, config: JsonObject | None = None, *,
                          stream: Adapter | None = None, oauth: ProviderOAuth | Mapping[str, object] | None = None,
                          refresh_models: RefreshModels | None = None) -> None:
        """Add or re-route a model provider (pi's ``registerProvider``), at once. Either a name and
        ``config`` in models.json's provider shape (``baseUrl``, ``apiKey``, ``api``, ``headers``,
        ``authHeader``, ``models``, ...) with its behaviour beside it: ``stream`` (an adapter of
        ``ai/stream.py`` for its ``api``), ``oauth`` (a subscription sign-in for ``/login``),
        ``refresh_models`` (a live model list); or a ``Provider`` object (which may also filter its
        models). ``ValueError`` when the entry could not work."""
        from pi_coding_agent.coding.extensions import providers

        runner = self._live()
        if isinstance(provider, providers.Provider):
            if config is not None or stream is not None or oauth is not None or refresh_models is not None:
                raise TypeError("register_provider(Provider) takes no other arguments")
            providers.register_object(runner, provider, self._extension.path)
            return
        if config is None:
            raise TypeError("register_provider(name, config) needs the provider's config")
        providers.register(runner, provider, config, self._extension.path, stream=stream, oauth=oauth,
                           refresh_models=refresh_models)

    def unregister_provider(self, name: str) -> None:
        """Remove a provider this session's extensions registered; the built-in one it overrode comes back."""
        from pi_coding_agent.coding.extensions.providers import remove

        remove(self._live(), name)

    def register_virtual_model(self, model: VirtualModel | Mapping[str, object]) -> None:
        """A selectable model whose ``route(request, ctx)`` picks the physical model and level of each
        request (pi's ``registerVirtualModel``): a ``VirtualModel`` or a dict of its fields. The same
        provider and id again replaces it; ``ValueError`` when it would shadow a physical model."""
        from pi_coding_agent.coding.extensions.virtual_models import register

        register(self._live(), model)

    def unregister_virtual_model(self, provider: str, model_id: str) -> None:
        """Remove a virtual model (``unregister_provider`` leaves them alone)."""
        from pi_coding_agent.coding.extensions.virtual_models import unregister

        unregister(self._live(), provider, model_id)

    # ------------------------------------------------------------------ tools and commands

    def register_tool(self, *, name: str, description: str, execute: Callable[..., object],
                      parameters: object = None, label: str | None = None,
                      execution_mode: Literal["parallel", "sequential"] = "parallel",
                      prompt_snippet: str | None = None, prompt_guidelines: list[str] | None = None,
                      prepare_arguments: Callable[[object], object] | None = None, default_active: bool = True,
                      annotations: JsonObject | None = None, output_schema: JsonObject | None = None,
                      constrained_sampling: JsonObject | Literal[False] | None = None,
                      handles_abort: bool = False,
                      render_call: Callable[[JsonObject, dict[str, str]], object] | None = None,
                      render_result: Callable[[JsonObject, JsonObject, dict[str, str]], object] | None = None) -> None:
        """Add a tool (a built-in of the same name is overridden); active at once unless ``default_active``
        is False (then ``set_active_tools`` or ``--tools`` activates it). ``constrained_sampling`` is pi's
        ``constrainedSampling`` (``{"type": "grammar", "variants": {"openai_lark": ...}}`` or a strict schema).
        With ``handles_abort`` an abort does not cancel ``execute``: it watches ``signal`` and ends itself;
        ``render_call``/``render_result``: as ``register_tool_renderer``."""
        runner = self._live()
        if render_call is not None or render_result is not None:
            self.register_tool_renderer(name, render_call=render_call, render_result=render_result)
        tool = ExtensionTool(runner, name=name, label=label, description=description, parameters=parameters,
                             execute=execute, execution_mode=execution_mode, prompt_snippet=prompt_snippet,
                             prompt_guidelines=prompt_guidelines, prepare_arguments=prepare_arguments,
                             default_active=default_active, annotations=annotations, output_schema=output_schema,
                             constrained_sampling=constrained_sampling, handles_abort=handles_abort)
        self._extension.tools[name] = tool
        if self._extension in runner.extensions:  # after setup; during setup the loader installs it
            install_tool(runner, tool)

    def register_command(self, name: str, *, handler: Callable[[str, object], object],
                         description: str | None = None) -> None:
        """``/name args`` in a prompt runs ``handler(args, ctx)`` (even while a run streams)."""
        self._live()
        self._extension.commands[name] = Command(name, description, handler)

    def get_commands(self) -> list[JsonObject]:
        return self._live().session.get_commands()

    def register_shortcut(self, shortcut: str, *, handler: Callable[[object], object], description: str | None = None) -> None:
        """In the terminal UI, ``shortcut`` (pi's key syntax: ``ctrl+shift+p``) runs ``handler(ctx)``;
        a key of the UI's own reserved actions (abort, quit, submit...) stays theirs. Other modes ignore it."""
        self._live()
        self._extension.shortcuts[shortcut] = Shortcut(shortcut, description, handler)

    def register_message_renderer(self, custom_type: str, renderer: Callable[[JsonObject, JsonObject, object], object]) -> None:
        """How the terminal UI draws ``custom`` messages of ``custom_type`` (``send_message``):
        ``renderer(message, {"expanded": bool}, theme)`` returns a Rich renderable or a string (None: the
        default drawing); ``theme`` maps pi's colour roles (``accent``, ``muted``...) to colours."""
        self._live()
        self._extension.message_renderers[custom_type] = renderer

    def register_entry_renderer(self, custom_type: str, renderer: Callable[[JsonObject, JsonObject, object], object]) -> None:
        """How the terminal UI draws ``custom`` entries of ``custom_type`` (``append_entry``), which it
        shows only with a renderer: ``renderer(entry, {"expanded": bool}, theme)`` as for
        ``register_message_renderer`` (None: nothing shown)."""
        self._live()
        self._extension.entry_renderers[custom_type] = renderer

    def register_tool_renderer(self, tool_name: str, *,
                               render_call: Callable[[JsonObject, dict[str, str]], object] | None = None,
                               render_result: Callable[[JsonObject, JsonObject, dict[str, str]], object] | None = None,
                               ) -> None:
        """How the terminal UI draws calls of ``tool_name`` (any tool: this extension's, a built-in, MCP):
        ``render_call(args, theme)`` the title line, ``render_result(result, options, theme)`` what goes
        under it (``options``: ``expanded``, ``isPartial``, ``isError``, ``args``). Each returns a Rich
        renderable or a string; None, or a slot not given, keeps the default drawing."""
        self._live()
        self._extension.tool_renderers[tool_name] = ToolRenderer(render_call, render_result)

    # ------------------------------------------------------------------ messages and entries

    async def send_message(self, message: JsonObject, *, trigger_turn: bool | None = None,
                           deliver_as: str | None = None) -> None:
        """Inject a ``custom`` message (user-role for the model): queued while a run streams
        (``deliver_as``, default steer; ``trigger_turn=False`` holds it until the current turn ends),
        appended when idle, or starting a run with ``trigger_turn``."""
        runner = self._live()
        _check_delivery(deliver_as)
        session = runner.session
        custom = custom_message(message)
        if deliver_as == "nextTurn":
            runner.next_turn_messages.append(custom)
        elif session.is_streaming and not runner.settling and trigger_turn is False:
            runner.held_messages.append(custom)
        elif session.is_streaming and not runner.settling:
            agent = runner.rt.agent
            (agent.follow_up if deliver_as == "followUp" else agent.steer)(custom)
        elif trigger_turn and runner.settling:
            runner.defer(lambda: session.start_run(custom))
        elif trigger_turn:
            await session.start_run(custom)
        else:
            runner.append_custom(custom)

    async def send_user_message(self, text: str, *, deliver_as: str | None = None) -> JsonObject:
        """Act like a typed prompt; while a run streams it is queued (``deliver_as``, default followUp)."""
        runner = self._live()
        _check_delivery(deliver_as)
        session = runner.session
        if runner.settling:
            runner.defer(lambda: session.prompt(text))
            return {"disposition": "queued"}
        if session.is_streaming:
            return await (session.steer(text) if deliver_as == "steer" else session.follow_up(text))
        result: JsonObject = await session.prompt(text)
        return result

    def append_entry(self, custom_type: str, data: object = None) -> JsonObject:
        """A ``custom`` entry (kept in the file, never sent to the model), emitted as ``entry_appended``."""
        session = self._live().session
        entry = session.sm.append_custom(custom_type, data)
        session.emit({"type": "entry_appended", "entry": entry})
        return entry

    # ------------------------------------------------------------------ session metadata

    async def set_session_name(self, name: str) -> None:
        await self._live().session.set_session_name(name)

    def get_session_name(self) -> str | None:
        return self._live().session.sm.session_name

    def set_label(self, entry_id: str, label: str | None = None) -> None:
        self._live().session.sm.append_label(entry_id, label)

    # ------------------------------------------------------------------ tools, model, thinking

    def get_active_tools(self) -> list[str]:
        return [t.name for t in self._live().rt.agent.tools]

    def get_all_tools(self) -> list[JsonObject]:
        return [_tool_info(t) for t in self._live().rt.all_tools.values()]

    def register_mcp_server(self, name: str, config: JsonObject) -> None:
        """Add an MCP server for this session (an ``mcpServers`` entry); ValueError when invalid or MCP is off."""
        mcp = self._live().rt.mcp
        if mcp is None:
            raise ValueError("MCP is disabled in this session (--no-mcp or -builtin:mcp)")
        mcp.register_server(name, config, self._extension.path)

    def unregister_mcp_server(self, name: str) -> None:
        """Withdraw a server this extension registered: its connection closes, its tools become unreachable."""
        mcp = self._live().rt.mcp
        if mcp is not None:
            mcp.unregister_server(name, self._extension.path)

    def get_mcp_servers(self) -> list[JsonObject]:
        """Every server extensions registered: ``{"name", "config", "extensionPath"}`` (pi's shape)."""
        mcp = self._live().rt.mcp
        return [] if mcp is None else mcp.registered_servers()

    def set_active_tools(self, names: list[str]) -> None:
        """Unknown names are ignored; the change reaches the model as a system patch on the next prompt."""
        runtime = self._live().rt
        runtime.agent.set_tools([runtime.all_tools[n] for n in dict.fromkeys(names) if n in runtime.all_tools])

    async def set_model(self, model: Model) -> bool:
        """False when the model is unknown or has no credentials."""
        try:
            await self._live().session.set_model(model["provider"], model["id"])
        except Exception:
            return False
        return True

    def get_thinking_level(self) -> str:
        return self._live().rt.agent.thinking_level

    def set_thinking_level(self, level: str) -> None:
        self._live().session.set_thinking_level(level)

    # ------------------------------------------------------------------ processes

    async def exec(self, command: str, args: list[str] | None = None, *, timeout: float | None = None,
                   signal: AbortSignal | None = None, cwd: str | None = None) -> JsonObject:
        """Run a program without a shell: ``{stdout, stderr, code, killed}`` (``timeout`` in seconds;
        on timeout or abort SIGTERM, then SIGKILL after a grace period; a signal exit is 128+n)."""
        runtime = self._live().rt
        proc = await asyncio.create_subprocess_exec(
            command, *(args or []), cwd=cwd or str(runtime.cwd), stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, start_new_session=True)
        killed = False

        def kill() -> None:
            nonlocal killed
            killed = True
            _terminate(proc)

        remove = signal.on_abort(kill) if signal is not None else (lambda: None)
        try:
            try:
                stdout, stderr = await asyncio.wait_for(proc.communicate(), timeout)
            except TimeoutError:
                kill()
                stdout, stderr = await proc.communicate()
        finally:
            remove()
        code = proc.returncode if proc.returncode is not None else 1
        return {"stdout": stdout.decode(errors="replace"), "stderr": stderr.decode(errors="replace"),
                "code": 128 - code if code < 0 else code, "killed": killed}


def _terminate(proc: asyncio.subprocess.Process) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signals.SIGTERM)

    def force() -> None:
        if proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signals.SIGKILL)

    asyncio.get_running_loop().call_later(KILL_GRACE_S, force)


def install_tool(runner: RunnerHandle, tool: AgentTool) -> None:
    """Make a registered tool callable, and active unless it was registered with ``default_active=False``.

    The command line decides first, as in pi: ``--exclude-tools`` and a ``--tools`` allowlist that
    does not name the tool keep it out altogether; naming it (or ``--tools +name``) activates it."""
    choice = _command_line_choice(runner.rt.options, tool.name)
    if choice == "out":
        return
    if choice == "active" or (choice is None and getattr(tool, "default_active", True)):
        runner.activate_tool(tool)
    else:
        runner.rt.all_tools[tool.name] = tool


def _command_line_choice(options: SessionOptions, name: str) -> Literal["out", "active"] | None:
    """What ``--tools`` / ``--exclude-tools`` say about one extension tool (None: nothing)."""
    from pi_coding_agent.coding.tools.selection import name_matcher

    if options.exclude_tools and name_matcher(list(options.exclude_tools))(name):
        return "out"
    if options.tools is None:
        return None
    if any(entry.startswith(("+", "-")) for entry in options.tools):  # modifiers of the default selection
        return "active" if f"+{name}" in options.tools else None
    return "active" if name_matcher(list(options.tools))(name) else "out"


def _tool_info(tool: AgentTool) -> JsonObject:
    info: JsonObject = {"name": tool.name, "description": tool.description, "parameters": tool.parameters}
    annotations = getattr(tool, "annotations", None)
    if annotations is not None:
        info["annotations"] = annotations
    return info


def _js_type(value: object) -> str:
    return "boolean" if isinstance(value, bool) else "string" if isinstance(value, str) else type(value).__name__


def _check_delivery(deliver_as: str | None) -> None:
    if deliver_as is not None and deliver_as not in DELIVERY_MODES:
        raise ValueError(f"deliver_as must be one of {', '.join(DELIVERY_MODES)}")
