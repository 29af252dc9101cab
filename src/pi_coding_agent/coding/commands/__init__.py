"""Built-in slash commands a session offers every front end: ``/login`` and ``/llama``."""
