"""settings.json: the global file in the agent dir and the project file in ``<cwd>/.pi``.

The project file overrides the global one (nested objects merge; ``defaultTools`` lists made only
of ``+name``/``-name`` entries extend the inherited list). A broken file is reported as a warning
and contributes nothing; a value of the wrong type is reported and dropped, the rest of the file
still applies. Writes (``set_global``) change one key of the global file on disk, keeping every
other key as the file has it at that moment.

Reading and writing the files is ``settings_file``'s; validation imports pydantic, so it runs
only when a file's bytes changed since they were last validated.
"""

from __future__ import annotations

import copy
import math
import os
from pathlib import Path
from typing import Any, NamedTuple

from pi_coding_agent.agent.queues import QUEUE_MODES
from pi_coding_agent.ai.types import JsonObject
from pi_coding_agent.coding.resources.settings_file import (
    pop_dotted,
    read_for_update,
    read_settings_file,
    set_dotted,
    write_json_atomic,
)
from pi_coding_agent.coding.tools.selection import apply_modifiers

SETTINGS_FILE = "settings.json"
PROJECT_DIR = ".pi"
DEFAULT_TOOL_NAMES = ("read", "bash", "edit", "write")
COMPACTION_DEFAULTS = {"reserveTokens": 16384, "keepRecentTokens": 20000}
MAX_SAFE_INTEGER = 2**53 - 1
PROJECT_TRUST_CHOICES = ("always", "never")
TRANSPORTS = ("auto", "sse", "websocket", "websocket-cached")
CACHE_WARMING_MODES = ("off", "streaming", "idle")


class SettingsPath(NamedTuple):
    """A resource entry of a settings file: the entry resolved against that file's base dir.

    ``base_dir`` is ``<agentDir>`` (user scope) or ``<cwd>/.pi`` (project scope); filter entries
    (``!glob``, ``+path``, ``-path``) keep their prefix in ``entry``.
    """

    entry: str
    base_dir: Path
    scope: str  # "user" | "project"


class Settings:
    """Merged view of the global and project settings files (see module docstring)."""

    def __init__(self, agent_dir: Path, cwd: Path, global_data: JsonObject, project_data: JsonObject,
                 warnings: list[str], global_writable: bool = True, overrides: JsonObject | None = None) -> None:
        self.agent_dir = agent_dir
        self.cwd = cwd
        self.global_path = agent_dir / SETTINGS_FILE
        self.project_path = cwd / PROJECT_DIR / SETTINGS_FILE
        self.warnings = warnings
        self._global = global_data
        self._project_file = project_data
        self._overrides = overrides or {}
        self._project = merge_settings(project_data, overrides) if overrides else project_data
        self._global_writable = global_writable
        self._merged = merge_settings(global_data, self._project)
        self._compaction = {field: self._checked_compaction_value(field) for field in COMPACTION_DEFAULTS}

    @classmethod
    def load(cls, agent_dir: Path, cwd: Path, project_trusted: bool) -> Settings:
        """Read both files; the project file only when the project is trusted."""
        warnings: list[str] = []
        cache_dir = agent_dir / ".cache"
        global_data, global_ok = read_settings_file(agent_dir / SETTINGS_FILE, cache_dir, warnings)
        project_data: JsonObject = {}
        if project_trusted:
            project_data, _ = read_settings_file(cwd / PROJECT_DIR / SETTINGS_FILE, cache_dir, warnings)
        return cls(agent_dir, cwd, global_data, project_data, warnings, global_writable=global_ok)

    def with_overrides(self, overrides: JsonObject) -> Settings:
        """These settings with ``overrides`` on top of both files (in memory only; an SDK caller's)."""
        if not overrides:
            return self
        return Settings(self.agent_dir, self.cwd, self._global, self._project_file, self.warnings,
                        global_writable=self._global_writable, overrides=merge_settings(self._overrides, overrides))

    # ------------------------------------------------------------------ generic access

    def effective(self) -> JsonObject:
        """A copy of the merged settings (global, project, overrides): what ``pi.get_settings()`` returns."""
        return copy.deepcopy(self._merged)

    def get(self, dotted_key: str, default: object = None) -> Any:
        """Merged value at ``a.b.c`` (project overrides global), or ``default`` when unset."""
        return _lookup(self._merged, dotted_key, default)

    def layer(self, scope: str) -> JsonObject:
        """One file's own data ("user" or "project"; {} for an untrusted project), not to be changed."""
        return self._global if scope == "user" else self._project

    def get_global(self, dotted_key: str, default: object = None) -> object:
        """Value from the global file only (for global-only settings such as ``defaultProjectTrust``)."""
        return _lookup(self._global, dotted_key, default)

    def get_trusted(self, dotted_key: str, default: object = None) -> object:
        """Value from the user's file or an SDK caller's overrides, never the project file: for the
        settings a project may only narrow (the sandbox), as the model can write the project file."""
        return _lookup(self._overrides, dotted_key, _lookup(self._global, dotted_key, default))

    def get_project(self, dotted_key: str, default: object = None) -> object:
        """Value from the project file only."""
        return _lookup(self._project_file, dotted_key, default)

    def set_global(self, dotted_key: str, value: object) -> None:
        """Set ``a.b.c`` in memory and in ``<agentDir>/settings.json`` (atomic replace).

        The file is re-read first so keys written by another process survive. A global file that
        failed to parse at load is left alone rather than overwritten with a partial view.
        """
        set_dotted(self._global, dotted_key, value)
        self._merged = merge_settings(self._global, self._project)
        if not self._global_writable:
            return
        current = read_for_update(self.global_path)
        if current is None:
            return
        set_dotted(current, dotted_key, value)
        write_json_atomic(self.global_path, current)

    def remove_global(self, dotted_key: str) -> None:
        """Drop ``a.b.c`` from memory and ``<agentDir>/settings.json`` (pi writes an unset value by omitting it)."""
        pop_dotted(self._global, dotted_key)
        self._merged = merge_settings(self._global, self._project)
        current = read_for_update(self.global_path) if self._global_writable else None
        if current is not None and pop_dotted(current, dotted_key):
            write_json_atomic(self.global_path, current)

    # ------------------------------------------------------------------ typed accessors

    @property
    def steering_mode(self) -> str:
        return self._choice("steeringMode", QUEUE_MODES, "one-at-a-time")

    @property
    def follow_up_mode(self) -> str:
        return self._choice("followUpMode", QUEUE_MODES, "one-at-a-time")

    @property
    def npm_command(self) -> list[str] | None:
        """``npmCommand``: the argv run in place of ``npm`` (None: ``npm`` itself)."""
        value = self.get("npmCommand")
        return [str(part) for part in value] if isinstance(value, list) else None

    @property
    def theme(self) -> str | None:
        return self._str("theme")

    @property
    def sandbox_configured(self) -> bool:
        """Whether a ``sandbox`` block is set at all (its policy is read only then)."""
        return self.get("sandbox") is not None

    @property
    def hide_thinking_block(self) -> bool:
        return self._bool("hideThinkingBlock", False)

    @property
    def external_editor(self) -> str | None:
        value = self._str("externalEditor")
        return value if value and value.strip() else None

    @property
    def double_escape_action(self) -> str:
        return self._choice("doubleEscapeAction", ("tree", "fork", "none"), "tree")

    @property
    def default_provider(self) -> str | None:
        return self._str("defaultProvider")

    @property
    def default_model(self) -> str | None:
        return self._str("defaultModel")

    @property
    def model_thinking_levels(self) -> dict[str, str]:
        value = self.get("modelThinkingLevels")
        return dict(value) if isinstance(value, dict) else {}

    @property
    def thinking_budgets(self) -> dict[str, int] | None:
        value = self.get("thinkingBudgets")
        return dict(value) if isinstance(value, dict) else None

    @property
    def enabled_models(self) -> list[str] | None:
        value = self.get("enabledModels")
        return [v for v in value if isinstance(v, str)] if isinstance(value, list) else None

    @property
    def default_tools(self) -> list[str]:
        """Plain names replace the built-in default list; ``+x``/``-x`` then add/remove in order."""
        value = self.get("defaultTools")
        if value is None:
            return list(DEFAULT_TOOL_NAMES)
        entries = [v for v in value if isinstance(v, str)] if isinstance(value, list) else []
        return resolve_tool_entries(entries)

    @property
    def compaction_enabled(self) -> bool:
        return self._bool("compaction.enabled", True)

    @property
    def compaction_reserve_tokens(self) -> int:
        return self._compaction["reserveTokens"]

    @property
    def compaction_keep_recent_tokens(self) -> int:
        return self._compaction["keepRecentTokens"]

    def compaction_tokens_for(self, field: str, provider: str, model_id: str) -> int:
        """``compaction.modelOverrides["provider/id"].<field>`` when valid, else the plain setting."""
        key = f"{provider}/{model_id}"
        overrides = self.get("compaction.modelOverrides")
        entry = overrides.get(key) if isinstance(overrides, dict) else None
        if entry is None:
            return self._compaction[field]
        if not isinstance(entry, dict):
            self._warn_once(f'Invalid compaction.modelOverrides["{key}"] setting: {js_string(entry)}. '
                            "Expected an object.")
            return self._compaction[field]
        value = entry.get(field)
        if value is None:
            return self._compaction[field]
        if not is_non_negative_safe_integer(value):
            self._warn_once(f'Invalid compaction.modelOverrides["{key}"].{field} setting: {js_string(value)}. '
                            "Expected a non-negative safe integer.")
            return self._compaction[field]
        return int(value)

    @property
    def retry_enabled(self) -> bool:
        return self._bool("retry.enabled", True)

    @property
    def retry_max_retries(self) -> int:
        return self._int("retry.maxRetries", 3)

    @property
    def retry_base_delay_ms(self) -> int:
        return self._int("retry.baseDelayMs", 2000)

    @property
    def retry_max_agent_delay_ms(self) -> int:
        return self._int("retry.maxAgentDelayMs", 60000)

    @property
    def http_idle_timeout_ms(self) -> int:
        """0 disables the idle timeout (``0`` or ``"disabled"`` in the file)."""
        timeout = timeout_ms(self.get("httpIdleTimeoutMs"))
        return 300000 if timeout is None else timeout

    @property
    def shell_path(self) -> str | None:
        value = self._str("shellPath")
        return os.path.expanduser(value) if value else None

    @property
    def shell_command_prefix(self) -> str | None:
        return self._str("shellCommandPrefix")

    @property
    def session_dir(self) -> str | None:
        value = self._str("sessionDir")
        return os.path.expanduser(value) if value else None

    @property
    def enable_skill_commands(self) -> bool:
        return self._bool("enableSkillCommands", True)

    @property
    def default_project_trust(self) -> str:
        """Global file only: a project must not be able to trust itself."""
        value = self.get_global("defaultProjectTrust")
        return value if value in PROJECT_TRUST_CHOICES else "ask"

    @property
    def default_thinking_level(self) -> str | None:
        return self._str("defaultThinkingLevel")

    @property
    def branch_summary_reserve_tokens(self) -> int:
        return self._int("branchSummary.reserveTokens", 16384)

    @property
    def images_auto_resize(self) -> bool:
        """Unset means on."""
        value = self.get("images.autoResize")
        return value is None or bool(value)

    @property
    def images_block_images(self) -> bool:
        return bool(self.get("images.blockImages"))

    @property
    def codemode_mode(self) -> str:
        """``only`` hides the declared tools behind codemode; anything else is ``on``."""
        return "only" if self.get("codemode.mode") == "only" else "on"

    @property
    def codemode_inline_budget(self) -> int | None:
        """A non-negative number (floored), else None: the caller's default."""
        value = self.get("codemode.inlineBudget")
        ok = isinstance(value, int | float) and not isinstance(value, bool) and value >= 0 and value == value
        return int(value) if ok else None

    @property
    def transport(self) -> str:
        return self._choice("transport", TRANSPORTS, "auto")

    @property
    def websocket_connect_timeout_ms(self) -> int | None:
        """None when unset; 0 waits without limit (``0`` or ``"disabled"`` in the file)."""
        return timeout_ms(self.get("websocketConnectTimeoutMs"))

    @property
    def provider_timeout_ms(self) -> int | None:
        return self._optional_int("retry.provider.timeoutMs")

    @property
    def provider_max_retries(self) -> int | None:
        return self._optional_int("retry.provider.maxRetries")

    @property
    def provider_max_retry_delay_ms(self) -> int | None:
        return self._optional_int("retry.provider.maxRetryDelayMs")

    @property
    def enable_install_telemetry(self) -> object:
        """As written (``ai.identity.install_telemetry_enabled`` weighs it against ``PI_TELEMETRY``)."""
        return self.get("enableInstallTelemetry")

    @property
    def acp_default_mode(self) -> str | None:
        return self._str("acp.defaultMode")

    @property
    def http_proxy(self) -> str | None:
        """Global file only, stripped."""
        value = self.get_global("httpProxy")
        return value.strip() or None if isinstance(value, str) else None

    @property
    def cache_warming(self) -> str:
        """Global file only."""
        value = self.get_global("cacheWarming")
        return value if value in CACHE_WARMING_MODES else "idle"

    @property
    def device_id(self) -> str | None:
        """The installation's id (global file only)."""
        value = self.get_global("deviceId")
        return value if isinstance(value, str) and value else None

    @property
    def extensions(self) -> list[SettingsPath]:
        return self.resource_paths("extensions")

    @property
    def skills(self) -> list[SettingsPath]:
        return self.resource_paths("skills")

    @property
    def prompts(self) -> list[SettingsPath]:
        return self.resource_paths("prompts")

    def resource_paths(self, kind: str) -> list[SettingsPath]:
        """Entries of ``kind`` from both files, project first (project resources win name collisions)."""
        layers = ((self._project, self.cwd / PROJECT_DIR, "project"), (self._global, self.agent_dir, "user"))
        out: list[SettingsPath] = []
        for data, base_dir, scope in layers:
            entries = data.get(kind)
            if isinstance(entries, list):
                out.extend(SettingsPath(e, base_dir, scope) for e in entries if isinstance(e, str))
        return out

    # ------------------------------------------------------------------ helpers

    def _str(self, key: str) -> str | None:
        value = self.get(key)
        return value if isinstance(value, str) and value else None

    def _bool(self, key: str, default: bool) -> bool:
        value = self.get(key)
        return value if isinstance(value, bool) else default

    def _int(self, key: str, default: int) -> int:
        value = self.get(key)
        return int(value) if is_non_negative_safe_integer(value) else default

    def _optional_int(self, key: str) -> int | None:
        value = self.get(key)
        return int(value) if is_non_negative_safe_integer(value) else None

    def _choice(self, key: str, choices: tuple[str, ...], default: str) -> str:
        value = self.get(key)
        return value if value in choices else default

    def _checked_compaction_value(self, field: str) -> int:
        value = self.get(f"compaction.{field}")
        if value is None:
            return COMPACTION_DEFAULTS[field]
        if not is_non_negative_safe_integer(value):
            self._warn_once(f"Invalid compaction.{field} setting: {js_string(value)}. "
                            "Expected a non-negative safe integer.")
            return COMPACTION_DEFAULTS[field]
        return int(value)

    def _warn_once(self, message: str) -> None:
        line = f"Warning: {message}"
        if line not in self.warnings:
            self.warnings.append(line)


# ---------------------------------------------------------------------- merging


def _lookup(node: object, dotted_key: str, default: object) -> object:
    for part in dotted_key.split("."):
        if not isinstance(node, dict) or part not in node:
            return default
        node = node[part]
    return node


def merge_settings(base: JsonObject, overrides: JsonObject) -> JsonObject:
    """Deep merge, plus pi's rule for ``defaultTools`` (a modifier-only list extends the base list)."""
    merged = _deep_merge(base, overrides)
    tools = _merge_default_tools(base.get("defaultTools"), overrides.get("defaultTools"))
    if tools is not None:
        merged["defaultTools"] = tools
    return merged


def _deep_merge(base: JsonObject, overrides: JsonObject) -> JsonObject:
    result = dict(base)
    for key, value in overrides.items():
        current = result.get(key)
        if isinstance(current, dict) and isinstance(value, dict):
            result[key] = _deep_merge(current, value)
        else:
            result[key] = value
    return result


def is_tool_modifier(entry: str) -> bool:
    return entry.startswith(("+", "-"))


def _merge_default_tools(base: object, overrides: object) -> object:
    if overrides is None:
        return base
    if isinstance(base, list) and isinstance(overrides, list) and all(
        isinstance(e, str) and is_tool_modifier(e) for e in overrides
    ):
        return [*base, *overrides]
    return overrides


def resolve_tool_entries(entries: list[str]) -> list[str]:
    """Plain names (or the default list when there are none) then ``+x``/``-x`` applied in order."""
    plain = [e for e in entries if not is_tool_modifier(e)]
    tools = plain if plain or not entries else list(DEFAULT_TOOL_NAMES)
    return apply_modifiers(tools, [e for e in entries if is_tool_modifier(e)])


# ---------------------------------------------------------------------- values


def timeout_ms(value: object) -> int | None:
    """A timeout setting as pi reads it: a non-negative number (whole milliseconds) or ``"disabled"`` (0)."""
    if isinstance(value, str):
        text = value.strip()
        if text.lower() == "disabled":
            return 0
        try:
            value = float(text) if text else None
        except ValueError:
            return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value < 0:
        return None
    return math.floor(value)


def is_non_negative_safe_integer(value: object) -> bool:
    """JavaScript's ``Number.isSafeInteger(v) && v >= 0`` (``2.0`` counts, ``True`` does not)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    if isinstance(value, float) and not value.is_integer():
        return False
    return 0 <= value <= MAX_SAFE_INTEGER


def js_string(value: object) -> str:
    """``String(value)`` as JavaScript prints it, so error texts match pi's."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e21:
        return str(int(value))
    if isinstance(value, list):
        return ",".join("" if v is None else js_string(v) for v in value)
    if isinstance(value, dict):
        return "[object Object]"
    return str(value)
