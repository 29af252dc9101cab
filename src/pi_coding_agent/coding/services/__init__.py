"""The services an ``AgentSession`` owns: store replacement (new/resume/fork/clone), model selection,
tree navigation, the queue mirror, the user's shell commands and prompt-cache warming."""
