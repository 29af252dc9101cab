"""Settings that shape each provider request: ``retry.provider.*``, ``httpIdleTimeoutMs``, ``httpProxy``,
``transport``, ``websocketConnectTimeoutMs`` and ``enableInstallTelemetry``.

* ``retry.provider.timeoutMs`` (default: ``httpIdleTimeoutMs``, 300000; 0 disables) is the request's
  idle timeout; ``retry.provider.maxRetries`` (default 0) and ``retry.provider.maxRetryDelayMs``
  (default 60000; 0 = no limit) drive the provider-level retries in ``ai/transport/http.py``.
* ``httpProxy``, read from the agent-directory settings only, becomes ``HTTP_PROXY`` and
  ``HTTPS_PROXY`` unless those are already set (pi's rule), which provider requests (they read them
  for every request) and the tools' child processes then use.
* ``transport`` (default ``auto``) and ``websocketConnectTimeoutMs`` (default 15000) pick and bound
  the WebSocket transport of providers that have one (the ChatGPT Codex backend).
* ``enableInstallTelemetry`` (default on, ``PI_TELEMETRY`` overrides it) switches the provider
  attribution headers (``ai/identity.py``); it is read for every request, as pi does.
"""

from __future__ import annotations

import os
from typing import Any

from pi_coding_agent.ai.identity import install_telemetry_enabled
from pi_coding_agent.coding.resources.settings import Settings

DEFAULT_MAX_RETRY_DELAY_MS = 60000
DEFAULT_WEBSOCKET_CONNECT_TIMEOUT_MS = 15000


def _websocket_connect_timeout_s(settings: Settings) -> float | None:
    """``websocketConnectTimeoutMs`` (default 15000; ``0`` or ``"disabled"`` waits without limit)."""
    timeout = settings.websocket_connect_timeout_ms
    timeout = DEFAULT_WEBSOCKET_CONNECT_TIMEOUT_MS if timeout is None else timeout
    return timeout / 1000 if timeout else None


def apply_http_proxy(settings: Settings) -> None:
    proxy = settings.http_proxy
    if proxy:
        os.environ.setdefault("HTTP_PROXY", proxy)
        os.environ.setdefault("HTTPS_PROXY", proxy)


def provider_request_options(settings: Settings) -> dict[str, Any]:
    """``StreamOptions`` fields from the settings (and the proxy applied to the environment)."""
    apply_http_proxy(settings)
    timeout_ms = settings.provider_timeout_ms
    if timeout_ms is None:
        timeout_ms = settings.http_idle_timeout_ms
    return {
        "attribution": install_telemetry_enabled(settings.enable_install_telemetry),
        "transport": settings.transport,
        "websocket_connect_timeout_s": _websocket_connect_timeout_s(settings),
        "idle_timeout_s": timeout_ms / 1000 if timeout_ms else None,
        "max_retries": settings.provider_max_retries or 0,
        "max_retry_delay_ms": _or_default(settings.provider_max_retry_delay_ms, DEFAULT_MAX_RETRY_DELAY_MS),
    }


def _or_default(value: int | None, default: int) -> int:
    return default if value is None else value
