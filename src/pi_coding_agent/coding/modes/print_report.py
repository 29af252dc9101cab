"""What ``pi -p`` tells the person at the terminal while it waits and when a reply fails (stderr only).

pi 1.6.0's print mode is silent during retries and prints only the bare error text at the end, so a
request that is retried for a quarter of a minute looks like a hang. Here every retry is announced as it
is scheduled, and a failure is one line naming the provider, the model and the cause; stdout still
carries only the answer (including whatever text had streamed before the failure).
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

from pi_coding_agent.ai.types import AssistantMessage
from pi_coding_agent.coding.events import AgentEvent, AutoRetryStartEvent

if TYPE_CHECKING:
    from pi_coding_agent.coding.agent_session import AgentSession


def attach_retry_report(session: AgentSession) -> None:
    session.subscribe(report_retries)


def report_retries(event: AgentEvent) -> None:
    """Session listener: one stderr line per scheduled retry (attempt, delay, cause)."""
    if event["type"] == "auto_retry_start":
        print(retry_line(event), file=sys.stderr, flush=True)


def retry_line(event: AutoRetryStartEvent) -> str:
    seconds = event["delayMs"] / 1000
    delay = f"{seconds:g}s" if seconds >= 1 else f"{event['delayMs']}ms"
    return (f"Retrying (attempt {event['attempt']}/{event['maxAttempts']}) in {delay}: "
            f"{_one_line(event['errorMessage'])}")


def failure_line(message: AssistantMessage) -> str:
    """``Error: <provider>/<model>: <cause>`` for an assistant message that ended in error or abort."""
    stop_reason = message.get("stopReason")
    cause = _one_line(message.get("errorMessage") or f"Request {stop_reason}")
    return f"Error: {message.get('provider', '?')}/{message.get('model', '?')}: {cause}"


def _one_line(text: str) -> str:
    return " ".join(str(text).split())
