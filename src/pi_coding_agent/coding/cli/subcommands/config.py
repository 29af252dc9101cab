"""``pi config [-l] [-a|-na]``: pi's resource picker for the packages', the top-level and the
built-in resources (``coding/modes/interactive/resource_config.py``). ``-l`` starts in the project's settings, which needs
a trusted project; Tab switches scope inside. Without ``-a``/``-na`` or a saved decision, a project
with ``.pi`` resources is first asked about, as pi asks (``trust_prompt``)."""

from __future__ import annotations

import sys
from pathlib import Path

USAGE = """Usage:
  pi config [-l] [--approve|--no-approve]

Open the resource configuration TUI to enable or disable package resources.
Without -l, starts in global settings (~/.pi/agent/settings.json).
Press Tab in the TUI to switch between global and project-local modes.

Options:
  -l, --local       Edit project overrides (.pi/settings.json)
  -a, --approve     Trust project-local files for this command with -l
  -na, --no-approve Ignore project-local files for this command with -l
"""


def main(argv: list[str]) -> int:
    local, approve = False, None
    for arg in argv:
        if arg in ("-h", "--help"):
            print(USAGE)
            return 0
        if arg in ("-l", "--local"):
            local = True
        elif arg in ("-a", "--approve", "-na", "--no-approve"):
            approve = arg in ("-a", "--approve")
        else:
            print(f'Unknown option {arg} for "config".', file=sys.stderr)
            print("Usage: pi config [-l] [--approve|--no-approve]", file=sys.stderr)
            return 1
    from pi_coding_agent.coding import paths
    from pi_coding_agent.coding.cli.main import PI_BUILTIN_EXTENSIONS
    from pi_coding_agent.coding.modes.interactive.resource_config import ResourceConfigApp
    from pi_coding_agent.coding.resources.settings import Settings
    from pi_coding_agent.coding.resources.trust import is_project_trusted, trust_question_due

    agent_dir, cwd = paths.agent_dir(), Path.cwd().resolve()
    startup = Settings.load(agent_dir, cwd, project_trusted=True)
    if trust_question_due(agent_dir, cwd, approve, startup.default_project_trust):
        from pi_coding_agent.coding.modes.interactive.trust_prompt import ask_trust

        trusted = ask_trust(agent_dir, cwd)
    else:
        trusted = is_project_trusted(agent_dir, cwd, approve, startup.default_project_trust)
    if local and not trusted:
        print("Project is not trusted. Use --approve to modify local resource config.", file=sys.stderr)
        return 1
    for warning in Settings.load(agent_dir, cwd, project_trusted=trusted).warnings:
        print(warning, file=sys.stderr)  # a broken file is listed as empty and left as it is
    app = ResourceConfigApp(agent_dir, cwd, "project" if local else "user", trusted, sorted(PI_BUILTIN_EXTENSIONS))
    return app.run() or 0
