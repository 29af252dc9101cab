"""The one entry point of the LLM layer: ``stream(model, context, options)``.

Each wire API lives in its own module under ``ai.apis`` and is imported the first time a model
of that API is used (vendor SDKs and even httpx cost start-up time we cannot afford).

Adapter contract (``ai.apis.<module>.stream``)::

    async def stream(model, context, options, output: AssistantMessage) -> AsyncIterator[dict]

The adapter mutates ``output`` (the partial assistant message: content blocks, usage token counts,
stopReason "stop"/"length"/"toolUse", responseId) and yields normalized events *without* the
partial message: ``text_start|thinking_start {contentIndex}``, ``text_delta|thinking_delta
{contentIndex, delta}``, ``text_end|thinking_end {contentIndex, content}``, ``toolcall_start
{contentIndex, id, toolName}``, ``toolcall_delta {contentIndex, delta}``, ``toolcall_end
{contentIndex, toolCall}``. It may yield a list of such events instead of one (those one network
read completed: a fast server's burst then costs one step of each layer, not one per event); the
wrapper hands such a list on whole (``batches``) or one event at a time (iteration), all of it, and
an abort stops the next step. It raises ``ProviderError`` (or any exception) on failure; it never
yields ``start``/``done``/``error`` — this wrapper does, and it also owns cancellation, cost and
duration, so every adapter gets them identically.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import time
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from pi_coding_agent.ai.abort import AbortSignal
from pi_coding_agent.ai.auth.provider_env import REQUEST_ENV, env_value
from pi_coding_agent.ai.cost import apply_cost
from pi_coding_agent.ai.pi_error import PiError
from pi_coding_agent.ai.provider_hooks import HeadersHook, ResponseHook, StreamEventHook, hooked_headers
from pi_coding_agent.ai.transform import prepare_messages
from pi_coding_agent.ai.types import (
    AssistantMessage,
    AssistantMessageEvent,
    BlockEvent,
    Context,
    ErrorEvent,
    JsonObject,
    Model,
    StopReason,
    empty_usage,
    now_ms,
)

# api name -> module under pi_coding_agent.ai.apis
API_MODULES: dict[str, str] = {
    "anthropic-messages": "anthropic_messages",
    "openai-completions": "openai_completions",
    "openai-responses": "openai_responses",
    "google-generative-ai": "google_generative_ai",
    "azure-openai-responses": "azure_openai",
    "bedrock-converse-stream": "bedrock_converse",
    "google-vertex": "google_vertex",
    "openai-codex-responses": "openai_codex",
    "pi-messages": "pi_messages",
    "faux": "faux",
}
# (provider, api) pairs whose provider changes the wire details (pi gives providers their own streams)
PROVIDER_API_MODULES: dict[tuple[str, str], str] = {("azure", "openai-completions"): "azure_openai:stream_completions"}

PayloadHook = Callable[[JsonObject], Awaitable[JsonObject | None]]


def default_cache_retention(env: Mapping[str, str] | None = None) -> str:
    """pi's default retention: ``long`` when ``PI_CACHE_RETENTION=long`` (a stored credential's
    ``env`` map first, then the environment), else ``short``."""
    return "long" if env_value("PI_CACHE_RETENTION", env or {}) == "long" else "short"


@dataclass(repr=False, eq=False)  # no repr: it holds the key and auth headers; neither is ever compared
class StreamOptions:
    """Per-request options; every field is optional."""

    api_key: str | None = None
    thinking_level: str = "off"  # "off" = no reasoning requested
    max_tokens: int | None = None
    temperature: float | None = None
    signal: AbortSignal | None = None
    headers: dict[str, str] = field(default_factory=dict)
    session_id: str | None = None
    disable_continuation: bool = False  # a replay (cache warming): no provider thread is continued or moved
    cache_retention: str = ""  # "none" | "short" | "long"; unset: pi's default from ``env`` (below)
    thinking_budgets: dict[str, int] | None = None
    idle_timeout_s: float | None = 300.0
    on_payload: PayloadHook | None = None  # may return a replacement request body
    on_headers: HeadersHook | None = None  # ai/provider_hooks.py: may change the request's headers
    drop_headers: frozenset[str] = frozenset()  # lower-case names on_headers removed
    on_response: ResponseHook | None = None  # status and headers once the response is open
    on_stream_event: StreamEventHook | None = None  # each raw server-sent event, parsed
    max_retries: int = 0  # provider-level retries of a failed request (``retry.provider.maxRetries``)
    max_retry_delay_ms: int = 60000  # longest server-requested wait honoured; 0 = no limit
    env: dict[str, str] = field(default_factory=dict)  # a stored credential's settings, before os.environ (provider_env)
    transport: str = "auto"  # ``transport`` setting: "auto" | "sse" | "websocket" | "websocket-cached"
    websocket_connect_timeout_s: float | None = 15.0  # ``websocketConnectTimeoutMs``; None = no limit
    attribution: bool = True  # install telemetry on: provider attribution headers are sent
    identity_provider: str = ""  # the request's provider (set by ``stream``): pi attributes by it too
    base_url: str | None = None  # the endpoint a credential named for this request (pi's ``auth.baseUrl``)

    def __post_init__(self) -> None:
        if not self.cache_retention:
            self.cache_retention = default_cache_retention(self.env)


class ProviderError(PiError):
    """A provider answered with an error; ``str(err)`` is the errorMessage pi would record."""

    def __init__(self, message: str, status: int | None = None, retry_after_ms: int | None = None):
        super().__init__(message)
        self.status = status
        self.retry_after_ms = retry_after_ms


AdapterItem = BlockEvent | list[BlockEvent]  # one event, or those of one network read
_DELTAS = frozenset({"text_delta", "thinking_delta", "toolcall_delta"})


class Adapter(Protocol):
    def __call__(
        self, model: Model, context: Context, options: StreamOptions, output: AssistantMessage
    ) -> AsyncIterator[AdapterItem]: ...


_adapters: dict[str, Adapter] = {}
_provider_adapters: dict[tuple[str, str], Adapter] = {}  # a provider's own stream (an extension's), by (provider, api)


def set_provider_adapter(provider: str, api: str, adapter: Adapter | None) -> None:
    """Route a provider's requests of ``api`` through ``adapter`` (the contract above); None removes it."""
    if adapter is None:
        _provider_adapters.pop((provider, api), None)
    else:
        _provider_adapters[(provider, api)] = adapter


def load_adapter(api: str, provider: str | None = None) -> Adapter:
    if provider is not None and (own := _provider_adapters.get((provider, api))) is not None:
        return own
    special = PROVIDER_API_MODULES.get((provider, api)) if provider is not None else None
    key = special or api
    adapter = _adapters.get(key)
    if adapter is None:
        module_name, _, function = (special or API_MODULES.get(api) or "").partition(":")
        if not module_name:
            raise ProviderError(f"Unsupported API: {api}")
        module = importlib.import_module(f"pi_coding_agent.ai.apis.{module_name}")
        adapter = getattr(module, function or "stream")
        _adapters[key] = adapter
    return adapter


def new_assistant_message(model: Model) -> AssistantMessage:
    return {
        "role": "assistant",
        "content": [],
        "api": model["api"],
        "provider": model["provider"],
        "model": model["id"],
        "usage": empty_usage(),
        "stopReason": "pending",
        "timestamp": now_ms(),
    }


class _StepGuard:
    """Lets an abort interrupt the adapter only while the consumer's task is inside one of its steps.

    The adapter runs in the task that consumes its events (no second task, no queue: one event-loop
    pass less per delta). An abort during a step cancels that task, so the adapter's pending read
    ends as it would in a task of its own; an abort while the consumer is busy elsewhere (its
    listeners) waits for the next step, which then does not start.
    """

    __slots__ = ("_task", "inside", "interrupted", "remove")

    def __init__(self, signal: AbortSignal | None) -> None:
        self._task = asyncio.current_task()
        self.inside = False
        self.interrupted = False
        self.remove = signal.on_abort(self._interrupt) if signal is not None else None

    def _interrupt(self) -> None:
        if self.inside and self._task is not None and not self.interrupted:
            self.interrupted = True
            self._task.cancel()

    def failure(self, exc: BaseException) -> BaseException:
        """``exc`` from a step, to report as the stream's failure; a cancellation of the task that is
        not this guard's own (or comes on top of it) and interpreter exits are raised instead."""
        if isinstance(exc, asyncio.CancelledError) and self.interrupted:
            if self._take_back() > 0:
                raise exc
            return exc
        if not isinstance(exc, Exception):
            raise exc
        return exc

    def between_steps(self) -> asyncio.CancelledError:
        """The failure of a stream whose abort is seen between steps; a cancellation the adapter
        swallowed in its last step is taken back."""
        if self.interrupted:
            self._take_back()
        return asyncio.CancelledError()

    def _take_back(self) -> int:
        """Undo this guard's cancel; the cancellations of the task still pending (others' own)."""
        self.interrupted = False
        return self._task.uncancel() if self._task is not None else 0


class AssistantStream:
    """Async iterator of normalized events for one request; ``partial`` is the live message.

    Events: ``start``, the adapter's block events, then ``done {reason, message}`` or
    ``error {reason: "error"|"aborted", error: message}``. ``result()`` gives the final message.
    """

    def __init__(self, model: Model, context: Context, options: StreamOptions) -> None:
        self.model = model
        self.context = context
        self.options = options
        self.partial: AssistantMessage = new_assistant_message(model)
        self.retry_after_ms: int | None = None  # a server-requested wait, for the retry policy
        self._initial_usage = self.partial["usage"]
        self._final: AssistantMessage | None = None

    def __aiter__(self) -> AsyncIterator[AssistantMessageEvent]:
        return self._events()

    def batches(self) -> AsyncIterator[list[AssistantMessageEvent]]:
        """The same events in lists, those of one network read together: a consumer that handles
        a burst in one step (the agent loop) saves a generator step per event. An abort stops the
        next list, never the rest of one (its text is in the message already)."""
        return self._batches()

    async def result(self) -> AssistantMessage:
        if self._final is None:
            async for _ in self._batches():
                pass
        assert self._final is not None
        return self._final

    async def _events(self) -> AsyncIterator[AssistantMessageEvent]:
        async with contextlib.aclosing(self._batches()) as batches:
            async for batch in batches:
                for event in batch:
                    yield event

    async def _batches(self) -> AsyncGenerator[list[AssistantMessageEvent], None]:
        msg = self.partial
        signal = self.options.signal
        started = time.monotonic()
        yield [{"type": "start"}]
        if signal is not None and signal.aborted:
            yield [self._finish_failed(msg, "aborted", "This operation was aborted", started)]
            return
        guard = _StepGuard(signal)
        env = self.options.env
        open_blocks: set[int] = set()
        source: AsyncIterator[AdapterItem] | None = None
        item: Any = None  # the adapter's iterator (first step), then one of its items
        try:
            while True:
                if signal is not None and signal.aborted:  # fired between steps
                    failure: BaseException | None = guard.between_steps()
                else:
                    failure = None
                    token = REQUEST_ENV.set(env)  # the adapter's steps see the credential's env, nothing else does
                    guard.inside = True
                    try:
                        item = await (self._open() if source is None else source.__anext__())
                    except StopAsyncIteration:
                        break
                    except BaseException as exc:  # the guard re-raises what is not the stream's to report
                        failure = guard.failure(exc)
                    finally:
                        guard.inside = False
                        REQUEST_ENV.reset(token)
                if failure is not None:
                    yield self._failed(msg, failure, open_blocks, started)
                    return
                if source is None:
                    source = item
                    continue
                batch = item if type(item) is list else [item]
                for event in batch:
                    etype = event["type"]
                    if etype not in _DELTAS:  # a set, not ``endswith``: this runs once per delta
                        if etype.endswith("_start"):
                            open_blocks.add(event["contentIndex"])
                        elif etype.endswith("_end"):
                            open_blocks.discard(event["contentIndex"])
                if batch:
                    yield batch
        finally:
            if guard.remove is not None:
                guard.remove()
            close = getattr(source, "aclose", None)  # an adapter stopped early releases its connection
            if close is not None:
                with contextlib.suppress(Exception):  # its failure to close is not the stream's outcome
                    await close()
        if closing := _close_open_blocks(msg, open_blocks):
            yield closing  # seen before the message is final, as the deltas were
        if msg["stopReason"] == "pending":
            msg["stopReason"] = "stop"
        self._finalize(msg, started)
        self._final = msg
        yield [{"type": "done", "reason": msg["stopReason"], "message": msg}]

    async def _open(self) -> AsyncIterator[AdapterItem]:
        """The adapter's event iterator for this request (its first step: hooks may await)."""
        adapter = load_adapter(self.model["api"], self.model["provider"])
        context: Context = {**self.context, "messages": prepare_messages(self.model, self.context["messages"])}
        options = replace(await self._hooked_options(), identity_provider=self.model["provider"])  # for attribution
        model: Model = {**self.model, "baseUrl": options.base_url} if options.base_url else self.model
        return adapter(model, context, options, self.partial)

    def _failed(self, msg: AssistantMessage, failure: BaseException, open_blocks: set[int],
                started: float) -> list[AssistantMessageEvent]:
        """The end of a stream the adapter failed (or an abort stopped): open blocks closed, then ``error``."""
        if isinstance(failure, ProviderError):
            self.retry_after_ms = failure.retry_after_ms
        signal = self.options.signal
        reason: StopReason
        if isinstance(failure, asyncio.CancelledError) or (signal is not None and signal.aborted):
            reason, text = "aborted", "Request was aborted"
        else:
            reason, text = "error", str(failure) or type(failure).__name__
        return [*_close_open_blocks(msg, open_blocks), self._finish_failed(msg, reason, text, started)]

    async def _hooked_options(self) -> StreamOptions:
        """The options after ``on_headers`` (once per request; retries reuse them)."""
        options = self.options
        if options.on_headers is None:
            return options
        kept, dropped = await hooked_headers(options.on_headers, options.headers)
        return replace(options, headers=kept, drop_headers=options.drop_headers | dropped)

    def _finalize(self, msg: AssistantMessage, started: float) -> None:
        usage = msg["usage"]
        if not usage["totalTokens"]:
            usage["totalTokens"] = usage["input"] + usage["output"] + usage["cacheRead"] + usage["cacheWrite"]
        # adapters either replace the usage dict when a report arrives or fill in its counts
        apply_cost(self.model, usage, reported=usage is not self._initial_usage or usage["totalTokens"] > 0)
        msg["durationMs"] = int((time.monotonic() - started) * 1000)

    def _finish_failed(self, msg: AssistantMessage, reason: StopReason, text: str, started: float) -> ErrorEvent:
        msg["stopReason"] = reason
        msg["errorMessage"] = text
        self._finalize(msg, started)
        self._final = msg
        return {"type": "error", "reason": reason, "error": msg}


def _close_open_blocks(msg: AssistantMessage, open_blocks: set[int]) -> list[AssistantMessageEvent]:
    """End events for blocks still open when a stream stops early (pi emits a partial ``*_end``)."""
    events: list[AssistantMessageEvent] = []
    for index in sorted(open_blocks):
        block = msg["content"][index]
        if block["type"] == "text":
            events.append({"type": "text_end", "contentIndex": index, "content": block["text"]})
        elif block["type"] == "thinking":
            events.append({"type": "thinking_end", "contentIndex": index, "content": block["thinking"]})
        elif block["type"] == "toolCall":
            events.append({"type": "toolcall_end", "contentIndex": index, "toolCall": block})
    open_blocks.clear()
    return events


def stream(model: Model, context: Context, options: StreamOptions | None = None) -> AssistantStream:
    """Start streaming one assistant message (the request is sent when iteration begins)."""
    return AssistantStream(model, context, options or StreamOptions())


async def complete(model: Model, context: Context, options: StreamOptions | None = None) -> AssistantMessage:
    """Run a request to completion and return the final message (compaction, summaries)."""
    return await stream(model, context, options).result()
