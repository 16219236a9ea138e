"""``requirements.lock``: the exact versions of goldwatch's dependency closure (runtime and
every extra: ``fast``, ``test``, ``bench``), for ``pip install -c requirements.lock`` and for
``pip-audit -r requirements.lock`` (see ``docs/security.md``).

Regenerate it from the current environment after changing ``pyproject.toml`` or upgrading::

    python -m tests.ops.test_requirements_lock > requirements.lock

The checks: every dependency ``pyproject.toml`` declares is pinned with ``==`` to a version its
specifier admits; the lock is closed (every requirement of a locked package is locked too); and,
when ``GOLDWATCH_LOCKED=1`` says the environment was installed with ``-c requirements.lock``,
that the installed versions are the locked ones.
"""

from __future__ import annotations

import os
import sys
import tomllib
from collections.abc import Iterable, Mapping
from importlib import metadata
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[2]
LOCK = ROOT / "requirements.lock"
HEADER = """\
# Exact versions of goldwatch's dependency closure: runtime and the fast, test and bench extras.
# Install with:   pip install -c requirements.lock -e '.[test,bench]'
# Audit with:     pip-audit -r requirements.lock --no-deps --disable-pip   (docs/security.md)
# Regenerate:     python -m tests.ops.test_requirements_lock > requirements.lock
"""


def declared() -> list[Requirement]:
    """Every requirement ``pyproject.toml`` declares (dependencies and all extras)."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    lines = list(project["dependencies"])
    for extra in project.get("optional-dependencies", {}).values():
        lines.extend(extra)
    return [Requirement(line) for line in lines]


def _applies(requirement: Requirement, extras: Iterable[str]) -> bool:
    if requirement.marker is None:
        return True
    return any(requirement.marker.evaluate({"extra": e}) for e in (*extras, ""))


def closure(roots: Iterable[Requirement]) -> dict[str, str]:
    """``{canonical name: installed version}`` of ``roots`` and everything they need, from
    the installed distributions' metadata (markers evaluated for this interpreter)."""
    found: dict[str, str] = {}
    extras_seen: dict[str, set[str]] = {}
    todo = [(r, set(r.extras)) for r in roots]
    while todo:
        requirement, extras = todo.pop()
        name = canonicalize_name(requirement.name)
        if name in found and extras <= extras_seen[name]:
            continue
        dist = metadata.distribution(name)
        found[name] = dist.version
        extras_seen.setdefault(name, set()).update(extras)
        for line in dist.requires or []:
            child = Requirement(line)
            if _applies(child, extras_seen[name]):
                todo.append((child, set(child.extras)))
    found.pop("goldwatch", None)
    return found


def read_lock(path: Path = LOCK) -> dict[str, str]:
    """``{canonical name: version}`` of the ``name==version`` lines of ``path`` (comments and
    blank lines skipped).

    Raises ``ValueError`` on any other line (not an exact ``==`` pin).
    """
    pins: dict[str, str] = {}
    for raw in path.read_text(encoding="utf-8").splitlines():
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        name, sep, version = line.partition("==")
        if not sep or not name.strip() or not version.strip():
            raise ValueError(f"{path}: not an exact pin: {raw!r}")
        pins[canonicalize_name(name.strip())] = version.strip()
    return pins


def render(pins: Mapping[str, str]) -> str:
    """The lock file's text for ``pins``."""
    return HEADER + "".join(f"{name}=={pins[name]}\n" for name in sorted(pins))


def test_every_declared_dependency_is_pinned_to_an_admitted_version() -> None:
    pins = read_lock()
    for requirement in declared():
        name = canonicalize_name(requirement.name)
        assert name in pins, f"{requirement} is not in requirements.lock"
        assert requirement.specifier.contains(Version(pins[name]), prereleases=True), (
            f"requirements.lock pins {name}=={pins[name]}, pyproject asks {requirement}"
        )


def test_lock_is_closed() -> None:
    """Every requirement of a locked package (as installed here, at its locked version) is
    locked too, so ``-c requirements.lock`` leaves nothing to chance."""
    pins = read_lock()
    for name, version in pins.items():
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            continue  # not installed here: nothing to read its requirements from
        if dist.version != version:
            continue
        for line in dist.requires or []:
            child = Requirement(line)
            if child.marker is None or child.marker.evaluate({"extra": ""}):
                assert canonicalize_name(child.name) in pins, f"{name} needs {child}: not locked"


@pytest.mark.skipif(
    os.environ.get("GOLDWATCH_LOCKED") != "1",
    reason="set GOLDWATCH_LOCKED=1 when installed with -c requirements.lock",
)
def test_environment_matches_the_lock() -> None:
    """Every locked package that is installed has its locked version (an extra that was not
    installed, e.g. ``fast`` in CI, is simply absent)."""
    differ = {}
    for name, version in read_lock().items():
        try:
            installed = metadata.distribution(name).version
        except metadata.PackageNotFoundError:
            continue
        if installed != version:
            differ[name] = (installed, version)
    assert differ == {}, (
        "installed (left) differs from requirements.lock (right): regenerate it "
        "(python -m tests.ops.test_requirements_lock > requirements.lock) or reinstall with -c"
    )


if __name__ == "__main__":
    sys.stdout.write(render(closure(declared())))
