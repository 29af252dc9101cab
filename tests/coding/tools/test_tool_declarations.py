"""The built-in tools' declarations come from ``tools/declarations.py``: a ``LazyTool`` handle answers
them without loading its tool, and any other handle (codemode's) still asks its tool."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

from pi_coding_agent.agent.tool import tool_declaration
from pi_coding_agent.coding.tools.base import ToolEnv
from pi_coding_agent.coding.tools.builtin import (
    BUILTIN_TOOL_NAMES,
    LazyTool,
    create_builtin_tools,
    lazy_builtin_tools,
)


def _unloadable() -> Any:
    raise AssertionError("the tool's module was loaded for its declaration")


def test_a_handle_declares_its_tool_without_loading_it(tmp_path: Path) -> None:
    env = ToolEnv(cwd=tmp_path)
    tools, handles = create_builtin_tools(env), lazy_builtin_tools(env)
    for name in BUILTIN_TOOL_NAMES:
        handle, tool = LazyTool(name, _unloadable), tools[name]
        assert tool_declaration(handle) == tool_declaration(tool)  # type: ignore[arg-type]
        assert (handle.label, handle.prompt_snippet, handle.prompt_guidelines) == (
            tool.label, tool.prompt_snippet, tool.prompt_guidelines)
        assert handle._tool is None
        assert handles[name].execute == handles[name].loaded.execute  # anything else loads it


def test_a_handle_of_another_tool_asks_its_tool(tmp_path: Path) -> None:
    codemode = SimpleNamespace(name="codemode", prompt_guidelines=["scripts call tools"], description="run JS")
    handle = LazyTool("codemode", lambda: codemode)  # type: ignore[arg-type,return-value]
    assert handle.prompt_guidelines == ["scripts call tools"] and handle.description == "run JS"
