"""A llama.cpp router server's management endpoints and its models as pi lists them.

The router (``llama serve`` without a model) lists its models at ``GET /models`` with a status
(``loaded``, ``sleeping``, ``unloaded``, ``loading``…), loads and unloads them on
``POST /models/load|unload`` and serves OpenAI chat completions under ``/v1``. Only models a
request can reach are listed: loaded and sleeping ones, and unloaded presets when the router
autoloads.

The calls use the standard library's urllib: the model list is read while the registry is built
(only when the provider is configured), where importing httpx would cost more than the request.
"""

from __future__ import annotations

import asyncio
import itertools
import time
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlencode, urlsplit, urlunsplit

import orjson

from pi_coding_agent.ai.types import JsonObject, Model

PROVIDER_ID = "llama.cpp"
DEFAULT_SERVER_URL = "http://127.0.0.1:9931"
REQUEST_TIMEOUT_S = 15.0
LIST_TIMEOUT_S = 3.0  # the start-up read: a router that is down must not stall start-up for long
DEFAULT_CONTEXT = 128_000


class LlamaError(Exception):
    """The router could not be reached or refused a request (never contains the API key)."""


def normalize_server_url(value: str) -> str:
    """``http(s)://host[:port][/path]`` without a trailing ``/`` or ``/v1``, query or fragment."""
    parts = urlsplit(value.strip())
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise LlamaError("Server URL must use http or https")
    path = parts.path.rstrip("/").removesuffix("/v1").rstrip("/")
    return urlunsplit((parts.scheme, parts.netloc, path, "", ""))


def server_url(credential: Mapping[str, object] | None, env: Mapping[str, str]) -> str | None:
    """The configured router URL: the stored credential's ``env.LLAMA_BASE_URL``, else the environment."""
    stored = (credential or {}).get("env")
    value = stored.get("LLAMA_BASE_URL") if isinstance(stored, dict) else None
    value = value if isinstance(value, str) and value.strip() else env.get("LLAMA_BASE_URL", "").strip()
    try:
        return normalize_server_url(value) if value else None
    except LlamaError:
        return None


def api_key(credential: Mapping[str, object] | None, env: Mapping[str, str]) -> str:
    key = (credential or {}).get("key")
    return key if isinstance(key, str) and key else env.get("LLAMA_API_KEY") or "local"


class LlamaClient:
    """The router's management endpoints (blocking; the async helpers run them in a thread)."""

    def __init__(self, url: str, key: str | None = None) -> None:
        self.url = normalize_server_url(url)
        self.key = key if key and key != "local" else None

    def __repr__(self) -> str:
        return f"LlamaClient({self.url!r})"

    def request(self, path: str, body: object = None, timeout_s: float = REQUEST_TIMEOUT_S) -> object:
        import urllib.error
        import urllib.request

        headers = {"accept": "application/json"}
        if body is not None:
            headers["content-type"] = "application/json"
        if self.key:
            headers["authorization"] = f"Bearer {self.key}"
        data = orjson.dumps(body) if body is not None else None
        req = urllib.request.Request(self.url + path, data=data, headers=headers, method="POST" if data else "GET")
        try:
            with urllib.request.urlopen(req, timeout=timeout_s) as response:
                raw = response.read()
        except urllib.error.HTTPError as exc:
            raise LlamaError(_error_message(exc.read(), f"llama.cpp returned HTTP {exc.code}")) from None
        except (urllib.error.URLError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            raise LlamaError(f"Could not reach llama.cpp server at {self.url}: {reason}") from None
        try:
            return orjson.loads(raw) if raw else None
        except orjson.JSONDecodeError:
            return None

    def list(self, timeout_s: float = REQUEST_TIMEOUT_S) -> list[dict[str, Any]]:
        payload = self.request("/models", timeout_s=timeout_s)
        data = payload.get("data") if isinstance(payload, dict) else None
        if not isinstance(data, list):
            raise LlamaError("llama.cpp returned an invalid model catalog")
        if not all(isinstance(m, dict) and isinstance(m.get("id"), str)
                   and isinstance((m.get("status") or {}).get("value"), str) for m in data):
            raise LlamaError("Server is not running in llama.cpp router mode")
        return data

    def props(self, model: str | None = None, timeout_s: float = REQUEST_TIMEOUT_S) -> dict[str, Any]:
        query = f"?{urlencode({'model': model, 'autoload': 'false'})}" if model else ""
        payload = self.request(f"/props{query}", timeout_s=timeout_s)
        return payload if isinstance(payload, dict) else {}

    def wait_status(self, model: str, wanted: str, timeout_s: float) -> JsonObject | None:
        """Poll the list until ``model`` reaches ``wanted`` (None when it left the list)."""
        deadline = time.monotonic() + timeout_s
        while True:
            entry = next((m for m in self.list() if m["id"] == model), None)
            status = (entry or {}).get("status", {})
            if entry is None or status.get("value") == wanted:
                return entry
            if wanted == "loaded" and status.get("failed"):
                code = status.get("exit_code")
                raise LlamaError("Model failed to load" if code is None else f"Model exited with code {code}")
            if time.monotonic() > deadline:
                raise LlamaError(f"{model} did not become {wanted} within {int(timeout_s)} s")
            time.sleep(0.25 if wanted == "loaded" else 0.1)

    async def load(self, model: str, timeout_s: float = 600.0) -> dict[str, Any] | None:
        await asyncio.to_thread(self.request, "/models/load", {"model": model})
        return await asyncio.to_thread(self.wait_status, model, "loaded", timeout_s)

    async def unload(self, model: str, timeout_s: float = 60.0) -> None:
        await asyncio.to_thread(self.request, "/models/unload", {"model": model})
        await asyncio.to_thread(self.wait_status, model, "unloaded", timeout_s)


def _error_message(raw: bytes, fallback: str) -> str:
    try:
        error = orjson.loads(raw).get("error")
    except (orjson.JSONDecodeError, AttributeError):
        return fallback
    message = error.get("message") if isinstance(error, dict) else None
    return message if isinstance(message, str) and message else fallback


def is_loaded(entry: Mapping[str, Any]) -> bool:
    return entry.get("status", {}).get("value") in ("loaded", "sleeping")


def _selectable(entry: Mapping[str, Any], autoload: bool) -> bool:
    status = entry.get("status", {})
    if status.get("value") in ("loaded", "sleeping"):
        return True
    return autoload and status.get("value") == "unloaded" and not status.get("failed") and entry.get("source") == "preset"


def _is_chat(entry: Mapping[str, Any]) -> bool:
    outputs = (entry.get("architecture") or {}).get("output_modalities") or []
    return "decisions" not in outputs or "text" in outputs


def _context_window(entry: Mapping[str, Any]) -> int:
    meta = entry.get("meta") or {}
    if isinstance(meta.get("n_ctx"), int) and meta["n_ctx"] > 0:
        return int(meta["n_ctx"])
    args = entry.get("status", {}).get("args") or []
    for flag, value in itertools.pairwise(args):
        if flag in ("--ctx-size", "-c", "-ctx") and str(value).isdigit() and int(value) > 0:
            return int(value)
    trained = meta.get("n_ctx_train")
    return int(trained) if isinstance(trained, int) and trained > 0 else DEFAULT_CONTEXT


def to_model(entry: Mapping[str, Any], url: str, chat_template: str | None = None) -> Model:
    """pi's model entry for one router model (OpenAI chat completions under ``<url>/v1``)."""
    context = _context_window(entry)
    reasoning = chat_template is not None and "enable_thinking" in chat_template
    inputs = (entry.get("architecture") or {}).get("input_modalities") or []
    model: JsonObject = {
        "id": entry["id"], "name": entry["id"], "api": "openai-completions", "provider": PROVIDER_ID,
        "baseUrl": f"{url}/v1", "reasoning": reasoning,
    }
    if reasoning:
        model["thinkingLevelMap"] = {"off": "off", "minimal": None, "low": None, "medium": "medium",
                                     "high": None, "xhigh": None}
    compat: JsonObject = {"supportsStore": False, "supportsReasoningEffort": False,
                              "supportsUsageInStreaming": True, "supportsStrictMode": False,
                              "maxTokensField": "max_tokens"}
    if reasoning:
        compat["thinkingFormat"] = "qwen-chat-template"
    model.update({"input": ["text", "image"] if "image" in inputs else ["text"],
                  "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0},
                  "contextWindow": context, "maxTokens": context, "compat": compat})
    return model  # type: ignore[return-value]


def to_classifier(entry: Mapping[str, Any], url: str) -> Model:
    """A router model as a classifier: a decision model answers through the server's own System One
    endpoint (images as a data-URL list), any other through ``llama-cpp-classify`` (text only)."""
    architecture = entry.get("architecture") or {}
    decision = "decisions" in (architecture.get("output_modalities") or [])
    image = decision and "image" in (architecture.get("input_modalities") or [])
    model: JsonObject = {
        "type": "classifier", "id": entry["id"], "name": entry["id"],
        "api": "typesafe-system-one" if decision else "llama-cpp-classify", "provider": PROVIDER_ID,
        "baseUrl": f"{url}/v1" if decision else url, "input": ["text", "image"] if image else ["text"],
        "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0}, "contextWindow": _context_window(entry),
    }
    if image:
        model["compat"] = {"imageInput": "images", "sendImageOptInHeader": False}
    return model  # type: ignore[return-value]


def router_classifiers(client: LlamaClient, timeout_s: float = REQUEST_TIMEOUT_S) -> list[Model]:
    """Every reachable router model as a classifier (pi lists its chat models as classifiers too)."""
    catalog = client.list(timeout_s)
    autoload = _autoload(client, catalog, timeout_s)
    return [to_classifier(entry, client.url) for entry in catalog if _selectable(entry, autoload)]


def _autoload(client: LlamaClient, catalog: list[dict[str, Any]], timeout_s: float) -> bool:
    """Whether unloaded presets are reachable: the router loads them on first use."""
    if not any(m["status"]["value"] == "unloaded" and m.get("source") == "preset" for m in catalog):
        return False
    try:
        return client.props(timeout_s=timeout_s).get("models_autoload") is True
    except LlamaError:
        return False


def router_models(client: LlamaClient, timeout_s: float = REQUEST_TIMEOUT_S,
                  catalog: list[dict[str, Any]] | None = None) -> list[Model]:
    """The models a request can reach now; thinking support is read from loaded models' templates."""
    catalog = client.list(timeout_s) if catalog is None else catalog
    autoload = _autoload(client, catalog, timeout_s)
    models: list[Model] = []
    for entry in catalog:
        if not _selectable(entry, autoload) or not _is_chat(entry):
            continue
        template = None
        if entry["status"]["value"] == "loaded":
            props = client.props(entry["id"], timeout_s)
            template = props.get("chat_template") if isinstance(props.get("chat_template"), str) else None
        models.append(to_model(entry, client.url, template))
    return models
