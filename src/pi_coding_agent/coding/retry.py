"""Auto-retry policy for transient provider errors.

Kept apart from the session so the decision ("will this failure be retried, after how long?") is a
pure function of the settings, the attempt counter and the failed message.
"""

from __future__ import annotations

from dataclasses import dataclass

from pi_coding_agent.ai.errors import is_retryable_error
from pi_coding_agent.ai.types import AssistantMessage


@dataclass
class RetrySettings:
    enabled: bool = True
    max_retries: int = 3
    base_delay_ms: int = 2000
    max_delay_ms: int = 60000


@dataclass
class RetryState:
    """The attempt counter of one retry series (reset by a success or a final failure)."""

    settings: RetrySettings
    attempt: int = 0

    def will_retry(self, message: AssistantMessage | None, aborted: bool) -> bool:
        """True when ``message`` failed transiently and the budget allows another attempt."""
        return (
            self.settings.enabled
            and not aborted
            and message is not None
            and message.get("stopReason") == "error"
            and self.attempt < self.settings.max_retries
            and is_retryable_error(message)
        )

    def next_delay_ms(self, retry_after_ms: int | None = None) -> int:
        """Advance the counter and return the back-off for this attempt.

        Exponential (base·2^(n-1), capped); a server-sent ``retry-after`` shorter than the cap wins
        when it is longer than our own back-off, so we never hammer a provider that asked us to wait.
        """
        self.attempt += 1
        delay = min(self.settings.base_delay_ms * 2 ** (self.attempt - 1), self.settings.max_delay_ms)
        if retry_after_ms is not None and delay < retry_after_ms <= self.settings.max_delay_ms:
            delay = retry_after_ms
        return delay

    def reset(self) -> int:
        """End the series; returns the attempt number it reached."""
        attempt, self.attempt = self.attempt, 0
        return attempt
