"""pi in Python: a headless coding agent compatible with pi 1.6.0's RPC protocol and session files.

Three layers, imports only go downward:
``ai`` (LLM layer) <- ``agent`` (agent core) <- ``coding`` (the coding agent: tools, sessions, modes, CLI).

The SDK's public names (``create_agent_session``, ``tool``, ``PiError``..., see ``docs/sdk.md``)
are attributes of this package, each imported on first use so that ``pi`` itself starts without
them; ``pi_coding_agent.events`` holds the event types.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pi_coding_agent.agent.tool import ToolResult
    from pi_coding_agent.ai.models.resolution import ModelResolutionError
    from pi_coding_agent.ai.pi_error import PiError
    from pi_coding_agent.ai.stream import ProviderError
    from pi_coding_agent.coding.errors import ConfigurationError, SessionError
    from pi_coding_agent.coding.sdk import (
        Allow,
        Deny,
        FunctionTool,
        RunError,
        RunResult,
        Session,
        ToolContext,
        Usage,
        create_agent_session,
        tool,
    )
    from pi_coding_agent.coding.virtual_models import Route, RouteRequest, VirtualModel

__version__ = "0.1.0"
"""This package's own release (``pip show pi-coding-agent-py``)."""

PI_COMPATIBLE_VERSION = "1.6.0"
"""The pi release whose protocol and files this package implements: the one place to bump it."""

_HOMES = {
    "pi_coding_agent.coding.sdk": ("Allow", "Deny", "FunctionTool", "RunError", "RunResult", "Session", "ToolContext",
                                   "Usage", "create_agent_session", "tool"),
    "pi_coding_agent.ai.pi_error": ("PiError",),
    "pi_coding_agent.ai.stream": ("ProviderError",),
    "pi_coding_agent.ai.models.resolution": ("ModelResolutionError",),
    "pi_coding_agent.coding.errors": ("ConfigurationError", "SessionError"),
    "pi_coding_agent.agent.tool": ("ToolResult",),
    "pi_coding_agent.coding.virtual_models": ("Route", "RouteRequest", "VirtualModel"),
}
_HOME_OF = {name: module for module, names in _HOMES.items() for name in names}

__all__ = [
    "PI_COMPATIBLE_VERSION", "Allow", "ConfigurationError", "Deny", "FunctionTool", "ModelResolutionError", "PiError",
    "ProviderError", "Route", "RouteRequest", "RunError", "RunResult", "Session", "SessionError", "ToolContext",
    "ToolResult", "Usage", "VirtualModel", "__version__", "create_agent_session", "tool",
]


def __getattr__(name: str) -> Any:
    module = _HOME_OF.get(name)
    if module is None:
        raise AttributeError(f"module 'pi_coding_agent' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
