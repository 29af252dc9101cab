"""Project trust: whether ``<cwd>/.pi`` resources (settings, SYSTEM.md, skills, prompts, ...) may load.

Order: ``--approve``/``--no-approve``; a project without trust-requiring resources is
trusted unless ``trust.json`` says otherwise; the saved decision for the dir or its nearest
ancestor; then ``defaultProjectTrust`` where ``ask`` means "no" because headless modes cannot ask.
Context files (AGENTS.md, ...) do not depend on trust.
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable
from pathlib import Path

import orjson

from pi_coding_agent.coding.resources.settings import PROJECT_DIR
from pi_coding_agent.coding.resources.settings_file import write_json_atomic

TRUST_FILE = "trust.json"
TRUST_REQUIRING_PROJECT_ENTRIES = (
    "settings.json", "mcp.json", "extensions", "skills", "prompts", "themes", "SYSTEM.md", "APPEND_SYSTEM.md",
)


TrustChoice = tuple[str, bool, list[tuple[Path, bool | None]], Path]  # label, trusted, updates, saved path
# how a front end asks "Trust project folder?": (agent dir, project dir) -> trusted; it saves the answer
TrustAsker = Callable[[Path, Path], Awaitable[bool]]


def trust_choices(cwd: Path, session_only: bool = False) -> list[TrustChoice]:
    """pi's trust answers for ``cwd``: trust it, trust its parent (clearing its own entry), distrust
    it; ``session_only`` adds pi's start-up answers that save nothing."""
    cwd = cwd.resolve()
    choices: list[TrustChoice] = [("Trust", True, [(cwd, True)], cwd)]
    if cwd.parent != cwd:
        choices.append((f"Trust parent folder ({cwd.parent})", True, [(cwd.parent, True), (cwd, None)], cwd.parent))
    if session_only:
        choices.append(("Trust (this session only)", True, [], cwd))
    choices.append(("Do not trust", False, [(cwd, False)], cwd))
    if session_only:
        choices.append(("Do not trust (this session only)", False, [], cwd))
    return choices


def trust_question_due(agent_dir: Path, cwd: Path, approve_flag: bool | None, default_trust: str) -> bool:
    """Whether a front end that can ask asks "Trust project folder?": no flag, no saved decision,
    trust-requiring project resources and ``defaultProjectTrust`` ``ask``."""
    return _by_rules(agent_dir, cwd, approve_flag, default_trust) is None


async def ask_trust_if_due(ask: TrustAsker | None, agent_dir: Path, cwd: Path, approve_flag: bool | None,
                           default_trust: str) -> bool | None:
    """The trust decision when a front end that can ask is given: the user's answer (saved by ``ask``
    as the choice says) when the question is due, else the usual rules' (one read of the trust file,
    one walk of the folders). None without ``ask``: the usual rules decide later."""
    if ask is None:
        return None
    decided = _by_rules(agent_dir, cwd, approve_flag, default_trust)
    return await ask(agent_dir, cwd) if decided is None else decided


def is_project_trusted(agent_dir: Path, cwd: Path, approve_flag: bool | None, default_trust: str) -> bool:
    """The trust decision for ``cwd`` in a mode without a UI (see module docstring): a question that
    would be due is answered "no"."""
    return _by_rules(agent_dir, cwd, approve_flag, default_trust) is True


def _by_rules(agent_dir: Path, cwd: Path, approve_flag: bool | None, default_trust: str) -> bool | None:
    """The decision by the flag, the saved answers and ``defaultProjectTrust``; None when pi asks."""
    if approve_flag is not None:
        return approve_flag
    saved = saved_trust_decision(agent_dir, cwd)
    if not has_trust_requiring_resources(cwd):
        return True if saved is None else saved
    if saved is not None:
        return saved
    return None if default_trust == "ask" else default_trust == "always"


def _canonical(path: Path) -> Path:
    try:
        return path.resolve()
    except OSError:
        return Path(os.path.abspath(path))


def has_trust_requiring_resources(cwd: Path) -> bool:
    """True when ``cwd/.pi`` holds a gated entry or ``.agents/skills`` exists in cwd or an ancestor.

    ``~/.agents/skills`` is the user's own directory and never counts.
    """
    current = _canonical(cwd)
    config_dir = current / PROJECT_DIR
    if any((config_dir / entry).exists() for entry in TRUST_REQUIRING_PROJECT_ENTRIES):
        return True
    user_skills = _canonical(Path(os.environ.get("HOME") or Path.home())) / ".agents" / "skills"
    for directory in (current, *current.parents):
        candidate = directory / ".agents" / "skills"
        if candidate != user_skills and candidate.exists():
            return True
    return False


def read_trust_file(agent_dir: Path) -> dict[str, bool | None]:
    """``{abs dir: true|false|null}``; a missing or malformed file counts as empty."""
    try:
        raw = (agent_dir / TRUST_FILE).read_bytes()
    except OSError:
        return {}
    try:
        data = orjson.loads(raw.removeprefix(b"\xef\xbb\xbf"))
    except orjson.JSONDecodeError:
        return {}
    if not isinstance(data, dict):
        return {}
    return {k: v for k, v in data.items() if v is None or isinstance(v, bool)}


def saved_trust_decision(agent_dir: Path, cwd: Path) -> bool | None:
    """The decision saved for ``cwd`` or its nearest ancestor that has one."""
    entry = saved_trust_entry(agent_dir, cwd)
    return None if entry is None else entry[1]


def save_trust_decision(agent_dir: Path, cwd: Path, decision: bool | None) -> None:
    """Record (or with None clear) the decision for ``cwd``."""
    save_trust_decisions(agent_dir, [(cwd, decision)])


def save_trust_decisions(agent_dir: Path, updates: list[tuple[Path, bool | None]]) -> None:
    """Several decisions in one write (``/trust``'s "trust parent folder" also clears the folder's own);
    None removes a directory's entry. Keys are kept sorted like pi writes them."""
    data = read_trust_file(agent_dir)
    for directory, decision in updates:
        key = str(_canonical(directory))
        data.pop(key, None)
        if decision is not None:
            data[key] = decision
    write_json_atomic(agent_dir / TRUST_FILE, {k: data[k] for k in sorted(data)})


def saved_trust_entry(agent_dir: Path, cwd: Path) -> tuple[str, bool] | None:
    """(directory, decision) of the saved decision that applies to ``cwd``: its own or its nearest ancestor's."""
    data = read_trust_file(agent_dir)
    current = _canonical(cwd)
    for directory in (current, *current.parents):
        value = data.get(str(directory))
        if isinstance(value, bool):
            return str(directory), value
    return None
