"""pi's TypeScript extensions, run in one Node.js sidecar per session and mapped onto the Python
extension API, so the rest of the session cannot tell them from Python extensions.

The sidecar (``sidecar.mjs``, package data) loads each extension with ``jiti`` and speaks JSON lines:

- to the sidecar: ``{"id", "type": "load", "path", "extId"}``; ``{"id", "type": "invoke", "handler",
  "args", "ctx", "tool"}`` (an event handler, a command, a tool's ``execute``); ``{"type": "reply",
  "id", "result"|"error"}`` answering one of its calls, after ``{"type": "event", "id", "event", ...}``
  records for a ``models.streamSimple`` call (its request's events); ``{"type": "stream", "event",
  "message"?, "fields"?, "block"?}`` bringing the sidecar's copy of a streamed assistant message to one
  ``message_update`` event, whose handlers then come as invokes with ``"streamed": true`` and no args
  (``streams.py`` says what each event record holds); ``{"type": "abort", "signal"}`` (below);
  ``{"id", "type": "render", "handler", "message", "options", "width", "theme", "keys"}`` asking a
  message renderer for its component's ``render(width)`` lines (``MessageRenderer``);
- from the sidecar: ``{"type": "result", "id", "result"|"error"}``; ``{"type": "register", "extId",
  "kind", "spec"}`` for a registration made after load (those made while loading come with the load
  result); ``{"type": "call", "id", "ctx", "method", "args"}`` (``ui.*``, ``pi.*``, ``ctx.*``,
  ``models.*``; ``id`` null when no answer is awaited; ``"signal": "live"|"aborted"`` when a dialog or
  a model call got an AbortSignal); ``{"type": "abort", "id"}`` when that signal fires; ``{"type":
  "update", "id", "partial"}`` (a tool's ``onUpdate``).

A handler's ``ctx`` carries ``"signal"`` (a number) during a run, ``"aborted": true`` once it fired:
the sidecar gives it an AbortSignal (a tool's ``execute`` gets the same one), aborted when
``{"type": "abort", "signal"}`` comes (sent when the run's signal fires).

Calls pi makes synchronous (``ctx.sessionManager.*``, ``ctx.modelRegistry.find``/``getAll``/...) come
with ``"sync": true``: the sidecar blocks reading a second pipe (its fd given on the command line) until
the reply line arrives there, after the calls it sent before have run (so ``appendEntry`` then
``getEntries`` sees the entry, as in pi).

``ctx`` travels as a token: the Python context of the handler being run answers the ``ui.*`` and
``ctx.*`` calls made with that token. jiti and TypeBox come from npm into a cache folder
(``runtime_dir``) on the first TypeScript extension ever loaded, never on a plain start.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import os
import shutil
import sys
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import Any, cast

import orjson

from pi_coding_agent.ai.abort import AbortSignal
from pi_coding_agent.ai.types import JsonObject
from pi_coding_agent.coding.extensions.agent_hooks import UNAWAITED_EVENTS
from pi_coding_agent.coding.extensions.loader import LoadError
from pi_coding_agent.coding.extensions.typescript.streams import MessageMirror, jsonable

MIN_NODE_MAJOR = 20
RUNTIME_PACKAGES = ("jiti@2.7.0", "typebox@1.4.3")
INSTALL_TIMEOUT_S = 600.0  # how long a second process waits for the first one's npm install
# a lock of an install whose process was killed: taken over after this (its holder touches it every 2 s;
# pi does not share this lock, so its 30 s limit for auth.json need not apply)
INSTALL_LOCK_STALE_S = 6.0
_HERE = Path(__file__).resolve().parent


def runtime_dir() -> Path:
    """Where jiti and TypeBox are installed: ``$PI_TS_RUNTIME_DIR``, else the user cache folder."""
    configured = os.environ.get("PI_TS_RUNTIME_DIR")
    if configured:
        return Path(configured).expanduser()
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache) / "pi-coding-agent-python" / "typescript"


def setup_for(path: Path) -> Callable[[object], object]:
    """The ``setup(pi)`` of a TypeScript extension: load it in the session's sidecar."""
    async def setup(pi: Any) -> None:
        runner = pi._runner
        if runner.sidecar is None:
            runner.sidecar = SidecarHost()
        await runner.sidecar.load(path, pi)
    return setup


class MessageRenderer:
    """A TypeScript extension's ``registerMessageRenderer``. It runs in the sidecar, so the terminal UI
    asks it ahead for the lines of one width (``render``) and draws them when they come; called as a
    Python renderer (synchronously) it has no drawing."""

    def __init__(self, host: SidecarHost, handler: int) -> None:
        self.host, self.handler = host, handler

    def __call__(self, message: object, options: object, theme: object) -> None:
        return None

    async def render(self, message: JsonObject, options: JsonObject, width: int, theme: Mapping[str, Mapping[str, str]],
                     keys: dict[str, list[str]]) -> list[str] | None:
        """The component's lines with ANSI styling (``theme``: SGR parameters by colour name, under
        ``fg`` and ``bg``; ``keys``: the key bindings ``keyText`` answers); None when the renderer
        returned nothing. Raises when it failed or the sidecar is gone."""
        if self.host.proc is None:
            raise RuntimeError("the TypeScript extension sidecar is not running")
        lines = await self.host._request({"type": "render", "handler": self.handler, "message": message,
                                          "options": options, "width": width, "theme": theme, "keys": keys})
        return None if lines is None else [str(line) for line in lines]


class SidecarHost:
    """One Node.js process for every TypeScript extension of a session."""

    def __init__(self) -> None:
        self.proc: asyncio.subprocess.Process | None = None
        self._start_error: str | None = None
        self._ids = itertools.count(1)
        self._waiting: dict[int, asyncio.Future[Any]] = {}
        self._updates: dict[int, Callable[[Any], None]] = {}
        self._contexts: dict[int, object] = {}
        self._apis: JsonObject = {}  # extId -> that extension's Python ``pi``
        self._reader: asyncio.Task[None] | None = None
        self._tasks: set[asyncio.Task[object]] = set()
        self._signals: dict[int, AbortSignal] = {}  # open dialog call id -> its signal
        self._sync_fd: int | None = None  # write end of the pipe the sidecar reads sync replies from
        self._posted: set[asyncio.Future[Any]] = set()  # streamed-event invokes not yet answered
        self._unsent: list[bytes] = []  # records queued in this event-loop pass, written at its end
        self._pass_info: dict[str, Any] | None = None  # the ctx those invokes carry, read once a pass
        self._mirror = MessageMirror()  # the sidecar's copy of the message ``message_update`` streams
        self._run_signal: AbortSignal | None = None  # the abort signal the sidecar mirrors (ctx.signal)
        self._signal_number = 0  # its number there
        self._unhook_signal: Callable[[], None] = lambda: None

    # ------------------------------------------------------------------ start

    async def _ensure_started(self) -> asyncio.subprocess.Process:
        if self.proc is not None:
            return self.proc
        if self._start_error is not None:
            raise LoadError(self._start_error)
        try:
            node = await _check_node()
            runtime = await _ensure_runtime(runtime_dir())
        except LoadError as exc:
            self._start_error = str(exc)
            raise
        sync_read, self._sync_fd = os.pipe()
        try:
            self.proc = await asyncio.create_subprocess_exec(
                node, str(_HERE / "sidecar.mjs"), str(runtime), str(_HERE / "shim.mjs"), str(sync_read),
                stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=None, limit=1 << 26,
                pass_fds=(sync_read,))
        finally:
            os.close(sync_read)
        self._reader = asyncio.ensure_future(self._read(self.proc))
        return self.proc

    # ------------------------------------------------------------------ requests

    async def load(self, path: Path, pi: object) -> None:
        await self._ensure_started()
        ext_id = str(path)
        self._apis[ext_id] = pi
        result = await self._request({"type": "load", "path": str(path), "extId": ext_id})
        for registration in result["registrations"]:
            self._apply(pi, registration["kind"], registration["spec"])

    async def invoke(self, handler: int, args: list[object], ctx: object, tool: bool = False,
                     on_update: Callable[[object], None] | None = None, return_input: bool = False,
                     pi: object = None, signal: AbortSignal | None = None) -> Any:
        """Run a handler in the sidecar; with ``pi``, the state its synchronous getters read goes along;
        ``signal`` (a tool's) is its ``ctx.signal``, else the context's."""
        token = next(self._ids)
        self._contexts[token] = ctx
        record: JsonObject = {"type": "invoke", "handler": handler, "args": args, "tool": tool,
                                  "returnInput": return_input, "ctx": self._info(token, ctx, signal)}
        if pi is not None:
            record["state"] = _state(pi)
        try:
            return await self._request(record, on_update)
        finally:
            self._contexts.pop(token, None)

    def post(self, handler: int, event: dict[str, Any], ctx: Any, report: Callable[[Exception], None]) -> None:
        """Run a ``message_update`` handler without waiting for it: its result cannot change anything,
        and the sidecar starts the handlers in the order posted. The event goes as a ``stream`` record
        (``MessageMirror``), once for all its handlers. Its calls keep ``ctx`` until it ends, a
        failure goes to ``report``, and ``settled`` lets a later event wait for it. What the handler
        reads of ``ctx`` (``cwd``, ``model``, ...) is read once per event-loop pass (one network read)."""
        if self.proc is None:
            return
        request_id = next(self._ids)
        self._contexts[request_id] = ctx
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._waiting[request_id] = future
        self._posted.add(future)
        future.add_done_callback(lambda done: self._posted_done(request_id, done, report))
        if self._pass_info is None:
            self._pass_info = self._info(0, ctx)
        if event["assistantMessageEvent"] is not self._mirror.change:
            self._queue({"type": "stream", **self._mirror.record(event["message"], event["assistantMessageEvent"])})
        self._queue({"type": "invoke", "id": request_id, "handler": handler, "streamed": True, "post": True,
                     "ctx": {**self._pass_info, "token": request_id}})

    def _queue(self, record: JsonObject) -> None:
        """A record written with the others queued in this event-loop pass, in one write at its end
        (a network read's deltas: ``message_update`` invokes, a ``streamSimple`` call's events)."""
        if not self._unsent:
            asyncio.get_running_loop().call_soon(self._flush)
        self._unsent.append(orjson.dumps(record, default=jsonable, option=orjson.OPT_APPEND_NEWLINE))

    def _info(self, token: int, ctx: object, signal: AbortSignal | None = None) -> JsonObject:
        """``_context_info`` and the handler's ``ctx.signal``: the run's abort signal, one AbortSignal in the
        sidecar per run (numbered), aborted there by an ``abort`` record when it fires here."""
        info = _context_info(token, ctx)
        if signal is None:
            with contextlib.suppress(Exception):
                signal = cast(Any, ctx).signal
        if not isinstance(signal, AbortSignal):
            return info
        if signal is not self._run_signal:
            self._unhook_signal()
            number = self._signal_number = self._signal_number + 1
            self._run_signal = signal
            self._unhook_signal = signal.on_abort(lambda: self._send({"type": "abort", "signal": number}))
        info["signal"] = self._signal_number
        if signal.aborted:
            info["aborted"] = True
        return info

    def _send(self, record: JsonObject) -> None:
        if self.proc is not None:
            self._write(self.proc, record)

    def _posted_done(self, request_id: int, future: asyncio.Future[Any], report: Callable[[Exception], None]) -> None:
        self._posted.discard(future)
        self._waiting.pop(request_id, None)
        self._contexts.pop(request_id, None)
        if not future.cancelled() and (exc := future.exception()) is not None:
            report(cast(Exception, exc))

    def settled(self) -> Awaitable[Any] | None:
        """What a later event awaits so the posted handlers' calls reach the client before it; None when
        nothing is pending."""
        return asyncio.gather(*self._posted, return_exceptions=True) if self._posted else None

    def _flush(self) -> None:
        """One write for the records queued in one event-loop pass; the ctx of its invokes is read again
        in the next."""
        unsent, self._unsent, self._pass_info = self._unsent, [], None
        if unsent and self.proc is not None and self.proc.stdin is not None:
            self.proc.stdin.write(b"".join(unsent))

    async def _tool_call(self, handler: int, event: JsonObject, ctx: object, pi: object) -> object:
        """A ``tool_call`` handler; what it changed in ``event.input`` is changed here too (in place)."""
        answer = await self.invoke(handler, [event], ctx, return_input=True, pi=pi)
        changed = answer.get("input")
        target = event.get("input")
        if isinstance(target, dict) and isinstance(changed, dict) and changed != target:
            target.clear()
            target.update(changed)
        return answer.get("result")

    async def _request(self, record: dict[str, Any], on_update: Callable[[object], None] | None = None) -> Any:
        proc = await self._ensure_started()
        request_id = next(self._ids)
        future: asyncio.Future[object] = asyncio.get_running_loop().create_future()
        self._waiting[request_id] = future
        if on_update is not None:
            self._updates[request_id] = on_update
        try:
            self._write(proc, {**record, "id": request_id})
            return await future
        finally:
            self._waiting.pop(request_id, None)
            self._updates.pop(request_id, None)

    def _write(self, proc: asyncio.subprocess.Process, record: JsonObject) -> None:
        assert proc.stdin is not None
        self._flush()  # the invokes posted before this record go first
        proc.stdin.write(orjson.dumps(record, default=jsonable, option=orjson.OPT_APPEND_NEWLINE))

    # ------------------------------------------------------------------ what the sidecar sends

    async def _read(self, proc: asyncio.subprocess.Process) -> None:
        assert proc.stdout is not None
        while line := await proc.stdout.readline():
            try:
                record = orjson.loads(line)
            except orjson.JSONDecodeError:
                print(f"Warning: TypeScript sidecar wrote a non-JSON line: {line[:200]!r}", file=sys.stderr)
                continue
            self._dispatch(record)
        for future in self._waiting.values():
            if not future.done():
                future.set_exception(RuntimeError("the TypeScript extension sidecar exited"))

    def _dispatch(self, record: dict[str, Any]) -> None:
        kind = record.get("type")
        if kind == "result":
            unanswered = [t for t in self._tasks if not t.done() and t.get_name() == "fire"]
            if unanswered:  # the notices and entries the extension sent before returning land first
                self._spawn(self._deliver_after(unanswered, record), "deliver")
            else:
                self._deliver(record)
        elif kind == "update":
            update = self._updates.get(record["id"])
            if update is not None:
                update(record.get("partial"))
        elif kind == "register":
            pi = self._apis.get(record["extId"])
            if pi is not None:
                self._apply(pi, record["kind"], record["spec"])
        elif kind == "call" and record.get("sync"):
            self._spawn(self._answer_sync(record), "sync")
        elif kind == "call":
            if record.get("signal"):
                self._signals[record["id"]] = AbortSignal()
                if record["signal"] == "aborted":
                    self._signals[record["id"]].abort()
            self._spawn(self._answer(record), "fire" if record.get("id") is None else "ask")
        elif kind == "abort":
            signal = self._signals.get(record["id"])
            if signal is not None:
                signal.abort()

    def _spawn(self, coroutine: Any, name: str) -> None:
        task = asyncio.ensure_future(coroutine)
        task.set_name(name)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _deliver_after(self, tasks: list[asyncio.Task[object]], record: JsonObject) -> None:
        await asyncio.gather(*tasks, return_exceptions=True)
        self._deliver(record)

    def _deliver(self, record: dict[str, Any]) -> None:
        future = self._waiting.get(record["id"])
        if future is not None and not future.done():
            if "error" in record:
                future.set_exception(RuntimeError(record["error"]))
            else:
                future.set_result(record.get("result"))

    async def _answer(self, record: dict[str, Any]) -> None:
        from pi_coding_agent.coding.extensions.typescript.calls import run_call

        ctx = self._contexts.get(record["ctx"]) if record.get("ctx") is not None else None
        reply: JsonObject = {"type": "reply", "id": record["id"]}
        try:
            pi = self._apis.get(record.get("extId") or "") or next(iter(self._apis.values()), None)
            reply["result"] = await run_call(record["method"], record.get("args") or [], ctx, pi,
                                             self._signals.get(record["id"]),
                                             lambda event: self._queue({"type": "event", "id": record["id"], **event}))
        except Exception as exc:
            if record["id"] is None:
                print(f"Warning: TypeScript extension call {record['method']} failed: {exc}", file=sys.stderr)
            reply["error"] = str(exc) or type(exc).__name__
        finally:
            self._signals.pop(record["id"], None)
        if record["id"] is not None and self.proc is not None:
            self._write(self.proc, reply)

    async def _answer_sync(self, record: dict[str, Any]) -> None:
        """A synchronous read, answered on the sync pipe once the calls sent before it have run."""
        from pi_coding_agent.coding.extensions.typescript.calls import run_sync_call

        earlier = [t for t in self._tasks if not t.done() and t.get_name() == "fire"]
        if earlier:
            await asyncio.gather(*earlier, return_exceptions=True)
        reply: JsonObject = {}
        try:
            ctx = self._contexts.get(record["ctx"]) if record.get("ctx") is not None else None
            reply["result"] = run_sync_call(record["method"], record.get("args") or [], ctx)
        except Exception as exc:
            reply["error"] = str(exc) or type(exc).__name__
        if self._sync_fd is not None:
            _write_all(self._sync_fd, orjson.dumps(reply, default=jsonable, option=orjson.OPT_APPEND_NEWLINE))

    # ------------------------------------------------------------------ registrations

    def _apply(self, pi: Any, kind: str, spec: dict[str, Any]) -> None:
        """One registration of the extension, made on its Python ``pi`` with a proxy handler."""
        handler: int = spec.get("handler", 0)
        if kind == "on" and spec["event"] == "tool_call":
            pi.on("tool_call", lambda event, ctx: self._tool_call(handler, event, ctx, pi))
        elif kind == "on" and spec["event"] in UNAWAITED_EVENTS:
            name, path = spec["event"], pi._extension.path
            pi.on(name, lambda event, ctx: self.post(
                handler, event, ctx, lambda exc: pi._runner.report_error(path, name, exc)))
        elif kind == "on":
            state_of = None if spec["event"] == "tool_execution_update" else pi  # no state snapshot per delta
            pi.on(spec["event"], lambda event, ctx: self.invoke(handler, [event], ctx, pi=state_of))
        elif kind == "command":
            pi.register_command(spec["name"], description=spec.get("description"),
                                handler=lambda args, ctx: self.invoke(handler, [args], ctx, pi=pi))
        elif kind == "tool":
            async def execute(tool_call_id: str, params: Any, signal: Any, update: Any, ctx: Any) -> object:
                return await self.invoke(handler, [tool_call_id, params], ctx, tool=True, on_update=update, pi=pi,
                                         signal=signal)

            # as in pi, an abort reaches the tool through its signal, and the run waits for its result
            pi.register_tool(name=spec["name"], label=spec.get("label"), description=spec.get("description") or "",
                             parameters=spec.get("parameters"), execute=execute, handles_abort=True,
                             execution_mode=spec.get("executionMode") or "parallel",
                             prompt_snippet=spec.get("promptSnippet"), prompt_guidelines=spec.get("promptGuidelines"))
        elif kind == "shortcut":
            pi.register_shortcut(spec["key"], description=spec.get("description"),
                                 handler=lambda ctx: self.invoke(handler, [], ctx, pi=pi))
        elif kind == "messageRenderer":
            pi.register_message_renderer(spec["customType"], MessageRenderer(self, handler))
        elif kind == "entryRenderer":  # drawn like a message renderer, with the entry as its first argument
            pi.register_entry_renderer(spec["customType"], MessageRenderer(self, handler))
        elif kind == "flag":
            pi.register_flag(spec["name"], type=spec.get("type", "boolean"), description=spec.get("description"),
                             default=spec.get("default"))
        elif kind == "virtualModel":
            pi.register_virtual_model({
                "provider": spec["provider"], "id": spec["id"], "name": spec.get("name") or spec["id"],
                "thinking_levels": spec.get("thinkingLevels"), "context_window": spec.get("contextWindow"),
                "max_tokens": spec.get("maxTokens"), "input": spec.get("input"),
                "route": lambda request, ctx: self._route(handler, request, ctx)})

    async def _route(self, handler: int, request: Any, ctx: Any) -> JsonObject:
        """A TypeScript router's answer to one ``RouteRequest``, sent in pi's camelCase. State crosses
        as JSON: an answer equal to the request's state keeps it (no new entry)."""
        def routed(value: Any) -> JsonObject | None:
            if value is None:
                return None
            return {"model": value.model, "thinkingLevel": value.thinking_level,
                    **({"message": value.message} if value.message is not None else {})}

        wire = {"model": request.model, "thinkingLevel": request.thinking_level, "reason": request.reason,
                "messages": request.messages, "previous": routed(request.previous),
                "failed": routed(request.failed), "state": request.state}
        answer = await self.invoke(handler, [{k: v for k, v in wire.items() if v is not None}], ctx)
        if not isinstance(answer, dict):
            raise TypeError("route() must return { model, thinkingLevel }")
        state = answer.get("state")
        return {"model": answer.get("model"), "thinking_level": answer.get("thinkingLevel"),
                "state": request.state if state == request.state else state}

    async def close(self) -> None:
        """End the sidecar (it exits when its stdin closes); a later load starts a new one."""
        proc, self.proc = self.proc, None
        self._mirror, self._run_signal = MessageMirror(), None
        self._unhook_signal()
        if self._sync_fd is not None:
            os.close(self._sync_fd)
            self._sync_fd = None
        if proc is not None and proc.stdin is not None:
            with contextlib.suppress(Exception):
                proc.stdin.close()
            await proc.wait()
        if self._reader is not None:
            await self._reader


def _context_info(token: int, ctx: Any) -> JsonObject:
    """What a TypeScript handler can read of ``ctx`` without a round trip."""
    info: JsonObject = {"token": token}
    with contextlib.suppress(Exception):
        info.update(cwd=ctx.cwd, hasUI=ctx.has_ui, mode=ctx.mode, idle=ctx.is_idle(),
                    editorText=ctx.ui.get_editor_text())
        model = ctx.model
        if model is not None:
            info["model"] = {"provider": model["provider"], "id": model["id"]}
    return info


def _state(pi: Any) -> JsonObject:
    """What pi's synchronous getters answer (``getCommands``, ``getActiveTools``, ...), read now."""
    state: JsonObject = {}
    with contextlib.suppress(Exception):
        state.update(commands=pi.get_commands(), activeTools=pi.get_active_tools(), allTools=pi.get_all_tools(),
                     sessionName=pi.get_session_name(), thinkingLevel=pi.get_thinking_level())
    return state


def _write_all(fd: int, data: bytes) -> None:
    """All of ``data`` on a blocking pipe whose reader (the sidecar, blocked on it) drains it."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


async def _check_node() -> str:
    node = shutil.which("node")
    if node is None:
        raise LoadError("TypeScript extensions need Node.js >= 20 on PATH (node not found)")
    proc = await asyncio.create_subprocess_exec(node, "--version", stdout=asyncio.subprocess.PIPE)
    out, _ = await proc.communicate()
    version = out.decode().strip()
    try:
        major = int(version.lstrip("v").split(".")[0])
    except ValueError:
        major = 0
    if major < MIN_NODE_MAJOR:
        raise LoadError(f"TypeScript extensions need Node.js >= {MIN_NODE_MAJOR} (found {version or 'unknown'})")
    return node


def _runtime_installed(directory: Path) -> bool:
    """Both packages there, and npm's hidden lockfile, which it writes once an install finished: an
    install killed halfway leaves the packages' ``package.json`` without all their files."""
    modules = directory / "node_modules"
    return (modules / ".package-lock.json").is_file() and \
        all((modules / name / "package.json").is_file() for name in ("jiti", "typebox"))


async def _ensure_runtime(directory: Path) -> Path:
    """jiti and TypeBox in ``directory``, installed with npm the first time (output to stderr).

    Under pi's file lock: two processes starting at once on a fresh machine (an IDE opening two
    sessions, parallel tests) would otherwise run two npm installs into one folder and break both."""
    if _runtime_installed(directory):
        return directory
    from pi_coding_agent.ai.auth.oauth.lock import auth_file_lock

    npm = shutil.which("npm")
    if npm is None:
        raise LoadError(f"TypeScript extensions need jiti, installed with npm into {directory} (npm not found)")
    directory.mkdir(parents=True, exist_ok=True)
    async with auth_file_lock(directory / "package.json", timeout_s=INSTALL_TIMEOUT_S, stale_s=INSTALL_LOCK_STALE_S):
        if not _runtime_installed(directory):  # the holder before us may have installed it
            await _npm_install(npm, directory)
    return directory


async def _npm_install(npm: str, directory: Path) -> None:
    if not (directory / "package.json").exists():
        (directory / "package.json").write_text('{"name": "pi-typescript-runtime", "private": true}\n')
    print(f"Installing the TypeScript extension runtime ({', '.join(RUNTIME_PACKAGES)}) into {directory}...",
          file=sys.stderr)
    proc = await asyncio.create_subprocess_exec(
        npm, "install", *RUNTIME_PACKAGES, "--prefix", str(directory), "--no-audit", "--no-fund",
        stdin=asyncio.subprocess.DEVNULL, stdout=sys.stderr.fileno(), stderr=sys.stderr.fileno())
    if await proc.wait() != 0:
        raise LoadError(f"could not install the TypeScript extension runtime into {directory} (npm failed)")
