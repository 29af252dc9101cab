"""State provider adapters keep per session between requests, freed when the session ends.

pi frees it whenever a session is replaced (new, resume, fork) or closed, so a session opened
again later starts clean (its provider threads are started anew). Only adapters already loaded
can hold any, so nothing is imported here.
"""

from __future__ import annotations

import sys

# loaded adapter module -> its function that forgets one session
_CLEANUPS = (("pi_coding_agent.ai.providers.anthropic_threads", "forget"),
             ("pi_coding_agent.ai.providers.strict_schema", "forget"),
             ("pi_coding_agent.ai.providers.codex_websocket", "end_session"))


def end_session(session_id: str | None) -> None:
    """Forget what the loaded adapters remember about ``session_id``: Anthropic threads, the
    strict-tools refusal memory, the Codex session sockets (pi's three session cleanups)."""
    if session_id is None:
        return
    for module_name, function in _CLEANUPS:
        module = sys.modules.get(module_name)
        if module is not None:
            getattr(module, function)(session_id)
