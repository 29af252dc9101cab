"""``pi config [-l] [-a|-na]``: pi's resource picker for the packages', the top-level and the
built-in resources (``coding/modes/interactive/resource_config.py``). ``-l`` starts in the project's settings, which needs
a trusted project; Tab switches scope inside. Without ``-a``/``-na`` or a saved decision, a project
with ``.pi`` resources is first asked about, as pi asks (``trust_prompt``)."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pi_coding_agent.coding.resources.settings import Settings

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
        else:  # the first bad word is reported, in pi's words
            usage = "pi config [-l] [--approve|--no-approve]"
            if arg.startswith("-"):
                print(f'Unknown option {arg} for "config".\nUse "pi --help" or "{usage}".', file=sys.stderr)
            else:
                print(f"Unexpected argument {arg}.\nUsage: {usage}", file=sys.stderr)
            return 1
    from pi_coding_agent.coding import paths
    from pi_coding_agent.coding.cli.main import PI_BUILTIN_EXTENSIONS
    from pi_coding_agent.coding.modes.interactive.resource_config import ResourceConfigApp
    from pi_coding_agent.coding.modes.interactive.trust_prompt import ask_trust
    from pi_coding_agent.coding.resources.settings import Settings
    from pi_coding_agent.coding.resources.trust import ask_trust_if_due

    agent_dir, cwd = paths.agent_dir(), Path.cwd().resolve()
    startup = Settings.load(agent_dir, cwd, project_trusted=True)
    # with an asker given, the answer or the usual rules' decision: never None
    trusted = asyncio.run(ask_trust_if_due(ask_trust, agent_dir, cwd, approve, startup.default_project_trust)) is True
    if local and not trusted:
        print("Project is not trusted. Use --approve to modify local resource config.", file=sys.stderr)
        return 1
    settings = Settings.load(agent_dir, cwd, project_trusted=trusted)
    for warning in settings.warnings:
        print(warning, file=sys.stderr)  # a broken file is listed as empty and left as it is
    install_missing(settings, agent_dir, cwd)
    app = ResourceConfigApp(agent_dir, cwd, "project" if local else "user", trusted, sorted(PI_BUILTIN_EXTENSIONS))
    return app.run() or 0


def install_missing(settings: Settings, agent_dir: Path, cwd: Path) -> None:
    """Install the packages the settings name and lack, as pi does before it lists them (the
    project's only when ``settings`` trusts it); each failure is a warning on stderr."""
    from pi_coding_agent.coding.packages import session_packages

    found = session_packages(settings.layer("user"), settings.layer("project"), [], agent_dir, cwd,
                             settings.npm_command)
    for source, scope, message in found.install_failures if found is not None else []:
        hint = f'Run "pi remove {source}{" --local" if scope == "project" else ""}" to remove it from settings.json.'
        print(f'Warning: Extension package "{source}": failed to install ({message}). {hint}', file=sys.stderr)
