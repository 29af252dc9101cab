"""Auto-retry policy for transient provider errors.

Kept apart from the session so the decision ("will this failure be retried, after how long?") is a
pure function of the settings, the attempt counter and the failed message; ``RetrySeries`` adds the
events and the cancellable back-off of a session's series.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from pi_coding_agent.ai.abort import AbortSignal, sleep_abortable
from pi_coding_agent.ai.errors import is_retryable_error
from pi_coding_agent.ai.records import record
from pi_coding_agent.ai.types import AssistantMessage
from pi_coding_agent.coding.events import AgentEvent, AutoRetryEndEvent

RETRY_CANCELLED = "Retry cancelled"


@record
class RetrySettings:
    """The ``retry`` settings: whether failed requests are retried, how often and how long apart."""

    enabled: bool = True
    max_retries: int = 3
    base_delay_ms: int = 2000
    max_delay_ms: int = 60000


@record
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


class RetrySeries(RetryState):
    """A session's retry series as clients see it: ``auto_retry_start`` before each back-off, one
    ``auto_retry_end`` when the series ends, and a back-off that ``abort_retry`` cuts short."""

    def __init__(self, settings: RetrySettings, emit: Callable[[AgentEvent], None]) -> None:
        super().__init__(settings)
        self.emit = emit
        self._signal: AbortSignal | None = None

    def announce(self, failed: Mapping[str, Any], retry_after_ms: int | None) -> int:
        """Start the next attempt's back-off: its delay in ms, after the ``auto_retry_start`` event."""
        delay = self.next_delay_ms(retry_after_ms)
        self.emit({"type": "auto_retry_start", "attempt": self.attempt, "maxAttempts": self.settings.max_retries,
                   "delayMs": delay, "errorMessage": failed.get("errorMessage") or "Unknown error"})
        return delay

    async def back_off(self, delay_ms: int, aborted: Callable[[], bool]) -> bool:
        """Wait out the delay; False (and the series ended) when it was cancelled or the run aborted."""
        self._signal = AbortSignal()
        completed = await sleep_abortable(delay_ms / 1000, self._signal)
        self._signal = None
        if not completed or aborted():
            self.end(RETRY_CANCELLED)
            return False
        return True

    def succeeded(self) -> None:
        self.emit({"type": "auto_retry_end", "success": True, "attempt": self.reset()})

    def end(self, final_error: str | None) -> None:
        """``auto_retry_end{success:false}`` once per failed or cancelled series (no-op outside one)."""
        if not self.attempt:
            return
        event: AutoRetryEndEvent = {"type": "auto_retry_end", "success": False, "attempt": self.reset()}
        if final_error is not None:
            event["finalError"] = final_error
        self.emit(event)

    def cancel(self) -> None:
        """Cut a pending back-off short; the series ends now, so its event precedes the command's response."""
        if self._signal is not None:
            self._signal.abort()
            self.end(RETRY_CANCELLED)
