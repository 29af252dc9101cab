"""What ``Session.run`` returns: the run's final text, its messages, tokens, cost and why it stopped."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from pi_coding_agent.agent.events import AgentMessage
from pi_coding_agent.ai.stream import ProviderError
from pi_coding_agent.coding.events import AgentEvent
from pi_coding_agent.coding.messages import last_assistant, last_assistant_text


@dataclass(frozen=True)
class Usage:
    """Tokens a run spent, summed over its assistant messages (``cache_*``: prompt-cache reads and writes)."""

    input: int = 0
    output: int = 0
    cache_read: int = 0
    cache_write: int = 0

    @property
    def total_tokens(self) -> int:
        return self.input + self.output + self.cache_read + self.cache_write


@dataclass(frozen=True)
class RunResult:
    """One prompt's run, from its start to its ``agent_settled``.

    ``stop_reason`` is the last assistant message's (``"stop"``, ``"length"``, ``"toolUse"``,
    ``"error"``, ``"aborted"``), or ``"max_turns"`` / ``"max_cost"`` when a limit of ``run`` ended it;
    ``error`` is the provider's error text when the run ended in one.
    """

    text: str
    messages: list[AgentMessage]
    usage: Usage
    cost: float
    stop_reason: str
    error: str | None = None
    aborted: bool = False
    turns: int = 0


class RunError(ProviderError):
    """``run`` ended in a provider error; ``result`` is what the run produced up to it."""

    def __init__(self, result: RunResult) -> None:
        super().__init__(result.error or "The run failed")
        self.result = result


@dataclass
class RunRecorder:
    """Collects a run's finished messages and turns from its events (a ``subscribe`` listener)."""

    messages: list[AgentMessage] = field(default_factory=list)
    turns: int = 0
    cost: float = 0.0
    aborted: bool = False

    def __call__(self, event: AgentEvent) -> None:
        if event["type"] == "message_end":
            message = event["message"]
            self.messages.append(message)
            if message["role"] == "assistant":
                self.cost += message.get("usage", {}).get("cost", {}).get("total", 0.0)
        elif event["type"] == "turn_start":
            self.turns += 1
        elif event["type"] == "agent_settled":
            self.aborted = event["aborted"]

    def result(self, limit_hit: str | None) -> RunResult:
        last = last_assistant(self.messages)
        stop_reason = limit_hit or ("aborted" if self.aborted else last["stopReason"] if last else "stop")
        error = last.get("errorMessage") if last is not None and last["stopReason"] == "error" else None
        return RunResult(text=last_assistant_text(self.messages) or "", messages=self.messages, usage=_usage(self.messages),
                         cost=self.cost, stop_reason=stop_reason, error=error, aborted=self.aborted,
                         turns=self.turns)


def _usage(messages: list[AgentMessage]) -> Usage:
    totals = {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0}
    for message in messages:
        if message["role"] != "assistant":
            continue
        usage: Mapping[str, object] = message.get("usage", {})
        for key in totals:
            value = usage.get(key, 0)
            totals[key] += value if isinstance(value, int) else 0
    return Usage(totals["input"], totals["output"], totals["cacheRead"], totals["cacheWrite"])
