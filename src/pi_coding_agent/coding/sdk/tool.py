"""Tools from plain Python functions: ``@tool`` (schema from type hints) and ``FunctionTool`` (schema by hand).

``@tool`` reads the function's signature: its type hints become the JSON schema the model sees
(through a pydantic model built over the parameters, so ``int``, ``Literal``, ``list[...]``,
``Optional``, pydantic models and ``Annotated[..., Field(description=...)]`` all work), its
docstring the description (an ``Args:`` section describes each parameter). Arguments are
validated by that model and arrive as keyword arguments; a validation error goes back to the model
as the tool's error result. pydantic is imported when the first tool is made, never at start-up.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, overload

from pi_coding_agent.agent.awaitables import maybe_await
from pi_coding_agent.agent.tool import AgentTool, ToolResult, UpdateCallback, text_result
from pi_coding_agent.ai.abort import AbortSignal
from pi_coding_agent.ai.types import JsonObject

if TYPE_CHECKING:
    from pydantic import BaseModel

_SECTION = re.compile(r"^(?:Args|Arguments|Parameters):[ \t]*$", re.M)
_ARG_LINE = re.compile(r"^\s*(\*{0,2}\w+)\s*(?:\([^)]*\))?\s*:\s*(.*)$")


def as_tool_result(value: object) -> ToolResult:
    """A function's return value as the model reads it: text as is, data as JSON, a ``ToolResult`` unchanged."""
    if isinstance(value, ToolResult):
        return value
    if isinstance(value, str):
        return text_result(value)
    if value is None:
        return text_result("")
    from pydantic_core import to_json

    return text_result(to_json(value).decode())


@dataclass
class FunctionTool(AgentTool):
    """An ``AgentTool`` around one function ``fn(params) -> str | data | ToolResult`` (plain or async)
    with a hand-written JSON schema; ``@tool`` derives the schema instead."""

    name: str
    description: str
    fn: Callable[[JsonObject], object]
    parameters: JsonObject = field(default_factory=lambda: {"type": "object", "properties": {}})
    label: str = ""
    execution_mode: Literal["parallel", "sequential"] = "parallel"
    constrained_sampling: JsonObject | Literal[False] | None = None  # a strict schema or a grammar

    async def execute(self, tool_call_id: str, params: JsonObject, signal: AbortSignal,
                      on_update: UpdateCallback) -> ToolResult:
        return as_tool_result(await maybe_await(self.fn(params)))


class PythonTool(AgentTool):
    """What ``@tool`` makes: an ``AgentTool`` that still calls like the function it wraps."""

    def __init__(self, fn: Callable[..., object], name: str | None = None, description: str | None = None,
                 execution_mode: Literal["parallel", "sequential"] = "parallel") -> None:
        summary, arg_docs = _parse_docstring(inspect.getdoc(fn) or "")
        self.fn = fn
        self.name = name or fn.__name__
        self.description = description or summary or self.name
        self.label = self.name
        self.execution_mode = execution_mode
        self.arguments = _arguments_model(fn, arg_docs)
        self.parameters = _inline_refs(self.arguments.model_json_schema())
        self.__doc__ = fn.__doc__

    def __call__(self, *args: object, **kwargs: object) -> object:
        return self.fn(*args, **kwargs)

    def __repr__(self) -> str:
        return f"<tool {self.name}>"

    async def execute(self, tool_call_id: str, params: JsonObject, signal: AbortSignal,
                      on_update: UpdateCallback) -> ToolResult:
        from pydantic import ValidationError

        try:
            validated = self.arguments.model_validate(params)
        except ValidationError as exc:
            return text_result(f"Invalid arguments for {self.name}: {_brief(exc)}", is_error=True)
        kwargs = {name: getattr(validated, name) for name in type(validated).model_fields}
        return as_tool_result(await maybe_await(self.fn(**kwargs)))


@overload
def tool(fn: Callable[..., object], /) -> PythonTool: ...


@overload
def tool(*, name: str | None = None, description: str | None = None,
         execution_mode: Literal["parallel", "sequential"] = "parallel") -> Callable[[Callable[..., object]], PythonTool]: ...


def tool(fn: Callable[..., object] | None = None, /, *, name: str | None = None, description: str | None = None,
         execution_mode: Literal["parallel", "sequential"] = "parallel",
         ) -> PythonTool | Callable[[Callable[..., object]], PythonTool]:
    """Make a tool of a sync or async function: ``@tool`` or ``@tool(name=..., description=...)``."""
    if fn is not None:
        return PythonTool(fn)
    return lambda f: PythonTool(f, name, description, execution_mode)


def _parse_docstring(doc: str) -> tuple[str, dict[str, str]]:
    """(description, {parameter: its text}) from a Google-style docstring and its ``Args:`` section."""
    match = _SECTION.search(doc)
    if match is None:
        return doc.strip(), {}
    section = doc[match.end():]
    end = re.search(r"^\S", section, re.M)  # the next unindented line ends the section
    return doc[: match.start()].strip(), _arg_texts(section[: end.start()] if end else section)


def _arg_texts(section: str) -> dict[str, str]:
    """``name (type): text`` lines at the section's indent start a parameter; deeper lines continue it."""
    lines = [line for line in section.splitlines() if line.strip()]
    indent = min((len(line) - len(line.lstrip()) for line in lines), default=0)
    texts: dict[str, str] = {}
    current = None
    for line in lines:
        match = _ARG_LINE.match(line)
        if match and len(line) - len(line.lstrip()) == indent:
            current = match.group(1).lstrip("*")
            texts[current] = match.group(2).strip()
        elif current is not None:
            texts[current] += " " + line.strip()
    return texts


def _arguments_model(fn: Callable[..., object], arg_docs: dict[str, str]) -> type[BaseModel]:
    """A pydantic model with one field per parameter of ``fn`` (``*args``/``**kwargs`` are refused)."""
    from typing import Annotated, get_type_hints

    from pydantic import Field, create_model

    hints = get_type_hints(fn, include_extras=True)
    fields: dict[str, Any] = {}
    for param in inspect.signature(fn).parameters.values():
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            raise TypeError(f"@tool {fn.__name__}: *{param.name} cannot be described to a model")
        annotation = hints.get(param.name, object)
        if param.name in arg_docs:
            annotation = Annotated[annotation, Field(description=arg_docs[param.name])]
        fields[param.name] = (annotation, ... if param.default is param.empty else param.default)
    return create_model(f"{fn.__name__}_arguments", **fields)


def _inline_refs(schema: dict[str, Any]) -> JsonObject:
    """The schema without pydantic's titles, and without ``$defs``/``$ref`` (not every provider
    resolves them) unless a model refers to itself: such a schema keeps its references."""
    defs = schema.pop("$defs", {})

    def resolve(node: object, inside: tuple[str, ...]) -> Any:
        if isinstance(node, dict):
            if "$ref" in node:
                name = node["$ref"].rsplit("/", 1)[-1]
                if name in inside:
                    raise RecursionError(name)
                return resolve(defs[name], (*inside, name))
            return {k: resolve(v, inside) for k, v in node.items() if k != "title" or not isinstance(v, str)}
        if isinstance(node, list):
            return [resolve(item, inside) for item in node]
        return node

    try:
        resolved: JsonObject = resolve(schema, ())
    except RecursionError:
        return {**schema, "$defs": defs}
    return resolved


def _brief(error: Any) -> str:
    """A pydantic ``ValidationError`` in one line per problem: where, and what is wrong."""
    return "; ".join(f"{'.'.join(str(p) for p in e['loc']) or 'arguments'}: {e['msg']}" for e in error.errors())
