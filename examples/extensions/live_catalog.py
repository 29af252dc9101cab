"""A provider whose models come from the server: ``register_provider(..., refresh_models=...)``.

    TEAM_LLM_URL=http://127.0.0.1:8080 TEAM_LLM_KEY=... \\
        pi -e examples/extensions/live_catalog.py --provider team-llm --model <a loaded model>

pi calls ``refresh_models(context)`` once every extension is set up (before the model is chosen, so
``--model`` can name a model it returns; also for ``--list-models``), for a provider registered
later at once, and with ``context.allow_network`` True in the background (in RPC mode after
start-up, and after a ``/login`` of the provider).
The list it returns replaces the registered ``models``; None keeps them. This server lists its
models at ``GET /models`` the way a llama.cpp router does; only loaded ones are offered. It is a
local server, so it is asked in every phase, as pi's own documentation does for llama.cpp.
"""

import asyncio
import json
import os
import urllib.request

SERVER = os.environ.get("TEAM_LLM_URL", "http://127.0.0.1:8080")


def _listing(key):
    request = urllib.request.Request(f"{SERVER}/models", headers={"authorization": f"Bearer {key}"})
    with urllib.request.urlopen(request, timeout=10) as response:
        return json.loads(response.read())["data"]


async def refresh_models(context):
    key = (context.credential or {}).get("key") or os.environ.get("TEAM_LLM_KEY", "")
    entries = await asyncio.to_thread(_listing, key)
    return [{"id": entry["id"], "name": entry["id"], "contextWindow": 32000, "maxTokens": 4096}
            for entry in entries if entry.get("status", {}).get("value") == "loaded"]


def setup(pi):
    pi.register_provider("team-llm", {
        "baseUrl": f"{SERVER}/v1",
        "apiKey": "$TEAM_LLM_KEY",
        "api": "openai-completions",
        "models": [],
    }, refresh_models=refresh_models)
