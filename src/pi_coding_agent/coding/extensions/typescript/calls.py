"""What a TypeScript extension's calls do on the Python side: ``ui.*`` on the context of the handler
that made them, ``pi.*`` on the extension's Python ``pi``, ``ctx.*`` and ``models.*`` on the context
(pi's names and argument orders; option objects keep pi's camelCase keys)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from pi_coding_agent.agent.awaitables import maybe_await
from pi_coding_agent.ai.types import JsonObject


def _timeout(options: object) -> int | None:
    value = options.get("timeout") if isinstance(options, dict) else None
    return int(value) if isinstance(value, (int, float)) else None


def _ui(ctx: Any) -> object:
    if ctx is None:
        raise RuntimeError("ctx.ui is available only inside a handler, a command or a tool")
    return ctx.ui


# the dialogs that take pi's ExtensionUIDialogOptions (``timeout``; ``signal`` crosses as an AbortSignal)
_DIALOGS: dict[str, Callable[[Any, list[Any], Any], object]] = {
    "ui.select": lambda ui, a, signal: ui.select(a[0], list(a[1]), timeout_ms=_timeout(a[2] if len(a) > 2 else None),
                                                 signal=signal),
    "ui.confirm": lambda ui, a, signal: ui.confirm(a[0], a[1], timeout_ms=_timeout(a[2] if len(a) > 2 else None),
                                                   signal=signal),
    "ui.input": lambda ui, a, signal: ui.input(a[0], a[1] if len(a) > 1 else None,
                                               timeout_ms=_timeout(a[2] if len(a) > 2 else None), signal=signal),
}

_UI: dict[str, Callable[[Any, list[Any]], object]] = {
    "ui.editor": lambda ui, a: ui.editor(a[0], a[1] if len(a) > 1 else None),
    "ui.notify": lambda ui, a: ui.notify(a[0], a[1] if len(a) > 1 else None),
    "ui.setStatus": lambda ui, a: ui.set_status(a[0], a[1] if len(a) > 1 else None),
    "ui.setWidget": lambda ui, a: ui.set_widget(a[0], a[1] if len(a) > 1 else None, a[2] if len(a) > 2 else None),
    "ui.setTitle": lambda ui, a: ui.set_title(a[0]),
    "ui.setEditorText": lambda ui, a: ui.set_editor_text(a[0]),
    "ui.pasteToEditor": lambda ui, a: ui.paste_to_editor(a[0]),
}


def _options(args: list[object], index: int) -> JsonObject:
    value = args[index] if len(args) > index else None
    return value if isinstance(value, dict) else {}


_PI: dict[str, Callable[[Any, list[Any]], Any]] = {
    "pi.appendEntry": lambda pi, a: pi.append_entry(a[0], a[1] if len(a) > 1 else None),
    "pi.sendMessage": lambda pi, a: pi.send_message(a[0], trigger_turn=_options(a, 1).get("triggerTurn"),
                                                    deliver_as=_options(a, 1).get("deliverAs")),
    "pi.sendUserMessage": lambda pi, a: pi.send_user_message(
        a[0] if isinstance(a[0], str) else "".join(p.get("text", "") for p in a[0] if isinstance(p, dict)),
        deliver_as=_options(a, 1).get("deliverAs")),
    "pi.setSessionName": lambda pi, a: pi.set_session_name(a[0]),
    "pi.setLabel": lambda pi, a: pi.set_label(a[0], a[1] if len(a) > 1 else None),
    "pi.setActiveTools": lambda pi, a: pi.set_active_tools(list(a[0])),
    "pi.setThinkingLevel": lambda pi, a: pi.set_thinking_level(a[0]),
    "pi.registerProvider": lambda pi, a: pi.register_provider(a[0], a[1]),
    "pi.unregisterProvider": lambda pi, a: pi.unregister_provider(a[0]),
    "pi.unregisterVirtualModel": lambda pi, a: pi.unregister_virtual_model(a[0], a[1]),
}

_CTX: dict[str, Callable[[Any, list[Any]], Any]] = {
    "ctx.abort": lambda ctx, a: ctx.abort(),
    "ctx.waitForIdle": lambda ctx, a: ctx.wait_for_idle(),
    "ctx.shutdown": lambda ctx, a: ctx.shutdown(),
    "models.getApiKeyAndHeaders": lambda ctx, a: ctx.model_registry.get_api_key_and_headers(a[0]),
    "models.getApiKeyForProvider": lambda ctx, a: ctx.model_registry.get_api_key_for_provider(a[0]),
}


def _arg(args: list[object], index: int = 0) -> object:
    return args[index] if len(args) > index else None


# What pi's ``ctx.sessionManager`` and ``ctx.modelRegistry`` answer synchronously: read on the spot.
_SYNC: dict[str, Callable[[Any, list[Any]], Any]] = {
    "sm.getCwd": lambda ctx, a: ctx.session_manager.cwd,
    "sm.getSessionDir": lambda ctx, a: ctx.session_manager.session_dir,
    "sm.getSessionId": lambda ctx, a: ctx.session_manager.session_id,
    "sm.getSessionFile": lambda ctx, a: ctx.session_manager.session_file,
    "sm.getSessionName": lambda ctx, a: ctx.session_manager.session_name,
    "sm.getHeader": lambda ctx, a: ctx.session_manager.header,
    "sm.getEntries": lambda ctx, a: ctx.session_manager.get_entries(),
    "sm.getEntry": lambda ctx, a: ctx.session_manager.get_entry(_arg(a)),
    "sm.getBranch": lambda ctx, a: ctx.session_manager.get_branch(_arg(a)),
    "sm.getTree": lambda ctx, a: ctx.session_manager.get_tree(),
    "sm.getLeafId": lambda ctx, a: ctx.session_manager.leaf_id,
    "sm.getLeafEntry": lambda ctx, a: ctx.session_manager.get_leaf_entry(),
    "sm.getLabel": lambda ctx, a: ctx.session_manager.get_label(_arg(a)),
    "sm.buildContextEntries": lambda ctx, a: ctx.session_manager.build_context_entries(),
    "models.find": lambda ctx, a: ctx.model_registry.find(_arg(a), _arg(a, 1)),
    "models.getAll": lambda ctx, a: ctx.model_registry.get_all(),
    "models.getAvailable": lambda ctx, a: ctx.model_registry.get_available(),
    "models.hasConfiguredAuth": lambda ctx, a: ctx.model_registry.has_configured_auth(_arg(a)),
    "models.isUsingOAuth": lambda ctx, a: ctx.model_registry.is_using_oauth(_arg(a)),
}


Emit = Callable[[JsonObject], None]


def _model(ctx: Any, value: object) -> object:
    """The session's model a TypeScript ``Model`` names (found again by provider and id); one the
    session does not know is used as given, as pi does, if its provider is known."""
    if not isinstance(value, dict):
        raise RuntimeError("a model is required")
    registry = ctx.model_registry
    found = registry.find(value.get("provider"), value.get("id"))
    if found is not None:
        return found
    if not any(m["provider"] == value.get("provider") for m in registry.get_all()):
        raise RuntimeError(f"Unknown provider: {value.get('provider')}")
    return value


def _model_options(args: list[object], signal: object) -> JsonObject:
    """pi's ``SimpleStreamOptions`` that carry over: ``reasoning``, ``maxTokens``, ``temperature``."""
    options = _options(args, 2)
    return {"reasoning": options.get("reasoning"), "max_tokens": options.get("maxTokens"),
            "temperature": options.get("temperature"), "signal": signal}


async def _complete(ctx: Any, args: list[object], signal: object, emit: Emit) -> object:
    return await ctx.model_registry.complete(_model(ctx, _arg(args)), _arg(args, 1), **_model_options(args, signal))


async def _stream_simple(ctx: Any, args: list[object], signal: object, emit: Emit) -> object:
    """Each event of the request to ``emit`` (the sidecar mirrors the message), then the final message."""
    from pi_coding_agent.coding.extensions.typescript.streams import MessageMirror

    stream = ctx.model_registry.stream_simple(_model(ctx, _arg(args)), _arg(args, 1), **_model_options(args, signal))
    mirror = MessageMirror()
    async for event in stream:
        emit(mirror.record(stream.partial, event))
    return await stream.result()


# model calls: they take the call's signal (``options.signal``) and may send events before their answer
_MODELS: dict[str, Callable[[Any, list[Any], object, Emit], Awaitable[object]]] = {
    "models.complete": _complete,
    "models.streamSimple": _stream_simple,
}


def run_sync_call(method: str, args: list[object], ctx: object) -> object:
    """The answer to one of pi's synchronous reads, made with the context of the running handler."""
    if method not in _SYNC:
        raise RuntimeError(f"{method} is not supported by the Python pi's TypeScript bridge")
    if ctx is None:
        raise RuntimeError(f"{method.replace('sm.', 'ctx.sessionManager.').replace('models.', 'ctx.modelRegistry.')}"
                           " is available only while its handler runs")
    return _SYNC[method](ctx, args)


async def run_call(method: str, args: list[object], ctx: object, pi: object, signal: object = None,
                   emit: Emit | None = None) -> object:
    """The result of one call (awaited when the Python side is async); ``emit`` sends the call's events."""
    result: object | Awaitable[object]
    if method in _MODELS:
        if ctx is None:
            raise RuntimeError(f"ctx.modelRegistry.{method.removeprefix('models.')} is available only while its handler runs")
        result = _MODELS[method](ctx, args, signal, emit or (lambda _: None))
    elif method in _DIALOGS:
        result = _DIALOGS[method](_ui(ctx), args, signal)
    elif method in _UI:
        result = _UI[method](_ui(ctx), args)
    elif method in _PI:
        if pi is None:
            raise RuntimeError(f"{method} is not available")
        result = _PI[method](pi, args)
    elif method in _CTX:
        if ctx is None:
            raise RuntimeError(f"{method} is available only inside a handler or a command")
        result = _CTX[method](ctx, args)
    else:
        raise RuntimeError(f"{method} is not supported by the Python pi's TypeScript bridge")
    value = await maybe_await(result)
    return value if isinstance(value, (str, int, float, bool, list, dict, type(None))) else None
