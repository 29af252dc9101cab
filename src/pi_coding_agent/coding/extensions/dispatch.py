"""Handler lookup and the one way handlers are run: a chain folding each result into a state.

Handlers run in extension load order, then registration order. Every pattern of docs/extensions.md (Events)
is a chain: *notify* ignores the results, a *transform* (``context``, ``before_provider_request``,
``tool_result``, ``message_end``, ``input``, the system prompt of ``before_agent_start``, boundary
drafts) lets each handler see the state the previous ones left, and a *gate* (the first
``cancel``/``block``/``handled`` wins) stops at the first result it accepts. A raising handler becomes
an ``extension_error`` session event and the chain goes on with the state it had, except in the
events that fail closed (``tool_call``, ``user_bash``), where it ends the chain as a refusal.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, NoReturn, TypeVar, cast

from pi_coding_agent.agent.awaitables import maybe_await
from pi_coding_agent.ai.types import JsonObject
from pi_coding_agent.coding.extensions.context import ExtensionContext
from pi_coding_agent.coding.extensions.registry import Binding, Extension, Handler

if TYPE_CHECKING:
    from pi_coding_agent.coding.extensions.host import ExtensionHost, RunnerHandle
    from pi_coding_agent.coding.runtime import SessionRuntime

S = TypeVar("S")
FAILED = object()  # the result of a handler that raised (already reported)
Fail = Callable[[Extension, Exception], NoReturn]  # how a fail-closed event ends when a handler raises


def _never(_: object) -> bool:
    return False


class Dispatcher:
    """The loaded extensions of one session and the running of their handlers."""

    def __init__(self, session: ExtensionHost, runtime: SessionRuntime) -> None:
        self.rt = runtime
        self.session = session
        self.extensions: list[Extension] = []
        self.binding = Binding()
        self._tasks: set[asyncio.Task[object]] = set()

    @property
    def handle(self) -> RunnerHandle:
        """This runner as ``pi`` and ``ctx`` see it: ``ExtensionRunner``, built on this class, satisfies it."""
        return cast("RunnerHandle", self)

    @property
    def context(self) -> ExtensionContext:
        return ExtensionContext(self.handle, self.binding)

    def spawn(self, coroutine: Awaitable[object]) -> None:
        task = asyncio.ensure_future(coroutine)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def has_handlers(self, name: str) -> bool:
        for ext in self.extensions:  # noqa: SIM110 - no generator: asked once per streamed delta
            if ext.handlers.get(name):
                return True
        return False

    def _handlers(self, name: str) -> list[tuple[Extension, Handler]]:
        return [(ext, h) for ext in self.extensions for h in list(ext.handlers.get(name, ()))]

    def report_error(self, extension_path: str, event: str, exc: BaseException) -> None:
        self.session.emit({"type": "extension_error", "extensionPath": extension_path, "event": event,
                           "error": str(exc) or type(exc).__name__})

    async def _call(self, ext: Extension, handler: Handler, event: dict[str, Any], fail: Fail | None) -> object:
        try:
            return await maybe_await(handler(event, self.context))
        except Exception as exc:
            if fail is not None:
                fail(ext, exc)
            self.report_error(ext.path, event["type"], exc)
            return FAILED

    async def chain(self, kind: str, state: S, event: Callable[[S], dict[str, Any]],
                    step: Callable[[S, object, Extension], S], until: Callable[[S], bool] = _never,
                    fail: Fail | None = None) -> S:
        """Run the handlers of ``kind``: each gets ``event(state)``, ``step`` folds its result (``FAILED``
        when it raised) into the state, and the chain stops early once ``until(state)`` holds. With
        ``fail`` the event fails closed: a raising handler ends the chain through ``fail``, which raises."""
        for ext, handler in self._handlers(kind):
            state = step(state, await self._call(ext, handler, event(state), fail), ext)
            if until(state):
                break
        return state

    async def notify(self, event: dict[str, Any]) -> None:
        await self.chain(event["type"], None, lambda _: event, lambda state, _result, _ext: state)

    async def first(self, event: dict[str, Any], accept: Callable[[JsonObject], object],
                    fail: Fail | None = None) -> dict[str, Any] | None:
        """Gate: the first dict result ``accept`` takes, or None."""
        def step(found: JsonObject | None, result: object, _: Extension) -> JsonObject | None:
            return result if isinstance(result, dict) and accept(result) else found

        return await self.chain(event["type"], None, lambda _: event, step, lambda found: found is not None, fail)


def propagate(_: Extension, exc: Exception) -> NoReturn:
    """``fail`` of an event whose caller turns the handler's own exception into the refusal."""
    raise exc
