"""pydantic schema of settings.json (imported only when a settings file changed since last validated).

Only the keys this agent reads are typed; unknown keys (TUI options, newer settings) pass through.
Types are strict so that ``"3"`` is not silently taken for ``3``. ``compaction`` token numbers are
checked by ``settings.py`` itself because pi words those errors in its own way.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from pi_coding_agent.agent.queues import QueueMode
from pi_coding_agent.ai.config_validation import ConfigError, format_location
from pi_coding_agent.ai.types import JsonObject


class _Lenient(BaseModel):
    model_config = ConfigDict(extra="allow", strict=True)


class RetryProvider(_Lenient):
    timeoutMs: int | None = None
    maxRetries: int | None = None
    maxRetryDelayMs: int | None = None


class Retry(_Lenient):
    enabled: bool | None = None
    maxRetries: int | None = None
    baseDelayMs: int | None = None
    maxAgentDelayMs: int | None = None
    provider: RetryProvider | None = None


class Compaction(_Lenient):
    enabled: bool | None = None
    reserveTokens: Any = None
    keepRecentTokens: Any = None
    modelOverrides: JsonObject | None = None


class BranchSummary(_Lenient):
    reserveTokens: int | None = None
    skipPrompt: bool | None = None


class Images(_Lenient):
    autoResize: bool | None = None
    blockImages: bool | None = None


class SettingsFile(_Lenient):
    defaultProvider: str | None = None
    defaultModel: str | None = None
    defaultThinkingLevel: Literal["off", "minimal", "low", "medium", "high", "xhigh", "max"] | None = None
    modelThinkingLevels: dict[str, str] | None = None
    thinkingBudgets: dict[str, int] | None = None
    enabledModels: list[str] | None = None
    steeringMode: QueueMode | None = None
    followUpMode: QueueMode | None = None
    defaultTools: list[str] | None = None
    compaction: Compaction | None = None
    branchSummary: BranchSummary | None = None
    retry: Retry | None = None
    httpIdleTimeoutMs: int | str | None = None
    sessionDir: str | None = None
    shellPath: str | None = None
    shellCommandPrefix: str | None = None
    enableSkillCommands: bool | None = None
    packages: list[str | JsonObject] | None = None
    extensions: list[str] | None = None
    skills: list[str] | JsonObject | None = None
    prompts: list[str] | None = None
    themes: list[str] | None = None
    defaultProjectTrust: Literal["ask", "always", "never"] | None = None
    transport: Literal["auto", "sse", "websocket", "websocket-cached"] | None = None
    images: Images | None = None


class SettingsError(ConfigError):
    """Invalid values; ``bad_keys`` are the top-level keys to drop so the rest of the file still applies."""

    def __init__(self, messages: list[str], bad_keys: set[str]) -> None:
        super().__init__(messages)
        self.bad_keys = bad_keys


def validate_settings(data: Any) -> None:
    """Raise ``ConfigError`` (not an object) or ``SettingsError`` (``<key path>: <problem>`` lines)."""
    if not isinstance(data, dict):
        raise ConfigError("expected a JSON object")
    try:
        SettingsFile.model_validate(data)
    except ValidationError as exc:
        errors = exc.errors()
        raise SettingsError(
            [f"{format_location(tuple(err['loc']))}: {err['msg']}" for err in errors],
            {str(err["loc"][0]) for err in errors if err["loc"]},
        ) from None
