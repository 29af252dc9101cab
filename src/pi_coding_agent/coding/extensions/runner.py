"""Dispatching session events to extension handlers, and the hooks the session calls.

Handlers run in extension load order, then registration order. Three return patterns
(extensions.md §2): *notify* (result ignored), *chain* (each handler sees the previous result:
``context``, ``before_provider_request``, ``tool_result``, ``input`` transforms, the system prompt of
``before_agent_start``) and *gate* (the first ``cancel``/``block``/``handled`` wins). A raising
handler becomes an ``extension_error`` session event and the run goes on, except ``tool_call`` and
``user_bash``, which fail closed.

The runner installs itself into the Agent's hooks (it wraps the ones already there), so the
session's own code only calls it at the points where a session decision is made: input, switching,
forking, user bash, model selection, naming, listing commands, shutdown.
"""

from __future__ import annotations

import asyncio
import copy
import sys
from collections.abc import Awaitable, Callable
from dataclasses import replace
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any, cast

from pi_coding_agent.agent.awaitables import maybe_await
from pi_coding_agent.agent.loop import default_context
from pi_coding_agent.agent.tool import AgentTool, ToolResult
from pi_coding_agent.ai.types import AssistantMessage, Context, Model, ToolCall, ToolResultMessage, now_ms
from pi_coding_agent.coding.errors import SessionError
from pi_coding_agent.coding.extensions.api import ExtensionAPI, install_tool
from pi_coding_agent.coding.extensions.boundary import apply_drafts, preview_context
from pi_coding_agent.coding.extensions.context import CommandContext, ExtensionContext
from pi_coding_agent.coding.extensions.event_bus import EventBus
from pi_coding_agent.coding.extensions.loader import ExtensionSource, import_extension
from pi_coding_agent.coding.extensions.registry import Binding, Command, Extension, Handler, custom_message

if TYPE_CHECKING:
    from pi_coding_agent.ai.abort import AbortSignal
    from pi_coding_agent.coding.extensions.host import ExtensionHost
    from pi_coding_agent.coding.runtime import SessionRuntime
    from pi_coding_agent.coding.tools.images import ImagePolicy

_FAILED = object()  # a handler raised (already reported)

# Agent events forwarded to handlers as they are (copied); the rest get pi's extension payloads.
_PLAIN_AGENT_EVENTS = frozenset({"tool_execution_start", "tool_execution_update", "tool_execution_end"})
_CONTENT_ROLES = frozenset({"user", "assistant", "toolResult", "custom"})  # a replacement keeps a content list
_TOOL_RESULT_KEYS = ("content", "details", "structuredContent", "isError", "usage")  # what a patch may set
COMMAND_NOT_QUEUEABLE = (
    'Extension command "/{name}" cannot be queued. Use prompt() or execute the command when not streaming.'
)


class ExtensionRunner:
    """The loaded extensions of one session and the dispatch of its events to them."""

    def __init__(self, session: ExtensionHost, runtime: SessionRuntime, sources: list[ExtensionSource]) -> None:
        self.rt = runtime
        self.session = session
        self.sources = sources
        self.extensions: list[Extension] = []
        self.binding = Binding()
        self.events = EventBus()  # pi.events, shared by the extensions of this session
        self._modules: dict[Path, ModuleType] = {}
        self._load_errors: list[tuple[str, str]] = []
        self._builtin_tools: dict[str, AgentTool] = dict(runtime.all_tools)
        self._tasks: set[asyncio.Task[Any]] = set()
        self._turn_index = 0
        self._outcome = "completed"  # of the last turn: the outcome agent_before_settle reports
        self._boundary_done: dict[str, Any] | None = None  # the assistant message finish_turn dispatched
        self._system_prompt: str | None = None  # before_agent_start override, for the current run
        self.next_turn_messages: list[dict[str, Any]] = []  # send_message(deliver_as="nextTurn")
        self.held_messages: list[dict[str, Any]] = []  # send_message(trigger_turn=False) during a turn
        self._thinking_level = runtime.agent.thinking_level
        self.shutdown_requested = False
        self.settling = False  # agent_settled handlers are running
        self._deferred: list[Callable[[], Awaitable[Any]]] = []
        self._install_hooks()

    # ------------------------------------------------------------------ loading

    async def load(self) -> None:
        """Import (once per process) and set up every extension; failures are kept for ``start``."""
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

    def _setup_of(self, source: ExtensionSource) -> Callable[[Any], Any]:
        if source.setup is not None:
            return source.setup
        module = self._modules.get(source.path) or import_extension(source.path)
        self._modules[source.path] = module
        setup: Callable[[Any], Any] = module.setup
        return setup

    async def start(self, reason: str, previous_session_file: str | None = None) -> None:
        """Report load failures, then ``session_start``."""
        errors, self._load_errors = self._load_errors, []
        for path, message in errors:
            self.session.emit({"type": "extension_error", "extensionPath": path, "event": "load",
                               "error": f"Failed to load extension: {message}"})
        event: dict[str, Any] = {"type": "session_start", "reason": reason}
        if previous_session_file is not None:
            event["previousSessionFile"] = previous_session_file
        await self.notify(event)

    def start_soon(self) -> None:
        """``start`` once the mode has subscribed to the session (it does so right after creation)."""
        self.spawn(self.start("startup"))

    async def reload(self, reason: str, previous_session_file: str | None) -> None:
        """Session replacement: old handles go stale, every extension is set up again."""
        self.binding.stale = True
        self.binding = Binding()
        self.rt.all_tools.clear()
        self.rt.all_tools.update(self._builtin_tools)
        agent = self.rt.agent
        agent.set_tools([self._builtin_tools[t.name] for t in agent.tools if t.name in self._builtin_tools])
        self.extensions = []
        await self.load()
        await self.start(reason, previous_session_file)

    def spawn(self, coroutine: Awaitable[Any]) -> None:
        task = asyncio.ensure_future(coroutine)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    # ------------------------------------------------------------------ tools

    def activate_tool(self, tool: AgentTool) -> None:
        """Register (overriding a same-named tool) and make it active at once."""
        self.rt.all_tools[tool.name] = tool
        tools = self.rt.agent.tools
        for index, existing in enumerate(tools):
            if existing.name == tool.name:
                tools[index] = tool
                return
        tools.append(tool)

    # ------------------------------------------------------------------ dispatch

    @property
    def context(self) -> ExtensionContext:
        return ExtensionContext(self, self.binding)

    def has_handlers(self, name: str) -> bool:
        return any(ext.handlers.get(name) for ext in self.extensions)

    def _handlers(self, name: str) -> list[tuple[Extension, Handler]]:
        return [(ext, h) for ext in self.extensions for h in list(ext.handlers.get(name, ()))]

    def report_error(self, extension_path: str, event: str, exc: BaseException) -> None:
        self.session.emit({"type": "extension_error", "extensionPath": extension_path, "event": event,
                           "error": str(exc) or type(exc).__name__})

    async def _call(self, ext: Extension, handler: Handler, event: dict[str, Any], ctx: Any = None) -> Any:
        try:
            result = await maybe_await(handler(event, ctx if ctx is not None else self.context))
        except Exception as exc:
            self.report_error(ext.path, event["type"], exc)
            return _FAILED
        return result

    async def notify(self, event: dict[str, Any]) -> None:
        for ext, handler in self._handlers(event["type"]):
            await self._call(ext, handler, event)

    async def first(self, event: dict[str, Any], key: str) -> dict[str, Any] | None:
        """Gate: the first result whose ``key`` is truthy, or None."""
        for ext, handler in self._handlers(event["type"]):
            result = await self._call(ext, handler, event)
            if isinstance(result, dict) and result.get(key):
                return result
        return None

    # ------------------------------------------------------------------ agent hooks

    def _install_hooks(self) -> None:
        hooks = self.rt.agent.hooks
        build, options = hooks.build_context, hooks.stream_options
        before, after, transform = hooks.before_tool_call, hooks.after_tool_call, hooks.transform_context
        finish = hooks.finish_turn

        def build_context(messages: list[dict[str, Any]]) -> Context:
            context = build(messages) if build is not None else default_context(messages, self.rt.agent.tools)
            if self._system_prompt is not None:
                context["systemPrompt"] = self._system_prompt
            return context

        def stream_options(model: Model) -> Any:
            from pi_coding_agent.ai.stream import StreamOptions

            base = options(model) if options is not None else StreamOptions()
            return replace(base, on_payload=self._on_payload) if self.has_handlers("before_provider_request") else base

        async def transform_context(messages: list[dict[str, Any]], signal: AbortSignal) -> list[dict[str, Any]]:
            if transform is not None:
                messages = await transform(messages, signal)
            return await self._context_with_system(await self._context_event(messages))

        async def before_tool_call(call: ToolCall, args: dict[str, Any]) -> dict[str, Any] | None:
            if before is not None and (decision := await before(call, args)):
                return decision
            return await self._tool_call(call, args)

        async def after_tool_call(call: ToolCall, args: dict[str, Any], result: ToolResult) -> dict[str, Any] | None:
            if after is not None and (patch := await after(call, args, result)):
                result = _patched(result, patch)
            patch = await self._tool_result(call, args, result)
            content = result.content if patch is None else patch.get("content", result.content)
            normalised = await self._normalise_result_images(content)
            if normalised is not content:
                patch = {**(patch or {}), "content": normalised}
            return patch

        async def finish_turn(message: AssistantMessage, results: list[ToolResultMessage]) -> bool:
            self._boundary_done = cast(dict[str, Any], message)
            proceed = await self._turn_end_boundary(message, results)
            return (await finish(message, results) if finish is not None else False) or proceed

        hooks.build_context = build_context
        hooks.finish_turn = finish_turn
        hooks.stream_options = stream_options
        hooks.transform_context = transform_context
        hooks.before_tool_call = before_tool_call
        hooks.after_tool_call = after_tool_call
        self.session.subscribe(self._on_session_event)

    async def _context_event(self, messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """``context`` (chain): handlers see a copy without system messages; those stay in front."""
        if not self.has_handlers("context"):
            return messages
        system = [m for m in messages if m.get("role") == "system"]
        visible = copy.deepcopy([m for m in messages if m.get("role") != "system"])
        current, returned = visible, False
        for ext, handler in self._handlers("context"):
            result = await self._call(ext, handler, {"type": "context", "messages": current})
            if isinstance(result, dict) and isinstance(result.get("messages"), list):
                current, returned = result["messages"], True
        return [*system, *current] if returned else messages

    async def _context_with_system(self, messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """``context_with_system`` (chain): the full transcript, system messages included, sent as returned;
        a result without a system message first is reported and ignored."""
        for ext, handler in self._handlers("context_with_system"):
            result = await self._call(ext, handler, {"type": "context_with_system", "messages": messages})
            returned = result.get("messages") if isinstance(result, dict) else None
            if not isinstance(returned, list):
                continue
            if not returned or returned[0].get("role") != "system":
                self.report_error(ext.path, "context_with_system",
                                  ValueError("context_with_system must keep a system message at index 0"))
                continue
            messages = returned
        return messages

    async def _on_payload(self, payload: Any) -> Any:
        """``before_provider_request`` (chain): a non-None result replaces the body."""
        current = payload
        for ext, handler in self._handlers("before_provider_request"):
            result = await self._call(ext, handler, {"type": "before_provider_request", "payload": current})
            if result is not None and result is not _FAILED:
                current = result
        return None if current is payload else current

    async def _tool_call(self, call: ToolCall, args: dict[str, Any]) -> dict[str, Any] | None:
        """``tool_call`` (gate, fail closed): ``input`` is the live arguments, mutable in place. A raising
        handler is not reported: its exception reaches the tool loop, whose error result is the message."""
        event = {"type": "tool_call", "toolName": call["name"], "toolCallId": call["id"], "input": args}
        for _, handler in self._handlers("tool_call"):
            result = await maybe_await(handler(event, self.context))
            if isinstance(result, dict) and result.get("block"):
                return result
        return None

    async def _tool_result(self, call: ToolCall, args: dict[str, Any], result: ToolResult) -> dict[str, Any] | None:
        """``tool_result`` (chain): each handler's patch is applied before the next one sees it."""
        if not self.has_handlers("tool_result"):
            return None
        event: dict[str, Any] = {"type": "tool_result", "toolName": call["name"], "toolCallId": call["id"],
                                 "input": args, "content": result.content}
        if result.details is not None:
            event["details"] = result.details
        if result.structured_content is not None:
            event["structuredContent"] = result.structured_content
        event["isError"] = result.is_error
        if result.usage is not None:
            event["usage"] = result.usage
        modified = False
        for ext, handler in self._handlers("tool_result"):
            patch = await self._call(ext, handler, event)
            if isinstance(patch, dict):
                modified = _apply_tool_result_patch(event, patch) or modified
        if not modified:
            return None
        return {key: event[key] for key in _TOOL_RESULT_KEYS if key in event}

    async def _normalise_result_images(self, content: list[Any]) -> list[Any]:
        """Images a tool made itself (pi: ``normalizeToolResultImages``), after the ``tool_result`` patches:
        each is resized like a prompt's, its hints follow it as a text block, and an image that cannot be
        processed is kept as it is. The same list comes back when nothing changed."""
        if not any(block.get("type") == "image" for block in content):
            return content
        return await asyncio.to_thread(_normalise_images, content, self.rt.image_policy())

    def agent_event(self, event: dict[str, Any]) -> Awaitable[None] | None:
        """The handlers of a run event, for the session to await *before* it forwards the event (pi's
        order: an extension's output precedes the record). None when no handler listens."""
        kind = event["type"]
        if self.held_messages and kind in ("turn_start", "agent_end"):
            self._append_held()
        if kind == "turn_end":
            return self._turn_ended(event)
        if not self.has_handlers(kind):
            if kind == "agent_start":
                self._turn_index = 0
            return None
        if kind in _PLAIN_AGENT_EVENTS:
            payload = dict(event)
        elif kind == "agent_start":
            self._turn_index = 0
            payload = {"type": kind}
        elif kind == "agent_end":
            payload = {"type": kind, "messages": event["messages"]}
        elif kind == "turn_start":
            payload = {"type": kind, "turnIndex": self._turn_index, "timestamp": now_ms()}
        elif kind == "message_update":
            payload = {"type": kind, "message": self.rt.agent.streaming_message,
                       "assistantMessageEvent": event["assistantMessageEvent"]}
        elif kind == "message_start":
            payload = {"type": kind, "message": event["message"]}
        elif kind == "message_end":
            return self._message_end(event["message"])
        else:
            return None
        return self.notify(payload)

    def append_custom(self, custom: dict[str, Any]) -> None:
        """Add a custom message to the transcript and the session file, with its message events."""
        session = self.session
        self.rt.agent.append_message(custom)
        session.sm.append_custom_message(custom["customType"], custom["content"], custom["display"],
                                         custom.get("details"))
        session.emit({"type": "message_start", "message": custom})
        session.emit({"type": "message_end", "message": custom})

    def _append_held(self) -> None:
        """Messages held during a turn join the transcript once it ended: never between a tool call and
        its result (the next event after ``turn_end`` comes only after ``turn_end`` went out)."""
        held, self.held_messages = self.held_messages, []
        for custom in held:
            self.append_custom(custom)

    # ------------------------------------------------------------------ message_end and boundaries

    async def _message_end(self, message: dict[str, Any]) -> None:
        """``message_end`` (chain): a returned ``{"message"}`` of the same role replaces the message in
        place, so the transcript, later events and the session file all get the replacement."""
        current = message
        for ext, handler in self._handlers("message_end"):
            result = await self._call(ext, handler, {"type": "message_end", "message": current})
            replacement = result.get("message") if isinstance(result, dict) else None
            if not isinstance(replacement, dict):
                continue
            if replacement.get("role") != current.get("role"):
                self.report_error(ext.path, "message_end",
                                  ValueError("message_end handlers must return a message with the same role"))
                continue
            current = replacement
        if current is not message:
            replacement = dict(current)
            if replacement.get("content") is None and replacement.get("role") in _CONTENT_ROLES:
                replacement["content"] = []
            message.clear()
            message.update(replacement)

    def _turn_ended(self, event: dict[str, Any]) -> Awaitable[None] | None:
        """A turn that ended without ``finish_turn`` (the run failed) still gets its boundary."""
        message = event["message"]
        dispatched, self._boundary_done = self._boundary_done is message, None
        if dispatched or message.get("role") != "assistant":
            self._turn_index += 1
            return None
        return self._late_turn_end(message, event["toolResults"])

    async def _late_turn_end(self, message: AssistantMessage, results: list[ToolResultMessage]) -> None:
        await self._turn_end_boundary(message, results)
        self._turn_index += 1

    async def _turn_end_boundary(self, message: AssistantMessage, results: list[ToolResultMessage]) -> bool:
        """``turn_end`` handlers may propose entries and ask for one more request; True to continue."""
        stop = message.get("stopReason")
        self._outcome = stop if stop in ("aborted", "error") else "completed"
        if not self.has_handlers("turn_end"):
            return False
        entry_id = self.session.entry_id_of(cast(dict[str, Any], message))
        if entry_id is None:
            self._boundary_error("turn_end", "turn_end could not resolve the persisted assistant entry ID")
            return False
        result_ids = [self.session.entry_id_of(cast(dict[str, Any], r)) for r in results]
        event = {"type": "turn_end", "turnIndex": self._turn_index, "message": message, "toolResults": results,
                 "messageEntryId": entry_id, "toolResultEntryIds": [i for i in result_ids if i is not None],
                 "outcome": self._outcome}
        drafts, proceed = await self._boundary(event)
        self._commit_drafts(drafts)
        if proceed and not self._preview([], "turn_end")["canContinue"]:
            self._boundary_error("turn_end", "turn_end requested continuation without runnable model context")
            return False
        return proceed

    async def before_settle(self) -> bool:
        """``agent_before_settle``, once nothing else would run: True when the session must make one more
        request (a handler asked to, or messages were queued meanwhile)."""
        agent = self.rt.agent
        if not self.has_handlers("agent_before_settle"):
            return agent.has_queued_messages()
        drafts, proceed = await self._boundary({"type": "agent_before_settle", "outcome": self._outcome})
        self._commit_drafts(drafts)
        self._append_held()
        if not (proceed or agent.has_queued_messages()):
            return False
        if not self._preview([], "agent_before_settle")["canContinue"]:
            if proceed:
                self._boundary_error("agent_before_settle",
                                     "agent_before_settle requested continuation without runnable model context")
            return False
        return True

    async def _boundary(self, base: dict[str, Any]) -> tuple[list[dict[str, Any]], bool]:
        """Run a boundary event's handlers: each sees the drafts and decision so far and the context they
        make; a handler's ``entries``/``continue`` replace them. Drafts the store would refuse void all."""
        kind = base["type"]
        drafts: list[dict[str, Any]] = []
        proceed = False
        context = self._preview(drafts, kind)
        valid = True
        for ext, handler in self._handlers(kind):
            result = await self._call(ext, handler, {**base, "entries": drafts, "continue": proceed,
                                                     "context": context})
            if isinstance(result, dict):
                if result.get("entries") is not None:
                    drafts = list(result["entries"])
                if result.get("continue") is not None:
                    proceed = bool(result["continue"])
            try:
                context = self._preview(drafts, kind)
                valid = True
            except Exception as exc:
                valid = False
                self.report_error(ext.path, kind, ValueError(f"Invalid boundary entries: {_reason(exc)}"))
        return (drafts, proceed) if valid else ([], False)

    def _preview(self, drafts: list[dict[str, Any]], boundary: str) -> dict[str, Any]:
        return preview_context(self.session.sm, drafts, self.rt.agent, self.held_messages, boundary)

    def _commit_drafts(self, drafts: list[dict[str, Any]]) -> None:
        """Write the drafts, give the agent the context they make, and announce each entry."""
        if not drafts:
            return
        sm = self.session.sm
        appended = apply_drafts(sm, drafts)
        self.rt.agent.replace_messages(sm.build_context().messages)
        for entry in appended:
            self.session.emit({"type": "entry_appended", "entry": entry})

    def _boundary_error(self, event: str, message: str) -> None:
        self.session.emit({"type": "extension_error", "extensionPath": "<boundary>", "event": event,
                           "error": message})

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

    def defer(self, start: Callable[[], Awaitable[Any]]) -> None:
        """Keep work an ``agent_settled`` handler requested until the session is idle."""
        self._deferred.append(start)

    def _on_session_event(self, event: dict[str, Any]) -> None:
        kind = event["type"]
        if kind == "agent_settled":
            if self.shutdown_requested:
                self.spawn(self.request_shutdown())
        elif kind == "thinking_level_changed":
            previous, self._thinking_level = self._thinking_level, event["level"]
            if self.has_handlers("thinking_level_select"):
                self.spawn(self.notify({"type": "thinking_level_select", "level": event["level"],
                                        "previousLevel": previous}))

    # ------------------------------------------------------------------ session hook points

    async def handle_input(
        self, text: str, images: list[dict[str, Any]] | None, streaming_behavior: str | None, allow_commands: bool,
    ) -> dict[str, Any] | None:
        """An extension command, else ``input`` handlers. Returns a prompt disposition (handled),
        ``{"action": "transform", "text", "images"}``, or None to go on unchanged."""
        if text.startswith("/"):
            name, _, args = text[1:].partition(" ")
            command = self.commands().get(name)
            if command is not None:
                if not allow_commands:
                    raise SessionError(COMMAND_NOT_QUEUEABLE.format(name=name))
                await self.run_command(name, command, args.strip())
                return {"disposition": "handled"}
        if not self.has_handlers("input"):
            return None
        return await self._input_event(text, images, streaming_behavior)

    async def _input_event(self, text: str, images: list[dict[str, Any]] | None,
                           streaming_behavior: str | None) -> dict[str, Any] | None:
        transformed = False
        for ext, handler in self._handlers("input"):
            event: dict[str, Any] = {"type": "input", "text": text}
            if images:
                event["images"] = images
            event["source"] = "rpc"
            if streaming_behavior is not None:
                event["streamingBehavior"] = streaming_behavior
            result = await self._call(ext, handler, event)
            if not isinstance(result, dict):
                continue
            if result.get("action") == "handled":
                return {"disposition": "handled"}
            if result.get("action") == "transform" and isinstance(result.get("text"), str):
                text, images, transformed = result["text"], result.get("images", images), True
        return {"action": "transform", "text": text, "images": images} if transformed else None

    def commands(self) -> dict[str, tuple[Extension, Command]]:
        """Invocation names: a name several extensions register becomes ``name:1``, ``name:2``... everywhere
        (skipping a suffixed name some extension already uses)."""
        registered = [(ext, cmd) for ext in self.extensions for cmd in ext.commands.values()]
        counts: dict[str, int] = {}
        for _, cmd in registered:
            counts[cmd.name] = counts.get(cmd.name, 0) + 1
        seen: dict[str, int] = {}
        out: dict[str, tuple[Extension, Command]] = {}
        for ext, cmd in registered:
            occurrence = seen[cmd.name] = seen.get(cmd.name, 0) + 1
            name = f"{cmd.name}:{occurrence}" if counts[cmd.name] > 1 else cmd.name
            while name in out:
                occurrence += 1
                name = f"{cmd.name}:{occurrence}"
            out[name] = (ext, cmd)
        return out

    async def run_command(self, name: str, entry: tuple[Extension, Command], args: str) -> None:
        _, command = entry
        try:
            await maybe_await(command.handler(args, CommandContext(self, self.binding)))
        except Exception as exc:
            self.report_error(f"command:{name}", "command", exc)

    def list_commands(self) -> list[dict[str, Any]]:
        items = []
        for name, (ext, command) in self.commands().items():
            item: dict[str, Any] = {"name": name}
            if command.description:
                item["description"] = command.description
            item["source"] = "extension"
            item["sourceInfo"] = ext.source.source_info()
            items.append(item)
        return items

    async def before_agent_start(self, messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Injected custom messages follow the prompt; a returned system prompt holds for this run."""
        queued, self.next_turn_messages = self.next_turn_messages, []
        if not self.has_handlers("before_agent_start"):
            return [*messages, *queued]
        prompt = next((m for m in reversed(messages) if m.get("role") in ("user", "custom")), None)
        system_prompt = self.rt.build_context([*self.rt.agent.messages, *messages]).get("systemPrompt", "")
        injected: list[dict[str, Any]] = []
        override = None
        options = self.rt.system_prompt_options()  # one object: later handlers see earlier changes
        for ext, handler in self._handlers("before_agent_start"):
            event = _before_agent_start_event(prompt, system_prompt, options)
            result = await self._call(ext, handler, event)
            if not isinstance(result, dict):
                continue
            if isinstance(result.get("systemPrompt"), str):
                system_prompt = override = result["systemPrompt"]
            if isinstance(result.get("message"), dict):
                injected.append(custom_message(result["message"]))
        if override is not None:
            self._system_prompt = override
        return [*messages, *injected, *queued]

    async def before_replace(self, reason: str, target: Path | None, entry_id: str | None, position: str) -> bool:
        """True when a ``session_before_switch`` (new, resume) or ``session_before_fork`` handler cancels."""
        event: dict[str, Any]
        if reason == "fork":
            event = {"type": "session_before_fork", "entryId": entry_id, "position": position}
        else:
            event = {"type": "session_before_switch", "reason": reason}
            if target is not None:
                event["targetSessionFile"] = str(target.resolve())
        return await self.first(event, "cancel") is not None

    async def session_shutdown(self, reason: str, target: str | None = None) -> None:
        event: dict[str, Any] = {"type": "session_shutdown", "reason": reason}
        if target is not None:
            event["targetSessionFile"] = target
        await self.notify(event)

    async def before_compact(self, event: dict[str, Any]) -> dict[str, Any] | None:
        """``session_before_compact``: ``{"cancel": True}`` or ``{"compaction": {...}}`` from the first
        handler returning either (for the compaction controller)."""
        for ext, handler in self._handlers("session_before_compact"):
            result = await self._call(ext, handler, {"type": "session_before_compact", **event})
            if isinstance(result, dict) and (result.get("cancel") or isinstance(result.get("compaction"), dict)):
                return result
        return None

    async def before_tree(self, event: dict[str, Any]) -> dict[str, Any] | None:
        """``session_before_tree``: the first handler's answer that cancels, supplies or changes something."""
        for ext, handler in self._handlers("session_before_tree"):
            result = await self._call(ext, handler, {"type": "session_before_tree", **event})
            if isinstance(result, dict) and result:
                return result
        return None

    async def user_bash(self, command: str, exclude_from_context: bool) -> dict[str, Any] | None:
        """``user_bash``: a ``{"result": ...}`` replaces execution; a raising handler refuses the command."""
        event = {"type": "user_bash", "command": command, "excludeFromContext": exclude_from_context,
                 "cwd": str(self.rt.cwd)}
        for ext, handler in self._handlers("user_bash"):
            try:
                result = await maybe_await(handler(event, self.context))
            except Exception as exc:
                self.report_error(ext.path, "user_bash", exc)
                raise SessionError(str(exc) or type(exc).__name__) from exc
            if isinstance(result, dict) and isinstance(result.get("result"), dict):
                return dict(result["result"])
        return None

    async def model_select(self, model: Model, previous: Model | None, source: str) -> None:
        event: dict[str, Any] = {"type": "model_select", "model": model}
        if previous is not None:
            event["previousModel"] = previous
        event["source"] = source
        await self.notify(event)

    async def session_info_changed(self, name: str | None) -> None:
        event: dict[str, Any] = {"type": "session_info_changed"}
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


def _before_agent_start_event(prompt: dict[str, Any] | None, system_prompt: str,
                              options: dict[str, Any]) -> dict[str, Any]:
    event: dict[str, Any] = {"type": "before_agent_start"}
    if prompt is not None and prompt.get("role") == "custom":
        event["messageType"] = "custom"
        event["message"] = prompt
    else:
        content = prompt.get("content", []) if prompt else []
        event["messageType"] = "user"
        event["prompt"] = "".join(b.get("text", "") for b in content if b.get("type") == "text")
        images = [b for b in content if b.get("type") == "image"]
        if images:
            event["images"] = images
    event["systemPrompt"] = system_prompt
    event["systemPromptOptions"] = options
    return event


def _apply_tool_result_patch(event: dict[str, Any], patch: dict[str, Any]) -> bool:
    """Apply one handler's patch to the chained ``tool_result`` event; True when it changed anything.
    New content without new structured content drops the old one, which may no longer match."""
    changed = False
    for key in _TOOL_RESULT_KEYS:
        if patch.get(key) is not None:
            event[key] = patch[key]
            changed = True
    if patch.get("content") is not None and patch.get("structuredContent") is None:
        event.pop("structuredContent", None)
    return changed


def _reason(exc: Exception) -> str:
    """An exception as a sentence: a missing draft key reads as the key, not as its repr."""
    if isinstance(exc, KeyError) and exc.args:
        return f"missing {exc.args[0]}"
    return str(exc) or type(exc).__name__


def _normalise_images(content: list[Any], policy: ImagePolicy) -> list[Any]:
    """Blocking part of ``_normalise_result_images`` (decodes images: runs in a thread)."""
    from pi_coding_agent.coding.tools.images import decode_base64, process_image

    out: list[Any] = []
    changed = False
    for block in content:
        processed = process_image(decode_base64(block["data"]), block["mimeType"], policy) \
            if block.get("type") == "image" else None
        image = None if processed is None else processed.image
        if processed is None or image is None or (
                image["data"] == block["data"] and image["mimeType"] == block["mimeType"] and not processed.hints):
            out.append(block)  # not an image, could not be processed, or already fine
            continue
        out.append(image)
        if processed.hints:
            out.append({"type": "text", "text": "\n".join(processed.hints)})
        changed = True
    return out if changed else content


def _patched(result: ToolResult, patch: dict[str, Any]) -> ToolResult:
    return replace(result, content=patch.get("content", result.content), details=patch.get("details", result.details),
                   is_error=patch.get("isError", result.is_error), usage=patch.get("usage", result.usage))
