"""Prompt-cache warming (the ``cacheWarming`` setting: ``"off"``, ``"streaming"``, ``"idle"`` by default).

After a real request whose model has a prompt-cache lifetime (``promptCache.short``/``.long`` seconds
for the retention used), the same request is re-sent with a one-token output cap shortly before the
cache entry would expire: at 90% of the lifetime, keeping at least ten seconds of margin. A refresh
is only sent while the conversation is unchanged, when it is expected to save at least $0.05 (in the
idle phase a real request follows before expiry with probability 0.15), and within one hour of the
real request (30 minutes once the agent is idle; ``"streaming"`` stops at ``agent_settled``). Each
successful refresh is recorded as a ``usage`` session entry of kind ``cache_warm``. These are pi's
numbers; warming is best-effort and never touches the running agent.

The session plugs it in with one call, ``attach_cache_warmer(session, runtime)``: the warmer only
listens to the session's events and reads the agent's state.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Protocol

from pi_coding_agent.ai.cost import apply_cost
from pi_coding_agent.ai.types import AssistantMessage, Model, empty_usage

if TYPE_CHECKING:
    from pi_coding_agent.ai.stream import StreamOptions
    from pi_coding_agent.ai.types import Context
    from pi_coding_agent.coding.events import AgentEvent
    from pi_coding_agent.coding.runtime import SessionRuntime


class EventSource(Protocol):
    """What the warmer needs of the session: its event stream."""

    def subscribe(self, listener: Callable[[Any], None]) -> Callable[[], None]: ...

MAX_AGE_S = 60 * 60.0
MAX_IDLE_AGE_S = 30 * 60.0
MINIMUM_EXPECTED_SAVINGS = 0.05
IDLE_CONTINUATION_PROBABILITY = 0.15


# ---------------------------------------------------------------------------------------------- policy


def refresh_delay_s(ttl_s: float) -> float | None:
    if ttl_s <= 10:
        return None
    return max(0.001, math.floor(min(ttl_s * 0.9, ttl_s - 10) * 1000) / 1000)


def cache_ttl_s(model: Model, retention: str) -> float | None:
    if retention == "none":
        return None
    seconds = (model.get("promptCache") or {}).get(retention)
    return float(seconds) if isinstance(seconds, int | float) else None


def replayable(model: Model, thinking_level: str) -> bool:
    """Budget-based Anthropic thinking derives its budget from max_tokens: a 1-token replay differs."""
    if thinking_level == "off" or model["api"] != "anthropic-messages":
        return True
    return (model.get("compat") or {}).get("forceAdaptiveThinking") is True


def _price(model: Model, **tokens: int) -> float:
    usage: Any = {**empty_usage(), **tokens}
    apply_cost(model, usage, reported=False)
    return float(usage["cost"]["total"])


@dataclass(frozen=True)
class Decision:
    """Whether warming the prompt cache pays, and the figures it was decided on."""

    warm_cost: float
    miss_cost: float
    continuation_probability: float
    expected_savings: float
    economics_available: bool

    @property
    def warm(self) -> bool:
        return self.expected_savings >= MINIMUM_EXPECTED_SAVINGS


def evaluate(model: Model, prompt_tokens: int, phase: str) -> Decision:
    """Whether refreshing a ``prompt_tokens``-token cache entry pays for itself in ``phase``."""
    hit = _price(model, cacheRead=prompt_tokens)
    miss = _price(model, cacheWrite=prompt_tokens) if model["cost"].get("cacheWrite", 0) > 0 else _price(
        model, input=prompt_tokens)
    warm_cost = _price(model, cacheRead=prompt_tokens, output=1)
    miss_cost = max(0.0, miss - hit)
    probability = IDLE_CONTINUATION_PROBABILITY if phase == "idle" else 1.0
    return Decision(warm_cost, miss_cost, probability, probability * miss_cost - warm_cost,
                    prompt_tokens > 0 and (hit > 0 or miss > 0))


# ---------------------------------------------------------------------------------------------- warmer


@dataclass
class _Run:
    """The request a cache warm-up replays, with the answer it keeps until the run ends."""

    model: Model
    context: Context
    options: StreamOptions
    prompt_tokens: int
    answer: AssistantMessage  # the real request's reply; the run holds while it ends the transcript
    ttl_s: float
    delay_s: float
    started: float = field(default_factory=time.monotonic)
    phase: str = "streaming"
    handle: asyncio.TimerHandle | None = None
    task: asyncio.Task[None] | None = None


class CacheWarmer:
    """One warming run at a time, started by each real assistant message and driven by timers."""

    def __init__(self, session: EventSource, runtime: SessionRuntime) -> None:
        self.runtime = runtime
        self.run: _Run | None = None
        self.reason = "waiting for first request"
        session.subscribe(self._on_event)

    def mode(self) -> str:
        return self.runtime.settings.cache_warming

    def _on_event(self, event: AgentEvent) -> None:
        if event["type"] == "message_end":
            if event["message"]["role"] == "assistant":
                self._start(event["message"])
        elif event["type"] == "agent_settled" and self.run is not None:
            if self.mode() == "streaming":
                self.stop("agent run settled")
            else:
                self.run.phase = "idle"

    def _start(self, message: AssistantMessage) -> None:
        self.stop("replaced by a newer request")
        if message.get("stopReason") in ("error", "aborted") or self.mode() == "off":
            return
        agent = self.runtime.agent
        model = agent.model
        if not replayable(model, agent.thinking_level):
            self.reason = "request cannot be replayed safely"
            return
        messages = [m for m in agent.messages if m is not message]
        hooks = agent.hooks
        options = hooks.stream_options(model) if hooks.stream_options is not None else None
        ttl = cache_ttl_s(model, options.cache_retention) if options is not None else None
        delay = refresh_delay_s(ttl) if ttl is not None else None
        if options is None or ttl is None or delay is None:
            self.reason = "cache lifetime unavailable"
            return
        usage = message["usage"]
        context: Context = (hooks.build_context(messages) if hooks.build_context is not None
                            else {"messages": messages})  # type: ignore[typeddict-item]
        self.run = _Run(model, context, replace(options, thinking_level=agent.thinking_level), usage["input"]
                        + usage["cacheRead"] + usage["cacheWrite"], message, ttl, delay)
        self._schedule(self.run)

    def stop(self, reason: str) -> None:
        run, self.run = self.run, None
        self.reason = reason
        if run is not None:
            if run.handle is not None:
                run.handle.cancel()
            if run.task is not None and not run.task.done():
                run.task.cancel()

    def _schedule(self, run: _Run) -> None:
        limit = MAX_IDLE_AGE_S if run.phase == "idle" else MAX_AGE_S
        if time.monotonic() + run.delay_s > run.started + limit:
            self.stop("idle safety limit reached" if run.phase == "idle" else "one-hour safety limit reached")
            return
        loop = asyncio.get_running_loop()
        run.handle = loop.call_later(run.delay_s, lambda: self._fire(run))

    def _fire(self, run: _Run) -> None:
        run.handle = None
        if self.run is run:
            run.task = asyncio.ensure_future(self._refresh(run))

    def _current(self, run: _Run) -> bool:
        if self.run is not run:
            return False
        messages = self.runtime.agent.messages
        if self.mode() == "off" or not messages or messages[-1] is not run.answer:
            self.stop("cache warming disabled" if self.mode() == "off" else "conversation context changed")
            return False
        return True

    async def _refresh(self, run: _Run) -> None:
        from pi_coding_agent.ai.stream import complete

        if not self._current(run):
            return
        decision = evaluate(run.model, run.prompt_tokens, run.phase)
        if not decision.warm:
            self.stop("expected savings below threshold" if decision.economics_available
                      else "cache economics unavailable")
            return
        api_key = self.runtime.api_key_for(run.model)
        options = replace(run.options, max_tokens=1, max_retries=0, disable_continuation=True,
                          api_key=api_key or run.options.api_key)
        try:
            message = await complete(run.model, run.context, options)
        except Exception:  # best-effort: a failed refresh never reaches the agent
            message = None
        if message is not None and message["stopReason"] not in ("error", "aborted") and self._current(run):
            self.runtime.session_manager.append_usage("cache_warm", message["provider"], message["model"],
                                                      dict(message["usage"]))
        if self.run is run:
            run.task = None
            self._schedule(run)


def attach_cache_warmer(session: EventSource, runtime: SessionRuntime) -> CacheWarmer:
    """The session's one seam: warming follows its events from now on."""
    return CacheWarmer(session, runtime)
