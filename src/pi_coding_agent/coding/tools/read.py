"""The ``read`` tool: text with 1-based offset/limit and continuation notices, or an image block."""

from __future__ import annotations

import asyncio
import io
import math
import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, BinaryIO, NotRequired, TypedDict

from pi_coding_agent.agent.tool import ToolError, ToolResult, UpdateCallback
from pi_coding_agent.ai.abort import AbortSignal
from pi_coding_agent.ai.types import UserContent

from .base import (
    BuiltinTool,
    aborted_error,
    check_aborted,
)
from .blocking import refuse_special_file, run_blocking
from .images import SNIFF_BYTES, process_image, sniff_image_mime
from .paths import node_error_message, resolve_read_path
from .truncate import DEFAULT_MAX_BYTES, DEFAULT_MAX_LINES, Truncation, format_size, js_number, truncate_head

if TYPE_CHECKING:
    from pi_coding_agent.coding.sandbox.policy import SandboxPolicy

_CHUNK = 1024 * 1024


@dataclass
class _Selection:
    """Lines ``[start, end)`` of a file; only what head truncation can show is stored."""

    start: int
    end: float
    stored: list[str] = field(default_factory=list)
    stored_bytes: int = 0
    past_caps: bool = False
    count: int = 0
    content_bytes: int = 0
    first_line_bytes: int = 0
    last_empty: bool = True
    pieces: list[bytes] | None = field(default_factory=list)
    line_bytes: int = 0

    def add(self, data: bytes | memoryview) -> None:
        if self.pieces is not None and self.line_bytes <= DEFAULT_MAX_BYTES:
            self.pieces.append(bytes(data))
        self.line_bytes += len(data)

    def finish_line(self) -> None:
        if self.pieces is not None:
            if self.count == 0:
                self.first_line_bytes = self.line_bytes
            # Store one line past the caps so truncate_head decides exactly as on the whole text.
            if len(self.stored) > DEFAULT_MAX_LINES or self.stored_bytes > DEFAULT_MAX_BYTES:
                self.past_caps = True
            text = b"".join(self.pieces).decode("utf-8", "replace")
            self.stored_bytes += len(text.encode("utf-8", "surrogatepass")) + (1 if self.stored else 0)
            self.stored.append(text)
        self.count += 1
        self.content_bytes += self.line_bytes
        self.last_empty = self.line_bytes == 0
        self.pieces = None if self.past_caps else []
        self.line_bytes = 0

    def bulk(self, chunk: bytes, pos: int, lines: int, stop: int) -> None:
        """Finish ``lines`` lines of ``chunk[pos:stop]`` (``stop`` is the last newline) without storing."""
        prev = chunk.rfind(b"\n", pos, stop)
        last_bytes = self.line_bytes + stop - pos if prev == -1 else stop - prev - 1
        self.count += lines
        self.content_bytes += self.line_bytes + (stop - pos) - (lines - 1)
        self.last_empty = last_bytes == 0
        self.line_bytes = 0

    def truncation(self) -> Truncation:
        total_bytes = self.content_bytes + max(self.count - 1, 0)
        result = truncate_head("\n".join(self.stored))
        result["totalLines"] = 0 if total_bytes == 0 else self.count - (1 if self.last_empty else 0)
        result["totalBytes"] = total_bytes
        return result


def _scan(handle: BinaryIO, start: int, end: float, signal: AbortSignal) -> tuple[int, _Selection]:
    """Stream the file once: skip to ``start``, keep the selection's head, count everything else."""
    sel = _Selection(start, end)
    line = 0
    while chunk := handle.read(_CHUNK):
        check_aborted(signal)
        pos, size = 0, len(chunk)
        while pos < size:
            if line < start or line >= end or sel.pieces is None:
                # Nothing to store: count newlines in bulk up to the next boundary that matters.
                k = chunk.count(b"\n", pos)
                boundary = start if line < start else end
                n = k if boundary == math.inf or line >= end else min(k, int(boundary) - line)
                if n == 0:
                    if start <= line < end:
                        sel.line_bytes += size - pos
                    break
                stop = _nth_newline(chunk, pos, n, k)
                if start <= line < end:
                    sel.bulk(chunk, pos, n, stop)
                line, pos = line + n, stop + 1
                continue
            nl = chunk.find(b"\n", pos)
            sel.add(memoryview(chunk)[pos : size if nl == -1 else nl])
            if nl == -1:
                break
            sel.finish_line()
            line, pos = line + 1, nl + 1
    if start <= line < end:
        sel.finish_line()
    return line + 1, sel


def _nth_newline(chunk: bytes, pos: int, n: int, total: int) -> int:
    """Offset of the n-th newline at or after ``pos`` (``total`` newlines remain there)."""
    if n == total:
        return chunk.rfind(b"\n", pos)
    for _ in range(n):
        pos = chunk.find(b"\n", pos) + 1
    return pos - 1


def _js_slice_bound(value: float, length: int) -> int:
    index = math.trunc(value)
    return max(length + index, 0) if index < 0 else min(index, length)


def _scan_whole(handle: BinaryIO, start: float, limit: float | None) -> tuple[int, Truncation, int]:
    """Unusual ranges (fractional, negative limit) select with JavaScript slice rules over the whole file."""
    lines = handle.read().decode("utf-8", "replace").split("\n")
    stop = len(lines) if limit is None else min(start + limit, len(lines))
    lo, hi = _js_slice_bound(start, len(lines)), _js_slice_bound(stop, len(lines))
    truncation = truncate_head("\n".join(lines[lo:hi]))
    first = len(lines[lo].encode()) if truncation["firstLineExceedsLimit"] else 0
    return len(lines), truncation, first


def _consume(task: asyncio.Future[Any]) -> None:
    if not task.cancelled():
        task.exception()


def _structured(content: list[Any]) -> object:
    """pi's ``structuredContent`` of a read: the text, or the image with the text as its note."""
    text = next((block["text"] for block in content if block["type"] == "text"), "")
    image = next((block for block in content if block["type"] == "image"), None)
    if image is None:
        return text
    return {"type": "image", "data": image["data"], "mimeType": image["mimeType"], "note": text}


class ReadParams(TypedDict):
    path: str
    offset: NotRequired[float]  # a JSON number: the first line, counting from 1
    limit: NotRequired[float]


class ReadTool(BuiltinTool[ReadParams]):
    name = "read"
    # label, description, parameters, prompt lines: declarations.py (BuiltinTool takes them from there)

    async def execute(
        self, tool_call_id: str, params: ReadParams, signal: AbortSignal, on_update: UpdateCallback
    ) -> ToolResult:
        check_aborted(signal)
        sandbox = await self.env.check_read(resolve_read_path(params["path"], self.env.cwd))
        result = await self._read_via_backend(params, signal) if self.env.files else None
        if result is None:
            result = await self._read_local(params, signal, sandbox)
        result.structured_content = _structured(result.content)
        return result

    async def _read_via_backend(self, params: ReadParams, signal: AbortSignal) -> ToolResult | None:
        """Text through ``env.files`` (an editor's buffers); None when the backend leaves the file to us."""
        assert self.env.files is not None
        path = resolve_read_path(params["path"], self.env.cwd)
        if not self.env.files.handles_read(path):
            return None
        raw = io.BytesIO((await self.env.files.read_text(path)).encode("utf-8", "surrogatepass"))
        return self._text(raw, params["path"], params.get("offset"), params.get("limit"), signal)

    async def _read_local(self, params: ReadParams, signal: AbortSignal, sandbox: SandboxPolicy | None
                          ) -> ToolResult:
        # File work runs in a thread so a multi-GB scan never blocks the loop; abort answers at once.
        work = asyncio.ensure_future(run_blocking(self._read, params, signal, sandbox))
        aborted = asyncio.ensure_future(signal.wait())
        try:
            await asyncio.wait({work, aborted}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            aborted.cancel()
        if not work.done():
            work.add_done_callback(_consume)
            raise aborted_error()
        result: ToolResult = work.result()
        return result

    def _read(self, params: ReadParams, signal: AbortSignal, sandbox: SandboxPolicy | None) -> ToolResult:
        raw_path: str = params["path"]
        path = resolve_read_path(raw_path, self.env.cwd)
        if not os.access(path, os.R_OK):
            try:
                os.stat(path)
                raise PermissionError(13, "Permission denied")
            except OSError as exc:
                raise ToolError(node_error_message(exc, "access", path)) from None
        refuse_special_file(path, raw_path, "read")
        try:
            # under a sandbox, the file its check judged: one walk, no second open by path
            with open(path, "rb") if sandbox is None else os.fdopen(sandbox.open_read(path), "rb") as handle:
                mime = sniff_image_mime(handle.read(SNIFF_BYTES))
                handle.seek(0)
                if mime is not None:
                    return self._image(handle, mime)
                return self._text(handle, raw_path, params.get("offset"), params.get("limit"), signal)
        except IsADirectoryError as exc:
            raise ToolError(node_error_message(exc, "read")) from None

    def _image(self, handle: BinaryIO, mime: str) -> ToolResult:
        processed = process_image(handle.read(), mime, self.env.image_policy())
        if processed.image is None:
            return ToolResult([{"type": "text", "text": f"Read image file [{mime}]\n{processed.hints[0]}"}])
        note = "\n".join([f"Read image file [{processed.image['mimeType']}]", *processed.hints])
        content: list[UserContent] = [{"type": "text", "text": note}, processed.image]
        details = None
        if not self.env.model_accepts_images():
            details = {"imageUnsupportedByModel": self.env.session_env().get("PI_MODEL", "")}
        return ToolResult(content, details)

    def _text(
        self, handle: BinaryIO, raw_path: str, offset: Any, limit: Any, signal: AbortSignal
    ) -> ToolResult:
        start = max(0, offset - 1) if offset else 0
        streamable = (offset is None or float(offset).is_integer()) and (
            limit is None or (float(limit).is_integer() and limit >= 0)
        )
        if streamable:
            total, sel = _scan(handle, int(start), math.inf if limit is None else int(start) + int(limit), signal)
            truncation, first_bytes = sel.truncation(), sel.first_line_bytes
        else:
            total, truncation, first_bytes = _scan_whole(handle, start, limit)
        check_aborted(signal)
        if start >= total:
            raise ToolError(f"Offset {js_number(offset)} is beyond end of file ({total} lines total)")
        first = start + 1
        if truncation["firstLineExceedsLimit"]:
            text = (
                f"[Line {js_number(first)} is {format_size(first_bytes)}, exceeds {format_size(DEFAULT_MAX_BYTES)} "
                f"limit. Use bash: sed -n '{js_number(first)}p' {raw_path} | head -c {DEFAULT_MAX_BYTES}]"
            )
            return ToolResult([{"type": "text", "text": text}], {"truncation": truncation})
        if truncation["truncated"]:
            last = first + truncation["outputLines"] - 1
            shown = f"Showing lines {js_number(first)}-{js_number(last)} of {total}"
            if truncation["truncatedBy"] == "bytes":
                shown += f" ({format_size(DEFAULT_MAX_BYTES)} limit)"
            text = f"{truncation['content']}\n\n[{shown}. Use offset={js_number(last + 1)} to continue.]"
            return ToolResult([{"type": "text", "text": text}], {"truncation": truncation})
        text = truncation["content"]
        if limit is not None:
            shown_end = min(start + limit, total)
            if shown_end < total:
                text += f"\n\n[{js_number(total - shown_end)} more lines in file. Use offset={js_number(shown_end + 1)} to continue.]"
        return ToolResult([{"type": "text", "text": text}])
