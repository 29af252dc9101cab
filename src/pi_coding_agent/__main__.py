"""The ``pi`` command, as the console script and as ``python -m pi_coding_agent``."""

import sys


def main() -> int:
    """``cli.main``, with ``inspect`` deferred before anything imports it (``coding/modes/start_up``)."""
    from pi_coding_agent.coding.modes.start_up import defer_module

    defer_module("inspect")
    from pi_coding_agent.coding.cli.main import main as cli_main

    return cli_main()


if __name__ == "__main__":
    sys.exit(main())
