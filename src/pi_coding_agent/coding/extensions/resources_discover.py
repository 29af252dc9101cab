"""``resources_discover``: extensions add skill and prompt-template paths after ``session_start``.

Each handler gets ``{type, cwd, reason}`` (``reason`` is ``startup``; pi's ``reload`` has no RPC
command here) and may return ``{"skillPaths": [...], "promptPaths": [...], "themePaths": [...]}``.
The paths load like ``--skill``/``--prompt-template`` ones (relative to the working directory) and
join the session's resources after those already there (a name that exists keeps its first
definition); ``sourceInfo`` names the extension (``extension:<file stem>``), as in pi.

``themePaths`` are accepted and not read. pi 1.6.0 loads and validates them into its resource
loader, but outside its terminal UI nothing reads that back: the diagnostics are never printed,
``get_commands`` does not list themes and ``ctx.ui``'s theme calls answer the same with or without
them (``extensions/ui.HeadlessThemes``). Loading them here would change nothing anyone can observe.
"""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pi_coding_agent.coding.extensions.dispatch import FAILED

if TYPE_CHECKING:
    from pi_coding_agent.coding.extensions.dispatch import Dispatcher
    from pi_coding_agent.coding.extensions.registry import Extension
    from pi_coding_agent.coding.runtime import SessionRuntime

Found = dict[str, list[tuple[str, str]]]  # result key -> (path, extension path)
KEYS = ("skillPaths", "promptPaths")  # themePaths: see the module docstring


async def discover_resources(dispatcher: Dispatcher, reason: str = "startup") -> None:
    """Ask the handlers for paths and add what they name to the session's skills and templates."""
    if not dispatcher.has_handlers("resources_discover"):
        return
    rt = dispatcher.rt
    event = {"type": "resources_discover", "cwd": str(rt.cwd), "reason": reason}

    def collect(found: Found, result: object, ext: Extension) -> Found:
        if isinstance(result, dict) and result is not FAILED:
            for key in KEYS:
                paths = result.get(key)
                if isinstance(paths, list):
                    found[key].extend((str(p), ext.path) for p in paths if isinstance(p, str | Path))
        return found

    empty: Found = {key: [] for key in KEYS}
    found = await dispatcher.chain("resources_discover", empty, lambda _: event, collect)
    if found["skillPaths"] or found["promptPaths"]:
        _add_found(rt, found)


def _add_found(rt: SessionRuntime, found: Found) -> None:
    """Load what the handlers named (the readers are imported only when one named something)."""
    from pi_coding_agent.coding.resources.prompt_templates import load_prompt_templates
    from pi_coding_agent.coding.resources.skills import load_skills

    resources = rt.resources
    for path, ext_path in found["skillPaths"]:
        skills, warnings = load_skills(rt.agent_dir, rt.cwd, rt.project_trusted, [path], [], include_defaults=False)
        for warning in warnings:
            print(warning, file=sys.stderr)
        taken = {s.name for s in resources.skills}
        resources.skills.extend(replace(s, **_origin(ext_path)) for s in skills if s.name not in taken)
    for path, ext_path in found["promptPaths"]:
        templates = load_prompt_templates(rt.agent_dir, rt.cwd, rt.project_trusted, [path], [], include_defaults=False)
        taken = {t.name for t in resources.templates}
        resources.templates.extend(replace(t, **_origin(ext_path)) for t in templates if t.name not in taken)


def _origin(extension_path: str) -> dict[str, Any]:
    """The ``sourceInfo`` parts pi gives resources an extension contributed."""
    path = Path(extension_path)
    synthetic = extension_path.startswith("<")
    stem = extension_path.strip("<>") if synthetic else (path.parent.name if path.name == "__init__.py" else path.stem)
    return {"source": f"extension:{stem}", "scope": "temporary", "source_base_dir": None if synthetic else path.parent}
