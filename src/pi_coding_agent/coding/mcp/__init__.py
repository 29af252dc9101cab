"""MCP servers for a session: config (``mcp.json``), the manager and its connections (stdio, HTTP), the
tools and resources they expose, OAuth, and the session seams (``session``: start, replace, ``/mcp``).

``session`` is all a session imports while no ``mcp.json`` exists; the rest loads once one is found.
"""
