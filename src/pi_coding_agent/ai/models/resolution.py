"""Resolving a ``--model``/``--provider``/``--models`` text to catalog models, as pi resolves it
(docs/models.md): exact references, ``provider/id``, ``:thinking`` suffixes, fuzzy and glob matches,
and custom ids synthesised for a provider that accepts any.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from pi_coding_agent.ai.models.index import catalog_index
from pi_coding_agent.ai.pi_error import PiError
from pi_coding_agent.ai.types import THINKING_LEVELS, Model

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable

    from pi_coding_agent.ai.models.catalog import ModelRegistry


class ModelResolutionError(PiError):
    """A --model/--provider choice that cannot be honoured; ``str()`` is pi's message."""


class _Target:
    """Where a model that is not in the catalog would go (for custom-id synthesis)."""

    __slots__ = ("model_id", "model_text", "provider", "provider_models", "thinking_level")

    def __init__(self, provider: str, provider_models: list[Model], model_text: str, model_id: str,
                 thinking_level: str | None) -> None:
        self.provider = provider
        self.provider_models = provider_models
        self.model_text = model_text
        self.model_id = model_id
        self.thinking_level = thinking_level


class _Resolution:
    """Outcome of resolving a reference (plain class: dataclass creation costs start-up time)."""

    __slots__ = ("candidates", "model", "status", "target", "thinking_level", "usable_count", "warning")

    def __init__(self, status: str, *, model: Model | None = None, candidates: list[Model] | None = None,
                 usable_count: int = 0, thinking_level: str | None = None, warning: str | None = None,
                 target: _Target | None = None) -> None:
        self.status = status  # "resolved" | "ambiguous" | "not-found"
        self.model = model
        self.candidates = candidates or []
        self.usable_count = usable_count
        self.thinking_level = thinking_level
        self.warning = warning
        self.target = target

    def with_level(self, thinking_level: str | None, warning: str | None = None) -> _Resolution:
        return _Resolution(self.status, model=self.model, candidates=self.candidates, usable_count=self.usable_count,
                           thinking_level=thinking_level, warning=warning or self.warning, target=self.target)


_NOT_FOUND = _Resolution("not-found")


def resolve_model_pattern(
    registry: ModelRegistry, pattern: str, provider: str | None, *,
    cli_thinking: str | None = None, inline_api_key: bool = False,
) -> tuple[Model, str | None, list[str]]:
    """``--model``/``--provider`` -> (model, thinking level from a ``:level`` suffix, warnings).

    ``cli_thinking`` is ``--thinking`` (it keeps a suffix inside a synthesised custom id);
    ``inline_api_key`` (``--api-key`` given) stops stored credentials from choosing a provider.
    """
    canonical = None
    if provider:
        # only that provider's catalog is loaded: the others cannot match (start-up time)
        canonical = next((p for p in registry.providers() if p.lower() == provider.lower()
                          and registry.provider_models(p)), None)
        if canonical is None:
            raise ModelResolutionError(
                f'Unknown provider "{provider}". Use --list-models to see available providers/models.')
    models = registry.provider_models(canonical) if canonical else registry.all_models()
    if not models:
        raise ModelResolutionError("No models available. Check your installation or add models to models.json.")
    usable = (lambda _p: False) if inline_api_key else registry.has_auth
    result = _resolve_reference(pattern, canonical, models, usable, suffix="strict", fuzzy=True)
    if result.status == "resolved":
        assert result.model is not None
        return result.model, result.thinking_level, [result.warning] if result.warning else []
    if result.status == "ambiguous":
        names = sorted((f"{m['provider']}/{m['id']}" for m in result.candidates), key=locale_key)
        if inline_api_key:
            hint = "--api-key does not choose a provider."
        elif result.usable_count == 0:
            hint = "No matching provider is authenticated."
        else:
            hint = "More than one matching provider is authenticated."
        raise ModelResolutionError(
            f'Model "{pattern}" is ambiguous across providers: {", ".join(names)}. {hint} '
            "Use --provider or provider/model.")
    if result.target is None:
        raise ModelResolutionError(f'Model "{pattern}" not found. Use --list-models to see available models.')
    return _synthesise(result.target, cli_thinking)


def _synthesise(target: _Target, cli_thinking: str | None) -> tuple[Model, str | None, list[str]]:
    """A custom model id on a known provider: a copy of its default (or first) model, renamed."""
    model_id = target.model_text if cli_thinking else target.model_id
    suffix_level = None if cli_thinking else target.thinking_level
    default_id = catalog_index()["providers"].get(target.provider, {}).get("defaultModel")
    base = next((m for m in target.provider_models if m["id"] == default_id), target.provider_models[0])
    model: Model = {**base, "id": model_id, "name": model_id}
    requested = cli_thinking or suffix_level
    if requested and requested != "off":
        model["reasoning"] = True
    warning = f'Model "{model_id}" not found for provider "{target.provider}". Using custom model id.'
    return model, suffix_level, [warning]


def _resolve_reference(
    text: str, provider: str | None, models: list[Model], usable: Callable[[str], bool], *,
    suffix: str, fuzzy: bool,
) -> _Resolution:
    """Resolve a reference within ``provider`` (if given); a miss names where a custom id would go."""
    text = text.strip()
    if not text:
        return _NOT_FOUND
    pool = [m for m in models if m["provider"].lower() == provider.lower()] if provider else models
    result = _resolve_text(text, pool, usable, suffix, fuzzy)
    if result.status != "not-found":
        return result
    split = _split_provider_prefix(text, pool)
    if provider:
        anchor = pool[0] if pool else None
    else:
        anchor = next((m for m in pool if split and m["provider"] == split[0]), None)
    if anchor is None:
        return result
    model_text = split[1] if split else text
    level = None if suffix == "none" else _split_thinking_suffix(model_text)
    siblings = [m for m in pool if m["provider"] == anchor["provider"] and m is not anchor]
    target = _Target(anchor["provider"], [anchor, *siblings], model_text,
                     level[0] if level else model_text, level[1] if level else None)
    return _Resolution("not-found", target=target)


def _resolve_text(
    text: str, pool: list[Model], usable: Callable[[str], bool], suffix: str, fuzzy: bool
) -> _Resolution:
    """Exact reference, then fuzzy, then a ``:level`` suffix split off (strict: valid levels only)."""
    found = _select_reference(text, pool, usable, fuzzy)
    if found is None and fuzzy:
        found = _select_fuzzy(_fuzzy_matches(text, pool), usable)
    if found is not None:
        return found
    if suffix == "none":
        return _NOT_FOUND
    level = _split_thinking_suffix(text)
    if level is not None:
        inner = _resolve_text(level[0], pool, usable, suffix, fuzzy)
        if inner.status == "not-found":
            return inner
        return inner.with_level(None if inner.warning else level[1])
    colon = text.rfind(":")
    if suffix == "strict" or colon < 0:
        return _NOT_FOUND
    inner = _resolve_text(text[:colon], pool, usable, suffix, fuzzy)
    if inner.status == "not-found":
        return inner
    bad = text[colon + 1 :]
    return inner.with_level(None, f'Invalid thinking level "{bad}" in pattern "{text}". Using default instead.')


def _select_reference(
    text: str, pool: list[Model], usable: Callable[[str], bool], fuzzy: bool
) -> _Resolution | None:
    """An exact id, or ``provider/id``; the same id on several providers is settled by credentials."""
    lower = text.lower()
    raw = [m for m in pool if m["id"].lower() == lower]
    named: Model | None = None
    split = _split_provider_prefix(text, pool)
    if split is not None:
        own = [m for m in pool if m["provider"] == split[0]]
        wanted = split[1].lower()
        named = (
            next((m for m in own if m["id"].lower() == wanted), None)
            or next((m for m in raw if m["provider"] == split[0]), None)
            or (_best_fuzzy(_fuzzy_matches(split[1], own)) if fuzzy else None)
        )
    others = [m for m in raw if m is not named]
    candidates = [named, *others] if named is not None else others
    if not candidates:
        return None
    if len({m["provider"] for m in candidates}) == 1:
        return _Resolution("resolved", model=candidates[0])
    if named is not None and usable(named["provider"]):
        return _Resolution("resolved", model=named)
    usable_others = [m for m in others if usable(m["provider"])]
    if len(usable_others) == 1:
        return _Resolution("resolved", model=usable_others[0])
    if not usable_others and named is not None:
        return _Resolution("resolved", model=named)
    return _Resolution("ambiguous", candidates=candidates, usable_count=len(usable_others))


def _select_fuzzy(matches: list[Model], usable: Callable[[str], bool]) -> _Resolution | None:
    if not matches:
        return None
    several = len({m["provider"] for m in matches}) > 1
    usable_matches = [m for m in matches if usable(m["provider"])] if several else []
    pool = usable_matches or matches
    best = _best_fuzzy(pool)
    assert best is not None
    tied = [m for m in pool if m["id"] == best["id"]]
    if len({m["provider"] for m in tied}) == 1:
        return _Resolution("resolved", model=best)
    return _Resolution("ambiguous", candidates=tied, usable_count=len(tied) if usable_matches else 0)


def _fuzzy_matches(text: str, models: Iterable[Model]) -> list[Model]:
    lower = text.lower()
    return [m for m in models if lower in m["id"].lower() or lower in m.get("name", "").lower()]


def _best_fuzzy(matches: list[Model]) -> Model | None:
    """Aliases (``-latest`` or no ``-YYYYMMDD`` suffix) first, then the greatest id."""
    aliases = [m for m in matches if _is_alias(m["id"])]
    pool = aliases or matches
    return max(pool, key=lambda m: locale_key(m["id"])) if pool else None


def _is_alias(model_id: str) -> bool:
    return model_id.endswith("-latest") or re.search(r"-\d{8}$", model_id) is None


def _split_thinking_suffix(text: str) -> tuple[str, str] | None:
    colon = text.rfind(":")
    if colon < 0 or text[colon + 1 :] not in THINKING_LEVELS:
        return None
    return text[:colon], text[colon + 1 :]


def _split_provider_prefix(text: str, models: Iterable[Model]) -> tuple[str, str] | None:
    """``provider/rest`` against known provider ids, longest first (ids may contain ``/``)."""
    lower = text.lower()
    best: tuple[str, str] | None = None
    for provider in dict.fromkeys(m["provider"] for m in models):
        prefix = provider.strip().lower()
        if not prefix or (best is not None and len(best[0]) >= len(provider)):
            continue
        slash = lower.find("/", len(prefix))
        if slash < 0 or lower[:slash].strip() != prefix:
            continue
        rest = text[slash + 1 :].strip()
        if rest:
            best = (provider, rest)
    return best


# Collation close to ICU's root order (JavaScript localeCompare): punctuation, then digits, then
# letters ignoring case; lower case before upper case only breaks ties.
_PUNCTUATION = "_-,;:!?.'\"()[]{}@*/\\&#%`^+<=>|~$"


def locale_key(text: str) -> tuple[tuple[int, ...], tuple[int, ...]]:
    primary = []
    for ch in text:
        low = ch.lower()
        if low in _PUNCTUATION:
            primary.append(_PUNCTUATION.index(low))
        elif low.isdigit():
            primary.append(100 + ord(low))
        else:
            primary.append(1000 + ord(low))
    return tuple(primary), tuple(1 if ch.isupper() else 0 for ch in text)


# ----------------------------------------------------------------------------- scope and start-up


def resolve_model_scope(registry: ModelRegistry, patterns: list[str]) -> tuple[list[tuple[Model, str | None]], list[str]]:
    """``--models``/``enabledModels`` patterns over available models -> (model, level) list and warnings."""
    available = registry.available_models()
    scoped: list[tuple[Model, str | None]] = []
    warnings: list[str] = []

    def add(models: list[Model], level: str | None) -> None:
        for model in models:
            if not any(m["provider"] == model["provider"] and m["id"] == model["id"] for m, _ in scoped):
                scoped.append((model, level))

    def ambiguous(pattern: str, candidates: list[Model]) -> None:
        names = sorted({m["provider"] for m in candidates}, key=locale_key)
        warnings.append(f'Pattern "{pattern}" matches several providers: {", ".join(names)}. '
                        "Use provider/id to choose one.")

    for pattern in patterns:
        matches: list[Model]
        level: str | None = None
        if any(ch in pattern for ch in "*?["):
            split = _split_thinking_suffix(pattern)
            glob, level = split if split else (pattern, None)
            exact = _resolve_reference(glob, None, available, lambda _p: True, suffix="none", fuzzy=False)
            if exact.status == "resolved":
                matches = [exact.model] if exact.model else []
            elif exact.status == "ambiguous":
                matches = exact.candidates
                ambiguous(pattern, matches)
            else:
                regex = _glob_regex(glob)
                matches = [m for m in available
                           if regex.fullmatch(f"{m['provider']}/{m['id']}") or regex.fullmatch(m["id"])]
        else:
            result = _resolve_reference(pattern, None, available, lambda _p: True, suffix="lenient", fuzzy=True)
            if result.warning:
                warnings.append(result.warning)
            if result.status == "ambiguous":
                ambiguous(pattern, result.candidates)
            matches = [result.model] if result.status == "resolved" and result.model else result.candidates
            level = result.thinking_level
        if not matches:
            warnings.append(f'No models match pattern "{pattern}"')
        add(matches, level)
    return scoped, warnings


def _glob_regex(glob: str) -> re.Pattern[str]:
    """minimatch-style glob: ``*``/``?`` do not cross ``/``; ``[...]`` classes; case-insensitive."""
    out = ""
    i = 0
    while i < len(glob):
        ch = glob[i]
        if ch == "*":
            out += "[^/]*"
        elif ch == "?":
            out += "[^/]"
        elif ch == "[" and (end := glob.find("]", i + 1)) > i + 1:
            body = glob[i + 1 : end]
            out += "[" + ("^" + body[1:] if body[0] == "!" else body).replace("\\", "\\\\") + "]"
            i = end
        else:
            out += re.escape(ch)
        i += 1
    return re.compile(out, re.IGNORECASE)
