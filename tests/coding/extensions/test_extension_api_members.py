"""Extension API members of pi 1.6.0 beside the reference: ``get_mcp_servers``/``unregister_mcp_server``
(pi's ``getMcpServers``/``unregisterMcpServer``), and the command context's ``get_system_prompt_options``
and ``reload`` (``getSystemPromptOptions``/``reload``)."""

from __future__ import annotations

import json
from pathlib import Path

from tests.support.fakes.llm_server import FakeLLMServer
from tests.support.rpc_compare import Workspace, needs_reference
from tests.support.rpc_helpers import PYTHON, ROOT

SERVER = {"command": PYTHON, "args": ["-m", "tests.support.fakes.mcp_server", "stdio"], "cwd": str(ROOT)}
EXTENSION = {"ours": f"""
import json

SERVER = {json.dumps(SERVER)}


def setup(pi):
    def note(ctx, value):
        ctx.ui.notify(json.dumps(value, separators=(",", ":")))

    for event in ("session_start", "session_shutdown", "resources_discover"):
        pi.on(event, lambda e, ctx: note(ctx, {{k: v for k, v in e.items() if k != "cwd"}}))

    def servers(args, ctx):
        pi.register_mcp_server("extra", SERVER)
        note(ctx, pi.get_mcp_servers())
        pi.unregister_mcp_server("extra")
        note(ctx, pi.get_mcp_servers())
        options = ctx.get_system_prompt_options()
        note(ctx, [sorted(options), options["selectedTools"], options["cwd"] == ctx.cwd])

    async def reload(args, ctx):
        await ctx.reload()
        note(ctx, "after reload")

    pi.register_command("servers", handler=servers)
    pi.register_command("rl", handler=reload)
""", "reference": f"""
const SERVER = {json.dumps(SERVER)};
export default function (pi) {{
  const note = (ctx, value) => ctx.ui.notify(JSON.stringify(value));
  for (const event of ["session_start", "session_shutdown", "resources_discover"]) {{
    pi.on(event, (e, ctx) => {{ const {{ cwd, ...rest }} = e; note(ctx, rest); }});
  }}
  pi.registerCommand("servers", {{ handler: async (args, ctx) => {{
    pi.registerMcpServer("extra", SERVER);
    note(ctx, pi.getMcpServers());
    pi.unregisterMcpServer("extra");
    note(ctx, pi.getMcpServers());
    const options = ctx.getSystemPromptOptions();
    note(ctx, [Object.keys(JSON.parse(JSON.stringify(options))).sort(), options.selectedTools, options.cwd === ctx.cwd]);
  }} }});
  pi.registerCommand("rl", {{ handler: async (args, ctx) => {{ await ctx.reload(); note(ctx, "after reload"); }} }});
}}
"""}


async def _notes(kind: str, root: Path) -> list[str]:
    with FakeLLMServer() as server:
        ws = Workspace.create(root / kind, server.url)
        pi = await ws.spawn_with(kind, EXTENSION, "--no-session")
        try:
            for command in ("/servers", "/rl"):
                assert (await pi.request({"type": "prompt", "message": command}))["success"]
            await pi.request({"type": "get_state"})
        finally:
            await pi.kill()
        extension = str(ws.extension_file(kind, EXTENSION))
        return [json.loads(line).get("message", "").replace(extension, "EXT") for line in pi.raw_lines
                if json.loads(line).get("method") == "notify"]


async def test_mcp_servers_prompt_options_and_reload(tmp_path: Path) -> None:
    notes = await _notes("ours", tmp_path)
    assert json.loads(notes[2]) == [{"name": "extra", "config": SERVER, "extensionPath": "EXT"}]
    assert notes[3] == "[]"
    assert json.loads(notes[4])[1:] == [["read", "bash", "edit", "write", "codemode"], True]
    # the handler's ctx is stale after the reload: its last notify never comes, as in pi
    assert notes[5:] == ['{"type":"session_shutdown","reason":"reload"}', '{"type":"session_start","reason":"reload"}',
                         '{"type":"resources_discover","reason":"reload"}']


@needs_reference
async def test_members_match_the_reference(tmp_path: Path) -> None:
    assert await _notes("ours", tmp_path) == await _notes("reference", tmp_path)
