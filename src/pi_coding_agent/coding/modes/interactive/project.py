"""``/trust`` (save a project trust decision) and ``/import`` (open a session file from elsewhere).

Both follow pi 1.6.0: ``/trust`` offers trust, trust of the parent folder (which also clears the
folder's own entry) and distrust, saved in ``<agent-dir>/trust.json`` for the next start;
``/import`` copies the file into this project's session folder (``name-1.jsonl`` when the name is
taken) and switches to the copy, which keeps its id and working directory. When that directory is
gone, ``/import`` and ``/resume`` ask pi's question (``open_asking_cwd``), and so does start-up.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from pi_coding_agent.coding.errors import MissingSessionCwdError, SessionError
from pi_coding_agent.coding.modes.interactive.command_host import PiApp, replaced
from pi_coding_agent.coding.modes.interactive.dialogs import ConfirmScreen, ask, choose
from pi_coding_agent.coding.modes.interactive.picker import Picker
from pi_coding_agent.coding.modes.interactive.trust_prompt import apply_choice, trust_asked_in_app
from pi_coding_agent.coding.resources.trust import saved_trust_entry, trust_choices


async def trust(app: PiApp, arg: str) -> None:
    rt = app.session.rt
    cwd = Path(rt.cwd).resolve()
    saved = saved_trust_entry(rt.agent_dir, cwd)
    if saved is None:
        described = "none"
    else:
        label = "trusted" if saved[1] else "untrusted"
        described = f"{label} ({saved[0]})" if saved[0] == str(cwd) else f"{label} (inherited from {saved[0]})"
    choices = trust_choices(cwd)
    title = (f"Project trust\n{cwd}\n\nSaved decision: {described}\n"
             f"Current session: {'trusted' if rt.project_trusted else 'untrusted'}")
    marked = [saved == (str(path), trusted) for _, trusted, _, path in choices]
    options = [(str(i), ("✓ " if marked[i] else "  ") + label) for i, (label, *_) in enumerate(choices)]
    current = marked.index(True) if True in marked else 0  # the cursor starts on the saved choice, as in pi
    picked = await choose(app, Picker(title, options, searchable=False, highlighted=current))
    if picked is None:
        return
    trusted = apply_choice(rt.agent_dir, choices[int(picked)])
    app.show_notice(f"Saved trust decision: {'trusted' if trusted else 'untrusted'}. "
                    "Restart pi for this to take effect.")


def path_argument(arg: str) -> str | None:
    """The first word of ``arg``, or a quoted path with spaces, as pi reads ``/import`` and ``/export``."""
    arg = arg.strip()
    if not arg:
        return None
    if arg[0] in "\"'":
        end = arg.find(arg[0], 1)
        return arg[1:end] if end > 0 else None
    return arg.split()[0]


async def import_session(app: PiApp, arg: str) -> None:
    raw = path_argument(arg)
    if raw is None:
        app.show_notice("Error: Usage: /import <path.jsonl>", "error")
        return
    if not await ask(app, ConfirmScreen("Import session", f"Replace current session with {raw}?"), False):
        app.show_notice("Import cancelled")
        return
    source = Path(raw).expanduser().resolve()
    if not source.is_file():
        app.show_notice(f"Error: Failed to import session: File not found: {source}", "error")
        return
    session_dir = app.session.sm.session_dir
    if session_dir is None:
        raise SessionError("Sessions are not saved in this run (--no-session): nothing to import into")
    destination = _free_name(Path(session_dir), source)
    copied = destination != source
    if copied:
        destination.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, destination)
    choice: str | None = None
    try:
        choice = await open_asking_cwd(app, destination, source, ask_trust=False)  # pi's /import does not ask
    finally:
        if copied and choice in (None, "fork"):  # a fork copies the source itself; a cancel keeps nothing
            destination.unlink(missing_ok=True)
    if choice is None:
        app.show_notice("Import cancelled")
    elif choice != "fork":
        app.show_notice(f"Session imported from: {raw}")


async def open_asking_cwd(app: PiApp, path: Path, source: Path, missing: MissingSessionCwdError | None = None,
                          ask_trust: bool = True) -> str | None:
    """Switch to ``path`` and redraw; the answer is "" then. A session whose recorded directory is
    gone (``missing``: already known, at start-up) makes pi's choice: "continue" in the current
    directory (not stored, so asked again next time) or "fork" ``source`` into it as a new session
    beside the current one. None: cancelled (the question or an extension). ``ask_trust``: an
    undecided folder entered is asked about ("Trust project folder?"), as pi's resume does."""
    with trust_asked_in_app(app, ask_trust):
        return await _open_asking_cwd(app, path, source, missing)


async def _open_asking_cwd(app: PiApp, path: Path, source: Path, missing: MissingSessionCwdError | None) -> str | None:
    choice: str | None = ""
    try:
        result = None if missing is not None else await app.session.switch_session(str(path))
    except MissingSessionCwdError as error:
        missing = error
    if missing is not None:
        here = missing.fallback_cwd
        options = [("continue", f"Continue in {here} (asks again next time)"),
                   ("fork", f"Fork into {here} (new session ID, original kept)"), ("cancel", "Cancel")]
        choice = await choose(app, Picker(f"Session cwd does not exist: {missing.session_cwd}", options,
                                          searchable=False))
        if choice == "continue":
            result = await app.session.switch_session(str(path), cwd_override=here)
        elif choice == "fork":
            result = await _switch_to_fork(app, source, Path(here))
        else:
            return None
    if result is None or result.get("cancelled"):
        return None
    await replaced(app)
    if choice == "fork":
        app.show_notice(f"Forked into new session {app.session.sm.session_id} in {app.session.rt.cwd}")
    return choice


async def open_missing_at_startup(app: PiApp, missing: MissingSessionCwdError) -> bool:
    """``pi --session``/``-c`` of a session whose directory is gone: the app opened on a new,
    unsaved session and asks pi's question first; False (cancelled) ends pi, as in pi."""
    path = Path(missing.session_file)
    return await open_asking_cwd(app, path, path, missing) is not None


async def _switch_to_fork(app: PiApp, source: Path, cwd: Path) -> dict[str, Any]:
    """Like ``--fork``: a copy of ``source`` with a new id in ``cwd``, stored next to the current
    session; removed again when an extension cancels the switch."""
    from pi_coding_agent.coding.session import SessionManager

    fork = SessionManager.fork_from(source, cwd, app.session.sm.session_dir)
    fork.close()
    assert fork.session_file is not None
    result = await app.session.switch_session(str(fork.session_file))
    if result.get("cancelled"):
        fork.session_file.unlink(missing_ok=True)
    return result


def _free_name(session_dir: Path, source: Path) -> Path:
    """``session_dir/<name>``, or ``<stem>-1``, ``-2``... when taken; the source itself when it is already there."""
    destination = session_dir / source.name
    if destination.resolve() == source:
        return source
    number = 1
    while destination.exists():
        destination = session_dir / f"{source.stem}-{number}{source.suffix}"
        number += 1
    return destination

