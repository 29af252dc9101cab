"""Spawn ``pi --mode rpc`` (or the transport around a fake session) and talk to it over raw pipes.

``RpcProcess`` is deliberately low level (raw bytes in, parsed records out) so framing tests can send
split writes, CRLF and garbage; the typed client in ``pi_coding_agent.client`` is tested separately.

``python -m tests.support.rpc_helpers`` runs the real RPC transport and command table around ``FakeSession``,
a small stand-in for ``AgentSession`` whose behaviour the transport tests can steer:

* prompt ``"slow"`` streams text deltas until aborted; any other prompt answers ``"echo: <text>"``;
* prompt ``"/ask"`` runs a select + confirm dialog through the extension UI and is ``handled``;
* prompt ``"/stray"`` prints to sys.stdout and spawns a child writing to an inherited fd 1;
* ``bash`` really runs ``sh -c`` in its own process group, streaming output.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import orjson

from pi_coding_agent.agent.listeners import Listeners

ROOT = Path(__file__).resolve().parents[2]
PYTHON = str(ROOT / ".venv" / "bin" / "python")
READ_TIMEOUT_S = 30.0


class RpcProcess:
    """One spawned RPC process with helpers to write commands and read records."""

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc
        self._buffer = b""
        self.raw_lines: list[bytes] = []  # every stdout line as received, for "nothing but JSON" checks
        self._next_id = 0

    @classmethod
    async def spawn(cls, argv: list[str], cwd: str | Path | None = None, env: dict[str, str] | None = None,
                    ) -> RpcProcess:
        proc = await asyncio.create_subprocess_exec(
            *argv, cwd=cwd, env=env, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE, limit=1 << 26, start_new_session=True,
        )
        return cls(proc)

    @classmethod
    async def fake(cls, *extra: str) -> RpcProcess:
        """The RPC transport around ``FakeSession``."""
        return await cls.spawn([PYTHON, "-m", "tests.support.rpc_helpers", *extra], cwd=ROOT)

    @classmethod
    async def pi(cls, *args: str, cwd: str | Path | None = None, env: dict[str, str] | None = None) -> RpcProcess:
        """The real ``pi --mode rpc``."""
        return await cls.spawn([PYTHON, "-m", "pi_coding_agent", "--mode", "rpc", *args], cwd=cwd, env=env)

    # ------------------------------------------------------------------ writing

    async def write(self, data: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(data)
        await self.proc.stdin.drain()

    async def send(self, record: Any) -> None:
        await self.write(orjson.dumps(record) + b"\n")

    def new_id(self) -> str:
        self._next_id += 1
        return f"t{self._next_id}"

    async def close_stdin(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            await self.proc.stdin.wait_closed()

    # ------------------------------------------------------------------ reading

    async def read_record(self) -> dict[str, Any]:
        """The next stdout record; fails the test on EOF or when nothing comes for a long time."""
        assert self.proc.stdout is not None
        while b"\n" not in self._buffer:
            chunk = await asyncio.wait_for(self.proc.stdout.read(1 << 20), READ_TIMEOUT_S)
            if not chunk:
                raise EOFError(f"stdout closed; stderr:\n{await self.stderr_text()}")
            self._buffer += chunk
        line, self._buffer = self._buffer.split(b"\n", 1)
        self.raw_lines.append(line)
        record: dict[str, Any] = orjson.loads(line)
        return record

    async def read_until(self, predicate: Callable[[dict[str, Any]], bool]) -> list[dict[str, Any]]:
        """Records up to and including the first one matching ``predicate``."""
        records = []
        while True:
            record = await self.read_record()
            records.append(record)
            if predicate(record):
                return records

    async def response_to(self, command_id: Any) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        """Read until the response with ``command_id``; returns it and every record before it."""
        records = await self.read_until(lambda r: r.get("type") == "response" and r.get("id") == command_id)
        return records[-1], records[:-1]

    async def request(self, record: dict[str, Any]) -> dict[str, Any]:
        """Send a command with a fresh id and return its response."""
        command_id = self.new_id()
        await self.send({**record, "id": command_id})
        response, _ = await self.response_to(command_id)
        return response

    async def read_rest(self) -> list[dict[str, Any]]:
        """Every record until stdout closes (after close_stdin or a signal)."""
        assert self.proc.stdout is not None
        data = self._buffer + await asyncio.wait_for(self.proc.stdout.read(), READ_TIMEOUT_S)
        self._buffer = b""
        lines = [line for line in data.split(b"\n") if line]
        self.raw_lines.extend(lines)
        return [orjson.loads(line) for line in lines]

    async def wait(self) -> int:
        return await asyncio.wait_for(self.proc.wait(), READ_TIMEOUT_S)

    async def stderr_text(self) -> str:
        assert self.proc.stderr is not None
        with contextlib.suppress(TimeoutError):
            return (await asyncio.wait_for(self.proc.stderr.read(), 5)).decode(errors="replace")
        return ""

    async def kill(self) -> None:
        if self.proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            await self.proc.wait()


# --------------------------------------------------------------------------- fake session


class FakeAgent:
    """The agent's awaited listeners (the RPC mode waits there for agent_end to be read)."""

    def __init__(self) -> None:
        self.listeners: Listeners[Callable[[dict[str, Any]], Any]] = Listeners()

    def subscribe(self, listener: Callable[[dict[str, Any]], Any], types: Iterable[str] | None = None) -> Callable[[], None]:
        return self.listeners.add(listener, types)

    async def emit(self, event: dict[str, Any]) -> None:
        for listener in self.listeners.for_type(event["type"]):
            pending = listener(event)
            if pending is not None:
                await pending


class FakeSession:
    """Implements the AgentSession surface the RPC table calls, with scripted, observable behaviour."""

    def __init__(self, ui: Any) -> None:
        self.ui = ui
        self.agent = FakeAgent()
        self._listeners: Listeners[Callable[[dict[str, Any]], None]] = Listeners()
        self._run: asyncio.Task[None] | None = None
        self._idle = asyncio.Event()
        self._idle.set()
        self._bash: set[asyncio.subprocess.Process] = set()
        self.name: str | None = None
        self.thinking = "off"
        self.messages: list[dict[str, Any]] = []

    def set_shutdown_handler(self, stop: Callable[[], None]) -> None:
        self.request_shutdown = stop

    def subscribe(self, listener: Callable[[dict[str, Any]], None], types: Iterable[str] | None = None) -> Callable[[], None]:
        return self._listeners.add(listener, types)

    def _emit(self, event: dict[str, Any]) -> None:
        for listener in self._listeners.for_type(event["type"]):
            listener(event)

    # prompting
    async def prompt(self, message: str, images: list | None = None, streaming_behavior: str | None = None) -> dict:
        if message == "/ask":
            choice = await self.ui.select("Pick one", ["A", "B"], timeout_ms=60000)
            sure = await self.ui.confirm("Sure?", f"Picked {choice}")
            self.ui.notify(f"{choice}:{sure}")
            return {"disposition": "handled"}
        if message == "/stray":
            print("STRAY-PRINT from the agent process")
            child = await asyncio.create_subprocess_exec("sh", "-c", "echo STRAY-CHILD")
            await child.wait()
            return {"disposition": "handled"}
        if not self._idle.is_set():
            if streaming_behavior is None:
                raise RuntimeError("Agent is already processing. Specify streamingBehavior ('steer' or "
                                   "'followUp') to queue the message.")
            return {"disposition": "queued"}
        self._idle.clear()
        self._run = asyncio.create_task(self._run_prompt(message))
        return {"disposition": "started"}

    async def _run_prompt(self, text: str) -> None:
        aborted = False
        self._emit({"type": "agent_start"})
        user = {"role": "user", "content": [{"type": "text", "text": text}], "timestamp": 1}
        self._emit({"type": "message_start", "message": user})
        self._emit({"type": "message_end", "message": user})
        try:
            while text == "slow":
                await asyncio.sleep(0.01)
                self._emit({"type": "message_update", "assistantMessageEvent": {"type": "text_delta", "delta": "."}})
            reply = {"role": "assistant", "content": [{"type": "text", "text": f"echo: {text}"}], "stopReason": "stop"}
            self.messages += [user, reply]
            self._emit({"type": "message_end", "message": reply})
        except asyncio.CancelledError:
            aborted = True
        agent_end = {"type": "agent_end", "messages": [], "willRetry": False}
        self._emit(agent_end)
        await self.agent.emit(agent_end)
        self._emit({"type": "agent_settled", "aborted": aborted})
        self._idle.set()

    async def steer(self, message: str, images: list | None = None) -> dict:
        self._emit({"type": "queue_update", "steering": [message], "followUp": []})
        return {"disposition": "queued"}

    async def follow_up(self, message: str, images: list | None = None) -> dict:
        self._emit({"type": "queue_update", "steering": [], "followUp": [message]})
        return {"disposition": "queued"}

    async def abort(self) -> None:
        if self._run is not None:
            self._run.cancel()
        await self._idle.wait()

    async def wait_for_idle(self) -> None:
        await self._idle.wait()

    def clear_queue(self) -> dict:
        return {"steering": [], "followUp": []}

    async def new_session(self, parent_session: str | None = None) -> dict:
        return {"cancelled": parent_session == "cancel-me"}

    # state
    def get_state(self) -> dict:
        state = {"thinkingLevel": self.thinking, "isStreaming": not self._idle.is_set(),
                 "messageCount": len(self.messages)}
        if self.name is not None:
            state["sessionName"] = self.name
        return state

    def get_messages(self) -> list[dict]:
        return self.messages

    async def set_model(self, provider: str, model_id: str) -> dict:
        if provider != "faux":
            raise ValueError(f"Model not found: {provider}/{model_id}")
        return {"provider": provider, "id": model_id}

    async def cycle_model(self) -> dict | None:
        return None

    def get_available_models(self) -> list[dict]:
        return [{"provider": "faux", "id": "faux-1"}]

    def set_thinking_level(self, level: str) -> None:
        self.thinking = level

    def cycle_thinking_level(self) -> dict | None:
        return None

    def get_available_thinking_levels(self) -> list[str]:
        return ["off"]

    def set_steering_mode(self, mode: str) -> None:
        pass

    def set_follow_up_mode(self, mode: str) -> None:
        pass

    async def compact(self, custom_instructions: str | None = None) -> dict:
        raise RuntimeError("Nothing to compact (session too small)")

    def set_auto_compaction(self, enabled: bool) -> None:
        pass

    def set_auto_retry(self, enabled: bool) -> None:
        pass

    def abort_retry(self) -> None:
        pass

    # bash
    async def bash(self, command: str, exclude_from_context: bool, on_delta: Callable[[str], None]) -> dict:
        proc = await asyncio.create_subprocess_exec(
            "sh", "-c", command, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
            stdin=asyncio.subprocess.DEVNULL, start_new_session=True)
        self._bash.add(proc)
        assert proc.stdout is not None
        output = []
        while chunk := await proc.stdout.read(4096):
            output.append(chunk.decode())
            on_delta(output[-1])
        code = await proc.wait()
        self._bash.discard(proc)
        cancelled = code < 0
        result: dict[str, Any] = {"output": "".join(output), "cancelled": cancelled, "truncated": False}
        if not cancelled:
            result["exitCode"] = code
        return result

    def abort_bash(self) -> None:
        for proc in self._bash:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)

    # session
    def get_session_stats(self) -> dict:
        return {"totalMessages": len(self.messages)}

    async def export_html(self, output_path: str | None = None) -> str:
        raise RuntimeError("Cannot export in-memory session to HTML")

    async def switch_session(self, session_path: str) -> dict:
        return {"cancelled": False}

    async def fork(self, entry_id: str) -> dict:
        if entry_id == "cancel-me":
            return {"cancelled": True, "text": "dropped"}
        return {"text": "forked text", "cancelled": False}

    async def clone(self) -> dict:
        return {"cancelled": False}

    def get_fork_messages(self) -> list[dict]:
        return []

    def get_entries_json(self, since: str | None = None) -> tuple[Iterator[bytes], str | None]:
        if since is not None:
            raise LookupError(f"Entry not found: {since}")
        return iter([b"[]"]), None

    def get_tree_json(self) -> tuple[Iterator[bytes], str | None]:
        return iter([b"[", b"]"]), None

    def get_last_assistant_text(self) -> str | None:
        for message in reversed(self.messages):
            if message["role"] == "assistant":
                return str(message["content"][0]["text"])
        return None

    async def set_session_name(self, name: str) -> None:
        self.name = name
        self._emit({"type": "session_info_changed", "name": name})

    def get_commands(self) -> list[dict]:
        return []

    async def shutdown(self) -> None:
        await self.abort()
        self.abort_bash()
        for proc in list(self._bash):
            await proc.wait()


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT / "src"))
    from pi_coding_agent.coding.modes.rpc.mode import serve

    async def _factory(ui: Any) -> Any:
        return FakeSession(ui)

    sys.exit(serve(_factory))
