"""The built-in tools by name, and the handles a session holds until a tool is first used.

A session registers all seven tools at start-up but a client's first commands (``get_state``,
``get_commands``…) read nothing of them but their names; the tool modules (with their schemas,
dataclasses and helpers) are about a tenth of the start-up's instructions, so a session's tools are
``LazyTool`` handles that import their module on the first read of anything else.
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pi_coding_agent.agent.tool import AgentTool

    from .base import BuiltinTool, ToolEnv

BUILTIN_TOOL_NAMES = ("read", "bash", "edit", "write", "grep", "find", "ls")
DEFAULT_ACTIVE_TOOLS = ("read", "bash", "edit", "write")

# tool name -> (module of this package, class)
_CLASSES = {"read": ("read", "ReadTool"), "bash": ("bash", "BashTool"), "edit": ("edit", "EditTool"),
            "write": ("write", "WriteTool"), "grep": ("grep", "GrepTool"), "find": ("find", "FindTool"),
            "ls": ("ls", "LsTool")}


def tool_modules() -> list[str]:
    """The modules of the built-in tools (what a warm-up imports ahead of the first prompt)."""
    return [f"{__package__}.{module}" for module, _ in _CLASSES.values()]


def builtin_tool(name: str, env: ToolEnv) -> BuiltinTool:
    """The built-in tool ``name`` bound to ``env`` (its module imported now)."""
    module, cls = _CLASSES[name]
    tool_class: type[BuiltinTool] = getattr(importlib.import_module(f"{__package__}.{module}"), cls)
    return tool_class(env)


def create_builtin_tools(env: ToolEnv) -> dict[str, AgentTool]:
    """One instance of every built-in tool bound to ``env``, keyed by name in pi's order."""
    return {name: builtin_tool(name, env) for name in BUILTIN_TOOL_NAMES}


def lazy_builtin_tools(env: ToolEnv) -> dict[str, AgentTool]:
    """``create_builtin_tools`` as handles: each tool is made on the first use of anything but its name."""
    return {name: LazyTool(name, functools.partial(builtin_tool, name, env)) for name in BUILTIN_TOOL_NAMES}


class LazyTool:
    """A tool known by its name alone until anything else of it is read; from then on every attribute
    (declaration, ``execute``, ``handles_abort``) is the real tool's. Identity stays the handle's, so a
    session's tool lists compare and replace handles as they would tools."""

    def __init__(self, name: str, load: Callable[[], AgentTool]) -> None:
        self.name = name
        self._load: Callable[[], AgentTool] | None = load
        self._tool: AgentTool | None = None

    @property
    def loaded(self) -> AgentTool:
        """The real tool, made on the first call."""
        if self._tool is None:
            assert self._load is not None
            self._tool, self._load = self._load(), None
        return self._tool

    def __getattr__(self, attr: str) -> Any:
        if attr.startswith("__") or attr in ("_load", "_tool"):  # copy/pickle probes, a half-built handle
            raise AttributeError(attr)
        if self._tool is None:  # the declaration, as the model and the system prompt read it, needs no module
            declared = _declared(self.name, attr)
            if declared is not _UNDECLARED:
                return declared
        return getattr(self.loaded, attr)

    def __repr__(self) -> str:
        return f"<LazyTool {self.name} {'loaded' if self._tool is not None else 'not loaded'}>"


_UNDECLARED = object()


def _declared(name: str, attr: str) -> Any:
    """A declaration field of built-in tool ``name`` as its instance would hold it, or ``_UNDECLARED``."""
    from .declarations import DECLARATIONS

    fields = DECLARATIONS.get(name)
    if fields is None:  # not one of the seven (codemode's handle): its module answers
        return _UNDECLARED
    if attr == "prompt_guidelines":
        return list(fields.get("GUIDELINES", ()))
    return fields.get(attr, _UNDECLARED)
