"""The ``edit`` tool: exact-text replacements in one file, all applied or none."""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterator
from typing import TYPE_CHECKING, TypedDict

from pi_coding_agent.agent.tool import ToolError, ToolResult, UpdateCallback, text_result
from pi_coding_agent.ai.abort import AbortSignal
from pi_coding_agent.ai.atomic_file import directory_of, replace_at
from pi_coding_agent.ai.types import JsonObject

from .backend import FileBackend
from .base import BuiltinTool, check_aborted
from .blocking import refuse_special_file, run_settled
from .mutation import file_mutation_lock
from .paths import error_code, node_error_message, resolve_to_cwd

if TYPE_CHECKING:
    from pi_coding_agent.coding.sandbox.policy import SandboxPolicy

    from .edit_diff import EditItem


def _is_single_edit(value: object) -> bool:
    return isinstance(value, dict) and isinstance(value.get("oldText"), str) and isinstance(value.get("newText"), str)


class EditParams(TypedDict):
    path: str
    edits: list[EditItem]  # ``prepare_arguments`` folds a legacy top-level oldText/newText in here


class EditTool(BuiltinTool[EditParams]):
    name = "edit"
    # label, description, parameters, prompt lines: declarations.py (BuiltinTool takes them from there)

    def prepare_arguments(self, args: object) -> object:
        """Accept ``edits`` as a JSON string or a single object, and legacy top-level oldText/newText."""
        if not isinstance(args, dict):
            return args
        args = dict(args)
        edits = args.get("edits")
        if isinstance(edits, str):
            import json

            try:
                parsed = json.loads(edits)
            except ValueError:
                parsed = None
            if isinstance(parsed, list):
                args["edits"] = parsed
            elif _is_single_edit(parsed):
                args["edits"] = [parsed]
        elif _is_single_edit(edits):
            args["edits"] = [edits]
        if not (isinstance(args.get("oldText"), str) and isinstance(args.get("newText"), str)):
            return args
        current = args.get("edits")
        merged = [*current] if isinstance(current, list) else []
        merged.append({"oldText": args.pop("oldText"), "newText": args.pop("newText")})
        args["edits"] = merged
        return args

    async def execute(
        self, tool_call_id: str, params: EditParams, signal: AbortSignal, on_update: UpdateCallback
    ) -> ToolResult:
        edits = params.get("edits")
        if not isinstance(edits, list) or not edits:
            raise ToolError("Edit tool input is invalid. edits must contain at least one replacement.")
        path: str = params["path"]
        absolute = resolve_to_cwd(path, self.env.cwd)
        sandbox = await self.env.check_write(absolute)
        async with file_mutation_lock(absolute):
            if self.env.files is not None:
                return await self._edit_via_backend(self.env.files, absolute, path, edits, signal)
            details = await run_settled(_edit_file, absolute, path, edits, signal, sandbox)
        return text_result(f"Successfully replaced {len(edits)} block(s) in {path}.", details)

    async def _edit_via_backend(
        self, files: FileBackend, absolute: str, path: str, edits: list[EditItem], signal: AbortSignal
    ) -> ToolResult:
        check_aborted(signal)
        parts, details = _apply_to_text(await files.read_text(absolute), path, edits, signal)
        await files.write_text(absolute, "".join(parts))
        check_aborted(signal)
        return text_result(f"Successfully replaced {len(edits)} block(s) in {path}.", details)


def _edit_file(
    absolute: str, path: str, edits: list[EditItem], signal: AbortSignal, sandbox: SandboxPolicy | None
) -> JsonObject:
    """Apply every edit or none, replacing the file at once (a full disk leaves the old content
    whole); returns the diff details. Under a sandbox the file's directory is held from one checked
    walk (``SandboxPolicy.parent_for_write``) and the file is read and replaced inside it."""
    check_aborted(signal)
    if not os.access(absolute, os.R_OK | os.W_OK):
        try:
            os.stat(absolute)
            code = "EACCES"
        except OSError as exc:
            code = error_code(exc)
        raise ToolError(f"Could not edit file: {path}. Error code: {code}.")
    refuse_special_file(absolute, path, "edit")
    try:
        dir_fd, name = sandbox.parent_for_write(absolute) if sandbox is not None else directory_of(absolute)
    except OSError as exc:
        raise ToolError(node_error_message(exc, "read")) from None
    try:
        raw = _read_text(dir_fd, name)
        check_aborted(signal)
        parts, details = _apply_to_text(raw, path, edits, signal)
        try:  # the new text is encoded piece by piece, never held whole
            replace_at(dir_fd, name, (part.encode("utf-8", "surrogatepass") for part in parts), 0o666)
        except OSError as exc:
            raise ToolError(node_error_message(exc, "open", absolute)) from None
    finally:
        os.close(dir_fd)
    check_aborted(signal)
    return details


def _read_text(dir_fd: int, name: str) -> str:
    try:
        with os.fdopen(os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dir_fd), "rb") as handle:
            return handle.read().decode("utf-8", "replace")
    except OSError as exc:
        raise ToolError(node_error_message(exc, "read")) from None


def _apply_to_text(
    raw: str, path: str, edits: list[EditItem], signal: AbortSignal
) -> tuple[Iterator[str], JsonObject]:
    """The file's new text as consecutive pieces (BOM and line endings kept) and the diff details.

    Every edit is matched and checked before this returns, so writing the pieces cannot fail halfway
    for a reason of the edits' own.
    """
    from .edit_diff import (  # first edit
        apply_edits,
        edited_parts,
        generate_edit_diff,
        normalize_to_lf,
        spliced_parts,
    )

    bom = "\ufeff" if raw.startswith("\ufeff") else ""
    content = raw[len(bom) :]
    normalized = normalize_to_lf(content)
    replacements = apply_edits(normalized, edits, path)
    details = generate_edit_diff(path, normalized, replacements)
    check_aborted(signal)
    if content is normalized:
        parts = edited_parts(content, replacements)
    else:  # CR line endings: spliced into the original; the LF copy is dropped first
        del normalized
        parts = spliced_parts(content, replacements)
    return itertools.chain((bom,), parts), details
