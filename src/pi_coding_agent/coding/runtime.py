"""What a session is made of, and the policies it delegates.

``SessionRuntime`` holds the collaborators (settings, models, keys, the session store, resources,
tools, the Agent) and the policies ``AgentSession`` delegates: input expansion, the system-prompt
patch, model choice, replacing the session, compaction, export and shutdown. Keeping them here
leaves ``AgentSession`` a readable state machine over runs and commands; ``bootstrap`` builds both
from the command line.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pi_coding_agent.agent.agent import Agent, AgentHooks
from pi_coding_agent.agent.tool import AgentTool, tool_declaration
from pi_coding_agent.ai.abort import AbortSignal
from pi_coding_agent.ai.keys import AuthStorage
from pi_coding_agent.ai.models import FAUX_PROVIDER, PLACEHOLDER_MODEL, ModelRegistry, default_model
from pi_coding_agent.ai.stream import StreamOptions
from pi_coding_agent.ai.thinking import clamp_thinking_level
from pi_coding_agent.ai.types import Context, Model
from pi_coding_agent.coding import paths
from pi_coding_agent.coding.agent_session import AgentSession, SessionError
from pi_coding_agent.coding.compaction.controller import CompactionController
from pi_coding_agent.coding.resources.prompt_templates import (
    PromptTemplate,
    expand_prompt_template,
)
from pi_coding_agent.coding.resources.settings import Settings
from pi_coding_agent.coding.resources.skills import Skill, expand_skill_command
from pi_coding_agent.coding.resources.system_prompt import (
    PromptInputs,
    SystemState,
    build_sections,
    render_system_prompt,
)
from pi_coding_agent.coding.retry import RetrySettings
from pi_coding_agent.coding.session import (
    SessionContext,
    SessionManager,
    convert_to_llm,
)
from pi_coding_agent.coding.tools import ToolEnv, processes, run_user_bash, select_tools
from pi_coding_agent.coding.tools.images import ImageLimits, ImagePolicy, block_images
from pi_coding_agent.coding.tree_navigation import TreeNavigator

if TYPE_CHECKING:
    from pi_coding_agent.coding.cli import CliArgs
    from pi_coding_agent.coding.extensions.runner import ExtensionRunner
    from pi_coding_agent.coding.mcp import McpSession

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
        self.navigator = TreeNavigator(self)
        self.extensions: ExtensionRunner | None = None  # set by create_session when any extension loads
        self.mcp: McpSession | None = None  # set by create_session unless MCP is off (--no-mcp, -builtin:mcp)
        self.agent = Agent(
            model=PLACEHOLDER_MODEL,
            tools=select_tools(all_tools, settings.default_tools,
                               None if args.tools is None else ",".join(args.tools), args.no_tools),
            hooks=AgentHooks(build_context=self.build_context, get_api_key=self._get_api_key,
                             stream_options=self._stream_options, turn_start_messages=self.tool_patch_messages),
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
        idle_ms = self.settings.http_idle_timeout_ms
        return StreamOptions(session_id=self.session_manager.session_id,
                             thinking_budgets=self.settings.thinking_budgets,
                             headers=self.registry.request_headers(model, self.api_key_for(model)),
                             idle_timeout_s=idle_ms / 1000 if idle_ms else None)

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
        if self.mcp is not None and (handled := await self.mcp.handle_input(text)) is not None:
            return handled
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
        if self.mcp is not None:
            await self.mcp.before_prompt()

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
            extra_sections=self.mcp.prompt_sections() if self.mcp is not None else {},
        )
        return build_sections(inputs)

    def run_start_messages(self, session: AgentSession, user_message: dict[str, Any]) -> list[dict[str, Any]]:
        """The prompt's messages, led by a system patch when the prompt or tools changed."""
        state = SystemState.replay(self.agent.messages)
        patch = state.patch_to(self.prompt_sections(), [tool_declaration(t) for t in self.agent.tools])
        return [patch, user_message] if patch else [user_message]

    def tool_patch_messages(self) -> list[dict[str, Any]]:
        """Tools activated during a run (``tool_search``) are declared from the next request on by a
        system message, as pi records it; the prompt sections change only when a prompt starts."""
        state = SystemState.replay(self.agent.messages)
        patch = state.patch_to(state.sections, [tool_declaration(t) for t in self.agent.tools])
        return [patch] if patch else []

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
        self.navigator.abort()

    async def navigate_tree(self, session: AgentSession, target_id: str, **options: Any) -> dict[str, Any]:
        return await self.navigator.navigate(session, target_id, **options)

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
        commands: list[dict[str, Any]] = [] if self.mcp is None else [self.mcp.command_entry()]
        if self.extensions is not None:
            commands += self.extensions.list_commands()
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
        return paths.resolve_session_dir(self.args.session_dir, self.settings.session_dir, self.agent_dir, self.cwd)

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
            model, scoped_level = initial_model(self.args, self.registry, self.settings,
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
        if self.mcp is not None:
            await self.mcp.close()
        processes.kill_all()
        self.session_manager.close()


def initial_model(
    args: CliArgs, registry: ModelRegistry, settings: Settings, scoped: list[tuple[Model, str | None]]
) -> tuple[Model, str | None]:
    """Without ``--model``: the first scoped model, else the configured default or first available one."""
    if scoped:
        return scoped[0]
    chosen = default_model(registry, args.provider or settings.default_provider, settings.default_model, [])
    return (chosen or PLACEHOLDER_MODEL), None
