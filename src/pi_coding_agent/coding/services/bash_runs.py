"""The user's own shell commands (RPC ``bash``): abortable, and recorded as ``bashExecution`` messages.

A command that finishes while a run streams is recorded after the run settles, so the transcript
never gets a message in the middle of a turn; replacing the session forgets those still waiting.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import cast

from pi_coding_agent.agent.events import BashExecutionMessage
from pi_coding_agent.ai.abort import AbortSignal
from pi_coding_agent.ai.types import JsonObject, now_ms
from pi_coding_agent.coding.runtime import SessionRuntime

Intercept = Callable[[str, bool], Awaitable[JsonObject | None]]


def bash_record(command: str, result: JsonObject, exclude_from_context: bool) -> BashExecutionMessage:
    """The ``bashExecution`` message for a finished command, fields in pi's order."""
    record: JsonObject = {"role": "bashExecution", "command": command, "output": result["output"]}
    if "exitCode" in result:
        record["exitCode"] = result["exitCode"]
    record["cancelled"] = result["cancelled"]
    record["truncated"] = result["truncated"]
    if result.get("fullOutputPath"):
        record["fullOutputPath"] = result["fullOutputPath"]
    record["timestamp"] = now_ms()
    if exclude_from_context:
        record["excludeFromContext"] = True
    return cast(BashExecutionMessage, record)  # built key by key in pi's order, from the run's result


class BashRuns:
    """User commands of one session; ``record`` adds a message to the transcript and the file."""

    def __init__(self, runtime: SessionRuntime, record: Callable[[BashExecutionMessage], None],
                 is_streaming: Callable[[], bool]) -> None:
        self._rt = runtime
        self._record = record
        self._is_streaming = is_streaming
        self._signals: set[AbortSignal] = set()
        self._deferred: list[BashExecutionMessage] = []

    async def run(self, command: str, exclude_from_context: bool, on_delta: Callable[[str], None],
                  intercept: Intercept | None) -> JsonObject:
        """Run ``command`` (unless an extension's ``intercept`` answers for it) and record it."""
        signal = AbortSignal()
        self._signals.add(signal)
        try:
            replaced = None if intercept is None else await intercept(command, exclude_from_context)
            result = replaced or await self._rt.run_user_bash(command, on_delta, signal)
        finally:
            self._signals.discard(signal)
        record = bash_record(command, result, exclude_from_context)
        if self._is_streaming():
            self._deferred.append(record)
        else:
            self._record(record)
        return result

    def flush(self) -> None:
        """Record the commands that finished during the run that just ended."""
        records, self._deferred = self._deferred, []
        for record in records:
            self._record(record)

    def forget(self) -> None:
        self._deferred.clear()

    def abort(self) -> None:
        for signal in list(self._signals):
            signal.abort()
