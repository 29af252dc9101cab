"""The ``pi`` command line: flags (``main``), ``@file`` arguments, and subcommands (``pi auth``, ``pi mcp``)."""
