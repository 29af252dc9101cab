"""Export a session as one self-contained HTML page (RPC ``export_html`` and ``pi --export``).

The page is a fixed template with its stylesheet and script inlined; the session itself travels as
base64-encoded JSON (``{header, entries, leafId, systemPrompt?, tools?}``, as pi embeds it) and is
rendered in the browser with DOM text nodes only. Base64 has no ``<`` or ``&``, so nothing a session
contains can close the data element or start markup; the renderer never parses session text as HTML.
"""

from __future__ import annotations

import base64
import os
import re
import secrets
import sys
from collections.abc import Iterable, Iterator
from importlib import resources
from pathlib import Path
from typing import Any

import orjson

from pi_coding_agent.ai.types import JsonObject
from pi_coding_agent.coding.session import iter_array

__all__ = ["ExportError", "default_output_name", "export_cli", "export_session_html", "render_page"]

IN_MEMORY_ERROR = "Cannot export in-memory session to HTML"
NOTHING_YET_ERROR = "Nothing to export yet - start a conversation first"

_PLACEHOLDER = re.compile(r"\{\{(CSS|JS|SESSION_DATA|NONCE)\}\}")


class ExportError(Exception):
    """An export that cannot be produced; the message is the text clients show (pi's wording)."""


def _asset(name: str) -> str:
    return (resources.files(__package__) / "assets" / name).read_text(encoding="utf-8")


def render_page(data: JsonObject) -> str:
    """The complete page for ``data`` (see ``page_parts``)."""
    return "".join(page_parts(data))


def page_parts(data: JsonObject) -> Iterator[str]:
    """The page for ``data`` in pieces, its ``entries`` (any iterable) read one at a time, so the
    export of a session of hundreds of megabytes never holds it whole.

    Placeholders are filled in one pass so that text inserted for one (the stylesheet, the script)
    is never scanned for another. The page's own script carries a fresh CSP nonce, so even markup
    that slipped into the page could neither run script nor load anything from the network.
    """
    parts = {"NONCE": secrets.token_urlsafe(18), "CSS": _asset("page.css"), "JS": _asset("page.js")}
    template = _asset("template.html")
    done = 0
    for match in _PLACEHOLDER.finditer(template):
        yield template[done : match.start()]
        name = match.group(1)
        if name == "SESSION_DATA":
            yield from _base64(_data_json(data))
        else:
            yield parts[name]
        done = match.end()
    yield template[done:]


def _data_json(data: dict[str, Any]) -> Iterator[bytes]:
    """``orjson.dumps(data)`` in chunks, ``entries`` serialised one by one."""
    head, tail = orjson.dumps({**data, "entries": orjson.Fragment(b"\x00")}).split(b"\x00")
    yield head
    yield from iter_array(map(orjson.dumps, data["entries"]))
    yield tail


def _base64(chunks: Iterable[bytes]) -> Iterator[str]:
    """Base64 of the concatenated chunks, encoded in pieces of whole 3-byte groups."""
    rest = b""
    for chunk in chunks:
        chunk = rest + chunk
        cut = len(chunk) - len(chunk) % 3
        rest = chunk[cut:]
        yield base64.b64encode(chunk[:cut]).decode("ascii")
    yield base64.b64encode(rest).decode("ascii")


def default_output_name(session_file: Path) -> str:
    """pi's default file name: ``pi-session-<session file name without .jsonl>.html``."""
    name = session_file.name
    stem = name[: -len(".jsonl")] if name.endswith(".jsonl") else name
    return f"pi-session-{stem}.html"


def _output_path(output_path: str | None, session_file: Path, cwd: Path) -> Path:
    """Absolute target: ``output_path`` (``~`` expanded, relative to ``cwd``) or the default name in ``cwd``."""
    target = Path(os.path.expanduser(output_path)) if output_path else Path(default_output_name(session_file))
    return Path(os.path.abspath(cwd / target))


def session_data(entries: Iterable[JsonObject], header: JsonObject, leaf_id: str | None,
                 system_prompt: str | None, tools: list[JsonObject] | None) -> JsonObject:
    """The embedded record; absent optional fields are omitted, as pi's JSON.stringify drops them."""
    data: JsonObject = {"header": header, "entries": entries, "leafId": leaf_id}
    if system_prompt is not None:
        data["systemPrompt"] = system_prompt
    if tools is not None:
        data["tools"] = [{k: t[k] for k in ("name", "description", "parameters") if k in t} for t in tools]
    return data


def export_session_html(session_file: Path | None, entries: Iterable[JsonObject], header: JsonObject,
                        leaf_id: str | None, output_path: str | None, cwd: Path,
                        system_prompt: str | None = None, tools: list[JsonObject] | None = None) -> Path:
    """Write the page and return its absolute path.

    ``cwd`` is the directory a relative or default output path lands in (pi uses the process cwd).
    A session without a file on disk cannot be exported: either it never has one (``--no-session``)
    or nothing worth saving has happened yet (files are created lazily).
    """
    if session_file is None:
        raise ExportError(IN_MEMORY_ERROR)
    if not session_file.exists():
        raise ExportError(NOTHING_YET_ERROR)
    target = _output_path(output_path, session_file, cwd)
    data = session_data(entries, header, leaf_id, system_prompt, tools)
    try:
        with target.open("w", encoding="utf-8") as page:
            page.writelines(page_parts(data))
    except OSError as exc:
        raise ExportError(f"Could not write {target}: {exc.strerror or exc}") from exc
    return target


def _cli_paths(args: Any) -> tuple[str, str | None]:
    """``(input, output)`` from ``args.export``: a list ``[in]``/``[in, out]``, or a string whose
    output, if any, is the first positional argument (``args.export_output``)."""
    export = args.export
    if isinstance(export, (list, tuple)):
        return str(export[0]), (str(export[1]) if len(export) > 1 else None)
    return str(export), getattr(args, "export_output", None)


def export_cli(args: object) -> int:
    """``pi --export <session.jsonl> [out.html]``: prints ``Exported to: <path>``; errors exit 1."""
    from pi_coding_agent.coding.session import SessionManager

    source, output = _cli_paths(args)
    cwd = Path.cwd()
    path = Path(os.path.abspath(os.path.expanduser(source)))
    try:
        if not path.is_file():
            raise ExportError(f"File not found: {path}")
        manager = SessionManager.open(path, cwd)
        result = export_session_html(manager.session_file, manager.entries, manager.header,
                                     manager.leaf_id, output, cwd)
    except (ExportError, ValueError, OSError) as exc:
        print(f"Error: {exc}", file=sys.stderr)
        return 1
    print(f"Exported to: {result}")
    return 0
