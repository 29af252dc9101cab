"""Shape the system prompt through ``before_agent_start``'s ``systemPromptOptions``.

    pi -e examples/extensions/prompt_options.py

The options are what the prompt is built from (tools, guidelines, context files, skills, appended
text, sections). Editing them in place rebuilds the prompt of this run, and handlers after this
one see the new ``systemPrompt``; returning ``{"systemPrompt": ...}`` would replace it outright.
"""


def setup(pi):
    def house_style(event, ctx):
        options = event["systemPromptOptions"]
        options["promptGuidelines"].append("Answer in at most three sentences")
        options["contextFiles"].append({"path": "/team/STYLE.md", "content": "Small functions, clear names."})

    def check(event, ctx):
        seen = "Answer in at most three sentences" in event["systemPrompt"]
        ctx.ui.notify(f"guideline in prompt: {str(seen).lower()}", "info")

    pi.on("before_agent_start", house_style)
    pi.on("before_agent_start", check)
