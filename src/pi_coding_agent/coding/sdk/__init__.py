"""The in-process Python API (``docs/sdk.md``); ``pi_coding_agent`` re-exports its public names.

One noun per module: ``create`` (``create_agent_session``), ``session`` (``Session``: ``run``,
``stream``, lifetime), ``result`` (``RunResult``), ``tool`` (``@tool``, ``FunctionTool``),
``permissions`` (``can_use_tool``), ``limits`` (``max_turns``/``max_cost``), ``errors`` (texts in
the SDK's words).
"""

from pi_coding_agent.coding.sdk.create import SessionStart, create_agent_session
from pi_coding_agent.coding.sdk.permissions import Allow, CanUseTool, Deny, ToolContext
from pi_coding_agent.coding.sdk.result import RunError, RunResult, Usage
from pi_coding_agent.coding.sdk.session import Session
from pi_coding_agent.coding.sdk.tool import FunctionTool, PythonTool, tool

__all__ = ["Allow", "CanUseTool", "Deny", "FunctionTool", "PythonTool", "RunError", "RunResult", "Session",
           "SessionStart", "ToolContext", "Usage", "create_agent_session", "tool"]
