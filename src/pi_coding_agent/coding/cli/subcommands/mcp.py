"""``pi mcp add|remove|list|login|logout``: configure and check MCP servers without a session.

Flags, messages and exit codes are pi's: ``list`` connects to every enabled server and exits 1 when
an entry is invalid or an enabled server did not connect; ``add`` validates the entry before it is
written. Extensions are not loaded, so only file-configured servers are seen.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pi_coding_agent.ai.types import JsonObject
from pi_coding_agent.coding import paths
from pi_coding_agent.coding.mcp.config import (
    ServerEntry,
    add_server,
    edit_servers,
    load_config,
    validate_server,
)

HELP = """Usage:
  pi mcp add <server> [options] -- <command> [args...]
  pi mcp add <server> [options] --url <url>
  pi mcp remove <server> [-l]
  pi mcp list [--json]
  pi mcp login <server> [-l] [--timeout <seconds>]
  pi mcp logout <server> [-l]

Configure and check MCP servers without starting a session.
Reads ~/.pi/agent/mcp.json and, in trusted projects, .pi/mcp.json.

Commands:
  add <server>            Add or replace a server in mcp.json
  remove <server>         Remove a server from mcp.json
  list                    Show state, tools, and errors (exits 1 on failure)
  login <server>          Sign in through the browser
  logout <server>         Delete the stored OAuth credentials

Options for add, remove, login, and logout:
  -l, --local             Use .pi/mcp.json in the current project instead of the global file

Options for add:
  --url <url>             Streamable HTTP server URL (instead of a command)
  --env <KEY=VALUE>       Environment variable for a stdio server (repeatable)
  --cwd <dir>             Working directory for a stdio server
  --header <KEY=VALUE>    HTTP header (repeatable)
  --bearer-token-env-var <NAME>
                          Send "Authorization: Bearer ${NAME}"
  --oauth-client-id <id>  Pre-registered OAuth client id
  --oauth-client-secret <secret>
                          OAuth client secret (may be ${NAME} or !command)
  --oauth-callback-port <port>
                          Fixed OAuth callback port
  --oauth-client-name <name>
                          Client name sent when registering with the OAuth server
  --oauth-client-registration <mode>
                          auto (default), cimd, or dcr
  --exposure <mode>       codemode (default), deferred, direct, or hidden
  --description <text>    What the server offers, shown in the system prompt

Other options:
  --json                  Print the list as JSON
  --timeout <seconds>     Time limit for the whole sign-in (default: 300)"""
HELP_HINT = 'Use "pi mcp --help" for usage.'
ADD_OPTIONS = {"local": "flag", "url": "value", "env": "list", "cwd": "value", "header": "list",
               "bearer-token-env-var": "value", "oauth-client-id": "value", "oauth-client-secret": "value",
               "oauth-callback-port": "value", "oauth-client-name": "value", "oauth-client-registration": "value",
               "exposure": "value", "description": "value"}
HTTP_ONLY = ("header", "bearer-token-env-var", "oauth-client-id", "oauth-client-secret", "oauth-callback-port",
             "oauth-client-name", "oauth-client-registration")
OAUTH_KEYS = {"oauth-client-id": "clientId", "oauth-client-secret": "clientSecret",
              "oauth-callback-port": "callbackPort", "oauth-client-name": "clientName",
              "oauth-client-registration": "clientRegistration"}


def _err(line: str) -> None:
    print(line, file=sys.stderr)


class Parsed:
    def __init__(self) -> None:
        self.positional: list[str] = []
        self.values: dict[str, Any] = {}
        self.lists: dict[str, list[str]] = {}


def parse_options(args: list[str], known: dict[str, str], max_positionals: int = 1 << 30) -> Parsed | None:
    """``--name value`` options; ``--`` or the last positional ends them (a command's own flags pass)."""
    parsed = Parsed()
    index = 0
    while index < len(args):
        typed = args[index]
        arg = "--local" if typed == "-l" else typed
        if arg == "--" or len(parsed.positional) >= max_positionals:
            parsed.positional += args[index + 1:] if arg == "--" else args[index:]
            break
        if not arg.startswith("--"):
            parsed.positional.append(arg)
        elif (kind := known.get(arg[2:])) is None:
            _err(f"Unknown option {typed}.\n{HELP_HINT}")
            return None
        elif kind == "flag":
            parsed.values[arg[2:]] = True
        elif index + 1 >= len(args):
            _err(f"{arg} needs a value.")
            return None
        else:
            index += 1
            if kind == "list":
                parsed.lists.setdefault(arg[2:], []).append(args[index])
            else:
                parsed.values[arg[2:]] = args[index]
        index += 1
    return parsed


def parse_one_server(args: list[str], command: str, known: dict[str, str]) -> tuple[str, Parsed] | None:
    """``<command> <server> [options]``: the server name and the options, or None (reported)."""
    parsed = parse_options(args, known)
    if parsed is None:
        return None
    if len(parsed.positional) != 1:
        _err(f"Usage: pi mcp {command} <server> [-l]\n{HELP_HINT}")
        return None
    return parsed.positional[0], parsed


def _pairs(option: str, pairs: list[str]) -> dict[str, str] | None:
    out: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            _err(f'--{option} expects KEY=VALUE, got "{pair}".')
            return None
        out[key] = value
    return out


def _trusted(agent_dir: Path, cwd: Path) -> bool:
    from pi_coding_agent.coding.resources.trust import saved_trust_decision

    return saved_trust_decision(agent_dir, cwd) is True


def main(argv: list[str]) -> int:
    command, rest = (argv[0], argv[1:]) if argv else (None, [])
    if command in (None, "help") or "--help" in argv or "-h" in argv:
        print(HELP)
        return 0
    agent_dir, cwd = paths.agent_dir(), Path.cwd().resolve()
    project_config = cwd / ".pi" / "mcp.json"
    if command == "add":
        return add(rest, agent_dir, cwd, project_config)
    if command == "remove":
        return remove(rest, agent_dir, cwd, project_config)
    trusted = _trusted(agent_dir, cwd)
    note = (f"{project_config} is ignored because the project is not trusted. Start pi in the project to trust it."
            if not trusted and project_config.exists() else None)
    if command == "list":
        parsed = parse_options(rest, {"json": "flag"})
        if parsed is None:
            return 1
        if parsed.positional:
            _err(f"Usage: pi mcp list [--json]\n{HELP_HINT}")
            return 1
        return asyncio.run(list_servers(agent_dir, cwd, trusted, bool(parsed.values.get("json")), note))
    if command in ("login", "logout"):
        return sign_in_out(command, rest, agent_dir, cwd, trusted, note)
    _err(f'Unknown mcp command "{command}".\n{HELP_HINT}')
    return 1


def _build_config(parsed: Parsed, url: str | None, command: list[str]) -> JsonObject | None:
    values = parsed.values
    if url is not None:
        headers = _pairs("header", parsed.lists.get("header", []))
        if headers is None:
            return None
        if "bearer-token-env-var" in values:
            headers["Authorization"] = f"Bearer ${{{values['bearer-token-env-var']}}}"
        oauth = {key: values[option] for option, key in OAUTH_KEYS.items() if option in values}
        if "callbackPort" in oauth:
            oauth["callbackPort"] = int(oauth["callbackPort"]) if str(oauth["callbackPort"]).isdigit() else oauth["callbackPort"]
        config: JsonObject = {"url": url, **({"headers": headers} if headers else {}),
                                  **({"oauth": oauth} if oauth else {})}
    else:
        env = _pairs("env", parsed.lists.get("env", []))
        if env is None:
            return None
        config = {"command": command[0], **({"args": command[1:]} if command[1:] else {}),
                  **({"env": env} if env else {}), **({"cwd": values["cwd"]} if "cwd" in values else {})}
    for key in ("exposure", "description"):
        if key in values:
            config[key] = values[key]
    return config


def add(args: list[str], agent_dir: Path, cwd: Path, project_config: Path) -> int:
    parsed = parse_options(args, ADD_OPTIONS, max_positionals=2)
    if parsed is None:
        return 1
    name, command = (parsed.positional[0], parsed.positional[1:]) if parsed.positional else (None, [])
    url = parsed.values.get("url")
    if not name or (url is None) == (not command):
        _err(f"Usage: pi mcp add <server> [options] (--url <url> | -- <command> [args...])\n{HELP_HINT}")
        return 1
    misplaced = next((o for o in (HTTP_ONLY if url is None else ("env", "cwd"))
                      if o in parsed.values or o in parsed.lists), None)
    if misplaced:
        where = "HTTP servers (--url)" if url is None else "stdio servers"
        _err(f"--{misplaced} only applies to {where}.")
        return 1
    config = _build_config(parsed, url, command)
    if config is None:
        return 1
    validated = validate_server(name, config)
    if isinstance(validated, str):
        _err(validated)
        return 1
    local = bool(parsed.values.get("local"))
    path = project_config if local else agent_dir / "mcp.json"
    try:
        replaced = add_server(path, name, validated)
    except (OSError, ValueError) as exc:
        _err(f"Could not update {path}: {exc}")
        return 1
    print(f'{"Replaced" if replaced else "Added"} {"project" if local else "global"} MCP server "{name}" in {path}.')
    if local and not _trusted(agent_dir, cwd):
        print(f"The project is not trusted, so {path} is ignored until you start pi in the project and trust it.")
    hint = f". If it requires sign-in: pi mcp login {name}" if ServerEntry(name, validated, "", "").uses_oauth else ""
    print(f"Check it with: pi mcp list{hint}")
    return 0


def remove(args: list[str], agent_dir: Path, cwd: Path, project_config: Path) -> int:
    one = parse_one_server(args, "remove", {"local": "flag"})
    if one is None:
        return 1
    name, parsed = one
    local = bool(parsed.values.get("local"))
    scope = "project" if local else "global"
    path = project_config if local else agent_dir / "mcp.json"

    def drop(servers: JsonObject | None, _whole: JsonObject) -> bool:
        if not servers or name not in servers:
            return False
        del servers[name]
        return True

    try:
        removed = path.exists() and edit_servers(path, drop)
    except (OSError, ValueError) as exc:
        _err(f"Could not update {path}: {exc}")
        return 1
    if removed:
        print(f'Removed {scope} MCP server "{name}" from {path}.')
        return 0
    other = next((e for e in load_config(agent_dir, cwd, True).servers if e.name == name and e.scope != scope), None)
    where = ""
    if other is not None:
        where = f" It is defined in {other.source}{'; use --local' if other.scope == 'project' else '; omit --local'}."
    _err(f'No {scope} MCP server named "{name}" in {path}.{where}')
    return 1


async def _report(entry: ServerEntry, cwd: Path, agent_dir: Path) -> JsonObject:
    from pi_coding_agent.coding.mcp.connection import ServerConnection
    from pi_coding_agent.coding.mcp.log import ServerLog

    report: dict[str, Any] = {"name": entry.name, "scope": entry.scope, "source": entry.source,
                              **({"override": entry.override} if entry.override else {}),
                              "enabled": entry.enabled, "exposure": entry.exposure,
                              "transport": entry.config["url"] if entry.is_http else
                              " ".join([entry.config["command"], *entry.config.get("args", [])]),
                              "state": "disabled", "tools": []}
    if not entry.enabled:
        return report
    from pi_coding_agent.coding.mcp.manager import token_source

    connection = ServerConnection(entry, cwd, ServerLog(agent_dir / "mcp.log"), _ignore, _ignore,
                                  token_source(entry, agent_dir))
    await connection.start()
    report["state"] = connection.state
    report["tools"] = [t["name"] for t in connection.tools]
    overrides = {t: e for t in report["tools"] if (e := entry.tool_exposure(t)) != entry.exposure}
    if overrides:
        report["toolExposure"] = overrides
    if connection.has_resources:
        report["resources"] = True
    if connection.state != "connected" and connection.error:
        report["error"] = connection.error
    await connection.close()
    return report


def _ignore(_connection: object) -> None:
    """pi mcp list reports states once, at the end."""


async def list_servers(agent_dir: Path, cwd: Path, trusted: bool, as_json: bool, note: str | None) -> int:
    loaded = load_config(agent_dir, cwd, trusted)
    reports = await asyncio.gather(*(_report(e, cwd, agent_dir) for e in loaded.servers))
    failed = bool(loaded.errors) or any(r["enabled"] and r["state"] != "connected" for r in reports)
    if as_json:
        print(json.dumps({"servers": reports, "errors": loaded.errors, **({"note": note} if note else {})}, indent=2))
        return 1 if failed else 0
    if not reports and not loaded.errors:
        print(f"No MCP servers configured. Add them to {agent_dir / 'mcp.json'} or .pi/mcp.json.")
    for report in reports:
        _print_report(report, print)
    for error in loaded.errors:
        print(f"config error: {error}")
    if note:
        print(note)
    return 1 if failed else 0


def _print_report(report: dict[str, Any], out: Callable[[str], None]) -> None:
    count = len(report["tools"])
    state = {"connected": f"connected, {count} tool{'' if count == 1 else 's'}",
             "needs-auth": "needs sign-in"}.get(report["state"], report["state"])
    out(f"{report['name']}: {state} ({report['exposure']}, {report['scope']})")
    out(f"  {report['transport']}")
    if report.get("override"):
        out(f"  project override: {report['override']}")
    if report["state"] == "needs-auth":
        out(f"  sign in with: pi mcp login {report['name']}")
    if report["tools"]:
        marked = [f"{t} [{report['toolExposure'][t]}]" if t in report.get("toolExposure", {}) else t
                  for t in report["tools"]]
        out(f"  tools: {', '.join(marked)}")
    if report.get("resources"):
        out("  offers resources")
    if report.get("error"):
        out("  " + report["error"].replace("\n", "\n  "))


def sign_in_out(command: str, args: list[str], agent_dir: Path, cwd: Path, trusted: bool, note: str | None) -> int:
    known = {"local": "flag", "timeout": "value"} if command == "login" else {"local": "flag"}
    one = parse_one_server(args, command, known)
    if one is None:
        return 1
    name, parsed = one
    loaded = load_config(agent_dir, cwd, trusted)
    entry = next((e for e in loaded.servers if e.name == name), None)
    if entry is None:
        names = [e.name for e in loaded.servers]
        close = next((n for n in names if _distance(n, name) <= 2), None)
        suggestion = f' Did you mean "{close}"?' if close else ""
        _err(f'No MCP server named "{name}".{suggestion}{" " + note if note else ""} '
             f'Configured: {", ".join(names) or "none"}.')
        return 1
    if parsed.values.get("local") and entry.scope != "project":
        _err(f'MCP server "{name}" is defined in {entry.source}, not in the project; omit --local.')
        return 1
    if not entry.uses_oauth:
        _err(f'MCP server "{name}" does not use OAuth. Only HTTP servers without an Authorization header do.')
        return 1
    from pi_coding_agent.coding.mcp.manager import credential_store

    store = credential_store(agent_dir)
    if command == "logout":
        removed = store.save(name, entry.config["url"], None)
        print(f'Signed out of MCP server "{name}".' if removed else f'No stored credentials for MCP server "{name}".')
        return 0
    try:
        timeout = float(parsed.values.get("timeout", 300))
    except ValueError:
        timeout = -1
    if not timeout > 0:
        _err("--timeout must be a positive number of seconds.")
        return 1
    return asyncio.run(_login(entry, cwd, agent_dir, timeout))


async def _login(entry: ServerEntry, cwd: Path, agent_dir: Path, timeout: float) -> int:
    """Connect first (already signed in?), then the browser flow, then connect again."""
    from pi_coding_agent.coding.mcp.connection import ServerConnection
    from pi_coding_agent.coding.mcp.log import ServerLog
    from pi_coding_agent.coding.mcp.manager import token_source
    from pi_coding_agent.coding.mcp.oauth import SignInError, sign_in

    name = entry.name
    connection = ServerConnection(entry, cwd, ServerLog(agent_dir / "mcp.log"), _ignore, _ignore,
                                  token_source(entry, agent_dir))
    try:
        await connection.start()
        if connection.state == "connected":
            print(f'Already signed in to MCP server "{name}" ({len(connection.tools)} tools).')
            return 0
        if connection.state != "needs-auth":
            _err(f'MCP server "{name}" failed to connect: {connection.error or "unknown error"}')
            return 1

        def show(url: str) -> None:
            print(f'Sign in to MCP server "{name}" in your browser:\n{url}', flush=True)

        from pi_coding_agent.coding.mcp.manager import credential_store

        try:
            await sign_in(name, entry.config["url"], entry.config.get("oauth") or {}, credential_store(agent_dir),
                          connection.challenge, show, timeout)
        except (SignInError, OSError) as exc:
            _err(f'Sign-in to MCP server "{name}" failed: {exc}')
            return 1
        await connection.close()
        await connection.start()
        if connection.state != "connected":
            _err(f"Signed in, but {connection.error or connection.state}")
            return 1
        print(f'Signed in to MCP server "{name}" ({len(connection.tools)} tools).')
        return 0
    finally:
        await connection.close()


def _distance(a: str, b: str) -> int:
    """Levenshtein distance, to suggest a configured name for a mistyped one."""
    previous = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        current = [i]
        for j, cb in enumerate(b, 1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (ca != cb)))
        previous = current
    return previous[-1]
