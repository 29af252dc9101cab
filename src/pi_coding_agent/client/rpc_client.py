"""An asyncio client for ``pi --mode rpc``: spawn, correlate responses by id, fan out events.

Self-contained on purpose (it imports nothing else from the package), so it can drive our pi, the
reference pi, or a pi on another machine behind ``ssh``::

    client = await RpcClient.start(["--provider", "faux", "--model", "faux-1", "--no-session"])
    events = await client.prompt_and_wait("List the files here")
    print(await client.get_last_assistant_text())
    await client.stop()
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import os
import sys
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import orjson

Record = dict[str, Any]
Listener = Callable[[Record], None]
UiHandler = Callable[[Record], Awaitable[Record | None] | Record | None]

DIALOG_METHODS = frozenset({"select", "confirm", "input", "editor"})
STDERR_TAIL_BYTES = 64 * 1024


def _discard(future: asyncio.Future[Any]) -> None:
    """Drop a watcher we no longer need without leaving a 'never retrieved' exception behind."""
    if future.done() and not future.cancelled():
        future.exception()
    future.cancel()


class RpcError(Exception):
    """A command answered ``success: false`` (``str()`` is pi's error text), or pi went away."""

    def __init__(self, message: str, command: str | None = None) -> None:
        super().__init__(message)
        self.command = command


class RpcClient:
    """One ``pi --mode rpc`` child process. Create it with ``await RpcClient.start(...)``."""

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc
        self._pending: dict[str, asyncio.Future[Record]] = {}
        self._listeners: list[Listener] = []
        self._watchers: list[tuple[Callable[[Record], bool], asyncio.Future[Record]]] = []
        self._ui_handler: UiHandler | None = None
        self._background: set[asyncio.Task[Any]] = set()
        self._next_id = 0
        self._stderr_tail = bytearray()
        self._closed = False
        self._reader = asyncio.create_task(self._read_stdout())
        self._stderr_reader = asyncio.create_task(self._read_stderr())

    @classmethod
    async def start(
        cls,
        args: Sequence[str] = (),
        cwd: str | os.PathLike[str] | None = None,
        env: dict[str, str] | None = None,
        command: Sequence[str] | None = None,
    ) -> RpcClient:
        """Spawn ``<command> --mode rpc <args>``; ``command`` defaults to this Python's ``-m pi_coding_agent``."""
        argv = [*(command or (sys.executable, "-m", "pi_coding_agent")), "--mode", "rpc", *args]
        proc = await asyncio.create_subprocess_exec(
            *argv, cwd=cwd, env=env, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        return cls(proc)

    # ------------------------------------------------------------------ plumbing

    @property
    def stderr(self) -> str:
        """The last 64 KiB pi wrote on stderr (diagnostics, warnings)."""
        return self._stderr_tail.decode(errors="replace")

    def subscribe(self, listener: Listener) -> Callable[[], None]:
        """Call ``listener`` with every record that is not a response to one of our commands."""
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener) if listener in self._listeners else None

    def on_ui_request(self, handler: UiHandler | None) -> None:
        """Answer dialog requests (select/confirm/input/editor) with ``handler(request)``.

        The handler returns the answer fields (``{"value": ...}``, ``{"confirmed": ...}``) or None
        to cancel. Without a handler every dialog is cancelled so the agent never waits forever.
        """
        self._ui_handler = handler

    def watch(self, predicate: Callable[[Record], bool]) -> asyncio.Future[Record]:
        """A future for the next event matching ``predicate``; create it *before* sending the command."""
        future: asyncio.Future[Record] = asyncio.get_running_loop().create_future()
        if self._closed:
            future.set_exception(self._gone())
        else:
            self._watchers.append((predicate, future))
        return future

    async def call(self, command_type: str, fields: Record | None = None, *, command_id: str | None = None) -> Any:
        """Send one command and return its response ``data`` (None when it has none)."""
        if self._closed:
            raise self._gone()
        command_id = command_id or self._new_id()
        future: asyncio.Future[Record] = asyncio.get_running_loop().create_future()
        self._pending[command_id] = future
        try:
            await self._write({"id": command_id, "type": command_type, **(fields or {})})
            response = await future
        finally:
            self._pending.pop(command_id, None)
        if not response.get("success"):
            raise RpcError(str(response.get("error")), command_type)
        return response.get("data")

    def _new_id(self) -> str:
        self._next_id += 1
        return f"req_{self._next_id}"

    async def _write(self, record: Record) -> None:
        stdin = self.proc.stdin
        assert stdin is not None
        try:
            stdin.write(orjson.dumps(record) + b"\n")
            await stdin.drain()
        except (BrokenPipeError, ConnectionResetError) as err:
            raise self._gone() from err

    def _gone(self) -> RpcError:
        return RpcError(f"pi is not running (exit code {self.proc.returncode}); stderr:\n{self.stderr[-2000:]}")

    async def _read_stdout(self) -> None:
        stdout = self.proc.stdout
        assert stdout is not None
        buffer = bytearray()
        try:
            while chunk := await stdout.read(1 << 16):
                buffer += chunk
                start = 0
                while (end := buffer.find(b"\n", start)) != -1:
                    self._dispatch_line(bytes(buffer[start:end]))
                    start = end + 1
                del buffer[:start]
            if buffer:
                self._dispatch_line(bytes(buffer))
        finally:
            self._close_all()

    def _dispatch_line(self, line: bytes) -> None:
        line = line.removesuffix(b"\r")
        if not line.strip():
            return
        try:
            record = orjson.loads(line)
        except orjson.JSONDecodeError:
            print(f"rpc client: ignoring a non-JSON stdout line: {line[:200]!r}", file=sys.stderr)
            return
        if not isinstance(record, dict):
            return
        if record.get("type") == "response":
            future = self._pending.get(str(record.get("id"))) if "id" in record else None
            if future is not None and not future.done():
                future.set_result(record)
                return
        elif record.get("type") == "extension_ui_request" and record.get("method") in DIALOG_METHODS:
            self._spawn(self._answer_dialog(record))
        self._deliver(record)

    def _deliver(self, record: Record) -> None:
        for listener in list(self._listeners):
            listener(record)
        if self._watchers:
            remaining = []
            for predicate, future in self._watchers:
                if future.done():
                    continue
                if predicate(record):
                    future.set_result(record)
                else:
                    remaining.append((predicate, future))
            self._watchers = remaining

    async def _answer_dialog(self, request: Record) -> None:
        answer: Record | None = None
        if self._ui_handler is not None:
            result = self._ui_handler(request)
            answer = await result if inspect.isawaitable(result) else result
        reply = {"type": "extension_ui_response", "id": request["id"], **(answer or {"cancelled": True})}
        with contextlib.suppress(RpcError):
            await self._write(reply)

    def _spawn(self, coroutine: Awaitable[None]) -> None:
        task = asyncio.ensure_future(coroutine)
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    def _close_all(self) -> None:
        self._closed = True
        for future in [*self._pending.values(), *(future for _, future in self._watchers)]:
            if not future.done():
                future.set_exception(self._gone())
        self._watchers = []

    async def _read_stderr(self) -> None:
        stderr = self.proc.stderr
        assert stderr is not None
        while chunk := await stderr.read(1 << 16):
            self._stderr_tail += chunk
            del self._stderr_tail[:-STDERR_TAIL_BYTES]

    # ------------------------------------------------------------------ lifecycle

    async def stop(self, timeout: float = 10.0) -> int:
        """Close stdin (pi's orderly shutdown), wait, and kill if it does not exit in ``timeout`` s."""
        stdin = self.proc.stdin
        if stdin is not None and not stdin.is_closing():
            stdin.close()
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                await stdin.wait_closed()
        try:
            await asyncio.wait_for(self.proc.wait(), timeout)
        except TimeoutError:
            with contextlib.suppress(ProcessLookupError):
                self.proc.kill()
            await self.proc.wait()
        await asyncio.gather(self._reader, self._stderr_reader, return_exceptions=True)
        return self.proc.returncode if self.proc.returncode is not None else -1

    async def __aenter__(self) -> RpcClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    # ------------------------------------------------------------------ waiting for runs

    async def prompt_and_wait(
        self, message: str, images: list[Record] | None = None, streaming_behavior: str | None = None
    ) -> list[Record]:
        """Send a prompt and return every event up to the ``agent_settled`` that ends its run.

        A ``handled`` prompt starts no run and returns at once. The collector is registered
        before the command is written, so an ``agent_settled`` read in the same chunk as the
        response is never missed.
        """
        events: list[Record] = []
        unsubscribe = self.subscribe(events.append)
        settled = self.watch(lambda record: record.get("type") == "agent_settled")
        try:
            data = await self.prompt(message, images, streaming_behavior)
            if data.get("disposition") != "handled":
                await settled
        finally:
            unsubscribe()
            _discard(settled)
        return events

    async def wait_for_idle(self) -> None:
        """Return once pi reports no run in progress (waiting for ``agent_settled`` if one is)."""
        settled = self.watch(lambda record: record.get("type") == "agent_settled")
        try:
            state = await self.get_state()
            if state.get("isStreaming"):
                await settled
        finally:
            _discard(settled)

    # ------------------------------------------------------------------ prompting

    async def prompt(
        self, message: str, images: list[Record] | None = None, streaming_behavior: str | None = None
    ) -> Record:
        """``{"disposition": "started" | "queued" | "handled"}``."""
        fields: Record = {"message": message}
        if images:
            fields["images"] = images
        if streaming_behavior:
            fields["streamingBehavior"] = streaming_behavior
        data: Record = await self.call("prompt", fields)
        return data

    async def steer(self, message: str, images: list[Record] | None = None) -> Record:
        data: Record = await self.call("steer", {"message": message, **({"images": images} if images else {})})
        return data

    async def follow_up(self, message: str, images: list[Record] | None = None) -> Record:
        data: Record = await self.call("follow_up", {"message": message, **({"images": images} if images else {})})
        return data

    async def abort(self) -> None:
        """Returns once the run is over (pi answers after ``agent_settled``)."""
        await self.call("abort")

    async def clear_queue(self) -> Record:
        """``{"steering": [texts], "followUp": [texts]}`` removed from the queues."""
        data: Record = await self.call("clear_queue")
        return data

    async def new_session(self, parent_session: str | None = None) -> Record:
        data: Record = await self.call("new_session", {"parentSession": parent_session} if parent_session else {})
        return data

    # ------------------------------------------------------------------ state and model

    async def get_state(self) -> Record:
        data: Record = await self.call("get_state")
        return data

    async def get_messages(self) -> list[Record]:
        data: Record = await self.call("get_messages")
        return list(data["messages"])

    async def set_model(self, provider: str, model_id: str) -> Record:
        data: Record = await self.call("set_model", {"provider": provider, "modelId": model_id})
        return data

    async def cycle_model(self) -> Record | None:
        """``{"model", "thinkingLevel", "isScoped"}``, or None when there is nothing to switch to."""
        data: Record | None = await self.call("cycle_model")
        return data

    async def get_available_models(self) -> list[Record]:
        data: Record = await self.call("get_available_models")
        return list(data["models"])

    async def set_thinking_level(self, level: str) -> None:
        await self.call("set_thinking_level", {"level": level})

    async def cycle_thinking_level(self) -> Record | None:
        data: Record | None = await self.call("cycle_thinking_level")
        return data

    async def get_available_thinking_levels(self) -> list[str]:
        data: Record = await self.call("get_available_thinking_levels")
        return list(data["levels"])

    async def set_steering_mode(self, mode: str) -> None:
        await self.call("set_steering_mode", {"mode": mode})

    async def set_follow_up_mode(self, mode: str) -> None:
        await self.call("set_follow_up_mode", {"mode": mode})

    # ------------------------------------------------------------------ compaction, retry, bash

    async def compact(self, custom_instructions: str | None = None) -> Record:
        fields = {"customInstructions": custom_instructions} if custom_instructions else {}
        data: Record = await self.call("compact", fields)
        return data

    async def set_auto_compaction(self, enabled: bool) -> None:
        await self.call("set_auto_compaction", {"enabled": enabled})

    async def set_auto_retry(self, enabled: bool) -> None:
        await self.call("set_auto_retry", {"enabled": enabled})

    async def abort_retry(self) -> None:
        await self.call("abort_retry")

    async def bash(
        self, command: str, exclude_from_context: bool = False, on_output: Callable[[str], None] | None = None
    ) -> Record:
        """Run a shell command; ``on_output`` receives each streamed chunk before this returns."""
        command_id = self._new_id()
        unsubscribe = self.subscribe(
            lambda r: on_output(r["delta"])
            if on_output and r.get("type") == "bash_execution_update" and r.get("id") == command_id else None
        )
        fields: Record = {"command": command}
        if exclude_from_context:
            fields["excludeFromContext"] = True
        try:
            data: Record = await self.call("bash", fields, command_id=command_id)
        finally:
            unsubscribe()
        return data

    async def abort_bash(self) -> None:
        await self.call("abort_bash")

    # ------------------------------------------------------------------ session

    async def get_session_stats(self) -> Record:
        data: Record = await self.call("get_session_stats")
        return data

    async def export_html(self, output_path: str | None = None) -> str:
        data: Record = await self.call("export_html", {"outputPath": output_path} if output_path else {})
        return str(data["path"])

    async def switch_session(self, session_path: str) -> Record:
        data: Record = await self.call("switch_session", {"sessionPath": session_path})
        return data

    async def fork(self, entry_id: str) -> Record:
        """``{"text", "cancelled": false}`` or ``{"cancelled": true}``."""
        data: Record = await self.call("fork", {"entryId": entry_id})
        return data

    async def clone(self) -> Record:
        data: Record = await self.call("clone")
        return data

    async def get_fork_messages(self) -> list[Record]:
        data: Record = await self.call("get_fork_messages")
        return list(data["messages"])

    async def get_entries(self, since: str | None = None) -> Record:
        """``{"entries": [...], "leafId": id | None}``."""
        data: Record = await self.call("get_entries", {"since": since} if since else {})
        return data

    async def get_tree(self) -> Record:
        data: Record = await self.call("get_tree")
        return data

    async def get_last_assistant_text(self) -> str | None:
        data: Record = await self.call("get_last_assistant_text")
        text = data.get("text")
        return text if isinstance(text, str) else None

    async def set_session_name(self, name: str) -> None:
        await self.call("set_session_name", {"name": name})

    async def get_commands(self) -> list[Record]:
        data: Record = await self.call("get_commands")
        return list(data["commands"])
