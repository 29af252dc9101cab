"""One low-level run of the agent: turns of (queued messages, assistant response, tool calls).

The order of events is a contract (RPC clients and the session store depend on it):
``agent_start, turn_start, <prompt messages>, [assistant, tools, turn_end, turn_start, ...], agent_end``.
Steering messages are taken between turns only (a streaming response and its tool calls are never
interrupted); follow-ups only when the run would otherwise stop; both become new turns of this run.

``run_loop`` is a function of a ``LoopConfig``: the state it reads as it goes, the hooks, the abort
signal, where events go and how the two queues are polled. It returns the run's outcome and writes
nothing but the transcript it was given, so the ``Agent`` stays the only owner of its state.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace
from typing import Any, Protocol, cast

from pi_coding_agent.agent.events import AgentMessage, CoreEvent
from pi_coding_agent.agent.hooks import AgentHooks
from pi_coding_agent.agent.tool import AgentTool, tool_declaration
from pi_coding_agent.agent.tool_execution import ToolExecutor
from pi_coding_agent.ai.abort import AbortSignal
from pi_coding_agent.ai.stream import AssistantStream, StreamOptions, new_assistant_message
from pi_coding_agent.ai.types import AssistantMessage, Context, JsonObject, Model, ToolCall, empty_usage

Emit = Callable[[CoreEvent], Awaitable[None]]
Poll = Callable[[], list[AgentMessage]]
StreamFn = Callable[[Model, Context, StreamOptions], AssistantStream]

_BLOCK_EVENTS = frozenset({
    "text_start", "text_delta", "text_end", "thinking_start", "thinking_delta", "thinking_end",
    "toolcall_start", "toolcall_delta", "toolcall_end",
})


def default_context(messages: list[AgentMessage], tools: list[AgentTool]) -> Context:
    """System messages folded into ``systemPrompt``; every other message passes as it is."""
    prompts = [m["content"] for m in messages if m["role"] == "system" and m["content"]]
    context: JsonObject = {}
    if prompts:
        context["systemPrompt"] = "\n\n".join(prompts)
    context["messages"] = [m for m in messages if m["role"] != "system"]
    if tools:
        context["tools"] = [tool_declaration(t) for t in tools]
    return cast(Context, context)


def _opening_snapshot(partial: AssistantMessage) -> AssistantMessage:
    """The message as it stood when the response began (no content, no usage yet), as pi shows it:
    an adapter fills in fields such as ``responseId`` before the events that announce them."""
    opening = partial.copy()  # the keys keep their places; those the stream sets are dropped
    opening.pop("responseId", None)
    opening.pop("responseModel", None)
    opening.pop("rawStopReason", None)
    opening["content"] = []
    opening["usage"] = empty_usage()
    opening["stopReason"] = "pending"
    return opening


class RunState(Protocol):
    """What a run reads as it goes; the owner may change it between turns (from hooks)."""

    @property
    def model(self) -> Model: ...

    @property
    def thinking_level(self) -> str: ...

    @property
    def tools(self) -> list[AgentTool]: ...

    @property
    def tool_execution(self) -> str: ...

    @property
    def messages(self) -> list[AgentMessage]:
        """The transcript; the ``emit`` that receives ``message_end`` appends to it."""
        ...


@dataclass(frozen=True)
class LoopConfig:
    """What one run of the loop works with: its state, hooks, abort signal and queues."""

    state: RunState
    hooks: AgentHooks
    signal: AbortSignal
    emit: Emit
    poll_steering: Poll
    poll_follow_up: Poll
    stream_fn: StreamFn
    on_stream_start: Callable[[AssistantMessage], None]  # the live partial of the response now streaming


@dataclass
class RunOutcome:
    """The messages the run produced (as in ``agent_end``) and the last response's retry-after hint."""

    new_messages: list[AgentMessage] = field(default_factory=list)
    retry_after_ms: int | None = None


async def run_loop(config: LoopConfig, prompts: list[AgentMessage] | None,
                   skip_initial_steering_poll: bool = False) -> RunOutcome:
    """One run with new prompt messages, or continued from the transcript when ``prompts`` is None."""
    run = _Run(config, skip_initial_steering_poll)
    await run.run(prompts)
    return run.outcome


class _Run:
    """The state of one run: its config and its outcome so far."""

    def __init__(self, config: LoopConfig, skip_initial_steering_poll: bool) -> None:
        self.config = config
        self.state = config.state
        self.hooks = config.hooks
        self.signal = config.signal
        self.outcome = RunOutcome()
        self.new_messages = self.outcome.new_messages
        self._skip_steering_poll = skip_initial_steering_poll
        self._emit = config.emit

    async def run(self, prompts: list[AgentMessage] | None) -> None:
        """Run with new prompt messages, or continue from the transcript when ``prompts`` is None."""
        await self._emit({"type": "agent_start"})
        await self._emit({"type": "turn_start"})
        for message in prompts or []:
            await self._add(message)
        await self._turns()

    async def _add(self, message: AgentMessage) -> None:
        await self._emit({"type": "message_start", "message": message})
        await self._emit({"type": "message_end", "message": message})
        self.new_messages.append(message)

    def _poll_steering(self) -> list[AgentMessage]:
        if self._skip_steering_poll:
            self._skip_steering_poll = False
            return []
        return self.config.poll_steering()

    async def _turns(self) -> None:
        pending = self._poll_steering()
        first_turn = True
        asked_to_continue = False
        while True:
            more_tool_calls = True
            while more_tool_calls or pending:
                if not first_turn:
                    if self.hooks.prepare_next_turn is not None:
                        await self.hooks.prepare_next_turn()
                    if not pending:  # one-at-a-time must not deliver two in one turn
                        pending = self._poll_steering()
                    await self._emit({"type": "turn_start"})
                    if self.hooks.turn_start_messages is not None:
                        pending = [*self.hooks.turn_start_messages(), *pending]
                first_turn = False
                for queued in pending:
                    await self._add(queued)
                pending = []
                message = await self._stream_assistant()
                self.new_messages.append(message)
                if message["stopReason"] in ("error", "aborted"):
                    await self._finish_turn(message, [])  # a failed turn cannot ask for more
                    await self._emit({"type": "turn_end", "message": message, "toolResults": []})
                    await self._end()
                    return
                more_tool_calls, results = await self._run_tools(message)
                asked_to_continue = await self._finish_turn(message, results)
                await self._emit({"type": "turn_end", "message": message, "toolResults": results})
                pending = self._poll_steering()
                if more_tool_calls or pending:
                    asked_to_continue = False  # a request follows anyway
            pending = self.config.poll_follow_up()
            if pending:
                asked_to_continue = False
            elif asked_to_continue:
                asked_to_continue = False  # one request on the transcript as it stands
            else:
                break
        await self._end()

    async def _finish_turn(self, message: AssistantMessage, results: list[Any]) -> bool:
        finish = self.hooks.finish_turn
        return False if finish is None else await finish(message, results)

    async def _end(self) -> None:
        await self._emit({"type": "agent_end", "messages": self.new_messages, "willRetry": False})

    async def _run_tools(self, message: AssistantMessage) -> tuple[bool, list[Any]]:
        """Execute the message's tool calls; returns whether to request again, and the results."""
        calls: list[ToolCall] = [b for b in message["content"] if b["type"] == "toolCall"]
        if not calls:
            return False, []
        executor = ToolExecutor(self.state.tools, self.hooks, self.signal, self._emit)
        if message["stopReason"] == "length":
            batch = await executor.fail_truncated(calls)
        else:
            batch = await executor.run(calls, self.state.tool_execution)
        self.new_messages.extend(batch.messages)
        return not batch.terminate, batch.messages

    async def _request_options(self, model: Model, level: str) -> StreamOptions:
        hooks = self.hooks
        options = hooks.stream_options(model) if hooks.stream_options is not None else StreamOptions()
        api_key = await hooks.get_api_key(model) if hooks.get_api_key is not None else None
        return replace(options, signal=self.signal, thinking_level=level, api_key=api_key or options.api_key)

    def _context(self, messages: list[AgentMessage]) -> Context:
        tools = self.state.tools
        build = self.hooks.build_context
        if build is None:
            return default_context(messages, tools)
        context = build(messages)
        if "tools" not in context and tools:
            context["tools"] = [tool_declaration(t) for t in tools]
        return context

    async def _transformed(self, transcript: list[AgentMessage]) -> list[AgentMessage]:
        transform = self.hooks.transform_context
        return transcript if transform is None else await transform(transcript, self.signal)

    async def _stream_assistant(self) -> AssistantMessage:
        """Stream one response. ``message_start`` waits for the first stream data, so a request that
        fails before any (HTTP error, aborted before start) has no pending phase."""
        transcript = self.state.messages
        messages = await self._transformed(transcript)
        model, level = self.state.model, self.state.thinking_level
        if self.hooks.route_request is not None:
            try:
                model, level = await self.hooks.route_request(messages, self.signal)
            except Exception as exc:  # the request ends with an error response, as one the provider refused
                return await self._unrouted(str(exc) or type(exc).__name__)
            if self.state.messages is not transcript:  # it compacted for the routed model: send what is left
                messages = await self._transformed(self.state.messages)
        context = self._context(messages)
        options = await self._request_options(model, level)
        response = self.config.stream_fn(model, context, options)
        partial = response.partial
        usage = partial["usage"]
        emit = self._emit
        started = False
        final: AssistantMessage | None = None
        async for batch in response.batches():  # a network read's events in one step
            for event in batch:
                kind = event["type"]
                if kind in _BLOCK_EVENTS:
                    if not started:
                        started = True
                        self.config.on_stream_start(partial)
                        await emit({"type": "message_start", "message": _opening_snapshot(partial)})
                    await emit({"type": "message_update", "usage": usage, "assistantMessageEvent": event})
                elif event["type"] == "done":  # (not per delta: the lookup narrows the event's type)
                    final = event["message"]
                elif event["type"] == "error":
                    final = event["error"]
        if final is None:
            final = await response.result()
        self.outcome.retry_after_ms = response.retry_after_ms
        final["thinkingLevel"] = level
        if not started:
            await emit({"type": "message_start", "message": final.copy()})
        await emit({"type": "message_end", "message": final})  # once a message
        return final

    async def _unrouted(self, error: str) -> AssistantMessage:
        """The error response of a request whose routing failed, as pi records it: it names the
        selected model and holds one empty text block."""
        opening = new_assistant_message(self.state.model)
        final = cast(AssistantMessage, {  # pi's key order: the error before the timestamp
            **{k: v for k, v in opening.items() if k != "timestamp"}, "content": [{"type": "text", "text": ""}],
            "stopReason": "error", "errorMessage": error, "timestamp": opening["timestamp"]})
        await self._emit({"type": "message_start", "message": final.copy()})
        await self._emit({"type": "message_end", "message": final})
        return final
