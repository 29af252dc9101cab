"""``--api-key`` is a credential for the provider of the model the command line chose, as in pi: that
provider's models are listed by ``get_available_models``, accepted by ``set_model`` and sent the key,
while other providers keep their own credentials. Ours alone, then beside the reference."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.support.fakes.llm_server import FakeLLMServer
from tests.support.reference_pi import REFERENCE_NODE_BIN, REFERENCE_PI
from tests.support.rpc_compare import needs_reference
from tests.support.rpc_helpers import PYTHON, RpcProcess

SECRET = "sk-inline-only-1234"


@dataclass
class Seen:
    available: list[str]
    set_model: dict[str, Any]
    unknown: dict[str, Any]
    authorization: str | None


def _workspace(root: Path, url: str) -> tuple[Path, dict[str, str]]:
    """Provider ``gate`` has no key anywhere; ``fake`` has its own in models.json."""
    agent_dir, cwd, home = root / "agent", root / "work", root / "home"
    for directory in (agent_dir, cwd, home):
        directory.mkdir(parents=True)
    (agent_dir / "models.json").write_text(json.dumps({"providers": {
        "fake": {"baseUrl": f"{url}/v1", "api": "openai-completions", "apiKey": "dummy",
                 "models": [{"id": "fake-model"}]},
        "gate": {"baseUrl": f"{url}/v1", "api": "openai-completions",
                 "models": [{"id": "gate-a"}, {"id": "gate-b"}]}}}))
    return cwd, {**os.environ, "PI_CODING_AGENT_DIR": str(agent_dir), "HOME": str(home)}


async def _spawn(kind: str, cwd: Path, env: dict[str, str], *args: str) -> RpcProcess:
    argv = ["--mode", "rpc", "--no-session", *args]
    if kind == "ours":
        return await RpcProcess.spawn([PYTHON, "-m", "pi_coding_agent", *argv], cwd=cwd, env=env)
    env = {**env, "PATH": f"{REFERENCE_NODE_BIN}:{env.get('PATH', '')}"}
    return await RpcProcess.spawn([str(REFERENCE_PI), *argv], cwd=cwd, env=env)


def _answer(response: dict[str, Any]) -> dict[str, Any]:
    data = response.get("data")
    shown = {"id": data["id"], "provider": data["provider"]} if response["success"] else response["error"]
    return {"success": response["success"], "shown": shown}


async def _play(kind: str, root: Path) -> Seen:
    with FakeLLMServer() as server:
        server.add({"content": [{"type": "text", "text": "hello"}]})
        cwd, env = _workspace(root / kind, server.url)
        proc = await _spawn(kind, cwd, env, "--provider", "gate", "--model", "gate-a", "--api-key", SECRET)
        try:
            models = (await proc.request({"type": "get_available_models"}))["data"]["models"]
            chosen = await proc.request({"type": "set_model", "provider": "gate", "modelId": "gate-b"})
            unknown = await proc.request({"type": "set_model", "provider": "gate", "modelId": "gate-z"})
            await proc.send({"type": "prompt", "message": "hi"})
            await proc.read_until(lambda r: r["type"] == "agent_settled")
        finally:
            await proc.kill()
        headers = {k.lower(): v for k, v in server.requests[0]["headers"].items()} if server.requests else {}
        return Seen(sorted(f"{m['provider']}/{m['id']}" for m in models), _answer(chosen), _answer(unknown),
                    headers.get("authorization"))


async def test_inline_key_model_is_listed_accepted_and_used(tmp_path: Path) -> None:
    seen = await _play("ours", tmp_path)
    assert seen.available == ["fake/fake-model", "gate/gate-a", "gate/gate-b"]
    assert seen.set_model == {"success": True, "shown": {"id": "gate-b", "provider": "gate"}}
    assert seen.unknown == {"success": False, "shown": "Model not found: gate/gate-z"}
    assert seen.authorization == f"Bearer {SECRET}"


async def test_inline_key_needs_a_model(tmp_path: Path) -> None:
    with FakeLLMServer() as server:
        cwd, env = _workspace(tmp_path, server.url)
        proc = await _spawn("ours", cwd, env, "--api-key", SECRET)
        assert await proc.wait() == 1
        stderr = await proc.stderr_text()
    assert "--api-key requires a model to be specified via --model, --provider/--model, or --models" in stderr
    assert SECRET not in stderr


@needs_reference
async def test_inline_key_models_match_reference(tmp_path: Path) -> None:
    assert await _play("ours", tmp_path) == await _play("reference", tmp_path)
