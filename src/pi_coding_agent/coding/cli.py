"""The ``pi`` command line (config.md §10): parse flags, then hand over to a mode.

The parser is written by hand: argparse costs start-up time and prints multi-line usage errors,
while pi reports one line and stops. Usage errors exit with status 2. Mode modules are imported only
in the branch that runs them.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from pi_coding_agent import __version__
from pi_coding_agent.ai.types import THINKING_LEVELS
from pi_coding_agent.coding import paths

if TYPE_CHECKING:
    from pi_coding_agent.ai.types import Model

EXIT_USAGE = 2
MODES = ("text", "json", "rpc")


class CliError(Exception):
    """A usage error; ``str()`` is the one line printed after ``Error: ``."""


@dataclass
class CliArgs:
    """Every flag of ``pi``; lists default to empty, unset options to None."""

    help: bool = False
    version: bool = False
    mode: str | None = None
    print: bool = False
    continue_session: bool = False
    resume: bool = False
    provider: str | None = None
    model: str | None = None
    api_key: str | None = field(default=None, repr=False)
    thinking: str | None = None
    models: list[str] | None = None
    system_prompt: str | None = None
    append_system_prompt: list[str] = field(default_factory=list)
    name: str | None = None
    session: str | None = None
    session_id: str | None = None
    fork: str | None = None
    session_dir: str | None = None
    no_session: bool = False
    tools: list[str] | None = None
    exclude_tools: list[str] | None = None
    no_tools: bool = False
    no_builtin_tools: bool = False
    extensions: list[str] = field(default_factory=list)
    no_extensions: bool = False
    no_mcp: bool = False
    skills: list[str] = field(default_factory=list)
    no_skills: bool = False
    prompt_templates: list[str] = field(default_factory=list)
    no_prompt_templates: bool = False
    themes: list[str] = field(default_factory=list)
    no_themes: bool = False
    use_theme: str | None = None
    tui_mode: str | None = None
    no_context_files: bool = False
    approve: bool | None = None  # True: -a, False: -na, None: ask the trust rules
    offline: bool = False
    verbose: bool = False
    export: str | None = None
    list_models: str | bool | None = None  # True without a search term
    messages: list[str] = field(default_factory=list)
    file_args: list[str] = field(default_factory=list)

    @property
    def export_output(self) -> str | None:
        """``--export <in> [out]``: the optional output path is the first positional argument."""
        return self.messages[0] if self.messages else None


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
        raise CliError(f"Unknown option: {name}")
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


def _check_values(args: CliArgs) -> None:
    """Enumerations, tool lists and flag combinations pi rejects."""
    if args.mode is not None and args.mode not in MODES and args.mode != "acp":  # acp: ours, not in pi's list
        raise CliError(f'Invalid mode "{args.mode}". Valid values: {", ".join(MODES)}')
    if args.thinking is not None and args.thinking not in THINKING_LEVELS:
        raise CliError(f'Invalid thinking level "{args.thinking}". Valid values: {", ".join(THINKING_LEVELS)}')
    if args.tui_mode is not None and args.tui_mode not in ("regular", "fullscreen"):
        raise CliError(f'Invalid TUI mode "{args.tui_mode}". Valid values: regular, fullscreen')
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
    from pi_coding_agent.coding.subcommands import run_subcommand

    status = run_subcommand(words)
    if status is not None:
        return status
    try:
        args = parse_args(words)
    except CliError as err:
        print(f"Error: {err}", file=sys.stderr)
        return EXIT_USAGE
    if args.help:
        print(HELP)
        return 0
    if args.version:
        print(__version__)
        return 0
    if args.list_models is not None:
        return list_models(args.list_models if isinstance(args.list_models, str) else None)
    return _run_mode(args)


def _run_mode(args: CliArgs) -> int:
    """Dispatch to the export command or a mode (imported lazily: each pulls in its own stack)."""
    if args.export is not None:
        from pi_coding_agent.coding.export.html import export_cli

        return int(export_cli(args))
    if args.mode == "rpc":
        from pi_coding_agent.coding.modes import rpc

        return int(rpc.run(args))
    if args.mode == "acp":
        from pi_coding_agent.coding.modes import acp

        return int(acp.run(args))
    if args.mode == "json":
        from pi_coding_agent.coding.modes import json_mode

        return int(json_mode.run(args))
    if args.print or args.mode == "text" or not (sys.stdin.isatty() and sys.stdout.isatty()):
        from pi_coding_agent.coding.modes import print_mode

        return int(print_mode.run(args))
    print("Error: interactive mode is not available; use -p, --mode json or --mode rpc", file=sys.stderr)
    return EXIT_USAGE


# ----------------------------------------------------------------------------- --list-models


def list_models(search: str | None) -> int:
    """Print the available models as a table (provider, model, context, max-out, thinking, images)."""
    from pi_coding_agent.ai.keys import AuthStorage
    from pi_coding_agent.ai.models import ModelRegistry, locale_key

    agent = paths.agent_dir()
    registry = ModelRegistry(agent, AuthStorage(agent))
    models = registry.available_models()
    for error in registry.errors:
        print(f"Warning: {error}", file=sys.stderr)
    if search:
        models = [m for m in models if fuzzy_filter_match(search, f"{m['provider']} {m['id']}")]
        if not models:
            print(f'No models matching "{search}"')
            return 0
    models.sort(key=lambda m: (locale_key(m["provider"]), locale_key(m["id"])))
    print(format_model_table(models))
    return 0


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


HELP = f"""pi {__version__} - a coding agent with read, bash, edit and write tools (headless: print, JSON, RPC)

Usage:
  pi [options] [--] [@files...] [messages...]

Modes:
  -p, --print                    Answer the prompt(s) and exit, printing the final text
  --mode <text|json|rpc>         text (print), json (event stream), rpc (JSON-lines protocol on stdio)
  --export <session> [out.html]  Write a session file as a self-contained HTML page and exit
  --list-models [search]         Show the models that have credentials (optionally filtered)

Model:
  --provider <name>              Provider in which --model is looked up
  --model <pattern>              Model id, provider/id or a fuzzy pattern; ":<level>" sets thinking
  --models <patterns>            Comma-separated patterns (globs allowed) the model cycle is limited to
  --thinking <level>             {", ".join(THINKING_LEVELS)}
  --api-key <key>                Key for this run (otherwise auth.json, models.json, environment)

Session:
  -c, --continue                 Continue the latest session of this directory
  -r, --resume                   Resume a session
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
  -e, --extension <path>         Load an extension (repeatable; builtin:<name> for bundled ones)
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

Other:
  -h, --help                     This text
  -v, --version                  Print the version

Environment:
  {paths.ENV_AGENT_DIR:<30} Configuration directory (default ~/.pi/agent)
  {paths.ENV_SESSION_DIR:<30} Session directory (--session-dir wins)
  Provider keys, e.g. ANTHROPIC_API_KEY, OPENAI_API_KEY, GEMINI_API_KEY, OPENROUTER_API_KEY"""
