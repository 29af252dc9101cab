"""The session store: an append-only tree of entries kept in memory and in a pi-compatible JSONL file.

A new session touches the disk only once it holds a user or assistant message; the header and the
setup entries gathered until then go out in that first (exclusive-create) write. When a write fails
(full disk, read-only or deleted file) the entry is kept in memory, the failure goes to
``save_listener``, and the next write rewrites the whole file from memory: the file never holds a
partial line, and once writing works again nothing before it is missing.
"""

from __future__ import annotations

import heapq
import os
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from itertools import chain
from pathlib import Path
from typing import Any, cast

from pi_coding_agent.agent.events import AgentMessage
from pi_coding_agent.coding import paths
from pi_coding_agent.coding.session import storage
from pi_coding_agent.coding.session.context import (
    NO_SETTINGS,
    SessionContext,
    Settings,
    build_context,
    context_start,
    context_start_of,
    current_system_message,
    restored_settings,
    settings_after,
)
from pi_coding_agent.coding.session.conversion import convert_to_llm
from pi_coding_agent.coding.session.entries import Entry
from pi_coding_agent.coding.session.entry_list import DamagedEntry, EntryList, positions_of
from pi_coding_agent.coding.session.file_index import index_file
from pi_coding_agent.coding.session.fork_path import path_with_labels
from pi_coding_agent.coding.session.ids import (
    file_stamp,
    iso_now,
    iso_to_ms,
    new_entry_id,
    uuid7,
    validate_session_id,
)
from pi_coding_agent.coding.session.json_stream import iter_array, iter_tree, label_fields, tree_layout
from pi_coding_agent.coding.session.listing import (
    find_most_recent,
    is_custom_dir,
    list_sessions,
    session_dir_for,
)
from pi_coding_agent.coding.session.migration import (
    CURRENT_VERSION,
    migrate_records,
    needs_migration,
    write_migrated,
)
from pi_coding_agent.coding.session.totals import SessionTotals

__all__ = ["SessionContext", "SessionManager", "convert_to_llm", "list_sessions", "session_dir_for"]


_FORK_ERROR = "Invalid entry ID for forking"
_UNSAVED_ERROR = "This session has not been saved yet. Send a message before cloning or forking it."
_REPLACEMENT_ERROR = "Context edit replacement must be null or contain string/array content"
_NEWLINES = re.compile(r"[\r\n]+")


def _is_conversation(entry: Entry) -> bool:
    """A user or assistant message: what makes a session worth a file."""
    return entry.get("type") == "message" and (entry.get("message") or {}).get("role") in ("user", "assistant")


class SessionManager:
    """One session: header, entries in file order, the leaf, labels and name."""

    def __init__(self, *, cwd: Path, session_dir: Path | None, persist: bool, header: Entry,
                 entries: Iterable[Entry], session_file: Path | None, flushed: bool,
                 stale_on_disk: bool = False) -> None:
        self.cwd = cwd
        self.session_dir = session_dir
        self.persist = persist
        self.header = header
        self.entries = entries  # kept as an EntryList (see the property)
        self.session_file = session_file
        self._flushed = flushed  # the file exists and holds every entry
        self._stale_on_disk = stale_on_disk  # migrated in memory; rewrite before the next append
        self._unsaved = False  # a write failed: the file misses entries (rewritten whole at the next write)
        # Told of the first failed write (the error) and of the write that saved everything again (None).
        self.save_listener: Callable[[Path, OSError | None], None] | None = None
        self._by_id: dict[str, int] = {}  # entry id -> position in entries
        self.labels: dict[str, dict[str, Any]] = {}
        self._leaf_id: str | None = None
        # The end of the root-to-leaf path, kept up to date as entries are appended below the leaf (None:
        # rebuild on demand): it starts below ``_path_base`` (None: at the root) and holds at least the
        # model-visible part, which starts at ``_context_start``; ``_settings`` are the model and thinking
        # level at the leaf. Per-turn work then costs what the context since the last compaction costs,
        # and what a compaction summarised is packed (``EntryList``) instead of held parsed.
        self._path: list[Entry] | None = None
        self._path_base: str | None = None
        self._context_start = 0
        self._settings: Settings = NO_SETTINGS
        self._name_entry: Entry | None = None
        self._totals = SessionTotals(self._entries)
        self._conversation = False
        self._index_all()

    @property
    def entries(self) -> EntryList:
        return self._entries

    @entries.setter
    def entries(self, entries: Iterable[Entry]) -> None:
        self._entries = entries if isinstance(entries, EntryList) else EntryList(entries)

    # ----------------------------------------------------------------- construction

    @classmethod
    def create(cls, cwd: Path, session_dir: Path | None, *, persist: bool = True, session_id: str | None = None,
               parent_session: str | None = None) -> SessionManager:
        """A new, empty session (no file until the first user or assistant message)."""
        if session_id is not None:
            validate_session_id(session_id)
        cwd = Path(os.path.abspath(cwd))
        directory = Path(os.path.abspath(session_dir)) if session_dir else session_dir_for(paths.agent_dir(), cwd)
        header = _new_header(session_id or uuid7(), cwd, parent_session)
        file = directory / f"{file_stamp(header['timestamp'])}_{header['id']}.jsonl" if persist else None
        return cls(cwd=cwd, session_dir=directory if persist else None, persist=persist, header=header,
                   entries=[], session_file=file, flushed=False)

    @classmethod
    def open(cls, path: Path, cwd: Path) -> SessionManager:
        """An existing session file (in the cwd its header records), or a new session at ``path``."""
        return cls._load(Path(os.path.abspath(path)), Path(os.path.abspath(cwd)), prefer_header_cwd=True)

    @classmethod
    def continue_recent(cls, cwd: Path, session_dir: Path | None) -> SessionManager | None:
        """The most recently modified session of the directory, or None when there is none."""
        cwd = Path(os.path.abspath(cwd))
        directory = Path(os.path.abspath(session_dir)) if session_dir else session_dir_for(paths.agent_dir(), cwd)
        recent = find_most_recent(directory, cwd if is_custom_dir(directory, cwd) else None)
        return cls._load(recent, cwd, prefer_header_cwd=False) if recent is not None else None

    @classmethod
    def _load(cls, path: Path, cwd: Path, *, prefer_header_cwd: bool) -> SessionManager:
        if not path.exists():
            header = _new_header(uuid7(), cwd, None)
            return cls(cwd=cwd, session_dir=path.parent, persist=True, header=header, entries=[],
                       session_file=path, flushed=False)
        index = index_file(path)
        if index.header is None:
            if path.stat().st_size > 0:
                raise ValueError(f"Session file is not a valid pi session: {path}")
            header = _new_header(uuid7(), cwd, None)
            storage.append_line(path, storage.encode(header))
            return cls(cwd=cwd, session_dir=path.parent, persist=True, header=header, entries=[],
                       session_file=path, flushed=True)
        header = index.header
        recorded_cwd = header.get("cwd")
        if prefer_header_cwd and isinstance(recorded_cwd, str) and recorded_cwd:
            cwd = Path(recorded_cwd)
        try:
            return cls._opened(path, cwd, header, EntryList.from_index(index))
        except DamagedEntry:  # a broken line the index trusted: parse every line, skipping broken ones
            records = storage.read_records(path)
            return cls._opened(path, cwd, records[0], [r for r in records[1:] if r.get("type") != "session"])

    @classmethod
    def _opened(cls, path: Path, cwd: Path, header: Entry, entries: Iterable[Entry]) -> SessionManager:
        if needs_migration(header):  # rewritten before the next append: hold it parsed, migrated
            records = [header, *entries]
            migrate_records(records)
            return cls(cwd=cwd, session_dir=path.parent, persist=True, header=header, entries=records[1:],
                       session_file=path, flushed=True, stale_on_disk=True)
        return cls(cwd=cwd, session_dir=path.parent, persist=True, header=header, entries=entries,
                   session_file=path, flushed=True)

    def fork(self, entry_id: str | None, position: str) -> SessionManager:
        """A new session holding the root-to-target path (ids kept), ``parentSession`` = this file.

        ``before``: the entry must be a user message and the target is its parent (re-editing it);
        ``at``: the target is the entry itself (clone).
        """
        entry = self.get_entry(entry_id) if entry_id is not None else None
        if entry is None:
            raise ValueError(_FORK_ERROR)
        if position == "at":
            target: str | None = entry["id"]
        elif (entry.get("message") or {}).get("role") == "user" and entry.get("type") == "message":
            target = entry.get("parentId")
        else:
            raise ValueError(_FORK_ERROR)
        if self.persist and (self.session_file is None or not self.session_file.exists()) and target is not None:
            raise ValueError(_UNSAVED_ERROR)
        parent = str(self.session_file) if self.persist and self.session_file is not None else None
        fresh = SessionManager.create(self.cwd, self.session_dir, persist=self.persist, parent_session=parent)
        if target is None:
            return fresh
        fresh.entries = path_with_labels(self.get_branch(target), self.labels)
        fresh._index_all()
        if fresh.persist and fresh._conversation:
            fresh._write_new_file()
        return fresh

    @classmethod
    def fork_from(cls, source: Path, cwd: Path, session_dir: Path | None,
                  session_id: str | None = None) -> SessionManager:
        """``--fork``: a new session of ``cwd`` holding every entry of ``source`` (all branches, ids
        kept), with ``parentSession`` = the source file. Written at once when it has a conversation."""
        original = cls.open(source, cwd)
        fresh = cls.create(cwd, session_dir, session_id=session_id, parent_session=str(original.session_file))
        if original._conversation and original.entries.copyable():  # copy the lines, parse nothing
            assert fresh.session_file is not None
            storage.create_file(fresh.session_file, chain([storage.encode(fresh.header)], original.entries.file_lines()))
            return cls._load(fresh.session_file, fresh.cwd, prefer_header_cwd=False)
        fresh.entries = [dict(entry) for entry in original.entries]
        fresh._index_all()
        if fresh._conversation:
            fresh._write_new_file()
        return fresh

    def close(self) -> None:
        """Release the file the entries are read back from (it is also released with the store)."""
        self._entries.close()

    # ----------------------------------------------------------------- state

    @property
    def session_id(self) -> str:
        return str(self.header["id"])

    @property
    def session_name(self) -> str | None:
        """The name of the last ``session_info`` in the file (any branch); None when empty."""
        if self._name_entry is None:
            return None
        return str(self._name_entry.get("name") or "").strip() or None

    def get_entry(self, entry_id: str) -> Entry | None:
        position = self._by_id.get(entry_id)
        return None if position is None else self._entries[position]

    @property
    def leaf_id(self) -> str | None:
        return self._leaf_id

    @leaf_id.setter
    def leaf_id(self, value: str | None) -> None:
        if value != self._leaf_id:
            self._leaf_id = value
            self._path = None

    def _index_all(self) -> None:
        """Index every entry (load, fork) by its id and type, reading only the few that set state
        (labels, the name, the first conversation message); a loaded file may branch anywhere, so
        the path is walked once."""
        self._path = None
        self._totals = SessionTotals(self._entries)
        entries = self._entries
        ids = entries.ids()
        self._by_id = dict(zip(ids, range(len(ids)), strict=True))  # a repeated id names its last entry
        kinds = entries.kinds()
        for position in heapq.merge(positions_of(kinds, "label"), positions_of(kinds, "session_info")):
            self._note(entries[position])
        for position in positions_of(kinds, "message"):
            if self._conversation:
                break
            self._note(entries[position])
        if entries:
            self._leaf_id = ids[-1]
            self._pack_summarised()
        else:
            self._path = []

    def _index(self, entry: Entry, position: int) -> None:
        """Account for the entry at ``position`` of ``entries``, in memory and on disk (load or append)."""
        entry_id = entry.get("id")
        self._by_id[entry_id] = position  # type: ignore[index]
        path = self._path
        if path is not None and entry.get("parentId") == self._leaf_id:
            path.append(entry)
            self._settings = settings_after(self._settings, entry)
            if entry.get("type") == "compaction":
                start = context_start(path)
                if start is None and self._path_base is not None:
                    self._path = None  # the first kept entry lies before the held part: walk from the root
                else:
                    self._context_start = len(path) - 1 if start is None else start
                self._leaf_id = entry_id
                self._pack_summarised()
        else:
            self._path = None
        self._leaf_id = entry_id
        self._note(entry)
        self._totals.add(entry)

    def _note(self, entry: Entry) -> None:
        """Labels, the session name and whether there is a conversation yet."""
        kind = entry.get("type")
        if kind == "label":
            if entry.get("label"):
                self.labels[entry.get("targetId")] = {"label": entry["label"], "timestamp": entry.get("timestamp")}  # type: ignore[index]
            else:
                self.labels.pop(entry.get("targetId"), None)  # type: ignore[arg-type]
        elif kind == "session_info":
            self._name_entry = entry
        elif not self._conversation and _is_conversation(entry):
            self._conversation = True

    # ----------------------------------------------------------------- appending

    def _entry(self, entry_type: str, /, **fields: Any) -> Entry:
        """A new entry below the leaf; fields whose value is None are left out."""
        entry: Entry = {"type": entry_type, "id": new_entry_id(self._by_id), "parentId": self.leaf_id,
                        "timestamp": iso_now()}
        entry.update((key, value) for key, value in fields.items() if value is not None)
        return entry

    def _append(self, entry: Entry) -> Entry:
        """Write the entry (or keep it pending before the first conversation message), then index it."""
        self.entries.append(entry)
        try:
            self._persist(entry)
        except OSError as exc:  # kept in memory; the next write rewrites the file
            if not self._unsaved:  # told once a streak of failures
                self._unsaved = True
                self._tell(exc)
        except BaseException:
            self.entries.pop()
            raise
        self._index(entry, len(self._entries) - 1)
        return entry

    def _persist(self, entry: Entry) -> None:
        if not self.persist or self.session_file is None:
            return
        if not self._flushed:
            if not (self._conversation or _is_conversation(entry)):
                return
            self._write_new_file()
        elif self._unsaved:
            self._rewrite()
        else:
            self._append_line(entry)
            return
        if self._unsaved:  # this write saved what the failed ones missed
            self._unsaved = False
            self._tell(None)

    def _append_line(self, entry: Entry) -> None:
        assert self.session_file is not None
        if self._stale_on_disk:
            write_migrated(self.session_file, [self.header, *self.entries[:-1]])
            self._stale_on_disk = False
        line = storage.encode(entry)
        try:
            start = storage.append_line(self.session_file, line)
        except FileNotFoundError:  # deleted under the session: it comes back whole
            self._rewrite()
            return
        self._entries.written(self.session_file, start, [line])

    def _rewrite(self) -> None:
        """Replace the file with the header and every entry held (after a failed or lost write)."""
        assert self.session_file is not None
        self._entries.detach()
        header = storage.encode(self.header)
        lines = [line + b"\n" for line in self._entries.iter_json()]
        storage.replace_file(self.session_file, [header, *lines])
        self._entries.written(self.session_file, len(header), lines)
        self._stale_on_disk = False

    def _tell(self, error: OSError | None) -> None:
        if self.save_listener is not None and self.session_file is not None:
            self.save_listener(self.session_file, error)

    def _write_new_file(self) -> None:
        assert self.session_file is not None
        header, *lines = map(storage.encode, [self.header, *self.entries])
        storage.create_file(self.session_file, b"".join([header, *lines]))
        self._entries.written(self.session_file, len(header), lines)
        self._flushed = True

    def append_message(self, message: AgentMessage) -> Entry:
        return self._append(self._entry("message", message=message))

    def append_model_change(self, provider: str, model_id: str) -> Entry:
        return self._append(self._entry("model_change", provider=provider, modelId=model_id))

    def append_thinking_level_change(self, level: str) -> Entry:
        return self._append(self._entry("thinking_level_change", thinkingLevel=level))

    def append_compaction(self, summary: str, first_kept_entry_id: str, tokens_before: int, *, details: Any = None,
                          usage: dict[str, Any] | None = None, from_hook: bool | None = None,
                          system_message: Mapping[str, object] | None = None) -> Entry:
        """A compaction checkpoint; ``system_message`` defaults to the replayed system state."""
        if system_message is None:
            system_message = current_system_message(self.build_context().messages)
        entry = self._entry("compaction", summary=summary)
        entry["firstKeptEntryId"] = first_kept_entry_id or entry["id"]
        entry["tokensBefore"] = tokens_before
        entry.update((k, v) for k, v in (("details", details), ("usage", usage), ("fromHook", from_hook))
                     if v is not None)
        if system_message is not None:
            entry["systemMessage"] = {**system_message, "timestamp": iso_to_ms(entry["timestamp"])}
        return self._append(entry)

    def append_branch_summary(self, from_id: str, summary: str, *, details: Any = None,
                              usage: dict[str, Any] | None = None, from_hook: bool | None = None) -> Entry:
        """A summary of the abandoned branch ``from_id``, appended below the (already moved) leaf."""
        return self._append(self._entry("branch_summary", fromId=from_id, summary=summary, details=details,
                                         usage=usage, fromHook=from_hook))

    def branch_with_summary(self, target_id: str | None, summary: str, **extra: Any) -> Entry:
        """Move the leaf to ``target_id`` and record a summary of the branch it left."""
        from_id = self.leaf_id or "root"
        previous = self.leaf_id
        self.branch(target_id)
        try:
            return self.append_branch_summary(from_id, summary, **extra)
        except BaseException:
            self.leaf_id = previous
            raise

    def append_custom(self, custom_type: str, data: Any = None) -> Entry:
        return self._append(self._entry("custom", customType=custom_type, data=data))

    def append_custom_message(self, custom_type: str, content: Any, display: bool, details: Any = None) -> Entry:
        return self._append(self._entry("custom_message", customType=custom_type, content=content,
                                        display=display, details=details))

    def append_label(self, target_id: str, label: str | None) -> Entry:
        """Set (or with None/empty, clear) the label of an entry."""
        if target_id not in self._by_id:
            raise ValueError(f"Entry {target_id} not found")
        return self._append(self._entry("label", targetId=target_id, label=label))

    def append_session_info(self, name: str) -> Entry:
        return self._append(self._entry("session_info", name=_NEWLINES.sub(" ", name).strip()))

    def append_context_edit(self, target_id: str, replacement: dict[str, Any] | None) -> Entry:
        """Hide (None) or rewrite the content of an earlier model-visible entry on this branch."""
        if replacement is not None and not (
            isinstance(replacement, dict) and isinstance(replacement.get("content"), str | list)
        ):
            raise ValueError(_REPLACEMENT_ERROR)
        target = self.get_entry(target_id)
        if target is None:
            raise ValueError(f"Entry {target_id} not found")
        if all(entry.get("id") != target_id for entry in self.get_branch()):
            raise ValueError(f"Entry {target_id} is not on the active branch")
        role = "custom" if target.get("type") == "custom_message" else None
        if target.get("type") == "message":
            role = (target.get("message") or {}).get("role")
        if role not in ("custom", "user", "assistant", "toolResult"):
            raise ValueError(f"Entry {target_id} does not contribute editable model content")
        if replacement is not None and role in ("assistant", "toolResult") and isinstance(replacement["content"], str):
            replacement = {"content": [{"type": "text", "text": replacement["content"]}]}
        entry = self._entry("context_edit", targetId=target_id)
        entry["replacement"] = replacement  # null is meaningful here
        return self._append(entry)

    def append_usage(self, kind: str, provider: str, model: str, usage: dict[str, Any],
                     note: str | None = None) -> Entry:
        return self._append(self._entry("usage", kind=kind, provider=provider, model=model, usage=usage,
                                        note=note or None))

    # ----------------------------------------------------------------- tree

    def branch(self, entry_id: str | None) -> None:
        """Move the leaf (None: before the first entry); nothing is written until the next append."""
        if entry_id is not None and entry_id not in self._by_id:
            raise ValueError(f"Entry {entry_id} not found")
        self.leaf_id = entry_id

    def get_branch(self, leaf_id: str | None = None) -> list[Entry]:
        """Root-to-leaf path (stops at a missing parent)."""
        if leaf_id is not None and leaf_id != self._leaf_id:
            return self._walk(leaf_id)
        path = self._current_path()
        return self._walk(self._path_base) + path if self._path_base is not None else list(path)

    def get_context_branch(self) -> list[Entry]:
        """The part of the current path the model sees: from the latest compaction's first kept entry.

        Everything the projection (``select_context_entries``) selects is in it, so checks that run
        every turn give the same answers as on the whole branch without walking the history.
        """
        path = self._current_path()
        return path[self._context_start :]

    def _current_path(self) -> list[Entry]:
        """The held end of the path, rebuilt when unknown: the root-to-leaf walk follows the index's
        links, and only the model-visible part (from ``context_start_of``) is read."""
        if self._path is None:
            positions = self._walk_positions(self._leaf_id)
            linked = self._entries.linked(positions)
            path = cast(Sequence[Entry], linked)  # Linked views: only .get is used on them
            start = context_start_of(path, linked.kinds)
            self._settings = restored_settings(path, linked.kinds)
            self._path = self._entries.read_many(positions[start:])
            self._path_base = self._entries.entry_id(positions[start - 1]) if start else None
            self._context_start = 0
        return self._path

    def _pack_summarised(self) -> None:
        """Keep only the model-visible part of the path parsed; pack every other entry."""
        path = self._current_path()
        start = self._context_start
        if start > 0:
            self._path_base, self._path, self._context_start = path[start - 1].get("id"), path[start:], 0
        live = {id(entry) for entry in self._path or ()}
        self._entries.pack(lambda entry: id(entry) in live)

    def _walk(self, start: str | None) -> list[Entry]:
        return self._entries.read_many(self._walk_positions(start))

    def _walk_positions(self, start: str | None) -> list[int]:
        """Positions of the root-to-``start`` path (stops at a missing parent or a cycle)."""
        return self._entries.path_to(self._by_id.get(start) if start is not None else None, self._by_id)

    def branch_has(self, kind: str) -> bool:
        """Whether an entry of type ``kind`` is on the current path (read from the index alone)."""
        return kind in self._entries.linked(self._walk_positions(self._leaf_id)).kinds

    def get_tree(self) -> list[dict[str, Any]]:
        """Nodes ``{entry, children, label?, labelTimestamp?}``; roots include orphans."""
        entries = self._entries
        roots, children = tree_layout(entries, self._by_id)
        with entries.reading():
            nodes = {position: {"entry": entries[position], "children": [], **label_fields(self.labels.get(entry_id))}
                     for entry_id, position in self._by_id.items()}
        for parent, positions in children.items():
            nodes[parent]["children"] = [nodes[position] for position in positions]
        return [nodes[position] for position in roots]

    def iter_tree_json(self) -> Iterator[bytes]:
        """``get_tree()`` as JSON chunks, reading one entry at a time (the layout is taken now)."""
        return iter_tree(self._entries, tree_layout(self._entries, self._by_id), dict(self.labels))

    def get_entries(self, since: str | None = None) -> list[Entry]:
        """Entries in file order; with ``since``, only those after that entry."""
        return self._entries[self._first_after(since) :]

    def iter_entries_json(self, since: str | None = None) -> Iterator[bytes]:
        """``get_entries(since)`` as JSON chunks (the entries present now, read one at a time)."""
        entries, first, end = self._entries, self._first_after(since), len(self._entries)

        def each() -> Iterator[bytes]:
            with entries.reading():
                yield from map(entries.json_at, range(first, end))

        return iter_array(each())

    def _first_after(self, since: str | None) -> int:
        if since is None:
            return 0
        try:
            return self._entries.ids().index(since) + 1
        except ValueError:
            raise KeyError(f"Entry not found: {since}") from None

    def get_fork_messages(self) -> list[dict[str, str]]:
        """Every user message with text, in file order (all branches)."""
        return self._totals.fork_messages()

    # ----------------------------------------------------------------- context and totals

    def build_context(self) -> SessionContext:
        context_branch = self.get_context_branch()  # also brings the leaf's settings up to date
        return build_context(context_branch, self._settings)

    def stats(self) -> dict[str, Any]:
        """Message counts and usage totals over every entry of the file (all branches)."""
        return self._totals.stats()


def _new_header(session_id: str, cwd: Path, parent_session: str | None) -> Entry:
    header: Entry = {"type": "session", "version": CURRENT_VERSION, "id": session_id, "timestamp": iso_now(),
                     "cwd": str(cwd)}
    if parent_session is not None:
        header["parentSession"] = parent_session
    return header
