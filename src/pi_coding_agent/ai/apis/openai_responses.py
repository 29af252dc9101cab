"""OpenAI Responses API (``openai-responses``): typed output items streamed as named events.

Reasoning items are kept whole (JSON) in ``thinkingSignature`` and text item ids in
``textSignature`` so a later request can replay them with ``store: false``. Tool call ids are
``<call_id>|<item id>``. The request body is built in ``openai_responses_request``; this module
sends it and reads the events back.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator, Callable, Mapping
from contextlib import aclosing
from typing import Any

import orjson

from pi_coding_agent.ai.apis.accumulate import append_text
from pi_coding_agent.ai.apis.diagnostics import append_transformations
from pi_coding_agent.ai.apis.grammar_tools import GrammarInput
from pi_coding_agent.ai.apis.openai_completions import request_headers
from pi_coding_agent.ai.apis.openai_responses_request import build_request, custom_tools
from pi_coding_agent.ai.apis.partial_json import lenient_loads, parse_arguments
from pi_coding_agent.ai.apis.usage import is_openrouter, responses_usage
from pi_coding_agent.ai.stream import ProviderError, StreamOptions
from pi_coding_agent.ai.transport.http import openai_error_text, sse_batches
from pi_coding_agent.ai.types import AssistantMessage, Context, JsonObject, Model


def _headers(model: Model, options: StreamOptions) -> dict[str, str]:
    """Session-affinity headers in the host's format (``compat.sessionAffinityFormat``)."""
    affinity: dict[str, str] = {}
    if options.session_id and options.cache_retention != "none":
        fmt = (model.get("compat") or {}).get("sessionAffinityFormat") or (
            "openrouter" if is_openrouter(model) else "openai")
        if fmt == "openrouter":
            affinity = {"x-session-id": options.session_id}
        else:
            own = {"session-id": options.session_id} if fmt == "openai" else {}
            affinity = {**own, "x-client-request-id": options.session_id}
    return request_headers(model, options, affinity)


# ---------------------------------------------------------------------------------------------- stream


class _EventReader:
    """Turns Responses events into content blocks and normalized events (``grammar``: see ``Converter``)."""

    def __init__(self, output: AssistantMessage, grammar: Mapping[str, str]) -> None:
        self.output = output
        self.grammar = grammar
        self.blocks: list[Any] = output["content"]
        self.slots: dict[int, int] = {}  # output_index -> content index
        self.raw_args: dict[int, str] = {}  # content index -> argument text so far
        self.custom: dict[int, GrammarInput] = {}  # content index -> the text of a custom tool call
        self.unfinished: set[int] = set()  # tool calls whose output_item.done is missing
        self.reasoning: dict[str, Any] = {}  # reasoning item id -> its thinking block
        self.terminal = False

    def feed(self, event: dict[str, Any]) -> list[JsonObject]:
        kind = event.get("type", "")
        if kind == "response.created":
            self.output["responseId"] = event["response"]["id"]
        elif kind == "response.output_item.added":
            return self._start_item(event["output_index"], event["item"])
        elif kind in ("response.reasoning_summary_text.delta", "response.reasoning_text.delta"):
            return self._delta(event, "thinking", event["delta"])
        elif kind == "response.reasoning_summary_part.done":
            return self._delta(event, "thinking", "\n\n")
        elif kind in ("response.output_text.delta", "response.refusal.delta"):
            return self._delta(event, "text", event["delta"])
        elif kind == "response.function_call_arguments.delta":
            return self._args(event, event["delta"])
        elif kind == "response.function_call_arguments.done":
            return self._final_args(event, event.get("arguments") or "")
        elif kind == "response.custom_tool_call_input.delta":
            return self._custom(event, lambda text: text.append(event.get("delta") or ""))
        elif kind == "response.custom_tool_call_input.done":
            return self._custom(event, lambda text: text.close(event.get("input")))
        elif kind == "response.output_item.done":
            return self._end_item(event["output_index"], event["item"])
        elif kind in ("response.completed", "response.incomplete"):
            self._finish(event["response"])
        elif kind == "response.failed":
            self.terminal = True
            response = event.get("response") or {}
            if response.get("status"):
                self.output["rawStopReason"] = response["status"]
            raise ProviderError(_failure_text(response))
        elif kind == "error":
            raise ProviderError(stream_error_text(event))
        return []

    def _slot(self, event: dict[str, Any], kind: str) -> int | None:
        index = self.slots.get(event.get("output_index", -1))
        return index if index is not None and self.blocks[index]["type"] == kind else None

    def _start_item(self, output_index: int, item: dict[str, Any]) -> list[JsonObject]:
        kind = item.get("type")
        index = len(self.blocks)
        if kind == "reasoning":
            self.blocks.append({"type": "thinking", "thinking": ""})
            event: JsonObject = {"type": "thinking_start", "contentIndex": index}
        elif kind == "message":
            if item.get("phase") == "final_answer":
                self.output["stopReason"] = "stop"
            self.blocks.append({"type": "text", "text": ""})
            event = {"type": "text_start", "contentIndex": index}
        elif kind in ("function_call", "custom_tool_call"):
            call = {"type": "toolCall", "id": f"{item.get('call_id')}|{item.get('id')}", "name": item.get("name", ""),
                    "arguments": {}}
            if kind == "custom_tool_call":
                text = self.custom[index] = GrammarInput(self.grammar.get(call["name"]) or "input",
                                                         item.get("input") or "")
                call["arguments"] = text.arguments
            else:
                self.raw_args[index] = item.get("arguments") or ""
            if item.get("namespace") is not None:
                call["namespace"] = item["namespace"]
            self.blocks.append(call)
            self.unfinished.add(index)
            event = {"type": "toolcall_start", "contentIndex": index, "id": call["id"], "toolName": call["name"]}
        else:
            return []
        self.slots[output_index] = index
        return [event]

    def _delta(self, event: JsonObject, kind: str, piece: str) -> list[JsonObject]:
        index = self._slot(event, kind)
        if index is None:
            return []
        append_text(self.blocks[index], kind, piece)
        return [{"type": f"{kind}_delta", "contentIndex": index, "delta": piece}]

    def _args(self, event: JsonObject, piece: str) -> list[JsonObject]:
        index = self._slot(event, "toolCall")
        if index is None or index in self.custom:
            return []
        append_text(self.raw_args, index, piece)
        return [{"type": "toolcall_delta", "contentIndex": index, "delta": piece}]

    def _final_args(self, event: JsonObject, text: str) -> list[JsonObject]:
        """The complete arguments; only a missing tail is reported as a delta."""
        index = self._slot(event, "toolCall")
        if index is None or index in self.custom:
            return []
        sent = self.raw_args[index]
        self.raw_args[index] = text
        if text.startswith(sent) and len(text) > len(sent):
            return [{"type": "toolcall_delta", "contentIndex": index, "delta": text[len(sent):]}]
        return []

    def _custom(self, event: JsonObject, step: Callable[[GrammarInput], str | None]) -> list[JsonObject]:
        """A custom call's text grew or ended: its arguments follow, the JSON piece is the delta."""
        index = self._slot(event, "toolCall")
        return [] if index is None else self._step_custom(index, step)

    def _step_custom(self, index: int, step: Callable[[GrammarInput], str | None]) -> list[JsonObject]:
        text = self.custom.get(index)
        if text is None:
            return []
        piece = step(text)
        self.blocks[index]["arguments"] = text.arguments
        return [] if piece is None else [{"type": "toolcall_delta", "contentIndex": index, "delta": piece}]

    def _end_item(self, output_index: int, item: dict[str, Any]) -> list[JsonObject]:
        events = [] if output_index in self.slots else self._start_item(output_index, item)
        index = self.slots.pop(output_index, None)
        if index is None:
            return events
        block = self.blocks[index]
        kind = item.get("type")
        if kind == "reasoning" and block["type"] == "thinking":
            summary = "\n\n".join(s.get("text", "") for s in item.get("summary") or [])
            content = "\n\n".join(c.get("text", "") for c in item.get("content") or [])
            block["thinking"] = summary or content or block["thinking"]
            block["thinkingSignature"] = orjson.dumps(item).decode()
            if item.get("id"):
                self.reasoning[item["id"]] = block
            events.append({"type": "thinking_end", "contentIndex": index, "content": block["thinking"]})
        elif kind == "message" and block["type"] == "text":
            if item.get("phase") == "final_answer":
                self.output["stopReason"] = "stop"
            parts = item.get("content") or []
            block["text"] = "".join(p.get("text", "") if p.get("type") == "output_text" else p.get("refusal", "")
                                    for p in parts)
            signature: JsonObject = {"v": 1, "id": item.get("id")}
            if item.get("phase"):
                signature["phase"] = item["phase"]
            block["textSignature"] = orjson.dumps(signature).decode()
            events.append({"type": "text_end", "contentIndex": index, "content": block["text"]})
        elif block["type"] == "toolCall" and kind == ("custom_tool_call" if index in self.custom else "function_call"):
            if kind == "custom_tool_call":
                events += self._step_custom(index, lambda text: text.close(item.get("input")))
            else:
                if item.get("arguments"):
                    self.raw_args[index] = item["arguments"]
                block["arguments"] = parse_arguments(self.raw_args[index])
            if item.get("namespace") is not None:
                block["namespace"] = item["namespace"]
            self.unfinished.discard(index)
            events.append({"type": "toolcall_end", "contentIndex": index, "toolCall": block})
        return events

    def _backfill_reasoning(self, items: list[Any]) -> None:
        """Encrypted reasoning some hosts (Azure) send only in the terminal response's output."""
        for item in items:
            block = self.reasoning.get(str(item.get("id"))) if isinstance(item, dict) else None
            if block is None or item.get("type") != "reasoning" or not item.get("encrypted_content"):
                continue
            stored = orjson.loads(block["thinkingSignature"])
            if not stored.get("encrypted_content"):
                block["thinkingSignature"] = orjson.dumps({**stored, "encrypted_content": item["encrypted_content"]}).decode()

    def _finish(self, response: dict[str, Any]) -> None:
        self.terminal = True
        output = self.output
        self._backfill_reasoning(response.get("output") or [])
        removals = [t for t in response.get("input_transformations") or []
                    if isinstance(t, dict) and t.get("type") == "reasoning" and t.get("action") == "removed"
                    and t.get("reason") != "turn_boundary"]  # turn_boundary: routine, and would grow every turn
        append_transformations(output, "openai_input_transformations", removals, ("type", "id", "action", "reason"))
        if response.get("id"):
            output["responseId"] = response["id"]
        if response.get("usage"):
            output["usage"] = responses_usage(response["usage"])
        status = response.get("status")
        reason = (response.get("incomplete_details") or {}).get("reason")
        if status:
            output["rawStopReason"] = f"{status}.{reason}" if isinstance(reason, str) and reason else status
        output.pop("errorMessage", None)
        if status == "incomplete" and reason == "max_output_tokens":
            output["stopReason"] = "length"
        elif status == "incomplete":
            output["stopReason"] = "error"
            output["errorMessage"] = (f"Response incomplete: {reason}" if reason
                                      else "Response incomplete without a provider reason")
        elif status in ("failed", "cancelled"):
            output["stopReason"] = "error"
        else:
            output["stopReason"] = "stop"
        if output["stopReason"] == "stop" and any(b["type"] == "toolCall" for b in self.blocks):
            output["stopReason"] = "toolUse"


def stream_error_text(event: JsonObject) -> str:
    """The text of an ``error`` event.

    The API nests the details (``{"type":"error","error":{"code":...,"message":...}}``): the text is
    ``<code>: <message>``, as pi words a ``response.failed`` (the whole object when it has no
    message). pi's OpenAI SDK keeps only the message; the code is what tells a quota
    (``insufficient_quota``: not retried) from a rate limit (``rate_limit_exceeded``: retried) when
    the message does not say it. The top-level form (``code``/``message`` beside ``type``) keeps
    pi's ``Error Code <code>: <message>``.
    """
    nested = event.get("error")
    if isinstance(nested, dict):
        message, code = nested.get("message"), nested.get("code")
        if not (isinstance(message, str) and message):
            return orjson.dumps(nested).decode()
        return f"{code}: {message}" if isinstance(code, str) and code and not message.startswith(code) else message
    if nested:
        return orjson.dumps(nested).decode()
    return f"Error Code {event.get('code')}: {event.get('message')}"


def _failure_text(response: dict[str, Any]) -> str:
    error = response.get("error")
    if error:
        return f"{error.get('code') or 'unknown'}: {error.get('message') or 'no message'}"
    reason = (response.get("incomplete_details") or {}).get("reason")
    return f"incomplete: {reason}" if reason else "Unknown error (no error details in response)"


def _error_text(model: Model) -> object:
    prefix = "OpenAI API error" if model["provider"] == "openai" else f"{model['provider']} API error"
    return lambda status, text: openai_error_text(status, text, prefix)


async def stream(
    model: Model, context: Context, options: StreamOptions, output: AssistantMessage
) -> AsyncIterator[list[JsonObject]]:
    url = model["baseUrl"].rstrip("/") + "/responses"
    grammar = custom_tools(model, context)
    body = build_request(model, context, options, grammar)
    record_update_effort(output, body)
    events = stream_response(url, _headers(model, options), body, options, output, _error_text(model),
                             grammar=grammar)
    async with aclosing(events) as items:
        async for item in items:
            yield item


def record_update_effort(output: AssistantMessage, body: dict[str, Any]) -> None:
    """Keep this turn's ``configuration_update`` effort on the answer, so a later request replays it."""
    last = body["input"][-1] if body["input"] else None
    if isinstance(last, dict) and last.get("type") == "configuration_update":
        output["providerThinkingLevel"] = last["reasoning"]["effort"]


async def stream_response(
    url: str, headers: dict[str, str], body: dict[str, Any], options: StreamOptions, output: AssistantMessage,
    error_text: Any, label: str = "OpenAI Responses", grammar: Mapping[str, str] | None = None,
) -> AsyncGenerator[list[JsonObject], None]:
    """POST a Responses body and translate its events (shared with the Azure and Codex backends)."""
    async with aclosing(json_batches(sse_batches(url, headers, body, options, error_text))) as events:
        async for item in translate_events(events, output, label, grammar):
            yield item


async def json_batches(
    batches: AsyncGenerator[list[Any], None],
) -> AsyncGenerator[list[JsonObject], None]:
    """The JSON payloads of each list of server-sent events (``[DONE]`` and empty data skipped); the
    payloads before one that fails to parse still go on first."""
    async with aclosing(batches) as sse:
        async for batch in sse:
            decoded: list[JsonObject] = []
            try:
                for event in batch:
                    if event.data and event.data != "[DONE]":
                        try:
                            decoded.append(orjson.loads(event.data))
                        except orjson.JSONDecodeError as exc:
                            decoded.append(lenient_loads(event.data, exc))
            finally:
                if decoded:
                    yield decoded


async def sse_json(batches: AsyncGenerator[list[Any], None]) -> AsyncGenerator[JsonObject, None]:
    """``json_batches``, one payload at a time (Codex's dialect is rewritten event by event)."""
    async with aclosing(json_batches(batches)) as decoded:
        async for payloads in decoded:
            for payload in payloads:
                yield payload


async def translate_events(
    events: AsyncIterator[JsonObject | list[JsonObject]], output: AssistantMessage, label: str,
    grammar: Mapping[str, str] | None = None,
) -> AsyncGenerator[list[JsonObject], None]:
    """Responses events, from any transport, one at a time or a network read's as a list, as lists
    of normalized events (``output`` filled in; ``grammar``: the custom tools, whose calls carry text)."""
    reader = _EventReader(output, grammar or {})
    async for event in events:
        items: list[JsonObject] = []
        try:
            for one in event if isinstance(event, list) else (event,):
                items += reader.feed(one)
        finally:  # what came before a failing event goes on first, as it would one by one
            if items:
                yield items
    if not reader.terminal:
        raise ProviderError(f"{label} stream ended before a terminal response event")
    if output["stopReason"] == "error":
        raise ProviderError(output.get("errorMessage") or "An unknown error occurred")
    if output["stopReason"] == "toolUse":
        for index in sorted(reader.unfinished):
            call: Any = reader.blocks[index]
            raise ProviderError(
                f"{label} stream completed with an unfinished tool call: {call['name']} ({call['id']})")
