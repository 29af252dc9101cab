"""The RPC command table: for each command, its fields, their types, and the session call it makes.

This is the one place where the protocol's camelCase parameters become snake_case method
arguments, and where input is validated (pi has no validation layer; we answer a missing or
ill-typed field with an error naming it instead of whatever the implementation would trip over).
``execute`` turns one parsed command record into its response record.
"""

from __future__ import annotations

import sys
import traceback
from collections.abc import Callable, Iterator
from typing import NamedTuple, Protocol

import orjson

from pi_coding_agent.agent.awaitables import maybe_await
from pi_coding_agent.agent.events import AgentMessage
from pi_coding_agent.agent.queues import QUEUE_MODES
from pi_coding_agent.ai.types import JsonObject
from pi_coding_agent.coding.errors import CommandError, is_bug
from pi_coding_agent.coding.modes.rpc.transport import StreamedJson
from pi_coding_agent.coding.session import iter_array

Emit = Callable[[JsonObject], None]


class RpcSession(Protocol):
    """The session as the command table sees it: the methods named in ``COMMANDS`` (looked up by
    name) plus those the special cases below call directly. ``AgentSession`` is one."""

    async def bash(self, command: str, exclude_from_context: bool,
                   on_delta: Callable[[str], None]) -> JsonObject: ...

    async def fork(self, entry_id: str) -> JsonObject: ...

    async def set_session_name(self, name: str) -> None: ...

    def get_tree_json(self) -> tuple[Iterator[bytes], str | None]: ...

    def get_entries_json(self, since: str | None) -> tuple[Iterator[bytes], str | None]: ...

    def get_messages(self) -> list[AgentMessage]: ...

    def get_last_assistant_text(self) -> str | None: ...


class Field(NamedTuple):
    """One command parameter: wire name, accepted type, and the method argument it feeds."""

    name: str
    kind: str  # "string" | "boolean" | "images"
    required: bool = True
    choices: tuple[str, ...] = ()
    default: object = None

    @property
    def argument(self) -> str:
        return "".join(f"_{c.lower()}" if c.isupper() else c for c in self.name)


def _opt(name: str, kind: str, *, choices: tuple[str, ...] = (), default: object = None) -> Field:
    return Field(name, kind, required=False, choices=choices, default=default)


# How a method's return value becomes the response ``data``.
NO_DATA = "none"  # respond without data
AS_IS = "as_is"  # the return value itself (None becomes ``"data": null``)


class Command(NamedTuple):
    method: str  # AgentSession method called with the converted fields as keyword arguments
    fields: tuple[Field, ...] = ()
    result: str = AS_IS  # NO_DATA, AS_IS, or a key to wrap the value in: {"<key>": value}


class CallContext(NamedTuple):
    """What a handler may need besides its arguments: the command id and the event output."""

    command_id: object
    has_id: bool
    emit: Emit


_MESSAGE = (Field("message", "string"), _opt("images", "images"))
_QUEUE_MODE = (Field("mode", "string", choices=QUEUE_MODES),)

COMMANDS: dict[str, Command] = {
    # prompting
    "prompt": Command("prompt", (*_MESSAGE, _opt("streamingBehavior", "string", choices=("steer", "followUp")))),
    "steer": Command("steer", _MESSAGE),
    "follow_up": Command("follow_up", _MESSAGE),
    "abort": Command("abort", result=NO_DATA),
    "clear_queue": Command("clear_queue"),
    "new_session": Command("new_session", (_opt("parentSession", "string"),)),
    # state
    "get_state": Command("get_state"),
    "get_messages": Command("get_messages", result="messages"),
    # model
    "set_model": Command("set_model", (Field("provider", "string"), Field("modelId", "string"))),
    "cycle_model": Command("cycle_model"),
    "get_available_models": Command("get_available_models", result="models"),
    # thinking (an unknown level is clamped by the session, as pi does, so it is not a choice here)
    "set_thinking_level": Command("set_thinking_level", (Field("level", "string"),), NO_DATA),
    "cycle_thinking_level": Command("cycle_thinking_level"),
    "get_available_thinking_levels": Command("get_available_thinking_levels", result="levels"),
    # queue modes
    "set_steering_mode": Command("set_steering_mode", _QUEUE_MODE, NO_DATA),
    "set_follow_up_mode": Command("set_follow_up_mode", _QUEUE_MODE, NO_DATA),
    # compaction and retry
    "compact": Command("compact", (_opt("customInstructions", "string"),)),
    "set_auto_compaction": Command("set_auto_compaction", (Field("enabled", "boolean"),), NO_DATA),
    "set_auto_retry": Command("set_auto_retry", (Field("enabled", "boolean"),), NO_DATA),
    "abort_retry": Command("abort_retry", result=NO_DATA),
    # user bash
    "bash": Command("bash", (Field("command", "string"), _opt("excludeFromContext", "boolean", default=False))),
    "abort_bash": Command("abort_bash", result=NO_DATA),
    # session
    "get_session_stats": Command("get_session_stats"),
    "export_html": Command("export_html", (_opt("outputPath", "string"),), "path"),
    "switch_session": Command("switch_session", (Field("sessionPath", "string"),)),
    "fork": Command("fork", (Field("entryId", "string"),)),
    "clone": Command("clone"),
    "get_fork_messages": Command("get_fork_messages", result="messages"),
    "get_entries": Command("get_entries", (_opt("since", "string"),)),
    "get_tree": Command("get_tree"),
    "get_last_assistant_text": Command("get_last_assistant_text"),
    "set_session_name": Command("set_session_name", (Field("name", "string"),), NO_DATA),
    # discovery
    "get_commands": Command("get_commands", result="commands"),
}


def _type_error(kind: str, value: object) -> str | None:
    if kind == "string":
        return None if isinstance(value, str) else "must be a string"
    if kind == "boolean":
        return None if isinstance(value, bool) else "must be a boolean"
    if not isinstance(value, list):
        return "must be an array of image objects"
    for index, image in enumerate(value):
        if not (isinstance(image, dict) and image.get("type") == "image"
                and isinstance(image.get("data"), str) and isinstance(image.get("mimeType"), str)):
            return f'[{index}] must be {{"type":"image","data":<base64 string>,"mimeType":<string>}}'
    return None


def convert_arguments(name: str, command: Command, record: JsonObject) -> JsonObject:
    """Validate ``record`` against the table and return the snake_case keyword arguments."""
    arguments: JsonObject = {}
    for field in command.fields:
        value = record.get(field.name)
        if value is None:  # absent, or JSON null for an optional field
            if field.required:
                raise CommandError(f'{name}: "{field.name}" is required')
            arguments[field.argument] = field.default
            continue
        problem = _type_error(field.kind, value)
        if problem is None and field.choices and value not in field.choices:
            problem = "must be one of " + ", ".join(f'"{choice}"' for choice in field.choices)
        if problem is not None:
            raise CommandError(f'{name}: "{field.name}" {problem}')
        arguments[field.argument] = value
    return arguments


# --------------------------------------------------------------------------- special cases
# Eight commands need more than "call the method with the arguments": they are spelled out here.


async def _bash(session: RpcSession, ctx: CallContext, command: str, exclude_from_context: bool) -> object:
    """Every output chunk becomes a ``bash_execution_update`` carrying the command's id, all before the response."""

    def on_delta(delta: str) -> None:
        event: JsonObject = {"type": "bash_execution_update"}
        if ctx.has_id:
            event["id"] = ctx.command_id
        event["delta"] = delta
        ctx.emit(event)

    return await session.bash(command, exclude_from_context, on_delta)


async def _fork(session: RpcSession, ctx: CallContext, entry_id: str) -> object:
    result = await session.fork(entry_id)
    return {"cancelled": True} if result.get("cancelled") else {"text": result.get("text", ""), "cancelled": False}


async def _set_session_name(session: RpcSession, ctx: CallContext, name: str) -> None:
    trimmed = name.strip()
    if not trimmed:
        raise CommandError("Session name cannot be empty")
    await session.set_session_name(trimmed)


# The three that can be as large as the session are streamed into their response line (the tree
# also nests one level per entry, deeper than orjson recurses).


def _get_tree(session: RpcSession, ctx: CallContext) -> JsonObject:
    chunks, leaf_id = session.get_tree_json()
    return {"tree": StreamedJson(chunks), "leafId": leaf_id}


def _get_entries(session: RpcSession, ctx: CallContext, since: str | None) -> JsonObject:
    chunks, leaf_id = session.get_entries_json(since)
    return {"entries": StreamedJson(chunks), "leafId": leaf_id}


def _get_messages(session: RpcSession, ctx: CallContext) -> StreamedJson:
    """The list as it is now (it moves on), each message serialised only when it is written
    (serialising them all first held ~4 KiB of orjson buffer per message)."""
    return StreamedJson(iter_array(map(orjson.dumps, list(session.get_messages()))))


def _last_assistant_text(session: RpcSession, ctx: CallContext) -> JsonObject:
    text = session.get_last_assistant_text()
    return {} if text is None else {"text": text}


SPECIAL_HANDLERS: dict[str, Callable[..., object]] = {
    "bash": _bash,
    "fork": _fork,
    "set_session_name": _set_session_name,
    "get_last_assistant_text": _last_assistant_text,
    "get_tree": _get_tree,
    "get_entries": _get_entries,
    "get_messages": _get_messages,
}


# --------------------------------------------------------------------------- responses


def response(record_id: object, has_id: bool, command: object, *, data: object = None, has_data: bool = False,
             error: str | None = None) -> JsonObject:
    """A response envelope with pi's key order: id, type, command, success, data|error."""
    out: JsonObject = {"id": record_id} if has_id else {}
    out["type"] = "response"
    out["command"] = command
    out["success"] = error is None
    if error is not None:
        out["error"] = error
    elif has_data:
        out["data"] = data
    return out


def _shape(command: Command, value: object) -> tuple[bool, object]:
    if command.result == NO_DATA:
        return False, None
    if command.result == AS_IS:
        return True, value
    return True, {command.result: value}


async def execute(session: RpcSession, name: str, record: JsonObject, emit: Emit) -> JsonObject:
    """Run one known command against the session and build its response (never raises)."""
    has_id = "id" in record
    record_id = record.get("id")
    command = COMMANDS[name]
    try:
        arguments = convert_arguments(name, command, record)
        special = SPECIAL_HANDLERS.get(name)
        if special is not None:
            value = special(session, CallContext(record_id, has_id, emit), **arguments)
        else:
            value = getattr(session, command.method)(**arguments)
        value = await maybe_await(value)
    except Exception as err:  # every failure becomes an error response; the stream goes on
        if is_bug(err):
            traceback.print_exc(file=sys.stderr)
        return response(record_id, has_id, name, error=str(err) or type(err).__name__)
    has_data, data = _shape(command, value)
    return response(record_id, has_id, name, data=data, has_data=has_data)
