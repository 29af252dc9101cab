"""Words pi treats as commands rather than prompts (``pi auth …``, ``pi mcp …``, ``pi install …``).

Each supported subcommand lives in its own module of this package, exposing ``main(argv) -> int``,
and is imported only when its word is the first argument, so the agent's start-up pays for none of
them. The package words run ``coding/packages/commands.py`` (given the word too); ``pi config`` opens
the terminal resource picker of the packages' resources.
"""

from __future__ import annotations

import importlib
import sys

EXIT_UNSUPPORTED = 2

# word -> module (in this package) whose ``main(argv)`` runs it
SUPPORTED: dict[str, str] = {"auth": "auth", "mcp": "mcp", "config": "config"}

# pi's package manager: ``coding.packages.commands.main([word, *args])``
PACKAGE_WORDS: frozenset[str] = frozenset({"install", "remove", "uninstall", "update", "list"})

# pi 1.6.0 subcommands this implementation does not provide
UNSUPPORTED: frozenset[str] = frozenset()


def run_subcommand(argv: list[str]) -> int | None:
    """Run the subcommand named by ``argv[0]``; ``None`` when the first word is not one."""
    if not argv:
        return None
    word = argv[0]
    if word in SUPPORTED:
        module = importlib.import_module(f"{__name__}.{SUPPORTED[word]}")
        return int(module.main(argv[1:]))
    if word in PACKAGE_WORDS:
        from pi_coding_agent.coding.packages.commands import main

        return main(argv)
    if word in UNSUPPORTED:
        print(f"Error: `pi {word}` (pi's interactive resource picker) is not supported by this implementation; "
              "edit the packages' filters in settings.json", file=sys.stderr)
        return EXIT_UNSUPPORTED
    return None
