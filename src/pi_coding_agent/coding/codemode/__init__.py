"""The ``codemode`` tool: model-written JavaScript, run in a QuickJS worker, calling the other tools."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from pi_coding_agent.coding.tools.builtin import LazyTool

if TYPE_CHECKING:
    from pi_coding_agent.agent.tool import AgentTool
    from pi_coding_agent.coding.codemode.host import SessionCodemodeHost, SessionRuntimeView
    from pi_coding_agent.coding.tools.process_groups import ProcessRegistry

NAME = "codemode"


def codemode_tools(runtime: Callable[[], SessionRuntimeView], processes: ProcessRegistry) -> dict[str, AgentTool]:
    """The registry entry for ``codemode`` (inactive unless ``defaultTools``/``--tools`` name it): a
    handle, whose module loads when the tool is first declared; its workers are tracked in the
    session's ``processes``."""
    def host() -> SessionCodemodeHost:
        from pi_coding_agent.coding.codemode.host import SessionCodemodeHost  # with the first script

        return SessionCodemodeHost(runtime())

    def tool() -> AgentTool:
        from pi_coding_agent.coding.codemode.tool import CodemodeTool

        return CodemodeTool(host, lambda: runtime().settings, processes)

    return {NAME: LazyTool(NAME, tool)}


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


__all__ = ["NAME", "codemode_tools", "enable_codemode"]
