"""Decide project trust by location: ``project_trust``.

    PI_TRUSTED_ROOTS=~/work/team PI_UNTRUSTED_ROOTS=~/Downloads pi -e examples/extensions/trust_gate.py

Before a project's own ``.pi`` settings, skills, prompts or extensions load, the user's and the
command line's extensions may answer ``{"trusted": "yes"}`` or ``"no"`` (the first answer wins;
``"remember": True`` would save it in trust.json). This one trusts projects under a root of
``PI_TRUSTED_ROOTS``, refuses those under ``PI_UNTRUSTED_ROOTS`` and leaves the rest to the usual
rules (``-a``/``-na`` always win, then trust.json, then ``defaultProjectTrust``). Install it in
``~/.pi/agent/extensions/`` or pass it with ``-e``; a project's own extensions cannot take part.
"""

import os
from pathlib import Path


def _under(cwd, variable):
    roots = [Path(os.path.expanduser(r)).resolve() for r in os.environ.get(variable, "").split(":") if r]
    here = Path(cwd).resolve()
    return any(here == root or root in here.parents for root in roots)


def setup(pi):
    def decide(event, ctx):
        if _under(event["cwd"], "PI_TRUSTED_ROOTS"):
            return {"trusted": "yes"}
        if _under(event["cwd"], "PI_UNTRUSTED_ROOTS"):
            return {"trusted": "no"}
        return {"trusted": "undecided"}

    pi.on("project_trust", decide)
