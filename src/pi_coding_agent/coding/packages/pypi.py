"""Python packages from PyPI (``pypi:<name>[<version specifier>]``): this implementation's addition.

Each package is installed with ``pip install --target`` into a folder of its own
(``<agentDir>/pypi/<name>``, project ``<cwd>/.pi/pypi/<name>``, ``-e`` ones in pi's temporary cache),
its dependencies with it. The folder is appended to ``sys.path`` when the package's extensions load, so
the agent's own modules win where both have one: installing a package never changes the agent's
environment, and removing it is deleting its folder. The index is pip's (``pip.conf``,
``PIP_INDEX_URL``, ``PIP_FIND_LINKS``, ``PIP_NO_INDEX``).

A distribution declares its extensions as entry points of the group ``pi_coding_agent.extensions``:
each value is a module (``pkg.ext``, or ``pkg.ext:setup``) exposing ``setup(pi)``, imported under its
own name so the package's absolute imports work.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ENTRY_POINT_GROUP = "pi_coding_agent.extensions"
_REQUIREMENT = re.compile(r"^([A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?)\s*(.*)$")


@dataclass(frozen=True)
class PypiSource:
    requirement: str  # what follows ``pypi:``, handed to pip
    name: str  # canonical (PEP 503): lower case, runs of ``-_.`` as one ``-``
    specifier: str  # ``==1.2``, ``>=1,<2`` or ""

    @property
    def pinned(self) -> bool:
        """``==<version>`` (no wildcard): never updated, as a pinned npm version."""
        return self.specifier.startswith("==") and "*" not in self.specifier and "," not in self.specifier


def parse_pypi(text: str) -> PypiSource | None:
    match = _REQUIREMENT.match(text.strip())
    if match is None:
        return None
    return PypiSource(text.strip(), re.sub(r"[-_.]+", "-", match.group(1)).lower(), match.group(2).replace(" ", ""))


@dataclass(frozen=True)
class PythonModule:
    """One extension module of an installed distribution."""

    module: str
    path: Path  # the module's file, for reports
    target: Path  # the package's install folder, put on ``sys.path``


def installed_version(source: PypiSource, target: Path) -> str | None:
    distribution = _distribution(source, target)
    return None if distribution is None else str(distribution.version)


def satisfied(source: PypiSource, target: Path) -> bool:
    """Installed, and at the pinned version when there is one (other specifiers were pip's to meet)."""
    version = installed_version(source, target)
    if version is None:
        return False
    return not source.pinned or version == source.specifier[2:]


def extension_modules(source: PypiSource, target: Path) -> list[PythonModule]:
    """The entry points the distribution declares, in name order (its dependencies' are ignored)."""
    distribution = _distribution(source, target)
    if distribution is None:
        return []
    found = []
    for point in sorted(distribution.entry_points.select(group=ENTRY_POINT_GROUP), key=lambda p: p.name):
        module = point.value.split(":")[0].strip()
        base = target.joinpath(*module.split("."))
        path = base / "__init__.py" if (base / "__init__.py").is_file() else base.with_suffix(".py")
        found.append(PythonModule(module, path, target))
    return found


def _distribution(source: PypiSource, target: Path) -> Any:
    from importlib.metadata import distributions

    for distribution in distributions(path=[str(target)]):
        name = distribution.metadata["Name"] or ""
        if re.sub(r"[-_.]+", "-", name).lower() == source.name:
            return distribution
    return None


def module_setup(module: PythonModule) -> Callable[[object], object]:
    """The extension's ``setup(pi)``: its folder joins ``sys.path`` (last), the module is imported."""
    def setup(pi: object) -> object:
        import importlib

        if str(module.target) not in sys.path:
            sys.path.append(str(module.target))
        imported = importlib.import_module(module.module)
        function = getattr(imported, "setup", None)
        if not callable(function):
            raise TypeError(f"Extension does not define a setup(pi) function: {module.path}")
        return function(pi)
    return setup
