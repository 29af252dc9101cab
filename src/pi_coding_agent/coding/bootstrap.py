"""Building a session from the command line: settings, trust, models, the session file, resources.

``create_session`` is what every mode calls first. It assembles a ``SessionRuntime`` and the
``AgentSession`` over it, following pi's start-up order (settings read as trusted for the session
directory, then the trust decision, then the model choice and the session file).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pi_coding_agent.ai.keys import AuthStorage
from pi_coding_agent.ai.models import ModelRegistry, resolve_model_pattern, resolve_model_scope
from pi_coding_agent.ai.types import Model
from pi_coding_agent.coding import paths
from pi_coding_agent.coding.agent_session import AgentSession, SessionError
from pi_coding_agent.coding.compaction.controller import CompactionController
from pi_coding_agent.coding.resources.context_files import load_context_files
from pi_coding_agent.coding.resources.prompt_templates import load_prompt_templates
from pi_coding_agent.coding.resources.settings import Settings
from pi_coding_agent.coding.resources.skills import load_skills
from pi_coding_agent.coding.resources.system_prompt import resolve_append_prompts, resolve_custom_prompt
from pi_coding_agent.coding.resources.trust import is_project_trusted
from pi_coding_agent.coding.runtime import LOGIN_HELP, Resources, SessionRuntime
from pi_coding_agent.coding.session import SessionManager, list_sessions
from pi_coding_agent.coding.tools import ToolEnv, create_builtin_tools

if TYPE_CHECKING:
    from pi_coding_agent.coding.cli import CliArgs


def _open_session(args: CliArgs, settings: Settings, agent_dir: Path, cwd: Path) -> SessionManager:
    session_dir = paths.resolve_session_dir(args.session_dir, settings.session_dir, agent_dir, cwd)
    if args.no_session:
        return SessionManager.create(cwd, session_dir, persist=False)
    if args.fork:
        return SessionManager.fork_from(_session_path(args.fork, cwd, session_dir), cwd, session_dir,
                                        session_id=args.session_id)
    if args.session:
        return SessionManager.open(_session_path(args.session, cwd, session_dir), cwd)
    if args.continue_session:
        recent = SessionManager.continue_recent(cwd, session_dir)
        if recent is not None:
            return recent
    if args.session_id:
        existing = _find_session_by_id(args.session_id, session_dir, exact=True)
        if existing is not None:
            return SessionManager.open(existing, cwd)
        print(f"Warning: No project session found with id '{args.session_id}'; "
              "creating a new session with that id.", file=sys.stderr)
    return SessionManager.create(cwd, session_dir, session_id=args.session_id)


def _session_path(arg: str, cwd: Path, session_dir: Path) -> Path:
    """``--session`` takes a path (it has a separator or ends in .jsonl) or a session id or id prefix."""
    if "/" in arg or "\\" in arg or arg.endswith(".jsonl"):
        return (cwd / Path(arg).expanduser()).resolve()
    found = _find_session_by_id(arg, session_dir, exact=True) or _find_session_by_id(arg, session_dir, exact=False)
    if found is None:
        raise SessionError(f"No session found matching '{arg}'")
    return found


def _find_session_by_id(session_id: str, session_dir: Path, exact: bool) -> Path | None:
    for info in list_sessions(session_dir):
        if info["id"] == session_id or (not exact and info["id"].startswith(session_id)):
            return Path(info["path"])
    return None


def _load_resources(args: CliArgs, settings: Settings, agent_dir: Path, cwd: Path, trusted: bool) -> Resources:
    skills, warnings = load_skills(agent_dir, cwd, trusted, list(args.skills), settings.skills,
                                   include_defaults=not args.no_skills)
    for warning in [*warnings, *settings.warnings]:
        print(warning, file=sys.stderr)
    return Resources(
        context_files=[] if args.no_context_files else load_context_files(agent_dir, cwd),
        skills=skills,
        templates=load_prompt_templates(agent_dir, cwd, trusted, list(args.prompt_templates), settings.prompts,
                                        include_defaults=not args.no_prompt_templates),
        custom_prompt=resolve_custom_prompt(args.system_prompt, agent_dir, cwd, trusted),
        append_prompts=resolve_append_prompts(list(args.append_system_prompt), agent_dir, cwd, trusted),
    )


def _cli_model(args: CliArgs, registry: ModelRegistry) -> tuple[Model, str | None] | None:
    """The ``--model`` pattern resolved once (its warnings printed once), with its ``:level`` suffix."""
    if not args.model:
        return None
    model, level, warnings = resolve_model_pattern(registry, args.model, args.provider, cli_thinking=args.thinking,
                                                   inline_api_key=args.api_key is not None)
    for warning in warnings:
        print(f"Warning: {warning}", file=sys.stderr)
    return model, level


def _scoped_models(args: CliArgs, registry: ModelRegistry, settings: Settings) -> list[tuple[Model, str | None]]:
    """``--models`` (or the enabledModels setting): the models cycle_model walks through."""
    patterns = args.models or settings.enabled_models or []
    if not patterns:
        return []
    scoped, warnings = resolve_model_scope(registry, list(patterns))
    for warning in warnings:
        print(f"Warning: {warning}", file=sys.stderr)
    return scoped


async def create_session(args: CliArgs, mode: str, ui: Any = None) -> AgentSession:
    """Build the whole runtime for ``mode`` ("rpc", "json", "print") from parsed CLI arguments."""
    cwd = Path.cwd().resolve()
    agent_dir = paths.agent_dir()
    # pi reads start-up settings (sessionDir, warnings) as if trusted, before the trust decision
    startup = Settings.load(agent_dir, cwd, project_trusted=True)
    trusted = is_project_trusted(agent_dir, cwd, args.approve, startup.default_project_trust)
    settings = startup if trusted else Settings.load(agent_dir, cwd, project_trusted=False)
    auth = AuthStorage(agent_dir)
    registry = ModelRegistry(agent_dir, auth)
    for error in registry.errors:
        print(error, file=sys.stderr)
    sm = _open_session(args, startup, agent_dir, cwd)
    scoped = _scoped_models(args, registry, settings)
    runtime_box: list[SessionRuntime] = []
    env = ToolEnv(cwd=cwd, shell_path=settings.shell_path, shell_command_prefix=settings.shell_command_prefix,
                  session_env=lambda: runtime_box[0].session_env(),
                  model_accepts_images=lambda: "image" in runtime_box[0].agent.model.get("input", []),
                  image_policy=lambda: runtime_box[0].image_policy(),
                  agent_dir=agent_dir)
    runtime = SessionRuntime(
        args=args, cwd=cwd, agent_dir=agent_dir, mode=mode, ui=ui, settings=settings, auth=auth,
        registry=registry, session_manager=sm, resources=_load_resources(args, settings, agent_dir, cwd, trusted),
        all_tools=create_builtin_tools(env), scoped=scoped, cli_model=_cli_model(args, registry),
    )
    runtime_box.append(runtime)
    if args.name and not sm.entries:
        sm.append_session_info(" ".join(args.name.split("\n")).strip())
    runtime.load_transcript(sm)
    if not registry.available_models():
        print(f"Warning: No models available. {LOGIN_HELP}", file=sys.stderr)
    session = AgentSession(runtime)
    runtime.compaction = CompactionController(session, runtime)
    runtime.agent.hooks.prepare_next_turn = runtime.compaction.check_between_turns
    from pi_coding_agent.coding.extensions.loader import attach_extensions
    from pi_coding_agent.coding.mcp import start_mcp

    runtime.mcp = start_mcp(runtime, trusted)  # before extensions, which may register MCP servers
    runtime.extensions = await attach_extensions(runtime, session, trusted)
    return session
