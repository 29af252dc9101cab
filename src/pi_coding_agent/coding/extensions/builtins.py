"""Whether pi's bundled extensions (``builtin:<name>``) load, from the settings' ``extensions`` entries.

As pi 1.6.0 decides: the user's entries filter it like any resource (``!glob`` excludes, an exact
``+builtin:<name>`` re-adds, an exact ``-builtin:<name>`` removes, whatever their order); a project
entry naming it (``+``, ``-`` or a ``!`` glob) overrides the user's word, the project's last one
winning. Named by neither: on.
"""

from __future__ import annotations

from collections.abc import Sequence

PREFIX = "builtin:"


def builtin_state(name: str, user: Sequence[str], project: Sequence[str]) -> tuple[bool, str]:
    """Whether ``builtin:<name>`` loads, and the scope that decided (``project`` when it names it)."""
    said = _project_word(PREFIX + name, project)
    return (_user_word(PREFIX + name, user), "user") if said is None else (said, "project")


def _project_word(path: str, entries: Sequence[str]) -> bool | None:
    word = None
    for entry in entries:
        if _names(path, entry):
            word = entry[0] == "+"
    return word


def _user_word(path: str, entries: Sequence[str]) -> bool:
    marks = {entry[0] for entry in entries if _names(path, entry)}
    return "-" not in marks and ("+" in marks or "!" not in marks)


def _names(path: str, entry: str) -> bool:
    """Whether a filter entry names ``path``: ``+``/``-`` exactly, ``!`` as a glob."""
    mark, target = entry[:1], entry[1:].strip()
    if mark in ("+", "-"):
        return target.removeprefix("./") == path
    if mark != "!":
        return False
    from pi_coding_agent.coding.packages.manifest import glob_regex  # with glob: only for a ``!`` entry

    return glob_regex(target).fullmatch(path) is not None
