"""How MCP tools and servers are named for the model: ``mcp__<server>__<tool>`` as pi names them.

Names are the identity of a tool in session files (``toolsAdded``) and in the model's training, so
the character rule, the 64-character limit and the 8-hex-digit sha256 suffix are pi's exactly.
"""

from __future__ import annotations

import re
from collections.abc import Callable

MAX_TOOL_NAME_LENGTH = 64  # providers accept at most 64 characters of [A-Za-z0-9_-]
_UNSAFE = re.compile(r"[^A-Za-z0-9_]")
SERVER_NAME = re.compile(r"^[A-Za-z0-9_-]+$")


def tool_name(server: str, tool: str, is_taken: Callable[[str], bool] = lambda _name: False) -> str:
    """The model-facing name; a hash of ``server\\0tool`` replaces the end when too long or taken."""
    name = _UNSAFE.sub("_", f"mcp__{server}__{tool}")
    if len(name) <= MAX_TOOL_NAME_LENGTH and not is_taken(name):
        return name
    import hashlib  # OpenSSL's libcrypto: loaded by the first long or clashing name, not at start-up

    digest = hashlib.sha256(f"{server}\0{tool}".encode()).hexdigest()[:8]
    return f"{name[:MAX_TOOL_NAME_LENGTH - len(digest) - 1]}_{digest}"


def namespace(server: str) -> str:
    """``mcp__<server>`` with ``-`` as ``_``: servers differing only there would share it."""
    return f"mcp__{server.replace('-', '_')}"


def server_summary(description: str | None, instructions: str | None) -> str:
    """One line for the system prompt: the configured description, else the server's instructions."""
    text = (description or "").strip() or (instructions or "").strip()
    return text.split("\n", 1)[0].strip()


def pattern_regex(pattern: str) -> re.Pattern[str]:
    """A tool-name pattern where ``*`` matches anything (``toolExposure``, ``--tools``)."""
    return re.compile("^" + ".*".join(re.escape(part) for part in pattern.split("*")) + "$")


def name_matcher(entries: list[str]) -> Callable[[str], bool]:
    """Whether a name equals one of ``entries`` or matches one of its ``*`` patterns."""
    exact = {e for e in entries if "*" not in e}
    patterns = [pattern_regex(e) for e in entries if "*" in e]
    return lambda name: name in exact or any(p.match(name) for p in patterns)
