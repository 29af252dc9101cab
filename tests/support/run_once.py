"""One run of a side (ours or the reference) shared by the tests that read it.

Many subjects have a test of our pi alone and a comparison with the reference that plays the same
conversation on our side again. A ``RunOnce`` keeps each run per process under a key of its inputs;
the tests that share a run also share an xdist group (``shared_run``), so that they meet in one
worker. A test run alone still plays what it reads: nothing depends on the order of the tests.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Awaitable, Callable, Hashable
from pathlib import Path
from typing import Any, Generic, TypeVar

import pytest

T = TypeVar("T")


class RunOnce(Generic[T]):
    """Runs kept per process by key; ``get`` gives each caller its own copy of the run."""

    def __init__(self) -> None:
        self._runs: dict[Hashable, T] = {}

    async def get(self, key: Hashable, run: Callable[[], Awaitable[T]], copied: bool = True) -> T:
        """The run under ``key``, made by ``run`` the first time; ``copied=False`` for runs that hold
        live objects (a server): callers then only read it."""
        if key not in self._runs:
            self._runs[key] = await run()
        return copy.deepcopy(self._runs[key]) if copied else self._runs[key]


def shared_run(name: str) -> pytest.MarkDecorator:
    """The xdist group of the tests that read one shared run (``--dist loadgroup``, set in pyproject)."""
    return pytest.mark.xdist_group(f"shared-run-{name}")


_OUTCOMES: RunOnce[Any] = RunOnce()


async def ours_once(outcome: Callable[..., Awaitable[T]], root: Path, *inputs: Any) -> T:
    """``outcome("ours", root, *inputs)``, played once per process for the same ``outcome`` and
    ``inputs`` (compared as JSON): for a test of ours alone and its comparison, which read the same outcome."""
    key = (outcome, json.dumps(inputs, sort_keys=True, default=repr))
    run: T = await _OUTCOMES.get(key, lambda: outcome("ours", root, *inputs))
    return run
