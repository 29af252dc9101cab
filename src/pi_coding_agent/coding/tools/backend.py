"""Where file and process tools do their work, when it is not this machine's file system and shell.

``ToolEnv.files`` and ``ToolEnv.commands`` are None by default and the tools then work locally as
always. A front end that owns the files or the shell (an ACP editor with unsaved buffers and its
own terminal, or a sandbox) sets them; read/write/edit then go through ``FileBackend`` and bash
through ``CommandBackend``, with the tools' own output formatting, truncation and errors unchanged.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

from pi_coding_agent.ai.abort import AbortSignal

if TYPE_CHECKING:
    from .base import ToolEnv
    from .shell import ShellExit


class FileBackend(Protocol):
    """Text files by absolute path; errors are raised as ``ToolError`` with the text the model sees."""

    def handles_read(self, path: str) -> bool:
        """False to let the read tool use the local file (images, which text backends cannot carry)."""
        ...

    async def read_text(self, path: str) -> str: ...

    async def write_text(self, path: str, content: str) -> None: ...


class CommandBackend(Protocol):
    """Runs one bash tool command; the contract of ``shell.run_shell`` plus the tool call it belongs to.

    Streams output bytes to ``on_data``, raises ``CommandAborted`` when ``signal`` fires and
    ``ShellError`` when the command cannot start, returns a ``ShellExit`` otherwise.
    """

    async def run(
        self, command: str, env: ToolEnv, on_data: Callable[[bytes], None], signal: AbortSignal,
        timeout: float | None, session_vars: dict[str, str], *, tool_call_id: str,
    ) -> ShellExit: ...
