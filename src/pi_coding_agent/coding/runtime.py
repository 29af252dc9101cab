"""What a session is made of, and the policies it delegates.

``SessionRuntime`` holds the collaborators (settings, models, keys, the session store, resources,
tools, the Agent) and the policies that need nothing but them: input expansion, the system-prompt
patch, model choice, opening a replacement store, export. ``AgentSession`` owns one runtime (and
the compaction controller, tree navigator and extension runner); the runtime never sees the session,
so everything here can be read, and tested, without it. ``bootstrap`` builds the runtime.
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from pi_coding_agent.agent.agent import Agent
from pi_coding_agent.agent.hooks import AgentHooks
from pi_coding_agent.agent.tool import AgentTool
from pi_coding_agent.ai.abort import AbortSignal
from pi_coding_agent.ai.auth.keys import AuthStorage
from pi_coding_agent.ai.identity import opencode_session_headers
from pi_coding_agent.ai.models.catalog import FAUX_PROVIDER, PLACEHOLDER_MODEL, ModelRegistry, default_model
from pi_coding_agent.ai.records import record
from pi_coding_agent.ai.stream import StreamOptions
from pi_coding_agent.ai.thinking import clamp_thinking_level
from pi_coding_agent.ai.types import Context, JsonObject, Model, Tool
from pi_coding_agent.coding import auth_help, paths
from pi_coding_agent.coding.codemode.activation import NAME as CODEMODE
from pi_coding_agent.coding.errors import MissingSessionCwdError, SessionError
from pi_coding_agent.coding.events import Message
from pi_coding_agent.coding.resources.provider_settings import provider_request_options
from pi_coding_agent.coding.resources.settings import Settings
from pi_coding_agent.coding.retry import RetrySettings
from pi_coding_agent.coding.session import (
    SessionContext,
    SessionManager,
    convert_to_llm,
)
from pi_coding_agent.coding.session_options import SessionOptions
from pi_coding_agent.coding.tools.base import ToolEnv
from pi_coding_agent.coding.tools.builtin import LazyTool, lazy_builtin_tools
from pi_coding_agent.coding.tools.process_groups import ProcessRegistry
from pi_coding_agent.coding.tools.selection import select_tools
from pi_coding_agent.coding.ui import ExtensionUI

if TYPE_CHECKING:
    from pi_coding_agent.coding.packages.resolve import PackageSet
    from pi_coding_agent.coding.resources.prompt_templates import PromptTemplate
    from pi_coding_agent.coding.resources.skills import Skill
    from pi_coding_agent.coding.resources.system_prompt import SystemState
    from pi_coding_agent.coding.resources.trust import TrustAsker
    from pi_coding_agent.coding.sandbox.policy import SandboxPolicy
    from pi_coding_agent.coding.tools.images import ImagePolicy
    from pi_coding_agent.coding.virtual_models import VirtualModels


class McpHooks(Protocol):
    """What the session and its runtime call of the MCP connections (``coding/mcp``), which sit above
    the runtime and are started with it."""

    def register_server(self, name: str, config: JsonObject, source: str) -> None: ...
    def unregister_server(self, name: str, source: str) -> None: ...
    def registered_servers(self) -> list[JsonObject]: ...
    def connect(self) -> None: ...
    def command_entry(self) -> JsonObject: ...
    async def handle_input(self, text: str) -> JsonObject | None: ...
    async def before_prompt(self) -> None: ...
    async def wait_for_reach(self, reach: str | list[str]) -> None: ...
    def prompt_sections(self) -> dict[str, str]: ...
    async def close(self) -> None: ...


LOGIN_HELP = auth_help.login_help()


@functools.cache
def _unauthorized() -> re.Pattern[str]:
    """``401 …`` or ``<API> error (401): …``, as the adapters word an HTTP 401 (compiled on first use)."""
    return re.compile(r"(?:[^(]*\()?401\b")


def system_state(messages: Sequence[Message]) -> SystemState:
    """The system prompt and tools a transcript's system messages leave in force (the prompt
    machinery is imported with the first prompt, not at start-up)."""
    from pi_coding_agent.coding.resources.system_prompt import SystemState

    return SystemState.replay(messages)


@record
class Resources:
    """What shapes the system prompt and input expansion."""

    context_files: list[tuple[Path, str]] = field(default_factory=list)
    skills: list[Skill] = field(default_factory=list)
    templates: list[PromptTemplate] = field(default_factory=list)
    custom_prompt: str | None = None
    append_prompts: list[str] = field(default_factory=list)
    packages: PackageSet | None = None  # None: no package configured nor given with -e


@record
class Project:
    """What belongs to one working directory: its trust decision, settings and resources."""

    cwd: Path
    trusted: bool
    settings: Settings
    resources: Resources


ProjectLoader = Callable[[Path, "bool | None"], Project]  # (directory, trust decided by an extension)


def missing_cwd_error(sm: SessionManager, fallback_cwd: Path) -> str | None:
    """pi's refusal of a saved session whose recorded working directory is gone (None when it exists)."""
    if not sm.persist or sm.session_file is None or Path(sm.cwd).exists():
        return None
    return (f"Stored session working directory does not exist: {sm.cwd}\nSession file: {sm.session_file}\n"
            f"Current working directory: {fallback_cwd}")


class SessionRuntime:
    """Collaborators and delegated policies of one AgentSession (see module docstring)."""

    def __init__(
        self, *, options: SessionOptions, project: Project, agent_dir: Path, mode: str, ui: ExtensionUI,
        registry: ModelRegistry, session_manager: SessionManager, extra_tools: Sequence[AgentTool] = (),
        load_project: ProjectLoader | None = None, sandbox: SandboxPolicy | None = None,
    ) -> None:
        self.options = options
        self.sandbox = sandbox  # limits of the model's tools (None: off, as in pi)
        # MCP connections, started by create_session once the runtime exists (None: off or --no-mcp)
        self.mcp: McpHooks | None = None
        self._trust_by_cwd: dict[Path, bool] = {}  # each directory's trust, decided once per process as in pi
        # how a front end that can ask puts "Trust project folder?" when a replacement enters a folder
        self.ask_trust: TrustAsker | None = None
        self._enter(project)
        self.agent_dir = agent_dir
        self.mode = mode
        self.ui = ui
        self.registry = registry
        self.auth: AuthStorage = registry.auth
        self.session_manager = session_manager
        self.processes = ProcessRegistry()  # this session's commands: its shutdown kills them, no other's
        self.flag_values: dict[str, bool | str] = dict(options.flag_values)  # extension flags, shared by all
        # the model choice, set by create_session once extensions have registered their providers:
        self.inline_key: tuple[str, str] | None = None  # ``--api-key`` and whose credential it is, as pi decides
        self.scoped: list[tuple[Model, str | None]] = []  # --models / enabledModels, each with its ":level"
        self.scoped_models: list[Model] = []
        self.cli_model: tuple[Model, str | None] | None = None  # the --model pattern resolved, with its ":level"
        self._load_project = load_project  # how a session of another directory gets that directory's project
        self._extra_tools = tuple(extra_tools)
        self.all_tools = self._create_tools(extra_tools)
        settings = self.settings
        self.auto_compaction_enabled: bool = settings.compaction_enabled
        self.request_shutdown: Callable[[], None] | None = None  # set by a mode that can stop itself
        self.after_sign_in: Callable[[str], None] | None = None  # set by extensions: refresh that provider's models
        self.routed_model: Model | None = None  # the physical model of the request a virtual selection routed
        self.agent = Agent(
            model=PLACEHOLDER_MODEL,
            tools=select_tools(self.all_tools, [*settings.default_tools, *(t.name for t in extra_tools)],
                               None if options.tools is None else ",".join(options.tools), options.no_tools),
            hooks=AgentHooks(build_context=self.build_context, get_api_key=self._get_api_key,
                             stream_options=self._stream_options, turn_start_messages=self.tool_patch_messages),
            steering_mode=settings.steering_mode,
            follow_up_mode=settings.follow_up_mode,
        )

    def _create_tools(self, extra_tools: Sequence[AgentTool]) -> dict[str, AgentTool]:
        """Built-in tools bound to this runtime, then the caller's own (a same name replaces)."""
        s = self.settings
        env = ToolEnv(cwd=self.cwd, shell_path=s.shell_path, shell_command_prefix=s.shell_command_prefix,
                      session_env=self.session_env,
                      model_accepts_images=lambda: "image" in self.agent.model.get("input", []),
                      image_policy=self.image_policy, agent_dir=self.agent_dir, sandbox=self.sandbox,
                      confirm=self.ui.confirm, processes=self.processes)
        self.tool_env = env  # shared by the built-in tools: what changes per session changes here
        tools = lazy_builtin_tools(env)
        if self.builtin_on(CODEMODE):  # registered inactive: defaultTools/--tools name it
            tools[CODEMODE] = LazyTool(CODEMODE, self._codemode_tool)
        tools.update((tool.name, tool) for tool in extra_tools)
        return tools

    def builtin_on(self, name: str) -> bool:
        """Whether pi's bundled extension ``builtin:<name>`` is on for this session."""
        from pi_coding_agent.coding.extensions.loader import builtin_enabled

        options = self.options
        return builtin_enabled(name, self.settings.extensions, options.no_extensions, list(options.extensions))

    def _codemode_tool(self) -> AgentTool:
        from pi_coding_agent.coding.codemode.tool import session_codemode_tool

        return session_codemode_tool(lambda: self, self.processes)

    # ----------------------------------------------------------------- model, keys, settings

    def retry_settings(self) -> RetrySettings:
        s = self.settings
        return RetrySettings(s.retry_enabled, s.retry_max_retries, s.retry_base_delay_ms, s.retry_max_agent_delay_ms)

    def api_key_for(self, model: Model) -> str | None:
        if model["api"] == "faux":
            return "faux"
        key = self.auth.api_key(model["provider"], self._inline_key(model["provider"]))
        return key if key is not None else self.registry.configured_api_key(model["provider"])

    def has_auth(self, provider: str) -> bool:
        """A stored or configured credential, or the ``--api-key`` given for this provider."""
        return self._inline_key(provider) is not None or self.registry.has_auth(provider)

    def _inline_key(self, provider: str) -> str | None:
        """The ``--api-key`` when it is this provider's."""
        return self.inline_key[1] if self.inline_key is not None and self.inline_key[0] == provider else None

    async def _get_api_key(self, model: Model) -> str | None:
        await self.auth.prepare(model["provider"])  # refreshes a due OAuth credential
        return self.api_key_for(model)

    def _stream_options(self, model: Model) -> StreamOptions:
        session_id = self.session_manager.session_id
        headers = (opencode_session_headers(model["provider"], model["baseUrl"], session_id)
                   | self._auth_headers(model) | self.registry.request_headers(model, self.api_key_for(model)))
        own = self.auth.resolution(model["provider"])
        return StreamOptions(session_id=session_id, thinking_budgets=self.settings.thinking_budgets,
                             headers=headers, env=self.auth.credential_env(model["provider"]),
                             base_url=own.base_url if own is not None else None,
                             **provider_request_options(self.settings))

    async def recover_unauthorized(self, failed: Mapping[str, object] | None) -> bool:
        """After a 401 to an OAuth access token, refresh it (even before its expiry): True to retry once."""
        text = str((failed or {}).get("errorMessage") or "")
        if not failed or failed.get("stopReason") != "error" or not _unauthorized().match(text):
            return False
        model = self.agent.model
        try:
            return await self.auth.unauthorized(model["provider"], self.api_key_for(model))
        except Exception:  # the refresh failed too: the 401 stands
            return False

    def _auth_headers(self, model: Model) -> dict[str, str]:
        token = self.auth.bearer_token(model["provider"], self._inline_key(model["provider"]))
        own = self.auth.resolution(model["provider"])  # an extension provider's own key resolution
        headers = dict(own.headers) if own is not None else {}
        return {**headers, "Authorization": f"Bearer {token}"} if token else headers

    def request_options(self, model: Model) -> StreamOptions:
        """A request's options as the session's own requests get them, its credential included."""
        return replace(self._stream_options(model), api_key=self.api_key_for(model))

    def image_policy(self) -> ImagePolicy:
        """How images are normalised now: the ``images.autoResize`` setting within the model's limits."""
        from pi_coding_agent.coding.tools.images import ImageLimits, ImagePolicy

        return ImagePolicy(self.settings.images_auto_resize, ImageLimits.of_model(self.agent.model))

    def no_key_message(self, provider: str) -> str:
        """The missing-key help, after why auth.json gave nothing when it could not be used (a
        dangling or looping link, broken JSON): the cause a user needs, named at the prompt."""
        message = auth_help.no_key_message(provider)
        if not self.auth.errors:
            return message
        first, _, rest = message.partition("\n\n")
        return "\n\n".join([first, *self.auth.errors, rest])

    def thinking_level_for(self, model: Model, current: str) -> str:
        """Per-model level from settings, else the global default, else the current level."""
        per_model = self.settings.model_thinking_levels.get(f"{model['provider']}/{model['id']}")
        return per_model or self.settings.default_thinking_level or current

    # ----------------------------------------------------------------- prompt pipeline

    def expand_input(self, text: str, report: Callable[[Exception], None]) -> str:
        """``/skill:name`` first (a failure goes to ``report``), then prompt templates (with neither,
        the text is left as it is, and their modules unloaded)."""
        if self.resources.skills:
            from pi_coding_agent.coding.resources.skills import expand_skill_command

            text = expand_skill_command(text, self.resources.skills, on_error=report)
        if self.resources.templates:
            from pi_coding_agent.coding.resources.prompt_templates import expand_prompt_template

            text = expand_prompt_template(text, self.resources.templates)
        return text

    def prompt_sections(self) -> dict[str, str]:
        from pi_coding_agent.coding.resources.system_prompt import PromptInputs, build_sections

        tools = self.agent.tools
        names = {t.name for t in tools}
        r = self.resources
        inputs = PromptInputs(
            tools=[(t.name, t.prompt_snippet, list(t.prompt_guidelines)) for t in tools],
            custom_prompt=r.custom_prompt,
            append_texts=r.append_prompts,
            context_files=r.context_files,
            skills=[s for s in r.skills if not s.disable_model_invocation] if names & {"read", "bash"} else [],
            cwd=self.cwd,
            extra_sections=self.mcp.prompt_sections() if self.mcp is not None else {},
        )
        return build_sections(inputs)

    def tool_declarations(self) -> list[Any]:
        """The active tools as the model sees them (codemode may annotate or hide the others)."""
        from pi_coding_agent.coding.codemode.activation import presented_declarations

        return presented_declarations(self.agent.tools, self.settings)

    def system_prompt_options(self) -> JsonObject:
        """What the system prompt is built from, in pi's ``systemPromptOptions`` shape (for extensions)."""
        r, tools = self.resources, self.all_tools
        options: JsonObject = {} if r.custom_prompt is None else {"customPrompt": r.custom_prompt}
        options.update(
            selectedTools=[t.name for t in self.agent.tools], hiddenTools=[],
            toolSnippets={n: getattr(t, "prompt_snippet", None) for n, t in tools.items()
                          if getattr(t, "prompt_snippet", None)},
            toolGuidelines={n: list(getattr(t, "prompt_guidelines", [])) for n, t in tools.items()
                            if getattr(t, "prompt_guidelines", None)},
            promptGuidelines=[], appendSystemPrompt="\n\n".join(r.append_prompts), sections={}, cwd=str(self.cwd),
            contextFiles=[{"path": str(path), "content": content} for path, content in r.context_files],
            skills=[{"name": s.name, "description": s.description, "filePath": str(s.path),
                     "baseDir": str(s.base_dir), "sourceInfo": s.source_info(),
                     "disableModelInvocation": s.disable_model_invocation} for s in r.skills])
        return options

    def run_start_messages(self, user_message: Message) -> list[Message]:
        """The prompt's messages, led by a system patch when the prompt or tools changed."""
        state = system_state(self.agent.messages)
        patch = state.patch_to(self.prompt_sections(), self.tool_declarations())
        return [patch, user_message] if patch else [user_message]

    def tool_patch_messages(self) -> list[Message]:
        """Tools activated during a run (``tool_search``) are declared from the next request on by a
        system message, as pi records it; the prompt sections change only when a prompt starts."""
        state = system_state(self.agent.messages)
        patch = state.patch_to(state.sections, self.tool_declarations())
        return [patch] if patch else []

    def build_context(self, messages: list[Message]) -> Context:
        """Agent hook: the transcript as one request (system state replayed, custom roles converted)."""
        from pi_coding_agent.coding.resources.system_prompt import render_system_prompt
        from pi_coding_agent.coding.resources.system_updates import (
                keeps_system_messages,
                leading_tools,
                split_transcript,
        )

        state = system_state(messages)
        head: list[Tool] | None = None
        if keeps_system_messages(self.routed_model or self.agent.model):  # compat.supportsMidConvoSystemMessages
            prompt, rest = split_transcript(messages)
            context: Context = {"systemPrompt": prompt, "messages": convert_to_llm(rest)}
            head = leading_tools(messages)  # the later messages carry the changes
        else:
            context = {
                "systemPrompt": render_system_prompt(state.sections),
                "messages": convert_to_llm([m for m in messages if m["role"] != "system"]),
            }
        if self.settings.images_block_images:
            from pi_coding_agent.coding.tools.images import block_images

            context["messages"] = block_images(context["messages"])
        if head is not None:
            context["tools"] = head
        elif tools := list(state.tools.values()) or self.tool_declarations():
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

    # ----------------------------------------------------------------- export

    async def export_html(self, output_path: str | None) -> str:
        """A self-contained page of the whole session, written relative to the process cwd.

        Like pi, the answer is the path as the client gave it (or the default file name, which is
        relative), and a failed write is reported in Node's words for the ``open`` call.
        """
        from pi_coding_agent.coding.export.html import ExportError, export_session_html
        from pi_coding_agent.coding.tools.paths import node_error_message

        sm = self.session_manager
        state = system_state(self.agent.messages)
        try:
            path = export_session_html(sm.session_file if sm.persist else None, sm.entries, sm.header,
                                       sm.leaf_id, output_path, Path.cwd(), system_prompt=state.render(),
                                       tools=[dict(t) for t in state.tools.values()])
        except ExportError as exc:
            shown = os.path.expanduser(output_path) if output_path else None
            if isinstance(exc.__cause__, OSError) and shown is not None:
                raise SessionError(node_error_message(exc.__cause__, "open", shown)) from None
            raise SessionError(str(exc)) from None
        return os.path.expanduser(output_path) if output_path else path.name

    # ----------------------------------------------------------------- commands, user bash, replacement

    def resource_commands(self) -> list[JsonObject]:
        """get_commands after the extension commands: prompt templates, then skills."""
        commands: list[JsonObject] = []
        for t in self.resources.templates:
            item: JsonObject = {"name": t.name}
            if t.description:
                item["description"] = t.description
            item["source"] = "prompt"
            item["sourceInfo"] = t.source_info()
            commands.append(item)
        for s in self.resources.skills:
            commands.append({"name": f"skill:{s.name}", "description": s.description, "source": "skill",
                             "sourceInfo": s.source_info()})
        return commands

    async def run_user_bash(
        self, command: str, on_delta: Callable[[str], None], signal: AbortSignal
    ) -> JsonObject:
        env = ToolEnv(cwd=self.cwd, shell_path=self.settings.shell_path,
                      shell_command_prefix=self.settings.shell_command_prefix, agent_dir=self.agent_dir,
                      processes=self.processes)
        from pi_coding_agent.coding.tools.user_bash import run_user_bash

        return await run_user_bash(command, env, on_delta, signal)

    def open_replacement(
        self, reason: str, *, parent_session: str | None, target: Path | None, entry_id: str | None, position: str,
        cwd_override: Path | None = None,
    ) -> SessionManager:
        """The store a new / resume / fork replacement switches to (the current one is left as it is);
        ``cwd_override``: where a resumed session runs instead of its recorded directory (not stored)."""
        old = self.session_manager
        if reason == "new":
            return SessionManager.create(self.cwd, self._session_dir(), persist=old.persist,
                                         parent_session=parent_session)
        if reason == "resume":
            assert target is not None
            sm = SessionManager.open(target.resolve(), self.cwd)
            if cwd_override is not None:
                sm.cwd = cwd_override
            missing = missing_cwd_error(sm, self.cwd)
            if missing is not None:
                raise MissingSessionCwdError(missing, str(sm.cwd), str(self.cwd), str(sm.session_file))
            return sm
        if old.persist and old.session_file is not None and not old.session_file.exists():
            raise SessionError("This session has not been saved yet. Send a message before cloning or forking it.")
        return old.fork(entry_id, position)

    def move_to(self, cwd: Path, trusted: bool | None = None) -> None:
        """Work in ``cwd`` from now on (a resumed session of another project), as pi rebuilds its runtime
        there: that directory's trust (``trusted``: an extension's ``project_trust`` answer), settings and
        resources, and tools bound to it (the same ones active)."""
        cwd = cwd.resolve()
        if cwd == self.cwd or self._load_project is None:
            return
        project = self._load_project(cwd, self._trust_by_cwd.get(cwd) if trusted is None else trusted)
        self._enter(project)
        if self.sandbox is not None:  # the workspace moves with the session
            self.sandbox = replace(self.sandbox, cwd=project.cwd)
        before, self.all_tools = self.all_tools, self._create_tools(self._extra_tools)
        self.agent.set_tools([self.all_tools.get(t.name, t) if before.get(t.name) is t else t for t in self.agent.tools])

    def trust_decided(self, cwd: Path) -> bool:
        """Whether this process has decided ``cwd``'s trust already (pi neither fires ``project_trust``
        nor asks again for such a directory: its first answer, even a "this session only" one, holds)."""
        return cwd.resolve() in self._trust_by_cwd

    def _enter(self, project: Project) -> None:
        """Work with ``project``'s directory, trust, settings and resources (at start, and on a move)."""
        self.cwd, self.project_trusted = project.cwd, project.trusted
        self._trust_by_cwd[project.cwd] = project.trusted
        self.settings, self.resources = project.settings, project.resources

    def reload_project(self) -> None:
        """``/reload``: this directory's settings and resources read again (its trust as decided)."""
        if self._load_project is not None:
            project = self._load_project(self.cwd, self.project_trusted)
            self.settings, self.resources = project.settings, project.resources

    def set_sandbox_mode(self, mode: str) -> None:
        """Switch the tools' sandbox (``off``, ``read-only``, ``workspace-write``) for this session,
        keeping the other ``sandbox`` settings; refused when this machine cannot provide it."""
        from pi_coding_agent.coding.sandbox.bwrap import SandboxUnavailable, ensure_available
        from pi_coding_agent.coding.sandbox.policy import policy_from_settings

        try:
            policy = policy_from_settings(self.settings.get_trusted, self.cwd, mode, self.settings.get_project)
            if policy.active:
                ensure_available()
        except (ValueError, SandboxUnavailable) as exc:
            raise SessionError(f"Cannot use the {mode} sandbox: {exc}") from None
        self.sandbox = policy if policy.active else None
        self.tool_env.sandbox = self.sandbox

    def _session_dir(self) -> Path:
        return paths.resolve_session_dir(self.options.session_dir, self.settings.session_dir, self.agent_dir, self.cwd)

    def load_transcript(self, sm: SessionManager) -> None:
        """Give the agent the session's projected context, model and thinking level.

        As pi does on start-up and after every replacement, a session without messages records the
        chosen model and level as its first entries; an older session that never recorded a level
        gets one.
        """
        ctx = sm.build_context()
        if ctx.model is not None and self.registry.has_virtual_models():
            from pi_coding_agent.coding.virtual_models import branch_selection

            ctx.model = branch_selection(sm.get_branch(), self.registry) or ctx.model
        has_level = sm.branch_has("thinking_level_change")
        model, level = self.choose_model(ctx, has_level)
        self.agent.replace_messages(ctx.messages)
        self.agent.set_model(model, level)
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
        level = self.options.thinking
        model: Model | None = None
        if self.cli_model is not None:
            model, pattern_level = self.cli_model
            level = level or pattern_level
        elif existing and ctx.model is not None:
            model = self.registry.find(*ctx.model)
            if model is not None and not self.has_auth(model["provider"]):
                model = None
        if model is None:
            model, scoped_level = initial_model(self.options.provider, self.registry, self.settings,
                                                 [] if existing else self.scoped)
            level = level or scoped_level
        if level is None and existing:
            level = ctx.thinking_level if has_level else self.settings.default_thinking_level or "medium"
        if level is None:
            level = self.thinking_level_for(model, "medium")
        return model, clamp_thinking_level(model, level)

    @functools.cached_property
    def virtual_models(self) -> VirtualModels:
        """The routers of the registered virtual models (made on first use: most sessions have none)."""
        from pi_coding_agent.coding.virtual_models import VirtualModels

        return VirtualModels(self.registry, self.has_auth)

    def available_models(self) -> list[Model]:
        """Models with credentials. Our faux provider (tests and demos; pi 1.6.0 has none) is only
        listed when the command line chose it, so model lists and cycling match pi's."""
        registry = self.registry
        models = [m for p in registry.providers() if self.has_auth(p) for m in registry.available_of(p)]
        chosen = [m for m, _ in self.scoped] + ([self.cli_model[0]] if self.cli_model else [])
        if any(m["provider"] == FAUX_PROVIDER for m in chosen):
            return models
        return [m for m in models if m["provider"] != FAUX_PROVIDER]


def initial_model(
    provider: str | None, registry: ModelRegistry, settings: Settings, scoped: list[tuple[Model, str | None]]
) -> tuple[Model, str | None]:
    """Without ``--model``: the first scoped model, else the configured default or first available one."""
    if scoped:
        return scoped[0]
    chosen = default_model(registry, provider or settings.default_provider, settings.default_model, [])
    return (chosen or PLACEHOLDER_MODEL), None
