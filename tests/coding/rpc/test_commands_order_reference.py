"""``get_commands`` (RPC) and ``get_commands()`` (extension API) list commands in pi's order: extension
commands, the built-ins ``llama`` and ``mcp`` (extensions pi loads after the others), then prompt
templates. A client showing ``commands[0]`` shows the same command on both sides."""

from __future__ import annotations

import json
from pathlib import Path

from tests.support.fakes.llm_server import FakeLLMServer
from tests.support.rpc_compare import Workspace, needs_reference

EXTENSION = {"ours": """
import json

def setup(pi):
    pi.register_command("deploy", description="Deploy", handler=lambda args, ctx: None)
    pi.register_command("list", handler=lambda args, ctx: ctx.ui.notify(json.dumps([c["name"] for c in pi.get_commands()])))
""", "reference": """
export default function (pi) {
  pi.registerCommand("deploy", { description: "Deploy", handler: async () => {} });
  pi.registerCommand("list", { handler: async (args, ctx) => ctx.ui.notify(JSON.stringify(pi.getCommands().map((c) => c.name))) });
}
"""}


async def _commands(kind: str, root: Path) -> tuple[list[tuple[str, str]], list[str]]:
    """RPC ``get_commands`` (name, source) and the names an extension's ``get_commands()`` sees."""
    with FakeLLMServer() as server:
        ws = Workspace.create(root / kind, server.url)
        (ws.agent_dir / "prompts").mkdir()
        (ws.agent_dir / "prompts" / "greet.md").write_text("hello")
        (ws.agent_dir / "mcp.json").write_text('{"mcpServers": {}}')
        pi = await ws.spawn_with(kind, EXTENSION, "--no-session")
        try:
            listed = await pi.request({"type": "get_commands"})
            await pi.send({"type": "prompt", "message": "/list", "id": "l"})
            notice = (await pi.read_until(lambda r: r.get("method") == "notify"))[-1]
        finally:
            await pi.kill()
    return [(c["name"], c["source"]) for c in listed["data"]["commands"]], json.loads(notice["message"])


async def test_extension_commands_come_before_the_built_ins(tmp_path: Path) -> None:
    rpc, seen = await _commands("ours", tmp_path)
    assert [name for name, _ in rpc] == seen == ["deploy", "list", "llama", "mcp", "greet"]


@needs_reference
async def test_command_order_matches_the_reference(tmp_path: Path) -> None:
    assert await _commands("ours", tmp_path) == await _commands("reference", tmp_path)
