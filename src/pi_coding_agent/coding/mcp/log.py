"""``notifications/message`` from servers, appended to ``<agentDir>/mcp.log`` in pi's line format:
``<ISO time> [<server>] <level> <logger>: <message>``, continuation lines indented four spaces,
moved to ``mcp.log.1`` past 5 MB. Several processes may share the file, so each line is one append;
errors are ignored because logging must never break a tool.
"""

from __future__ import annotations

import contextlib
import json
import os
from datetime import UTC, datetime
from pathlib import Path

MAX_LOG_BYTES = 5 * 1024 * 1024


def format_line(server: str, params: object, now: datetime | None = None) -> str:
    message = params if isinstance(params, dict) else {"data": params}
    level = message["level"] if isinstance(message.get("level"), str) else "info"
    logger = f" {message['logger']}:" if isinstance(message.get("logger"), str) and message["logger"] else ""
    data = message.get("data")
    text = data if isinstance(data, str) else json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    text = text.replace("\r\n", "\n").replace("\n", "\n    ")
    stamp = (now or datetime.now(UTC)).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    return f"{stamp} [{server}] {level}{logger} {text}\n"


class ServerLog:
    def __init__(self, path: Path) -> None:
        self.path = path
        self._size: int | None = None

    def write(self, server: str, params: object) -> None:
        line = format_line(server, params).encode("utf-8")
        with contextlib.suppress(OSError):
            if self._size is None:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                self._size = self._current_size()
            if self._size > MAX_LOG_BYTES:
                if self._current_size() > MAX_LOG_BYTES:  # another process may have rotated it already
                    os.replace(self.path, f"{self.path}.1")
                self._size = self._current_size()
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            try:
                os.write(fd, line)
            finally:
                os.close(fd)
            self._size += len(line)

    def _current_size(self) -> int:
        try:
            return self.path.stat().st_size
        except OSError:
            return 0
