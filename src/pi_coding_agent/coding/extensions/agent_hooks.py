"""The extension events of a run: the runner wraps the Agent's hooks and sees every run event.

Wrapping, not replacing: a hook already installed (the session's own) runs first, and the extension
handlers see its result. ``tool_call`` fails closed: a raising handler is not reported, its
exception reaches the tool loop, whose error result is the message.
"""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Awaitable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from pi_coding_agent.agent.events import AgentMessage, CustomMessage
from pi_coding_agent.ai.types import JsonObject, now_ms
from pi_coding_agent.coding.events import CoreEvent
from pi_coding_agent.coding.extensions.boundaries import Boundaries
from pi_coding_agent.coding.extensions.dispatch import FAILED, propagate
from pi_coding_agent.coding.extensions.provider_events import with_provider_events
from pi_coding_agent.coding.extensions.registry import custom_message

if TYPE_CHECKING:
    from pi_coding_agent.agent.tool import ToolResult
    from pi_coding_agent.ai.abort import AbortSignal
    from pi_coding_agent.ai.types import AssistantMessage, Context, Model, ToolCall, ToolResultMessage
    from pi_coding_agent.coding.extensions.host import ExtensionHost
    from pi_coding_agent.coding.extensions.registry import Extension
    from pi_coding_agent.coding.runtime import SessionRuntime
    from pi_coding_agent.coding.tools.images import ImagePolicy

# Agent events forwarded to handlers as they are (copied); the rest get pi's extension payloads.
_PLAIN_AGENT_EVENTS = frozenset({"tool_execution_start", "tool_execution_update", "tool_execution_end"})
_CONTENT_ROLES = frozenset({"user", "assistant", "toolResult", "custom"})  # a replacement keeps a content list
_TOOL_RESULT_KEYS = ("content", "details", "structuredContent", "isError", "usage")  # what a patch may set


# TypeScript handlers of these run posted, not awaited: their results change nothing, and they come once a
# streamed delta (``tool_execution_update`` stays awaited: pi's order of its handlers' calls is tested)
UNAWAITED_EVENTS = frozenset({"message_update"})


async def _in_turn(first: Awaitable[Any], then: Awaitable[None] | None) -> None:
    await first
    if then is not None:
        await then


class AgentHooks(Boundaries):
    """The Agent hooks and run events extensions take part in."""

    sidecar: Any  # the TypeScript extensions' sidecar (typescript/host.py), once started

    def __init__(self, session: ExtensionHost, runtime: SessionRuntime) -> None:
        super().__init__(session, runtime)
        self._system_prompt: str | None = None  # before_agent_start override, for the current run
        self.next_turn_messages: list[CustomMessage] = []  # send_message(deliver_as="nextTurn")

    def _install_hooks(self) -> None:
        hooks = self.rt.agent.hooks
        build, options = hooks.build_context, hooks.stream_options
        before, after, transform = hooks.before_tool_call, hooks.after_tool_call, hooks.transform_context
        finish = hooks.finish_turn

        def build_context(messages: list[AgentMessage]) -> Context:
            if build is None:  # the loop's default loads with the first run, as without extensions
                from pi_coding_agent.agent.loop import default_context

                context = default_context(messages, self.rt.agent.tools)
            else:
                context = build(messages)
            if self._system_prompt is not None:
                context["systemPrompt"] = self._system_prompt
            return context

        def stream_options(model: Model) -> Any:
            from pi_coding_agent.ai.stream import StreamOptions

            base = options(model) if options is not None else StreamOptions()
            if self.has_handlers("before_provider_request"):
                base = replace(base, on_payload=self._on_payload)
            return with_provider_events(self, base, model)

        async def transform_context(messages: list[AgentMessage], signal: AbortSignal) -> list[AgentMessage]:
            if transform is not None:
                messages = await transform(messages, signal)
            return await self._context_with_system(await self._context_event(messages))

        async def before_tool_call(call: ToolCall, args: JsonObject) -> JsonObject | None:
            if before is not None and (decision := await before(call, args)):
                return decision
            return await self._tool_call(call, args)

        async def after_tool_call(call: ToolCall, args: JsonObject, result: ToolResult) -> JsonObject | None:
            if after is not None and (patch := await after(call, args, result)):
                result = _patched(result, patch)
            patch = await self._tool_result(call, args, result)
            content = result.content if patch is None else patch.get("content", result.content)
            normalised = await self._normalise_result_images(content)
            if normalised is not content:
                patch = {**(patch or {}), "content": normalised}
            return patch

        async def finish_turn(message: AssistantMessage, results: list[ToolResultMessage]) -> bool:
            self._boundary_done = message
            proceed = await self._turn_end_boundary(message, results)
            return (await finish(message, results) if finish is not None else False) or proceed

        hooks.build_context = build_context
        hooks.finish_turn = finish_turn
        hooks.stream_options = stream_options
        hooks.transform_context = transform_context
        hooks.before_tool_call = before_tool_call
        hooks.after_tool_call = after_tool_call

    async def _context_event(self, messages: list[AgentMessage]) -> list[AgentMessage]:
        """``context``: handlers see a copy without system messages; those stay in front."""
        if not self.has_handlers("context"):
            return messages

        def step(state: tuple[list[AgentMessage], bool], result: Any, _: Extension) -> tuple[list[AgentMessage], bool]:
            returned = isinstance(result, dict) and isinstance(result.get("messages"), list)
            return (result["messages"], True) if returned else state

        system = [m for m in messages if m["role"] == "system"]
        visible: list[AgentMessage] = copy.deepcopy([m for m in messages if m["role"] != "system"])
        current, returned = await self.chain(
            "context", (visible, False), lambda state: {"type": "context", "messages": state[0]}, step)
        return [*system, *current] if returned else messages

    async def _context_with_system(self, messages: list[AgentMessage]) -> list[AgentMessage]:
        """``context_with_system``: the full transcript, system messages included, sent as returned; a
        result without a system message first is reported and ignored."""
        def step(current: list[AgentMessage], result: object, ext: Extension) -> list[AgentMessage]:
            returned = result.get("messages") if isinstance(result, dict) else None
            if not isinstance(returned, list):
                return current
            if not returned or returned[0].get("role") != "system":
                self.report_error(ext.path, "context_with_system",
                                  ValueError("context_with_system must keep a system message at index 0"))
                return current
            return returned

        return await self.chain("context_with_system", messages,
                                lambda current: {"type": "context_with_system", "messages": current}, step)

    async def _on_payload(self, payload: object) -> Any:
        """``before_provider_request``: a non-None result replaces the body."""
        current = await self.chain(
            "before_provider_request", payload, lambda body: {"type": "before_provider_request", "payload": body},
            lambda body, result, _: body if result is None or result is FAILED else result)
        return None if current is payload else current

    async def _tool_call(self, call: ToolCall, args: JsonObject) -> JsonObject | None:
        """``tool_call`` gate: ``input`` is the live arguments, mutable in place; raising fails closed."""
        event = {"type": "tool_call", "toolName": call["name"], "toolCallId": call["id"], "input": args}
        return await self.first(event, lambda result: result.get("block"), fail=propagate)

    async def _tool_result(self, call: ToolCall, args: JsonObject, result: ToolResult) -> dict[str, Any] | None:
        """``tool_result``: each handler's patch is applied before the next one sees it."""
        if not self.has_handlers("tool_result"):
            return None
        event: JsonObject = {"type": "tool_result", "toolName": call["name"], "toolCallId": call["id"],
                                 "input": args, "content": result.content}
        if result.details is not None:
            event["details"] = result.details
        if result.structured_content is not None:
            event["structuredContent"] = result.structured_content
        event["isError"] = result.is_error
        if result.usage is not None:
            event["usage"] = result.usage
        modified = await self.chain(
            "tool_result", False, lambda _: event,
            lambda changed, patch, _: _apply_tool_result_patch(event, patch) or changed
            if isinstance(patch, dict) else changed)
        if not modified:
            return None
        return {key: event[key] for key in _TOOL_RESULT_KEYS if key in event}

    async def _normalise_result_images(self, content: list[Any]) -> list[object]:
        """Images a tool made itself (pi: ``normalizeToolResultImages``), after the ``tool_result`` patches:
        each is resized like a prompt's, its hints follow it as a text block, and an image that cannot be
        processed is kept as it is. The same list comes back when nothing changed."""
        if not any(block.get("type") == "image" for block in content):
            return content
        return await asyncio.to_thread(_normalise_images, content, self.rt.image_policy())

    def agent_event(self, event: CoreEvent) -> Awaitable[None] | None:
        """The handlers of a run event, for the session to await *before* it forwards the event (pi's
        order: an extension's output precedes the record). None when no handler listens. A TypeScript
        handler of a streamed event is not awaited (typescript/host.py ``post``): any later event first
        waits for those still running, so their calls reach the client before it."""
        handlers = self._event_handlers(event)
        if self.sidecar is None or event["type"] in UNAWAITED_EVENTS:
            return handlers
        settled = self.sidecar.settled()
        return handlers if settled is None else _in_turn(settled, handlers)

    def _event_handlers(self, event: CoreEvent) -> Awaitable[None] | None:
        kind = event["type"]
        if self.held_messages and kind in ("turn_start", "agent_end"):
            self._append_held()
        if kind == "turn_end":
            return self._turn_ended(event)  # type: ignore[arg-type]  # narrowed by ``kind``: a local, as this runs per delta
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
            payload = {"type": kind, "messages": event["messages"]}  # type: ignore[typeddict-item]  # (by kind)
        elif kind == "turn_start":
            payload = {"type": kind, "turnIndex": self._turn_index, "timestamp": now_ms()}
        elif kind == "message_update":
            payload = {"type": kind, "message": self.rt.agent.streaming_message,
                       "assistantMessageEvent": event["assistantMessageEvent"]}  # type: ignore[typeddict-item]
        elif kind == "message_start":
            payload = {"type": kind, "message": event["message"]}  # type: ignore[typeddict-item]  # (by kind)
        elif kind == "message_end":
            return self._message_end(event["message"])  # type: ignore[typeddict-item, arg-type]  # (by kind)
        else:
            return None
        return self.notify(payload)

    async def _message_end(self, message: JsonObject) -> None:
        """``message_end``: a returned ``{"message"}`` of the same role replaces the message in place, so
        the transcript, later events and the session file all get the replacement."""
        def step(current: JsonObject, result: object, ext: Extension) -> JsonObject:
            replacement = result.get("message") if isinstance(result, dict) else None
            if not isinstance(replacement, dict):
                return current
            if replacement.get("role") != current.get("role"):
                self.report_error(ext.path, "message_end",
                                  ValueError("message_end handlers must return a message with the same role"))
                return current
            return replacement

        current = await self.chain(
            "message_end", message, lambda current: {"type": "message_end", "message": current}, step)
        if current is not message:
            replacement = dict(current)
            if replacement.get("content") is None and replacement.get("role") in _CONTENT_ROLES:
                replacement["content"] = []
            message.clear()
            message.update(replacement)

    async def before_agent_start(self, messages: list[AgentMessage]) -> list[AgentMessage]:
        """Injected custom messages follow the prompt; a returned system prompt holds for this run."""
        queued, self.next_turn_messages = self.next_turn_messages, []
        if not self.has_handlers("before_agent_start"):
            return [*messages, *queued]
        prompt = next((m for m in reversed(messages) if m["role"] in ("user", "custom")), None)
        system_prompt = self.rt.build_context([*self.rt.agent.messages, *messages]).get("systemPrompt", "")
        injected: list[AgentMessage] = []
        options = self.rt.system_prompt_options()  # one object: later handlers see earlier changes
        original = copy.deepcopy(options)

        def current_prompt(forced: str | None) -> str:
            if forced is not None:
                return forced
            if options == original:
                return system_prompt
            from pi_coding_agent.coding.resources.system_prompt import render_system_prompt

            return render_system_prompt(_sections(options, self.rt))

        def step(forced: str | None, result: object, _: Extension) -> str | None:
            if not isinstance(result, dict):
                return forced
            if isinstance(result.get("message"), dict):
                injected.append(custom_message(result["message"]))
            return result["systemPrompt"] if isinstance(result.get("systemPrompt"), str) else forced

        override = await self.chain("before_agent_start", None, lambda forced: _before_agent_start_event(
            prompt, current_prompt(forced), options), step)
        if override is not None:
            self._system_prompt = override
        elif options != original:
            messages = self._rebuilt_prompt(messages, options, original)
        return [*messages, *injected, *queued]

    def _rebuilt_prompt(self, messages: list[AgentMessage], options: dict[str, Any],
                        original: JsonObject) -> list[AgentMessage]:
        """The run's messages led by the system patch the changed options call for (a handler's
        ``selectedTools`` edit also sets the active tools, as in pi)."""
        if options.get("selectedTools") != original.get("selectedTools"):
            tools = self.rt.all_tools
            self.rt.agent.set_tools([tools[n] for n in dict.fromkeys(options.get("selectedTools") or [])
                                     if n in tools])
        from pi_coding_agent.coding.resources.system_prompt import SystemState

        rest: list[AgentMessage] = [m for m in messages if m["role"] != "system"]
        state = SystemState.replay(self.rt.agent.messages)
        patch = state.patch_to(_sections(options, self.rt), self.rt.tool_declarations())
        return [patch, *rest] if patch is not None else rest


def _before_agent_start_event(prompt: dict[str, Any] | None, system_prompt: str,
                              options: JsonObject) -> JsonObject:
    event: JsonObject = {"type": "before_agent_start"}
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


def _apply_tool_result_patch(event: JsonObject, patch: JsonObject) -> bool:
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


def _normalise_images(content: list[Any], policy: ImagePolicy) -> list[object]:
    """Blocking part of ``_normalise_result_images`` (decodes images: runs in a thread)."""
    from pi_coding_agent.coding.tools.images import decode_base64, process_image

    out: list[object] = []
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


def _sections(options: JsonObject, runtime: SessionRuntime) -> dict[str, str]:
    """The prompt sections of a handler's edited ``systemPromptOptions`` (the prompt machinery loads
    with the first run that has ``before_agent_start`` handlers, not with the extensions)."""
    from pi_coding_agent.coding.extensions.prompt_options import sections_from_options

    return sections_from_options(options, runtime)
