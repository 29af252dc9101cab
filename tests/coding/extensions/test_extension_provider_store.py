"""Issue 12, extension providers that keep state across runs: the model snapshot pi keeps in
``models-store.json`` (``context.stored``, ``context.publish(persist=)``, a ``Provider``'s
``fetch_models``) and a ``Provider``'s own API-key sign-in (``auth.api_key``). The real ``pi --mode
rpc`` over pipes, a llama.cpp-style server on 127.0.0.1, two runs sharing one agent dir; beside the
TypeScript twins on the reference pi 1.6.0, comparing records, server requests and the files."""

from __future__ import annotations

import asyncio
import json
import os
import stat
from pathlib import Path
from typing import Any

import pytest

from tests.coding.extensions.test_extension_providers import next_dialog
from tests.coding.extensions.test_extensions_fidelity import EXAMPLES, notes
from tests.support.compiled_once import stable_source
from tests.support.fakes.llama_server import FakeLlamaRouter
from tests.support.rpc_compare import Conversation, Workspace, needs_reference

LOADED = {"status": {"value": "loaded"}}
TEAM_TS = """
import { createProvider, openAICompletionsApi } from "@earendil-works/pi-ai/compat";

export default function (pi) {
  const SERVER = process.env.TEAM_URL;
  const baseUrl = `${SERVER}/v1`;
  pi.registerProvider(createProvider({
    id: "team", name: "Team server", baseUrl,
    auth: { apiKey: {
      name: "Team server key",
      async login(interaction) {
        const key = await interaction.prompt({ type: "secret", message: "Team server key" });
        return { type: "api_key", key: key.trim() };
      },
      async resolve({ ctx, credential }) {
        const key = credential?.key || (await ctx.env("TEAM_KEY"));
        return key ? { auth: { apiKey: key }, source: credential ? "stored key" : "TEAM_KEY" } : undefined;
      },
    } },
    models: [],
    api: openAICompletionsApi(),
    async fetchModels(context) {
      const response = await fetch(`${SERVER}/models`, {
        headers: { authorization: `Bearer ${context.credential.key}` }, signal: context.signal });
      const { data } = await response.json();
      return data.filter((e) => e.status?.value === "loaded").map((e) => ({
        id: e.id, name: e.id, api: "openai-completions", provider: "team", baseUrl, reasoning: false,
        input: ["text"], cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 }, contextWindow: 32000,
        maxTokens: 4096 }));
    },
  }));
}
"""


def _extension(kind: str, root: Path, python: Path | str, ts: str) -> Path:
    """The Python extension (a shipped example's path, or source written here) or its TypeScript twin."""
    if kind == "ours" and isinstance(python, Path):
        return python
    if kind != "ours":
        return stable_source("reference/extension.ts", ts)  # compiled once across runs
    path = root / "extension.py"
    path.write_text(str(python))
    return path


async def _session(workspace: Workspace, kind: str, extension: Path, env: dict[str, str]) -> Conversation:
    saved = dict(workspace.env)
    workspace.env.update(env)
    try:
        proc = await workspace.spawn(kind, "--no-session", "-e", str(extension))
    finally:
        workspace.env = saved
    return Conversation(proc, None, workspace)  # type: ignore[arg-type]  # the LLM is the router here


async def _team_models(conv: Conversation, wanted: int) -> list[str]:
    """The team models listed once there are ``wanted`` of them (a background refresh may publish late)."""
    for _ in range(200):
        listed = await conv.request({"type": "get_available_models"})
        models = sorted(m["id"] for m in listed["data"]["models"] if m["provider"] == "team")
        if len(models) >= wanted:
            return models
        await asyncio.sleep(0.05)
    return models


async def _stored(workspace: Workspace, provider: str) -> dict[str, Any]:
    path = workspace.agent_dir / "models-store.json"
    for _ in range(200):
        if path.exists() and path.read_bytes().strip():
            entry = json.loads(path.read_text()).get(provider)
            if entry is not None:
                return dict(entry)
        await asyncio.sleep(0.05)
    raise AssertionError(f"no {provider} snapshot in {path}")


async def _use(conv: Conversation, model: str) -> tuple[str, str]:
    await conv.request({"type": "set_model", "provider": "team", "modelId": model})
    records = await conv.prompt("hello team")
    end = [r["message"] for r in records if r["type"] == "message_end"][-1]
    return end["model"], end["content"][0]["text"]


def _chats(router: FakeLlamaRouter) -> list[tuple[str, str | None]]:
    return [(r["body"]["model"], r["authorization"]) for r in router.requests if r["path"] == "/v1/chat/completions"]


async def _two_runs(kind: str, root: Path) -> dict[str, Any]:
    """Run 1 online with a stored key: the fetched list is used and saved. Run 2 offline, the server's
    list changed meanwhile: the saved list is offered and a saved model still answers."""
    with FakeLlamaRouter({"alpha": dict(LOADED), "beta": dict(LOADED), "gamma": {"status": {"value": "unloaded"}}},
                         api_key="team-key") as router:
        workspace = Workspace.create(root / kind, "http://127.0.0.1:9")
        (workspace.agent_dir / "auth.json").write_text(json.dumps({"team": {"type": "api_key", "key": "team-key"}}))
        extension = _extension(kind, root, EXAMPLES / "cached_catalog.py", TEAM_TS)
        env = {"TEAM_URL": router.url}
        conv = await _session(workspace, kind, extension, env)
        try:
            first = await _team_models(conv, 2)
            snapshot = await _stored(workspace, "team")
            first_answer = await _use(conv, "beta")
        finally:
            await conv.proc.kill()
        router.models = {"delta": dict(LOADED)}
        listings = len([r for r in router.requests if r["path"] == "/models"])
        conv = await _session(workspace, kind, extension, {**env, "PI_OFFLINE": "1"})
        try:
            second = await _team_models(conv, 2)
            second_answer = await _use(conv, "alpha")
        finally:
            await conv.proc.kill()
    models_asked_offline = len([r for r in router.requests if r["path"] == "/models"]) - listings
    checked_at = snapshot.pop("checkedAt")
    return {"first": first, "second": second, "answers": [first_answer, second_answer], "chats": _chats(router),
            "snapshot": snapshot, "checkedAt is ms": isinstance(checked_at, int) and checked_at > 1.6e12,
            "asked offline": models_asked_offline,
            "auth.json": json.loads((workspace.agent_dir / "auth.json").read_text()),
            "store mode": stat.S_IMODE((workspace.agent_dir / "models-store.json").stat().st_mode)}


TEAM_MODEL = {"name": "", "api": "openai-completions", "provider": "team", "reasoning": False, "input": ["text"],
              "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0}, "contextWindow": 32000,
              "maxTokens": 4096}


@pytest.mark.slow
async def test_fetched_models_are_saved_and_offered_offline(tmp_path: Path) -> None:
    outcome = await _two_runs("ours", tmp_path)
    models = outcome.pop("snapshot")["models"]
    assert [m["id"] for m in models] == ["alpha", "beta"]
    assert models[0] == {**TEAM_MODEL, "id": "alpha", "name": "alpha", "baseUrl": models[0]["baseUrl"]}
    assert models[0]["baseUrl"].endswith("/v1")
    assert outcome == {"first": ["alpha", "beta"], "second": ["alpha", "beta"],
                       "answers": [("beta", "from llama"), ("alpha", "from llama")],
                       "chats": [("beta", "Bearer team-key"), ("alpha", "Bearer team-key")],
                       "checkedAt is ms": True, "asked offline": 0,
                       "auth.json": {"team": {"type": "api_key", "key": "team-key"}}, "store mode": 0o600}


@needs_reference
async def test_saved_models_match_reference(tmp_path: Path) -> None:
    ours, reference = await _two_runs("ours", tmp_path / "ours"), await _two_runs("reference", tmp_path / "reference")
    for side in (ours, reference):  # each side's own server address
        side["snapshot"]["models"] = [{**m, "baseUrl": "/v1"} for m in side["snapshot"]["models"]]
    assert ours == reference


async def _sign_in(conv: Conversation, key: str) -> dict[str, Any]:
    """``/login team`` over RPC, answering the provider's own key dialog."""
    login = await conv.send({"type": "prompt", "message": "/login team"})
    dialog = await next_dialog(conv)
    await conv.proc.send({"type": "extension_ui_response", "id": dialog["id"], "value": f" {key} "})
    await conv.response(login)
    return {"method": dialog["method"], "title": dialog["title"]}


@pytest.mark.slow
async def test_login_of_a_provider_key_then_pi_reads_what_we_wrote(tmp_path: Path) -> None:
    """Ours: ``/login`` runs the provider's ``login``; auth.json gets its credential, the background
    refresh asks the server with it and a prompt sends it. The reference, started on the same agent
    dir offline, then offers the models we saved and sends the key we stored."""
    with FakeLlamaRouter({"alpha": dict(LOADED)}, api_key="typed-key") as router:
        workspace = Workspace.create(tmp_path / "side", "http://127.0.0.1:9")
        env = {"TEAM_URL": router.url}
        conv = await _session(workspace, "ours", EXAMPLES / "cached_catalog.py", env)
        try:
            before = await _team_models(conv, 0)
            dialog = await _sign_in(conv, "typed-key")
            after = await _team_models(conv, 1)
            answer = await _use(conv, "alpha")
        finally:
            await conv.proc.kill()
        assert [n for n in notes(conv.records) if n.startswith("Saved API key")] == [
            f"Saved API key for team. Credentials saved to {workspace.agent_dir / 'auth.json'}"]
        assert (before, dialog, after, answer) == ([], {"method": "input", "title": "Team server key"}, ["alpha"],
                                                   ("alpha", "from llama"))
        assert json.loads((workspace.agent_dir / "auth.json").read_text()) == {
            "team": {"type": "api_key", "key": "typed-key"}}
        assert [r["authorization"] for r in router.requests] == ["Bearer typed-key"] * 2  # GET /models, the chat
        if not _reference_present():
            return
        conv = await _session(workspace, "reference", _extension("reference", tmp_path, "", TEAM_TS),
                              {**env, "PI_OFFLINE": "1"})
        try:
            theirs = await _team_models(conv, 1), await _use(conv, "alpha")
        finally:
            await conv.proc.kill()
    assert theirs == (["alpha"], ("alpha", "from llama"))
    assert _chats(router)[-1] == ("alpha", "Bearer typed-key")


def _reference_present() -> bool:
    from tests.support.reference_pi import REFERENCE_PI

    return REFERENCE_PI.exists()


@pytest.mark.slow
async def test_a_provider_key_resolved_from_the_environment(tmp_path: Path) -> None:
    """Nothing stored: ``resolve`` finds ``TEAM_KEY`` and the provider counts as configured."""
    with FakeLlamaRouter({"alpha": dict(LOADED)}, api_key="env-key") as router:
        workspace = Workspace.create(tmp_path / "side", "http://127.0.0.1:9")
        conv = await _session(workspace, "ours", EXAMPLES / "cached_catalog.py",
                              {"TEAM_URL": router.url, "TEAM_KEY": "env-key"})
        try:
            models, answer = await _team_models(conv, 1), await _use(conv, "alpha")
        finally:
            await conv.proc.kill()
    assert (models, answer, _chats(router)) == (["alpha"], ("alpha", "from llama"), [("alpha", "Bearer env-key")])


# --------------------------------------------------------------------------- refresh_models: stored, publish

NOTES_PY = """
import json
import os

seen = []

async def refresh(context):
    seen.append({"network": context.allow_network, "stored": context.stored})
    if not context.allow_network:
        return None if context.stored is None else context.stored["models"]
    if os.environ.get("FORGET"):
        await context.publish(persist=None)
        return None
    models = [{"id": "n1", "name": "N1", "contextWindow": 8000, "maxTokens": 1000}]
    await context.publish(persist={"models": models, "checkedAt": 1700000000000, "etag": '"v1"'})
    return models

def setup(pi):
    pi.register_provider("notes", {"baseUrl": "http://127.0.0.1:9/notes", "apiKey": "k",
                                   "api": "openai-completions", "models": []}, refresh_models=refresh)
    pi.register_command("seen", handler=lambda args, ctx: ctx.ui.notify(json.dumps(seen), "info"))
"""
NOTES_TS = """
export default function (pi) {
  const seen = [];
  pi.registerProvider("notes", {
    baseUrl: "http://127.0.0.1:9/notes", apiKey: "k", api: "openai-completions", models: [],
    async refreshModels(context) {
      seen.push({ network: context.allowNetwork, stored: context.stored ?? null });
      if (!context.allowNetwork) return context.stored ? context.stored.models : undefined;
      if (process.env.FORGET) { await context.publish({ persist: null }); return undefined; }
      const models = [{ id: "n1", name: "N1", contextWindow: 8000, maxTokens: 1000 }];
      await context.publish({ persist: { models, checkedAt: 1700000000000, etag: '"v1"' } });
      return models;
    },
  });
  pi.registerCommand("seen", { handler: async (_args, ctx) => { ctx.ui.notify(JSON.stringify(seen), "info"); } });
}
"""


async def _seen(conv: Conversation) -> list[dict[str, Any]]:
    """The phases the extension saw, once the network one ran (pi repeats the offline phase: one kept)."""
    for _ in range(200):
        await conv.request({"type": "prompt", "message": "/seen"})
        seen: list[dict[str, Any]] = json.loads(notes(conv.records)[-1])
        if any(s["network"] for s in seen):
            return [s for i, s in enumerate(seen) if i == 0 or s != seen[i - 1]]
        await asyncio.sleep(0.05)
    raise AssertionError(f"no network refresh: {seen}")


def _store(workspace: Workspace) -> Any:
    path = workspace.agent_dir / "models-store.json"
    return json.loads(path.read_text()) if path.exists() else None


async def _notes_runs(kind: str, root: Path, prepare: str | None = None) -> dict[str, Any]:
    """Run 1 persists a snapshot, run 2 sees it and (``FORGET``) deletes it; ``prepare`` is a store
    file written beforehand."""
    workspace = Workspace.create(root / kind, "http://127.0.0.1:9")
    if prepare is not None:
        (workspace.agent_dir / "models-store.json").write_text(prepare)
    extension = _extension(kind, root, NOTES_PY, NOTES_TS)
    outcome: dict[str, Any] = {}
    for run, env in (("first", {}), ("second", {"FORGET": "1"})):
        conv = await _session(workspace, kind, extension, env)
        try:
            outcome[run] = await _seen(conv)
            for _ in range(200):  # until the network phase has written (or deleted) and published
                listed = await conv.request({"type": "get_available_models"})
                outcome[f"{run} models"] = [m["id"] for m in listed["data"]["models"] if m["provider"] == "notes"]
                if outcome[f"{run} models"] and ("notes" in (_store(workspace) or {})) == (run == "first"):
                    break
                await asyncio.sleep(0.05)
        finally:
            await conv.proc.kill()
        outcome[f"{run} store"] = _store(workspace)
        outcome[f"{run} stderr"] = await conv.proc.stderr_text()
    return outcome


SNAPSHOT = {"models": [{"id": "n1", "name": "N1", "contextWindow": 8000, "maxTokens": 1000}],
            "checkedAt": 1700000000000, "etag": '"v1"'}


@pytest.mark.slow
async def test_refresh_models_persists_and_deletes_its_snapshot(tmp_path: Path) -> None:
    outcome = await _notes_runs("ours", tmp_path)
    assert outcome["first"] == [{"network": False, "stored": None}, {"network": True, "stored": None}]
    assert outcome["first models"] == ["n1"] and outcome["first store"] == {"notes": SNAPSHOT}
    assert outcome["second"] == [{"network": False, "stored": SNAPSHOT}, {"network": True, "stored": SNAPSHOT}]
    assert outcome["second models"] == ["n1"] and outcome["second store"] == {}


@needs_reference
async def test_refresh_models_snapshot_matches_reference(tmp_path: Path) -> None:
    ours, reference = await _notes_runs("ours", tmp_path / "o"), await _notes_runs("reference", tmp_path / "r")
    for side in (ours, reference):
        del side["first stderr"], side["second stderr"]
    assert ours == reference


FOREIGN = {"radius": {"models": [{"id": "r1", "provider": "radius", "type": "some-future-type"}], "checkedAt": 5},
           "notes": {"models": "not a list"}, "odd": [1, 2]}


@pytest.mark.slow
async def test_a_broken_store_is_kept_aside_and_foreign_entries_survive(tmp_path: Path) -> None:
    """Where pi fails every refresh: a store that is not JSON is reported, kept as ``.corrupt-<ms>``
    and a new one started; entries of other providers (of types we do not know) are kept as they are."""
    broken = await _notes_runs("ours", tmp_path / "broken", "{broken")
    assert broken["first"] == [{"network": False, "stored": None}, {"network": True, "stored": None}]
    assert broken["first store"] == {"notes": SNAPSHOT}
    assert "models-store.json: invalid JSON" in broken["first stderr"]
    aside = list((tmp_path / "broken" / "ours" / "agent").glob("models-store.json.corrupt-*"))
    assert [p.read_text() for p in aside] == ["{broken"]
    foreign = await _notes_runs("ours", tmp_path / "foreign", json.dumps(FOREIGN))
    assert foreign["first"][0] == {"network": False, "stored": None}  # an entry without a models list
    assert foreign["first store"] == {**FOREIGN, "notes": SNAPSHOT}
    assert foreign["second store"] == {"radius": FOREIGN["radius"], "odd": [1, 2]}


# --------------------------------------------------------------------------- the store file itself


async def test_store_writes_replace_the_file_whole(tmp_path: Path) -> None:
    """A write never truncates the file in place (a crash leaves the old one whole): an old hard link
    keeps the old content. A new file is 0600 like pi's; an existing file's mode and a symlink stay."""
    from pi_coding_agent.ai.models import store as models_store

    await models_store.write_entry(tmp_path, "a", {"models": []})
    path = tmp_path / "models-store.json"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert path.read_bytes() == b'{\n  "a": {\n    "models": []\n  }\n}'  # JSON.stringify(data, null, 2)
    os.link(path, tmp_path / "old")
    path.chmod(0o640)
    await models_store.write_entry(tmp_path, "b", {"models": [], "checkedAt": 1})
    assert json.loads((tmp_path / "old").read_text()) == {"a": {"models": []}}
    assert json.loads(path.read_text()) == {"a": {"models": []}, "b": {"models": [], "checkedAt": 1}}
    assert stat.S_IMODE(path.stat().st_mode) == 0o640
    elsewhere = tmp_path / "real"
    elsewhere.mkdir()
    (elsewhere / "models-store.json").write_text("{}")
    linked = tmp_path / "linked"
    linked.mkdir()
    (linked / "models-store.json").symlink_to(elsewhere / "models-store.json")
    await models_store.write_entry(linked, "c", {"models": []})
    assert (linked / "models-store.json").is_symlink()
    assert json.loads((elsewhere / "models-store.json").read_text()) == {"c": {"models": []}}
    await models_store.write_entry(tmp_path, "a", None)
    assert json.loads(path.read_text()) == {"b": {"models": [], "checkedAt": 1}}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["linked", "models-store.json", "old", "real"]


@needs_reference
async def test_we_offer_the_snapshot_pi_saved(tmp_path: Path) -> None:
    """The reference fetches and saves the list online; ours, offline on the same agent dir, offers it."""
    with FakeLlamaRouter({"alpha": dict(LOADED), "beta": dict(LOADED)}, api_key="team-key") as router:
        workspace = Workspace.create(tmp_path / "side", "http://127.0.0.1:9")
        (workspace.agent_dir / "auth.json").write_text(json.dumps({"team": {"type": "api_key", "key": "team-key"}}))
        env = {"TEAM_URL": router.url}
        conv = await _session(workspace, "reference", _extension("reference", tmp_path, "", TEAM_TS), env)
        try:
            await _stored(workspace, "team")
        finally:
            await conv.proc.kill()
        router.models = {}
        conv = await _session(workspace, "ours", EXAMPLES / "cached_catalog.py", {**env, "PI_OFFLINE": "1"})
        try:
            ours = await _team_models(conv, 2), await _use(conv, "beta")
        finally:
            await conv.proc.kill()
    assert ours == (["alpha", "beta"], ("beta", "from llama"))
    assert _chats(router) == [("beta", "Bearer team-key")]


# --------------------------------------------------------------------------- what resolve returns reaches the request

GATEWAY_PY = """
import os

from pi_coding_agent.coding.extensions.provider_auth import ApiKeyAuth, ProviderAuth
from pi_coding_agent.coding.extensions.providers import Provider

async def resolve(input):
    if os.environ.get("VAULT_DOWN"):
        raise RuntimeError("vault down, token sk-secret-123 rejected")
    return {"auth": {"apiKey": "resolved-key", "headers": {"x-gateway-tenant": "blue"},
                     "baseUrl": os.environ["LLM_URL"] + "/v1"}, "source": "gateway"}

async def ask(args, ctx):
    registry = ctx.model_registry
    answer = await registry.complete(registry.find("gw", "gw-model"), {
        "messages": [{"role": "user", "content": args, "timestamp": 0}]})
    ctx.ui.notify(answer["content"][0]["text"], "info")

def setup(pi):
    pi.register_command("ask", handler=ask)
    pi.register_provider(Provider(
        id="gw", name="Gateway", base_url="http://127.0.0.1:9/v1", api="openai-completions",
        models=[{"id": "gw-model", "contextWindow": 8000, "maxTokens": 1000}],
        auth=ProviderAuth(api_key=ApiKeyAuth(name="Gateway", resolve=resolve))))
"""
GATEWAY_TS = """
import { createProvider, openAICompletionsApi } from "@earendil-works/pi-ai/compat";

export default function (pi) {
  pi.registerProvider(createProvider({
    id: "gw", name: "Gateway", baseUrl: "http://127.0.0.1:9/v1",
    auth: { apiKey: { name: "Gateway", async resolve() {
      return { auth: { apiKey: "resolved-key", headers: { "x-gateway-tenant": "blue" },
                       baseUrl: `${process.env.LLM_URL}/v1` }, source: "gateway" };
    } } },
    models: [{ id: "gw-model", name: "gw-model", api: "openai-completions", provider: "gw",
               baseUrl: "http://127.0.0.1:9/v1", reasoning: false, input: ["text"],
               cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 }, contextWindow: 8000, maxTokens: 1000 }],
    api: openAICompletionsApi(),
  }));
}
"""


async def _gateway(kind: str, root: Path) -> dict[str, Any]:
    from tests.support.fakes.llm_server import FakeLLMServer

    with FakeLLMServer() as server:
        server.add({"content": [{"type": "text", "text": "via the gateway"}]})
        workspace = Workspace.create(root / kind, server.url)
        workspace.env["LLM_URL"] = server.url
        conv = Conversation(await workspace.spawn_with(kind, {"ours": GATEWAY_PY, "reference": GATEWAY_TS},
                                                       "--no-session"), server, workspace)
        try:
            listed = await conv.request({"type": "get_available_models"})
            chosen = await conv.request({"type": "set_model", "provider": "gw", "modelId": "gw-model"})
            records = await conv.prompt("hi")
        finally:
            await conv.proc.kill()
        requests = list(server.requests)
    end = [r["message"] for r in records if r["type"] == "message_end"][-1]
    return {"listed": sorted(m["id"] for m in listed["data"]["models"] if m["provider"] == "gw"),
            "chosen": chosen["success"], "text": end["content"][0]["text"],
            "requests": [(r["path"], r["headers"].get("authorization"), r["headers"].get("x-gateway-tenant"),
                          r["body"]["model"]) for r in requests]}


@pytest.mark.slow
async def test_resolved_key_headers_and_endpoint_reach_the_request(tmp_path: Path) -> None:
    assert await _gateway("ours", tmp_path) == {
        "listed": ["gw-model"], "chosen": True, "text": "via the gateway",
        "requests": [("/v1/chat/completions", "Bearer resolved-key", "blue", "gw-model")]}


@needs_reference
async def test_resolved_request_auth_matches_reference(tmp_path: Path) -> None:
    assert await _gateway("ours", tmp_path) == await _gateway("reference", tmp_path)


@pytest.mark.slow
async def test_a_raising_resolve_counts_as_not_configured_and_leaks_nothing(tmp_path: Path) -> None:
    from tests.support.fakes.llm_server import FakeLLMServer

    with FakeLLMServer() as server:
        workspace = Workspace.create(tmp_path, server.url)
        workspace.env.update({"LLM_URL": server.url, "VAULT_DOWN": "1"})
        conv = Conversation(await workspace.spawn_with("ours", {"ours": GATEWAY_PY}, "--no-session"), server, workspace)
        try:
            listed = await conv.request({"type": "get_available_models"})
            chosen = await conv.request({"type": "set_model", "provider": "gw", "modelId": "gw-model"})
        finally:
            await conv.proc.kill()
        stderr = await conv.proc.stderr_text()
    assert [m for m in listed["data"]["models"] if m["provider"] == "gw"] == []
    assert chosen["success"] is False and server.requests == []
    assert "Extension provider gw: API key resolve failed: RuntimeError" in stderr
    assert "sk-secret" not in stderr + json.dumps(conv.records)


async def test_model_registry_calls_resolve_the_provider_key_first(tmp_path: Path) -> None:
    """An extension's second-model call on such a provider, before the session sent any request."""
    from tests.support.fakes.llm_server import FakeLLMServer

    with FakeLLMServer() as server:
        server.add({"content": [{"type": "text", "text": "reviewed"}]})
        workspace = Workspace.create(tmp_path, server.url)
        workspace.env["LLM_URL"] = server.url
        conv = Conversation(await workspace.spawn_with("ours", {"ours": GATEWAY_PY}, "--no-session"), server, workspace)
        try:
            await conv.request({"type": "prompt", "message": "/ask is this fine?"})
            for _ in range(100):
                if "reviewed" in notes(conv.records):
                    break
                await conv.read_until(lambda r: r["type"] == "extension_ui_request")
        finally:
            await conv.proc.kill()
        [request] = server.requests
    assert (request["path"], request["headers"]["authorization"], request["headers"]["x-gateway-tenant"]) == (
        "/v1/chat/completions", "Bearer resolved-key", "blue")
