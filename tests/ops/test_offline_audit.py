"""The offline advisory check (``tests/ops/offline_audit.py``): its OSV range logic on
hand-worked cases, and the lock against the advisories saved in ``docs/audit/``.

Expected values come from the OSV schema's evaluation rules and PEP 440 ordering, worked out by
hand (e.g. ``2.0rc1 < 2.0 < 2.0.post1``), not from the checker's output.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from packaging.utils import canonicalize_name
from packaging.version import Version

from tests.ops import offline_audit as oa

URLLIB3_TWO_BRANCHES = [  # as PYSEC-2023-192 writes them: the 2.x pair before the 1.x one
    {"introduced": "2.0.0"},
    {"fixed": "2.0.6"},
    {"introduced": "0"},
    {"fixed": "1.26.17"},
]


def record(name: str = "demo", **affected: Any) -> dict[str, Any]:
    """A minimal OSV 1.x record with one ``affected`` entry for PyPI ``name``."""
    return {
        "id": "TEST-1",
        "aliases": ["CVE-0000-0001"],
        "affected": [{"package": {"ecosystem": "PyPI", "name": name}, **affected}],
    }


def eco(*events: dict[str, str]) -> list[dict[str, Any]]:
    return [{"type": "ECOSYSTEM", "events": list(events)}]


@pytest.mark.parametrize(
    ("version", "expected"),
    [
        ("0.9", False),  # below introduced
        ("1.0", True),  # introduced is inclusive
        ("1.5.3", True),
        ("2.0rc1", True),  # a pre-release of the fixed version precedes it
        ("2.0", False),  # fixed is exclusive
        ("2.0.0", False),  # 2.0 == 2.0.0 under PEP 440
        ("2.0.post1", False),
    ],
)
def test_introduced_fixed_boundaries(version: str, expected: bool) -> None:
    events = [{"introduced": "1.0"}, {"fixed": "2.0"}]
    assert oa.range_affects(events, Version(version)) is expected


@pytest.mark.parametrize(
    ("version", "expected"),
    [("0.0.1", True), ("1.4", True), ("1.4.0", True), ("1.4.1", False), ("3", False)],
)
def test_last_affected_is_inclusive(version: str, expected: bool) -> None:
    events = [{"introduced": "0"}, {"last_affected": "1.4"}]
    assert oa.range_affects(events, Version(version)) is expected


@pytest.mark.parametrize(
    ("version", "expected"),
    [
        ("1.26.16", True),
        ("1.26.17", False),
        ("1.26.18", False),  # between the branches
        ("2.0.0", True),
        ("2.0.5", True),
        ("2.0.6", False),
        ("2.8.0", False),
    ],
)
def test_unsorted_events_of_two_branches(version: str, expected: bool) -> None:
    assert oa.range_affects(URLLIB3_TWO_BRANCHES, Version(version)) is expected


def test_open_ended_range_affects_every_later_version() -> None:
    assert oa.range_affects([{"introduced": "0"}], Version("99.0"))
    assert not oa.range_affects([{"introduced": "5"}], Version("4.9"))


def test_limit_events_do_not_end_a_range() -> None:
    events = [{"introduced": "1"}, {"limit": "2"}]
    assert oa.range_affects(events, Version("3"))


def test_versions_list_and_git_ranges() -> None:
    entry = {
        "ranges": [{"type": "GIT", "events": [{"introduced": "0"}, {"fixed": "abc123"}]}],
        "versions": ["1.2.3", "0.8.3-r1"],
    }
    assert oa.entry_verdict(entry, Version("1.2.3")).affected
    assert oa.entry_verdict(entry, Version("1.2.3.0")).affected  # same PEP 440 version
    assert oa.entry_verdict(entry, Version("0.8.3.post1")).affected  # "-r1" is post-release 1
    assert not oa.entry_verdict(entry, Version("1.2.4")).affected  # the GIT range is ignored


def test_omitted_versions_list_cannot_clear_an_old_enough_pin() -> None:
    entry = {
        "ranges": eco({"introduced": "0"}, {"fixed": "1.0"}),
        "database_specific": {"versions_omitted_highest": "3.0"},
    }
    assert oa.entry_verdict(entry, Version("2.5")).unresolved
    assert oa.entry_verdict(entry, Version("3.0")).unresolved
    clear = oa.entry_verdict(entry, Version("3.0.1"))
    assert not clear.affected and not clear.unresolved


def test_withdrawn_other_package_and_name_spelling() -> None:
    pins = {"pyyaml": Version("5.3"), "pillow": Version("9.0")}
    live = record("PyYAML", ranges=eco({"introduced": "0"}, {"fixed": "5.4"}))
    withdrawn = {**record("pyyaml", ranges=eco({"introduced": "0"})), "id": "TEST-2"}
    withdrawn["withdrawn"] = "2024-01-01T00:00:00Z"
    # the pillow folder of the database holds a record for another package
    elsewhere = {**record("imagecodecs", ranges=eco({"introduced": "0"})), "id": "TEST-3"}
    report = oa.audit(pins, [live, withdrawn, elsewhere])
    assert [(f.package, f.advisory, f.fixed) for f in report.findings] == [
        ("pyyaml", "TEST-1", ("5.4",))
    ]
    assert report.withdrawn == ("TEST-2",)
    assert report.checked == 1


def test_pre_1_0_layout_is_read_as_1_x() -> None:
    old = {
        "id": "PYSEC-OLD",
        "package": {"name": "pydantic", "ecosystem": "PyPI"},
        "affects": {
            "ranges": [
                {"type": "GIT", "repo": "x", "fixed": "abc"},
                {"type": "ECOSYSTEM", "introduced": "1.8", "fixed": "1.8.2"},
                {"type": "ECOSYSTEM", "fixed": "1.6.2"},  # no introduced: from the start
            ]
        },
    }
    verdicts = {
        v: oa.audit({"pydantic": Version(v)}, [old]).findings != ()
        for v in ("1.5", "1.6.2", "1.7", "1.8.1", "1.8.2")
    }
    assert verdicts == {"1.5": True, "1.6.2": False, "1.7": False, "1.8.1": True, "1.8.2": False}


def test_a_known_affected_pin_is_found_in_the_saved_advisories() -> None:
    """requests 2.30.0 is inside CVE-2023-32681 (2.3.0 <= v < 2.31.0) in both its records."""
    report = oa.audit({"requests": Version("2.30.0")}, oa.load_records())
    assert {f.advisory for f in report.findings} == {
        "PYSEC-2023-74",
        "PYSEC-0000-CVE-2023-32681",
    }
    assert {f.fixed for f in report.findings} == {("2.31.0",)}


def test_the_lock_has_no_unexplained_finding() -> None:
    explained = oa.read_explained()
    report = oa.audit(oa.read_lock(), oa.load_records(), explained)
    assert report.unexplained == ()
    assert report.unresolved == ()
    found = {f"{f.package} {f.advisory}" for f in report.findings}
    assert set(explained) == found, "an explanation without its finding is stale: remove it"
    assert oa.main([]) == 0


def test_main_fails_on_an_unexplained_finding(tmp_path: Path) -> None:
    lock = tmp_path / "lock"
    lock.write_text("demo==1.0\n", encoding="utf-8")
    folder = tmp_path / "adv"
    folder.mkdir()
    (folder / "TEST-1.json").write_text(
        json.dumps(record(ranges=eco({"introduced": "0"}, {"fixed": "1.1"}))), encoding="utf-8"
    )
    assert oa.main([str(lock), str(folder), str(tmp_path / "none.json")]) == 1


def test_every_locked_package_was_looked_up() -> None:
    """A package added to the lock must be looked up in the database before it is trusted."""
    snapshot = json.loads((oa.AUDIT / "snapshot.json").read_text(encoding="utf-8"))
    assert set(snapshot["packages"]) == set(oa.read_lock())
    saved = {(p.parent.name, p.stem) for p in oa.ADVISORIES.glob("*/*.json")}
    listed = {(pkg, ident) for pkg, ids in snapshot["packages"].items() for ident in ids}
    assert saved == listed


@pytest.mark.parametrize("path", sorted(oa.ADVISORIES.glob("*/*.json")), ids=lambda p: p.stem)
def test_saved_extract_is_well_formed(path: Path) -> None:
    data = json.loads(path.read_text(encoding="utf-8"))
    assert data["id"] == path.stem
    source = data["database_specific"]["source"]
    assert source["repository"] == "pypa/advisory-database"
    assert source["path"] == f"vulns/{path.parent.name}/{path.stem}.yaml"
    assert re.fullmatch(r"[0-9a-f]{40}", source["commit"])
    for entry in data["affected"]:
        assert canonicalize_name(entry["package"]["name"]) == entry["package"]["name"]
        for rng in entry["ranges"]:
            for event in rng["events"]:
                (value,) = event.values()
                Version(value)  # parses
