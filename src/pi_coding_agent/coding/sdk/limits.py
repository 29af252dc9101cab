"""``max_turns`` / ``max_cost`` of one ``Session.run``: counted from the run's events, enforced at its tool calls.

A run only goes on after a reply that asked for tools, so the limit is checked where those calls
start: once it is reached they are not run, their results say why, and the run ends after that
turn (no further request) with ``stop_reason`` naming the limit.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from pi_coding_agent.coding.sdk.result import RunRecorder


@dataclass
class RunLimits:
    """The limits of the current run, checked against what its ``RunRecorder`` has counted."""

    max_turns: int | None = None
    max_cost: float | None = None
    record: RunRecorder = field(default_factory=RunRecorder)
    hit: str | None = None  # "max_turns" | "max_cost" once a tool call was refused for it

    def refusal(self) -> str | None:
        """Why the next tool call must not run, or None; records which limit ended the run."""
        if self.max_turns is not None and self.record.turns >= self.max_turns:
            self.hit = "max_turns"
            return f"Not run: this run reached its max_turns limit ({self.max_turns})."
        if self.max_cost is not None and self.record.cost >= self.max_cost:
            self.hit = "max_cost"
            return f"Not run: this run reached its max_cost limit ({self.max_cost:g})."
        return None


def check_limits(max_turns: int | None, max_cost: float | None) -> None:
    """Refuse limits that could never let a run start."""
    from pi_coding_agent.coding.errors import ConfigurationError

    if max_turns is not None and max_turns < 1:
        raise ConfigurationError(f"max_turns must be at least 1, got {max_turns}")
    if max_cost is not None and max_cost <= 0:
        raise ConfigurationError(f"max_cost must be positive, got {max_cost}")
