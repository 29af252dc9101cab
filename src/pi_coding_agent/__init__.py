"""pi in Python: a headless coding agent compatible with pi 1.6.0's RPC protocol and session files.

Three layers, imports only go downward:
``ai`` (LLM layer) <- ``agent`` (agent core) <- ``coding`` (the coding agent: tools, sessions, modes, CLI).

``create_agent_session`` (``coding/sdk.py``, see ``docs/sdk.md``) runs a session in this process;
it is imported on first use so that ``pi`` itself starts without it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pi_coding_agent.coding.sdk import create_agent_session

__version__ = "0.1.0"
"""This package's own release (``pip show pi-coding-agent-py``)."""

PI_COMPATIBLE_VERSION = "1.6.0"
"""The pi release whose protocol and files this package implements: the one place to bump it."""

__all__ = ["PI_COMPATIBLE_VERSION", "__version__", "create_agent_session"]


def __getattr__(name: str) -> Any:
    if name == "create_agent_session":
        from pi_coding_agent.coding.sdk import create_agent_session

        return create_agent_session
    raise AttributeError(f"module 'pi_coding_agent' has no attribute {name!r}")
