"""Hooks and handlers may be plain functions or coroutines; this is the one place that tells them apart."""

from __future__ import annotations

from collections.abc import Awaitable
from typing import Any, TypeGuard, TypeVar

T = TypeVar("T")


def is_awaitable(value: object) -> TypeGuard[Awaitable[Any]]:
    """A coroutine, task, future or any object with ``__await__``: what ``inspect.isawaitable`` accepts
    but legacy generator-based coroutines (``inspect`` itself is not loaded by a start-up)."""
    return isinstance(value, Awaitable)


async def maybe_await(value: T | Awaitable[T]) -> T:
    """``value`` itself, or what it resolves to when it is awaitable."""
    if isinstance(value, Awaitable):
        return await value
    return value
