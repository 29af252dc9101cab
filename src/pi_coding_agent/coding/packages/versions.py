"""npm version specifications as pi 1.6.0 checks them (npm's semver rules, through ``node-semver``).

A specification that is an exact version (``1.2.3``, ``v1.2.3``) is pinned: never re-checked. Any
other valid range (``^1.2``, ``~1.2.3``, ``>=1 <2``, ``1.x``) bounds what an installed copy may be: one
outside it is reinstalled, and an update moves only to the newest version inside it. A specification
that is no range (a dist-tag such as ``latest`` or ``beta``) bounds nothing.
"""

from __future__ import annotations

import nodesemver


def version_range(version: str | None) -> str | None:
    """The normalised range of a specification's version part, None without one or for a tag."""
    return nodesemver.valid_range(version, False) if version else None


def installed_matches(installed: str | None, version: str | None) -> bool:
    """Whether an installed copy answers the specification (no copy, or no version read: it does not)."""
    if installed is None:
        return False
    bounds = version_range(version)
    if bounds is None:
        return True
    try:
        return bool(nodesemver.satisfies(installed, bounds, False))
    except ValueError:  # the installed package.json names no valid version
        return False


def newest(versions: list[str], version: str | None) -> str | None:
    """The highest of ``versions`` inside the specification's range (of all of them without one)."""
    bounds = version_range(version)
    if bounds is not None:
        found: str | None = nodesemver.max_satisfying(versions, bounds, False)
        return found
    from functools import cmp_to_key

    valid = [v for v in versions if nodesemver.valid(v, False)]
    return max(valid, key=cmp_to_key(lambda a, b: nodesemver.compare(a, b, False))) if valid else None


def is_newer(candidate: str, installed: str) -> bool:
    """``candidate`` > ``installed`` in semver order (False when either is no version)."""
    try:
        return bool(nodesemver.gt(candidate, installed, False))
    except ValueError:
        return False
