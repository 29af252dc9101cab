"""The start-up choices a running session keeps consulting, and nothing else of the command line.

The runtime and the services around it (extensions, MCP, the model choice on every replacement)
read these; the rest of the options (which session file to open, the print-mode messages, what the
resources are) is spent by the assembly in ``bootstrap`` before the runtime exists. ``bootstrap``
builds this once from the options, whether the command line or the SDK's keywords gave them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import NamedTuple


class SessionOptions(NamedTuple):
    """Read-only: a tuple, which costs less at start-up than a frozen dataclass."""

    tools: tuple[str, ...] | None = None  # --tools entries (None: the default selection)
    exclude_tools: tuple[str, ...] = ()  # --exclude-tools
    no_tools: bool = False
    extensions: tuple[str, ...] = ()  # -e sources, absolute against the start-up directory
    no_extensions: bool = False
    no_mcp: bool = False
    no_mcp_files: bool = False  # SDK ``mcp_config_files=False``: only the servers given in code
    offline: bool = False  # no network for the extensions' model refresh
    approve: bool | None = None  # -a / -na; None: the trust rules (and project_trust) decide
    thinking: str | None = None  # --thinking, over the session's recorded level
    provider: str | None = None  # --provider, for the initial model without --model
    session_dir: str | None = None  # --session-dir, where /new puts its file
    flag_values: Mapping[str, bool | str] = {}  # extension flags' command-line values
