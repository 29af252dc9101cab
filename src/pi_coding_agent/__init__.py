"""pi in Python: a headless coding agent compatible with pi 1.6.0's RPC protocol and session files.

Three layers, imports only go downward:
``ai`` (LLM layer) <- ``agent`` (agent core) <- ``coding`` (the coding agent: tools, sessions, modes, CLI).
"""

__version__ = "0.1.0"
"""This package's own release (``pip show pi-coding-agent-py``)."""

PI_COMPATIBLE_VERSION = "1.6.0"
"""The pi release whose protocol and files this package implements: the one place to bump it."""
