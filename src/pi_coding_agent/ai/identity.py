"""How requests identify this program to providers: ``User-Agent`` and provider attribution headers.

pi sends ``User-Agent: pi/<version> (<platform>; <runtime>; <arch>)`` on every provider request and,
while install telemetry is on (``PI_TELEMETRY`` unset or truthy), attribution headers to the providers
that take them: OpenRouter (``HTTP-Referer``, ``X-OpenRouter-Title``, ``X-OpenRouter-Categories``),
NVIDIA NIM (``X-BILLING-INVOKE-ORIGIN``) and OpenCode (``x-opencode-client``). They rank below every
configured header: a model, provider or request header of the same name (any case) replaces them.
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
_FALSY = frozenset({"0", "false", "no", "off", ""})


@cache
def user_agent() -> str:
    runtime = f"python/{platform.python_version()}"
    return f"pi/{PI_VERSION} ({sys.platform}; {runtime}; {platform.machine() or 'unknown'})"


def attribution_enabled() -> bool:
    value = os.environ.get("PI_TELEMETRY")
    return value is None or value.strip().lower() not in _FALSY


def attribution_headers(url: str) -> dict[str, str]:
    host = (urlsplit(url).hostname or "").lower()
    if "openrouter.ai" in url:
        return {"HTTP-Referer": ATTRIBUTION_URL, "X-OpenRouter-Title": ATTRIBUTION_NAME,
                "X-OpenRouter-Categories": ",".join(ATTRIBUTION_CATEGORIES)}
    if host == "integrate.api.nvidia.com":
        return {"X-BILLING-INVOKE-ORIGIN": ATTRIBUTION_NAME.capitalize()}
    if host == "opencode.ai":
        return {"x-opencode-client": ATTRIBUTION_NAME}
    return {}


def with_identity(url: str, headers: Mapping[str, str]) -> dict[str, str]:
    """``headers`` over the identity headers for ``url`` (names compared without case)."""
    identity = {"User-Agent": user_agent(), **(attribution_headers(url) if attribution_enabled() else {})}
    taken = {name.lower() for name in headers}
    return {**{k: v for k, v in identity.items() if k.lower() not in taken}, **headers}
