"""Skills and prompt templates that come with an extension: ``resources_discover``.

    pi -e examples/extensions/team_resources.py

After ``session_start`` the handler names a skills folder and a prompts folder next to this file;
they load like ``--skill`` and ``--prompt-template`` paths, so ``/skill:review`` and ``/standup``
work and ``get_commands`` lists them with ``sourceInfo.source`` ``extension:team_resources``.
"""

from pathlib import Path

HERE = Path(__file__).resolve().parent / "team_resources"


def setup(pi):
    def discover(event, ctx):
        return {"skillPaths": [str(HERE / "skills")], "promptPaths": [str(HERE / "prompts")]}

    pi.on("resources_discover", discover)
