"""The request side of the OpenAI Responses API: a conversation as ``input`` items and the
JSON body of one ``/responses`` request (``openai_responses`` streams it and reads the answer)."""

from __future__ import annotations

import re
from collections.abc import Mapping

import orjson

from pi_coding_agent.ai.apis.grammar_tools import call_input, input_properties
from pi_coding_agent.ai.apis.responses_tools import Declarations, ToolFormat, declarations_for
from pi_coding_agent.ai.apis.sampling import sampling_params
from pi_coding_agent.ai.apis.short_hash import short_hash
from pi_coding_agent.ai.stream import StreamOptions
from pi_coding_agent.ai.thinking import clamp_max_tokens, clamp_thinking_level
from pi_coding_agent.ai.tool_changes import declared_tools
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
