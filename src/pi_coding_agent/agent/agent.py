"""The stateful agent: transcript, tools, model, queues, one run at a time, events to listeners."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable
from typing import TYPE_CHECKING

from pi_coding_agent.agent.events import AgentMessage, CoreEvent
from pi_coding_agent.agent.hooks import AgentHooks
from pi_coding_agent.agent.listeners import Listeners
from pi_coding_agent.agent.queues import MessageQueue
from pi_coding_agent.agent.tool import AgentTool
from pi_coding_agent.ai import stream as ai_stream
from pi_coding_agent.ai.abort import AbortSignal
from pi_coding_agent.ai.types import AssistantMessage, Model, empty_usage, now_ms

if TYPE_CHECKING:  # the run loop and tool execution load with the first run, not at start-up
    from pi_coding_agent.agent.loop import StreamFn

Listener = Callable[[CoreEvent], Awaitable[None] | None]

BUSY_PROMPT = ("Agent is already processing a prompt. Use steer() or followUp() to queue messages, "
               "or wait for completion.")
BUSY_CONTINUE = "Agent is already processing. Wait for completion before continuing."


class _ActiveRun:
    """The abort signal of the run in progress, and the event set once it has ended."""

    __slots__ = ("idle", "signal")

    def __init__(self) -> None:
        self.signal = AbortSignal()
        self.idle = asyncio.Event()


class Agent:
    """Runs prompts through the model and the tools; knows nothing of files, sessions or RPC.

    ``model``, ``thinking_level``, ``tools``, ``messages`` (the transcript), ``hooks``,
    ``tool_execution``, ``steering_mode`` and ``follow_up_mode`` are readable attributes; the owner
    changes them between runs (and between turns, from hooks) through the setters below, so every
    write to agent state is a named call. Every finished message is appended to ``messages``
    before listeners see its ``message_end``.
    """

    def __init__(
        self,
        *,
        model: Model,
        thinking_level: str = "off",
        tools: list[AgentTool] | None = None,
        messages: list[AgentMessage] | None = None,
        hooks: AgentHooks | None = None,
        steering_mode: str = "one-at-a-time",
        follow_up_mode: str = "one-at-a-time",
        tool_execution: str = "parallel",
        stream_fn: StreamFn = ai_stream.stream,
    ) -> None:
        self.model = model
        self.thinking_level = thinking_level
        self.tools: list[AgentTool] = list(tools or [])
        self.messages: list[AgentMessage] = list(messages or [])
        self.hooks = hooks or AgentHooks()
        self.tool_execution = tool_execution
        self.stream_fn = stream_fn
        self.streaming_message: AssistantMessage | None = None
        self.last_retry_after_ms: int | None = None  # retry-after of the last failed request, if any
        self._steering = MessageQueue(steering_mode)
        self._follow_up = MessageQueue(follow_up_mode)
        self._listeners: Listeners[Listener] = Listeners()
        self._active: _ActiveRun | None = None

    # ---- queue modes are the queues' own ----------------------------------------------------

    @property
    def steering_mode(self) -> str:
        return self._steering.mode

    @steering_mode.setter
    def steering_mode(self, mode: str) -> None:
        self._steering.mode = mode

    @property
    def follow_up_mode(self) -> str:
        return self._follow_up.mode

    @follow_up_mode.setter
    def follow_up_mode(self, mode: str) -> None:
        self._follow_up.mode = mode

    # ---- state -------------------------------------------------------------------------------

    @property
    def is_streaming(self) -> bool:
        """True while a run is active (from ``prompt``/``continue_run`` until its listeners finished)."""
        return self._active is not None

    @property
    def signal(self) -> AbortSignal | None:
        """The abort signal of the active run, if any."""
        return self._active.signal if self._active is not None else None

    # ---- setters for the owner ---------------------------------------------------------------

    def set_model(self, model: Model, thinking_level: str | None = None) -> None:
        self.model = model
        if thinking_level is not None:
            self.thinking_level = thinking_level

    def set_thinking_level(self, level: str) -> None:
        self.thinking_level = level

    def set_tools(self, tools: list[AgentTool]) -> None:
        """The active tools from the next request on."""
        self.tools = tools

    def replace_messages(self, messages: list[AgentMessage]) -> None:
        """A new transcript (session switch, tree navigation): ``messages`` becomes the transcript."""
        self.messages = messages

    def append_message(self, message: AgentMessage) -> None:
        """A message recorded outside a run (user bash, an extension's custom message)."""
        self.messages.append(message)

    def remove_message(self, message: AgentMessage) -> bool:
        """Drop the first message equal to ``message``; False when there is none."""
        try:
            self.messages.remove(message)
        except ValueError:
            return False
        return True

    # ---- events ------------------------------------------------------------------------------

    def subscribe(self, listener: Listener, types: Iterable[str] | None = None) -> Callable[[], None]:
        """Call ``listener`` for every event, or for those whose ``type`` is in ``types`` (awaited, in
        subscription order); returns an unsubscriber."""
        return self._listeners.add(listener, types)

    async def _emit(self, event: CoreEvent) -> None:
        if event["type"] == "message_end":
            self.streaming_message = None
            self.messages.append(event["message"])
        for listener in self._listeners.for_type(event["type"]):
            pending = listener(event)
            if pending is not None:
                await pending

    # ---- queues ------------------------------------------------------------------------------

    def steer(self, message: AgentMessage) -> None:
        """Queue a message for the next turn boundary (after the current tool calls finish)."""
        self._steering.enqueue(message)

    def follow_up(self, message: AgentMessage) -> None:
        """Queue a message for when the agent would otherwise stop."""
        self._follow_up.enqueue(message)

    @property
    def steering_queue(self) -> tuple[AgentMessage, ...]:
        return self._steering.items()

    @property
    def follow_up_queue(self) -> tuple[AgentMessage, ...]:
        return self._follow_up.items()

    def clear_steering_queue(self) -> list[AgentMessage]:
        return self._steering.clear()

    def clear_follow_up_queue(self) -> list[AgentMessage]:
        return self._follow_up.clear()

    def has_queued_messages(self) -> bool:
        return bool(self._steering) or bool(self._follow_up)

    # ---- runs --------------------------------------------------------------------------------

    async def prompt(self, messages: list[AgentMessage]) -> None:
        """One run starting with ``messages``; returns when it ended and its listeners finished."""
        if self._active is not None:
            raise RuntimeError(BUSY_PROMPT)
        await self._run(list(messages))

    async def continue_run(self) -> None:
        """A run without a new message (retry, overflow recovery): the transcript must end with a
        user or tool result, unless queued messages can be delivered instead."""
        if self._active is not None:
            raise RuntimeError(BUSY_CONTINUE)
        if all(m.get("role") == "system" for m in self.messages):
            raise RuntimeError("No messages to continue from")
        if self.messages[-1].get("role") != "assistant":
            await self._run(None)
            return
        steering = self._steering.drain()
        if steering:
            await self._run(steering, skip_initial_steering_poll=True)
            return
        follow_ups = self._follow_up.drain()
        if follow_ups:
            await self._run(follow_ups)
            return
        raise RuntimeError("Cannot continue from message role: assistant")

    def abort(self) -> None:
        """Abort the active run: the stream and every running tool are cancelled at once."""
        if self._active is not None:
            self._active.signal.abort()

    async def wait_for_idle(self) -> None:
        """Return once no run is active (after the last listener of ``agent_end`` returned)."""
        if self._active is not None:
            await self._active.idle.wait()

    async def _run(self, prompts: list[AgentMessage] | None, skip_initial_steering_poll: bool = False) -> None:
        from pi_coding_agent.agent.loop import LoopConfig, run_loop

        active = self._active = _ActiveRun()
        self.streaming_message = None
        try:
            config = LoopConfig(state=self, hooks=self.hooks, signal=active.signal, emit=self._emit,
                                poll_steering=self._steering.drain, poll_follow_up=self._follow_up.drain,
                                stream_fn=self.stream_fn, on_stream_start=self._stream_started)
            outcome = await run_loop(config, prompts, skip_initial_steering_poll)
            self.last_retry_after_ms = outcome.retry_after_ms
        except Exception as exc:
            await self._fail_run(exc, active.signal.aborted)
        finally:
            self.streaming_message = None
            self._active = None
            active.idle.set()

    def _stream_started(self, partial: AssistantMessage) -> None:
        self.streaming_message = partial

    async def _fail_run(self, exc: Exception, aborted: bool) -> None:
        """A run that threw still ends with an assistant message and ``agent_end``."""
        message: AssistantMessage = {
            "role": "assistant",
            "content": [{"type": "text", "text": ""}],
            "api": self.model["api"],
            "provider": self.model["provider"],
            "model": self.model["id"],
            "usage": empty_usage(),
            "stopReason": "aborted" if aborted else "error",
            "errorMessage": str(exc),
            "timestamp": now_ms(),
        }
        await self._emit({"type": "message_start", "message": message})
        await self._emit({"type": "message_end", "message": message})
        await self._emit({"type": "turn_end", "message": message, "toolResults": []})
        await self._emit({"type": "agent_end", "messages": [message], "willRetry": False})
