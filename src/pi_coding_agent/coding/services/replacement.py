"""Replacing a session's store: ``new_session``, ``switch_session`` (resume), ``fork`` and ``clone``.

A replacement lets extensions veto it, tears the current run down, opens the new store, tells the
extensions the old session ended and reloads the transcript. A store recorded in another directory
moves the session there: that project's trust, settings, resources and tools (``runtime.move_to``),
its MCP servers and its extensions replace the old ones, as pi rebuilds its runtime in that
directory. In the same directory the MCP connections are kept, but what pi's rebuilt MCP support
does at a session start is done again (``coding/mcp``: ``finish_replacement``). The functions work
on the session through ``ReplacementHost``, so the session module keeps only the state a
replacement resets (``rebind``).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from pi_coding_agent.ai.session_resources import end_session
from pi_coding_agent.ai.types import JsonObject
from pi_coding_agent.coding.errors import SessionError
from pi_coding_agent.coding.extensions.host import ExtensionHost
from pi_coding_agent.coding.messages import message_text
from pi_coding_agent.coding.resources.trust import ask_trust_if_due

if TYPE_CHECKING:
    from pi_coding_agent.coding.extensions.runner import ExtensionRunner
    from pi_coding_agent.coding.runtime import SessionRuntime
    from pi_coding_agent.coding.session import SessionManager


class ReplacementHost(ExtensionHost, Protocol):
    """The session as a replacement sees it."""

    rt: SessionRuntime
    extensions: ExtensionRunner | None

    def abort_bash(self) -> None: ...

    def rebind(self, session_manager: SessionManager) -> None: ...

    def use_extensions(self, runner: ExtensionRunner | None) -> None: ...


async def fork_session(host: ReplacementHost, entry_id: str) -> JsonObject:
    """A new session holding the branch before the user message ``entry_id``; its text is returned."""
    entry = host.sm.get_entry(entry_id)
    message = entry.get("message") if entry and entry.get("type") == "message" else None
    if message is None or message.get("role") != "user":
        raise SessionError("Invalid entry ID for forking")
    result = await replace_session(host, "fork", entry_id=entry_id, position="before")
    if not result["cancelled"]:
        result = {"text": message_text(message), "cancelled": False}
    return result


async def clone_session(host: ReplacementHost) -> JsonObject:
    """A new session holding the current branch up to and including the leaf."""
    if host.sm.leaf_id is None:
        raise SessionError("Cannot clone session: no current entry selected")
    return await replace_session(host, "fork", entry_id=host.sm.leaf_id, position="at")


async def reload_session(host: ReplacementHost) -> None:
    """``ctx.reload()`` (pi's ``/reload``) in the same store: ``session_shutdown`` (reason ``reload``),
    settings and resources read again, mcp.json followed, every extension set up again, then
    ``session_start`` and ``resources_discover`` with reason ``reload``."""
    if host.is_streaming:
        raise SessionError("Wait for the current response to finish before reloading.")
    from pi_coding_agent.coding.mcp.session import begin_replacement, finish_replacement, refresh_mcp

    ext, rt = host.extensions, host.rt
    if ext is not None:
        await ext.session_shutdown("reload")
    rt.reload_project()
    await refresh_mcp(rt)
    begin_replacement(rt)
    if ext is not None:
        await ext.reload("reload", None)
    await finish_replacement(rt)


async def replace_session(
    host: ReplacementHost, reason: str, *, parent_session: str | None = None, target: Path | None = None,
    entry_id: str | None = None, position: str = "before", cwd_override: Path | None = None,
) -> JsonObject:
    """new / resume / fork: tear the run down, swap the store, restore model and transcript
    (``cwd_override``: see ``SessionRuntime.open_replacement``)."""
    ext = host.extensions
    if ext is not None and await ext.before_replace(reason, target, entry_id, position):
        return {"cancelled": True}
    if host.is_streaming:
        await host.abort()
    host.abort_bash()
    rt = host.rt
    old = host.sm
    sm = rt.open_replacement(reason, parent_session=parent_session, target=target, entry_id=entry_id,
                             position=position, cwd_override=cwd_override)
    end_session(old.session_id)  # pi frees the replaced session's provider state
    if ext is not None:
        await ext.session_shutdown(reason, None if sm.session_file is None else str(sm.session_file))
    cwd = rt.cwd
    rt.move_to(Path(sm.cwd), await _entered_trust(rt, ext, Path(sm.cwd)))
    host.rebind(sm)
    from pi_coding_agent.coding.mcp.session import begin_replacement, finish_replacement, refresh_mcp

    if rt.cwd != cwd:
        ext = await _enter_project(host, ext)
    else:
        await refresh_mcp(rt)  # mcp.json edited since: its servers follow
    begin_replacement(rt)  # the extensions' servers stay only if their next generation registers them
    if ext is not None:
        await ext.reload(reason, None if old.session_file is None else str(old.session_file))
    await finish_replacement(rt)  # as pi's MCP support at every session start: retry, report
    return {"cancelled": False}


async def _entered_trust(rt: SessionRuntime, ext: ExtensionRunner | None, cwd: Path) -> bool | None:
    """The trust of a folder this process has not decided yet, as pi resolves it when a replacement
    enters one: the extensions' ``project_trust`` first, then "Trust project folder?" when the front
    end can ask (or the usual rules' decision then). None: the usual rules (flag, trust.json,
    default) decide."""
    if rt.trust_decided(cwd):
        return None
    trusted = await ext.project_trust(cwd) if ext is not None else None
    if trusted is None:
        trusted = await ask_trust_if_due(rt.ask_trust, rt.agent_dir, cwd, rt.options.approve,
                                         rt.settings.default_project_trust)
    return trusted


async def _enter_project(host: ReplacementHost, ext: ExtensionRunner | None) -> ExtensionRunner | None:
    """The directory just entered brings its MCP servers (the old ones stopped first) and its
    extensions (loaded by the ``reload`` that follows; a runner is created when there was none)."""
    from pi_coding_agent.coding.extensions.runner import runner_for_directory
    from pi_coding_agent.coding.mcp.session import restart_mcp

    await restart_mcp(host.rt)  # before the extensions' setup, which may register servers again
    runner = runner_for_directory(host, host.rt, ext)
    if runner is not ext:
        host.use_extensions(runner)
    return runner
