"""Ambient cloud credentials: providers usable without a key in pi's sense (Bedrock, Vertex AI).

pi reports such a provider as configured with the placeholder key ``<authenticated>`` when the
environment names a credential source; the adapters then sign or fetch tokens themselves. This module
only looks at the environment and one file's existence, so it is cheap enough for ``--list-models``
and start-up model selection (no AWS or Google library is imported here).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from pi_coding_agent.ai.auth.provider_env import env_value as _get

AUTHENTICATED = "<authenticated>"
AWS_SOURCES = ("AWS_PROFILE", "AWS_BEARER_TOKEN_BEDROCK", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
               "AWS_CONTAINER_CREDENTIALS_FULL_URI", "AWS_WEB_IDENTITY_TOKEN_FILE")
GCLOUD_ADC = Path(".config") / "gcloud" / "application_default_credentials.json"


def _aws_configured(env: Mapping[str, str] | None) -> bool:
    if any(_get(name, env) for name in AWS_SOURCES):
        return True
    return bool(_get("AWS_ACCESS_KEY_ID", env) and _get("AWS_SECRET_ACCESS_KEY", env))


def _vertex_configured(env: Mapping[str, str] | None) -> bool:
    path = _get("GOOGLE_APPLICATION_CREDENTIALS", env)
    has_file = Path(path).exists() if path else (Path.home() / GCLOUD_ADC).exists()
    project = _get("GOOGLE_CLOUD_PROJECT", env) or _get("GCLOUD_PROJECT", env)
    return has_file and bool(project) and bool(_get("GOOGLE_CLOUD_LOCATION", env))


_CHECKS = {"amazon-bedrock": _aws_configured, "google-vertex": _vertex_configured}


def ambient_key(provider: str, env: Mapping[str, str] | None = None) -> str | None:
    """``<authenticated>`` when the environment holds credentials the provider's adapter can use."""
    check = _CHECKS.get(provider)
    return AUTHENTICATED if check is not None and check(env) else None
