"""A provider that signs in with its own API-key setup and remembers its model list between runs.

    TEAM_URL=http://127.0.0.1:8080 pi -e examples/extensions/cached_catalog.py --mode rpc
    # then send the prompt "/login team" and answer the key dialog

``Provider(auth=ProviderAuth(api_key=ApiKeyAuth(...)))`` (pi-ai's ``auth.apiKey``): ``login`` asks
for the key over the client's dialogs and returns the credential kept in auth.json; ``resolve``
turns the stored credential (or ``TEAM_KEY`` from the environment) into the key each request sends.

``fetch_models`` (pi-ai's ``createProvider({fetchModels})``) asks the server which models it has
loaded. Each list it returns is saved as the provider's snapshot in ``models-store.json``; the next
start offers the saved list at once, before the server is asked, and keeps offering it when the
network is off (``--offline``) or the server is down.
"""

import asyncio
import json
import os
import urllib.request

from pi_coding_agent.coding.extensions.provider_auth import ApiKeyAuth, ProviderAuth
from pi_coding_agent.coding.extensions.providers import Provider

SERVER = os.environ.get("TEAM_URL", "http://127.0.0.1:8080")


async def login(interaction):
    key = await interaction.prompt({"type": "secret", "message": "Team server key"})
    return {"type": "api_key", "key": key.strip()}


async def resolve(input):
    key = (input.credential or {}).get("key") or await input.ctx.env("TEAM_KEY")
    if not key:
        return None
    return {"auth": {"apiKey": key}, "source": "stored key" if input.credential else "TEAM_KEY"}


def _loaded(key):
    request = urllib.request.Request(f"{SERVER}/models", headers={"authorization": f"Bearer {key}"})
    with urllib.request.urlopen(request, timeout=10) as response:
        entries = json.loads(response.read())["data"]
    return [e["id"] for e in entries if e.get("status", {}).get("value") == "loaded"]


async def fetch_models(context):
    names = await asyncio.to_thread(_loaded, context.credential["key"])
    return [{"id": name, "name": name, "contextWindow": 32000, "maxTokens": 4096} for name in names]


def setup(pi):
    pi.register_provider(Provider(
        id="team",
        name="Team server",
        base_url=f"{SERVER}/v1",
        api="openai-completions",
        auth=ProviderAuth(api_key=ApiKeyAuth(name="Team server key", resolve=resolve, login=login)),
        fetch_models=fetch_models,
    ))
