"""``diagnostics`` on assistant messages: what a provider reports having done to the request.

pi keeps these in the message (and so in the session) under ``diagnostics``, one entry per report:
``{"type": ..., "timestamp": ..., "details": {"transformations": [...]}}``. The providers' own
field names are kept; a field the provider left out is left out here too.
"""

from __future__ import annotations

from typing import Any

from pi_coding_agent.ai.types import JsonObject, now_ms


def append_transformations(message: Any, kind: str, transformations: list[Any],
                           fields: tuple[str, ...]) -> None:
    """Record ``transformations`` (each reduced to ``fields``) as one diagnostic of type ``kind``."""
    if not transformations:
        return
    kept = [{f: t[f] for f in fields if isinstance(t, dict) and t.get(f) is not None} for t in transformations]
    append_diagnostic(message, {"type": kind, "timestamp": now_ms(), "details": {"transformations": kept}})


def append_diagnostic(message: Any, diagnostic: JsonObject) -> None:
    message["diagnostics"] = [*(message.get("diagnostics") or []), diagnostic]
