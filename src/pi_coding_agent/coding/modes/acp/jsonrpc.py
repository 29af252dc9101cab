"""JSON-RPC 2.0 over newline-delimited stdio: one peer that answers requests and makes its own.

ACP is symmetric: the client calls the agent (``session/prompt``) and the agent calls the client
(``session/request_permission``, ``fs/*``, ``terminal/*``) on the same pipes. Framing, stdout
protection and the single ordered writer are the RPC mode's (``modes/rpc_transport``); this module
only adds the JSON-RPC envelope, id correlation for outgoing requests and error objects. Every
incoming request runs in its own task, so ``session/cancel`` overtakes the prompt it cancels.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import sys
import traceback
from collections.abc import Awaitable, Callable

import orjson

from pi_coding_agent.ai.types import JsonObject
from pi_coding_agent.coding.modes.rpc.transport import RecordWriter, read_lines

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
REQUEST_CANCELLED = -32800
AUTH_REQUIRED = -32000
RESOURCE_NOT_FOUND = -32002


class RpcError(Exception):
    """An error answer: raised by a handler to reply with it, raised by ``request`` when the peer did."""

    def __init__(self, code: int, message: str, data: object = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data

    def to_wire(self) -> JsonObject:
        error: JsonObject = {"code": self.code, "message": self.message}
        if self.data is not None:
            error["data"] = self.data
        return error


class ConnectionClosed(Exception):
    """The peer went away before answering."""


Handler = Callable[[str, object], Awaitable[object]]
NotificationHandler = Callable[[str, object], None]


class JsonRpcPeer:
    """Dispatches incoming lines to ``on_request``/``on_notification`` and correlates outgoing requests."""

    def __init__(self, writer: RecordWriter, on_request: Handler, on_notification: NotificationHandler) -> None:
        self._writer = writer
        self._on_request = on_request
        self._on_notification = on_notification
        self._ids = itertools.count()
        self._pending: dict[int, asyncio.Future[object]] = {}
        self._incoming: dict[object, asyncio.Task[None]] = {}
        self.closed = False

    # ------------------------------------------------------------------ outgoing

    async def request(self, method: str, params: object) -> object:
        """Call the peer and wait for its result; raises ``RpcError`` or ``ConnectionClosed``."""
        if self.closed:
            raise ConnectionClosed(f"{method}: the client has disconnected")
        request_id = next(self._ids)
        future: asyncio.Future[object] = asyncio.get_running_loop().create_future()
        self._pending[request_id] = future
        self._writer.send({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
        try:
            return await future
        except asyncio.CancelledError:
            if not self.closed:  # tell the client we no longer wait (ACP's $/cancel_request)
                self.notify("$/cancel_request", {"requestId": request_id})
            raise
        finally:
            self._pending.pop(request_id, None)

    def notify(self, method: str, params: object) -> None:
        self._writer.send({"jsonrpc": "2.0", "method": method, "params": params})

    # ------------------------------------------------------------------ incoming

    async def serve(self, input_fd: int) -> None:
        """Read until EOF; then every outgoing request fails with ``ConnectionClosed``."""
        try:
            async for line in read_lines(input_fd):
                if line.strip():
                    self.handle_line(line)
        except Exception:  # a broken stdin ends the connection like EOF does
            traceback.print_exc(file=sys.stderr)
        finally:
            self.closed = True
            for future in self._pending.values():
                if not future.done():
                    future.set_exception(ConnectionClosed("the client has disconnected"))

    def handle_line(self, line: bytes) -> None:
        try:
            message = orjson.loads(line)
        except orjson.JSONDecodeError as err:
            self._reply_error(None, RpcError(PARSE_ERROR, "Parse error", str(err)))
            return
        if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
            shown_id = message.get("id") if isinstance(message, dict) else None
            self._reply_error(_valid_id(shown_id), RpcError(INVALID_REQUEST, "Invalid Request",
                                                           "expected one JSON-RPC 2.0 object per line"))
            return
        if "method" in message:
            self._dispatch(message)
        elif "id" in message and ("result" in message or "error" in message):
            self._resolve(message)
        else:
            self._reply_error(_valid_id(message.get("id")), RpcError(INVALID_REQUEST, "Invalid Request"))

    def _dispatch(self, message: JsonObject) -> None:
        method = message["method"]
        params = message.get("params")
        if not isinstance(method, str) or (params is not None and not isinstance(params, dict | list)):
            self._reply_error(_valid_id(message.get("id")), RpcError(INVALID_REQUEST, "Invalid Request"))
            return
        if "id" not in message:
            if method == "$/cancel_request":
                self._cancel_incoming(params)
                return
            try:
                self._on_notification(method, params)
            except Exception:  # a notification has nobody to answer; log and carry on
                traceback.print_exc(file=sys.stderr)
            return
        request_id = message["id"]
        if _valid_id(request_id) is None:
            self._reply_error(None, RpcError(INVALID_REQUEST, "Invalid Request", "id must be a string or number"))
            return
        task = asyncio.create_task(self._answer(request_id, method, params))
        self._incoming[_key(request_id)] = task
        task.add_done_callback(lambda _: self._incoming.pop(_key(request_id), None))

    async def _answer(self, request_id: object, method: str, params: object) -> None:
        try:
            result = await self._on_request(method, params)
        except RpcError as err:
            self._reply_error(request_id, err)
        except asyncio.CancelledError:
            self._reply_error(request_id, RpcError(REQUEST_CANCELLED, "Request cancelled"))
        except Exception as err:
            traceback.print_exc(file=sys.stderr)
            self._reply_error(request_id, RpcError(INTERNAL_ERROR, str(err) or type(err).__name__))
        else:
            self._writer.send({"jsonrpc": "2.0", "id": request_id, "result": result})

    def _cancel_incoming(self, params: object) -> None:
        request_id = params.get("requestId") if isinstance(params, dict) else None
        task = self._incoming.get(_key(request_id))
        if task is not None:
            task.cancel()

    def _resolve(self, message: JsonObject) -> None:
        request_id = message["id"]
        future = self._pending.get(request_id) if isinstance(request_id, int) else None
        if future is None or future.done():
            return  # an answer nobody waits for (late, or to a request we gave up on)
        error = message.get("error")
        if error is not None:
            code = error.get("code") if isinstance(error, dict) else None
            text = error.get("message") if isinstance(error, dict) else None
            future.set_exception(RpcError(code if isinstance(code, int) else INTERNAL_ERROR,
                                          text if isinstance(text, str) else "error", error.get("data")
                                          if isinstance(error, dict) else None))
        else:
            future.set_result(message.get("result"))

    def _reply_error(self, request_id: object, error: RpcError) -> None:
        self._writer.send({"jsonrpc": "2.0", "id": request_id, "error": error.to_wire()})

    async def drain(self, timeout: float) -> None:
        """Let requests still being answered finish (bounded) before the writer closes."""
        if self._incoming:
            with contextlib.suppress(Exception):
                await asyncio.wait(list(self._incoming.values()), timeout=timeout)


def _valid_id(value: object) -> object:
    """A usable JSON-RPC id (string or integer-like number), else None."""
    if isinstance(value, bool):
        return None
    return value if isinstance(value, str | int | float) else None


def _key(request_id: object) -> object:
    """Ids compare by JSON value: the number 1 and the string "1" are different requests."""
    return (type(request_id).__name__, request_id)
