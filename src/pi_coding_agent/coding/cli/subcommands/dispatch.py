"""Which first word is a subcommand, and running it.

Each supported word's module in this package exposes ``main(argv) -> int`` and is imported only
when its word comes first, so the agent's start-up pays for none of them.
"""

from __future__ import annotations

import importlib

# word -> module (in this package) whose ``main(argv)`` runs it
SUPPORTED: dict[str, str] = {"auth": "auth", "mcp": "mcp", "config": "config"}

# pi's package manager: ``coding.packages.commands.main([word, *args])``
PACKAGE_WORDS: frozenset[str] = frozenset({"install", "remove", "uninstall", "update", "list"})


def run_subcommand(argv: list[str]) -> int | None:
    """Run the subcommand named by ``argv[0]``; ``None`` when the first word is not one."""
    if not argv:
        return None
    word = argv[0]
    if word in SUPPORTED:
        module = importlib.import_module(f"{__package__}.{SUPPORTED[word]}")
        return int(module.main(argv[1:]))
    if word in PACKAGE_WORDS:
        from pi_coding_agent.coding.packages.commands import main

        return main(argv)
    return None
