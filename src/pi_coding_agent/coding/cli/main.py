"""The ``pi`` command line: parse flags, then hand over to a mode.

The parser is written by hand: argparse costs start-up time and prints multi-line usage errors,
while pi reports one line and stops. Usage errors exit with status 2. Mode modules are imported only
in the branch that runs them.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pi_coding_agent import PI_COMPATIBLE_VERSION, __version__
from pi_coding_agent.ai.types import THINKING_LEVELS, JsonObject
from pi_coding_agent.coding import paths
from pi_coding_agent.coding.options import CliArgs, PendingFlag

if TYPE_CHECKING:
    from pi_coding_agent.ai.models.catalog import ModelRegistry
    from pi_coding_agent.ai.types import Model

EXIT_USAGE = 2
EXIT_FAILURE = 1
MODES = ("text", "json", "rpc")
SANDBOX_MODES = ("off", "read-only", "workspace-write")  # as coding/sandbox/policy.py MODES, kept import-free

# pi 1.6.0's bundled extensions, which `-e builtin:<name>` names (ours are part of the program)
PI_BUILTIN_EXTENSIONS = frozenset({"mcp", "llama.cpp", "codemode", "tool-search"})


RESUME_HEADLESS = ("--resume opens the interactive session picker, which needs a terminal on stdin and stdout; "
                   "use --session <path|id> or --continue")


class CliError(Exception):
    """A usage error; ``str()`` is the one line printed after ``Error: ``."""


# flag -> (CliArgs attribute, kind); kinds: "bool", "value", "append", "list" (comma separated)
_FLAGS: dict[str, tuple[str, str]] = {}


def _flag(names: str, attr: str, kind: str) -> None:
    for name in names.split():
        _FLAGS[name] = (attr, kind)


_flag("-h --help", "help", "bool")
_flag("-v --version", "version", "bool")
_flag("-c --continue", "continue_session", "bool")
_flag("-r --resume", "resume", "bool")
_flag("--no-session", "no_session", "bool")
_flag("-nt --no-tools", "no_tools", "bool")
_flag("-nbt --no-builtin-tools", "no_builtin_tools", "bool")
_flag("-ne --no-extensions", "no_extensions", "bool")
_flag("--no-mcp", "no_mcp", "bool")
_flag("-ns --no-skills", "no_skills", "bool")
_flag("-np --no-prompt-templates", "no_prompt_templates", "bool")
_flag("--no-themes", "no_themes", "bool")
_flag("-nc --no-context-files", "no_context_files", "bool")
_flag("--verbose", "verbose", "bool")
_flag("--offline", "offline", "bool")
_flag("--mode", "mode", "value")
_flag("--provider", "provider", "value")
_flag("--model", "model", "value")
_flag("--api-key", "api_key", "value")
_flag("--thinking", "thinking", "value")
_flag("--system-prompt", "system_prompt", "value")
_flag("-n --name", "name", "value")
_flag("--session", "session", "value")
_flag("--session-id", "session_id", "value")
_flag("--fork", "fork", "value")
_flag("--session-dir", "session_dir", "value")
_flag("--export", "export", "value")
_flag("--use-theme", "use_theme", "value")
_flag("--tui-mode", "tui_mode", "value")
_flag("--sandbox", "sandbox", "value")
_flag("--append-system-prompt", "append_system_prompt", "append")
_flag("-e --extension", "extensions", "append")
_flag("--skill", "skills", "append")
_flag("--prompt-template", "prompt_templates", "append")
_flag("--theme", "themes", "append")
_flag("--models", "models", "list")
_flag("-t --tools", "tools", "list")
_flag("-xt --exclude-tools", "exclude_tools", "list")


def parse_args(argv: list[str]) -> CliArgs:
    """Parse ``argv`` (without the program name); raises ``CliError`` on the first problem."""
    args = CliArgs()
    i = 0
    while i < len(argv):
        arg = argv[i]
        i += 1
        if arg == "--":
            for rest in argv[i:]:
                _add_positional(args, rest)
            break
        if arg in ("-p", "--print"):
            args.print = True
            if i < len(argv) and _is_print_message(argv[i]):
                args.messages.append(argv[i])
                i += 1
        elif arg == "--list-models":
            if i < len(argv) and not argv[i].startswith(("-", "@")):
                args.list_models = argv[i]
                i += 1
            else:
                args.list_models = True
        elif arg in ("-a", "--approve", "-na", "--no-approve"):
            args.approve = arg in ("-a", "--approve")
        elif arg.startswith("-") and arg != "-":
            i = _parse_flag(args, argv, i, arg)
        else:
            _add_positional(args, arg)
    _check_values(args)
    return args


def _is_print_message(text: str) -> bool:
    """``-p <text>`` takes the next argument unless it looks like a flag or a file (``---`` is text)."""
    return not text.startswith("@") and (not text.startswith("-") or text.startswith("---"))


def _add_positional(args: CliArgs, arg: str) -> None:
    if arg.startswith("@"):
        args.file_args.append(arg[1:])
    else:
        args.messages.append(arg)


def _parse_flag(args: CliArgs, argv: list[str], i: int, arg: str) -> int:
    """Apply one flag (``--flag value`` or ``--flag=value``); returns the index after it."""
    name, inline = arg, None
    if arg.startswith("--") and "=" in arg:
        name, inline = arg.split("=", 1)
    if name not in _FLAGS:
        if not name.startswith("--"):
            raise CliError(f"Unknown option: {name}")
        return _pending_flag(args, argv, i, name, inline)
    attr, kind = _FLAGS[name]
    if kind == "bool":
        if inline is not None:
            raise CliError(f"{name} does not take a value")
        setattr(args, attr, True)
        return i
    if inline is None:
        if i >= len(argv) or (argv[i].startswith("-") and argv[i] != "-"):
            raise CliError(f"{name} requires a value")
        inline = argv[i]
        i += 1
    if kind == "append":
        getattr(args, attr).append(inline)
    elif kind == "list":
        setattr(args, attr, [part.strip() for part in inline.split(",") if part.strip()])
    else:
        setattr(args, attr, inline)
    return i


def _pending_flag(args: CliArgs, argv: list[str], i: int, name: str, inline: str | None) -> int:
    """An option only an extension can know: kept with its value (the next word unless that is an
    option or an ``@file``) for the check once extensions have loaded (``coding/extensions/flags.py``)."""
    if inline is None and i < len(argv) and not argv[i].startswith(("-", "@")):
        args.pending_flags.append(PendingFlag(name[2:], argv[i], inline=False))
        return i + 1
    args.pending_flags.append(PendingFlag(name[2:], inline, inline=inline is not None))
    return i


def _check_values(args: CliArgs) -> None:
    """Enumerations, tool lists and flag combinations pi rejects."""
    if args.mode is not None and args.mode not in MODES and args.mode != "acp":  # acp: ours, not in pi's list
        raise CliError(f'Invalid mode "{args.mode}". Valid values: {", ".join(MODES)}')
    if args.thinking is not None and args.thinking not in THINKING_LEVELS:
        raise CliError(f'Invalid thinking level "{args.thinking}". Valid values: {", ".join(THINKING_LEVELS)}')
    if args.tui_mode is not None and args.tui_mode not in ("regular", "fullscreen"):
        raise CliError(f'Invalid TUI mode "{args.tui_mode}". Valid values: regular, fullscreen')
    if args.sandbox is not None and args.sandbox not in SANDBOX_MODES:
        raise CliError(f'Invalid sandbox mode "{args.sandbox}". Valid values: {", ".join(SANDBOX_MODES)}')
    if args.tools is not None:
        problem = _tool_list_problem(args.tools)
        if problem:
            raise CliError(f"--tools: {problem}")
    if args.fork is not None:
        _no_conflicts("--fork", {"--session": args.session is not None, "--continue": args.continue_session,
                                 "--resume": args.resume, "--no-session": args.no_session})
    if args.session_id is not None:
        _no_conflicts("--session-id", {"--session": args.session is not None, "--continue": args.continue_session,
                                       "--resume": args.resume})


def _tool_list_problem(entries: list[str]) -> str | None:
    """``+name``/``-name`` entries modify the defaults and cannot be mixed with plain names or globs."""
    modifiers = [e for e in entries if e.startswith(("+", "-"))]
    if not modifiers:
        return None
    if len(modifiers) < len(entries):
        return "tool names cannot be mixed with +name or -name entries"
    pattern = next((e for e in modifiers if "*" in e), None)
    if pattern:
        return f"+name and -name entries take exact tool names, not patterns: {pattern}"
    return None


def _no_conflicts(flag: str, others: dict[str, bool]) -> None:
    present = [name for name, given in others.items() if given]
    if present:
        raise CliError(f"{flag} cannot be combined with {', '.join(present)}")


# ----------------------------------------------------------------------------- entry point


def main(argv: list[str] | None = None) -> int:
    """Run ``pi``; returns the process exit status."""
    paths.mark_environment()
    words = sys.argv[1:] if argv is None else list(argv)
    from pi_coding_agent.coding.cli.subcommands import run_subcommand

    status = run_subcommand(words)
    if status is not None:
        return status
    try:
        args = parse_args(words)
    except CliError as err:
        return _refuse(err, EXIT_USAGE)
    if args.version:
        # stdout is exactly pi's version, which every version-checking client parses; ours follows on stderr
        print(PI_COMPATIBLE_VERSION)
        print(f"pi-coding-agent-py {__version__}", file=sys.stderr)
        return 0
    problems = _startup_problems(args)
    for problem in problems:
        print(f"Error: {problem}", file=sys.stderr)
    if problems and not (args.help or args.list_models is not None or args.export is not None):
        return EXIT_FAILURE
    if args.help:
        return _print_or_stop(HELP + _extension_flags_help(args))
    if args.list_models is not None:
        return list_models(args.list_models if isinstance(args.list_models, str) else None, args)
    return _run_mode(args)


def _refuse(err: CliError, status: int) -> int:
    print(f"Error: {err}", file=sys.stderr)
    return status


def _startup_problems(args: CliArgs) -> list[str]:
    """What pi reports (exit 1, in its order) once flags parse but cannot start a run; --help and
    --list-models print them and go on."""
    if args.mode == "rpc" and args.file_args:
        return ["@file arguments are not supported in RPC mode"]
    problems = [problem for entry in args.extensions if (problem := _builtin_extension_problem(entry))]
    if args.provider is not None and args.model is None:
        problems.append(f"--provider requires --model (for example: --provider {args.provider} --model <pattern>)")
    return problems


def _builtin_extension_problem(entry: str) -> str | None:
    if not entry.startswith("builtin:"):
        return None
    if entry.removeprefix("builtin:") not in PI_BUILTIN_EXTENSIONS:
        return f'Failed to load extension "{entry}": Unknown built-in extension: {entry}'
    return None


def _print_or_stop(text: str) -> int:
    """Print ``text``; a reader that went away (``pi --list-models | head -1``) ends us quietly."""
    import os

    try:
        print(text, flush=True)
    except BrokenPipeError:
        # Point stdout at /dev/null so the interpreter's final flush cannot raise again.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    return 0


def _run_mode(args: CliArgs) -> int:
    """Dispatch to the export command or a mode (imported lazily: each pulls in its own stack)."""
    from pi_coding_agent.coding.modes.start_up import collector_paused, import_asyncio_without_ssl

    with collector_paused():
        import_asyncio_without_ssl()  # every mode runs on asyncio; TLS loads with the first https:// request
    if args.export is not None:
        from pi_coding_agent.coding.export.html import export_cli

        return int(export_cli(args))
    if args.mode == "rpc":
        from pi_coding_agent.coding.modes.rpc import mode as rpc

        return int(rpc.run(args))
    if args.mode == "acp":
        from pi_coding_agent.coding.modes.acp import mode as acp

        return int(acp.run(args))
    headless = args.print or args.mode is not None or not (sys.stdin.isatty() and sys.stdout.isatty())
    if args.resume and headless:
        return _refuse(CliError(RESUME_HEADLESS), EXIT_USAGE)
    try:
        images = _inline_file_args(args)
    except CliError as err:
        return _refuse(err, EXIT_FAILURE)
    if not headless:
        from pi_coding_agent.coding.modes import interactive

        return int(interactive.run(args, images))
    if args.mode == "json":
        from pi_coding_agent.coding.modes import json_mode

        return int(json_mode.run(args, images))
    from pi_coding_agent.coding.modes import print_mode

    return int(print_mode.run(args, images))


def _inline_file_args(args: CliArgs) -> list[JsonObject] | None:
    """Put the ``@path`` blocks in front of the first message; returns the images for the first prompt."""
    if not args.file_args:
        return None
    from pi_coding_agent.coding.cli.file_args import FileArgError, expand_file_args

    try:
        files = expand_file_args(args.file_args, Path.cwd())
    except FileArgError as err:
        raise CliError(str(err)) from None
    args.messages = files.first_messages(args.messages)
    return files.images or None


# ----------------------------------------------------------------------------- --list-models


def list_models(search: str | None, args: CliArgs | None = None) -> int:
    """Print the models that have credentials as a table (provider, model, context, max-out, thinking, images).

    Like pi, only models a request could be sent to are listed, providers extensions register included;
    unlike pi, nothing is written (no auth.json). Our faux provider (pi has none) only turns up when a
    search asks for it, so the full list is pi's.
    """
    from pi_coding_agent.ai.auth.keys import AuthStorage
    from pi_coding_agent.ai.models.catalog import FAUX_PROVIDER, ModelRegistry
    from pi_coding_agent.ai.models.resolution import locale_key

    agent = paths.agent_dir()
    loaded = _loaded_extensions(args) if args is not None else None
    registry = loaded[0] if loaded is not None else ModelRegistry(agent, AuthStorage(agent, create_missing=False))
    models = [m for m in registry.available_models() if search or m["provider"] != FAUX_PROVIDER]
    for error in registry.errors:
        print(f"Warning: {error}", file=sys.stderr)
    if search:
        models = [m for m in models if fuzzy_filter_match(search, f"{m['provider']} {m['id']}")]
        if not models:
            return _print_or_stop(f'No models matching "{search}"')
    if not models:
        return _print_or_stop(NO_MODELS)
    models.sort(key=lambda m: (locale_key(m["provider"]), locale_key(m["id"])))
    return _print_or_stop(format_model_table(models))


def _loaded_extensions(args: CliArgs) -> tuple[ModelRegistry, list[dict[str, Any]]] | None:
    """The extensions' providers and flags (``bootstrap.loaded_extensions``); None without extensions."""
    import asyncio

    from pi_coding_agent.coding.bootstrap import loaded_extensions

    try:
        return asyncio.run(loaded_extensions(args))
    except Exception as err:  # an extension or the session could not start: answer without them
        print(f"Warning: {err}", file=sys.stderr)
        return None


def _extension_flags_help(args: CliArgs) -> str:
    """pi's "Extension CLI Flags:" section, when extensions registered flags."""
    loaded = _loaded_extensions(args)
    flags = loaded[1] if loaded is not None else []
    if not flags:
        return ""
    lines = [f"  --{flag['name']}{' <value>' if flag['type'] == 'string' else ''}".ljust(30)
             + (flag.get("description") or f"Registered by {flag['extensionPath']}") for flag in flags]
    return "\n\nExtension CLI Flags:\n" + "\n".join(lines)


def format_model_table(models: list[Model]) -> str:
    header = ("provider", "model", "context", "max-out", "thinking", "images")
    rows = [header] + [
        (m["provider"], m["id"], format_token_count(m["contextWindow"]), format_token_count(m["maxTokens"]),
         "yes" if m.get("reasoning") else "no", "yes" if "image" in m.get("input", []) else "no")
        for m in models
    ]
    widths = [max(len(row[col]) for row in rows) for col in range(len(header))]
    return "\n".join("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)) for row in rows)


def format_token_count(count: int) -> str:
    """200000 -> ``200K``, 1000000 -> ``1M``, 1048576 -> ``1.0M`` (one decimal, halves round up)."""
    for size, unit in ((1_000_000, "M"), (1_000, "K")):
        if count >= size:
            if count % size == 0:
                return f"{count // size}{unit}"
            from decimal import ROUND_HALF_UP, Decimal

            return f"{Decimal(count / size).quantize(Decimal('0.1'), ROUND_HALF_UP)}{unit}"
    return str(count)


def fuzzy_filter_match(query: str, text: str) -> bool:
    """Every whitespace- or slash-separated token occurs in ``text`` as an in-order subsequence."""
    import re

    tokens = [t for t in re.split(r"[\s/]+", query.strip()) if t]
    return all(_fuzzy_token(token.lower(), text.lower()) for token in tokens)


def _fuzzy_token(token: str, text: str) -> bool:
    if _subsequence(token, text):
        return True
    import re

    # "gpt4" also finds "4gpt"-style names and vice versa (letters and digits swapped).
    swapped = re.fullmatch(r"([a-z]+)([0-9]+)|([0-9]+)([a-z]+)", token)
    if swapped is None:
        return False
    a, b, c, d = swapped.groups()
    return _subsequence(f"{b}{a}" if a else f"{d}{c}", text)


def _subsequence(needle: str, haystack: str) -> bool:
    position = 0
    for ch in needle:
        position = haystack.find(ch, position) + 1
        if position == 0:
            return False
    return True


NO_MODELS = "No models with credentials: set a provider's API key variable (see docs/models.md)."

HELP = f"""pi-coding-agent-py {__version__} (implements pi {PI_COMPATIBLE_VERSION}) - a coding agent with read, bash, edit and write tools (interactive, print, JSON, RPC)

Usage:
  pi [options] [--] [@files...] [messages...]

Modes:
  (none, on a terminal)          The interactive terminal UI (docs/interactive.md)
  -p, --print                    Answer the prompt(s) and exit, printing the final text
  --mode <text|json|rpc>         text (print), json (event stream), rpc (JSON-lines protocol on stdio)
  --export <session> [out.html]  Write a session file as a self-contained HTML page and exit
  --list-models [search]         Show the models that have credentials (a key, or keyless), optionally filtered

Model:
  --provider <name>              Provider in which --model is looked up (requires --model)
  --model <pattern>              Model id, provider/id or a fuzzy pattern; ":<level>" sets thinking
  --models <patterns>            Comma-separated patterns (globs allowed) the model cycle is limited to
  --thinking <level>             {", ".join(THINKING_LEVELS)}
  --api-key <key>                Key for this run (otherwise auth.json, models.json, environment)

Session:
  -c, --continue                 Continue the latest session of this directory
  -r, --resume                   Pick a session to resume (interactive mode)
  --session <path|id>            Open a session file or id
  --session-id <id>              Use (or create) this session id in the current directory
  --fork <path|id>               Start a copy of another session here
  --session-dir <dir>            Where sessions are stored and looked up
  --no-session                   Keep the session in memory only
  -n, --name <name>              Display name of the session

Tools and resources:
  -t, --tools <list>             Tools to enable (names or globs; +name/-name adjust the defaults)
  -xt, --exclude-tools <list>    Tools to disable
  -nt, --no-tools                Start without tools
  -nbt, --no-builtin-tools       Start without the built-in tools
  -e, --extension <path>         Load a Python extension file or folder (repeatable)
  -ne, --no-extensions           Skip extension discovery
  --no-mcp                       Disable MCP servers
  --skill <path>                 Load a skill (repeatable)
  -ns, --no-skills               Skip skill discovery
  --prompt-template <path>       Load a prompt template (repeatable)
  -np, --no-prompt-templates     Skip prompt template discovery
  -nc, --no-context-files        Ignore AGENTS.md / CLAUDE.md files
  --system-prompt <text|file>    Replace the default system prompt
  --append-system-prompt <text|file>  Add to the system prompt (repeatable)
  -a, --approve                  Trust this project's .pi files for this run
  -na, --no-approve              Ignore this project's .pi files for this run
  --offline                      No network activity at start-up
  --sandbox <mode>               off, read-only or workspace-write: limit what the model's tools touch

Other:
  -h, --help                     This text
  -v, --version                  Print the pi version implemented (stdout), then ours (stderr)

Environment:
  {paths.ENV_AGENT_DIR:<30} Configuration directory (default ~/.pi/agent)
  {paths.ENV_SESSION_DIR:<30} Session directory (--session-dir wins)
  Provider keys, e.g. ANTHROPIC_API_KEY, OPENAI_API_KEY, GEMINI_API_KEY, OPENROUTER_API_KEY"""
