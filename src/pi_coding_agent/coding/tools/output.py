"""Streaming command output with bounded memory: a decoded rolling tail plus a temp file once large."""

from __future__ import annotations

import codecs
import os
from dataclasses import dataclass

from .process_groups import ProcessRegistry
from .shell import OutputFile
from .truncate import DEFAULT_MAX_BYTES, DEFAULT_MAX_LINES, Truncation, truncate_tail, utf8_len


@dataclass
class Snapshot:
    """Tool output as the model sees it so far, and where the full output was saved."""

    content: str
    truncation: Truncation
    full_output_path: str | None


class OutputAccumulator:
    """Keeps the last ~100-200 KiB decoded, counts lines/bytes, and spills raw bytes to a file.

    The file starts once output passes either cap; until then raw chunks are buffered so the file
    holds everything from the first byte.
    """

    def __init__(
        self, temp_prefix: str, registry: ProcessRegistry, max_lines: int = DEFAULT_MAX_LINES,
        max_bytes: int = DEFAULT_MAX_BYTES,
    ) -> None:
        self._registry = registry  # the session's: it removes the spill file at shutdown
        self.max_lines = max_lines
        self.max_bytes = max_bytes
        self._rolling = max(max_bytes * 2, 1)
        self._prefix = temp_prefix
        self._decoder = codecs.getincrementaldecoder("utf-8")("replace")
        self._raw: list[bytes] = []
        self._tail = ""
        self._tail_bytes = 0
        self._tail_at_line_start = True
        self._raw_bytes = 0
        self._decoded_bytes = 0
        self._completed_lines = 0
        self._open_line = False
        self.last_line_bytes = 0
        self._file: OutputFile | None = None
        self._finished = False

    @property
    def total_lines(self) -> int:
        return self._completed_lines + (1 if self._open_line else 0)

    @property
    def full_output_path(self) -> str | None:
        return self._file.path if self._file is not None else None

    def append(self, data: bytes) -> None:
        self._raw_bytes += len(data)
        self._add_text(self._decoder.decode(data))
        if self._file is not None or self._over_caps():
            self._ensure_file().write(data)
        elif data:
            self._raw.append(data)

    def finish(self) -> None:
        if self._finished:
            return
        self._finished = True
        self._add_text(self._decoder.decode(b"", final=True))
        if self._over_caps():
            self._ensure_file()

    def snapshot(self, persist_if_truncated: bool = True) -> Snapshot:
        text = self._snapshot_text() or self._tail
        tail = truncate_tail(text, self.max_lines, self.max_bytes)
        truncated = self.total_lines > self.max_lines or self._decoded_bytes > self.max_bytes
        by = None
        if truncated:
            by = tail["truncatedBy"] or ("bytes" if self._decoded_bytes > self.max_bytes else "lines")
        truncation: Truncation = {
            **tail,
            "truncated": truncated,
            "truncatedBy": by,
            "totalLines": self.total_lines,
            "totalBytes": self._decoded_bytes,
            "maxLines": self.max_lines,
            "maxBytes": self.max_bytes,
        }
        if persist_if_truncated and truncated:
            self._ensure_file()
        return Snapshot(truncation["content"], truncation, self.full_output_path)

    def close(self) -> None:
        if self._file is not None:
            self._file.close()

    def read_full_output(self, max_bytes: int) -> tuple[str, bool]:
        """Everything printed, or its head and tail around an omission marker when over ``max_bytes``.

        Call after ``close`` (the spill file is complete then). Cuts fall on character boundaries.
        """
        path = self.full_output_path
        if path is None:
            return b"".join(self._raw).decode("utf-8", "replace"), False
        with open(path, "rb") as file:
            size = os.fstat(file.fileno()).st_size
            if size <= max_bytes:
                return file.read().decode("utf-8", "replace"), False
            head_size = max_bytes // 2
            head = file.read(head_size)
            file.seek(size - (max_bytes - head_size))
            tail = file.read()
        head_text = codecs.getincrementaldecoder("utf-8")("replace").decode(head)  # holds back a split char
        start = 0
        while start < len(tail) and tail[start] & 0xC0 == 0x80:
            start += 1
        omitted = size - max_bytes
        return f"{head_text}\n\n[... {omitted} bytes omitted ...]\n\n{tail[start:].decode('utf-8', 'replace')}", True

    def _over_caps(self) -> bool:
        return (
            self._raw_bytes > self.max_bytes
            or self._decoded_bytes > self.max_bytes
            or self.total_lines > self.max_lines
        )

    def _ensure_file(self) -> OutputFile:
        if self._file is None:
            self._file = OutputFile(self._prefix, self._registry)
            for chunk in self._raw:
                self._file.write(chunk)
            self._raw = []
        return self._file

    def _add_text(self, text: str) -> None:
        if not text:
            return
        size = utf8_len(text)
        self._decoded_bytes += size
        self._tail += text
        self._tail_bytes += size
        if self._tail_bytes > self._rolling * 2:
            self._trim_tail()
        newlines = text.count("\n")
        if newlines == 0:
            self.last_line_bytes += size
            self._open_line = True
        else:
            self._completed_lines += newlines
            rest = text[text.rfind("\n") + 1 :]
            self.last_line_bytes = utf8_len(rest)
            self._open_line = bool(rest)

    def _trim_tail(self) -> None:
        data = self._tail.encode("utf-8", "surrogatepass")
        start = len(data) - self._rolling
        while start < len(data) and (data[start] & 0xC0) == 0x80:
            start += 1
        if start > 0:
            self._tail_at_line_start = data[start - 1] == 0x0A
        self._tail = data[start:].decode("utf-8", "replace")
        self._tail_bytes = len(data) - start

    def _snapshot_text(self) -> str:
        """The tail without its clipped first line (unless the tail starts on a line boundary)."""
        if self._tail_at_line_start:
            return self._tail
        cut = self._tail.find("\n")
        return self._tail if cut == -1 else self._tail[cut + 1 :]
