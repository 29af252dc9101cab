"""The host side of the script's globals: tool discovery and ``models.*``.

Each global receives its arguments as a JSON array (spread) and returns a JSON value; raising
rejects the script's promise with the message. Chat models are listed but not run; classifier and
image models are outside this implementation, so ``classify()`` and ``generateImages()`` resolve
with ``stopReason: "error"`` and say so.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from pi_coding_agent.ai.abort import AbortSignal
from pi_coding_agent.coding.codemode.declarations import to_identifier
from pi_coding_agent.coding.codemode.host import CatalogTool, CodemodeHost, Namespace
from pi_coding_agent.coding.codemode.search import DEFAULT_LIMIT, SearchDocument, rank, schema_text

if TYPE_CHECKING:
    from pi_coding_agent.coding.codemode.sandbox import Executor

_MODEL_TYPES = ("chat", "image", "classifier")
NOT_SUPPORTED = ("{name}() is not supported by this Python implementation of pi: it has no {kind} models. "
                 "Only chat models are in its catalog.")


class ModelCallRecorder(Protocol):
    def record_model_call(self, name: str, model: str, error: str) -> None: ...


def _is_namespace(namespace: Namespace, query: str) -> bool:
    wanted = to_identifier(query)
    return any(name == query or to_identifier(name) == wanted for name in [namespace.name, *namespace.aliases])


def _describe_value(value: Any) -> str:
    if value is None:
        return "undefined"
    if isinstance(value, list):
        return "an empty array" if not value else "an array"
    if isinstance(value, dict):
        keys = list(value)
        return "{}" if not keys else "{ " + ", ".join(keys[:6]) + (", ..." if len(keys) > 6 else "") + " }"
    return "a string" if isinstance(value, str) else f"a {type(value).__name__}"


def _model_type(value: Any) -> str:
    if value in _MODEL_TYPES:
        return str(value)
    raise ValueError(f'Unknown model type {_json(value)}. Use "chat", "image", or "classifier".')


def _json(value: Any) -> str:
    import json

    return "undefined" if value is None else json.dumps(value)


def _provider(value: Any) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise ValueError("provider must be a string")
    return value


def _info(model: dict[str, Any]) -> dict[str, Any]:
    """A catalog entry for scripts; ``headers`` may carry credentials and is dropped."""
    return {k: v for k, v in model.items() if k != "headers"}


def _of_type(models: list[dict[str, Any]], kind: str, provider: str | None) -> list[dict[str, Any]]:
    return [_info(m) for m in models if m.get("type", "chat") == kind and (provider is None or m["provider"] == provider)]


class _Globals:
    def __init__(self, host: CodemodeHost, tools: list[CatalogTool], samples: dict[str, str],
                 recorder: ModelCallRecorder) -> None:
        self.host = host
        self.tools = tools
        self.samples = samples
        self.recorder = recorder

    def _entry(self, name: str) -> dict[str, str]:
        return {"name": to_identifier(name), "description": self.samples.get(name, "")}

    async def search_tools(self, args: list[Any], _signal: AbortSignal) -> Any:
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

    async def describe_tool(self, args: list[Any], _signal: AbortSignal) -> Any:
        name = args[0] if args else None
        if not isinstance(name, str):
            raise ValueError("describeTool() expects a tool name")
        tool = next((t for t in self.tools if t.name == name or to_identifier(t.name) == name), None)
        return None if tool is None else self.samples.get(tool.name)

    async def describe_namespace(self, args: list[Any], _signal: AbortSignal) -> Any:
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
        out: dict[str, Any] = {"name": found.name}
        if found.description:
            out["description"] = found.description
        if found.instructions:
            out["instructions"] = found.instructions
        out["tools"] = names
        return out

    async def models_of_type(self, args: list[Any], _signal: AbortSignal) -> Any:
        kind, provider = ([*args, None, None])[:2]
        return _of_type(self.host.models(), _model_type(kind), _provider(provider))

    async def available_of_type(self, args: list[Any], _signal: AbortSignal) -> Any:
        kind, provider = ([*args, None, None])[:2]
        return _of_type(self.host.available_models(), _model_type(kind), _provider(provider))

    async def model_of_type(self, args: list[Any], _signal: AbortSignal) -> Any:
        kind, provider, model_id = ([*args, None, None, None])[:3]
        if not isinstance(provider, str) or not isinstance(model_id, str):
            shown = ", ".join(_describe_value(a) for a in args)
            raise ValueError(f"models.getModelOfType(type, provider, id) expects three strings, got ({shown}). The "
                             "provider and the id are separate arguments, for example "
                             'models.getModelOfType("classifier", "typesafe", "jev-latest").')
        matches = [m for m in _of_type(self.host.models(), _model_type(kind), provider) if m["id"] == model_id]
        return matches[0] if matches else None

    def unsupported(self, name: str, kind: str) -> Executor:
        async def run(args: list[Any], _signal: AbortSignal) -> Any:
            model = args[0] if args else None
            if not isinstance(model, dict) or not isinstance(model.get("provider"), str) or not isinstance(
                    model.get("id"), str):
                article = "an" if kind[0] in "aeiou" else "a"
                raise ValueError(f"{name}() expects {article} {kind} model as its first argument, got "
                                 f"{_describe_value(model)}.")
            message = NOT_SUPPORTED.format(name=name, kind=kind)
            self.recorder.record_model_call(name, f"{model['provider']}/{model['id']}", message)
            result: dict[str, Any] = {"provider": model["provider"], "model": model["id"]}
            result |= {"answers": {}} if kind == "classifier" else {"output": []}
            return result | {"stopReason": "error", "errorMessage": message}
        return run


def script_globals(host: CodemodeHost, tools: list[CatalogTool], samples: dict[str, str],
                   recorder: ModelCallRecorder) -> dict[str, tuple[bool, Executor]]:
    """Every global the prelude defines besides the built-in ones, all taking spread arguments."""
    g = _Globals(host, tools, samples, recorder)
    executors: dict[str, Executor] = {
        "searchTools": g.search_tools,
        "describeTool": g.describe_tool,
        "describeNamespace": g.describe_namespace,
        "models.getModelsOfType": g.models_of_type,
        "models.getAvailableOfType": g.available_of_type,
        "models.getModelOfType": g.model_of_type,
        "models.classify": g.unsupported("models.classify", "classifier"),
        "models.generateImages": g.unsupported("models.generateImages", "image"),
    }
    return {name: (True, run) for name, run in executors.items()}
