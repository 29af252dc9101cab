"""Words pi treats as commands rather than prompts (``pi auth …``, ``pi mcp …``, ``pi install …``).

``dispatch`` maps the first word to its module (``auth``, ``mcp``, ``config``: the terminal picker
of the packages' resources); the package words run ``coding/packages/commands.py``. pi 1.6.0 has no
subcommand this implementation lacks.
"""

from pi_coding_agent.coding.cli.subcommands.dispatch import PACKAGE_WORDS, SUPPORTED, run_subcommand

__all__ = ["PACKAGE_WORDS", "SUPPORTED", "run_subcommand"]
