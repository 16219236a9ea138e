"""Where the out-of-scope detector's verdicts lie outside what its calibration measured.

The detector's figures (ROC AUC, held-out rates) are measured on the gold set's rows as a
whole. A family of corpus documents the gold set barely asks about is barely measured: trial
42 (MEDIUM 1) had 30 answerable gold rows, 4 of them on the corpus's encyclopedia passages,
and a detector "keeping 29 of 30 answerable rows in scope" judged 158 of 319 (49.5 %)
answerable encyclopedia questions out of scope; nothing in the reports could show it.

A live question's **family** is the ``doc_type`` of its nearest corpus passage in embedding
space (the passage the detector's corpus feature reads: :func:`~service.refusals.scope.
nearest_with_index`, over the passages the detector was given); a gold row's family is found
the same way, so one rule places both. Families are only made when the corpus labels at
least two ``doc_type`` values (:func:`build_families`); a passage without one is in no family.

The rule (:func:`family_rows`), measured in session 43 on trial 42's log, the demo and the
production-shaped benchmark (/tmp/s43-oosfamily): a family is **unmeasured** when

1. fewer than ``min_rows`` answerable gold rows lie in it (``analytics.quality_min_class``,
   default 10: the house's smallest class a rate is measured on), and
2. its live out-of-scope share is above the other families' together by at least
   :data:`FAMILY_MIN_RISE`, at 95 %: the lower end of Newcombe's (1998, method 10) interval
   of the difference (:func:`~service.coverage.rise_lower_bound`).

Why both: off-topic traffic lands in every family, so a share alone flags healthy families
(the benchmark's ``wikipedia`` family: 56 % out of scope against ``faq``'s 30 %, measured by
hundreds of rows), and few rows alone flags every small family (the demo's topics of 1-7
rows, 0-15 % out of scope). The measured values: trial 42's ``encyclopedia`` family 909 of
1,326 (68.6 %) against ``news`` 372 of 3,073 (12.1 %), 4 answerable gold rows: flagged (312
of its events are answerable encyclopedia questions); the demo's largest rise, ``html`` 76 of
805 (9.4 %) against 5.0 %, is below the floor.

What a flag means: the detector's verdicts there are not measured, not wrong; the fix is
answerable gold rows from that family (then the rule measures them, and the fit learns them).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np

from service.coverage import rise_lower_bound

__all__ = [
    "FAMILIES_SHOWN",
    "FAMILY_MIN_RISE",
    "ScopeFamilies",
    "build_families",
    "family_rows",
    "family_text",
    "gold_families_text",
    "harvest_family_text",
    "shown_families",
    "since_text",
    "under_refusal_family_text",
]

#: The smallest rise of a family's live out-of-scope share over the other families' that
#: flags it (the lower end of the difference's 95 % interval; a share difference). Trial 42's
#: flagged family rose by 0.565 (lower end 0.53); the demo's largest healthy rise is 0.045.
FAMILY_MIN_RISE = 0.10


class ScopeFamilies(NamedTuple):
    """The detector's passages' families and what the gold set measured in each.

    Attributes:
        names: the family names (sorted ``doc_type`` values).
        of_passage: per detector passage (its order) the index into ``names``, -1 for a
            passage without a ``doc_type``; shape ``(n_passages,)``.
        answerable: per family, answerable gold rows in it.
        kept: per family, of those, the rows the detector keeps in scope held out (its
            cross-validated verdicts, the off-corpus rule applied).
        unanswerable: per family, unanswerable gold rows in it.
    """

    names: tuple[str, ...]
    of_passage: np.ndarray
    answerable: dict[str, int]
    kept: dict[str, int]
    unanswerable: dict[str, int]

    def family_of(self, nearest: np.ndarray) -> list[str | None]:
        """The family of each question from its nearest passage's position (``-1``: none)."""
        names, of = self.names, self.of_passage
        out: list[str | None] = []
        for at in nearest.tolist():
            index = int(of[at]) if at >= 0 else -1
            out.append(names[index] if index >= 0 else None)
        return out


def build_families(
    doc_types: Sequence[str | None],
    gold_nearest: np.ndarray,
    answerable: np.ndarray,
    kept: np.ndarray,
) -> ScopeFamilies | None:
    """The families of the detector's passages (``doc_types``, one per passage, in the
    detector's order) with the gold rows of each: a row's family is its nearest passage's
    (``gold_nearest``: positions, shape ``(n_gold,)``, -1 none), ``answerable`` (bool) and
    ``kept`` (bool: held out in scope) per row. ``None`` when fewer than two families are
    labelled: one family is the whole corpus, which the detector's own figures measure.

    >>> fam = build_families(["a", "b", None, "b"], np.array([0, 1, 3, 2]),
    ...                      np.array([True, True, True, False]),
    ...                      np.array([True, False, True, False]))
    >>> fam.names, fam.answerable, fam.kept, fam.unanswerable
    (('a', 'b'), {'a': 1, 'b': 2}, {'a': 1, 'b': 1}, {'a': 0, 'b': 0})
    >>> build_families(["a", "a"], np.array([0]), np.array([True]), np.array([True])) is None
    True
    """
    names = tuple(sorted({t for t in doc_types if t}))
    if len(names) < 2:
        return None
    index = {name: i for i, name in enumerate(names)}
    of_passage = np.array([index[t] if t else -1 for t in doc_types], dtype=np.int64)
    families = ScopeFamilies(names, of_passage, dict.fromkeys(names, 0), dict.fromkeys(names, 0),
                             dict.fromkeys(names, 0))  # fmt: skip
    for name, is_answerable, is_kept in zip(families.family_of(gold_nearest),
                                            answerable.tolist(), kept.tolist(),
                                            strict=True):  # fmt: skip
        if name is None:
            continue
        if is_answerable:
            families.answerable[name] += 1
            families.kept[name] += bool(is_kept)
        else:
            families.unanswerable[name] += 1
    return families


def family_rows(
    counts: Mapping[str, Mapping[str, int]],
    families: ScopeFamilies,
    min_rows: int,
    min_rise: float = FAMILY_MIN_RISE,
    min_events: int = 1,
) -> list[dict[str, Any]]:
    """One row per family, most scored first (then by name): ``{"family", "scored",
    "out_of_scope", "share" (``None``: none scored), "under_refusals", "harvest_out_of_scope"
    (the under-refusals harvesting may suggest as ``answered_out_of_scope``),
    "answerable_gold", "kept_held_out", "unanswerable_gold", "rise" (the lower end of the
    95 % interval of its share minus the other families', :func:`rise_lower_bound`; ``None``
    when either side has no verdict), "too_few" (bool: fewer than ``min_events`` scored
    events, so not judged), "unmeasured" (bool: the module's rule, never when ``too_few``)}``.

    ``counts``: ``{kind: {family: n}}`` for kinds ``scored``, ``out_of_scope``,
    ``under_refusals``, ``harvest_out_of_scope`` (missing: 0); families only counts name
    (such as ``""``, the events without a family) are left out, of the rows and of the other
    families' share alike.

    ``min_events`` (``analytics.drift.min_count``, default 200, where the reports call it):
    a family is judged only on at least that many scored events, as a drift window is
    tested only on at least that many (one event, 1 of 1 out of scope against 100 of 1,000,
    rises by 0.106: above the floor, and no measurement).

    Worked example: family ``a`` 60 of 100 out of scope, ``b`` 10 of 100; ``a`` has 2
    answerable gold rows. p1 = 0.6, Wilson (95 %) lower end of 60/100 = 0.5020; p2 = 0.1,
    Wilson upper end of 10/100 = 0.1744; rise = 0.5 − √(0.0980² + 0.0744²) = 0.3770. For
    ``b`` the sides swap: Wilson lower end of 10/100 = 0.0552, upper end of 60/100 = 0.6906;
    rise = −0.5 − √(0.0448² + 0.0906²) = −0.6011.

    >>> fam = ScopeFamilies(("a", "b"), np.array([0, 1]), {"a": 2, "b": 30}, {"a": 2, "b": 29},
    ...                     {"a": 0, "b": 30})
    >>> rows = family_rows({"scored": {"a": 100, "b": 100}, "out_of_scope": {"a": 60, "b": 10}},
    ...                    fam, min_rows=10)
    >>> [(r["family"], round(r["rise"], 4), r["unmeasured"]) for r in rows]
    [('a', 0.377, True), ('b', -0.6011, False)]
    """
    scored, out = counts.get("scored", {}), counts.get("out_of_scope", {})
    under, harvest = counts.get("under_refusals", {}), counts.get("harvest_out_of_scope", {})
    total = sum(int(scored.get(name, 0)) for name in families.names)
    total_out = sum(int(out.get(name, 0)) for name in families.names)
    rows = []
    for name in families.names:
        n, o = int(scored.get(name, 0)), int(out.get(name, 0))
        rest, rest_out = total - n, total_out - o
        rise = rise_lower_bound(o, n, rest_out, rest) if n and rest else None
        rows.append({
            "family": name, "scored": n, "out_of_scope": o, "share": o / n if n else None,
            "under_refusals": int(under.get(name, 0)),
            "harvest_out_of_scope": int(harvest.get(name, 0)),
            "answerable_gold": families.answerable[name], "kept_held_out": families.kept[name],
            "unanswerable_gold": families.unanswerable[name], "rise": rise,
            "too_few": n < min_events,
            "unmeasured": (families.answerable[name] < min_rows and n >= min_events
                           and rise is not None and rise >= min_rise),
        })  # fmt: skip
    return sorted(rows, key=lambda row: (-row["scored"], row["family"]))


def family_text(rows: Sequence[Mapping[str, Any]], min_rows: int) -> str | None:
    """The warning naming each unmeasured family (:func:`family_rows`), or ``None``.

    >>> print(family_text([{"family": "encyclopedia", "scored": 1326, "out_of_scope": 909,
    ...     "share": 909 / 1326, "answerable_gold": 4, "kept_held_out": 4,
    ...     "unanswerable_gold": 0, "unmeasured": True},
    ...     {"family": "news", "unmeasured": False}], 10))  # doctest: +NORMALIZE_WHITESPACE
    out-of-scope verdicts outside what the calibration measured: family encyclopedia
    (documents' doc_type; nearest passage) judged 909 of 1,326 (68.6%) out of scope, above the
    other families, measured there by only 4 answerable gold rows (4 kept in scope held out;
    10 needed) and 0 unanswerable: how many answerable questions it judges out of scope there
    is not measured; add 6 answerable gold rows from encyclopedia
    """
    flagged = [row for row in rows if row.get("unmeasured")]
    if not flagged:
        return None
    parts = []
    for row in flagged:
        need = max(1, min_rows - int(row["answerable_gold"]))
        parts.append(
            f"family {row['family']} (documents' doc_type; nearest passage) judged "
            f"{row['out_of_scope']:,} of {row['scored']:,} ({row['share']:.1%}) out of scope, "
            f"above the other families, measured there by only {row['answerable_gold']} "
            f"answerable gold rows ({row['kept_held_out']} kept in scope held out; {min_rows} "
            f"needed) and {row['unanswerable_gold']} unanswerable: how many answerable "
            f"questions it judges out of scope there is not measured; add {need} answerable "
            f"gold rows from {row['family']}"
        )
    return "out-of-scope verdicts outside what the calibration measured: " + "; ".join(parts)


def since_text(from_scored: int, scored: int, what: str = "family") -> str | None:
    """What the family counts cover when counting began after the first verdict (a state
    kept before session 43 restored: ``from_scored`` verdicts were counted without
    families, :attr:`~service.pipeline.totals.AnnotationTotals.family_from_scored`), or
    ``None`` when they cover every verdict. ``what``: whose counts (``"language"``:
    :mod:`service.refusals.languages`, whose counts began in session 44).

    >>> print(since_text(4000, 4399))  # doctest: +NORMALIZE_WHITESPACE
    counted over the last 399 of 4,399 verdicts (family counts began after a restore of a
    state kept without them)
    >>> since_text(0, 4399) is None
    True
    """
    if from_scored <= 0:
        return None
    return (f"counted over the last {max(0, scored - from_scored):,} of {scored:,} verdicts "
            f"({what} counts began after a restore of a state kept without them)")  # fmt: skip


def with_since(text: str, since: str | None) -> str:
    """``text``, with ``since`` (:func:`since_text`) in brackets after it when given."""
    return f"{text} ({since})" if since else text


def under_refusal_family_text(
    rows: Sequence[Mapping[str, Any]], since: str | None = None
) -> str | None:
    """How many under-refusals fall in unmeasured families (:func:`family_rows`), or ``None``;
    ``since``: :func:`since_text`, said with the number.

    >>> under_refusal_family_text([{"family": "e", "unmeasured": True, "under_refusals": 230},
    ...                            {"family": "n", "unmeasured": False, "under_refusals": 9}])
    '230 of them in family e, whose out-of-scope verdicts are not measured'
    """
    found = _unmeasured_count(rows, "under_refusals")
    if found is None:
        return None
    n, families = found
    return with_since(
        f"{n:,} of them in {families}, whose out-of-scope verdicts are not measured", since
    )


def harvest_family_text(
    rows: Sequence[Mapping[str, Any]],
    events: int,
    suggestions: int,
    since: str | None = None,
) -> str | None:
    """The events behind ``answered_out_of_scope`` suggestions that lie in unmeasured
    families, or ``None``: they are kept (a labeller decides), and said. ``events``: all the
    events behind that reason that were counted by family (in a family or in none);
    ``suggestions``: the suggestions held with the reason (several events may make one);
    ``since``: :func:`since_text`.

    >>> print(harvest_family_text([{"family": "e", "unmeasured": True,
    ...                             "harvest_out_of_scope": 59}], 80, 51))
    ... # doctest: +NORMALIZE_WHITESPACE
    59 of the 80 events behind answered_out_of_scope (51 suggestions) lie in family e, whose
    out-of-scope verdicts are not measured (kept: a labeller decides)
    """
    found = _unmeasured_count(rows, "harvest_out_of_scope")
    if found is None:
        return None
    n, families = found
    return with_since(
        f"{n:,} of the {events:,} events behind answered_out_of_scope ({suggestions:,} "
        f"suggestions) lie in {families}, whose out-of-scope verdicts are not measured "
        "(kept: a labeller decides)",
        since,
    )


def flagged_count(
    rows: Sequence[Mapping[str, Any]], flag: str, key: str, name: str
) -> tuple[int, list[str]] | None:
    """The sum of ``key`` over the rows whose ``flag`` is set and whose ``key`` is non-zero,
    and those rows' ``name`` values in order; ``None`` when there is none (the families'
    unmeasured rows here, the confounded languages' in :mod:`service.refusals.languages`).

    >>> flagged_count([{"f": "a", "u": True, "n": 3}, {"f": "b", "u": True, "n": 0},
    ...                {"f": "c", "u": False, "n": 9}], "u", "n", "f")
    (3, ['a'])
    """
    flagged = [row for row in rows if row.get(flag) and row[key]]
    if not flagged:
        return None
    return sum(int(row[key]) for row in flagged), [str(row[name]) for row in flagged]


def _unmeasured_count(rows: Sequence[Mapping[str, Any]], key: str) -> tuple[int, str] | None:
    """The sum of ``key`` over the unmeasured families with a non-zero ``key``, and
    ``"family a"`` / ``"families a, b"`` naming them; ``None`` when there is none."""
    found = flagged_count(rows, "unmeasured", key, "family")
    if found is None:
        return None
    n, names = found
    return n, f"{'families' if len(names) > 1 else 'family'} {', '.join(names)}"


#: The families the text and HTML reports list besides the flagged ones (the largest first).
FAMILIES_SHOWN = 10


def shown_families(
    rows: Sequence[Mapping[str, Any]], top: int = FAMILIES_SHOWN
) -> tuple[list[Mapping[str, Any]], int]:
    """The family rows a report lists (``rows`` come most scored first): the ``top`` largest
    and every flagged one, in their order, and how many are left out.

    >>> rows = [{"family": str(i), "unmeasured": i == 3} for i in range(5)]
    >>> [r["family"] for r in shown_families(rows, 2)[0]], shown_families(rows, 2)[1]
    (['0', '1', '3'], 2)
    """
    shown = [row for i, row in enumerate(rows) if i < top or row.get("unmeasured")]
    return shown, len(rows) - len(shown)


def gold_families_text(families: ScopeFamilies, min_rows: int, top: int = FAMILIES_SHOWN) -> str:
    """What the gold set measures per family, before any live traffic (``goldwatch config
    check``): each family's answerable gold rows and those kept in scope held out, and the
    families with fewer than ``min_rows`` such rows, whose live verdicts the reports will name
    as not measured if their out-of-scope share stands above the others'. At most ``top``
    families are named in each list (those of most answerable rows; of the few, the first by
    name; ``and N more``).

    >>> fam = ScopeFamilies(("encyclopedia", "news"), np.array([0, 1]),
    ...                     {"encyclopedia": 6, "news": 24}, {"encyclopedia": 6, "news": 23},
    ...                     {"encyclopedia": 0, "news": 30})
    >>> print(gold_families_text(fam, 10))  # doctest: +NORMALIZE_WHITESPACE
    out-of-scope families (doc_type of the nearest passage): encyclopedia 6 answerable gold
    rows (6 kept in scope held out), news 24 (23); fewer than 10 in encyclopedia: its live
    verdicts are named as not measured if its out-of-scope share stands above the others'
    (add 4 answerable gold rows from encyclopedia)
    """
    parts = []
    largest = sorted(families.names, key=lambda name: -families.answerable[name])[:top]
    for i, name in enumerate(sorted(largest)):
        n, kept = families.answerable[name], families.kept[name]
        parts.append(f"{name} {n} answerable gold rows ({kept} kept in scope held out)" if i == 0
                     else f"{name} {n} ({kept})")  # fmt: skip
    more = len(families.names) - len(largest)
    text = ("out-of-scope families (doc_type of the nearest passage): " + ", ".join(parts)
            + (f" and {more} more" if more else ""))  # fmt: skip
    every_few = [name for name in families.names if families.answerable[name] < min_rows]
    few = every_few[:top]
    if few:
        fixes = ", ".join(f"{min_rows - families.answerable[name]} answerable gold rows from "
                          f"{name}" for name in few)  # fmt: skip
        if len(every_few) > len(few):
            fixes += f", and {len(every_few) - len(few)} more families"
        what, its = ("families", "their") if len(few) > 1 else ("", "its")
        text += (f"; fewer than {min_rows} in {what + ' ' if what else ''}{', '.join(few)}: "
                 f"{its} live verdicts are named as not measured if {its} out-of-scope share "
                 f"stands above the others' (add {fixes})")  # fmt: skip
    return text
