"""The session store: pi-compatible JSONL session files, the entry tree and context reconstruction."""

from pi_coding_agent.coding.session.context import SessionContext
from pi_coding_agent.coding.session.conversion import convert_to_llm
from pi_coding_agent.coding.session.entries import Entry, SessionEntry, SessionHeader
from pi_coding_agent.coding.session.json_stream import iter_array
from pi_coding_agent.coding.session.listing import list_sessions, session_dir_for
from pi_coding_agent.coding.session.manager import SessionManager
from pi_coding_agent.coding.session.migration import migrate_file

__all__ = [
    "Entry",
    "SessionContext",
    "SessionEntry",
    "SessionHeader",
    "SessionManager",
    "convert_to_llm",
    "iter_array",
    "list_sessions",
    "migrate_file",
    "session_dir_for",
]
