"""OpenAI Chat Completions (``openai-completions``) and the many servers that copy it.

Differences between hosts are switches in ``model["compat"]`` (``ai.apis.openai_compat``);
unset switches are detected from the provider name and base URL (OpenAI, OpenRouter, Groq,
Cerebras, xAI, Mistral, DeepSeek, z.ai, Together, Moonshot and local servers such as Ollama, vLLM,
llama.cpp and LM Studio). The output cap is fitted into the context window, as pi does.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Mapping
from contextlib import aclosing
from typing import Any

import orjson

from pi_coding_agent.ai import tool_changes
from pi_coding_agent.ai.apis.accumulate import append_text
from pi_coding_agent.ai.apis.grammar_tools import (
    GrammarInput,
    call_input,
    input_properties,
    resolve_grammar,
)
from pi_coding_agent.ai.apis.openai_compat import (
    ChatCompat,
    affinity_headers,
    apply_cache_control,
    apply_thinking,
    cache_control,
    prompt_cache_fields,
    resolve_compat,
    routing_fields,
)
from pi_coding_agent.ai.apis.partial_json import lenient_loads, parse_arguments
from pi_coding_agent.ai.apis.reasoning_details import (
    is_reasoning_detail,
    merge_reasoning_details,
    replayed_reasoning_details,
)
from pi_coding_agent.ai.apis.sampling import sampling_params
from pi_coding_agent.ai.apis.short_hash import short_hash
from pi_coding_agent.ai.apis.strict_schema import declared_schema
from pi_coding_agent.ai.apis.usage import apply_reported_cost, chat_usage, is_openrouter
from pi_coding_agent.ai.stream import ProviderError, StreamOptions
from pi_coding_agent.ai.thinking import clamp_max_tokens
from pi_coding_agent.ai.transform import tool_result_runs
from pi_coding_agent.ai.transport.http import merge_headers, sse_batches
from pi_coding_agent.ai.types import (
    AssistantMessage,
    Context,
    JsonObject,
    Model,
    Tool,
    ToolCall,
    ToolResultMessage,
    UserContent,
)

REASONING_FIELDS = ("reasoning_content", "reasoning", "reasoning_text")
STOP_REASONS = {"stop": "stop", "end": "stop", "length": "length", "tool_calls": "toolUse", "function_call": "toolUse"}
BRIDGE_TEXT = "I have processed the tool results."
_DELTA_TYPES = {"text": "text_delta", "thinking": "thinking_delta"}


# --------------------------------------------------------------------------------------------- request


def normalize_tool_call_id(model: Model, call_id: str) -> str:
    """Chat Completions ids: Responses-style ``call|item`` ids are folded to 40 safe characters."""
    if "|" in call_id:
        call, item = (re.sub(r"[^a-zA-Z0-9_-]", "_", part) for part in call_id.split("|", 1))
        combined = f"{call}_{item}" if item else call
        if len(combined) <= 40:
            return combined
        digest = short_hash(call_id)[:8]
        return f"{call[: 40 - len(digest) - 1]}_{digest}"
    return call_id[:40] if model["provider"] == "openai" else call_id


def _user_content(content: str | list[UserContent]) -> str | list[JsonObject] | None:
    if isinstance(content, str):
        return content
    parts: list[JsonObject] = []
    for block in content:
        if block["type"] == "text" and block["text"]:
            parts.append({"type": "text", "text": block["text"]})
        elif block["type"] == "image":
            parts.append({"type": "image_url", "image_url": {"url": f"data:{block['mimeType']};base64,{block['data']}"}})
    return parts or None


def _call(model: Model, call: ToolCall, grammar: Mapping[str, str]) -> JsonObject:
    """A recorded tool call as the host takes it back: a custom call carries its text."""
    call_id = normalize_tool_call_id(model, call["id"])
    prop = grammar.get(call["name"])
    if prop is not None:
        return {"id": call_id, "type": "custom",
                "custom": {"name": call["name"], "input": call_input(call["name"], call["arguments"], prop)}}
    return {"id": call_id, "type": "function",
            "function": {"name": call["name"], "arguments": orjson.dumps(call["arguments"]).decode()}}


def _assistant_message(model: Model, msg: AssistantMessage, compat: ChatCompat,
                       grammar: Mapping[str, str]) -> JsonObject | None:
    needs_string = compat["requiresAssistantAfterToolResult"] or compat["requiresNonNullAssistantContent"]
    out: JsonObject = {"role": "assistant", "content": "" if needs_string else None}
    text = "".join(b["text"] for b in msg["content"] if b["type"] == "text" and b["text"].strip())
    details = replayed_reasoning_details([b for b in msg["content"] if b["type"] == "thinking"])
    thinking = [b for b in msg["content"] if b["type"] == "thinking" and b["thinking"].strip()]
    calls = [b for b in msg["content"] if b["type"] == "toolCall"]
    if thinking and compat["requiresThinkingAsText"]:
        joined = "\n\n".join(b["thinking"] for b in thinking)
        out["content"] = [{"type": "text", "text": joined}] + ([{"type": "text", "text": text}] if text else [])
    else:
        if text:
            out["content"] = text
        field = thinking[0].get("thinkingSignature") if thinking and details is None else None
        if field in REASONING_FIELDS:
            out[field] = "\n".join(b["thinking"] for b in thinking)
    if calls:
        out["tool_calls"] = [_call(model, c, grammar) for c in calls]
    if details is not None:
        out["reasoning_details"] = details
    if compat["requiresReasoningContentOnAssistantMessages"] and model["reasoning"] and "reasoning_content" not in out:
        out["reasoning_content"] = ""
    return out if out["content"] or calls else None


def _tool_messages(model: Model, results: list[ToolResultMessage], compat: ChatCompat) -> list[JsonObject]:
    """One ``tool`` message per result; their images follow in one user message (tools carry text only)."""
    out: list[JsonObject] = []
    images: list[JsonObject] = []
    for result in results:
        text = "\n".join(b["text"] for b in result["content"] if b["type"] == "text")
        result_images = [b for b in result["content"] if b["type"] == "image"]
        if not text.strip():
            text = "(see attached image)" if result_images else "(no tool output)"
        message: JsonObject = {"role": "tool", "content": text, "tool_call_id": normalize_tool_call_id(model, result["toolCallId"])}
        if compat["requiresToolResultName"] and result.get("toolName"):
            message["name"] = result["toolName"]
        out.append(message)
        if "image" in model["input"]:
            images += [{"type": "image_url", "image_url": {"url": f"data:{b['mimeType']};base64,{b['data']}"}}
                       for b in result_images]
    if images:
        if compat["requiresAssistantAfterToolResult"]:
            out.append({"role": "assistant", "content": BRIDGE_TEXT})
        out.append({"role": "user", "content": [{"type": "text", "text": "Attached image(s) from tool result:"}, *images]})
    return out


def tool_support(compat: ChatCompat) -> str:
    """``"additions"`` when tools added mid-conversation are declared in place (``ai/tool_changes.py``)."""
    both = compat.get("supportsMidConvoSystemMessages") and compat.get("supportsMidConvoToolAdditions")
    return "additions" if both else "none"


def convert_messages(model: Model, context: Context, compat: ChatCompat,
                     grammar: Mapping[str, str] | None = None) -> list[JsonObject]:
    """Chat messages; a later system message past ``folded`` declares its added tools in a
    ``{"role": "system", "tools": [...]}`` message before its text. ``grammar``: the custom tools
    (``custom_tools``), whose calls are replayed as custom ones."""
    instruction_role = "developer" if model["reasoning"] and compat["supportsDeveloperRole"] else "system"
    folded = tool_changes.plan(context, tool_support(compat))[1]
    system_index = 0  # the leading prompt is 0
    out: list[JsonObject] = []
    if context.get("systemPrompt"):
        out.append({"role": instruction_role, "content": context["systemPrompt"]})
    for msg in tool_result_runs(context["messages"]):
        if isinstance(msg, list):
            out += _tool_messages(model, msg, compat)
            continue
        if msg["role"] == "user":
            if compat["requiresAssistantAfterToolResult"] and out and out[-1]["role"] == "tool":
                out.append({"role": "assistant", "content": BRIDGE_TEXT})
            content = _user_content(msg["content"])
            if content is not None:
                out.append({"role": "user", "content": content})
        elif msg["role"] == "assistant":
            converted = _assistant_message(model, msg, compat, grammar or {})
            if converted is not None:
                out.append(converted)
        elif msg["role"] == "system":
            system_index += 1
            if system_index >= folded and msg.get("toolsAdded"):
                out.append({"role": "system", "tools": _tools(msg["toolsAdded"], compat)})
            if msg.get("content"):
                out.append({"role": instruction_role, "content": msg["content"]})
    return out


def custom_tools(context: Context, compat: ChatCompat) -> dict[str, str]:
    """The tools sent as custom (grammar) tools: name -> the property holding the text."""
    return input_properties(tool_changes.declared_tools(context), bool(compat.get("supportsOpenAIGrammarTools")))


def _tools(tools: list[Tool], compat: ChatCompat) -> list[JsonObject]:
    """Function tools, or custom ones for tools with a grammar where the host takes them; one asking for
    JSON-schema constrained sampling goes strict where the host can."""
    supports = compat["supportsStrictMode"] is not False
    out: list[JsonObject] = []
    for tool in tools:
        grammar = resolve_grammar(tool, bool(compat.get("supportsOpenAIGrammarTools")))
        if grammar is not None:
            out.append({"type": "custom", "custom": {
                "name": tool["name"], "description": tool["description"],
                "format": {"type": "grammar", "grammar": {"syntax": grammar.syntax, "definition": grammar.definition}}}})
            continue
        parameters, strict = declared_schema(tool, supports)
        function: JsonObject = {"name": tool["name"], "description": tool["description"], "parameters": parameters}
        if supports:
            function["strict"] = strict
        out.append({"type": "function", "function": function})
    return out


def build_request(model: Model, context: Context, options: StreamOptions,
                  grammar: Mapping[str, str] | None = None) -> JsonObject:
    """The JSON body of one ``/chat/completions`` request."""
    compat = resolve_compat(model)
    messages = convert_messages(model, context, compat, custom_tools(context, compat) if grammar is None else grammar)
    body: JsonObject = {"model": model["id"], "messages": messages, "stream": True,
                            **prompt_cache_fields(model, options, compat)}
    if compat["supportsUsageInStreaming"] is not False:
        body["stream_options"] = {"include_usage": True}
    if compat["supportsStore"]:
        body["store"] = False
    max_field = "max_tokens" if compat["maxTokensField"] == "max_tokens" else "max_completion_tokens"
    body[max_field] = clamp_max_tokens(model, context, options.max_tokens)  # input + output fit the window
    if options.temperature is not None:
        body["temperature"] = options.temperature
    tools = _tools(tool_changes.plan(context, tool_support(compat))[0], compat)
    if tools:
        body["tools"] = tools
        if compat["zaiToolStream"]:
            body["tool_stream"] = True
    elif compat["requiresToolsWithToolHistory"] and any(m["role"] == "toolResult" for m in context["messages"]):
        body["tools"] = []
    control = cache_control(compat, options.cache_retention)
    if control:
        apply_cache_control(messages, tools, control)  # (an empty list marks nothing, as no tools)
    if compat.get("vllmPriority") is not None:
        body["priority"] = compat["vllmPriority"]
    apply_thinking(body, model, options, compat)
    body.update(routing_fields(model))
    body.update(sampling_params(model, options.thinking_level))  # last: configured sampling wins
    return body


def request_headers(model: Model, options: StreamOptions, affinity: dict[str, str] | None = None) -> dict[str, str]:
    """Bearer auth, the model's headers, session-affinity headers, then the caller's (which win)."""
    extra = {**(model.get("headers") or {}), **options.headers}
    has_auth = any(k.lower() == "authorization" and v.strip() for k, v in extra.items())
    if not options.api_key and not has_auth:
        raise ProviderError(f"No API key for provider: {model['provider']}")
    auth = {"authorization": f"Bearer {options.api_key}"} if options.api_key else {}
    return merge_headers(auth, model.get("headers") or {}, affinity or {}, options.headers)


# ---------------------------------------------------------------------------------------------- stream


def chunk_error_text(error: object) -> str:
    """An error object inside the stream: its message (or the object), plus OpenRouter's upstream detail."""
    message = error.get("message") if isinstance(error, dict) else None
    text = str(message) if message else orjson.dumps(error).decode()
    raw = ((error.get("metadata") or {}) if isinstance(error, dict) else {}).get("raw")
    return f"{text}\n{raw}" if raw and str(raw) not in text else text


def first_choice(choices: object) -> dict[str, Any] | None:
    """Choice 0 of a chunk: hosts asked for several choices stream each under its ``index``."""
    for choice in choices if isinstance(choices, list) else []:
        if isinstance(choice, dict) and choice.get("index", 0) in (0, None):
            return choice
    return None


class _ChunkReader:
    """Turns chunks into content blocks and events; every block ends only when the stream does."""

    def __init__(self, model: Model, output: AssistantMessage, grammar: Mapping[str, str]) -> None:
        self.model = model
        self.output = output
        self.grammar = grammar  # the custom tools (``custom_tools``)
        self.blocks: list[Any] = output["content"]
        self.text: Any = None
        self.text_index = -1  # the text block's position in ``blocks`` (blocks are only appended)
        self.model_id = model["id"]
        self.thinking: Any = None
        self.thinking_index = -1
        # stream index (or id) -> the call's position in ``blocks``: by position, never by equality,
        # since two calls with empty (or equal) ids start as equal dicts
        self.calls: dict[object, int] = {}
        self.raw_args: dict[int, str] = {}  # content index -> argument text so far
        self.custom: dict[int, GrammarInput] = {}  # content index -> the text of a custom call
        self.reasoning_details: list[JsonObject] | None = None  # OpenRouter's replay data
        self.finished = False

    def feed(self, chunk: dict[str, Any]) -> list[JsonObject]:
        """The events of one chunk. Runs once per streamed delta: ``in`` before ``get`` for keys
        a chunk rarely has, and the usual single choice 0 taken without ``first_choice``."""
        if "error" in chunk and chunk["error"]:  # noqa: RUF019  # a gateway relays a failure mid-stream
            raise ProviderError(chunk_error_text(chunk["error"]))
        output = self.output
        if "responseId" not in output and chunk.get("id"):
            output["responseId"] = chunk["id"]
        if "responseModel" not in output:
            served = chunk.get("model")
            if served != self.model_id and isinstance(served, str) and served:
                output["responseModel"] = served
        choices = chunk.get("choices")
        choice = choices[0] if type(choices) is list and len(choices) == 1 else None  # the usual chunk
        if type(choice) is not dict or choice.get("index", 0) not in (0, None):
            choice = first_choice(choices)
        usage = chunk.get("usage")
        if not usage:  # Moonshot reports streamed usage inside the choice, Groq under x_groq
            usage = choice.get("usage") if choice else None
            if not usage and "x_groq" in chunk:
                usage = (chunk["x_groq"] or {}).get("usage")
        if usage:
            output["usage"] = chat_usage(usage)
            if is_openrouter(self.model):
                apply_reported_cost(output["usage"], usage)
        if not choice:
            return []
        if choice.get("finish_reason"):
            self._finish_reason(choice["finish_reason"])
        delta = choice.get("delta") or {}
        content = delta.get("content")
        if len(delta) <= 2 and isinstance(content, str) and (len(delta) == 1 or "role" in delta):
            if not content:  # the common delta: text only
                return []
            if (block := self.text) is None:
                return self._append("text", content)
            append_text(block, "text", content)
            return [{"type": "text_delta", "contentIndex": self.text_index, "delta": content}]
        events: list[JsonObject] = []
        field = next((f for f in REASONING_FIELDS if isinstance(delta.get(f), str) and delta[f]), None)
        if field:
            events += self._append("thinking", delta[field], field)
        if isinstance(delta.get("reasoning_details"), list):
            events += self._reasoning_details(delta["reasoning_details"])
        events += self._content(content)
        if isinstance(delta.get("refusal"), str) and delta["refusal"]:  # shown as text, as the Responses API does
            events += self._append("text", delta["refusal"])
        for call in delta.get("tool_calls") or []:
            events += self._tool_call(call)
        return events

    def _content(self, content: object) -> list[JsonObject]:
        """``delta.content`` as a string, or as a list of parts (Mistral: thinking parts, then text parts)."""
        if isinstance(content, str):
            return self._append("text", content) if content else []
        events: list[JsonObject] = []
        for part in content if isinstance(content, list) else []:
            kind = part.get("type") if isinstance(part, dict) else None
            if kind == "text" and isinstance(part.get("text"), str) and part["text"]:
                events += self._append("text", part["text"])
            elif kind == "thinking":
                inner = part.get("thinking")
                pieces = [inner] if isinstance(inner, str) else [
                    p.get("text") for p in inner or [] if isinstance(p, dict) and p.get("type") == "text"]
                events += [ev for piece in pieces if isinstance(piece, str) and piece
                           for ev in self._append("thinking", piece)]
        return events

    def _reasoning_details(self, details: list[Any]) -> list[JsonObject]:
        """Collect OpenRouter's ``reasoning_details`` (kept in the thinking block's signature for replay)."""
        valid = [d for d in details if is_reasoning_detail(d)]
        if not valid:
            return []
        events = [] if self.thinking is not None else self._open("thinking", "")
        self.reasoning_details = merge_reasoning_details(self.reasoning_details or [], valid)
        return events

    def _open(self, kind: str, signature: str | None) -> list[JsonObject]:
        block: JsonObject = {"type": kind, kind: ""}
        if signature is not None:
            block["thinkingSignature"] = signature
        self.blocks.append(block)
        setattr(self, kind, block)
        setattr(self, f"{kind}_index", len(self.blocks) - 1)
        return [{"type": f"{kind}_start", "contentIndex": len(self.blocks) - 1}]

    def _append(self, kind: str, piece: str, signature: str | None = None) -> list[JsonObject]:
        block = self.thinking if kind == "thinking" else self.text
        events = [] if block is not None else self._open(kind, signature)
        if block is None:
            block = self.blocks[-1]
        append_text(block, kind, piece)
        index = self.thinking_index if kind == "thinking" else self.text_index
        events.append({"type": _DELTA_TYPES[kind], "contentIndex": index, "delta": piece})
        return events

    def _tool_call(self, call: dict[str, Any]) -> list[JsonObject]:
        """A function call's argument text, or a custom call's raw text (``custom`` without ``function``)."""
        events: list[JsonObject] = []
        key = call.get("index", call.get("id"))
        index = self.calls.get(key)
        function = call.get("function") or {}
        custom = call.get("custom") if isinstance(call.get("custom"), dict) and not call.get("function") else None
        name = function.get("name") or (custom or {}).get("name") or ""
        if index is None:
            block: Any = {"type": "toolCall", "id": call.get("id") or "", "name": name, "arguments": {}}
            index = self.calls[key] = len(self.blocks)
            self.blocks.append(block)
            if custom is None:
                self.raw_args[index] = ""
            events.append({"type": "toolcall_start", "contentIndex": index, "id": block["id"], "toolName": name})
        else:
            block = self.blocks[index]
        if not block["id"] and call.get("id"):
            block["id"] = call["id"]
        if not block["name"] and name:
            block["name"] = name
        if custom is not None and index not in self.custom:  # a custom call, even after a function-shaped start
            self.custom[index] = GrammarInput(self.grammar.get(block["name"]) or "input")
            block["arguments"] = self.custom[index].arguments
        text = self.custom.get(index)
        if text is None:
            piece = function.get("arguments") or ""
            append_text(self.raw_args, index, piece)
        else:
            piece = (text.append(custom["input"]) or "") if custom and custom.get("input") else ""
            block["arguments"] = text.arguments
        events.append({"type": "toolcall_delta", "contentIndex": index, "delta": piece})
        return events

    def _finish_reason(self, reason: str) -> None:
        self.finished = True
        self.output["rawStopReason"] = reason
        stop = STOP_REASONS.get(reason)
        if stop is None:
            self.output["stopReason"] = "error"
            self.output["errorMessage"] = f"Provider finish_reason: {reason}"
        else:
            self.output["stopReason"] = stop  # type: ignore[typeddict-item]

    def end_blocks(self) -> list[JsonObject]:
        events: list[JsonObject] = []
        for index, block in enumerate(self.blocks):
            kind = block["type"]
            if kind == "toolCall":
                if (text := self.custom.get(index)) is not None:
                    closing = text.close()
                    if closing is not None:
                        events.append({"type": "toolcall_delta", "contentIndex": index, "delta": closing})
                else:
                    block["arguments"] = parse_arguments(self.raw_args.get(index, ""))
                events.append({"type": "toolcall_end", "contentIndex": index, "toolCall": block})
            else:
                if kind == "thinking" and self.reasoning_details is not None:
                    block["thinkingSignature"] = orjson.dumps(self.reasoning_details).decode()
                events.append({"type": f"{kind}_end", "contentIndex": index, "content": block[kind]})
        return events


async def stream(
    model: Model, context: Context, options: StreamOptions, output: AssistantMessage
) -> AsyncIterator[list[JsonObject]]:
    compat = resolve_compat(model)
    session = options.session_id if options.cache_retention != "none" else None
    headers = request_headers(model, options, affinity_headers(compat, session))
    grammar = custom_tools(context, compat)
    body = build_request(model, context, options, grammar)
    url = model["baseUrl"].rstrip("/") + "/chat/completions"
    reader = _ChunkReader(model, output, grammar)
    async with aclosing(sse_batches(url, headers, body, options)) as batches:
        async for events in batches:  # the events of one network read: their deltas go on as one list
            items: list[JsonObject] = []
            try:
                for event in events:
                    if event.data != "[DONE]" and event.data:
                        try:
                            chunk = orjson.loads(event.data)
                        except orjson.JSONDecodeError as exc:
                            chunk = lenient_loads(event.data, exc)
                        items += reader.feed(chunk)
            finally:  # what came before a failing chunk goes on first, as it would one by one
                if items:
                    yield items
    yield reader.end_blocks()
    if not reader.finished and not compat["supportsFinishReason"]:
        output["stopReason"] = "toolUse" if reader.calls else "stop"
    if output["stopReason"] == "error":
        raise ProviderError(output.get("errorMessage") or "Provider returned an error stop reason")
    if output["stopReason"] == "pending" or (compat["supportsFinishReason"] and not reader.finished):
        raise ProviderError("Stream ended without finish_reason")
