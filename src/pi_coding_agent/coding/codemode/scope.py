"""The host side of the script's globals: tool discovery and ``models.*``.

Each global receives its arguments as a JSON array (spread) and returns a JSON value; raising
rejects the script's promise with the message. Chat models are listed but not run; classifier and
image models run through ``model_calls`` with the session's credentials.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pi_coding_agent.ai.abort import AbortSignal
from pi_coding_agent.ai.types import JsonObject
from pi_coding_agent.coding.codemode.declarations import to_identifier
from pi_coding_agent.coding.codemode.host import CatalogTool, CodemodeHost, Namespace
from pi_coding_agent.coding.codemode.model_calls import MODEL_TYPES, CallRows, ModelCalls, describe_value
from pi_coding_agent.coding.codemode.search import DEFAULT_LIMIT, SearchDocument, rank, schema_text

if TYPE_CHECKING:
    from pi_coding_agent.coding.codemode.sandbox import Executor


def _is_namespace(namespace: Namespace, query: str) -> bool:
    wanted = to_identifier(query)
    return any(name == query or to_identifier(name) == wanted for name in [namespace.name, *namespace.aliases])


def _model_type(value: object) -> str:
    if value in MODEL_TYPES:
        return str(value)
    raise ValueError(f'Unknown model type {_json(value)}. Use "chat", "image", or "classifier".')


def _json(value: object) -> str:
    import json

    return "undefined" if value is None else json.dumps(value)


def _provider(value: object) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise ValueError("provider must be a string")
    return value


def _info(model: JsonObject) -> JsonObject:
    """A catalog entry for scripts; ``headers`` may carry credentials and is dropped."""
    return {k: v for k, v in model.items() if k != "headers"}


class _Globals:
    def __init__(self, host: CodemodeHost, tools: list[CatalogTool], samples: dict[str, str]) -> None:
        self.host = host
        self.tools = tools
        self.samples = samples

    def _entry(self, name: str) -> dict[str, str]:
        return {"name": to_identifier(name), "description": self.samples.get(name, "")}

    async def search_tools(self, args: list[object], _signal: AbortSignal) -> object:
        query, options = ([*args, None, None])[:2]
        if not isinstance(query, str):
            raise ValueError("searchTools() expects a query string")
        options = options if isinstance(options, dict) else {}
        limit = options.get("limit", DEFAULT_LIMIT)
        if limit is None:
            limit = DEFAULT_LIMIT
        if isinstance(limit, bool) or not isinstance(limit, int) or limit <= 0:
            raise ValueError("searchTools() limit must be a positive integer")
        namespace = options.get("namespace")
        if namespace is not None and not isinstance(namespace, str):
            raise ValueError("searchTools() namespace must be a string")
        documents = []
        for tool in self.tools:
            if namespace and (tool.namespace is None or not _is_namespace(tool.namespace, namespace)):
                continue
            parts = [tool.description]
            schema_text(tool.parameters, parts)
            ns = tool.namespace
            ns_text = " ".join([ns.name, ns.description or "", ns.instructions or ""]) if ns else ""
            documents.append(SearchDocument(tool.name, " ".join(p for p in parts if p.strip()), ns_text))
        return [self._entry(name) for name in rank(query, documents, limit)]

    async def describe_tool(self, args: list[object], _signal: AbortSignal) -> object:
        name = args[0] if args else None
        if not isinstance(name, str):
            raise ValueError("describeTool() expects a tool name")
        tool = next((t for t in self.tools if t.name == name or to_identifier(t.name) == name), None)
        return None if tool is None else self.samples.get(tool.name)

    async def describe_namespace(self, args: list[object], _signal: AbortSignal) -> object:
        name = args[0] if args else None
        if not isinstance(name, str):
            raise ValueError("describeNamespace() expects a namespace name")
        found: Namespace | None = None
        names = []
        for tool in self.tools:
            if tool.namespace is None or not _is_namespace(tool.namespace, name):
                continue
            found = found or tool.namespace
            names.append(to_identifier(tool.name))
        if found is None:
            return None
        out: JsonObject = {"name": found.name}
        if found.description:
            out["description"] = found.description
        if found.instructions:
            out["instructions"] = found.instructions
        out["tools"] = names
        return out

    async def models_of_type(self, args: list[object], _signal: AbortSignal) -> object:
        kind, provider = ([*args, None, None])[:2]
        return [_info(m) for m in self.host.models_of_type(_model_type(kind), _provider(provider))]

    async def available_of_type(self, args: list[object], _signal: AbortSignal) -> object:
        kind, provider = ([*args, None, None])[:2]
        return [_info(m) for m in self.host.available_of_type(_model_type(kind), _provider(provider))]

    async def model_of_type(self, args: list[object], _signal: AbortSignal) -> object:
        kind, provider, model_id = ([*args, None, None, None])[:3]
        if not isinstance(provider, str) or not isinstance(model_id, str):
            shown = ", ".join(describe_value(a) for a in args)
            raise ValueError(f"models.getModelOfType(type, provider, id) expects three strings, got ({shown}). The "
                             "provider and the id are separate arguments, for example "
                             'models.getModelOfType("classifier", "typesafe", "jev-latest").')
        found = self.host.find_of_type(_model_type(kind), provider, model_id)
        return None if found is None else _info(found)


def script_globals(host: CodemodeHost, tools: list[CatalogTool], samples: dict[str, str],
                   rows: CallRows) -> dict[str, tuple[bool, Executor]]:
    """Every global the prelude defines besides the built-in ones, all taking spread arguments."""
    g = _Globals(host, tools, samples)
    calls = ModelCalls(host, rows)
    executors: dict[str, Executor] = {
        "searchTools": g.search_tools,
        "describeTool": g.describe_tool,
        "describeNamespace": g.describe_namespace,
        "models.getModelsOfType": g.models_of_type,
        "models.getAvailableOfType": g.available_of_type,
        "models.getModelOfType": g.model_of_type,
        "models.classify": calls.executor("models.classify", "classifier"),
        "models.generateImages": calls.executor("models.generateImages", "image"),
    }
    return {name: (True, run) for name, run in executors.items()}
