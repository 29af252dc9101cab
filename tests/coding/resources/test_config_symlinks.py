"""Config files reached through symlinks are written through them, whole (issue 33, items 8 and 9).

Dotfile managers (stow, chezmoi, home-manager) keep settings.json, auth.json and the rest as links
into a repository: a write must replace the link's target, never the link. Side by side with the
reference pi where it does the same.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pi_coding_agent.ai.auth.oauth.store import CredentialFile
from pi_coding_agent.ai.models.store import write_entry
from pi_coding_agent.coding.mcp.config import edit_servers
from tests.support.cli_sides import FAKE_MODEL, fake_agent_env, needs_reference, pi_command
from tests.support.fakes.llm_server import FakeLLMServer
from tests.support.rpc_helpers import RpcProcess

SIDES = ["ours", pytest.param("reference", marks=needs_reference)]


def _linked(tmp_path: Path, link: Path, content: str | None) -> Path:
    """``link`` made a symlink to a file in a dotfiles directory (left missing when ``content`` is None)."""
    store = tmp_path / "dotfiles"
    store.mkdir(exist_ok=True)
    real = store / link.name
    if content is not None:
        real.write_text(content)
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(real)
    return real


@pytest.mark.parametrize("kind", SIDES)
@pytest.mark.parametrize("dangling", [False, True], ids=["link", "dangling"])
@pytest.mark.slow
async def test_a_settings_write_goes_through_the_link(
        tmp_path: Path, fake_llm: FakeLLMServer, kind: str, dangling: bool) -> None:
    env = fake_agent_env(tmp_path / "home", fake_llm.url)
    link = Path(env["PI_CODING_AGENT_DIR"]) / "settings.json"
    real = _linked(tmp_path, link, None if dangling else '{"theme": "dark"}')
    command, env = pi_command(kind, ["--mode", "rpc", "--no-session", *FAKE_MODEL], env)
    proc = await RpcProcess.spawn(command, cwd=tmp_path, env=env)
    try:
        assert (await proc.request({"type": "set_steering_mode", "mode": "all"}))["success"] is True
        await proc.request({"type": "get_state"})
    finally:
        await proc.kill()
    assert link.is_symlink()
    assert json.loads(real.read_text()) == {"steeringMode": "all", **({} if dangling else {"theme": "dark"})}


async def test_auth_json_is_written_through_its_link(tmp_path: Path) -> None:
    link = tmp_path / "agent" / "auth.json"
    real = _linked(tmp_path, link, '{"other": {"type": "api_key", "key": "k1"}}')
    real.chmod(0o640)

    async def store(_: object) -> dict[str, str]:
        return {"type": "api_key", "key": "k2"}

    await CredentialFile(link).modify("fake", store)
    assert link.is_symlink() and set(json.loads(real.read_text())) == {"other", "fake"}
    assert real.stat().st_mode & 0o777 == 0o640


async def test_models_store_and_mcp_json_are_written_through_their_links(tmp_path: Path) -> None:
    agent = tmp_path / "agent"
    mcp = _linked(tmp_path, agent / "mcp.json", '{"mcpServers": {}}')
    assert edit_servers(agent / "mcp.json", lambda servers, _: servers.update(s={"command": "x"}) or True)
    assert (agent / "mcp.json").is_symlink() and json.loads(mcp.read_text())["mcpServers"] == {"s": {"command": "x"}}
    store = _linked(tmp_path, agent / "models-store.json", None)
    await write_entry(agent, "p", {"models": []})
    assert (agent / "models-store.json").is_symlink() and json.loads(store.read_text())["p"]["models"] == []


@pytest.mark.parametrize("kind", SIDES)
@pytest.mark.parametrize("target", ["missing/auth.json", "auth.json"], ids=["dangling", "loop"])
async def test_a_broken_auth_json_link_starts_and_is_named_at_the_first_prompt(
        tmp_path: Path, fake_llm: FakeLLMServer, kind: str, target: str) -> None:
    env = fake_agent_env(tmp_path / "home", fake_llm.url)
    agent_dir = Path(env["PI_CODING_AGENT_DIR"])
    models = json.loads((agent_dir / "models.json").read_text())
    del models["providers"]["fake"]["apiKey"]  # the key would have come from auth.json
    (agent_dir / "models.json").write_text(json.dumps(models))
    (agent_dir / "auth.json").symlink_to(target)
    command, env = pi_command(kind, ["--mode", "rpc", "--no-session", *FAKE_MODEL], env)
    proc = await RpcProcess.spawn(command, cwd=tmp_path, env=env)
    try:
        assert (await proc.request({"type": "get_state"}))["success"] is True  # it started
        response = await proc.request({"type": "prompt", "message": "hi"})
    finally:
        await proc.kill()
    assert response["success"] is False
    assert str(agent_dir / "auth.json") in response["error"]
    assert ("ENOENT" if target.startswith("missing") else "ELOOP") in response["error"]
