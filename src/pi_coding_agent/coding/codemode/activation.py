"""The ``codemode`` tool: model-written JavaScript, run in a QuickJS worker, calling the other tools."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pi_coding_agent.coding.codemode.host import SessionRuntimeView

NAME = "codemode"


def enable_codemode(runtime: SessionRuntimeView, auto_enable: object = True) -> bool:
    """Make ``codemode`` active, as pi does when an MCP server with ``codemode`` exposure connects;
    ``auto_enable`` is mcp.json's ``autoEnableCodemode`` (only ``false`` prevents it). True when
    codemode is active afterwards."""
    tools = runtime.agent.tools
    if any(tool.name == NAME for tool in tools):
        return True
    tool = runtime.all_tools.get(NAME)
    if auto_enable is False or tool is None:
        return False
    runtime.agent.set_tools([*tools, tool])
    return True


__all__ = ["NAME", "enable_codemode"]
