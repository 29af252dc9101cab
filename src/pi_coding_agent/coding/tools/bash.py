"""The LLM ``bash`` tool: run a command, stream a throttled tail, return the tail with notices."""

from __future__ import annotations

import asyncio
import math
import time
from typing import Any, NotRequired, TypedDict

from pi_coding_agent.agent.tool import ToolError, ToolResult, UpdateCallback, text_result
from pi_coding_agent.ai.abort import AbortSignal
from pi_coding_agent.ai.types import JsonObject

from .backend import ShellExit
from .base import BuiltinTool
from .output import OutputAccumulator, Snapshot
from .shell import MAX_TIMEOUT_MS, CommandAborted, ShellError, run_shell, with_prefix
from .truncate import DEFAULT_MAX_BYTES, format_size, js_number

UPDATE_THROTTLE_SECONDS = 0.1


def validate_timeout(timeout: object) -> float | None:
    """Seconds as given, or None; pi's exact messages for unusable values."""
    if timeout is None:
        return None
    if isinstance(timeout, bool) or not isinstance(timeout, int | float) or not math.isfinite(timeout) or timeout <= 0:
        raise ToolError("Invalid timeout: must be a finite number of seconds")
    if timeout * 1000 > MAX_TIMEOUT_MS:
        raise ToolError(f"Invalid timeout: maximum is {js_number(MAX_TIMEOUT_MS / 1000)} seconds")
    return float(timeout)


def format_output(snapshot: Snapshot, last_line_bytes: int, empty_text: str) -> tuple[str, dict[str, Any] | None]:
    """The tail text plus the truncation notice, and ``details`` when truncated."""
    truncation = snapshot.truncation
    text = snapshot.content or empty_text
    if not truncation["truncated"]:
        return text, None
    details = {"truncation": truncation, "fullOutputPath": snapshot.full_output_path}
    end = truncation["totalLines"]
    start = end - truncation["outputLines"] + 1
    path = snapshot.full_output_path
    if truncation["lastLinePartial"]:
        notice = (
            f"[Showing last {format_size(truncation['outputBytes'])} of line {end} "
            f"(line is {format_size(last_line_bytes)}). Full output: {path}]"
        )
    elif truncation["truncatedBy"] == "lines":
        notice = f"[Showing lines {start}-{end} of {end}. Full output: {path}]"
    else:
        notice = f"[Showing lines {start}-{end} of {end} ({format_size(DEFAULT_MAX_BYTES)} limit). Full output: {path}]"
    return f"{text}\n\n{notice}", details


def append_status(text: str, status: str) -> str:
    return f"{text}\n\n{status}" if text else status


class _Throttle:
    """Emits the current tail at most every 100 ms (the last change is never lost)."""

    def __init__(self, output: OutputAccumulator, on_update: UpdateCallback) -> None:
        self._output = output
        self._on_update = on_update
        self._dirty = False
        self._last = 0.0
        self._handle: asyncio.TimerHandle | None = None
        self._loop = asyncio.get_running_loop()

    def mark(self) -> None:
        self._dirty = True
        delay = UPDATE_THROTTLE_SECONDS - (self._loop.time() - self._last)
        if delay <= 0:
            self.cancel()
            self.flush()
        elif self._handle is None:
            self._handle = self._loop.call_later(delay, self._fire)

    def _fire(self) -> None:
        self._handle = None
        self.flush()

    def flush(self) -> None:
        if not self._dirty:
            return
        self._dirty = False
        self._last = self._loop.time()
        snap = self._output.snapshot(persist_if_truncated=True)
        details: dict[str, Any] = {}
        if snap.truncation["truncated"]:
            details["truncation"] = snap.truncation
        if snap.full_output_path is not None:
            details["fullOutputPath"] = snap.full_output_path
        self._on_update(ToolResult(content=[{"type": "text", "text": snap.content}], details=details))

    def cancel(self) -> None:
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None


STRUCTURED_OUTPUT_MAX_BYTES = 1024 * 1024  # cap of structuredContent.output


class BashParams(TypedDict):
    command: str
    timeout: NotRequired[float]  # seconds


class BashTool(BuiltinTool[BashParams]):
    name = "bash"
    # label, description, parameters, prompt lines: declarations.py (BuiltinTool takes them from there)
    handles_abort = True  # reports "Command aborted" with the output so far instead of being cancelled

    async def execute(
        self, tool_call_id: str, params: BashParams, signal: AbortSignal, on_update: UpdateCallback
    ) -> ToolResult:
        command = with_prefix(params["command"], self.env.shell_command_prefix)
        output = OutputAccumulator("pi-bash", self.env.processes)
        on_update(ToolResult(content=[], details=None))
        timeout = validate_timeout(params.get("timeout"))
        throttle = _Throttle(output, on_update)

        def on_data(data: bytes) -> None:
            output.append(data)
            throttle.mark()

        def finish() -> Snapshot:
            output.finish()
            throttle.cancel()
            throttle.flush()
            snap = output.snapshot(persist_if_truncated=True)
            output.close()
            return snap

        started = time.monotonic()
        try:
            if self.env.commands is not None:
                result = await self.env.commands.run(command, self.env, on_data, signal, timeout,
                                                     self.env.session_env(), tool_call_id=tool_call_id)
                snap = finish()
            else:
                result = await run_shell(command, self.env, on_data, signal, timeout, self.env.session_env())
                snap = finish()
                if result.exit_code != 0 and await self._rerun_outside_sandbox(output):
                    output = OutputAccumulator("pi-bash", self.env.processes)
                    throttle = _Throttle(output, on_update)
                    result = await run_shell(command, self.env, on_data, signal, timeout, self.env.session_env(),
                                             sandboxed=False)
                    snap = finish()
        except CommandAborted:
            text, _ = format_output(finish(), output.last_line_bytes, "")
            raise ToolError(append_status(text, "Command aborted")) from None
        except ShellError as exc:
            finish()
            raise ToolError(str(exc)) from None
        except BaseException:
            throttle.cancel()
            output.close()
            raise
        if result.timed_out:
            text, _ = format_output(snap, output.last_line_bytes, "")
            raise ToolError(append_status(text, _timeout_status(params["timeout"], result)))
        text, details = format_output(snap, output.last_line_bytes, "(no output)")
        failed = result.exit_code != 0
        if failed:
            text = append_status(text, f"Command exited with code {result.exit_code}")
            if (refusal := self._sandbox_refusal(output)) is not None:
                text = append_status(text, refusal)
        outcome = text_result(text, details, failed)
        outcome.structured_content = _structured(output, snap, result.exit_code, time.monotonic() - started)
        return outcome


    def _sandbox_refusal(self, output: OutputAccumulator) -> str | None:
        """A line telling the model the sandbox refused part of the command, when its output shows so."""
        sandbox = self.env.sandbox
        if sandbox is None or not sandbox.active:
            return None
        from pi_coding_agent.coding.sandbox.bwrap import REFUSAL_MARKERS

        text, _ = output.read_full_output(STRUCTURED_OUTPUT_MAX_BYTES)
        if not any(marker in text for marker in REFUSAL_MARKERS):
            return None
        network = "" if sandbox.network else " and the network"
        return f"Sandbox ({sandbox.mode}): writes outside the workspace{network} are refused"

    async def _rerun_outside_sandbox(self, output: OutputAccumulator) -> bool:
        """With ``sandbox.onRefusal: "ask"``, whether the user lets a refused command run again unsandboxed."""
        from pi_coding_agent.coding.sandbox.policy import SandboxRefusal

        refusal = self._sandbox_refusal(output)
        return refusal is not None and await self.env.allowed_outside_sandbox(SandboxRefusal(refusal))


def _structured(output: OutputAccumulator, snap: Snapshot, exit_code: int, seconds: float) -> JsonObject:
    """pi's ``structuredContent`` of a finished command (for programmatic callers, not the model)."""
    text, cut = output.read_full_output(STRUCTURED_OUTPUT_MAX_BYTES)
    structured: JsonObject = {"output": text, "truncated": cut}
    if cut and snap.full_output_path:
        structured["full_output_path"] = snap.full_output_path
    structured["exit_code"] = exit_code
    wall = round(seconds * 10) / 10
    structured["wall_time_seconds"] = int(wall) if wall.is_integer() else wall
    return structured


def _timeout_status(timeout: float, result: ShellExit) -> str:
    status = f"Command timed out after {js_number(timeout)} seconds"
    if result.shell_exited_after is not None:
        after = js_number(round(result.shell_exited_after * 10) / 10)
        status += (
            f". The shell exited with code {result.exit_code} after {after} seconds, "
            "but background processes it started kept writing output until the timeout."
        )
    return status
