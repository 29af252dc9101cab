"""The ``codemode`` tool: model-written JavaScript, run in a QuickJS worker, calling the other tools."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pi_coding_agent.coding.codemode.host import CatalogTool, SessionRuntimeView
    from pi_coding_agent.coding.resources.settings import Settings

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


def presented_declarations(tools: list[Any], settings: Settings) -> list[Any]:
    """The declarations of the active tools while ``codemode`` is one of them: mode ``on`` tells
    each declared tool how scripts call it, mode ``only`` hides the declared tools, so the model
    reaches them through scripts. Without codemode the declarations are unchanged (and no more of codemode is loaded)."""
    from pi_coding_agent.agent.tool import tool_declaration

    declarations = [tool_declaration(t) for t in tools]
    if not any(t.name == NAME for t in tools):
        return declarations
    from pi_coding_agent.coding.codemode.host import catalog_entry  # codemode is on: its catalog

    if settings.codemode_mode == "only":
        return [d for d, t in zip(declarations, tools, strict=True)
                if t.name == NAME or getattr(t, "exposure", "direct") != "direct"]
    for declaration, tool in zip(declarations, tools, strict=True):
        if tool.name != NAME:
            declaration["description"] = script_call_note(catalog_entry(tool))
    return declarations


def script_call_note(tool: CatalogTool) -> str:
    """Appended (mode ``on``) to a declared tool's description: how a script calls it."""
    from pi_coding_agent.coding.codemode.declarations import describe_output, to_identifier

    return (f"{tool.description.strip()}\n\nCodemode: `tools.{to_identifier(tool.name)}(args)` resolves to "
            f"{describe_output(tool.name, tool.output_schema or {'type': 'string'})}.")


__all__ = ["NAME", "enable_codemode", "presented_declarations"]
