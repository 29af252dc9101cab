"""Tool declarations and the initial active set (--tools, --no-tools)."""

from pathlib import Path

import pytest

from pi_coding_agent.agent.tool import AgentTool
from pi_coding_agent.coding.tools.base import ToolEnv
from pi_coding_agent.coding.tools.builtin import (
    BUILTIN_TOOL_NAMES,
    DEFAULT_ACTIVE_TOOLS,
    create_builtin_tools,
)
from pi_coding_agent.coding.tools.selection import ToolSelectionError, select_tools


@pytest.fixture
def tools() -> dict[str, AgentTool]:
    return create_builtin_tools(ToolEnv(cwd=Path("/")))


def names(selected: list[AgentTool]) -> list[str]:
    return [t.name for t in selected]


def test_declarations_match_pi_parameter_names(tools: dict[str, AgentTool]) -> None:
    assert tuple(tools) == BUILTIN_TOOL_NAMES
    expected = {
        "read": (["path"], ["path", "offset", "limit"]),
        "bash": (["command"], ["command", "timeout"]),
        "edit": (["path", "edits"], ["path", "edits"]),
        "write": (["path", "content"], ["path", "content"]),
        "grep": (["pattern"], ["pattern", "path", "glob", "ignoreCase", "literal", "context", "limit"]),
        "find": (["pattern"], ["pattern", "path", "limit"]),
        "ls": (None, ["path", "limit"]),
    }
    for name, (required, props) in expected.items():
        schema = tools[name].parameters
        assert schema.get("required") == required
        assert list(schema["properties"]) == props
        assert tools[name].execution_mode == "parallel"
    assert tools["edit"].parameters["properties"]["edits"]["items"]["required"] == ["oldText", "newText"]


def test_prompt_snippets_and_guidelines(tools: dict[str, AgentTool]) -> None:
    read, bash, edit = tools["read"], tools["bash"], tools["edit"]
    assert read.prompt_snippet == "Read file contents"  # type: ignore[attr-defined]
    assert read.prompt_guidelines == ["Use read to examine files instead of cat or sed."]  # type: ignore[attr-defined]
    assert bash.prompt_snippet == "Execute bash commands (ls, grep, find, etc.)"  # type: ignore[attr-defined]
    assert len(edit.prompt_guidelines) == 2  # type: ignore[attr-defined]
    assert tools["grep"].prompt_guidelines == []  # type: ignore[attr-defined]


def test_selection_modes(tools: dict[str, AgentTool]) -> None:
    defaults = list(DEFAULT_ACTIVE_TOOLS)
    assert names(select_tools(tools, defaults, None, False)) == defaults
    assert names(select_tools(tools, defaults, None, True)) == []
    assert names(select_tools(tools, defaults, "ls, read", False)) == ["ls", "read"]
    assert names(select_tools(tools, defaults, "+grep,-bash", False)) == ["read", "edit", "write", "grep"]
    assert names(select_tools(tools, defaults, "+ls", True)) == ["ls"]
    assert names(select_tools(tools, defaults, "*e*", False)) == ["read", "edit", "write", "grep"]
    assert names(select_tools(tools, defaults, "unknown", False)) == []


def test_mixed_list_is_rejected(tools: dict[str, AgentTool]) -> None:
    with pytest.raises(ToolSelectionError, match=r"^tool names cannot be mixed with \+name or -name entries$"):
        select_tools(tools, [], "read,+ls", False)
    with pytest.raises(ToolSelectionError, match=r"not patterns: \+gr\*$"):
        select_tools(tools, [], "+gr*", False)


async def test_a_session_tool_handle_is_the_tool_once_used(tmp_path: Path) -> None:
    """What the runtime registers: handles with the tools' names that load on first use and from then
    on declare, abort and execute as the tools do (``tools.builtin.LazyTool``)."""
    from pi_coding_agent.agent.tool import tool_declaration
    from pi_coding_agent.ai.abort import AbortSignal
    from pi_coding_agent.coding.tools.builtin import LazyTool, lazy_builtin_tools

    env = ToolEnv(cwd=tmp_path)
    handles = lazy_builtin_tools(env)
    eager = create_builtin_tools(env)
    assert tuple(handles) == BUILTIN_TOOL_NAMES
    assert all(isinstance(h, LazyTool) and h._tool is None for h in handles.values())  # names only so far
    assert names(select_tools(handles, list(DEFAULT_ACTIVE_TOOLS), None, False)) == list(DEFAULT_ACTIVE_TOOLS)
    assert all(h._tool is None for h in handles.values())  # selecting by name loads nothing
    for name, handle in handles.items():
        assert tool_declaration(handle) == tool_declaration(eager[name])
        assert handle.prompt_snippet == eager[name].prompt_snippet
        assert list(handle.prompt_guidelines) == list(eager[name].prompt_guidelines)
        assert handle.handles_abort is eager[name].handles_abort
    assert handles["bash"].handles_abort is True  # bash reports "Command aborted" itself
    (tmp_path / "a.txt").write_text("hello\n")
    result = await handles["read"].execute("c1", {"path": "a.txt"}, AbortSignal(), lambda _: None)
    assert result.content == [{"type": "text", "text": "hello\n"}]
    with pytest.raises(AttributeError):
        handles["ls"].no_such_member  # noqa: B018  # a missing member stays missing after the load
