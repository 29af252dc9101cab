"""``python -m pi_coding_agent`` behaves exactly like the ``pi`` command."""

import sys

from pi_coding_agent.coding.cli import main

sys.exit(main())
