"""The built-in llama.cpp provider and ``/llama`` against a fake llama.cpp router, over RPC."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.support.fakes.llama_server import FakeLlamaRouter
from tests.support.reference_pi import REFERENCE_NODE_BIN, REFERENCE_PI
from tests.support.rpc_helpers import RpcProcess

ROUTER_MODELS: dict[str, dict[str, Any]] = {
    "qwen-loaded": {"status": {"value": "loaded"}, "meta": {"n_ctx": 32768}},
    "gemma-sleeping": {"status": {"value": "sleeping"}},
    "llama-unloaded": {"status": {"value": "unloaded"}},
    "preset-unloaded": {"status": {"value": "unloaded"}, "source": "preset"},
}


def router_env(tmp_path: Path, url: str, settings: dict[str, Any] | None = None) -> dict[str, str]:
    agent = tmp_path / "agent"
    agent.mkdir(exist_ok=True)
    if settings is not None:
        (agent / "settings.json").write_text(json.dumps(settings))
    return {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "PI_CODING_AGENT_DIR": str(agent),
            "LLAMA_BASE_URL": url, "LLAMA_API_KEY": "llama-secret"}


async def start(tmp_path: Path, env: dict[str, str], *args: str) -> RpcProcess:
    return await RpcProcess.pi("--no-session", *args, cwd=tmp_path, env=env)


async def llama_models(pi: RpcProcess) -> list[str]:
    models = (await pi.request({"type": "get_available_models"}))["data"]["models"]
    return sorted(m["id"] for m in models if m["provider"] == "llama.cpp")


@pytest.mark.slow
async def test_live_model_list_has_loaded_sleeping_and_autoload_presets(tmp_path: Path):
    with FakeLlamaRouter(dict(ROUTER_MODELS)) as router:
        pi = await start(tmp_path, router_env(tmp_path, router.url + "/v1/"))
        try:
            assert await llama_models(pi) == ["gemma-sleeping", "qwen-loaded"]
            models = (await pi.request({"type": "get_available_models"}))["data"]["models"]
            qwen = next(m for m in models if m["id"] == "qwen-loaded")
            assert qwen["baseUrl"] == f"{router.url}/v1" and qwen["api"] == "openai-completions"
            assert qwen["contextWindow"] == 32768 and qwen["cost"]["input"] == 0
        finally:
            await pi.kill()
        assert {r["authorization"] for r in router.requests} == {"Bearer llama-secret"}
    with FakeLlamaRouter(dict(ROUTER_MODELS), autoload=True) as router:
        pi = await start(tmp_path, router_env(tmp_path, router.url))
        try:
            assert await llama_models(pi) == ["gemma-sleeping", "preset-unloaded", "qwen-loaded"]
        finally:
            await pi.kill()


@pytest.mark.slow
async def test_a_prompt_reaches_the_router_with_the_api_key(tmp_path: Path):
    with FakeLlamaRouter(dict(ROUTER_MODELS)) as router:
        pi = await start(tmp_path, router_env(tmp_path, router.url), "--model", "llama.cpp/qwen-loaded")
        try:
            assert (await pi.request({"type": "prompt", "message": "hi"}))["success"] is True
            records = await pi.read_until(lambda r: r.get("type") == "agent_end")
            final = [r for r in records if r.get("type") == "message_end"][-1]["message"]
            assert final["content"][0]["text"] == "from llama", final
        finally:
            await pi.kill()
        chat = [r for r in router.requests if r["path"] == "/v1/chat/completions"]
        assert chat[0]["authorization"] == "Bearer llama-secret" and chat[0]["body"]["model"] == "qwen-loaded"


async def answer_dialogs(pi: RpcProcess, answers: list[tuple[str, dict[str, Any]]]) -> list[dict[str, Any]]:
    """Answer each expected dialog in turn: (method, reply); returns every record seen."""
    seen: list[dict[str, Any]] = []
    for method, reply in answers:
        records = await pi.read_until(lambda r: r.get("type") == "extension_ui_request"
                                      and r.get("method") in ("select", "confirm"))
        seen.extend(records)
        assert records[-1]["method"] == method, records[-1]
        await pi.send({"type": "extension_ui_response", "id": records[-1]["id"], **reply})
    return seen


@pytest.mark.slow
async def test_llama_command_loads_after_asking_and_never_unloads_unconfirmed(tmp_path: Path):
    with FakeLlamaRouter(dict(ROUTER_MODELS)) as router:
        pi = await start(tmp_path, router_env(tmp_path, router.url))
        try:
            await pi.send({"id": "p", "type": "prompt", "message": "/llama"})
            seen = await answer_dialogs(pi, [
                ("select", {"value": "llama-unloaded · unloaded"}),
                ("select", {"value": "Keep loaded and load"}),   # "2 models are loaded"
                ("select", {"value": "qwen-loaded · loaded"}),
                ("confirm", {"confirmed": False}),               # unload? no
                ("select", {"cancelled": True}),
            ])
            response, rest = await pi.response_to("p")
            assert response["success"] is True
            menus = [r for r in seen if r["method"] == "select"]
            assert menus[0]["title"] == f"llama.cpp · {router.url}"
            assert menus[0]["options"] == ["qwen-loaded · loaded", "gemma-sleeping · sleeping",
                                           "llama-unloaded · unloaded", "preset-unloaded · unloaded", "Close"]
            assert menus[1]["title"] == "2 models are loaded"
            assert menus[1]["options"] == ["Unload all and load", "Keep loaded and load", "Cancel"]
            confirm = next(r for r in seen if r["method"] == "confirm")
            assert (confirm["title"], confirm["message"]) == ("Unload model?", "qwen-loaded")
            notes = [r["message"] for r in seen + rest if r.get("method") == "notify"]
            assert "Loaded llama-unloaded" in notes
            assert router.posted("/models/load") == ["llama-unloaded"] and router.posted("/models/unload") == []
            assert "llama-unloaded" in await llama_models(pi)  # the provider follows the router
        finally:
            await pi.kill()


@pytest.mark.slow
async def test_unload_all_and_load_unloads_the_others_first(tmp_path: Path):
    with FakeLlamaRouter({"a": {"status": {"value": "loaded"}}, "b": {"status": {"value": "unloaded"}}}) as router:
        pi = await start(tmp_path, router_env(tmp_path, router.url))
        try:
            await pi.send({"id": "p", "type": "prompt", "message": "/llama"})
            await answer_dialogs(pi, [("select", {"value": "b · unloaded"}),
                                      ("select", {"value": "Unload all and load"}),
                                      ("select", {"value": "Close"})])
            await pi.response_to("p")
        finally:
            await pi.kill()
        assert router.posted("/models/unload") == ["a"] and router.posted("/models/load") == ["b"]
        assert router.models["a"]["status"]["value"] == "unloaded"


@pytest.mark.slow
async def test_disabling_the_builtin_removes_command_and_provider(tmp_path: Path):
    with FakeLlamaRouter(dict(ROUTER_MODELS)) as router:
        pi = await start(tmp_path, router_env(tmp_path, router.url, {"extensions": ["-builtin:llama.cpp"]}))
        try:
            commands = (await pi.request({"type": "get_commands"}))["data"]["commands"]
            assert [c["name"] for c in commands] == ["mcp"]  # only llama.cpp's built-in is removed
            assert await llama_models(pi) == []
        finally:
            await pi.kill()
        assert router.requests == []


@pytest.mark.reference
async def test_get_commands_lists_llama_as_pi_does(tmp_path: Path):
    pi = await start(tmp_path, {"PATH": os.environ["PATH"], "HOME": str(tmp_path)})
    try:
        ours = (await pi.request({"type": "get_commands"}))["data"]["commands"]
    finally:
        await pi.kill()
    done = subprocess.run([str(REFERENCE_PI), "--mode", "rpc", "--no-session"], input='{"id":"1","type":"get_commands"}\n',
                          capture_output=True, text=True, timeout=60, cwd=tmp_path, check=False,
                          env={"PATH": f"{REFERENCE_NODE_BIN}:{os.environ['PATH']}", "HOME": str(tmp_path)})
    theirs = json.loads(done.stdout.splitlines()[0])["data"]["commands"]
    assert [c for c in ours if c["name"] == "llama"] == [c for c in theirs if c["name"] == "llama"]


async def test_no_extensions_drops_llama_unless_named_with_e(tmp_path: Path):
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path)}
    for args, listed in ((("--no-extensions",), []), (("--no-extensions", "-e", "builtin:llama.cpp"), ["llama"])):
        pi = await start(tmp_path, env, *args)
        try:
            response = await pi.request({"type": "get_commands"})
            assert [c["name"] for c in response["data"]["commands"]] == listed
        finally:
            await pi.kill()


async def _available_llama(kind: str, home: Path, url: str) -> list[dict[str, Any]]:
    home.mkdir()
    env = router_env(home, url)
    if kind == "reference":
        env["PATH"] = f"{REFERENCE_NODE_BIN}:{env['PATH']}"
        pi = await RpcProcess.spawn([str(REFERENCE_PI), "--mode", "rpc", "--no-session"], cwd=home, env=env)
    else:
        pi = await start(home, env)
    try:
        for _ in range(50):  # pi fills the list in the background after start-up; ours has it at once
            models = (await pi.request({"type": "get_available_models"}))["data"]["models"]
            found = sorted((m for m in models if m["provider"] == "llama.cpp"), key=lambda m: m["id"])
            if found or kind == "ours":
                return found
            await asyncio.sleep(0.2)
        return []
    finally:
        await pi.kill()


@pytest.mark.reference
@pytest.mark.parametrize("autoload", [False, True])
async def test_live_model_list_matches_the_reference(tmp_path: Path, autoload: bool):
    """Loaded, sleeping and (with autoload) preset models, field by field, as pi lists them."""
    with FakeLlamaRouter(dict(ROUTER_MODELS), autoload=autoload) as router:
        ours = await _available_llama("ours", tmp_path / "ours", router.url)
        theirs = await _available_llama("reference", tmp_path / "reference", router.url)
    assert [m["id"] for m in ours] == [m["id"] for m in theirs] and ours
    assert ours == theirs
