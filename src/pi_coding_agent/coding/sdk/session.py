"""``Session``: the ``AgentSession`` an SDK host gets, with ``run``, ``stream``, ``async with`` and a final shutdown.

Everything the RPC mode can do stays a method of the same name (it is the same class underneath);
this subclass adds what a Python host expects on top: a prompt run to its end as one call
(``run`` -> ``RunResult``), the run's events as an ``async for`` (``stream``), per-run limits, the
``can_use_tool`` gate, a scripted ``faux`` provider of its own, and a lifetime: ``shutdown()`` may be
called any number of times, and once it has run every operation that would change the session or
call a model raises instead of working unsaved (reads still answer).
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import AsyncIterator, Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar, cast

from pi_coding_agent.agent.events import AgentMessage
from pi_coding_agent.ai.types import JsonObject
from pi_coding_agent.coding.agent_session import AgentSession
from pi_coding_agent.coding.errors import SessionError
from pi_coding_agent.coding.events import AgentEvent
from pi_coding_agent.coding.sdk.errors import in_sdk_terms
from pi_coding_agent.coding.sdk.limits import RunLimits, check_limits
from pi_coding_agent.coding.sdk.permissions import CanUseTool, ToolContext, tool_gate
from pi_coding_agent.coding.sdk.result import RunError, RunResult
from pi_coding_agent.coding.session_host import Listener

if TYPE_CHECKING:
    from pi_coding_agent.ai.apis.faux import Script
    from pi_coding_agent.coding.extensions.loader import ExtensionSource
    from pi_coding_agent.coding.runtime import SessionRuntime
    from pi_coding_agent.coding.virtual_models import VirtualModel

CLOSED_TEXT = "This session was shut down; create another with create_agent_session()."
_F = TypeVar("_F", bound=Callable[..., Any])


def _open_only(method: _F) -> _F:
    """``method`` refused once the session is shut down (raised at the call, before anything runs)."""
    @functools.wraps(method)
    def guarded(self: Session, *args: object, **kwargs: object) -> object:
        if self.closed:
            raise SessionError(CLOSED_TEXT)
        return method(self, *args, **kwargs)

    return cast(_F, guarded)


class Session(AgentSession):
    """An in-process session (``create_agent_session``); see ``docs/sdk.md``."""

    def __init__(self, runtime: SessionRuntime, extension_sources: Sequence[ExtensionSource] = ()) -> None:
        super().__init__(runtime, extension_sources)
        self.closed = False
        self._shutdown: asyncio.Future[None] | None = None
        self._limits = RunLimits()  # the current run's (none outside ``run``/``stream``)
        self._faux_script: Script | None = None
        self._interrupted = False

    def configure(self, can_use_tool: CanUseTool | None, faux_script: Script | None) -> None:
        """Install the tool gate and the session's own faux script (``create_agent_session``, once)."""
        self._faux_script = faux_script
        hooks = self.agent.hooks
        hooks.before_tool_call = tool_gate(hooks.before_tool_call, lambda: self._limits, can_use_tool,
                                           self._tool_context, self._interrupt)

        between_turns = hooks.prepare_next_turn

        async def prepare_next_turn() -> None:
            if between_turns is not None:
                await between_turns()
            if self._interrupted:  # the denied call and its batch have their results: stop before the request
                self._interrupted = False
                self._aborted = True
                self.agent.abort()

        hooks.prepare_next_turn = prepare_next_turn

    def _interrupt(self) -> None:
        """``Deny(interrupt=True)``: the run is aborted once the current batch of calls has its results."""
        self._interrupted = True

    def _tool_context(self, tool_call_id: str) -> ToolContext:
        return ToolContext(self.sm.session_id, tool_call_id, Path(self.rt.cwd))

    async def __aenter__(self) -> Session:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.shutdown()

    async def shutdown(self) -> None:
        """Abort a run, end extensions and MCP servers, close the session file; later calls just return."""
        if self._shutdown is None:
            self.closed = True
            self._shutdown = asyncio.ensure_future(super().shutdown())
        await asyncio.shield(self._shutdown)

    @_open_only
    def register_virtual_model(self, model: VirtualModel) -> None:
        """A virtual model without an extension (pi's ``modelRuntime.registerVirtualModel``): listed
        with the models, selectable with ``set_model``; its ``route(request)`` picks the physical
        model of each request. The same provider and id again replaces it."""
        self.rt.virtual_models.register(model)

    @_open_only
    def unregister_virtual_model(self, provider: str, model_id: str) -> None:
        self.rt.virtual_models.unregister(provider, model_id)

    def subscribe(self, listener: Listener | Callable[[AgentEvent], object],
                  types: Iterable[str] | None = None) -> Callable[[], None]:
        """Call ``listener`` with every event (``pi_coding_agent.events.AgentEvent``), or those of ``types``."""
        return super().subscribe(cast(Listener, listener), types)

    async def start_run(self, message: AgentMessage) -> JsonObject:
        self._interrupted = False  # an interrupt of a run that ended on its own does not carry over
        with in_sdk_terms():
            if self._faux_script is None:
                return await super().start_run(message)
            from pi_coding_agent.ai.apis.faux import SCRIPT

            token = SCRIPT.set(self._faux_script)  # the run's task starts with a copy of this context
            try:
                return await super().start_run(message)
            finally:
                SCRIPT.reset(token)

    def stream(self, prompt: str, *, images: list[JsonObject] | None = None,
               max_turns: int | None = None, max_cost: float | None = None) -> AsyncIterator[AgentEvent]:
        """Start a run of ``prompt`` and yield its events, the last one its ``agent_settled``.

        A prompt that starts no run (an extension command, ``/mcp``) yields nothing."""
        check_limits(max_turns, max_cost)
        return self._run_events(prompt, images, RunLimits(max_turns, max_cost))

    async def run(self, prompt: str, *, images: list[JsonObject] | None = None, raise_on_error: bool = True,
                  max_turns: int | None = None, max_cost: float | None = None) -> RunResult:
        """Run ``prompt`` to its end and return what it produced.

        A run that ends in a provider error raises ``RunError`` (a ``ProviderError``, with ``.result``), unless
        ``raise_on_error=False``: the result then carries the text in ``error``."""
        check_limits(max_turns, max_cost)
        limits = RunLimits(max_turns, max_cost)
        async for _ in self._run_events(prompt, images, limits):
            pass
        result = limits.record.result(limits.hit)
        if result.error is not None and raise_on_error:
            raise RunError(result)
        return result

    async def _run_events(self, prompt: str, images: list[JsonObject] | None,
                          limits: RunLimits) -> AsyncIterator[AgentEvent]:
        """The events of one run under ``limits`` (counted by their recorder, in force until it settles)."""
        async with self.events(until_settled=True) as events:
            unsubscribe = self.subscribe(limits.record, ("turn_start", "message_end", "agent_settled"))
            self._limits = limits
            try:
                if (await self.prompt(prompt, images))["disposition"] != "started":
                    return
                while batch := await events.batch():
                    for event in batch:
                        yield event
            finally:
                self._limits = RunLimits()
                unsubscribe()


for _name in ("prompt", "steer", "follow_up", "start_run", "compact", "bash", "new_session", "switch_session",
              "fork", "clone", "navigate_tree", "set_model", "cycle_model", "set_session_name", "export_html",
              "set_thinking_level", "events", "stream", "run"):
    setattr(Session, _name, _open_only(getattr(Session, _name)))
