"""The in-process Python API: ``create_agent_session`` and the session it returns (``docs/sdk.md``).

Everything the command line can set is a keyword here, with no CLI parsing in between: the keywords
become the same start-up options (``options.CliArgs``) and go through the same assembly
(``bootstrap.create_session``) as ``pi --mode rpc``, so an SDK session behaves exactly like an RPC
one. The returned ``AgentSession`` is what the modes drive: ``prompt``, ``steer``, ``follow_up``,
``abort``, ``compact``, ``fork``, ``clone``, ``switch_session``, ``get_tree``, ``get_session_stats``,
``export_html``..., with ``subscribe(listener)`` and ``events()`` for the event stream.

Sessions share nothing: each gets its own cwd, agent directory, settings, key store, registry,
tools and extensions, so several can run concurrently in one event loop.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pi_coding_agent.agent.awaitables import maybe_await
from pi_coding_agent.agent.tool import AgentTool, ToolResult, UpdateCallback, text_result
from pi_coding_agent.ai.abort import AbortSignal
from pi_coding_agent.coding.agent_session import AgentSession
from pi_coding_agent.coding.bootstrap import create_session
from pi_coding_agent.coding.extensions.loader import ExtensionSource, in_process
from pi_coding_agent.coding.options import CliArgs
from pi_coding_agent.coding.ui import ExtensionUI

PathLike = str | os.PathLike[str]
ExtensionSetup = Callable[[Any], Any]  # ``setup(pi)``, sync or async, as in an extension file



@dataclass
class FunctionTool(AgentTool):
    """An ``AgentTool`` around one function ``fn(params) -> str | ToolResult`` (plain or async).

    A host's own tool in a few lines; anything richer (progress updates, abort handling) implements
    the ``AgentTool`` protocol of ``agent/tool.py`` directly.
    """

    name: str
    description: str
    fn: Callable[[dict[str, Any]], Any]
    parameters: dict[str, Any] = field(default_factory=lambda: {"type": "object", "properties": {}})
    label: str = ""
    execution_mode: Literal["parallel", "sequential"] = "parallel"
    constrained_sampling: dict[str, Any] | Literal[False] | None = None  # a strict schema or a grammar

    async def execute(self, tool_call_id: str, params: dict[str, Any], signal: AbortSignal,
                      on_update: UpdateCallback) -> ToolResult:
        result = await maybe_await(self.fn(params))
        return result if isinstance(result, ToolResult) else text_result(str(result))


async def create_agent_session(
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
    settings: Mapping[str, Any] | None = None,
    load_resources: bool = True,
    system_prompt: str | None = None,
    append_system_prompt: Sequence[str] = (),
    trust_project: bool | None = None,
    ui: ExtensionUI | None = None,
) -> AgentSession:
    """Start a session in this process.

    ``model`` is a pattern as ``--model`` takes it (``provider/id``, ``id:high``, a fuzzy name);
    ``tools`` the active built-in tools (``--tools``; ``[]`` for none), ``custom_tools`` extra
    ``AgentTool`` objects, active at once; ``extensions`` files or ``setup(pi)`` functions;
    ``settings`` overrides on top of both settings files (never written back); ``load_resources``
    off skips context files, skills, prompt templates and discovered extensions. ``in_memory``
    keeps no session file; ``session_file`` opens (or continues) one. Call ``await session.shutdown()``
    when done.
    """
    args = CliArgs(
        provider=provider, model=model, api_key=api_key, thinking=thinking_level,
        models=list(scoped_models) if scoped_models is not None else None,
        session=None if session_file is None else os.fspath(session_file), no_session=in_memory,
        continue_session=continue_recent, session_dir=None if session_dir is None else os.fspath(session_dir),
        name=name, tools=list(tools) if tools else None, no_tools=tools is not None and not tools,
        extensions=[os.fspath(e) for e in extensions if not callable(e)],
        no_extensions=not (discover_extensions and load_resources),
        no_context_files=not load_resources, no_skills=not load_resources, no_prompt_templates=not load_resources,
        system_prompt=system_prompt, append_system_prompt=list(append_system_prompt), approve=trust_project,
    )
    inline: list[ExtensionSource] = [in_process(e) for e in extensions if callable(e)]
    return await create_session(
        args, "sdk", ui, cwd=None if cwd is None else Path(cwd), agent_dir=None if agent_dir is None else Path(agent_dir),
        settings_overrides=dict(settings or {}), tools=custom_tools, extensions=inline,
    )
