"""ACP tool policy and config options over the SDK client: allow always, read-only, model and thinking level."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from acp.schema import ClientCapabilities, TextContentBlock

from tests.support.acp_client import RecordingClient, acp_pi, make_workspace
from tests.support.fakes.llm_server import FakeLLMServer

pytestmark = pytest.mark.timeout(180)


def _bash(call_id: str, command: str) -> dict[str, object]:
    return {"content": [{"type": "toolCall", "id": call_id, "name": "bash", "arguments": {"command": command}}]}


@pytest.mark.slow
async def test_allow_always_read_only_and_config_options(tmp_path: Path, fake_llm: FakeLLMServer) -> None:
    cwd, env = make_workspace(tmp_path, fake_llm, {"acp": {"defaultMode": "ask"}})
    prompts, skill = tmp_path / "agent" / "prompts", tmp_path / "agent" / "skills" / "greeter"
    prompts.mkdir()
    (prompts / "review.md").write_text("---\ndescription: Review a file\n---\nPlease review $1 carefully.\n")
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text("---\nname: greeter\ndescription: Greets people\n---\nSay hello.\n")
    client = RecordingClient()
    async with acp_pi(client, cwd, env) as (conn, _):
        await conn.initialize(protocol_version=1, client_capabilities=ClientCapabilities())
        new = await conn.new_session(cwd=str(cwd), mcp_servers=[])
        session_id = new.session_id
        assert new.modes is not None and new.modes.current_mode_id == "ask"  # from settings.json

        fake_llm.add(_bash("c1", "echo one > one.txt"), _bash("c2", "echo two > two.txt"),
                     {"content": [{"type": "text", "text": "both"}]})
        client.permission_answers = ["allow-always"]
        await conn.prompt(session_id=session_id, prompt=[TextContentBlock(type="text", text="run")])
        assert (cwd / "one.txt").exists() and (cwd / "two.txt").exists()
        commands = client.of_kind("available_commands_update")[-1]["availableCommands"]  # sent after session/new
        assert {"name": "review", "description": "Review a file", "input": {"hint": "arguments"}} in commands
        assert {"name": "skill:greeter", "description": "Greets people"} in commands
        assert len(client.permission_requests) == 1  # the second bash call was not asked again
        assert client.permission_requests[0]["toolCall"]["kind"] == "execute"

        options = await conn.set_config_option(session_id=session_id, config_id="mode", value="read-only")
        assert next(o for o in dump_options(options) if o["id"] == "mode")["currentValue"] == "read-only"
        fake_llm.add(_bash("c3", "echo three > three.txt"), {"content": [{"type": "text", "text": "refused"}]})
        await conn.prompt(session_id=session_id, prompt=[TextContentBlock(type="text", text="again")])
        assert not (cwd / "three.txt").exists() and len(client.permission_requests) == 1
        assert [u for u in client.updates if u.get("toolCallId") == "c3"][-1]["status"] == "failed"

        changed = dump_options(await conn.set_config_option(session_id=session_id, config_id="model",
                                                            value="fake/fake-reasoner"))
        assert next(o for o in changed if o["id"] == "model")["currentValue"] == "fake/fake-reasoner"
        levels = next(o for o in changed if o["id"] == "thought_level")
        assert [c["value"] for c in levels["options"]][:2] == ["off", "minimal"]
        after = dump_options(await conn.set_config_option(session_id=session_id, config_id="thought_level",
                                                          value="high"))
        assert next(o for o in after if o["id"] == "thought_level")["currentValue"] == "high"
        assert client.of_kind("config_option_update")  # the level change was announced
    saved = next(p for p in tmp_path.rglob("*.jsonl") if session_id in p.read_text().split("\n", 1)[0])
    entries = [json.loads(line) for line in saved.read_text().splitlines()]
    assert {"provider": "fake", "modelId": "fake-reasoner"}.items() <= next(
        e for e in reversed(entries) if e["type"] == "model_change").items()
    assert next(e for e in reversed(entries) if e["type"] == "thinking_level_change")["thinkingLevel"] == "high"


def dump_options(response: object) -> list[dict[str, object]]:
    data = response.model_dump(by_alias=True, exclude_none=True, mode="json")  # type: ignore[attr-defined]
    options: list[dict[str, object]] = data["configOptions"]
    return options


@pytest.mark.slow
async def test_an_extension_confirm_dialog_reaches_the_client(tmp_path: Path, fake_llm: FakeLLMServer) -> None:
    """The example permission-gate extension asks ``ctx.ui.confirm``; over ACP that is a permission request."""
    gate = Path(__file__).resolve().parents[3] / "src/pi_coding_agent/coding/extensions/examples/permission_gate.py"
    cwd, env = make_workspace(tmp_path, fake_llm)
    client = RecordingClient()
    fake_llm.add(_bash("d1", "sudo echo hi"), {"content": [{"type": "text", "text": "asked"}]},
                 _bash("d2", "sudo echo again"), {"content": [{"type": "text", "text": "ran"}]})
    async with acp_pi(client, cwd, env, "-e", str(gate)) as (conn, _):
        await conn.initialize(protocol_version=1, client_capabilities=ClientCapabilities())
        session_id = (await conn.new_session(cwd=str(cwd), mcp_servers=[])).session_id
        client.permission_answers = ["no", "yes"]
        await conn.prompt(session_id=session_id, prompt=[TextContentBlock(type="text", text="one")])
        await conn.prompt(session_id=session_id, prompt=[TextContentBlock(type="text", text="two")])
    asked = client.permission_requests
    assert [r["toolCall"]["title"] for r in asked] == ["Allow this tool call?"] * 2
    assert [o["optionId"] for o in asked[0]["options"]] == ["yes", "no"]
    assert "runs as root" in asked[0]["toolCall"]["content"][0]["content"]["text"]
    statuses = {u["toolCallId"]: u["status"] for u in client.updates if u.get("status") in ("completed", "failed")}
    assert statuses["d1"] == "failed"  # refused through the dialog
    assert statuses["d2"] in ("completed", "failed")  # allowed: it ran (sudo may be missing here)
    blocked = [m for m in fake_llm.requests[1]["body"]["messages"] if m["role"] == "tool"]
    assert "Blocked by the user" in blocked[-1]["content"]
    ran = [m for m in fake_llm.requests[3]["body"]["messages"] if m["role"] == "tool"]
    assert "Blocked" not in ran[-1]["content"]


@pytest.mark.sandbox
@pytest.mark.slow
async def test_the_sandbox_is_a_session_config_option(tmp_path: Path, fake_llm: FakeLLMServer) -> None:
    """ACP's config option ``sandbox`` sets the session's sandbox mode (docs/sandbox.md)."""
    cwd, env = make_workspace(tmp_path, fake_llm)
    env["TMPDIR"] = str(cwd)  # the temp dir is writable too: keep the "outside" below out of it
    outside = tmp_path / "outside"
    outside.mkdir()
    client = RecordingClient()
    async with acp_pi(client, cwd, env) as (conn, _):
        await conn.initialize(protocol_version=1, client_capabilities=ClientCapabilities())
        session = await conn.new_session(cwd=str(cwd), mcp_servers=[])
        assert next(o for o in dump_options(session) if o["id"] == "sandbox")["currentValue"] == "off"
        options = await conn.set_config_option(session_id=session.session_id, config_id="sandbox",
                                               value="workspace-write")
        assert next(o for o in dump_options(options) if o["id"] == "sandbox")["currentValue"] == "workspace-write"
        fake_llm.add(_bash("s1", f"echo x > {outside}/escaped.txt; echo y > inside.txt"),
                     {"content": [{"type": "text", "text": "done"}]})
        await conn.prompt(session_id=session.session_id, prompt=[TextContentBlock(type="text", text="go")])
    assert not (outside / "escaped.txt").exists() and (cwd / "inside.txt").read_text() == "y\n"
