"""Extension flags given on the command line: ``pi --plan`` or ``pi --profile fast``.

The parser cannot know these options (extensions register them in ``setup``), so it keeps every
unknown ``--name [value]`` (``CliArgs.pending_flags``) and this check runs once the extensions have
loaded, as pi's second pass does: a registered boolean flag is set to True, a string flag takes its
value, anything else is pi's start-up error (exit 1).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from pi_coding_agent.coding.errors import SessionError

if TYPE_CHECKING:
    from pi_coding_agent.coding.extensions.registry import Extension
    from pi_coding_agent.coding.options import PendingFlag


def apply_cli_flags(pending: Iterable[PendingFlag], extensions: Iterable[Extension],
                    values: dict[str, bool | str]) -> None:
    """Put the command-line values of registered flags into ``values``; raises ``SessionError``
    (pi's ``Error:`` lines, one per problem) for unknown options and misused flags."""
    kinds = {name: flag["type"] for extension in extensions for name, flag in extension.flags.items()}
    problems: list[str] = []
    unknown: list[str] = []
    for flag in pending:
        kind = kinds.get(flag.name)
        if kind is None:
            unknown.append(f"--{flag.name}")
        elif kind == "boolean" and flag.value is not None and not flag.inline:
            # pi sets the flag and drops the word it took as the value (a print-mode prompt, say): refused here
            problems.append(f'Extension flag "--{flag.name}" takes no value, but "{flag.value}" follows it; '
                            f"put that word before the flag")
        elif kind == "boolean":
            values[flag.name] = True
        elif flag.value is None:
            problems.append(f'Extension flag "--{flag.name}" requires a value')
        else:
            values[flag.name] = flag.value
    if unknown:
        problems.append(f"Unknown option{'' if len(unknown) == 1 else 's'}: {', '.join(unknown)}")
    if problems:
        raise SessionError("\n".join(f"Error: {problem}" for problem in problems))
