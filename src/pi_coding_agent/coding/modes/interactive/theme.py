"""Themes: pi's theme file format (``name``, ``vars``, ``colors``) resolved to colours Rich and Textual take.

The built-in ``dark`` and ``light`` palettes are ours; a user theme is read from
``<agent-dir>/themes/<name>.json`` (or the project's ``.pi/themes``, or a settings ``themes`` entry,
unless ``pi config`` switched it off) or a ``--theme`` file and may write colours as ``#rrggbb``, a
256-colour index, a variable name, ``""`` (the terminal default) or ``okhsl(h s% l%)``, which is
converted here as the HSL colour with the same numbers (close, not identical: see
docs/interactive.md).
"""

from __future__ import annotations

import colorsys
import json
import re
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pi_coding_agent.coding.modes.interactive.blocks import Palette

if TYPE_CHECKING:
    from pi_coding_agent.coding.runtime import SessionRuntime

DARK: Palette = {
    "appearance": "dark", "accent": "#c58af0", "border": "#7f95f0", "borderAccent": "#c27fe8",
    "borderMuted": "#7c8090", "success": "#6fe0b0", "error": "#f08a72", "warning": "#d8e060", "muted": "#a3a7b5",
    "dim": "#888c99", "text": "#e2e3e6", "thinkingText": "#9ca0ab", "selectedBg": "#2b3566",
    "userMessageBg": "#2b3566", "userMessageText": "#e2e3e6", "customMessageBg": "#4a2b5a",
    "customMessageText": "#a3a7b5", "toolPendingBg": "#35373d", "toolSuccessBg": "#1f4a3a",
    "toolErrorBg": "#5a2a22", "toolTitle": "#e2e3e6", "toolOutput": "#a3a7b5", "toolDiffAdded": "#6fe0b0",
    "toolDiffRemoved": "#f08a72", "toolDiffContext": "#a3a7b5", "bashMode": "#6fe8b8",
}
LIGHT: Palette = {
    "appearance": "light", "accent": "#8a3fb8", "border": "#3f56c0", "borderAccent": "#8a3fb8",
    "borderMuted": "#9a9ead", "success": "#1d7a52", "error": "#b8432a", "warning": "#8a7a00", "muted": "#5d6170",
    "dim": "#7a7e8a", "text": "#1e1f24", "thinkingText": "#62666f", "selectedBg": "#d8def8",
    "userMessageBg": "#e4e8fa", "userMessageText": "#1e1f24", "customMessageBg": "#f0e2f6",
    "customMessageText": "#5d6170", "toolPendingBg": "#ececef", "toolSuccessBg": "#dcf2e6",
    "toolErrorBg": "#f8e0da", "toolTitle": "#1e1f24", "toolOutput": "#5d6170", "toolDiffAdded": "#1d7a52",
    "toolDiffRemoved": "#b8432a", "toolDiffContext": "#5d6170", "bashMode": "#1d7a52",
}
BUILT_IN = {"dark": DARK, "light": LIGHT, "system": DARK}

_OKHSL = re.compile(r"okhsl\(\s*([\d.]+)\s+([\d.]+)%\s+([\d.]+)%\s*\)")


class ThemeError(Exception):
    pass


def _colour(value: Any, variables: dict[str, Any], depth: int = 0) -> str | None:
    """One colour value as ``#rrggbb`` / ``colorN`` / None (the terminal default)."""
    if isinstance(value, int):
        return f"color({value})"
    if not isinstance(value, str) or value == "":
        return None
    if value.startswith("#"):
        return value
    match = _OKHSL.fullmatch(value.strip())
    if match:
        h, s, lightness = (float(g) for g in match.groups())
        r, g, b = colorsys.hls_to_rgb(h / 360, lightness / 100, s / 100)
        return f"#{round(r * 255):02x}{round(g * 255):02x}{round(b * 255):02x}"
    if value in variables and depth < 10:
        return _colour(variables[value], variables, depth + 1)
    raise ThemeError(f"unknown colour {value!r}")


def palette_from_theme(data: dict[str, Any]) -> Palette:
    """A theme file's colours over the built-in palette of its appearance."""
    colors = data.get("colors")
    if not isinstance(colors, dict):
        raise ThemeError("a theme needs a colors object")
    variables = data.get("vars") if isinstance(data.get("vars"), dict) else {}
    appearance = "light" if data.get("appearance") == "light" else "dark"
    palette = dict(BUILT_IN[appearance])
    for role, value in colors.items():
        colour = _colour(value, variables or {})
        if colour is not None:
            palette[role] = colour
    palette["appearance"] = appearance
    return palette


def session_theme_files(rt: SessionRuntime) -> list[Path]:
    """The theme files the session's settings leave on (``pi config`` switches them): the user's and,
    in a trusted project, the project's ``themes`` folders and settings entries."""
    from pi_coding_agent.coding.resources.resource_files import theme_candidates

    return [f.path for f in theme_candidates(rt.agent_dir, rt.cwd, rt.project_trusted,
                                             rt.settings.resource_paths("themes"))]


def _theme_files(files: Sequence[Path], extra: list[str]) -> dict[str, Path]:
    """Theme name -> file: ``files`` (first wins a name), then ``--theme`` files (later wins)."""
    found: dict[str, Path] = {}
    for path in reversed(files):
        found[_theme_name(path)] = path
    for raw in extra:
        path = Path(raw).expanduser()
        for file in sorted(path.glob("*.json")) if path.is_dir() else [path]:
            found[_theme_name(file)] = file
    return found


def _theme_name(path: Path) -> str:
    try:
        return str(json.loads(path.read_text()).get("name") or path.stem)
    except (OSError, ValueError, AttributeError):
        return path.stem


def load_palette(name: str | None, files: Sequence[Path], extra: list[str]) -> Palette:
    """The palette of theme ``name`` among ``files`` and ``extra`` (``light/dark`` pairs take the dark
    one); problems fall back to dark."""
    chosen = (name or "system").split("/")[-1]
    if chosen in BUILT_IN:
        return dict(BUILT_IN[chosen])
    path = _theme_files(files, extra).get(chosen)
    if path is None:
        print(f"Warning: theme {chosen!r} not found; using dark", file=sys.stderr)
        return dict(DARK)
    try:
        return palette_from_theme(json.loads(path.read_text()))
    except (OSError, ValueError, ThemeError) as err:
        print(f"Warning: theme {path}: {err}; using dark", file=sys.stderr)
        return dict(DARK)


def theme_names(files: Sequence[Path]) -> list[str]:
    """What the ``theme`` setting can name: ``system``, the built-in themes, then those of ``files``."""
    return list(dict.fromkeys(["system", *BUILT_IN, *sorted(_theme_files(files, []))]))
