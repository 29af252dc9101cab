"""How requests identify this program to providers: ``User-Agent`` and provider attribution headers.

pi sends ``User-Agent: pi/<version> (<platform>; <runtime>; <arch>)`` on every provider request and,
while install telemetry is on, attribution headers to the providers that take them: OpenRouter
(``HTTP-Referer``, ``X-OpenRouter-Title``, ``X-OpenRouter-Categories``), NVIDIA NIM
(``X-BILLING-INVOKE-ORIGIN``) and OpenCode (``x-opencode-client``, plus ``x-opencode-session`` for a
session's requests). Install telemetry is ``PI_TELEMETRY`` when set (``1``/``true``/``yes`` on,
anything else off), else the ``enableInstallTelemetry`` setting (default on); the settings layer
passes its answer in ``StreamOptions.attribution``. The identity headers rank below every configured
header: a model, provider or request header of the same name (any case) replaces them.
"""

from __future__ import annotations

import os
import platform
import sys
from collections.abc import Mapping
from functools import cache
from urllib.parse import urlsplit

PI_VERSION = "1.6.0"  # the pi release whose protocol and files this program speaks
ATTRIBUTION_NAME = "pi"
ATTRIBUTION_URL = "https://pi.dev"
ATTRIBUTION_CATEGORIES = ("cli-agent",)
_TRUTHY = frozenset({"true", "yes"})


@cache
def user_agent() -> str:
    runtime = f"python/{platform.python_version()}"
    return f"pi/{PI_VERSION} ({sys.platform}; {runtime}; {platform.machine() or 'unknown'})"


def install_telemetry_enabled(setting: object = None) -> bool:
    """``PI_TELEMETRY`` when set, else the ``enableInstallTelemetry`` setting (unset = on)."""
    value = os.environ.get("PI_TELEMETRY")
    if value is not None:
        return value == "1" or value.lower() in _TRUTHY
    return setting is None or bool(setting)


def _host(url: str) -> str:
    return (urlsplit(url).hostname or "").lower()


def _is_opencode(provider: str, url: str) -> bool:
    return provider in ("opencode", "opencode-go") or _host(url) == "opencode.ai"


def attribution_headers(url: str, provider: str = "") -> dict[str, str]:
    """The attribution a request target takes: matched by its provider id or its URL, as pi matches."""
    if provider == "openrouter" or "openrouter.ai" in url:
        return {"HTTP-Referer": ATTRIBUTION_URL, "X-OpenRouter-Title": ATTRIBUTION_NAME,
                "X-OpenRouter-Categories": ",".join(ATTRIBUTION_CATEGORIES)}
    if provider == "nvidia" or _host(url) == "integrate.api.nvidia.com":
        return {"X-BILLING-INVOKE-ORIGIN": ATTRIBUTION_NAME.capitalize()}
    if _is_opencode(provider, url):
        return {"x-opencode-client": ATTRIBUTION_NAME}
    return {}


def opencode_session_headers(provider: str, url: str, session_id: str | None) -> dict[str, str]:
    """OpenCode routes one conversation's requests together by ``x-opencode-session``."""
    return {"x-opencode-session": session_id} if session_id and _is_opencode(provider, url) else {}


def with_identity(url: str, headers: Mapping[str, str], attribution: bool = True,
                  provider: str = "") -> dict[str, str]:
    """``headers`` over the identity headers for ``url`` (names compared without case)."""
    identity = {"User-Agent": user_agent()}
    if attribution and install_telemetry_enabled():
        identity.update(attribution_headers(url, provider))
    taken = {name.lower() for name in headers}
    return {**{k: v for k, v in identity.items() if k.lower() not in taken}, **headers}
