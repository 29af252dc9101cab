"""``pi --mode rpc``: JSON commands on stdin, responses and events on stdout (docs/rpc.md).

The mode is a thin loop around an ``AgentSession``: one reader task turns stdin into lines, every
line is handled by its own task (so ``abort`` overtakes the command it cancels), the command table
in ``rpc_commands`` calls the session, and one writer puts responses, events and extension UI
requests on stdout in the order they were produced.
"""

from __future__ import annotations

import asyncio
import sys
import traceback
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import orjson

from pi_coding_agent.ai.types import JsonObject
from pi_coding_agent.coding.events import CoreEvent
from pi_coding_agent.coding.modes.lifecycle import (
    OrderlyShutdown,
    keep_sigint_from_asyncio,
    take_over_stdin,
    take_over_stdout,
)
from pi_coding_agent.coding.modes.rpc import commands as rpc_commands
from pi_coding_agent.coding.modes.rpc.transport import RecordWriter, read_lines
from pi_coding_agent.coding.modes.rpc.ui_bridge import RpcExtensionUI
from pi_coding_agent.coding.modes.start_up import collector_paused
from pi_coding_agent.coding.modes.warm_up import warm_up_after_first_answer

if TYPE_CHECKING:
    from pi_coding_agent.coding.agent_session import AgentSession
    from pi_coding_agent.coding.options import CliArgs

IN_FLIGHT_GRACE_S = 5.0


SessionFactory = Callable[[RpcExtensionUI], Awaitable["AgentSession"]]


def run(args: CliArgs) -> int:
    """Serve the RPC protocol until stdin closes or a signal arrives; returns the exit code."""

    async def factory(ui: RpcExtensionUI) -> AgentSession:
        from pi_coding_agent.ai.providers.vendor import start_refresh
        from pi_coding_agent.coding.bootstrap import create_session

        session = await create_session(args, "rpc", ui)
        start_refresh(session.rt.registry, args.offline)  # pi refreshes live catalogs in the background here
        return session

    return serve(factory)


def serve(factory: SessionFactory) -> int:
    """Run the protocol over this process's stdio around the session ``factory`` builds."""
    output_fd = take_over_stdout()  # first, before anything can print
    input_fd = take_over_stdin()
    keep_sigint_from_asyncio()
    return asyncio.run(_main(factory, input_fd, output_fd))


async def _main(factory: SessionFactory, input_fd: int, output_fd: int) -> int:
    writer = RecordWriter(output_fd)
    await writer.start()
    ui = RpcExtensionUI(writer.send)
    try:
        with collector_paused():
            session = await factory(ui)
    except Exception as err:
        print(str(err) or type(err).__name__, file=sys.stderr)
        await writer.close()
        return 1
    return await RpcServer(session, writer, ui).serve(input_fd)


def parse_error(message: str, line: bytes = b"") -> JsonObject:
    """The parse-error response; it carries the line's ``id`` when only its text encoding was bad."""
    error = f"Failed to parse command: {message}"
    record_id = _salvage_id(line)
    if record_id is None:
        return {"type": "response", "command": "parse", "success": False, "error": error}
    return rpc_commands.response(record_id, True, "parse", error=error)


def _salvage_id(line: bytes) -> object:
    """The ``id`` of a line that is JSON apart from invalid UTF-8 or a lone surrogate escape."""
    import json

    try:
        record = json.loads(line.decode("utf-8", "replace"))
    except ValueError:
        return None
    return record.get("id") if isinstance(record, dict) else None


def _unknown_command(record: object) -> JsonObject:
    """pi's answer to valid JSON that names no known command (``Unknown command: undefined`` if untyped)."""
    if not isinstance(record, dict):
        return {"type": "response", "success": False, "error": "Unknown command: undefined"}
    has_id = "id" in record
    if "type" not in record:
        out: JsonObject = {"id": record["id"]} if has_id else {}
        out.update(type="response", success=False, error="Unknown command: undefined")
        return out
    kind = record["type"]
    shown = kind if isinstance(kind, str) else orjson.dumps(kind).decode()
    return rpc_commands.response(record.get("id"), has_id, kind, error=f"Unknown command: {shown}")


class RpcServer:
    """Dispatches input lines to the session; EOF or a signal ends it through ``OrderlyShutdown``."""

    def __init__(self, session: AgentSession, writer: RecordWriter, ui: RpcExtensionUI) -> None:
        self.session = session
        self.writer = writer
        self.ui = ui
        self._tasks: set[asyncio.Task[None]] = set()
        self._warming_started = False
        self._input_held: asyncio.Future[None] | None = None  # while agent_end waits to be read
        self.shutdown = OrderlyShutdown(self._cleanup)
        # an extension's ctx.shutdown() ends the process through the same orderly path as EOF
        session.set_shutdown_handler(lambda: self.shutdown.begin(0))

    async def serve(self, input_fd: int) -> int:
        unsubscribe = self.session.subscribe(self.writer.send)
        # The run settles only once agent_end has been read: clients check that agent_end is the last
        # record they have seen when it arrives (pi only waits for stdout, which races with the reader).
        self.session.agent.subscribe(self._hold_input_until_read, ("agent_end",))
        self.shutdown.install_signal_handlers()
        reader = asyncio.create_task(self._read(input_fd), name="rpc-reader")
        try:
            return await self.shutdown.wait()
        finally:
            unsubscribe()
            reader.cancel()
            for task in list(self._tasks):
                task.cancel()

    async def _hold_input_until_read(self, event: CoreEvent) -> None:
        """Wait (bounded) for the client to read ``agent_end``; commands it sends meanwhile are read
        once the wait is over, when the run goes straight on to settle. pi's post-run steps never
        wait, so a prompt sent on reading agent_end finds it idle; here it would find the run still
        streaming and be refused."""
        held = self._input_held = asyncio.get_running_loop().create_future()
        try:
            await self.writer.flush_to_reader()
        finally:
            self._input_held = None
            held.set_result(None)

    async def _read(self, input_fd: int) -> None:
        try:
            async for line in read_lines(input_fd):
                if self._input_held is not None:
                    await self._input_held
                self.handle_line(line)
                # Let the command run to its first wait, then stop reading while its output is backlogged.
                await asyncio.sleep(0)
                await self.writer.below_backlog_limit()
        except Exception:  # a broken stdin ends the session like EOF does
            traceback.print_exc(file=sys.stderr)
        self.shutdown.begin(0)

    def handle_line(self, line: bytes) -> None:
        """Parse errors are answered at once; everything else runs as its own task."""
        try:
            record = orjson.loads(line)
        except orjson.JSONDecodeError as err:
            self.writer.send(parse_error(str(err), line))
            return
        if isinstance(record, dict) and record.get("type") == "extension_ui_response":
            self.ui.resolve(record)
            return
        task = asyncio.create_task(self._handle(record))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _handle(self, record: Any) -> None:
        name = record.get("type") if isinstance(record, dict) else None
        if not isinstance(name, str) or name not in rpc_commands.COMMANDS:
            self.writer.send(_unknown_command(record))
            return
        self.writer.send(await rpc_commands.execute(self.session, name, record, self.writer.send))
        if not self._warming_started:
            self._warming_started = True
            await self._warm_up_once_answered()

    async def _warm_up_once_answered(self) -> None:
        """Start the MCP server processes and load the provider stack while the client reads the first
        answer (never before it is written): neither competes with start-up for the CPU."""
        await self.writer.flush()
        if not self.shutdown.started:
            if self.session.rt.mcp is not None:
                self.session.rt.mcp.connect()  # held back by create_session in this mode
            model = self.session.agent.model
            warm_up_after_first_answer(model, self.session.rt.registry.has_auth(model["provider"]))

    async def _cleanup(self) -> None:
        try:
            await self.session.shutdown()
        finally:
            if self._tasks:  # commands cut short by the shutdown still owe their client a response
                await asyncio.wait(list(self._tasks), timeout=IN_FLIGHT_GRACE_S)
            await self.writer.close()
