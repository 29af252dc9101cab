"""The built-in coding tools (read, bash, edit, write, grep, find, ls) and the user-bash executor."""

from __future__ import annotations

from pi_coding_agent.agent.tool import AgentTool

from .base import BuiltinTool, ToolEnv
from .bash import BashTool
from .edit import EditTool
from .find import FindTool
from .grep import GrepTool
from .ls import LsTool
from .process_groups import ProcessRegistry
from .read import ReadTool
from .selection import ToolSelectionError, select_tools
from .shell import ShellError
from .user_bash import run_user_bash
from .write import WriteTool

BUILTIN_TOOL_NAMES = ("read", "bash", "edit", "write", "grep", "find", "ls")
DEFAULT_ACTIVE_TOOLS = ("read", "bash", "edit", "write")

_TOOL_CLASSES: tuple[type[BuiltinTool], ...] = (ReadTool, BashTool, EditTool, WriteTool, GrepTool, FindTool, LsTool)


def create_builtin_tools(env: ToolEnv) -> dict[str, AgentTool]:
    """One instance of every built-in tool bound to ``env``, keyed by name in pi's order."""
    return {cls.name: cls(env) for cls in _TOOL_CLASSES}


__all__ = [
    "BUILTIN_TOOL_NAMES",
    "DEFAULT_ACTIVE_TOOLS",
    "BuiltinTool",
    "ProcessRegistry",
    "ShellError",
    "ToolEnv",
    "ToolSelectionError",
    "create_builtin_tools",
    "run_user_bash",
    "select_tools",
]
