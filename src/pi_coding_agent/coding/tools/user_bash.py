"""The RPC ``bash`` command: the user's own shell command, cleaned for display and recorded in the session."""

from __future__ import annotations

import codecs
import functools
import re
from collections import deque
from collections.abc import Callable

from pi_coding_agent.ai.abort import AbortSignal
from pi_coding_agent.ai.types import JsonObject

from .base import ToolEnv
from .process_groups import ProcessRegistry
from .shell import CommandAborted, OutputFile, run_shell, with_prefix
from .truncate import DEFAULT_MAX_BYTES, truncate_tail

# Terminal escape sequences: OSC ``ESC ] ... <ST>`` (non-greedy) and CSI-like ``ESC [ params final``.
_ST = "(?:\x07|\x1b\\\\|\x9c)"
_CSI_START = r"(?:(?:\x1b\[|\x9b)[<=>]|[\x1b\x9b][\[\]()#;?]*)(?:\d{1,4}(?:[;:]\d{0,4})*)?"
_CSI_FINAL = r"[\dA-PR-TZcf-nq-uy=><~]"


@functools.cache
def _ansi() -> re.Pattern[str]:
    """Compiled on first use, like the others here: start-up compiles no pattern it may never need."""
    return re.compile(rf"(?:\x1b\][\s\S]*?{_ST})|{_CSI_START}{_CSI_FINAL}")


@functools.cache
def _unfinished_ansi() -> re.Pattern[str]:
    return re.compile(rf"(?:\x1b\](?:[^\x07\x9c\x1b]|\x1b(?!\\))*|{_CSI_START})$")


_MAX_PENDING_ANSI = 256


@functools.cache
def _control() -> re.Pattern[str]:
    return re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufff9-\ufffb\r]")


_ROLLING_CHARS = DEFAULT_MAX_BYTES * 2


def strip_ansi(text: str) -> str:
    if "\x1b" not in text and "\x9b" not in text:
        return text
    return _ansi().sub("", text)


def split_unfinished_ansi(text: str) -> tuple[str, str]:
    """Hold back an escape sequence cut by the chunk boundary until the next chunk completes it."""
    if "\x1b" not in text and "\x9b" not in text:
        return text, ""
    window = max(0, len(text) - _MAX_PENDING_ANSI)
    match = _unfinished_ansi().search(text, window)
    if match is None:
        return text, ""
    return text[: match.start()], text[match.start() :]


def clean_output(text: str) -> str:
    """ANSI sequences, control characters (tab and newline kept) and ``\\r`` removed."""
    return _control().sub("", strip_ansi(text))


class _UserOutput:
    """The 100 KiB rolling buffer of cleaned text, spilled to a temp file past 50 KiB of raw output."""

    def __init__(self, on_delta: Callable[[str], None], registry: ProcessRegistry) -> None:
        self._registry = registry
        self._on_delta = on_delta
        self._decoder = codecs.getincrementaldecoder("utf-8")("replace")
        self._pending = ""
        self.chunks: deque[str] = deque()
        self._chars = 0
        self.discarded = False
        self.raw_bytes = 0
        self.file: OutputFile | None = None

    def on_data(self, data: bytes) -> None:
        self.raw_bytes += len(data)
        complete, self._pending = split_unfinished_ansi(self._pending + self._decoder.decode(data))
        self._append(complete)

    def flush(self) -> None:
        rest = self._pending + self._decoder.decode(b"", final=True)
        self._pending = ""
        self._append(rest)

    def ensure_file(self) -> OutputFile:
        if self.file is None:
            self.file = OutputFile("pi-bash", self._registry)
            for chunk in self.chunks:
                self.file.write(chunk.encode("utf-8", "surrogatepass"))
        return self.file

    def _append(self, raw_text: str) -> None:
        text = clean_output(raw_text)
        if not text:
            return
        if self.raw_bytes > DEFAULT_MAX_BYTES:
            self.ensure_file()
        if self.file is not None:
            self.file.write(text.encode("utf-8", "surrogatepass"))
        self.chunks.append(text)
        self._chars += len(text)
        while self._chars > _ROLLING_CHARS and len(self.chunks) > 1:
            self._chars -= len(self.chunks.popleft())
            self.discarded = True
        self._on_delta(text)


async def run_user_bash(
    command: str, env: ToolEnv, on_delta: Callable[[str], None], signal: AbortSignal
) -> JsonObject:
    """Run the user's command; ``{output, exitCode?, cancelled, truncated, fullOutputPath?}``.

    Start-up failures (missing shell or cwd) raise :class:`ShellError`.
    """
    out = _UserOutput(on_delta, env.processes)
    exit_code: int | None = None
    try:
        exit_code = (await run_shell(with_prefix(command, env.shell_command_prefix), env, out.on_data, signal)).exit_code
    except CommandAborted:
        pass
    except BaseException:
        if out.file is not None:
            out.file.close()
        raise
    out.flush()
    full = "".join(out.chunks)
    truncation = truncate_tail(full)
    if truncation["truncated"]:
        out.ensure_file()
    if out.file is not None:
        out.file.close()
    cancelled = signal.aborted
    result: JsonObject = {"output": truncation["content"] if truncation["truncated"] else full}
    if not cancelled and exit_code is not None:
        result["exitCode"] = exit_code
    result["cancelled"] = cancelled
    result["truncated"] = out.discarded or truncation["truncated"]
    if out.file is not None:
        result["fullOutputPath"] = out.file.path
    return result
