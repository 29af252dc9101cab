"""The ``write`` tool: create or overwrite a file, creating its parent directories."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, TypedDict

from pi_coding_agent.agent.tool import ToolError, ToolResult, UpdateCallback, text_result
from pi_coding_agent.ai.abort import AbortSignal
from pi_coding_agent.ai.atomic_file import replace_at, write_atomic

from .base import BuiltinTool, check_aborted
from .blocking import refuse_special_file, run_settled
from .mutation import file_mutation_lock
from .paths import node_error_message, resolve_to_cwd

if TYPE_CHECKING:
    from pi_coding_agent.coding.sandbox.policy import SandboxPolicy


class WriteParams(TypedDict):
    path: str
    content: str


class WriteTool(BuiltinTool[WriteParams]):
    name = "write"
    # label, description, parameters, prompt lines: declarations.py (BuiltinTool takes them from there)

    async def execute(
        self, tool_call_id: str, params: WriteParams, signal: AbortSignal, on_update: UpdateCallback
    ) -> ToolResult:
        path: str = params["path"]
        absolute = resolve_to_cwd(path, self.env.cwd)
        sandbox = await self.env.check_write(absolute)
        async with file_mutation_lock(absolute):
            check_aborted(signal)
            if self.env.files is not None:
                await self.env.files.write_text(absolute, params["content"])
            else:
                refuse_special_file(absolute, path, "write")
                data = params["content"].encode("utf-8", "surrogatepass")
                await run_settled(_write_file, absolute, data, signal, sandbox)
            check_aborted(signal)
            return text_result(f"Successfully wrote to {path}")


def _write_file(absolute: str, data: bytes, signal: AbortSignal, sandbox: SandboxPolicy | None) -> None:
    try:
        if sandbox is not None:  # the directories made and the file's directory held in one checked walk
            dir_fd, name = sandbox.parent_for_write(absolute, create_dirs=True)
            try:
                check_aborted(signal)
                replace_at(dir_fd, name, data, 0o666)
            finally:
                os.close(dir_fd)
        else:
            os.makedirs(os.path.dirname(absolute), exist_ok=True)
            check_aborted(signal)
            write_atomic(absolute, data, 0o666)  # a full disk or a crash leaves the old content whole
    except OSError as exc:
        raise ToolError(node_error_message(exc, "open", absolute)) from None
