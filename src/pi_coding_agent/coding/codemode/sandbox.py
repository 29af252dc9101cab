"""Host side of one script run: a worker slot, the worker process, its calls, deadline and abort.

The worker process (``worker.py``) holds the QuickJS VM. This side owns everything the script must
not influence: which calls exist, their execution, the output collected so far, the deadline and
the abort signal. The first terminal event wins (``done``, a crash, the deadline, an abort); the
worker is then killed and calls still running are cancelled.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import importlib.util
import json
import os
import sys
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pi_coding_agent.ai.abort import AbortSignal
from pi_coding_agent.ai.types import JsonObject
from pi_coding_agent.coding.codemode.worker import PRELUDE_FIRST_LINE
from pi_coding_agent.coding.tools.process_groups import MARKER_VARIABLE, ProcessRegistry

WORKER = Path(__file__).with_name("worker.py")
MEMORY_LIMIT_BYTES = 256 * 1024 * 1024
MAX_STORE_VALUE_CHARS = 256 * 1024
MAX_STORE_TOTAL_CHARS = 1024 * 1024
MAX_OUTPUT_CHARS = 16 * 1024 * 1024
MAX_OUTPUT_ITEMS = 100_000
DEFAULT_MAX_WORKERS = 2
WORKER_WAIT_S = 60.0
_CALL_STOP_S = 5.0  # how long calls still running may take to end after the script did
_LINE_LIMIT = 64 * 1024 * 1024  # one output message may carry up to the whole output limit

# A call the script makes: (args, signal) -> JSON value, raising to reject with the message.
Executor = Callable[[Any, AbortSignal], Awaitable[object]]


class CallRejected(Exception):
    """A call failed; ``properties`` become own properties of the script's Error."""

    def __init__(self, message: str, properties: JsonObject | None = None) -> None:
        super().__init__(message)
        self.properties = properties


@dataclass
class ScriptError:
    """Why a codemode script failed."""

    kind: str  # "script", "timeout", "aborted", "sandbox"
    message: str
    name: str | None = None
    stack: str | None = None


def abort_reason(signal: AbortSignal) -> str:
    """Why a script was stopped: the signal's reason, else the text of an abort without one (pi's
    agent aborts with an ``AbortError`` whose message this is)."""
    return signal.reason or "This operation was aborted"


@dataclass
class ScriptRun:
    """What a codemode script produced: output, return value, store writes or its error."""

    ok: bool
    output: list[JsonObject] = field(default_factory=list)
    value: object = None
    has_value: bool = False  # the script returned something other than undefined (null counts)
    value_json: str = "null"  # the value's JSON.stringify text, numbers as JavaScript writes them
    error: ScriptError | None = None
    writes: JsonObject = field(default_factory=lambda: {"set": {}, "delete": []})


@functools.cache
def engine_path() -> str:
    """The directory holding the QuickJS extension module, found without importing it."""
    spec = importlib.util.find_spec("_quickjs")
    if spec is None or spec.origin is None:
        raise RuntimeError("The QuickJS engine (the quickjs-ng package) is not installed")
    return str(Path(spec.origin).parent)


def max_workers() -> int:
    """``PI_CODEMODE_MAX_WORKERS`` when it is a positive integer, read per call."""
    raw = os.environ.get("PI_CODEMODE_MAX_WORKERS", "")
    return int(raw) if raw.isdigit() and int(raw) > 0 else DEFAULT_MAX_WORKERS


class WorkerSlots:
    """Live workers across every session of this process, handed out in arrival order."""

    def __init__(self) -> None:
        self.active = 0
        self._waiters: deque[asyncio.Future[None]] = deque()

    async def reserve(self, signal: AbortSignal, timeout_s: float) -> str:
        """``reserved``, ``aborted`` or ``timeout``."""
        if signal.aborted:
            return "aborted"
        if not self._waiters and self.active < max_workers():
            self.active += 1
            return "reserved"
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiters.append(waiter)
        self._admit()
        remove = signal.on_abort(lambda: _cancel(waiter))
        try:
            await asyncio.wait_for(asyncio.shield(waiter), timeout_s)
            return "reserved"
        except (TimeoutError, asyncio.CancelledError):
            current = asyncio.current_task()
            if current is not None and current.cancelling():
                if waiter.done() and not waiter.cancelled():
                    self.release()  # granted just as the caller was cancelled
                raise
            if waiter.done() and not waiter.cancelled():
                return "reserved"
            waiter.cancel()
            return "aborted" if signal.aborted else "timeout"
        finally:
            remove()
            with contextlib.suppress(ValueError):
                self._waiters.remove(waiter)

    def release(self) -> None:
        self.active -= 1
        self._admit()

    def _admit(self) -> None:
        while self._waiters and self.active < max_workers():
            waiter = self._waiters.popleft()
            if not waiter.done():
                self.active += 1
                waiter.set_result(None)


def _cancel(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():
        waiter.cancel()


slots = WorkerSlots()


@dataclass
class Job:
    """A script handed to the QuickJS worker with the tools and globals it may call."""

    code: str
    tools: list[dict[str, str]]  # name, jsName, description
    tool_executors: dict[str, Executor]
    global_executors: dict[str, tuple[bool, Executor]]  # name -> (spread, executor)
    store: JsonObject
    timeout_s: float | None


class Execution:
    """One script in one worker process (see the module docstring)."""

    def __init__(self, job: Job, signal: AbortSignal, processes: ProcessRegistry) -> None:
        self.job = job
        self._processes = processes
        self.signal = signal
        self.calls_signal = AbortSignal()
        self.output: list[JsonObject] = []
        self.pending: dict[int, asyncio.Task[None]] = {}
        self.outcome: asyncio.Future[ScriptRun] = asyncio.get_running_loop().create_future()
        self.process: asyncio.subprocess.Process | None = None

    async def run(self) -> ScriptRun:
        processes = self._processes
        processes.prepare()
        marker = os.urandom(8).hex()  # tracked like a command, so pi's shutdown and the guard kill it
        self.process = await asyncio.create_subprocess_exec(
            sys.executable, "-I", "-S", str(WORKER), engine_path(), str(MEMORY_LIMIT_BYTES),
            env={**os.environ, MARKER_VARIABLE: marker}, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL, start_new_session=True, limit=_LINE_LIMIT)
        processes.track(self.process.pid, marker)
        remove = self.signal.on_abort(lambda: self._fail("aborted", abort_reason(self.signal)))
        reader = asyncio.ensure_future(self._read())
        try:
            self._post(self._job_message())
            if self.job.timeout_s is None:
                return await self.outcome
            try:
                return await asyncio.wait_for(asyncio.shield(self.outcome), self.job.timeout_s)
            except TimeoutError:
                self._fail("timeout", f"Execution timed out after {round(self.job.timeout_s * 1000)} ms")
                return await self.outcome
        finally:
            remove()
            reader.cancel()
            await self._stop()
            processes.untrack(self.process.pid)

    def _job_message(self) -> JsonObject:
        return {
            "code": self.job.code, "tools": self.job.tools,
            "globals": [{"name": n, "spread": s} for n, (s, _) in self.job.global_executors.items()],
            "store": {k: json.dumps(v, ensure_ascii=False) for k, v in self.job.store.items()},
            "limits": {"storeValue": MAX_STORE_VALUE_CHARS, "storeTotal": MAX_STORE_TOTAL_CHARS,
                       "outputChars": MAX_OUTPUT_CHARS, "outputItems": MAX_OUTPUT_ITEMS,
                       "preludeFirstLine": PRELUDE_FIRST_LINE},
        }

    def _post(self, message: JsonObject) -> None:
        assert self.process is not None and self.process.stdin is not None
        if self.outcome.done() or self.process.stdin.is_closing():
            return
        self.process.stdin.write((json.dumps(message, ensure_ascii=False) + "\n").encode())

    async def _read(self) -> None:
        assert self.process is not None and self.process.stdout is not None
        try:
            while not self.outcome.done():
                line = await self.process.stdout.readline()
                if not line:
                    self._fail("sandbox", "The codemode worker exited unexpectedly")
                    return
                self._receive(json.loads(line))
        except (ValueError, json.JSONDecodeError) as exc:
            self._fail("sandbox", f"Sandbox bridge broken: {exc}")

    def _receive(self, message: dict[str, Any]) -> None:
        kind = message.get("type")
        if kind == "output":
            self.output.append(_output_item(message))
        elif kind == "call":
            self.pending[message["id"]] = asyncio.ensure_future(self._call(message))
        elif kind == "done":
            self._done(message)
        elif kind == "crash":
            self._fail("sandbox", str(message.get("message")))

    async def _call(self, message: dict[str, Any]) -> None:
        call_id, name, is_tool = message["id"], message["name"], message["target"] == "tool"
        reply: JsonObject = {"type": "result", "id": call_id}
        try:
            args = None if message.get("args") is None else json.loads(message["args"])
            if is_tool:
                executor = self.job.tool_executors.get(name)
            else:
                executor = self.job.global_executors.get(name, (False, None))[1]
            if executor is None:
                raise CallRejected(f'Unknown {"tool" if is_tool else "global"} "{name}"')
            value = await executor(args, self.calls_signal)
            reply |= {"ok": True, "payload": None if value is None else json.dumps(value, ensure_ascii=False)}
        except asyncio.CancelledError:
            return
        except CallRejected as exc:
            reply |= {"ok": False, "payload": str(exc)}
            if exc.properties:
                reply["properties"] = json.dumps(exc.properties)
        except Exception as exc:
            reply |= {"ok": False, "payload": str(exc)}
        finally:
            self.pending.pop(call_id, None)
        self._post(reply)

    def _done(self, message: dict[str, Any]) -> None:
        if self.outcome.done():
            return
        if not message.get("ok"):
            error = json.loads(message.get("error") or "{}")
            self.outcome.set_result(ScriptRun(False, self.output, error=ScriptError(
                "script", str(error.get("message", "")), error.get("name"), error.get("stack"))))
            return
        raw = message.get("value")
        writes: dict[str, Any] = {"set": {}, "delete": []}
        for entry in json.loads(message.get("writes") or "[]"):
            if len(entry) == 2:
                writes["set"][entry[0]] = json.loads(entry[1])
            else:
                writes["delete"].append(entry[0])
        self.outcome.set_result(ScriptRun(True, self.output, value=None if raw is None else json.loads(raw),
                                          has_value=raw is not None, value_json=raw or "null", writes=writes))

    def _fail(self, kind: str, message: str) -> None:
        if not self.outcome.done():
            self.outcome.set_result(ScriptRun(False, self.output, error=ScriptError(kind, message)))

    async def _stop(self) -> None:
        """Cancel calls still running, then end the worker (killing it when it still computes)."""
        self.calls_signal.abort("The script ended")
        running = list(self.pending.values())
        if running:
            # aborted calls end through the tool pipeline (with their end events); stragglers are cancelled
            _, late = await asyncio.wait(running, timeout=_CALL_STOP_S)
            for task in late:
                task.cancel()
            await asyncio.gather(*running, return_exceptions=True)
        assert self.process is not None
        if self.process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                self.process.kill()
        await self.process.wait()


def _output_item(message: JsonObject) -> JsonObject:
    if message.get("kind") == "image":
        return {"type": "image", "data": message["data"], "mimeType": message["mimeType"]}
    item = {"type": "text", "text": message["data"]}
    if message.get("kind") == "console":
        item["console"] = True
    return item
