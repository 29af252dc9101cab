"""What to tell a user who has no credentials: the ways that work in this program.

pi's own wording points at its interactive ``/login`` and its own website; here the ways in are a
provider's environment variable, ``pi auth login <provider>`` and ``docs/models.md`` of this
installation.
"""

from __future__ import annotations

from pi_coding_agent.ai.models.index import catalog_index, provider_env_vars
from pi_coding_agent.ai.providers.vendor import vendor
from pi_coding_agent.coding import paths


def models_doc() -> str:
    return str(paths.project_root() / "docs" / "models.md")


def login_help() -> str:
    """The general hint: no provider is known yet."""
    return ("Set a provider's API key environment variable (for example ANTHROPIC_API_KEY or OPENAI_API_KEY), "
            "or run `pi auth login <provider>` to sign in or save a key. "
            f"See {models_doc()}")


def _env_hint(provider: str) -> str | None:
    names = sorted(provider_env_vars(provider), key=lambda n: not n.endswith("_API_KEY"))
    return " or ".join(names) if names else None


def no_key_message(provider: str) -> str:
    """pi's first line ("No API key found for X.") and, below it, what works for X here."""
    if provider == "the selected model" or provider == "unknown":
        return f"No API key found for the selected model.\n\n{login_help()}"
    lines = [f"No API key found for {provider}.", ""]
    own = vendor(provider)
    env = own.env_hint if own is not None and own.env_hint else _env_hint(provider)
    if env:
        lines.append(f"Set {env}, or run `pi auth login {provider}` to sign in or save a key.")
    elif provider not in catalog_index()["providers"]:
        lines.append(f'Add "apiKey" to the "{provider}" provider in {paths.agent_dir() / "models.json"}, '
                     f"or run `pi auth login {provider}` to save a key.")
    else:
        lines.append(f"Run `pi auth login {provider}` to sign in or save a key.")
    lines.append(f"See {models_doc()}")
    return "\n".join(lines)
