"""Message threads on the Anthropic Messages API (``compat.supportsMessageThreads``).

With the threads beta the server keeps a conversation: the first request of a session carries
``thread: {"type": "create"}``; once a reply has come back whole, the next request sends only the
messages after it, ``thread: {"type": "continue", "previous_message_id": <reply id>}``, and no
``system`` or ``tools`` (the server keeps the thread's own). A continue is only sent while
everything it builds on is unchanged: the endpoint, the fixed request fields and the messages
the server holds, checked by a fingerprint. The switch is on by default for Anthropic's own
endpoint only: a gateway that drops the unknown ``thread`` field would turn a continue into a
request that has lost the conversation.

A rejected thread request (never a stream that has started) is sent once more in full: as a new
thread when the old one cannot be continued (expired, raced, settings changed), or without
``thread`` when the endpoint cannot use threads, which turns them off for the session. Both leave
an ``anthropic_thread_fallback`` diagnostic on the answer. State is kept per session id, at most
``MAX_SESSIONS`` of them (the least recently updated goes first), and ``forget`` frees it when a
session ends. These are pi 1.6.0's rules.
"""

from __future__ import annotations

import hashlib
from collections.abc import AsyncGenerator, Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any

import orjson

from pi_coding_agent.ai.apis.diagnostics import append_diagnostic
from pi_coding_agent.ai.stream import ProviderError, StreamOptions
from pi_coding_agent.ai.transport.http import sse_batches
from pi_coding_agent.ai.transport.sse import ServerSentEvent
from pi_coding_agent.ai.types import AssistantMessage, JsonObject, Model, now_ms

MESSAGE_THREADS_BETA = "message-threads-2026-08-12"
MAX_SESSIONS = 10_000
# Rejections of a continue that a new thread fixes
NEW_THREAD_ERRORS = frozenset({"thread_not_found", "thread_already_continued", "thread_continue_in_flight",
                               "thread_fingerprint_mismatch"})
UNSUPPORTED_ERROR = "thread_unsupported_request"
OFF = "off"  # the session's endpoint refused threads: its requests go without ``thread``
# Request fields that must stay the same within a thread (a continue leaves system and tools out)
FIXED_FIELDS = ("system", "tools", "thinking", "output_config", "tool_choice", "betas", "fallbacks")
ErrorText = Callable[[int, str], str]


@dataclass(frozen=True, slots=True)
class _Reply:
    """Where a session can continue: after ``prefix_count`` messages that hash to ``prefix_hash``."""

    prefix_count: int
    prefix_hash: str
    reply_id: str


_sessions: dict[str, _Reply | str] = {}  # oldest update first


def enabled(model: Model) -> bool:
    configured = (model.get("compat") or {}).get("supportsMessageThreads")
    return "api.anthropic.com" in model["baseUrl"] if configured is None else bool(configured)


def session_for(model: Model, options: StreamOptions) -> str | None:
    """The session whose requests carry the threads beta (threads need prompt caching on)."""
    if not enabled(model) or options.cache_retention == "none":
        return None
    return options.session_id


def forget(session_id: str | None = None) -> None:
    """Drop a session's thread state (all of it without an id): the session has ended."""
    if session_id is None:
        _sessions.clear()
    else:
        _sessions.pop(session_id, None)


def _remember(session_id: str, value: _Reply | str) -> None:
    _sessions.pop(session_id, None)  # re-inserted at the end: the cap drops the least recently updated
    _sessions[session_id] = value
    if len(_sessions) > MAX_SESSIONS:
        del _sessions[next(iter(_sessions))]


def _normalized(item: object) -> object:
    """A message (or content block) as the API reads it: cache markers, which move between requests,
    left out, and string content as the one text block it stands for. Only what our requests vary
    is rewritten; the rest is passed through uncopied."""
    if not isinstance(item, dict):
        return item
    content = item.get("content")
    if "cache_control" not in item and not isinstance(content, str | list):
        return item
    out = {key: value for key, value in item.items() if key != "cache_control"}
    if isinstance(content, str):
        out["content"] = [{"type": "text", "text": content}]
    elif isinstance(content, list):
        out["content"] = [_normalized(block) for block in content]
    return out


def fingerprint(model: Model, body: Mapping[str, object], betas: str | None, messages: list[object]) -> str:
    """Hash of what a continue builds on: endpoint, model, the fixed fields as sent, the messages."""
    settings = [model["provider"], model["baseUrl"], body.get("model"), betas,
                *(body.get(name) for name in FIXED_FIELDS)]
    data = orjson.dumps([settings, [_normalized(message) for message in messages]],
                        option=orjson.OPT_NON_STR_KEYS)
    return hashlib.sha256(data).hexdigest()  # hardware-accelerated where it matters: ~1 ms per MiB


def _error_code(body_text: str) -> str | None:
    """The ``error.details.error_code`` Anthropic puts in thread rejections."""
    try:
        body = orjson.loads(body_text)
    except orjson.JSONDecodeError:
        return None
    error = body.get("error") if isinstance(body, dict) else None
    details = error.get("details") if isinstance(error, dict) else None
    code = details.get("error_code") if isinstance(details, dict) else None
    return code if isinstance(code, str) else None


class ThreadedRequest:
    """One request of a threads session: the body to send, its fallbacks, and what it leaves behind."""

    def __init__(self, model: Model, session_id: str, body: dict[str, Any], betas: str | None) -> None:
        self.model = model
        self.session_id = session_id
        self.body = body  # the full request: what a fallback sends and what the next continue builds on
        self.betas = betas
        self.thread: JsonObject | None = self._prepare()  # the body sent with ``thread``; None: none

    def _prepare(self) -> JsonObject | None:
        state = _sessions.get(self.session_id)
        if state == OFF:
            return None
        messages = self.body["messages"]
        if isinstance(state, _Reply) and len(messages) > state.prefix_count and \
                fingerprint(self.model, self.body, self.betas, messages[:state.prefix_count]) == state.prefix_hash:
            del _sessions[self.session_id]  # a reply is continued once, also by a concurrent request
            rest = {key: value for key, value in self.body.items() if key not in ("system", "tools")}
            rest["messages"] = messages[state.prefix_count:]
            return {**rest, "thread": {"type": "continue", "previous_message_id": state.reply_id}}
        return self._created()

    def _created(self) -> JsonObject:
        return {**self.body, "thread": {"type": "create"}}

    async def events(self, url: str, headers: dict[str, str], options: StreamOptions, output: AssistantMessage,
                     error_text: ErrorText) -> AsyncGenerator[list[ServerSentEvent], None]:
        """The response's events (a network read's as one list), after at most one resend of a rejected
        thread request."""
        if self.thread is None:
            async for batch in sse_batches(url, headers, self.body, options, error_text):
                yield batch
            return
        bodies: list[str] = []

        def kept(status: int, text: str) -> str:
            bodies[:] = [text]
            return error_text(status, text)

        started = False
        try:
            async for batch in sse_batches(url, headers, self.thread, options, kept):
                started = True
                yield batch
            return
        except ProviderError as error:
            if started or (options.signal is not None and options.signal.aborted):
                raise
            code = _error_code(bodies[0]) if bodies and error.status is not None else None  # the last HTTP error's
            resend = self._fallback(error, code, output)
        async for batch in self._resend(url, headers, options, error_text, resend):
            yield batch

    def _fallback(self, error: ProviderError, code: str | None, output: AssistantMessage) -> str:
        """``"new"`` or ``"off"`` for a rejection about the thread; any other error is raised again."""
        new_thread = code in NEW_THREAD_ERRORS
        # The endpoint cannot thread this request, or does not know the field ("thread: Extra inputs are
        # not permitted", e.g. when a configured anthropic-beta header lacks the threads beta).
        unsupported = code == UNSUPPORTED_ERROR or (code is None and error.status == 400 and "thread" in str(error))
        if not new_thread and not unsupported:
            raise error
        append_diagnostic(output, {"type": "anthropic_thread_fallback", "timestamp": now_ms(),
                                   "error": {"message": str(error)},
                                   "details": {"reason": code if code is not None else str(error.status)}})
        return "new" if new_thread else OFF

    async def _resend(self, url: str, headers: dict[str, str], options: StreamOptions, error_text: ErrorText,
                      resend: str) -> AsyncGenerator[list[ServerSentEvent], None]:
        if resend == "new":
            self.thread = self._created()
            async for batch in sse_batches(url, headers, self.thread, options, error_text):
                yield batch
            return
        self.thread = None
        accepted = False
        async for batch in sse_batches(url, headers, self.body, options, error_text):
            if not accepted:  # the endpoint took the plain request: threads stay off for the session
                accepted = True
                _remember(self.session_id, OFF)
            yield batch
        if not accepted:
            _remember(self.session_id, OFF)

    def record(self, output: AssistantMessage, reply: list[JsonObject]) -> None:
        """Remember where the next request can continue: after ``reply`` (the answer as the next
        request will send it). Only a whole answer of a thread request counts; one written by a
        fallback model is not stored by the server, so it cannot be continued."""
        reply_id = output.get("responseId")
        if self.thread is None or reply_id is None or output.get("responseModel") is not None:
            return
        prefix = [*self.body["messages"], *reply]
        _remember(self.session_id, _Reply(len(prefix), fingerprint(self.model, self.body, self.betas, prefix),
                                          reply_id))


def requests_for(model: Model, session_id: str | None, body: object, headers: Mapping[str, str],
                 options: StreamOptions) -> list[ThreadedRequest]:
    """The request as a threaded one (a list of one), or none when it goes without thread handling:
    no threads session, a replay (``disable_continuation``), or a payload hook that left no messages."""
    if session_id is None or options.disable_continuation or not isinstance(body, dict) \
            or not isinstance(body.get("messages"), list):
        return []
    betas = next((value for name, value in headers.items() if name.lower() == "anthropic-beta"), None)
    return [ThreadedRequest(model, session_id, body, betas)]


def without_payload_hook(options: StreamOptions) -> StreamOptions:
    """The options for sending a body the payload hook has already seen (it sees the full request)."""
    return replace(options, on_payload=None) if options.on_payload is not None else options
