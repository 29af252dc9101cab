"""``create_agent_session``: every start-up option as a keyword, and the ``Session`` it starts.

Everything the command line can set is a keyword here, with no CLI parsing in between: the keywords
become the same start-up options (``options.CliArgs``) and go through the same assembly
(``bootstrap.create_session``) as ``pi --mode rpc``, so an SDK session behaves exactly like an RPC
one. What only a host can give (Python tools, inline extensions, a permission callback, MCP servers
as data, a faux script) is added on top. Sessions share nothing, so several run in one event loop.
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable, Coroutine, Generator, Mapping, Sequence
from pathlib import Path
from typing import Any, cast

from pi_coding_agent.agent.tool import AgentTool
from pi_coding_agent.ai.types import JsonObject
from pi_coding_agent.coding.errors import ConfigurationError
from pi_coding_agent.coding.extensions.loader import ExtensionSource, in_process
from pi_coding_agent.coding.options import CliArgs
from pi_coding_agent.coding.sdk.errors import in_sdk_terms
from pi_coding_agent.coding.sdk.permissions import CanUseTool
from pi_coding_agent.coding.sdk.session import Session
from pi_coding_agent.coding.ui import ExtensionUI

PathLike = str | os.PathLike[str]
ExtensionSetup = Callable[[object], object]  # ``setup(pi)``, sync or async, as in an extension file


class SessionStart(Awaitable[Session]):
    """What ``create_agent_session`` returns: await it for the session, or ``async with`` it directly."""

    def __init__(self, starting: Coroutine[object, object, Session]) -> None:
        self._starting = starting
        self._session: Session | None = None

    def __await__(self) -> Generator[object, None, Session]:
        return self._starting.__await__()

    async def __aenter__(self) -> Session:
        self._session = await self._starting
        return self._session

    async def __aexit__(self, *exc: object) -> None:
        if self._session is not None:
            await self._session.shutdown()


def create_agent_session(
    *,
    cwd: PathLike | None = None,
    agent_dir: PathLike | None = None,
    model: str | None = None,
    provider: str | None = None,
    api_key: str | None = None,
    thinking_level: str | None = None,
    scoped_models: Sequence[str] | None = None,
    session_file: PathLike | None = None,
    in_memory: bool = False,
    continue_recent: bool = False,
    session_dir: PathLike | None = None,
    name: str | None = None,
    tools: Sequence[str] | None = None,
    custom_tools: Sequence[AgentTool] = (),
    extensions: Sequence[PathLike | ExtensionSetup] = (),
    discover_extensions: bool = True,
    settings: Mapping[str, object] | None = None,
    load_resources: bool = True,
    system_prompt: str | None = None,
    append_system_prompt: Sequence[str] = (),
    trust_project: bool | None = None,
    ui: ExtensionUI | None = None,
    can_use_tool: CanUseTool | None = None,
    mcp_servers: Mapping[str, Mapping[str, object]] | None = None,
    mcp_config_files: bool = True,
    faux_script: Sequence[Mapping[str, object]] | None = None,
) -> SessionStart:
    """Start a session in this process: ``session = await create_agent_session(...)`` or
    ``async with create_agent_session(...) as session:``. The keywords are described in docs/sdk.md."""
    args = CliArgs(
        provider=provider, model=model, api_key=api_key, thinking=thinking_level,
        models=list(scoped_models) if scoped_models is not None else None,
        session=None if session_file is None else os.fspath(session_file), no_session=in_memory,
        continue_session=continue_recent, session_dir=None if session_dir is None else os.fspath(session_dir),
        name=name, tools=list(tools) if tools else None, no_tools=tools is not None and not tools,
        extensions=[*(os.fspath(e) for e in extensions if not callable(e)), *(["builtin:mcp"] if mcp_servers else []),
                    *(["builtin:codemode"] if tools and "codemode" in tools else [])],  # named: loaded, as pi's factory
        no_extensions=not (discover_extensions and load_resources),
        no_context_files=not load_resources, no_skills=not load_resources, no_prompt_templates=not load_resources,
        system_prompt=system_prompt, append_system_prompt=list(append_system_prompt), approve=trust_project,
        no_mcp_files=not mcp_config_files,
    )
    inline: list[ExtensionSource] = [in_process(e) for e in extensions if callable(e)]
    return SessionStart(_start(
        args, ui, cwd=None if cwd is None else Path(cwd), agent_dir=None if agent_dir is None else Path(agent_dir),
        settings=dict(settings or {}), tools=custom_tools, extensions=inline, can_use_tool=can_use_tool,
        mcp_servers={k: dict(v) for k, v in (mcp_servers or {}).items()}, faux_script=faux_script))


async def _start(args: CliArgs, ui: ExtensionUI | None, *, cwd: Path | None, agent_dir: Path | None,
                 settings: JsonObject, tools: Sequence[AgentTool], extensions: list[ExtensionSource],
                 can_use_tool: CanUseTool | None, mcp_servers: dict[str, JsonObject],
                 faux_script: Sequence[Mapping[str, object]] | None) -> Session:
    from pi_coding_agent.coding.bootstrap import create_session

    with in_sdk_terms():
        session = cast(Session, await create_session(
            args, "sdk", ui, cwd=cwd, agent_dir=agent_dir, settings_overrides=settings, tools=tools,
            extensions=extensions, session_class=Session))
    session.configure(can_use_tool, _script(faux_script))
    if mcp_servers:
        await _add_mcp_servers(session, mcp_servers)
    return session


def _script(responses: Sequence[Mapping[str, object]] | None) -> Any:
    if responses is None:
        return None
    from pi_coding_agent.ai.apis.faux import Script

    return Script([dict(r) for r in responses])


async def _add_mcp_servers(session: Session, servers: dict[str, JsonObject]) -> None:
    """``mcp_servers``: added to (or, with ``mcp_config_files=False``, instead of) the mcp.json servers."""
    from pi_coding_agent.coding.mcp.session import use_client_servers

    refused = await use_client_servers(session.rt, servers)
    if refused:
        await session.shutdown()
        raise ConfigurationError("; ".join(f"mcp_servers[{name!r}]: {why}" for name, why in sorted(refused.items())))
