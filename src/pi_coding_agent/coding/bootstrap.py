"""Building a session from start-up options: settings, trust, models, the session file, resources.

``create_session`` is what every mode and the SDK call first. It assembles a ``SessionRuntime`` and
the ``AgentSession`` that owns it, following pi's start-up order (settings read as trusted for the
session directory, then the trust decision, then the model choice and the session file). Everything
it needs comes in as arguments (options, cwd, agent directory, UI, extra tools and extensions), so
two sessions built in one process share nothing.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from pi_coding_agent.agent.tool import AgentTool
from pi_coding_agent.ai.auth.keys import AuthStorage
from pi_coding_agent.ai.models.catalog import ModelRegistry
from pi_coding_agent.ai.types import JsonObject, Model
from pi_coding_agent.coding import paths
from pi_coding_agent.coding.agent_session import AgentSession
from pi_coding_agent.coding.commands import llama as llama_command
from pi_coding_agent.coding.errors import MissingSessionCwdError, SessionError
from pi_coding_agent.coding.events import AgentEvent
from pi_coding_agent.coding.extensions.loader import ExtensionSource, discover
from pi_coding_agent.coding.options import CliArgs
from pi_coding_agent.coding.packages import session_packages
from pi_coding_agent.coding.resources.context_files import load_context_files
from pi_coding_agent.coding.resources.prompt_files import resolve_append_prompts, resolve_custom_prompt
from pi_coding_agent.coding.resources.resource_files import skill_candidates, template_candidates
from pi_coding_agent.coding.resources.settings import Settings
from pi_coding_agent.coding.resources.trust import (
    TrustAsker,
    ask_trust_if_due,
    has_trust_requiring_resources,
    is_project_trusted,
)
from pi_coding_agent.coding.runtime import LOGIN_HELP, Project, Resources, SessionRuntime, missing_cwd_error
from pi_coding_agent.coding.session import SessionManager, list_sessions
from pi_coding_agent.coding.session_options import SessionOptions
from pi_coding_agent.coding.ui import ExtensionUI, NoUI

if TYPE_CHECKING:
    from pi_coding_agent.coding.packages.resolve import PackageSet
    from pi_coding_agent.coding.resources.prompt_templates import PromptTemplate
    from pi_coding_agent.coding.resources.skills import Skill
    from pi_coding_agent.coding.sandbox.policy import SandboxPolicy


def _open_session(args: CliArgs, settings: Settings, agent_dir: Path, cwd: Path) -> SessionManager:
    session_dir = paths.resolve_session_dir(args.session_dir, settings.session_dir, agent_dir, cwd)
    if args.no_session:
        return SessionManager.create(cwd, session_dir, persist=False)
    if args.fork:
        return SessionManager.fork_from(_session_path(args.fork, cwd, session_dir, agent_dir, fork=True), cwd, session_dir,
                                        session_id=args.session_id)
    if args.session:
        return SessionManager.open(_session_path(args.session, cwd, session_dir, agent_dir), cwd)
    if args.continue_session:
        recent = SessionManager.continue_recent(cwd, session_dir)
        if recent is not None:
            return recent
    if args.session_id:
        existing = _find_session_by_id(args.session_id, session_dir, exact=True,
                                       cwd=_project_filter(session_dir, agent_dir, cwd))
        if existing is not None:
            return SessionManager.open(existing, cwd)
        print(f"Warning: No project session found with id '{args.session_id}'; "
              "creating a new session with that id.", file=sys.stderr)
    return SessionManager.create(cwd, session_dir, session_id=args.session_id)


def _session_path(arg: str, cwd: Path, session_dir: Path, agent_dir: Path | None = None, fork: bool = False) -> Path:
    """``--session``/``--fork`` take a path (it has a separator or ends in .jsonl) or a session id or id prefix.

    ``--fork`` copies another project's session here, as in pi; ``--session`` refuses its id with pi's
    ``Session found in different project`` line and says what to do instead: pi asks on the terminal
    whether to fork it here, which without one takes the first line of stdin (an RPC command) as the
    answer. A session directory several projects share holds other projects' sessions too."""
    if "/" in arg or "\\" in arg or arg.endswith(".jsonl"):
        return (cwd / Path(arg).expanduser()).resolve()
    local = _project_filter(session_dir, agent_dir, cwd)
    found = (_find_session_by_id(arg, session_dir, exact=True, cwd=local)
             or _find_session_by_id(arg, session_dir, exact=False, cwd=local))
    if found is not None:
        return found
    elsewhere = None
    if agent_dir is not None:  # pi's global search: the shared directory, else every project's folder
        elsewhere = _find_in_other_projects(arg, [session_dir] if local else _folders(agent_dir / "sessions"))
    if elsewhere is not None and fork:
        return elsewhere[0]
    if elsewhere is not None:
        path, project = elsewhere
        raise SessionError(f"Session found in different project: {project}\n"  # pi's line, then what to do
                           f"Error: Session '{arg}' belongs to another project ({project}). Open it there with "
                           f"--session {path} (it then works in that directory), or copy it into this one with "
                           f"--fork {path}")
    raise SessionError(f"No session found matching '{arg}'")


def _project_filter(session_dir: Path, agent_dir: Path | None, cwd: Path) -> Path | None:
    """``cwd`` when ``session_dir`` is not the project's own folder (a ``--session-dir`` or ``sessionDir``
    that several projects may share): only sessions recorded in ``cwd`` are this project's, as in pi."""
    if agent_dir is None or session_dir == paths.default_session_dir(agent_dir, cwd):
        return None
    return cwd


def _folders(sessions_root: Path) -> list[Path]:
    """Every project's session folder."""
    try:
        return sorted(p for p in sessions_root.iterdir() if p.is_dir())
    except OSError:
        return []


def _find_in_other_projects(session_id: str, folders: list[Path]) -> tuple[Path, str] | None:
    """pi's global search over session folders: exact id first, then a prefix."""
    infos = [info for folder in folders for info in list_sessions(folder)]
    match = next((i for i in infos if i["id"] == session_id), None) or next(
        (i for i in infos if i["id"].startswith(session_id)), None)
    return None if match is None else (Path(match["path"]), str(match["cwd"]))


def _find_session_by_id(session_id: str, session_dir: Path, exact: bool, cwd: Path | None = None) -> Path | None:
    for info in list_sessions(session_dir, cwd):
        if info["id"] == session_id or (not exact and info["id"].startswith(session_id)):
            return Path(info["path"])
    return None


def _anchored(args: CliArgs, start_cwd: Path) -> CliArgs:
    """``args`` with its relative resource paths made absolute against the start-up directory."""
    def anchor(raw: str) -> str:
        return raw if raw.startswith("~") or ":" in raw else os.path.join(start_cwd, raw)

    return args.replace(extensions=[anchor(p) for p in args.extensions], skills=[anchor(p) for p in args.skills],
                        prompt_templates=[anchor(p) for p in args.prompt_templates])


def session_options(args: CliArgs) -> SessionOptions:
    """What the running session keeps of the start-up options (the command line's or the SDK's)."""
    return SessionOptions(
        tools=None if args.tools is None else tuple(args.tools), exclude_tools=tuple(args.exclude_tools or ()),
        no_tools=args.no_tools, extensions=tuple(args.extensions), no_extensions=args.no_extensions,
        no_mcp=args.no_mcp, no_mcp_files=args.no_mcp_files, offline=args.offline, approve=args.approve,
        thinking=args.thinking, provider=args.provider, session_dir=args.session_dir,
        flag_values=dict(args.flag_values))


def _load_resources(args: CliArgs, settings: Settings, agent_dir: Path, cwd: Path, trusted: bool) -> Resources:
    packages = session_packages(settings.layer("user"), settings.layer("project"), args.extensions, agent_dir, cwd,
                                settings.npm_command)
    skills, warnings = _load_skills(args, settings, agent_dir, cwd, trusted, packages)
    for warning in [*warnings, *settings.warnings, *(packages.warnings if packages is not None else [])]:
        print(warning, file=sys.stderr)
    return Resources(
        context_files=[] if args.no_context_files else load_context_files(agent_dir, cwd),
        skills=skills,
        templates=_load_templates(args, settings, agent_dir, cwd, trusted, packages),
        custom_prompt=resolve_custom_prompt(args.system_prompt, agent_dir, cwd, trusted),
        append_prompts=resolve_append_prompts(list(args.append_system_prompt), agent_dir, cwd, trusted),
        packages=packages,
    )


def _load_skills(args: CliArgs, settings: Settings, agent_dir: Path, cwd: Path,
                 trusted: bool, packages: PackageSet | None) -> tuple[list[Skill], list[str]]:
    """The skills and their warnings; the reader is imported only when there is something to read."""
    candidates = skill_candidates(agent_dir, cwd, trusted, args.skills, settings.skills, not args.no_skills,
                                  packages.skills if packages is not None else ())
    if not candidates and not args.skills:
        return [], []
    from pi_coding_agent.coding.resources.skills import read_skills

    return read_skills(candidates, args.skills, cwd)


def _load_templates(args: CliArgs, settings: Settings, agent_dir: Path, cwd: Path, trusted: bool,
                    packages: PackageSet | None) -> list[PromptTemplate]:
    candidates = template_candidates(agent_dir, cwd, trusted, args.prompt_templates, settings.prompts,
                                     not args.no_prompt_templates, packages.prompts if packages is not None else ())
    if not candidates:
        return []
    from pi_coding_agent.coding.resources.prompt_templates import read_templates

    return read_templates(candidates)


def _cli_model(args: CliArgs, registry: ModelRegistry) -> tuple[Model, str | None] | None:
    """The ``--model`` pattern resolved once (its warnings printed once), with its ``:level`` suffix."""
    if not args.model:
        return None
    from pi_coding_agent.ai.models.resolution import resolve_model_pattern

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
    from pi_coding_agent.ai.models.resolution import resolve_model_scope

    scoped, warnings = resolve_model_scope(registry, list(patterns))
    for warning in warnings:
        print(f"Warning: {warning}", file=sys.stderr)
    return scoped


def _inline_key(args: CliArgs, cli_model: tuple[Model, str | None] | None, scoped: list[tuple[Model, str | None]],
                settings: Settings, sm: SessionManager) -> tuple[str, str] | None:
    """``--api-key`` and the provider it is for: that of the model the command line chose, as in pi
    (``--model``, else for a session without messages the default model if scoped, else the first of
    ``--models``)."""
    if args.api_key is None:
        return None
    if cli_model is not None:
        return cli_model[0]["provider"], args.api_key
    if scoped and not any(entry.get("type") == "message" for entry in sm.entries):
        default = (settings.default_provider, settings.default_model)
        chosen = next((m for m, _ in scoped if (m["provider"], m["id"]) == default), scoped[0][0])
        return chosen["provider"], args.api_key
    raise SessionError("Error: --api-key requires a model to be specified via --model, --provider/--model, "
                       "or --models")


def _extension_sources(args: CliArgs, settings: Settings, agent_dir: Path, cwd: Path, trusted: bool,
                       in_process: Sequence[ExtensionSource], packages: PackageSet | None = None) -> list[ExtensionSource]:
    """Discovered, ``-e`` and package extensions, then the caller's in-process ones."""
    found = discover(cwd, agent_dir, trusted, list(args.extensions), settings.extensions,
                     include_discovered=not args.no_extensions, packages=packages)
    return [*found, *in_process]


async def _trust_from_extensions(args: CliArgs, agent_dir: Path, cwd: Path, mode: str,
                                 in_process: Sequence[ExtensionSource]) -> bool | None:
    """``project_trust`` (``extensions/trust_event.py``), asked when pi asks: no ``-a``/``-na`` and the
    project has resources that need trust; only user, ``-e`` and SDK extensions take part."""
    if args.approve is not None or not has_trust_requiring_resources(cwd):
        return None
    user_settings = Settings.load(agent_dir, cwd, project_trusted=False)
    sources = _extension_sources(args, user_settings, agent_dir, cwd, False, in_process)
    if not sources:
        return None
    from pi_coding_agent.coding.extensions.trust_event import decide_trust

    return await decide_trust(sources, cwd, mode, agent_dir)


async def _start_trust(args: CliArgs, agent_dir: Path, cwd: Path, mode: str, default_trust: str,
                       in_process: Sequence[ExtensionSource], ask: TrustAsker | None) -> bool | None:
    """The start-up decision that overrides the flag and saved one: the extensions', else, when a front
    end that can ask is given, its answer or the usual rules' (``ask_trust_if_due``)."""
    decided = await _trust_from_extensions(args, agent_dir, cwd, mode, in_process)
    if decided is None:
        return await ask_trust_if_due(ask, agent_dir, cwd, args.approve, default_trust)
    return decided


def _sandbox_policy(args: CliArgs, settings: Settings, cwd: Path) -> SandboxPolicy | None:
    """The tools' sandbox, or a start-up error saying what is missing: never silently unsandboxed."""
    if args.sandbox is None and not settings.sandbox_configured:
        return None  # off, as by default (the policy module stays unloaded)
    from pi_coding_agent.coding.sandbox.policy import policy_from_settings

    try:
        policy = policy_from_settings(settings.get_trusted, cwd, args.sandbox, settings.get_project)
    except ValueError as exc:
        raise SessionError(f"Invalid sandbox setting: {exc}") from None
    if not policy.active:
        return None
    from pi_coding_agent.coding.sandbox.bwrap import SandboxUnavailable, ensure_available

    try:
        ensure_available()
    except SandboxUnavailable as exc:
        raise SessionError(f"Cannot start in the {policy.mode} sandbox: {exc}") from None
    return policy


class _Relay:
    """The event source the cache warmer subscribes to once it has loaded (see ``_attach_cache_warmer``)."""

    def __init__(self) -> None:
        self.listeners: list[Callable[[object], None]] = []

    def subscribe(self, listener: Callable[[object], None]) -> Callable[[], None]:
        self.listeners.append(listener)
        return lambda: self.listeners.remove(listener)


def _attach_cache_warmer(session: AgentSession, runtime: SessionRuntime) -> None:
    """Prompt-cache warming follows the session's events, but its module loads with the first assistant
    message it could act on (one from a model with a prompt-cache lifetime: the warmer ignores the
    others) rather than at start-up."""
    relay = _Relay()

    def forward(event: AgentEvent) -> None:
        if not relay.listeners:
            if event["type"] != "message_end" or event["message"].get("role") != "assistant":
                return
            if not runtime.agent.model.get("promptCache"):
                return
            from pi_coding_agent.coding.services.cache_warming import attach_cache_warmer

            attach_cache_warmer(relay, runtime)
        for listener in relay.listeners:
            listener(event)

    session.subscribe(forward, ("message_end", "agent_settled"))  # all the warmer acts on


async def create_session(
    args: CliArgs, mode: str, ui: ExtensionUI | None = None, *, cwd: Path | None = None,
    agent_dir: Path | None = None, settings_overrides: JsonObject | None = None,
    tools: Sequence[AgentTool] = (), extensions: Sequence[ExtensionSource] = (),
    session_class: type[AgentSession] = AgentSession, ask_trust: TrustAsker | None = None,
) -> AgentSession:
    """Build the whole session for ``mode`` ("rpc", "json", "print", "sdk").

    ``cwd`` and ``agent_dir`` default to the process's; ``tools`` are added to the built-in ones (a
    same name replaces), ``extensions`` load after the discovered ones. Tool sources that come with
    a feature (a protocol client, a code runner) join here, through ``tools``. ``session_class`` is
    the SDK's subclass when the SDK builds it. ``ask_trust``: how a terminal front end asks "Trust
    project folder?" (the headless modes leave it out and read ``ask`` as "no").
    """
    start_cwd = (cwd or Path.cwd()).resolve()
    agent_dir = agent_dir or paths.agent_dir()
    # pi reads start-up settings (sessionDir, default trust) as if trusted, before the trust decision
    startup = Settings.load(agent_dir, start_cwd, project_trusted=True)
    sm = _open_session(args, startup, agent_dir, start_cwd)
    missing = missing_cwd_error(sm, start_cwd)
    if missing is not None:
        raise MissingSessionCwdError(missing, str(sm.cwd), str(start_cwd), str(sm.session_file))
    args = _anchored(args, start_cwd)  # command-line paths stay relative to where pi was started

    def load_project(project_cwd: Path, decided: bool | None = None) -> Project:
        """A directory's trust, settings and resources: the start-up one's, or a resumed session's."""
        approve = args.approve if decided is None else decided
        trusted = is_project_trusted(agent_dir, project_cwd, approve, startup.default_project_trust)
        settings = Settings.load(agent_dir, project_cwd, project_trusted=trusted).with_overrides(
            settings_overrides or {})
        resources = _load_resources(args, settings, agent_dir, project_cwd, trusted)
        return Project(project_cwd, trusted, settings, resources)

    project_cwd = Path(sm.cwd).resolve()  # tools work where the session was recorded, as in pi
    project = load_project(project_cwd, await _start_trust(args, agent_dir, project_cwd, mode,
                                                           startup.default_project_trust, extensions, ask_trust))
    cwd, settings = project.cwd, project.settings
    auth = AuthStorage(agent_dir)
    registry = ModelRegistry(agent_dir, auth, llama_command.switched_off(settings, args.no_extensions, args.extensions))
    for error in [*auth.errors, *registry.errors]:  # a broken auth.json is named, not silently ignored
        print(error, file=sys.stderr)
    runtime = SessionRuntime(
        options=session_options(args), project=project, agent_dir=agent_dir, mode=mode, ui=ui or NoUI(),
        registry=registry, session_manager=sm, extra_tools=tools, load_project=load_project,
        sandbox=_sandbox_policy(args, settings, cwd),
    )
    session = session_class(runtime, _extension_sources(args, settings, agent_dir, cwd, project.trusted, extensions,
                                                        project.resources.packages))
    _attach_cache_warmer(session, runtime)
    from pi_coding_agent.coding.mcp.session import start_mcp

    # before extensions, which may register MCP servers; the RPC loop connects them once it answered
    runtime.mcp = start_mcp(runtime, project.trusted, connect=mode != "rpc")
    await session.load_extensions()  # as in pi, before the model choice: --model may name a provider they add
    scoped, cli_model = _scoped_models(args, registry, settings), _cli_model(args, registry)
    runtime.scoped, runtime.scoped_models, runtime.cli_model = scoped, [m for m, _ in scoped], cli_model
    runtime.inline_key = _inline_key(args, cli_model, scoped, settings, sm)
    if args.name and not sm.entries:
        sm.append_session_info(" ".join(args.name.split("\n")).strip())
    runtime.load_transcript(sm)
    if not registry.available_models():
        print(f"Warning: No models available. {LOGIN_HELP}", file=sys.stderr)
    await session.start(args.pending_flags)
    return session


async def loaded_extensions(args: CliArgs) -> tuple[ModelRegistry, list[JsonObject]] | None:
    """``--list-models`` and ``--help`` when extensions exist: the registry once they registered their
    providers, and the flags they registered, as pi shows them (None without extensions: the
    caller's plain answer is the same and cheaper)."""
    cwd, agent_dir = Path.cwd().resolve(), paths.agent_dir()
    startup = Settings.load(agent_dir, cwd, project_trusted=True)
    trusted = is_project_trusted(agent_dir, cwd, args.approve, startup.default_project_trust)
    settings = Settings.load(agent_dir, cwd, project_trusted=trusted)
    if not _extension_sources(args, settings, agent_dir, cwd, trusted, ()):
        return None
    session = await create_session(args.replace(no_session=True, no_mcp=True, list_models=None, help=False,
                                           pending_flags=[]), "print")
    await session.shutdown()
    loaded = session.extensions.extensions if session.extensions is not None else []
    return session.rt.registry, [flag for extension in loaded for flag in extension.flags.values()]
