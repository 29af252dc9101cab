"""State provider adapters keep per session between requests, freed when the session ends.

pi frees it whenever a session is replaced (new, resume, fork) or closed, so a session opened
again later starts clean (its provider threads are started anew). Only adapters already loaded
can hold any, so nothing is imported here.
"""

from __future__ import annotations

import sys


def end_session(session_id: str | None) -> None:
    """Forget what the loaded adapters remember about ``session_id``."""
    threads = sys.modules.get("pi_coding_agent.ai.providers.anthropic_threads")
    if threads is not None and session_id is not None:
        threads.forget(session_id)
