"""Regenerate the built-in model catalog in ``src/pi_coding_agent/ai/models/data/`` from pi-ai 1.6.0's data.

The reference package ships its catalog as plain JSON facts (ids, prices, limits). This script reads
them, keeps the chat models whose wire API we implement, and writes our own layout:

* ``<provider>.json``: ``{"api", "baseUrl", "models": [...]}``; a model omits ``api``/``baseUrl``
  when they equal the provider's, and never carries ``provider`` (the file name says it).
* ``nonchat.json``: ``{"classifier"|"image": {provider: [model, ...]}}``, the models that do not chat
  (codemode's ``models.*`` reads them), each as the reference has it minus ``provider``.
* ``index.json``: source version, provider order, per-provider api/baseUrl/env var names/default
  model, and the order in which default models are tried at start-up.

Run: ``python scripts/build_catalog.py [path/to/pi-ai]`` (default: the pi 1.6.0 reference install).
"""

from __future__ import annotations

import json
import re
import sys
from collections import Counter
from pathlib import Path
from typing import Any

REFERENCE = Path("/root/.cache/pi-reference/pi-1.6.0/node_modules/@earendil-works/pi-ai")
CODING_AGENT = REFERENCE.parent / "pi-coding-agent"
OUT = Path(__file__).resolve().parents[1] / "src" / "pi_coding_agent" / "ai" / "data"
SOURCE = "pi-ai 1.6.0"

IMPLEMENTED_APIS = {
    "anthropic-messages", "openai-completions", "openai-responses", "google-generative-ai",
    "azure-openai-responses", "bedrock-converse-stream", "google-vertex", "openai-codex-responses", "pi-messages",
}
# Mistral's own Conversations API is not implemented; its OpenAI-compatible endpoint serves the same models.
API_REMAP = {"mistral-conversations": ("openai-completions", "https://api.mistral.ai/v1")}
KEPT_FIELDS = (
    "id", "name", "api", "baseUrl", "reasoning", "input", "cost", "contextWindow", "maxTokens",
    "headers", "compat", "thinkingLevelMap", "inputLimits", "promptCache",
)
# Providers whose env var names are not in the envMap table of env-api-keys.js (special-cased there).
EXTRA_ENV = {
    "github-copilot": ["COPILOT_GITHUB_TOKEN"],
    # ANTHROPIC_AUTH_TOKEN is a bearer token (a header, not an API key), so it is not listed.
    "anthropic": ["ANTHROPIC_OAUTH_TOKEN", "ANTHROPIC_API_KEY"],
}
NONCHAT_TYPES = ("classifier", "image")
FAUX = {
    "api": "faux",
    "baseUrl": "",
    "models": [{
        "id": "faux-1", "name": "Faux 1", "reasoning": True, "input": ["text", "image"],
        "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0},
        "contextWindow": 128000, "maxTokens": 16384,
    }],
}


def read_env_vars(pi_ai: Path) -> dict[str, list[str]]:
    """Provider -> API key env var names, from the envMap object literal of env-api-keys.js."""
    text = (pi_ai / "dist" / "env-api-keys.js").read_text()
    block = text[text.index("const envMap = {"):]
    block = block[: block.index("};")]
    env: dict[str, list[str]] = {}
    for match in re.finditer(r'^\s*"?([\w.-]+)"?:\s*(\[[^\]]*\]|"[^"]*")', block, re.M):
        value = json.loads(match.group(2).replace("\n", "").replace(",]", "]"))
        env[match.group(1)] = value if isinstance(value, list) else [value]
    env.update(EXTRA_ENV)
    return env


def read_default_models(coding_agent: Path) -> dict[str, str]:
    """Provider -> default model id, in pi's preference order (model-resolver.js)."""
    text = (coding_agent / "dist" / "core" / "model-resolver.js").read_text()
    block = text[text.index("defaultModelPerProvider = {"):]
    block = block[: block.index("};")]
    return dict(re.findall(r'^\s*"?([\w.-]+)"?:\s*"([^"]+)"', block, re.M))


def convert_model(raw: dict[str, Any]) -> dict[str, Any] | None:
    """One reference catalog entry -> our model dict, or None when we cannot serve it."""
    if raw.get("type") != "chat":
        return None
    model = {key: raw[key] for key in KEPT_FIELDS if key in raw}
    remap = API_REMAP.get(model["api"])
    if remap:
        model["api"], model["baseUrl"] = remap
    if model["api"] not in IMPLEMENTED_APIS:
        return None
    model.setdefault("reasoning", False)
    return model


def convert_provider(path: Path) -> dict[str, Any] | None:
    """A reference provider file -> our provider file (models in catalog order, unique ids)."""
    groups: dict[str, dict[str, Any]] = json.loads(path.read_text())
    models: dict[str, dict[str, Any]] = {}
    for group in groups.values():
        for raw in group.values():
            model = convert_model(raw)
            if model is not None:
                models[model["id"]] = model
    if not models:
        return None
    api = Counter(m["api"] for m in models.values()).most_common(1)[0][0]
    base_url = Counter(m["baseUrl"] for m in models.values() if m["api"] == api).most_common(1)[0][0]
    for model in models.values():
        if model["api"] == api:
            del model["api"]
        if model["baseUrl"] == base_url:
            del model["baseUrl"]
    return {"api": api, "baseUrl": base_url, "models": list(models.values())}


def convert_nonchat(path: Path) -> dict[str, list[dict[str, Any]]]:
    """A reference provider file's classifier and image models by type (``provider`` dropped)."""
    groups: dict[str, dict[str, Any]] = json.loads(path.read_text())
    by_type: dict[str, list[dict[str, Any]]] = {}
    for group in groups.values():
        for raw in group.values():
            if raw.get("type") in NONCHAT_TYPES:
                by_type.setdefault(raw["type"], []).append({k: v for k, v in raw.items() if k != "provider"})
    return by_type


def write_json(path: Path, data: Any) -> None:
    path.write_text(json.dumps(data, indent=None, separators=(",", ":"), ensure_ascii=False) + "\n")


def main(argv: list[str]) -> int:
    pi_ai = Path(argv[1]) if len(argv) > 1 else REFERENCE
    env_vars = read_env_vars(pi_ai)
    defaults = read_default_models(pi_ai.parent / "pi-coding-agent")
    OUT.mkdir(parents=True, exist_ok=True)
    for stale in OUT.glob("*.json"):
        stale.unlink()
    providers: dict[str, dict[str, Any]] = {}
    nonchat: dict[str, dict[str, list[dict[str, Any]]]] = {kind: {} for kind in NONCHAT_TYPES}
    for path in sorted((pi_ai / "dist" / "providers" / "data").glob("[!.]*.json"), key=lambda p: p.stem):
        name = path.stem
        for kind, models in convert_nonchat(path).items():
            nonchat[kind][name] = models
        data = convert_provider(path)
        if data is None and any(name in nonchat[kind] for kind in NONCHAT_TYPES):
            # a provider of classifier or image models only (TypeSafe): listed for its key variables
            first = next(models[0] for kind in NONCHAT_TYPES if (models := nonchat[kind].get(name)))
            data = {"api": first["api"], "baseUrl": first["baseUrl"], "models": []}
        if data is None:
            continue
        write_json(OUT / f"{name}.json", data)
        entry: dict[str, Any] = {"api": data["api"], "baseUrl": data["baseUrl"], "envVars": env_vars.get(name, [])}
        if defaults.get(name) in {m["id"] for m in data["models"]}:
            entry["defaultModel"] = defaults[name]
        providers[name] = entry
    write_json(OUT / "nonchat.json", nonchat)
    write_json(OUT / "faux.json", FAUX)
    providers["faux"] = {"api": "faux", "baseUrl": "", "envVars": [], "keyless": True}
    index = {
        "source": SOURCE,
        "providers": providers,
        "defaultModelOrder": [name for name in defaults if "defaultModel" in providers.get(name, {})],
    }
    write_json(OUT / "index.json", index)
    total = sum(len(json.loads((OUT / f"{p}.json").read_text())["models"]) for p in providers)
    print(f"wrote {len(providers)} providers, {total} models to {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
