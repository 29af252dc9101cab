"""``pi`` on a terminal: the interactive mode, on Textual and Rich (imported only in this mode).

``launch`` builds the session and runs the app; ``app`` is the screen, ``transcript`` and
``entries`` the scrollback, ``editor`` and ``completion`` the prompt, ``dialogs`` the pickers and
the extensions' dialogs, ``commands`` the slash commands, ``footer``, ``theme`` and ``keys`` the
rest of what a person sees and types.
"""

from pi_coding_agent.coding.modes.interactive.launch import build_app, open_session, run

__all__ = ["build_app", "open_session", "run"]
