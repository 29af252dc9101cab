"""The built-in slash commands of the terminal UI and the application key actions that open them.

A command the table does not know (an extension command, a prompt template, ``/skill:name``,
``/mcp``, ``/llama``) goes to ``AgentSession.prompt`` as typed, which runs or expands it as in every
other mode.
"""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pi_coding_agent.coding.errors import SessionError
from pi_coding_agent.coding.modes.interactive import extension_hooks, project
from pi_coding_agent.coding.modes.interactive.blocks import message_text
from pi_coding_agent.coding.modes.interactive.command_host import Handler, PiApp, pick, replaced
from pi_coding_agent.coding.modes.interactive.dialogs import InputScreen, ask, choose
from pi_coding_agent.coding.modes.interactive.picker import ROWS, Picker

if TYPE_CHECKING:
    from pi_coding_agent.coding.agent_session import AgentSession


BUILTIN: dict[str, str] = {  # in pi's order
    "settings": "Open settings",
    "model": "Select a model",
    "thinking": "Set the thinking level",
    "scoped-models": "Configure the models Ctrl+P cycles through",
    "login": "Add provider authentication",
    "logout": "Remove provider authentication",
    "new": "Start a new session",
    "resume": "Resume another session",
    "name": "Set the session display name",
    "session": "Show session information and statistics",
    "tree": "Navigate the session tree",
    "fork": "New session from an earlier user message",
    "clone": "Duplicate the session at its current position",
    "compact": "Compact the context (optional instructions)",
    "import": "Import a JSONL session, keeping its id and working directory",
    "copy": "Copy the last assistant message",
    "export": "Export the session as HTML or JSONL",
    "trust": "Save a project trust decision for future pi processes",
    "reload": "Reload keybindings",
    "hotkeys": "Show keyboard shortcuts",
    "quit": "Quit pi",
}
# sessions the /resume picker reads before it opens (what its list shows), then per page once it shows;
# the first of those pages waits a little longer, for the first frame and the first keys typed
RESUME_FIRST_PAGE = ROWS
RESUME_PAGE = 40
RESUME_FIRST_PAGE_PAUSE_S = 0.2
RESUME_PAGE_PAUSE_S = 0.02
NOT_HERE = ("share", "bug", "changelog", "debug")


def command_list(session: AgentSession) -> list[tuple[str, str]]:
    """Built-in commands, then the session's (``/mcp``, ``/llama``, extensions, templates, skills)."""
    listed = list(BUILTIN.items())
    seen = set(BUILTIN)
    for command in session.get_commands():
        name = str(command.get("name", ""))
        if name and name not in seen:
            seen.add(name)
            listed.append((name, str(command.get("description") or command.get("source") or "")))
    return listed


async def run(app: PiApp, line: str) -> bool:
    """Run ``line`` if it is a built-in command; False to send it to the session instead."""
    name, _, arg = line[1:].partition(" ")
    handler = HANDLERS.get(name)
    if handler is not None:
        try:
            await handler(app, arg.strip())
        except SessionError as err:
            app.show_notice(str(err), "error")
        return True
    if name in NOT_HERE:
        app.show_notice(f"/{name} is not available in this front end yet (see docs/interactive.md)", "warning")
        return True
    return False


async def run_action(app: PiApp, action: str) -> None:
    """Key actions other than the editor's and quit/abort."""
    if action == "app.model.select":
        await _model(app, "")
    elif action == "app.model.cycleForward":
        await app.session.cycle_model()
        app.refresh_footer()
    elif action == "app.thinking.cycle":
        app.session.cycle_thinking_level()
        app.refresh_footer()
    elif action == "app.thinking.toggle":
        app.transcript.set_hide_thinking(not app.transcript.hide_thinking)
    elif action == "app.tools.expand":
        app.transcript.set_tools_expanded(not app.transcript.tools_expanded)
    elif action == "app.message.copy":
        await _copy(app, "")
    elif action == "app.message.dequeue":
        app.restore_queue()
    elif action == "app.editor.external":
        from pi_coding_agent.coding.modes.interactive.external_editor import open_external_editor

        await open_external_editor(app)
    elif action == "app.clipboard.pasteImage":
        from pi_coding_agent.coding.modes.interactive.clipboard import paste

        await paste(app)
    elif action == "tui.altScreen.pageUp":
        app.transcript.page_up()
    elif action == "tui.altScreen.pageDown":
        app.transcript.page_down()
    elif action.startswith(extension_hooks.PREFIX):
        await extension_hooks.run_shortcut(app, action)
    elif action.startswith("app.session."):
        await run(app, "/" + action.rsplit(".", 1)[1])


# --------------------------------------------------------------------------- models and thinking


async def _model(app: PiApp, arg: str) -> None:
    models = app.session.get_available_models()
    current = app.session.agent.model
    options = [(f"{m['provider']}/{m['id']}", f"{m['provider']}/{m['id']}"
                + ("  ✓" if (m["provider"], m["id"]) == (current["provider"], current["id"]) else ""))
               for m in models]
    if arg:
        exact = [key for key, _ in options if key == arg or key.split("/", 1)[1] == arg]
        choice = exact[0] if len(exact) == 1 else await choose(app, Picker("Select model", options, query=arg))
    else:
        choice = await pick(app, "Select model", options)
    if choice:
        provider, model_id = choice.split("/", 1)
        await app.session.set_model(provider, model_id)
        app.show_notice(f"Model: {choice}")
        app.refresh_footer()


async def _thinking(app: PiApp, arg: str) -> None:
    levels = app.session.get_available_thinking_levels()
    level = arg or await pick(app, "Thinking level", [(lvl, lvl) for lvl in levels])
    if level:
        app.session.set_thinking_level(level)
        app.show_notice(f"Thinking level: {app.session.agent.thinking_level}")
        app.refresh_footer()


async def _login(app: PiApp, arg: str) -> None:
    from pi_coding_agent.coding.commands import login as login_ui

    await login_ui.run(app.session.rt, f"/login {arg}".strip(), app.session.models.set_model)
    app.refresh_footer()


async def _logout(app: PiApp, arg: str) -> None:
    auth = app.session.rt.auth
    stored = auth.stored_providers()
    provider = arg or await pick(app, "Select provider to logout:", [(p, p) for p in stored])
    if provider:
        removed = await auth.remove_credential(provider)
        app.show_notice(f"Logged out of {provider}" if removed else f"No stored credential for {provider}")


# --------------------------------------------------------------------------- sessions


async def _new(app: PiApp, arg: str) -> None:
    await replaced(app, await app.session.new_session())


async def _resume(app: PiApp, arg: str) -> None:
    path = await _pick_session(app)
    if not path:
        return
    choice = await project.open_asking_cwd(app, Path(path), Path(path))
    if choice is None:
        app.show_notice("Resume cancelled")
    elif choice == "continue":
        app.show_notice(f"Resumed session in {app.session.rt.cwd}")
    elif not choice:
        app.show_notice("Resumed session")


async def resume_at_startup(app: PiApp) -> bool:
    """``pi -r``: the picker, then the session; False (nothing picked, or the cwd question
    cancelled) ends pi, as in pi."""
    path = await _pick_session(app)
    if path is None:
        app.exit(0, message="No session selected")
        return False
    return path == "" or await project.open_asking_cwd(app, Path(path), Path(path)) is not None


async def _pick_session(app: PiApp) -> str | None:
    """The picker opens once the newest ``RESUME_FIRST_PAGE`` sessions are read; older ones join it page
    by page while it is open (hundreds of sessions would otherwise hold it up). "": no other sessions
    (a notice says so); None: cancelled."""
    from pi_coding_agent.coding.session.listing import files_newest_first

    session_dir = app.session.sm.session_dir
    current = str(app.session.sm.session_file)
    files = [] if session_dir is None else [p for p in files_newest_first(session_dir) if p != current]
    first = _resume_options(files[:RESUME_FIRST_PAGE])
    if not first:
        app.show_notice("No other sessions in this project")
        return ""
    picker = Picker("Resume session", first)
    loader = asyncio.create_task(_load_older_sessions(picker, files[RESUME_FIRST_PAGE:]))
    try:
        return await choose(app, picker)
    finally:
        loader.cancel()


async def _load_older_sessions(picker: Picker, files: list[str]) -> None:
    """Pages after the picker's first frame, with time for keys and frames between them."""
    for start in range(0, len(files), RESUME_PAGE):
        await asyncio.sleep(RESUME_PAGE_PAUSE_S if start else RESUME_FIRST_PAGE_PAUSE_S)
        picker.extend(_resume_options(files[start:start + RESUME_PAGE]))


def _resume_options(files: list[str]) -> list[tuple[str, str]]:
    from pi_coding_agent.coding.session.listing import session_info

    infos = [info for path in files if (info := session_info(Path(path))) is not None]
    return [(i["path"], f"{i['modified'][:16].replace('T', ' ')}  {i.get('name') or i['firstMessage'][:70]}"
             f"  ({i['messageCount']} msgs, {i['cwd']})") for i in infos]


async def _name(app: PiApp, arg: str) -> None:
    if not arg:
        app.show_notice(f"Session name: {app.session.sm.session_name or '(none)'}")
        return
    await app.session.set_session_name(arg)
    app.refresh_footer()


async def _session(app: PiApp, arg: str) -> None:
    stats = app.session.get_session_stats()
    tokens = stats.get("tokens") or {}
    lines = [f"File: {stats.get('sessionFile', '(not saved)')}", f"ID: {stats.get('sessionId')}",
             f"Messages: {stats.get('userMessages', 0)} user, {stats.get('assistantMessages', 0)} assistant, "
             f"{stats.get('toolCalls', 0)} tool calls",
             f"Tokens: {tokens.get('input', 0)} in, {tokens.get('output', 0)} out, "
             f"{tokens.get('cacheRead', 0)} cache read, {tokens.get('cacheWrite', 0)} cache write",
             f"Cost: ${float(stats.get('cost') or 0):.4f}"]
    app.show_notice("\n".join(lines))


def _tree_rows(nodes: list[dict[str, Any]], depth: int, leaf: str | None, rows: list[tuple[str, str]]) -> None:
    """Depth-first rows (entry id, indented label); single-child chains stay at one depth, as branches indent."""
    stack = [(node, depth) for node in reversed(nodes)]
    while stack:
        node, level = stack.pop()
        entry = node["entry"]
        text = _entry_label(entry)
        if text is not None:
            mark = "● " if entry.get("id") == leaf else ""
            label = f" [{node['label']}]" if node.get("label") else ""
            rows.append((str(entry["id"]), f"{'  ' * level}{mark}{text}{label}"))
        children = node.get("children") or []
        step = 1 if len(children) > 1 else 0
        stack.extend((child, level + step) for child in reversed(children))


def _entry_label(entry: dict[str, Any]) -> str | None:
    kind = entry.get("type")
    if kind == "message":
        message = entry.get("message") or {}
        role = message.get("role")
        if role not in ("user", "assistant"):
            return None
        text = " ".join(message_text(message).split())[:90]
        return f"{role}: {text or '(tool calls)'}"
    if kind in ("compaction", "branch_summary"):
        return f"[{kind}]"
    return None


async def _tree(app: PiApp, arg: str) -> None:
    rows: list[tuple[str, str]] = []
    tree = app.session.get_tree()
    _tree_rows(tree["tree"], 0, tree["leafId"], rows)
    if not rows:
        app.show_notice("The session has no messages yet")
        return
    target = await pick(app, "Session tree (● current position)", rows)
    if target:
        result = await app.session.navigate_tree(target)
        await replaced(app, result)
        if result.get("editorText"):
            app.set_editor_text(str(result["editorText"]))


async def _fork(app: PiApp, arg: str) -> None:
    messages = app.session.get_fork_messages()
    if not messages:
        app.show_notice("No user messages to fork from")
        return
    options = [(m["entryId"], " ".join(m["text"].split())[:100]) for m in reversed(messages)]
    entry_id = await pick(app, "Fork from message", options)
    if entry_id:
        result = await app.session.fork(entry_id)
        await replaced(app, result)
        if not result.get("cancelled") and result.get("text"):
            app.set_editor_text(str(result["text"]))


async def _clone(app: PiApp, arg: str) -> None:
    await replaced(app, await app.session.clone())


async def _compact(app: PiApp, arg: str) -> None:
    await app.session.compact(arg or None)
    await replaced(app)


async def _export(app: PiApp, arg: str) -> None:
    if arg.endswith(".jsonl"):
        source = app.session.sm.session_file
        if source is None:
            raise SessionError("The session is not saved to a file (--no-session)")
        shutil.copyfile(source, Path(arg).expanduser())
        app.show_notice(f"Session exported to {arg}")
        return
    path = await app.session.export_html(arg or None)
    app.show_notice(f"Session exported to {path}")


async def _copy(app: PiApp, arg: str) -> None:
    text = app.session.get_last_assistant_text()
    if not text:
        app.show_notice("Error: No agent messages to copy yet.", "error")
        return
    from pi_coding_agent.coding.modes.interactive.clipboard import copy

    await copy(app, text)


async def _reload(app: PiApp, arg: str) -> None:
    from pi_coding_agent.coding.modes.interactive.keys import KeyMap

    app.keymap = app.editor.keymap = KeyMap.load(app.session.rt.agent_dir)
    app.show_notice("Keybindings reloaded (restart pi to reload extensions and resources)")


async def _hotkeys(app: PiApp, arg: str) -> None:
    rows = app.keymap.hotkeys() + extension_hooks.shortcut_hotkeys(app)
    width = max(len(keys) for keys, _ in rows)
    app.show_notice("\n".join(f"{keys.ljust(width)}  {text}" for keys, text in rows))


async def _quit(app: PiApp, arg: str) -> None:
    app.exit(0)


async def _rename(app: PiApp, arg: str) -> None:
    name = await ask(app, InputScreen("Session name", value=app.session.sm.session_name or ""), None)
    if name:
        await _name(app, name)


async def _settings(app: PiApp, arg: str) -> None:
    from pi_coding_agent.coding.modes.interactive.settings_screen import open_settings

    await open_settings(app, arg)


async def _scoped_models(app: PiApp, arg: str) -> None:
    from pi_coding_agent.coding.modes.interactive.scoped_models import open_scoped_models

    await open_scoped_models(app, arg)


HANDLERS: dict[str, Handler] = {
    "model": _model, "thinking": _thinking, "login": _login, "logout": _logout, "new": _new, "resume": _resume,
    "name": _name, "session": _session, "tree": _tree, "fork": _fork, "clone": _clone, "compact": _compact,
    "export": _export, "copy": _copy, "reload": _reload, "hotkeys": _hotkeys, "quit": _quit, "exit": _quit,
    "rename": _rename, "import": project.import_session, "settings": _settings,
    "scoped-models": _scoped_models, "trust": project.trust,
}
