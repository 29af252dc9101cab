"""``compat.supportsMidConvoSystemMessages`` (models.json): a system message that changes the prompt
mid-conversation (here: an extension narrows the tools between two prompts) is sent where it stands,
framed by section name, instead of being folded into the leading prompt. Ours alone, then the
request bodies side by side with the reference pi 1.6.0."""

from __future__ import annotations

import json
import re
import textwrap
from pathlib import Path
from typing import Any

import pytest

from tests.fakes.llm_server import FakeLLMServer
from tests.rpc_compare import Conversation, Workspace, needs_reference

NARROW = {
    "ours": """
def setup(pi):
    pi.register_command("narrow", handler=lambda args, ctx: pi.set_active_tools(["read"]))
""",
    "reference": """
export default function (pi) {
  pi.registerCommand("narrow", { handler: async () => { pi.setActiveTools(["read"]); } });
}
""",
}


async def _last_request(kind: str, root: Path, compat: dict[str, Any] | None) -> dict[str, Any]:
    with FakeLLMServer() as server:
        server.add({"content": [{"type": "text", "text": "one"}]}, {"content": [{"type": "text", "text": "two"}]})
        workspace = Workspace.create(root / kind, server.url)
        models = json.loads((workspace.agent_dir / "models.json").read_text())
        if compat is not None:
            models["providers"]["fake"]["models"][0]["compat"] = compat
        (workspace.agent_dir / "models.json").write_text(json.dumps(models))
        extension = root / kind / ("narrow.py" if kind == "ours" else "narrow.ts")
        extension.write_text(textwrap.dedent(NARROW[kind]))
        proc = await workspace.spawn(kind, "--no-session", "-e", str(extension))
        conv = Conversation(proc, server, workspace)
        try:
            await conv.prompt("first")
            await conv.request({"type": "prompt", "message": "/narrow"})
            await conv.prompt("second")
        finally:
            await proc.kill()
        body: dict[str, Any] = server.requests[-1]["body"]
        return body


def _shape(body: dict[str, Any]) -> dict[str, Any]:
    """Roles in order, the section names a mid-conversation system message updates, the tools."""
    messages = body["messages"]
    later = [m["content"] for m in messages[1:] if m["role"] in ("system", "developer")]
    return {"roles": [m["role"] for m in messages],
            "updated": [re.findall(r'Updated system prompt section "([a-z_-]+)"', text) for text in later],
            "tools": [t["function"]["name"] for t in body.get("tools", [])]}


CASES = {"folded": None, "off": {"supportsMidConvoSystemMessages": False},
         "in place": {"supportsMidConvoSystemMessages": True}}


@pytest.mark.parametrize("case", list(CASES))
async def test_mid_conversation_system_messages(case: str, tmp_path: Path) -> None:
    shape = _shape(await _last_request("ours", tmp_path, CASES[case]))
    assert shape["tools"] == ["read"]
    if case == "in place":
        assert shape["roles"] == ["system", "user", "assistant", "system", "user"]
        assert "tools" in shape["updated"][0]
    else:
        assert shape["roles"] == ["system", "user", "assistant", "user"]


@needs_reference
@pytest.mark.parametrize("case", list(CASES))
async def test_mid_conversation_system_messages_match_reference(case: str, tmp_path: Path) -> None:
    ours = await _last_request("ours", tmp_path, CASES[case])
    reference = await _last_request("reference", tmp_path, CASES[case])
    assert _shape(ours) == _shape(reference)
