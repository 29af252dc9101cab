"""A server whose tools only ``codemode`` reaches, with ``autoEnableCodemode: false``: nothing can call
them, and pi says so once at start-up with a warning ``notify``. Ours alone, then beside pi 1.6.0."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.coding.mcp.test_mcp_switch import _fake
from tests.support.fakes.llm_server import FakeLLMServer
from tests.support.rpc_compare import Workspace, needs_reference

WARNING = ("MCP tools are only reachable from the codemode or tool_search tool, but neither is active "
           "(autoEnableCodemode is false); they cannot be called.")


async def _notices(kind: str, root: Path, auto_enable: bool) -> list[dict[str, Any]]:
    """The warning notifications of a start, up to the answer of a ``get_state`` sent a little later."""
    with FakeLLMServer() as server:
        ws = Workspace.create(root / kind, server.url)
        (ws.agent_dir / "mcp.json").write_text(json.dumps({
            "autoEnableCodemode": auto_enable,
            "mcpServers": {"hidden": _fake(root / f"{kind}.log", "hidden", "codemode")}}))
        pi = await ws.spawn(kind, "--no-session")
        try:
            await pi.request({"type": "get_state"})
            await pi.request({"type": "get_state"})  # a notify sent at session start is out by now
        finally:
            await pi.kill()
        records = [json.loads(line) for line in pi.raw_lines]
        return [{"method": r.get("method"), "message": r.get("message"), "notifyType": r.get("notifyType")}
                for r in records if r.get("type") == "extension_ui_request" and r.get("method") == "notify"
                and "reachable" in str(r.get("message"))]


@pytest.mark.slow
async def test_codemode_servers_with_auto_enable_off_are_named_unreachable_once(tmp_path: Path) -> None:
    assert await _notices("ours", tmp_path, False) == [
        {"method": "notify", "message": WARNING, "notifyType": "warning"}]
    assert await _notices("ours", tmp_path / "on", True) == []


@needs_reference
async def test_unreachable_warning_matches_reference(tmp_path: Path) -> None:
    assert await _notices("ours", tmp_path, False) == await _notices("reference", tmp_path, False)
