"""OpenAI Responses API (``openai-responses``): typed output items streamed as named events.

Reasoning items are kept whole (JSON) in ``thinkingSignature`` and text item ids in
``textSignature`` so a later request can replay them with ``store: false``. Tool call ids are
``<call_id>|<item id>``.
"""

from __future__ import annotations

import re
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Mapping
from contextlib import aclosing
from typing import Any

import orjson

from pi_coding_agent.ai.apis.accumulate import append_text
from pi_coding_agent.ai.apis.diagnostics import append_transformations
from pi_coding_agent.ai.apis.grammar_tools import GrammarInput, call_input, input_properties
from pi_coding_agent.ai.apis.openai_completions import request_headers
from pi_coding_agent.ai.apis.partial_json import lenient_loads, parse_arguments
from pi_coding_agent.ai.apis.responses_tools import Declarations, ToolFormat, declarations_for
from pi_coding_agent.ai.apis.sampling import sampling_params
from pi_coding_agent.ai.apis.short_hash import short_hash
from pi_coding_agent.ai.apis.usage import is_openrouter, responses_usage
from pi_coding_agent.ai.stream import ProviderError, StreamOptions
from pi_coding_agent.ai.thinking import clamp_max_tokens, clamp_thinking_level
from pi_coding_agent.ai.tool_changes import declared_tools
from pi_coding_agent.ai.transport.http import openai_error_text, sse_batches
from pi_coding_agent.ai.types import (
    AssistantMessage,
    Context,
    JsonObject,
    Model,
    TextContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)

MIN_OUTPUT_TOKENS = 16  # the API rejects smaller max_output_tokens
UPDATE_REQUEST_EFFORT = "medium"  # the fixed reasoning.effort while configuration_update items carry the level
CALL_ID_PROVIDERS = frozenset({"openai", "openai-codex", "opencode", "azure"})


def _id_part(part: str) -> str:
    return re.sub(r"[^a-zA-Z0-9_-]", "_", part)[:64].rstrip("_")


# --------------------------------------------------------------------------------------------- request


class Converter:
    """Context -> ``input`` items; remembers the tool call ids it had to rewrite for their results.

    ``declarations`` place the tools (``responses_tools``): top-level, or in the input where the
    transcript changed them. ``effort`` set means thinking levels travel as
    ``configuration_update`` items: one before each earlier answer of this model that recorded its
    level, one at the end for this turn. ``grammar`` names the custom tools (tool -> the property
    holding its text), whose calls and results are replayed as custom ones.
    """

    def __init__(self, model: Model, declarations: Declarations | None = None,
                 effort: str | None = None, grammar: Mapping[str, str] | None = None) -> None:
        self.model = model
        self.renamed: dict[str, str] = {}
        self.declarations = declarations
        self.effort = effort
        self.grammar: Mapping[str, str] = grammar or {}

    def call_id(self, call_id: str, source: AssistantMessage) -> str:
        """Ids of another model's calls are made acceptable here (``fc_`` item ids, safe characters)."""
        if self.model["provider"] not in CALL_ID_PROVIDERS or "|" not in call_id:
            return _id_part(call_id)
        call, item = call_id.split("|", 1)
        foreign = source["provider"] != self.model["provider"] or source["api"] != self.model["api"]
        item = f"fc_{short_hash(item)}" if foreign else _id_part(item)
        if not item.startswith("fc_"):
            item = _id_part(f"fc_{item}")
        return f"{_id_part(call)}|{item}"

    def convert(self, context: Context) -> list[JsonObject]:
        model = self.model
        compat = model.get("compat") or {}
        role = "developer" if model["reasoning"] and compat.get("supportsDeveloperRole") is not False else "system"
        items: list[JsonObject] = []
        declarations = self.declarations
        if declarations is not None:
            items += declarations.leading(context.get("tools") or [])
        if context.get("systemPrompt"):
            items.append({"role": role, "content": context["systemPrompt"]})
        position = 0  # pi's message index: an empty user message or answer does not count
        for msg in context["messages"]:
            kind = msg["role"]
            produced: list[JsonObject]
            if msg["role"] == "user":
                produced = self._user(msg)
            elif msg["role"] == "assistant":
                produced = self._assistant(msg, position)
            elif msg["role"] == "toolResult":
                produced = [self._result(msg)]
            elif declarations is not None:
                produced = declarations.system_message(msg, role, f"system:{position}")
            else:
                produced = [{"role": role, "content": msg["content"]}] if msg.get("content") else []
            items += produced
            position += 1 if produced or kind not in ("user", "assistant") else 0
        if self.effort is not None:
            items.append(_configuration_update(self.effort))
        return items

    def _user(self, msg: UserMessage) -> list[JsonObject]:
        content = msg["content"]
        if isinstance(content, str):
            return [{"role": "user", "content": [{"type": "input_text", "text": content}]}]
        parts: list[JsonObject] = [
            {"type": "input_text", "text": b["text"]} if b["type"] == "text" else
            {"type": "input_image", "detail": "auto", "image_url": f"data:{b['mimeType']};base64,{b['data']}"}
            for b in content
        ]
        return [{"role": "user", "content": parts}] if parts else []

    def _result(self, msg: ToolResultMessage) -> JsonObject:
        call_id = self.renamed.get(msg["toolCallId"], msg["toolCallId"]).split("|", 1)[0]
        kind = "custom_tool_call_output" if msg["toolName"] in self.grammar else "function_call_output"
        return {"type": kind, "call_id": call_id, "output": self._output(msg)}

    def _assistant(self, msg: AssistantMessage, index: int) -> list[JsonObject]:
        model = self.model
        same_api = msg["provider"] == model["provider"] and msg["api"] == model["api"]
        same_model = same_api and msg["model"] == model["id"]
        out: list[JsonObject] = []
        texts = 0
        for block in msg["content"]:
            if block["type"] == "thinking" and block.get("thinkingSignature"):
                try:
                    out.append(orjson.loads(block["thinkingSignature"]))
                except orjson.JSONDecodeError:
                    continue  # not a reasoning item (e.g. written by a Chat Completions model)
            elif block["type"] == "text":
                out.append(self._text_item(block, index, texts))
                texts += 1
            elif block["type"] == "toolCall":
                out.append(self._call_item(block, msg, same_api, same_model))
        if out and self.effort is not None and same_model and msg.get("providerThinkingLevel") is not None:
            out.insert(0, _configuration_update(msg["providerThinkingLevel"]))
        return out

    def _call_item(self, block: ToolCall, msg: AssistantMessage, same_api: bool, same_model: bool) -> JsonObject:
        """A ``function_call``, or a ``custom_tool_call`` for a custom tool; an item id of the wrong
        kind (``fc_`` / ``ctc_``) or from another model of this API is left out."""
        call_id = block["id"]
        if not same_model:
            call_id = self.call_id(call_id, msg)
            if call_id != block["id"]:
                self.renamed[block["id"]] = call_id
        call, _, item_id = call_id.partition("|")
        prop = self.grammar.get(block["name"])
        item: JsonObject = {"type": "function_call" if prop is None else "custom_tool_call"}
        if item_id.startswith("fc_" if prop is None else "ctc_") and (same_model or not same_api):
            item["id"] = item_id
        item.update(call_id=call, name=block["name"])
        if prop is None:
            item["arguments"] = orjson.dumps(block["arguments"]).decode()
        else:
            item["input"] = call_input(block["name"], block["arguments"], prop)
        if same_model and block.get("namespace") is not None:
            item["namespace"] = block["namespace"]
        return item

    @staticmethod
    def _text_item(block: TextContent, index: int, nth: int) -> JsonObject:
        signature = _parse_text_signature(block.get("textSignature"))
        item_id = signature.get("id") or (f"msg_pi_{index}" if nth == 0 else f"msg_pi_{index}_{nth}")
        if len(item_id) > 64:
            item_id = f"msg_{short_hash(item_id)}"
        item: JsonObject = {"type": "message", "role": "assistant",
                "content": [{"type": "output_text", "text": block["text"], "annotations": []}],
                "status": "completed", "id": item_id}
        if signature.get("phase"):
            item["phase"] = signature["phase"]
        return item

    def _output(self, msg: ToolResultMessage) -> str | list[JsonObject]:
        text = "\n".join(b["text"] for b in msg["content"] if b["type"] == "text")
        images = [b for b in msg["content"] if b["type"] == "image"]
        if not images or "image" not in self.model["input"]:
            return text if text.strip() else "(see attached image)" if images else "(no tool output)"
        parts: list[JsonObject] = [{"type": "input_text", "text": text}] if text.strip() else []
        parts += [{"type": "input_image", "detail": "auto", "image_url": f"data:{b['mimeType']};base64,{b['data']}"}
                  for b in images]
        return parts


def _configuration_update(effort: str) -> JsonObject:
    return {"type": "configuration_update", "reasoning": {"effort": effort}}


def _parse_text_signature(signature: str | None) -> dict[str, str]:
    """``{"v":1,"id":...,"phase"?}`` as written by ``_end_item``, or a bare legacy item id."""
    if not signature:
        return {}
    if signature.startswith("{"):
        try:
            parsed = orjson.loads(signature)
        except orjson.JSONDecodeError:
            parsed = None
        if isinstance(parsed, dict) and parsed.get("v") == 1 and isinstance(parsed.get("id"), str):
            phase = parsed.get("phase")
            return {"id": parsed["id"], **({"phase": phase} if phase in ("commentary", "final_answer") else {})}
    return {"id": signature}


def convert_input(model: Model, context: Context, grammar: Mapping[str, str] | None = None) -> list[JsonObject]:
    """The Responses ``input`` items of a conversation."""
    return Converter(model, grammar=grammar).convert(context)


def custom_tools(model: Model, context: Context) -> dict[str, str]:
    """The tools sent as custom (grammar) tools: name -> the property holding the text."""
    supported = bool((model.get("compat") or {}).get("supportsOpenAIGrammarTools"))
    return input_properties(declared_tools(context), supported)


def chatgpt_sign_in(model: Model, api_key: str | None) -> bool:
    """A credential other than an ``sk-`` key sent to OpenAI itself is a ChatGPT sign-in token."""
    return (model["provider"] == "openai" and model["baseUrl"] == "https://api.openai.com/v1"
            and api_key is not None and not api_key.startswith("sk-"))


def update_effort(model: Model, level: str, api_key: str | None) -> str | None:
    """The effort sent in ``configuration_update`` items (``compat.supportsMidConvoEffort``), else None."""
    if not (model.get("compat") or {}).get("supportsMidConvoEffort") or level == "off":
        return None
    if chatgpt_sign_in(model, api_key):  # that sign-in refuses configuration_update items
        return None
    return (model.get("thinkingLevelMap") or {}).get(level) or level


def build_request(model: Model, context: Context, options: StreamOptions, grammar: Mapping[str, str] | None = None,
                  azure: bool = False) -> JsonObject:
    """The JSON body of one ``/responses`` request (``grammar``: ``custom_tools``, computed when not given).

    ``azure``: pi's Azure dialect, where a model that does not set ``supportsStrictMode`` supports it,
    thinking levels never travel as ``configuration_update`` items, and the cache key and output cap
    are sent whatever the cache retention and ``supportsMaxOutputTokens`` say."""
    compat = model.get("compat") or {}
    retention = options.cache_retention
    explicit_cache = bool(compat.get("supportsExplicitPromptCacheMode"))
    long = retention == "long" and compat.get("supportsLongCacheRetention", True) is not False
    level = clamp_thinking_level(model, options.thinking_level) if options.thinking_level != "off" else "off"
    effort = update_effort(model, level, options.api_key) if model["reasoning"] and not azure else None
    strict = compat.get("supportsStrictMode")
    tool_format = ToolFormat(azure if strict is None else bool(strict), False,
                             bool(compat.get("supportsOpenAIGrammarTools")))
    declarations = declarations_for(model, context, tool_format)
    grammar = custom_tools(model, context) if grammar is None else grammar
    converter = Converter(model, declarations, effort, grammar)
    body: JsonObject = {"model": model["id"], "input": converter.convert(context), "stream": True}
    if options.session_id and (retention != "none" or azure) and compat.get("promptCacheKeyMode") != "disabled":
        body["prompt_cache_key"] = options.session_id[:64]
    if long and not explicit_cache:
        body["prompt_cache_retention"] = "24h"
    if explicit_cache and (retention == "none" or long):
        body["prompt_cache_options"] = {"mode": "explicit"} if retention == "none" else {"ttl": "30m"}
    body["store"] = False
    if azure or compat.get("supportsMaxOutputTokens", True) is not False:  # fitted into the context window, as pi does
        body["max_output_tokens"] = max(clamp_max_tokens(model, context, options.max_tokens), MIN_OUTPUT_TOKENS)
    if options.temperature is not None:
        body["temperature"] = options.temperature
    if declarations.top_level:
        body["tools"] = tool_format.convert(declarations.top_level)
    if model["reasoning"]:
        _reasoning_fields(body, model, level, effort)
    body.update(sampling_params(model, level))  # last: configured sampling wins
    return body


def _reasoning_fields(body: JsonObject, model: Model, level: str, effort: str | None) -> None:
    mapping = model.get("thinkingLevelMap") or {}
    if level != "off":
        chosen = UPDATE_REQUEST_EFFORT if effort is not None else mapping.get(level) or level
        body["reasoning"] = {"effort": chosen, "summary": "auto"}
        body["include"] = ["reasoning.encrypted_content"]
    elif model["provider"] != "github-copilot" and mapping.get("off", "none") is not None:
        body["reasoning"] = {"effort": mapping.get("off") or "none"}
    if model["provider"] == "xai":
        body["include"] = ["reasoning.encrypted_content"]


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
