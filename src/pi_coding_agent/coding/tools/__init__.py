"""The built-in coding tools (read, bash, edit, write, grep, find, ls) and the user-bash executor.

The package itself imports nothing: ``builtin`` names the tools and makes them, each tool module is
imported when its tool is first used (a session starts without any of them loaded).
"""
