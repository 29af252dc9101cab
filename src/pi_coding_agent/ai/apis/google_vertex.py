"""Google Vertex AI (``google-vertex``): Gemini's wire format at Vertex's URLs, with Vertex's auth.

The body and the stream are the Gemini adapter's; this module only decides where the request goes
and how it is authorised, the way pi's Google SDK does:

* a Google Cloud API key (``GOOGLE_CLOUD_API_KEY`` or a stored key) is sent as ``x-goog-api-key`` to
  ``https://aiplatform.googleapis.com/v1/publishers/google/models/<id>:streamGenerateContent``;
* otherwise Application Default Credentials (``GOOGLE_APPLICATION_CREDENTIALS`` or gcloud's
  ``application_default_credentials.json``) give a bearer token, and the request names the project
  (``GOOGLE_CLOUD_PROJECT``/``GCLOUD_PROJECT``) and location (``GOOGLE_CLOUD_LOCATION``):
  ``https://<location>-aiplatform.googleapis.com/v1/projects/<p>/locations/<l>/publishers/google/models/<id>``
  (``global`` uses ``aiplatform.googleapis.com``; the multi-regions ``us``/``eu`` use
  ``aiplatform.<l>.rep.googleapis.com``);
* a model ``baseUrl`` without the catalog's ``{location}`` placeholder (a proxy or a models.json
  override) replaces the host and, as in the SDK, drops the project/location prefix.

``google-auth`` is imported on the first ADC request only; its token refresh runs in a thread.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator
from contextlib import aclosing
from typing import TYPE_CHECKING, Any

from pi_coding_agent.ai.apis.google_generative_ai import stream_request
from pi_coding_agent.ai.auth.provider_env import env_value as _env
from pi_coding_agent.ai.stream import ProviderError, StreamOptions
from pi_coding_agent.ai.types import AssistantMessage, Context, JsonObject, Model

if TYPE_CHECKING:
    from google.auth.credentials import Credentials

API_VERSION = "v1"
GLOBAL_HOST = "https://aiplatform.googleapis.com"
MULTI_REGIONS = frozenset({"us", "eu"})
SCOPES = ("https://www.googleapis.com/auth/cloud-platform",)
CREDENTIALS_MARKER = "gcp-vertex-credentials"
_VERSION_SEGMENT = re.compile(r"^v\d+(?:beta\d*)?$")

_credentials: dict[str, Credentials] = {}  # by credentials file path ("" = the default chain)


def explicit_api_key(api_key: str | None) -> str | None:
    """A real API key; the ambient-credential markers (``<authenticated>``) are not keys."""
    key = (api_key or "").strip()
    if not key or key == CREDENTIALS_MARKER or re.fullmatch(r"<[^>]+>", key):
        return None
    return key


def custom_base_url(model: Model) -> str | None:
    base = model["baseUrl"].strip()
    return None if not base or "{location}" in base else base.rstrip("/")


def project_and_location() -> tuple[str, str]:
    project = _env("GOOGLE_CLOUD_PROJECT") or _env("GCLOUD_PROJECT")
    if not project:
        raise ProviderError(
            "Vertex AI requires a project ID. Set GOOGLE_CLOUD_PROJECT/GCLOUD_PROJECT or pass project in options.")
    location = _env("GOOGLE_CLOUD_LOCATION")
    if not location:
        raise ProviderError("Vertex AI requires a location. Set GOOGLE_CLOUD_LOCATION or pass location in options.")
    return project, location


def request_url(model: Model, api_key: str | None) -> str:
    """Where a streamed generation for ``model`` goes (see the module docstring)."""
    resource = f"publishers/google/models/{model['id']}:streamGenerateContent?alt=sse"
    project, location = project_and_location() if api_key is None else ("", "")
    custom = custom_base_url(model)
    if custom is not None:
        has_version = any(_VERSION_SEGMENT.match(part) for part in custom.split("/")[3:])
        return f"{custom}/{resource}" if has_version else f"{custom}/{API_VERSION}/{resource}"
    if api_key is not None:
        return f"{GLOBAL_HOST}/{API_VERSION}/{resource}"
    if location == "global":
        host = GLOBAL_HOST
    elif location in MULTI_REGIONS:
        host = f"https://aiplatform.{location}.rep.googleapis.com"
    else:
        host = f"https://{location}-aiplatform.googleapis.com"
    return f"{host}/{API_VERSION}/projects/{project}/locations/{location}/{resource}"


def _refreshed_credentials() -> Credentials:
    """ADC credentials with a valid token (blocking: run in a thread)."""
    import google.auth
    from google.auth.exceptions import GoogleAuthError

    from pi_coding_agent.ai.auth.google_transport import UrllibRequest

    path = _env("GOOGLE_APPLICATION_CREDENTIALS") or ""
    try:
        credentials = _credentials.get(path)
        if credentials is None:
            credentials, _ = google.auth.default(scopes=list(SCOPES))
            _credentials[path] = credentials
        if not credentials.valid:
            credentials.refresh(UrllibRequest())  # type: ignore[no-untyped-call]
    except GoogleAuthError as exc:
        raise ProviderError(f"Google Cloud credentials: {exc}") from exc
    return credentials


async def auth_headers(api_key: str | None) -> dict[str, str]:
    if api_key is not None:
        return {"x-goog-api-key": api_key}
    credentials = await asyncio.to_thread(_refreshed_credentials)
    headers: dict[str, str] = {}
    credentials.apply(headers)  # type: ignore[no-untyped-call]
    return headers


async def stream(
    model: Model, context: Context, options: StreamOptions, output: AssistantMessage
) -> AsyncIterator[JsonObject]:
    api_key = explicit_api_key(options.api_key)
    url = request_url(model, api_key)
    headers: dict[str, Any] = {**await auth_headers(api_key), **(model.get("headers") or {}), **options.headers}
    async with aclosing(stream_request(url, headers, model, context, options, output, "Google Vertex")) as events:
        async for event in events:
            yield event
