"""Waits whose length the environment may change, read per call: pi's values by default, shorter
ones for tests that exercise the wait itself, longer ones for a slow machine."""

from __future__ import annotations

import os


def env_seconds(name: str, default: float) -> float:
    """``name`` as a positive number of seconds, else ``default``."""
    try:
        value = float(os.environ.get(name, ""))
    except ValueError:
        return default
    return value if 0 < value < float("inf") else default
