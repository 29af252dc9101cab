"""State provider adapters keep per session between requests, freed when the session ends.

pi frees it whenever a session is replaced (new, resume, fork) or closed, so a session opened
again later starts clean (its provider threads are started anew). Only adapters already loaded
can hold any, so nothing is imported here.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

# loaded adapter module -> its function that forgets one session
_CLEANUPS = (("pi_coding_agent.ai.apis.anthropic_threads", "forget"),
             ("pi_coding_agent.ai.apis.strict_schema", "forget"),
             ("pi_coding_agent.ai.apis.codex_websocket", "end_session"))


def _loaded(module_name: str, function: str) -> Callable[..., Any] | None:
    """``function`` of the module when it is loaded. A module still executing in another thread
    (the warm-up thread imports the adapters while the loop runs) is in ``sys.modules`` before its
    functions exist; it cannot hold a session's state yet, so it is skipped like an absent one."""
    module = sys.modules.get(module_name)
    return getattr(module, function, None) if module is not None else None


def end_session(session_id: str | None) -> None:
    """Forget what the loaded adapters remember about ``session_id``: Anthropic threads, the
    strict-tools refusal memory, the Codex session sockets (pi's three session cleanups)."""
    if session_id is None:
        return
    for module_name, function in _CLEANUPS:
        cleanup = _loaded(module_name, function)
        if cleanup is not None:
            cleanup(session_id)


async def close_all() -> None:
    """At shutdown: close the sockets the Codex adapter keeps open for a session's next turn."""
    close = _loaded("pi_coding_agent.ai.apis.codex_websocket", "close_all")
    if close is not None:
        await close()
