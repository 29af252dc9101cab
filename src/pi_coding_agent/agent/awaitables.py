"""Hooks and handlers may be plain functions or coroutines; this is the one place that tells them apart."""

from __future__ import annotations

import inspect
from collections.abc import Awaitable
from typing import TypeVar

T = TypeVar("T")


async def maybe_await(value: T | Awaitable[T]) -> T:
    """``value`` itself, or what it resolves to when it is awaitable."""
    if inspect.isawaitable(value):
        return await value
    return value
