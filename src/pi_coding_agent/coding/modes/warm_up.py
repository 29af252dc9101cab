"""Loading the provider stack in the background, so that the first prompt does not wait for it.

A process's first request imports the HTTP client (aiohttp, with ``ssl``) and the model's wire adapter, and for an ``https://`` endpoint builds the
TLS context; its first prompt imports the built-in tools' modules and the system prompt's builder
(which start-up leaves out): tens of ms of CPU that would sit between ``prompt`` and its first event. The front ends call ``warm_up_after_first_answer`` once their first command has
been answered; a daemon thread then does that work while the event loop waits for input. Sessions
whose model has no credentials (nothing could be sent) skip it, and keep their idle memory.
"""

from __future__ import annotations

import sys
import threading
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pi_coding_agent.ai.types import Model

# While the thread imports, a thread woken by input gets the GIL within this (default: 5 ms).
SWITCH_INTERVAL_S = 0.0005


def warm_up_after_first_answer(model: Model | None, has_credentials: bool,
                               also: tuple[str, ...] = ()) -> threading.Thread | None:
    """Start warming ``model``'s provider stack (and the modules ``also`` names, what the front end
    draws an answer with); None when there is nothing a request could use."""
    if model is None or not has_credentials:
        return None
    thread = threading.Thread(target=_warm, args=(model, also), name="pi-warm-up", daemon=True)
    thread.start()
    return thread


def _warm(model: Model, also: tuple[str, ...]) -> None:
    previous = sys.getswitchinterval()
    sys.setswitchinterval(min(previous, SWITCH_INTERVAL_S))
    try:
        import importlib

        from pi_coding_agent.ai.stream import load_adapter
        from pi_coding_agent.ai.transport.http import warm_up
        from pi_coding_agent.coding.tools.builtin import tool_modules

        load_adapter(model["api"], model["provider"])
        warm_up(model.get("baseUrl", ""))
        for module in ("pi_coding_agent.coding.resources.system_prompt", *tool_modules(), *also):
            importlib.import_module(module)  # thread-safe: the first prompt then finds them loaded
    except Exception:  # only a head start: the first request meets and reports the same failure
        pass
    finally:
        sys.setswitchinterval(previous)
