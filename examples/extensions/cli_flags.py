"""Command-line flags and a tool that stays off unless asked for.

    pi -e examples/extensions/cli_flags.py --plan --profile fast --tools read,plan_step

``--plan`` (boolean) and ``--profile <name>`` (string) exist only because this extension registers
them; ``plan_step`` is registered with ``default_active=False``, so the model sees it only when
``--tools`` names it (or a ``set_active_tools`` call activates it). ``/flags`` reports what the
extension got.
"""

import json


def setup(pi):
    pi.register_flag("plan", type="boolean", default=False, description="Start in plan mode")
    pi.register_flag("profile", type="string", default="careful", description="How much to check")

    def plan_step(tool_call_id, params, signal, on_update, ctx):
        return {"content": [{"type": "text", "text": f"planned: {params['step']}"}]}

    pi.register_tool(name="plan_step", label="Plan step", description="Record one step of the plan",
                     parameters={"type": "object", "properties": {"step": {"type": "string"}}, "required": ["step"]},
                     execute=plan_step, default_active=False)

    def report(args, ctx):
        state = {"plan": pi.get_flag("plan"), "profile": pi.get_flag("profile"), "active": pi.get_active_tools()}
        ctx.ui.notify(json.dumps(state, separators=(",", ":")), "info")

    pi.register_command("flags", description="Show the flags this extension got", handler=report)
