"""Offline vulnerability check of ``requirements.lock`` against saved OSV advisories.

``pip-audit`` needs a live vulnerability service; where there is none (see
``docs/security.md``), this module evaluates the advisories saved under
``docs/audit/advisories/<package>/<id>.json`` (extracts of ``pypa/advisory-database``, the
database PyPI's vulnerability API and so pip-audit are built from) against the pinned versions::

    python -m tests.ops.offline_audit            # exit 0: no finding left unexplained

It is a fallback, not a substitute: it knows only the advisories saved here, from a snapshot of
unknown age. Run ``pip-audit`` wherever there is network.

Range semantics follow the OSV schema (https://ossf.github.io/osv-schema/, "Evaluation"): for
each ``ECOSYSTEM`` range the events are sorted by version (``introduced: "0"`` first) and walked;
``introduced`` sets "affected" when ``version >= introduced``, ``fixed`` clears it when
``version >= fixed``, ``last_affected`` clears it when ``version > last_affected``; ``limit``
events and ``GIT``/``SEMVER`` ranges are ignored (they do not speak PyPI versions). A version
is also affected when it equals an entry of the explicit ``versions`` list. Versions compare as
PEP 440 versions (``packaging.version``). Advisories with ``withdrawn`` set are skipped. The
pre-1.0 layout some files still use (top-level ``package`` and ``affects.ranges[]`` with
``introduced``/``fixed`` keys, a missing ``introduced`` meaning "from the first release") is
read as the equivalent 1.x record.

A saved extract may leave out the enumerated ``versions`` list; it then records the highest
version that list held in ``affected[].database_specific.versions_omitted_highest``. A pinned
version at or below that value cannot be decided without the list and is reported as
unresolved.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

ROOT = Path(__file__).resolve().parents[2]
LOCK = ROOT / "requirements.lock"
AUDIT = ROOT / "docs" / "audit"
ADVISORIES = AUDIT / "advisories"
EXPLAINED = AUDIT / "explained.json"

Record = Mapping[str, Any]


def read_lock(path: Path = LOCK) -> dict[str, Version]:
    """``{canonical name: pinned version}`` of a ``name==version`` lock file.

    Raises ``ValueError`` on a line that is not a comment, blank or an exact ``==`` pin.
    """
    from tests.ops.test_requirements_lock import read_lock as read_pins

    return {name: Version(version) for name, version in read_pins(path).items()}


def normalise(record: Record) -> dict[str, Any]:
    """The record in OSV 1.x layout (a copy; pre-1.0 ``package``/``affects`` converted)."""
    if "affected" in record:
        return dict(record)
    package = record.get("package") or {}
    ranges = []
    for old in (record.get("affects") or {}).get("ranges") or []:
        events: list[dict[str, str]] = [{"introduced": str(old.get("introduced", "0"))}]
        if "fixed" in old:
            events.append({"fixed": str(old["fixed"])})
        ranges.append({"type": old.get("type", ""), "events": events})
    versions = (record.get("affects") or {}).get("versions") or []
    converted = {k: v for k, v in record.items() if k not in ("package", "affects")}
    converted["affected"] = [{"package": package, "ranges": ranges, "versions": versions}]
    return converted


def load_record(path: Path) -> dict[str, Any]:
    """One advisory file (``.json``, or ``.yaml``/``.yml`` as in pypa/advisory-database)."""
    text = path.read_text(encoding="utf-8")
    data = json.loads(text) if path.suffix == ".json" else yaml.safe_load(text)
    if not isinstance(data, dict) or "id" not in data:
        raise ValueError(f"{path}: not an OSV record")
    return normalise(data)


def load_records(folder: Path = ADVISORIES) -> list[dict[str, Any]]:
    """Every advisory saved under ``folder`` (any depth), sorted by path."""
    paths = sorted(p for p in folder.rglob("*") if p.suffix in (".json", ".yaml", ".yml"))
    return [load_record(p) for p in paths]


def _key(version: str) -> tuple[int, Version]:
    return (0, Version("0")) if version == "0" else (1, Version(version))


def range_affects(events: Sequence[Mapping[str, str]], version: Version) -> bool:
    """Whether ``version`` lies in one OSV ``ECOSYSTEM`` range given by its ``events``.

    The events need not be sorted (several introduced/fixed pairs may come in any order).
    """
    order = {"introduced": 0, "last_affected": 1, "fixed": 1, "limit": 2}
    steps: list[tuple[tuple[int, Version], int, str, str]] = []
    for event in events:
        for kind, value in event.items():
            if kind in order:
                steps.append((_key(str(value)), order[kind], kind, str(value)))
    affected = False
    for _, _, kind, value in sorted(steps):
        if kind == "introduced" and (value == "0" or version >= Version(value)):
            affected = True
        elif kind == "fixed" and version >= Version(value):
            affected = False
        elif kind == "last_affected" and version > Version(value):
            affected = False
    return affected


def _same(listed: str, version: Version) -> bool:
    try:
        return Version(listed) == version
    except InvalidVersion:
        return listed == str(version)


@dataclass(frozen=True)
class Verdict:
    """How one ``affected[]`` entry judges a version: ``affected`` and by what (``how``);
    ``unresolved`` names why it cannot decide (else empty)."""

    affected: bool
    how: str = ""
    unresolved: str = ""


def entry_verdict(entry: Mapping[str, Any], version: Version) -> Verdict:
    """Judge ``version`` against one ``affected[]`` entry (its package already matched)."""
    for rng in entry.get("ranges") or []:
        if rng.get("type") == "ECOSYSTEM" and range_affects(rng.get("events") or [], version):
            return Verdict(True, "range " + describe_events(rng.get("events") or []))
    if any(_same(str(v), version) for v in entry.get("versions") or []):
        return Verdict(True, "listed in versions")
    highest = (entry.get("database_specific") or {}).get("versions_omitted_highest")
    if highest and version <= Version(str(highest)):
        return Verdict(False, unresolved=f"versions list omitted (highest {highest}) >= pin")
    return Verdict(False)


def describe_events(events: Iterable[Mapping[str, str]]) -> str:
    """Events as text, sorted: ``>=2.3.0,<2.31.0``, ``>=0,<=1.4``, ``>=0`` (open-ended)."""
    symbols = {"introduced": ">=", "fixed": "<", "last_affected": "<=", "limit": "limit "}
    steps = sorted(
        ((_key(str(v)), k, str(v)) for e in events for k, v in e.items() if k in symbols),
        key=lambda s: (s[0], s[1] != "introduced"),
    )
    return ",".join(symbols[k] + v for _, k, v in steps)


def fixed_in(entry: Mapping[str, Any]) -> list[str]:
    """The ``fixed`` versions an entry's ECOSYSTEM ranges name, ascending."""
    found = {
        str(e["fixed"])
        for rng in entry.get("ranges") or []
        if rng.get("type") == "ECOSYSTEM"
        for e in rng.get("events") or []
        if "fixed" in e
    }
    return sorted(found, key=Version)


@dataclass(frozen=True)
class Finding:
    """A pinned package inside an advisory's affected range."""

    package: str
    pinned: str
    advisory: str
    aliases: tuple[str, ...]
    how: str
    fixed: tuple[str, ...]
    explanation: str = ""


@dataclass(frozen=True)
class Report:
    """Outcome of :func:`audit`: ``findings``; ``unresolved`` ``(package, advisory, why)``;
    ``withdrawn`` advisory ids skipped; ``checked`` = (package, advisory) pairs evaluated."""

    findings: tuple[Finding, ...]
    unresolved: tuple[tuple[str, str, str], ...]
    withdrawn: tuple[str, ...]
    checked: int

    @property
    def unexplained(self) -> tuple[Finding, ...]:
        """Findings with no recorded explanation."""
        return tuple(f for f in self.findings if not f.explanation)


def audit(
    pins: Mapping[str, Version],
    records: Iterable[Record],
    explained: Mapping[str, str] | None = None,
) -> Report:
    """Evaluate every PyPI ``affected[]`` entry of ``records`` whose package is pinned.

    ``explained`` maps ``"<package> <advisory id>"`` to the reason a finding is accepted.
    """
    explained = explained or {}
    findings: list[Finding] = []
    unresolved: list[tuple[str, str, str]] = []
    withdrawn: list[str] = []
    checked = 0
    for record in records:
        record = normalise(record)
        if record.get("withdrawn"):
            withdrawn.append(str(record["id"]))
            continue
        for entry in record.get("affected") or []:
            package = entry.get("package") or {}
            if package.get("ecosystem", "PyPI") != "PyPI":
                continue
            name = canonicalize_name(str(package.get("name", "")))
            if name not in pins:
                continue
            checked += 1
            verdict = entry_verdict(entry, pins[name])
            if verdict.unresolved:
                unresolved.append((name, str(record["id"]), verdict.unresolved))
            if verdict.affected:
                findings.append(
                    Finding(
                        package=name,
                        pinned=str(pins[name]),
                        advisory=str(record["id"]),
                        aliases=tuple(record.get("aliases") or ()),
                        how=verdict.how,
                        fixed=tuple(fixed_in(entry)),
                        explanation=explained.get(f"{name} {record['id']}", ""),
                    )
                )
    return Report(tuple(findings), tuple(unresolved), tuple(withdrawn), checked)


def read_explained(path: Path = EXPLAINED) -> dict[str, str]:
    """``{"<package> <advisory id>": reason}`` from ``docs/audit/explained.json``."""
    if not path.exists():
        return {}
    data = json.loads(path.read_text(encoding="utf-8"))
    return {f"{canonicalize_name(e['package'])} {e['advisory']}": e["reason"] for e in data}


def render(report: Report) -> str:
    """The report as plain text, one line per finding."""
    lines = [
        f"checked {report.checked} (package, advisory) pairs; "
        f"{len(report.findings)} finding(s), {len(report.unexplained)} unexplained, "
        f"{len(report.unresolved)} unresolved, {len(report.withdrawn)} withdrawn skipped"
    ]
    for f in report.findings:
        fixed = ", ".join(f.fixed) or "none"
        state = f"explained: {f.explanation}" if f.explanation else "UNEXPLAINED"
        lines.append(
            f"{f.package}=={f.pinned} {f.advisory} ({', '.join(f.aliases)}) {f.how}; "
            f"fixed: {fixed}; {state}"
        )
    lines.extend(f"UNRESOLVED {p} {a}: {why}" for p, a, why in report.unresolved)
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """CLI: ``[lock [advisories-folder [explained.json]]]``; exit 1 on an unexplained or
    unresolved finding, else 0."""
    args = list(sys.argv[1:] if argv is None else argv)
    lock = Path(args[0]) if args else LOCK
    folder = Path(args[1]) if len(args) > 1 else ADVISORIES
    explained_path = Path(args[2]) if len(args) > 2 else EXPLAINED
    report = audit(read_lock(lock), load_records(folder), read_explained(explained_path))
    print(render(report))
    return 1 if report.unexplained or report.unresolved else 0


if __name__ == "__main__":
    raise SystemExit(main())
