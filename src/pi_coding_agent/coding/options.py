"""Start-up options of one session: everything the command line (or an SDK caller) can set.

A leaf module so that the layers below the CLI (bootstrap, runtime, modes, extensions) can read the
options without importing the parser in ``cli.py``.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import NamedTuple

from pi_coding_agent.ai.types import JsonObject


class PendingFlag(NamedTuple):
    """An unknown ``--name`` option, kept until the extensions say whether they registered it.

    ``value`` is the ``=value`` part or the next word (taken when it is not an option or an
    ``@file``, as pi does); ``inline`` tells which, since a boolean flag only accepts the inline form.
    """

    name: str
    value: str | None
    inline: bool


class CliArgs:
    """Every flag of ``pi``; lists default to empty, unset options to None.

    A plain class, not a dataclass: generating ``__init__`` for its 45 fields would cost every start
    about 9 M instructions. Unknown option names are refused as a dataclass refuses them.
    """

    help: bool = False
    version: bool = False
    mode: str | None = None
    print: bool = False
    continue_session: bool = False
    resume: bool = False
    provider: str | None = None
    model: str | None = None
    api_key: str | None = None
    thinking: str | None = None
    models: list[str] | None = None
    system_prompt: str | None = None
    append_system_prompt: list[str]
    name: str | None = None
    session: str | None = None
    session_id: str | None = None
    fork: str | None = None
    session_dir: str | None = None
    no_session: bool = False
    tools: list[str] | None = None
    exclude_tools: list[str] | None = None
    no_tools: bool = False
    no_builtin_tools: bool = False
    extensions: list[str]
    no_extensions: bool = False
    no_mcp: bool = False
    no_mcp_files: bool = False  # SDK ``mcp_config_files=False``: only the servers given in code
    skills: list[str]
    no_skills: bool = False
    prompt_templates: list[str]
    no_prompt_templates: bool = False
    themes: list[str]
    no_themes: bool = False
    use_theme: str | None = None
    tui_mode: str | None = None
    no_context_files: bool = False
    approve: bool | None = None  # True: -a, False: -na, None: ask the trust rules
    offline: bool = False
    sandbox: str | None = None  # off | read-only | workspace-write (our addition; see docs/sandbox.md)
    verbose: bool = False
    export: str | None = None
    list_models: str | bool | None = None  # True without a search term
    messages: list[str]
    file_args: list[str]
    flag_values: dict[str, bool | str]  # extension flags (``--name [value]``)
    # ``--name [value]`` options the parser does not know: extension flags once extensions have loaded
    pending_flags: list[PendingFlag]

    def __init__(self, **options: object) -> None:
        for name, make in _FRESH.items():
            setattr(self, name, make())
        self._set(options)

    def replace(self, **changes: object) -> CliArgs:
        """A copy with ``changes`` applied (what ``dataclasses.replace`` does for a dataclass)."""
        clone = copy.copy(self)
        clone._set(changes)
        return clone

    def _set(self, options: JsonObject) -> None:
        for name, value in options.items():
            if name not in CliArgs.__annotations__:
                raise TypeError(f"CliArgs has no option {name!r}")
            setattr(self, name, value)

    @property
    def export_output(self) -> str | None:
        """``--export <in> [out]``: the optional output path is the first positional argument."""
        return self.messages[0] if self.messages else None


# the options whose default is a fresh empty list or dict (the others default to their class attribute)
_FRESH: dict[str, Callable[[], object]] = {
    "append_system_prompt": list, "extensions": list, "skills": list, "prompt_templates": list, "themes": list,
    "messages": list, "file_args": list, "flag_values": dict, "pending_flags": list}
