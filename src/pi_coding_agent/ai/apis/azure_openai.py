"""Azure OpenAI: the Responses API (``azure-openai-responses``) and Chat Completions of the ``azure`` provider.

Azure speaks OpenAI's wire formats with its own endpoint, auth and model naming, so both streams here
reuse the OpenAI adapters and only change those:

* base URL: ``AZURE_OPENAI_BASE_URL``, else ``https://<AZURE_OPENAI_RESOURCE_NAME>.openai.azure.com/openai/v1``,
  else the model's ``baseUrl``; an Azure host with no path (or ``/openai``) gets ``/openai/v1``.
* deployment: ``AZURE_OPENAI_DEPLOYMENT_NAME_MAP`` (``model=deployment,...``) maps a catalog id to the
  deployment sent as the body's ``model``; unmapped ids are sent as they are.
* Responses requests go to ``<base>/responses?api-version=<AZURE_OPENAI_API_VERSION or v1>`` with an
  ``api-key`` header (the Azure SDK's auth); Chat Completions go to ``<base>/chat/completions`` with the
  bearer key, as pi sends them through the plain OpenAI client.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from contextlib import aclosing
from dataclasses import replace
from urllib.parse import quote, urlsplit, urlunsplit

from pi_coding_agent.ai.apis import openai_completions, openai_responses, openai_responses_request
from pi_coding_agent.ai.auth.provider_env import env_value as _env
from pi_coding_agent.ai.stream import ProviderError, StreamOptions
from pi_coding_agent.ai.transport.http import openai_error_text
from pi_coding_agent.ai.types import AssistantMessage, Context, JsonObject, Model

DEFAULT_API_VERSION = "v1"
AZURE_HOST_SUFFIXES = (".openai.azure.com", ".cognitiveservices.azure.com", ".ai.azure.com")
MISSING_BASE_URL = ("Azure OpenAI base URL is required. Set AZURE_OPENAI_BASE_URL or AZURE_OPENAI_RESOURCE_NAME, "
                    "or pass azureBaseUrl, azureResourceName, or model.baseUrl.")


def deployment_map(value: str | None) -> dict[str, str]:
    """``model=deployment,...`` as pi reads it: a later entry wins, text after a second ``=`` is dropped."""
    mapping: dict[str, str] = {}
    for entry in (value or "").split(","):
        pieces = entry.strip().split("=")
        if len(pieces) >= 2 and pieces[0] and pieces[1]:
            mapping[pieces[0].strip()] = pieces[1].strip()
    return mapping


def deployment_name(model: Model) -> str:
    """The deployment for a catalog id: ``AZURE_OPENAI_DEPLOYMENT_NAME_MAP`` entries, else the id itself."""
    return deployment_map(_env("AZURE_OPENAI_DEPLOYMENT_NAME_MAP")).get(model["id"]) or model["id"]


def base_url(model: Model) -> str:
    """The resolved ``/openai/v1`` base URL (see the module docstring); raises when none is configured."""
    configured = (_env("AZURE_OPENAI_BASE_URL") or "").strip()
    resource = _env("AZURE_OPENAI_RESOURCE_NAME")
    raw = configured or (f"https://{resource}.openai.azure.com/openai/v1" if resource else "") or model["baseUrl"]
    if not raw:
        raise ProviderError(MISSING_BASE_URL)
    parts = urlsplit(raw.strip().rstrip("/"))
    if not parts.scheme or not parts.netloc:
        raise ProviderError(f"Invalid Azure OpenAI base URL: {raw}")
    path = parts.path.rstrip("/")
    host = (parts.hostname or "").lower()
    if host.endswith(AZURE_HOST_SUFFIXES) and path in ("", "/openai", "/openai/v1/responses"):
        parts = parts._replace(path="/openai/v1", query="")
    return urlunsplit(parts).rstrip("/")


def _with_deployment(model: Model, options: StreamOptions) -> StreamOptions:
    """Send the deployment as the body's ``model`` before any extension hook sees the body (pi's order)."""
    deployment = deployment_name(model)
    if deployment == model["id"]:
        return options
    hook = options.on_payload

    async def rename(body: JsonObject) -> JsonObject | None:
        renamed = {**body, "model": deployment}
        replaced = await hook(renamed) if hook is not None else None
        return renamed if replaced is None else replaced

    return replace(options, on_payload=rename)


def _error_text(status: int, body_text: str) -> str:
    return openai_error_text(status, body_text, "Azure OpenAI API error")


def responses_body(model: Model, context: Context, options: StreamOptions,
                   grammar: Mapping[str, str] | None = None) -> JsonObject:
    """The OpenAI Responses body as pi sends it to Azure: no prompt cache retention or options, strict
    tools unless the model's ``supportsStrictMode`` is false, thinking levels in ``reasoning.effort`` only."""
    body = openai_responses_request.build_request(model, context, options, grammar, azure=True)
    body.pop("prompt_cache_options", None)
    body.pop("prompt_cache_retention", None)
    return body


async def stream(
    model: Model, context: Context, options: StreamOptions, output: AssistantMessage
) -> AsyncIterator[list[JsonObject]]:
    """``azure-openai-responses``."""
    if not options.api_key:
        raise ProviderError(f"No API key for provider: {model['provider']}")
    version = _env("AZURE_OPENAI_API_VERSION") or DEFAULT_API_VERSION
    url = f"{base_url(model)}/responses?api-version={quote(version, safe='')}"
    headers = {"api-key": options.api_key, **(model.get("headers") or {}), **options.headers}
    grammar = openai_responses_request.custom_tools(model, context)
    body = responses_body(model, context, options, grammar)
    events = openai_responses.stream_response(url, headers, body, _with_deployment(model, options), output,
                                              _error_text, "Azure OpenAI Responses", grammar)
    async with aclosing(events) as items:
        async for item in items:
            yield item


def stream_completions(
    model: Model, context: Context, options: StreamOptions, output: AssistantMessage
) -> AsyncIterator[list[JsonObject]]:
    """``openai-completions`` models of the ``azure`` provider: the OpenAI stream at the Azure base URL."""
    azure_model: Model = {**model, "baseUrl": base_url(model)}
    return openai_completions.stream(azure_model, context, _with_deployment(model, options), output)
