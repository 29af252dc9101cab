"""The coding agent: ``AgentSession`` and everything it is made of, and the front ends that drive it.

The root holds the session and its vocabulary (``agent_session``, ``runtime``, ``bootstrap``,
``events``, ``errors``, ``options``, ``paths``, ``messages``, ``ui``); each folder is one concern:
``session/`` files, ``tools/``, ``resources/`` (settings, skills, templates, system prompt),
``compaction/``, ``extensions/``, ``mcp/``, ``codemode/``, ``sandbox/``, ``export/``,
``services/`` the session owns, ``commands/`` (built-in slash commands), ``modes/`` (every front
end), ``cli/`` (the command line). ``docs/architecture.md`` orders them.
"""
