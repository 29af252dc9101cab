"""Where file and process tools do their work, when it is not this machine's file system and shell.

``ToolEnv.files`` and ``ToolEnv.commands`` are None by default and the tools then work locally as
always. A front end that owns the files or the shell (an ACP editor with unsaved buffers and its
own terminal, or a sandbox) sets them; read/write/edit then go through ``FileBackend`` and bash
through ``CommandBackend``, with the tools' own output formatting, truncation and errors unchanged.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from pi_coding_agent.ai.abort import AbortSignal


@dataclass
class ShellExit:
    """How one command ended (``shell.run_shell`` and every ``CommandBackend``)."""

    exit_code: int
    timed_out: bool = False
    # Set on timeout when the shell itself had exited earlier (background jobs held the pipe).
    shell_exited_after: float | None = None


class CommandPlace(Protocol):
    """What a command backend reads of the tool environment (``base.ToolEnv``)."""

    @property
    def cwd(self) -> Path: ...

    @property
    def shell_path(self) -> str | None: ...


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
        self, command: str, env: CommandPlace, on_data: Callable[[bytes], None], signal: AbortSignal,
        timeout: float | None, session_vars: dict[str, str], *, tool_call_id: str,
    ) -> ShellExit: ...
