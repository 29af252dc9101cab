"""Grammar-constrained tools (``constrainedSampling: {"type": "grammar", "variants": {...}}``).

OpenAI's custom tools take raw text that a Lark or regex grammar constrains, instead of JSON
arguments. A tool declares its grammar variants (``openai_lark`` preferred, else ``openai_regex``)
and a parameter schema with exactly one required string property: the text goes there, so the
agent, the session and the tool see ordinary arguments (``{"input": "..."}``). On a model whose
``compat.supportsOpenAIGrammarTools`` is true (Chat Completions, Responses, Codex, Azure) such a
tool is sent as a custom tool and its calls and results are replayed as custom ones; elsewhere, or
with the switch off, it is an ordinary function tool.

While a custom call streams, its text is reported as the JSON text of those arguments, piece by
piece (``{"input":"`` once, then each piece escaped, then ``"}`` at the close), as pi reports it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import orjson

from pi_coding_agent.ai.stream import ProviderError
from pi_coding_agent.ai.types import Tool


@dataclass(frozen=True)
class Grammar:
    """A tool's constrained-sampling grammar and the one string property its raw text fills."""

    syntax: str  # "lark" or "regex"
    definition: str
    input_property: str  # the one required string property that carries the text


def resolve_grammar(tool: Tool, supported: bool) -> Grammar | None:
    """The grammar ``tool`` is sent with, None for a function tool; a malformed declaration is an error."""
    config: object = tool.get("constrainedSampling")
    if not isinstance(config, dict) or config.get("type") != "grammar" or not supported:
        return None
    variants = config.get("variants") or {}
    usable = [(syntax, text) for syntax, key in (("lark", "openai_lark"), ("regex", "openai_regex"))
              if isinstance(text := variants.get(key), str) and text.strip()]
    if not usable:
        raise ValueError(f'Tool "{tool["name"]}" cannot use grammar constrained sampling: '
                         "no supported grammar variant was provided.")
    try:
        prop = _input_property(tool["parameters"])
    except ValueError as exc:
        raise ValueError(f'Tool "{tool["name"]}" cannot use grammar constrained sampling: {exc}.') from None
    return Grammar(*usable[0], prop)


def _input_property(schema: object) -> str:
    if not isinstance(schema, dict) or schema.get("type") != "object":
        raise ValueError("grammar constrained sampling requires an object parameter schema")
    required = schema.get("required")
    if not isinstance(required, list) or len(required) != 1 or not isinstance(required[0], str):
        raise ValueError("grammar constrained sampling requires exactly one required string property")
    prop = required[0]
    declared = (schema.get("properties") or {}).get(prop)
    if not declared:
        raise ValueError(f"grammar constrained sampling requires a properties entry for {prop}")
    if declared.get("type") != "string":
        raise ValueError(f"grammar constrained sampling property {prop} must have type string")
    return prop


def input_properties(tools: list[Tool], supported: bool) -> dict[str, str]:
    """Tool name -> the property its text goes to, for every tool sent as a custom tool."""
    found: dict[str, str] = {}
    for tool in tools:
        grammar = resolve_grammar(tool, supported)
        if grammar is not None:
            found[tool["name"]] = grammar.input_property
    return found


def call_input(name: str, arguments: object, prop: str) -> str:
    """The raw text of a recorded custom call, for its replay."""
    value = arguments.get(prop) if isinstance(arguments, dict) else None
    if not isinstance(value, str):
        raise ProviderError(f'Grammar tool call "{name}" requires argument "{prop}" to be a string.')
    return value


def _escaped(text: str) -> str:
    """``text`` as the inside of a JSON string literal (the escapes JavaScript's JSON.stringify writes)."""
    try:
        return orjson.dumps(text).decode()[1:-1]
    except orjson.JSONEncodeError:  # a lone surrogate: escaped rather than refused
        return json.dumps(text)[1:-1]


class GrammarInput:
    """The streamed text of one custom call, as the JSON text of its arguments.

    ``initial`` (text an item arrives with) is held back and sent with the first later piece, as pi
    does. ``append`` and ``close`` return the JSON piece to report, or None for nothing.
    """

    def __init__(self, prop: str, initial: str = "") -> None:
        self.prop = prop
        self.text = ""
        self.started = self.closed = False
        self.unsent = self._append(initial) or ""

    @property
    def arguments(self) -> dict[str, str]:
        return {self.prop: self.text}

    def append(self, piece: str) -> str | None:
        return self._send(self._append(piece))

    def close(self, final: str | None = None) -> str | None:
        """End the text; ``final`` is the whole text when the provider sends it (it must extend the streamed one)."""
        if self.closed:
            if final is None or final == self.text:
                return self._send(None)
            raise ProviderError(f'grammar tool input for property "{self.prop}" changed after it was closed')
        if final is not None and not final.startswith(self.text):
            raise ProviderError(f'grammar tool input for property "{self.prop}" changed non-monotonically')
        rest = "" if final is None else final[len(self.text):]
        if final is not None:
            self.text = final
        self.closed = True
        return self._send(f'{self._start()}{_escaped(rest)}"}}')

    def _append(self, piece: str) -> str | None:
        if self.closed:
            raise ProviderError(f'grammar tool input for property "{self.prop}" changed after it was closed')
        if not piece:
            return None
        self.text += piece
        return self._start() + _escaped(piece)

    def _start(self) -> str:
        if self.started:
            return ""
        self.started = True
        return '{"' + _escaped(self.prop) + '":"'

    def _send(self, piece: str | None) -> str | None:
        if not self.unsent:
            return piece
        sent, self.unsent = self.unsent + (piece or ""), ""
        return sent
