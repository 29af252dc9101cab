"""The ``codemode`` tool: model-written JavaScript, run in a QuickJS worker, calling the other tools."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from pi_coding_agent.agent.tool import AgentTool
from pi_coding_agent.coding.codemode.host import CatalogTool, CodemodeHost, Namespace, SessionCodemodeHost
from pi_coding_agent.coding.codemode.tool import NAME, CodemodeTool

if TYPE_CHECKING:
    from pi_coding_agent.coding.runtime import SessionRuntime


def codemode_tools(runtime: Callable[[], SessionRuntime]) -> dict[str, AgentTool]:
    """The registry entry for ``codemode`` (inactive unless ``defaultTools``/``--tools`` name it)."""
    tool = CodemodeTool(lambda: SessionCodemodeHost(runtime()), lambda: runtime().settings)
    return {NAME: tool}


__all__ = ["NAME", "CatalogTool", "CodemodeHost", "CodemodeTool", "Namespace", "SessionCodemodeHost",
           "codemode_tools"]
