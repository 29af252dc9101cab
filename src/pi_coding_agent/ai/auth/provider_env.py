"""Provider-scoped settings of one request: a stored credential's ``env`` map, then ``os.environ``.

pi hands the ``env`` object of an auth.json ``api_key`` credential to the provider as its request
options' ``env`` (for example ``AWS_REGION`` for Bedrock, ``GOOGLE_CLOUD_PROJECT`` for Vertex AI,
``AZURE_OPENAI_RESOURCE_NAME``), read before the process environment. Here ``StreamOptions.env``
carries the map; the stream wrapper sets it in a context variable around each of the adapter's
steps, for the adapters' lookups, so it never enters ``os.environ``, and so never reaches a tool's
process, a listener or another request.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from contextvars import ContextVar

# Anthropic workload identity federation is configured when all three are set (``ai/auth/anthropic_federation.py``);
# named here so that checking them does not load that module
FEDERATION_ENV = ("ANTHROPIC_FEDERATION_RULE_ID", "ANTHROPIC_ORGANIZATION_ID", "ANTHROPIC_IDENTITY_TOKEN_FILE")
REQUEST_ENV: ContextVar[Mapping[str, str] | None] = ContextVar("pi_request_env", default=None)


def env_value(name: str, env: Mapping[str, str] | None = None) -> str | None:
    """``name`` from ``env`` (default: the current request's map), else the environment; empty is unset."""
    scoped = REQUEST_ENV.get() if env is None else env
    return (scoped or {}).get(name) or os.environ.get(name) or None
