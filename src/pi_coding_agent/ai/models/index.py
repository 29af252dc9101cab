"""The built-in catalog's index: providers, their APIs, base URLs and key variables (``ai/models/data/index.json``).

A leaf module: key lookup (``keys``) and the model registry (``models``) both read it, and neither
needs the other to do so.
"""

from __future__ import annotations

import os
import re
from functools import cache
from pathlib import Path
from typing import Any

import orjson

from pi_coding_agent.ai.types import JsonObject

DATA_DIR = Path(__file__).parent / "data"


@cache
def catalog_index() -> dict[str, Any]:
    """``{"source", "providers": {id: {api, baseUrl, envVars, defaultModel?, keyless?}}, "defaultModelOrder"}``."""
    index: JsonObject = orjson.loads((DATA_DIR / "index.json").read_bytes())
    return index


def provider_env_vars(provider: str) -> list[str]:
    """Environment variables that may hold the provider's API key, in lookup order."""
    names: list[str] = catalog_index()["providers"].get(provider, {}).get("envVars", [])
    return names


def expand_placeholders(url: str) -> str:
    """``{CLOUDFLARE_ACCOUNT_ID}``-style parts of catalog URLs come from the environment when set."""
    if "{" not in url:
        return url
    return re.sub(r"\{([A-Z][A-Z0-9_]*)\}", lambda m: os.environ.get(m.group(1), m.group(0)), url)
