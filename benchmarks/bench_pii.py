"""Benchmark: :func:`service.pii.scrub` speed on real questions, one core.

Question sets (real text from ``../shared/data``): NQ-open dev (search-engine questions),
banking77 test (support questions), CLINC150 test + out-of-scope test, Hinglish-TOP test
(code-switched), XQuAD Hindi (Devanagari); plus synthetic questions that each carry one
personal item (``pii-laden``) and one 100 kB message. Each set is scrubbed whole, best of
``repeat`` runs. Columns: questions, µs per question, questions per second, share of questions
that left the fast path (hold a digit, ``@``, ``://``, ``www.``, a share host or an ``at``/``dot``
written out), share with something scrubbed (on real sets these are the false-positive
candidates, printed by ``--show``).
Target: ≥ 50,000 short questions/s (≤ 20 µs each). Usage: ``python -m benchmarks.bench_pii``.

``--baseline FILE`` times another version of ``service/pii.py`` (say ``git show
HEAD~1:service/pii.py > /tmp/pii_old.py``) in the same run, the two alternating run by run
(best of ``repeat`` each), and prints µs per question of both and their ratio (this version /
baseline), with the share each scrubs; ``--show`` then prints the texts the two scrub
differently. The ``college-faq`` set is synthetic help-desk text full of figures (fees,
ranges, dates, times, rooms; no personal data): every question takes the slow path, so it
measures the detectors themselves.
"""

from __future__ import annotations

import csv
import importlib.util
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

from benchmarks.datasets import SHARED_DATA
from service.pii import scrub, scrub_many
from service.pii.detectors import _clean_fast

PII_LADEN = (
    "my email is rahul.sharma{n}@example.com, is the fee paid?",
    "call me on +91 98765 4{n:04d} about hostel",
    "Aadhaar 2341 2341 2346 not linked, roll {n}",
    "card 4111 1111 1111 1111 was charged twice for order {n}",
    "reset link https://portal.example.edu/reset?token=abc{n} expired",
    "PAN ABCPE1234F mismatch in form {n}",
    "मेरा नंबर ९८७६५४३२१० है, फीस {n} कब तक?",
    "server 10.0.{m}.1 refused the upload",
    "pay rahul{n}@okicici or mail rahul dot verma{n} at gmail dot com",
    "key sk-live-51Hxyz{n:05d}SECRETKEYabc, file https://drive.google.com/file/d/1AbC{n}xyz/view",
    "voter id ABC{n:07d}, passport K{n:07d}, pan abcde{m:04d}f",
    "call 9 8 7 6 5 4 3 2 1 0 or 98765\u200b4{n:04d}, ssn 123-45-{n:04d}",
)

COLLEGE_FAQ = (
    "hostel fee Rs 85000-95000 for {n} students, due 31.07.2026?",
    "exam from 23-11-2026 to 12-12-2026, hall {m} at 10:00 am",
    "roll no 21BCE{n:04d} marks 78 85 92 88 90, CGPA 8.{m}",
    "intake 60 1200 {n} for 2026-27, batch 2022-2026",
    "fee ₹1,20,000 + ₹12,000 for sem {m}, late fee Rs 100/day",
    "room B-{m} timings 9:30 to 17:30, version 1.2.{n}",
)


def _lines(name: str, read: Callable[[Path], list[str]]) -> tuple[str, list[str]]:
    return name, read(SHARED_DATA)


def load_sets() -> list[tuple[str, list[str]]]:
    """Return ``[(name, questions)]`` for every real set plus the synthetic ones."""
    nq = SHARED_DATA / "nq-open" / "NQ-open.dev.jsonl"
    clinc = json.loads((SHARED_DATA / "clinc150" / "data_full.json").read_text("utf-8"))
    with open(SHARED_DATA / "banking77" / "test.csv", encoding="utf-8") as handle:
        banking = [row["text"] for row in csv.DictReader(handle)]
    with open(SHARED_DATA / "hinglish-top" / "test.tsv", encoding="utf-8") as handle:
        hinglish = [row["cs_query"] for row in csv.DictReader(handle, delimiter="\t")]
    xquad = json.loads((SHARED_DATA / "xquad" / "xquad.hi.json").read_text("utf-8"))
    hindi = [
        qa["question"]
        for article in xquad["data"]
        for paragraph in article["paragraphs"]
        for qa in paragraph["qas"]
    ]
    laden = [PII_LADEN[n % len(PII_LADEN)].format(n=n, m=n % 250) for n in range(4_000)]
    faq = [COLLEGE_FAQ[n % len(COLLEGE_FAQ)].format(n=n, m=n % 250) for n in range(4_000)]
    return [
        ("nq-open", [json.loads(line)["question"] for line in nq.open(encoding="utf-8")]),
        ("banking77", banking),
        ("clinc150", [text for text, _ in clinc["test"] + clinc["oos_test"]]),
        ("hinglish-top", hinglish),
        ("xquad-hi", hindi),
        ("pii-laden", laden),
        ("college-faq", faq),
    ]


def _best_of(fn: Callable[[], Any], repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        started = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - started)
    return best


def run(repeat: int = 5) -> list[dict[str, Any]]:
    """Time every set; one row per set (keys as in :func:`main`'s table)."""
    rows: list[dict[str, Any]] = []
    big = ("Lorem ipsum dolor sit amet 2026, call 9876543210 " * 2_100)[:100_000]
    for name, texts in [*load_sets(), ("100 kB message", [big])]:
        seconds = _best_of(lambda texts=texts: scrub_many(texts), repeat)
        results = scrub_many(texts)
        rows.append(
            {
                "set": name,
                "questions": len(texts),
                "us_per_question": seconds / len(texts) * 1e6,
                "questions_per_s": len(texts) / seconds,
                "slow_path_pct": 100 * sum(not _clean_fast(t) for t in texts) / len(texts),
                "scrubbed_pct": 100 * sum(bool(r.counts) for r in results) / len(texts),
            }
        )
    return rows


def load_baseline(path: str) -> ModuleType:
    """Import the ``service/pii.py`` version at ``path`` as a separate module.

    Raises:
        ImportError: ``path`` cannot be loaded as a module.
    """
    spec = importlib.util.spec_from_file_location("pii_baseline", path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def compare(baseline: ModuleType, repeat: int = 7) -> list[dict[str, Any]]:
    """Time this scrubber and ``baseline``'s on every set, alternating run by run; one row per
    set: ``us_new``/``us_base`` (best µs per question), ``ratio`` (new / base), the shares
    scrubbed (``scrubbed_new``/``scrubbed_base``, %) and the ``changed`` texts."""
    rows: list[dict[str, Any]] = []
    big = ("Lorem ipsum dolor sit amet 2026, call 9876543210 " * 2_100)[:100_000]
    for name, texts in [*load_sets(), ("100 kB message", [big])]:
        best = {"new": float("inf"), "base": float("inf")}
        for _ in range(repeat):
            for key, many in (("new", scrub_many), ("base", baseline.scrub_many)):
                started = time.perf_counter()
                many(texts)
                best[key] = min(best[key], time.perf_counter() - started)
        new, base = scrub_many(texts), baseline.scrub_many(texts)
        rows.append(
            {
                "set": name,
                "questions": len(texts),
                "us_new": best["new"] / len(texts) * 1e6,
                "us_base": best["base"] / len(texts) * 1e6,
                "ratio": best["new"] / best["base"],
                "scrubbed_new": 100 * sum(bool(r.counts) for r in new) / len(texts),
                "scrubbed_base": 100 * sum(bool(r.counts) for r in base) / len(texts),
                "changed": [
                    (t, a.text, b.text)
                    for t, a, b in zip(texts, new, base, strict=True)
                    if a.text != b.text
                ],
            }
        )
    return rows


def main_compare(path: str) -> None:
    """Print :func:`compare`'s table against the scrubber at ``path``."""
    rows = compare(load_baseline(path))
    print(f"{'set':<16}{'questions':>10}{'µs/q new':>10}{'µs/q base':>11}{'new/base':>10}"
          f"{'scrubbed new':>14}{'base':>8}{'changed':>9}")  # fmt: skip
    for r in rows:
        print(
            f"{r['set']:<16}{r['questions']:>10}{r['us_new']:>10.2f}{r['us_base']:>11.2f}"
            f"{r['ratio']:>10.3f}{r['scrubbed_new']:>13.2f}%{r['scrubbed_base']:>7.2f}%"
            f"{len(r['changed']):>9}"
        )
    if "--show" in sys.argv:  # the first change of each template (digits aside), per set
        for r in rows:
            seen: set[str] = set()
            for text, new, base in r["changed"]:
                shape = "".join("9" if c.isdigit() else c for c in text)
                if shape not in seen and len(seen) < 20:
                    seen.add(shape)
                    print(f"{r['set']}: {text!r}\n    new:  {new!r}\n    base: {base!r}")


def main() -> None:
    if "--baseline" in sys.argv:
        main_compare(sys.argv[sys.argv.index("--baseline") + 1])
        return
    rows = run()
    print(f"{'set':<16}{'questions':>10}{'µs/q':>9}{'q/s':>11}{'slow path':>11}{'scrubbed':>10}")
    for r in rows:
        print(
            f"{r['set']:<16}{r['questions']:>10}{r['us_per_question']:>9.2f}"
            f"{r['questions_per_s']:>11,.0f}{r['slow_path_pct']:>10.1f}%{r['scrubbed_pct']:>9.1f}%"
        )
    if "--show" in sys.argv:
        for name, texts in load_sets()[:-1]:
            for text in texts:
                found = scrub(text)
                if found.counts:
                    print(f"{name}: {text!r} -> {found.text!r}")


if __name__ == "__main__":
    main()
