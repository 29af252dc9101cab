"""``/llama``: load and unload the models of a llama.cpp router through extension UI dialogs.

pi lists ``/llama`` as a command of its built-in ``llama.cpp`` extension (``sourceInfo.path``
``builtin:llama.cpp``) and runs it only in its terminal UI. Here it runs wherever dialogs reach a
user, over RPC as ``select``/``confirm`` requests: pick a model; an unloaded one is loaded (asking
first whether to unload the others, as pi does), a loaded or sleeping one is unloaded only after a
``confirm``. Nothing is ever unloaded without asking. Downloading from Hugging Face is not offered.

It is not an extension module: listing and dispatching it costs no extension machinery at start-up.
``"extensions": ["-builtin:llama.cpp"]`` in settings removes the command and the provider.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pi_coding_agent.ai.types import JsonObject

if TYPE_CHECKING:
    from pi_coding_agent.ai.models.catalog import ModelRegistry
    from pi_coding_agent.ai.providers.llama_router import LlamaClient
    from pi_coding_agent.coding.resources.settings import Settings
    from pi_coding_agent.coding.runtime import SessionRuntime

NAME = "llama"
PROVIDER = "llama.cpp"
EXTENSION = f"builtin:{PROVIDER}"
COMMAND: JsonObject = {
    "name": NAME, "description": "Manage llama.cpp router models", "source": "extension",
    "sourceInfo": {"path": EXTENSION, "source": "builtin", "scope": "temporary", "origin": "top-level"},
}
CLOSE = "Close"
REPLACE, KEEP, CANCEL = "Unload all and load", "Keep loaded and load", "Cancel"


def enabled(settings: Settings, no_extensions: bool, cli_extensions: list[str]) -> bool:
    """As pi decides for its built-in extension: ``-e builtin:llama.cpp`` turns it on, else
    ``--no-extensions`` or the settings' ``extensions`` filters (``-builtin:llama.cpp``) turn it off."""
    from pi_coding_agent.coding.extensions.loader import builtin_enabled

    return builtin_enabled(PROVIDER, settings.extensions, no_extensions, cli_extensions)


def switched_off(settings: Settings, no_extensions: bool, cli_extensions: list[str]) -> tuple[str, ...]:
    """The providers the model registry leaves out: the router's, with the built-in extension off."""
    return () if enabled(settings, no_extensions, cli_extensions) else (PROVIDER,)


def offered(registry: ModelRegistry) -> bool:
    """Whether the session offers ``/llama``: its provider is on."""
    return PROVIDER not in registry.switched_off


def is_invocation(text: str) -> bool:
    return text == f"/{NAME}" or text.startswith(f"/{NAME} ")


def _label(entry: dict[str, Any]) -> str:
    return f"{entry['id']} · {entry['status']['value']}"


async def run(rt: SessionRuntime) -> None:
    """The command: a model menu until the user closes it (or a dialog is dismissed)."""
    from pi_coding_agent.ai.providers import llama_cpp
    from pi_coding_agent.ai.providers.llama_router import LlamaError

    ui = rt.ui
    client = llama_cpp.client(rt.auth.stored_credential(PROVIDER))
    if client is None:
        ui.notify(llama_cpp.SETUP_HINT, "warning")
        return
    while True:
        try:
            catalog = await _sync(rt, client)
        except LlamaError as exc:
            ui.notify(str(exc), "error")
            return
        labels = [_label(m) for m in catalog]
        choice = await ui.select(f"llama.cpp · {client.url}", [*labels, CLOSE])
        if choice is None or choice == CLOSE or choice not in labels:
            return
        try:
            await _act(rt, client, catalog, catalog[labels.index(choice)])
        except LlamaError as exc:
            ui.notify(str(exc), "error")


async def _act(rt: SessionRuntime, client: LlamaClient, catalog: list[dict[str, Any]],
               target: dict[str, Any]) -> None:
    from pi_coding_agent.ai.providers.llama_router import is_loaded

    ui = rt.ui
    if is_loaded(target):
        if await ui.confirm("Unload model?", target["id"]):
            await client.unload(target["id"])
            ui.notify(f"Unloaded {target['id']}")
        return
    if target["status"]["value"] != "unloaded":
        ui.notify(f"{target['id']} is {target['status']['value']}", "warning")
        return
    others = [m for m in catalog if m["id"] != target["id"] and is_loaded(m)]
    if others:
        title = f"{len(others)} model{' is' if len(others) == 1 else 's are'} loaded"
        answer = await ui.select(title, [REPLACE, KEEP, CANCEL])
        if answer not in (REPLACE, KEEP):
            return
        if answer == REPLACE:
            for model in others:
                await client.unload(model["id"])
    ui.notify(f"Loading {target['id']}…")
    entry = await client.load(target["id"])
    loaded = entry is not None and entry["status"]["value"] == "loaded"
    ui.notify(f"Loaded {target['id']}" if loaded else f"Load started for {target['id']}")


async def _sync(rt: SessionRuntime, client: LlamaClient) -> list[JsonObject]:
    """The router's current state, and the provider's model list updated to it."""
    import asyncio

    from pi_coding_agent.ai.providers import llama_router

    catalog = await asyncio.to_thread(client.list)
    models = await asyncio.to_thread(llama_router.router_models, client, llama_router.REQUEST_TIMEOUT_S, catalog)
    rt.registry.set_models(PROVIDER, models)
    return catalog
