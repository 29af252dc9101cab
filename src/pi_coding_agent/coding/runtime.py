"""The composition root: builds an AgentSession from CLI arguments and owns its collaborators.

``SessionRuntime`` holds what a session is made of (settings, models, keys, the session store,
resources, tools, the Agent) and the policies the session delegates: input expansion, the system
prompt patch, replacing the session, compaction, export and shutdown. Keeping them here leaves
``AgentSession`` a readable state machine over runs and commands.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pi_coding_agent.agent.agent import Agent, AgentHooks
from pi_coding_agent.agent.tool import AgentTool, tool_declaration
from pi_coding_agent.ai.abort import AbortSignal
from pi_coding_agent.ai.keys import AuthStorage
from pi_coding_agent.ai.models import (
    FAUX_PROVIDER,
    PLACEHOLDER_MODEL,
    ModelRegistry,
    default_model,
    resolve_model_pattern,
    resolve_model_scope,
)
from pi_coding_agent.ai.stream import StreamOptions
from pi_coding_agent.ai.thinking import clamp_thinking_level
from pi_coding_agent.ai.types import Context, Model
from pi_coding_agent.coding import paths
from pi_coding_agent.coding.agent_session import AgentSession, SessionError
from pi_coding_agent.coding.compaction.branch_summary import collect_branch_entries
from pi_coding_agent.coding.compaction.controller import CompactionController
from pi_coding_agent.coding.resources.context_files import load_context_files
from pi_coding_agent.coding.resources.prompt_templates import (
    PromptTemplate,
    expand_prompt_template,
    load_prompt_templates,
)
from pi_coding_agent.coding.resources.settings import Settings
from pi_coding_agent.coding.resources.skills import Skill, expand_skill_command, load_skills
from pi_coding_agent.coding.resources.system_prompt import (
    PromptInputs,
    SystemState,
    build_sections,
    render_system_prompt,
    resolve_append_prompts,
    resolve_custom_prompt,
)
from pi_coding_agent.coding.resources.trust import is_project_trusted
from pi_coding_agent.coding.retry import RetrySettings
from pi_coding_agent.coding.session import (
    SessionContext,
    SessionManager,
    convert_to_llm,
    list_sessions,
    session_dir_for,
)
from pi_coding_agent.coding.tools import ToolEnv, create_builtin_tools, processes, run_user_bash, select_tools
from pi_coding_agent.coding.tools.images import ImageLimits, ImagePolicy, block_images

if TYPE_CHECKING:
    from pi_coding_agent.coding.cli import CliArgs
    from pi_coding_agent.coding.extensions.runner import ExtensionRunner

LOGIN_HELP = (
    "Use /login to log into a provider via OAuth or API key. See:\n"
    "  https://github.com/earendil-works/pi/blob/main/packages/coding-agent/docs/providers.md\n"
    "  https://github.com/earendil-works/pi/blob/main/packages/coding-agent/docs/models.md"
)


@dataclass
class Resources:
    """What shapes the system prompt and input expansion."""

    context_files: list[tuple[Path, str]] = field(default_factory=list)
    skills: list[Skill] = field(default_factory=list)
    templates: list[PromptTemplate] = field(default_factory=list)
    custom_prompt: str | None = None
    append_prompts: list[str] = field(default_factory=list)


class SessionRuntime:
    """Collaborators and delegated policies of one AgentSession (see module docstring)."""

    def __init__(
        self, *, args: CliArgs, cwd: Path, agent_dir: Path, mode: str, ui: Any, settings: Settings,
        auth: AuthStorage, registry: ModelRegistry, session_manager: SessionManager,
        resources: Resources, all_tools: dict[str, AgentTool], scoped: list[tuple[Model, str | None]],
        cli_model: tuple[Model, str | None] | None = None,
    ) -> None:
        self.args = args
        self.cwd = cwd
        self.agent_dir = agent_dir
        self.mode = mode
        self.ui = ui
        self.settings = settings
        self.auth = auth
        self.registry = registry
        self.session_manager = session_manager
        self.resources = resources
        self.all_tools = all_tools
        self.scoped = scoped  # --models / enabledModels, each with its optional ":level"
        self.scoped_models = [m for m, _ in scoped]
        self.cli_model = cli_model  # the --model pattern resolved at start-up, with its ":level"
        self.auto_compaction_enabled: bool = settings.compaction_enabled
        self.compaction: CompactionController  # bound by create_session once the AgentSession exists
        self.request_shutdown: Callable[[], None] | None = None  # set by a mode that can stop itself
        self._branch_summary_signal: AbortSignal | None = None
        self.extensions: ExtensionRunner | None = None  # set by create_session when any extension loads
        self.agent = Agent(
            model=PLACEHOLDER_MODEL,
            tools=select_tools(all_tools, settings.default_tools,
                               None if args.tools is None else ",".join(args.tools), args.no_tools),
            hooks=AgentHooks(build_context=self.build_context, get_api_key=self._get_api_key,
                             stream_options=self._stream_options),
            steering_mode=settings.steering_mode,
            follow_up_mode=settings.follow_up_mode,
        )

    # ----------------------------------------------------------------- model, keys, settings

    def retry_settings(self) -> RetrySettings:
        s = self.settings
        return RetrySettings(s.retry_enabled, s.retry_max_retries, s.retry_base_delay_ms, s.retry_max_agent_delay_ms)

    def api_key_for(self, model: Model) -> str | None:
        if model["api"] == "faux":
            return "faux"
        override = self.args.api_key if self._cli_provider_matches(model) else None
        return self.auth.api_key(model["provider"], override) or self.registry.configured_api_key(model["provider"])

    def _cli_provider_matches(self, model: Model) -> bool:
        return self.args.api_key is not None and (self.args.provider in (None, model["provider"]))

    async def _get_api_key(self, model: Model) -> str | None:
        return self.api_key_for(model)

    def _stream_options(self, model: Model) -> StreamOptions:
        return StreamOptions(session_id=self.session_manager.session_id,
                             thinking_budgets=self.settings.thinking_budgets,
                             headers=self.registry.request_headers(model, self.api_key_for(model)))

    def image_policy(self) -> ImagePolicy:
        """How images are normalised now: the ``images.autoResize`` setting within the model's limits."""
        auto_resize = self.settings.get("images.autoResize")
        return ImagePolicy(auto_resize is None or bool(auto_resize), ImageLimits.of_model(self.agent.model))

    @staticmethod
    def no_key_message(provider: str) -> str:
        return f"No API key found for {provider}.\n\n{LOGIN_HELP}"

    def thinking_level_for(self, model: Model, current: str) -> str:
        """Per-model level from settings, else the global default, else the current level."""
        per_model = self.settings.model_thinking_levels.get(f"{model['provider']}/{model['id']}")
        return per_model or self.settings.get("defaultThinkingLevel") or current

    # ----------------------------------------------------------------- prompt pipeline

    async def handle_input(
        self, session: AgentSession, text: str, images: list[dict[str, Any]] | None,
        streaming_behavior: str | None, allow_commands: bool,
    ) -> dict[str, Any] | None:
        """Extension commands and ``input`` hooks: a disposition, an ``{"action": "transform"}``, or None."""
        if self.extensions is None:
            return None
        return await self.extensions.handle_input(text, images, streaming_behavior, allow_commands)

    def expand_input(self, session: AgentSession, text: str) -> str:
        """``/skill:name`` first, then prompt templates (config.md §7-§8)."""

        def report(error: Exception) -> None:
            session.emit({"type": "extension_error", "extensionPath": "skill", "event": "skill_expansion",
                          "error": str(error)})

        text = expand_skill_command(text, self.resources.skills, on_error=report)
        return expand_prompt_template(text, self.resources.templates)

    async def before_prompt(self, session: AgentSession) -> None:
        """Pre-prompt threshold compaction (its events precede the prompt response)."""
        await self.compaction.check_before_prompt()

    def prompt_sections(self) -> dict[str, str]:
        tools = self.agent.tools
        names = {t.name for t in tools}
        r = self.resources
        inputs = PromptInputs(
            tools=[(t.name, getattr(t, "prompt_snippet", None), list(getattr(t, "prompt_guidelines", [])))
                   for t in tools],
            custom_prompt=r.custom_prompt,
            append_texts=r.append_prompts,
            context_files=r.context_files,
            skills=[s for s in r.skills if not s.disable_model_invocation] if names & {"read", "bash"} else [],
            cwd=self.cwd,
            extra_sections={},
        )
        return build_sections(inputs)

    def run_start_messages(self, session: AgentSession, user_message: dict[str, Any]) -> list[dict[str, Any]]:
        """The prompt's messages, led by a system patch when the prompt or tools changed."""
        state = SystemState.replay(self.agent.messages)
        patch = state.patch_to(self.prompt_sections(), [tool_declaration(t) for t in self.agent.tools])
        return [patch, user_message] if patch else [user_message]

    def build_context(self, messages: list[dict[str, Any]]) -> Context:
        """Agent hook: the transcript as one request (system state replayed, custom roles converted)."""
        state = SystemState.replay(messages)
        context: Context = {
            "systemPrompt": render_system_prompt(state.sections),
            "messages": convert_to_llm([m for m in messages if m["role"] != "system"]),  # type: ignore[typeddict-item]
        }
        if self.settings.get("images.blockImages"):
            context["messages"] = block_images(context["messages"])
        tools = list(state.tools.values()) or [tool_declaration(t) for t in self.agent.tools]
        if tools:
            context["tools"] = tools
        return context

    def session_env(self) -> dict[str, str]:
        """PI_* variables for the LLM's bash tool (not for the user's RPC bash)."""
        sm = self.session_manager
        env = {"PI_SESSION_ID": sm.session_id, "PI_PROVIDER": self.agent.model["provider"],
               "PI_MODEL": self.agent.model["id"], "PI_REASONING_LEVEL": self.agent.thinking_level}
        if sm.session_file is not None:
            env["PI_SESSION_FILE"] = str(sm.session_file)
        return env

    # ----------------------------------------------------------------- after runs

    async def after_run_compaction(self, session: AgentSession, last: dict[str, Any] | None) -> bool:
        """Threshold/overflow compaction after a run; True when the run must continue."""
        return await self.compaction.check_after_run(last)

    def abort_background_work(self) -> None:
        self.compaction.abort()
        if self._branch_summary_signal is not None:
            self._branch_summary_signal.abort()

    async def navigate_tree(
        self, session: AgentSession, target_id: str, *, summarize: bool = False,
        custom_instructions: str | None = None, replace_instructions: bool = False, label: str | None = None,
    ) -> dict[str, Any]:
        """Move to another point of the session tree (session-format.md §7), optionally leaving a
        summary of the abandoned branch. A user or custom message is re-opened for editing: the leaf
        goes to its parent and its text comes back as ``editorText``."""
        sm = self.session_manager
        entry = sm.get_entry(target_id)
        if entry is None:
            raise SessionError(f"Entry {target_id} not found")
        if session.is_streaming:
            await session.abort()
        message = entry.get("message") or {}
        editable = entry["type"] == "custom_message" or (entry["type"] == "message" and message.get("role") == "user")
        new_leaf = entry.get("parentId") if editable else target_id
        old_leaf = sm.leaf_id
        result: dict[str, Any] = {"cancelled": False}
        if editable:
            content = entry.get("content") if entry["type"] == "custom_message" else message.get("content")
            result["editorText"] = content if isinstance(content, str) else "".join(
                b.get("text", "") for b in content or [] if b.get("type") == "text")
        summary_entry = None
        branch = collect_branch_entries(sm.get_branch, old_leaf, new_leaf) if summarize else []
        if branch:
            summary_entry = await self._summarize_branch(session, branch, new_leaf, custom_instructions,
                                                         replace_instructions)
        else:
            sm.branch(new_leaf)
        if label and summary_entry is not None:
            sm.append_label(summary_entry["id"], label)
        session.agent.messages = sm.build_context().messages
        if self.extensions is not None:
            event: dict[str, Any] = {"type": "session_tree", "newLeafId": sm.leaf_id, "oldLeafId": old_leaf}
            if summary_entry is not None:
                event["summaryEntry"] = summary_entry
            await self.extensions.notify(event)
        return result

    async def _summarize_branch(self, session: AgentSession, branch: list[dict[str, Any]], new_leaf: str | None,
                                custom_instructions: str | None, replace_instructions: bool) -> dict[str, Any]:
        """The ``branch_summary`` entry for the branch being left (``isCompacting`` meanwhile)."""
        from pi_coding_agent.coding.compaction.branch_summary import summarize_branch
        from pi_coding_agent.coding.compaction.prepare import CompactionError
        from pi_coding_agent.coding.compaction.summarize import CompactionCancelled

        model = self.agent.model
        signal = self._branch_summary_signal = AbortSignal()
        session.is_compacting = True
        try:
            summary, details, usage = await summarize_branch(
                branch, model, self.api_key_for(model), signal, session.emit,
                thinking_level=self.agent.thinking_level, retry=self.retry_settings(),
                reserve_tokens=int(self.settings.get("branchSummary.reserveTokens", 16384)),
                custom_instructions=custom_instructions, replace_instructions=replace_instructions,
                thinking_budgets=self.settings.thinking_budgets)
        except CompactionCancelled:
            raise SessionError("Branch summarization cancelled") from None
        except CompactionError as exc:
            raise SessionError(str(exc)) from None
        finally:
            self._branch_summary_signal = None
            session.is_compacting = False
        return self.session_manager.branch_with_summary(new_leaf, summary, details=details, usage=usage)

    def context_usage(self, session: AgentSession) -> dict[str, Any] | None:
        return self.compaction.context_usage()

    async def compact(self, session: AgentSession, reason: str, custom_instructions: str | None) -> dict[str, Any]:
        from pi_coding_agent.coding.compaction.prepare import CompactionError
        from pi_coding_agent.coding.compaction.summarize import CompactionCancelled

        try:
            return await self.compaction.compact(reason, custom_instructions)
        except CompactionCancelled:
            raise SessionError("Compaction cancelled") from None
        except CompactionError as exc:
            raise SessionError(str(exc)) from None

    async def export_html(self, session: AgentSession, output_path: str | None) -> str:
        """A self-contained page of the whole session, written relative to the process cwd.

        Like pi, the answer is the path as the client gave it (or the default file name, which is
        relative), and a failed write is reported in Node's words for the ``open`` call.
        """
        from pi_coding_agent.coding.export.html import ExportError, export_session_html
        from pi_coding_agent.coding.tools.paths import node_error_message

        sm = self.session_manager
        state = SystemState.replay(self.agent.messages)
        try:
            path = export_session_html(sm.session_file if sm.persist else None, sm.get_entries(), sm.header,
                                       sm.leaf_id, output_path, Path.cwd(), system_prompt=state.render(),
                                       tools=[dict(t) for t in state.tools.values()])
        except ExportError as exc:
            shown = os.path.expanduser(output_path) if output_path else None
            if isinstance(exc.__cause__, OSError) and shown is not None:
                raise SessionError(node_error_message(exc.__cause__, "open", shown)) from None
            raise SessionError(str(exc)) from None
        return os.path.expanduser(output_path) if output_path else path.name

    # ----------------------------------------------------------------- extensions

    async def notify_model_select(self, session: AgentSession, model: Model, previous: Model, source: str) -> None:
        """Extension ``model_select`` hook point."""
        if self.extensions is not None:
            await self.extensions.model_select(model, previous, source)

    async def notify_session_info(self, session: AgentSession, name: str) -> None:
        """Extension ``session_info_changed`` hook point."""
        if self.extensions is not None:
            await self.extensions.session_info_changed(name)

    def list_commands(self) -> list[dict[str, Any]]:
        """get_commands: extension commands, prompt templates, then skills."""
        commands: list[dict[str, Any]] = [] if self.extensions is None else self.extensions.list_commands()
        for t in self.resources.templates:
            item: dict[str, Any] = {"name": t.name}
            if t.description:
                item["description"] = t.description
            item["source"] = "prompt"
            item["sourceInfo"] = t.source_info()
            commands.append(item)
        for s in self.resources.skills:
            commands.append({"name": f"skill:{s.name}", "description": s.description, "source": "skill",
                             "sourceInfo": s.source_info()})
        return commands

    # ----------------------------------------------------------------- user bash, session replacement

    async def run_user_bash(
        self, session: AgentSession, command: str, exclude_from_context: bool, on_delta: Any, signal: AbortSignal
    ) -> dict[str, Any]:
        if self.extensions is not None and (replaced := await self.extensions.user_bash(command, exclude_from_context)):
            return replaced
        env = ToolEnv(cwd=self.cwd, shell_path=self.settings.shell_path,
                      shell_command_prefix=self.settings.shell_command_prefix, agent_dir=self.agent_dir)
        return await run_user_bash(command, env, on_delta, signal)

    async def replace_session(
        self, session: AgentSession, reason: str, *, parent_session: str | None = None, target: Path | None = None,
        entry_id: str | None = None, position: str = "before",
    ) -> dict[str, Any]:
        """new / resume / fork: tear the run down, swap the store, restore model and transcript."""
        ext = self.extensions
        if ext is not None and await ext.before_replace(reason, target, entry_id, position):
            return {"cancelled": True}
        if session.is_streaming:
            await session.abort()
        session.abort_bash()
        old = self.session_manager
        if reason == "new":
            sm = SessionManager.create(self.cwd, self._session_dir(), persist=old.persist,
                                       parent_session=parent_session)
        elif reason == "resume":
            assert target is not None
            sm = SessionManager.open(target.resolve(), self.cwd)
            if not Path(sm.cwd).is_dir():
                raise SessionError(f"Session working directory does not exist: {sm.cwd}")
        else:
            if old.persist and old.session_file is not None and not old.session_file.exists():
                raise SessionError(
                    "This session has not been saved yet. Send a message before cloning or forking it."
                )
            sm = old.fork(entry_id, position)
        if ext is not None:
            await ext.session_shutdown(reason, None if sm.session_file is None else str(sm.session_file))
        self.session_manager = sm
        session.rebind(sm)
        self.load_transcript(sm)
        if ext is not None:
            await ext.reload(reason, None if old.session_file is None else str(old.session_file))
        return {"cancelled": False}

    def _session_dir(self) -> Path:
        return resolve_session_dir(self.args, self.settings, self.agent_dir, self.cwd)

    def load_transcript(self, sm: SessionManager) -> None:
        """Give the agent the session's projected context, model and thinking level.

        As pi does on start-up and after every replacement, a session without messages records the
        chosen model and level as its first entries; an older session that never recorded a level
        gets one.
        """
        ctx = sm.build_context()
        has_level = any(entry.get("type") == "thinking_level_change" for entry in sm.get_branch())
        model, level = self.choose_model(ctx, has_level)
        self.agent.messages = ctx.messages
        self.agent.model = model
        self.agent.thinking_level = level
        if not ctx.messages and model is not PLACEHOLDER_MODEL:
            sm.append_model_change(model["provider"], model["id"])
        if not ctx.messages or not has_level:
            sm.append_thinking_level_change(level)

    def choose_model(self, ctx: SessionContext, has_level: bool) -> tuple[Model, str]:
        """pi's choice at start-up and on every session replacement (new, resume, fork).

        Model: the ``--model`` pattern, else the model the session last used (when it still has
        credentials), else the initial model. Level: ``--thinking`` or the pattern's suffix, else
        the session's recorded level, else the settings for that model, clamped to the model.
        """
        existing = bool(ctx.messages)
        level = self.args.thinking
        model: Model | None = None
        if self.cli_model is not None:
            model, pattern_level = self.cli_model
            level = level or pattern_level
        elif existing and ctx.model is not None:
            model = self.registry.find(*ctx.model)
            if model is not None and not self.registry.has_auth(model["provider"]):
                model = None
        if model is None:
            model, scoped_level = _initial_model(self.args, self.registry, self.settings,
                                                 [] if existing else self.scoped)
            level = level or scoped_level
        if level is None and existing:
            level = ctx.thinking_level if has_level else self.settings.get("defaultThinkingLevel") or "medium"
        if level is None:
            level = self.thinking_level_for(model, "medium")
        return model, clamp_thinking_level(model, level)

    def available_models(self) -> list[Model]:
        """Models with credentials. Our faux provider (tests and demos; pi 1.6.0 has none) is only
        listed when the command line chose it, so model lists and cycling match pi's."""
        models = self.registry.available_models()
        chosen = [m for m, _ in self.scoped] + ([self.cli_model[0]] if self.cli_model else [])
        if any(m["provider"] == FAUX_PROVIDER for m in chosen):
            return models
        return [m for m in models if m["provider"] != FAUX_PROVIDER]

    async def shutdown(self, session: AgentSession) -> None:
        if self.extensions is not None:
            await self.extensions.session_shutdown("quit")
        processes.kill_all()
        self.session_manager.close()


def resolve_session_dir(args: CliArgs, settings: Settings, agent_dir: Path, cwd: Path) -> Path:
    """--session-dir, then PI_CODING_AGENT_SESSION_DIR, then the sessionDir setting, then the default."""
    explicit = args.session_dir or os.environ.get("PI_CODING_AGENT_SESSION_DIR") or settings.session_dir
    if explicit:
        return (cwd / Path(explicit).expanduser()).resolve()
    return session_dir_for(agent_dir, cwd)


def _open_session(args: CliArgs, settings: Settings, agent_dir: Path, cwd: Path) -> SessionManager:
    session_dir = resolve_session_dir(args, settings, agent_dir, cwd)
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


def _initial_model(
    args: CliArgs, registry: ModelRegistry, settings: Settings, scoped: list[tuple[Model, str | None]]
) -> tuple[Model, str | None]:
    """Without ``--model``: the first scoped model, else the configured default or first available one."""
    if scoped:
        return scoped[0]
    chosen = default_model(registry, args.provider or settings.default_provider, settings.default_model, [])
    return (chosen or PLACEHOLDER_MODEL), None


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

    runtime.extensions = await attach_extensions(runtime, session, trusted)
    return session
