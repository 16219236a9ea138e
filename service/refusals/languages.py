"""The out-of-scope detector's verdicts by language, and the language confound of its gold set.

The detector learns "unanswerable" from the gold set's unanswerable rows. When those rows are
written in fewer languages than the answerable ones, "out of scope" and "in that language"
can be learned together. Trial 43 (M1): six languages answerable (8 rows each), the 10
unanswerable rows all English (the user's real off-topic traffic exists only in English); the
detector, ROC AUC 0.994 overall, judged 566 of 3,994 live questions out of scope against 356
truly off-corpus, and 145 of the 148 in-scope questions harvesting suggested as
``answered_out_of_scope`` were English.

The check (:func:`build_languages`), measured in session 44 on trial 43's gold set and the
production-shaped benchmark's (``benchmarks/bench_production``: its 100 unanswerable rows
are English too, of three languages; the demo's unanswerable rows cover its three): the
confound is **present** when

1. the unanswerable rows' languages are fewer than the answerable rows', and
2. among the answerable rows, the detector's held-out score (cross-validated, the
   off-corpus rule applied) ranks the other languages' rows above the unanswerable rows'
   languages' rows with a ROC AUC whose 95 % interval's lower end is at least
   :data:`LANGUAGE_MIN_AUC`: the score tells the language apart, which is what it would
   read as "out of scope" on live traffic.

Measured: trial 43, English answerable rows against the five other languages' 40: AUC 0.978
(held out, 2 of the 8 English answerable rows judged out of scope against 0 of 40: a rise
whose Newcombe lower end is only 0.051, too small a sample for the rate alone to flag);
the benchmark: AUC 0.439 (15 of 277 against 3 of 100, lower end −0.034): not flagged.

When present, the per-language rows of the reports say which live languages are the
confounded ones, and the under-refusal and harvest lines how many of theirs fall there
(:func:`under_refusal_language_text`, :func:`harvest_language_text`), as the corpus
families' rule does (:mod:`service.refusals.families`). A flag means the verdicts there are
confounded, not wrong; the fix is unanswerable gold rows in the other languages (translated
off-topic questions are as good as real ones for this).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np

from service.coverage import rise_lower_bound, wilson_bounds

__all__ = [
    "LANGUAGE_MIN_AUC",
    "ScopeLanguages",
    "build_languages",
    "confound_text",
    "harvest_language_text",
    "language_rows",
    "under_refusal_language_text",
]

#: The lower end of the 95 % interval of the AUC by which the held-out score ranks the other
#: languages' answerable rows above those of the unanswerable rows' languages that flags the
#: confound. Trial 43: 0.978 (its lower end above this); the benchmark: 0.439.
LANGUAGE_MIN_AUC = 0.75


class ScopeLanguages(NamedTuple):
    """The gold rows of each language and the measured confound.

    Attributes:
        names: the languages of the gold rows (sorted keys).
        answerable, kept, unanswerable: per language, answerable rows, of those the rows kept
            in scope held out, unanswerable rows.
        confound: ``None`` when the unanswerable rows cover every answerable language, else
            ``{"languages": [the unanswerable rows' languages], "others": [the answerable
            languages without one], "in_out", "in_n": held-out out-of-scope verdicts on the
            answerable rows of ``languages`` and their count, "rest_out", "rest_n": the same
            on the other answerable rows, "rise": Newcombe lower end of the rates' difference
            (``None`` when a side has no row), "auc", "low", "high": the held-out score's ROC
            AUC of the other rows above ``languages``' rows with its 95 % bootstrap interval
            (NaN when a side has no row), "present": bool (the module's rule)}``.
    """

    names: tuple[str, ...]
    answerable: dict[str, int]
    kept: dict[str, int]
    unanswerable: dict[str, int]
    confound: dict[str, Any] | None

    @property
    def confounded(self) -> frozenset[str]:
        """The languages whose live verdicts are confounded (empty when none is)."""
        if self.confound is None or not self.confound["present"]:
            return frozenset()
        return frozenset(self.confound["languages"])


def build_languages(
    languages: Sequence[str],
    answerable: np.ndarray,
    kept: np.ndarray,
    scores: np.ndarray,
    min_auc: float = LANGUAGE_MIN_AUC,
    n_boot: int = 1000,
) -> ScopeLanguages:
    """The gold rows by language (``languages``: a key per row; ``answerable``, ``kept``
    (held out in scope): bool per row; ``scores``: the held-out probability in scope per row)
    and the confound check (module docstring).

    >>> langs = ["en"] * 6 + ["de"] * 4
    >>> ans = np.array([True] * 4 + [False] * 2 + [True] * 4)
    >>> scores = np.array([0.2, 0.3, 0.5, 0.6, 0.1, 0.1, 0.7, 0.8, 0.9, 0.95])
    >>> out = build_languages(langs, ans, scores >= 0.4, scores, n_boot=0)
    >>> out.answerable, out.unanswerable, out.kept
    ({'de': 4, 'en': 4}, {'de': 0, 'en': 2}, {'de': 4, 'en': 2})
    >>> c = out.confound
    >>> c["languages"], c["others"], c["in_out"], c["in_n"], c["rest_out"], c["auc"]
    (['en'], ['de'], 2, 4, 0, 1.0)
    """
    from service.evaluation.detector_quality import measure_auc

    names = tuple(sorted(set(languages)))
    ans = np.asarray(answerable, dtype=bool)
    held = np.asarray(kept, dtype=bool)
    lang = np.asarray(languages, dtype=object)
    count = {name: int((ans & (lang == name)).sum()) for name in names}
    kept_n = {name: int((ans & held & (lang == name)).sum()) for name in names}
    unans = {name: int((~ans & (lang == name)).sum()) for name in names}
    u_langs = sorted(name for name in names if unans[name])
    a_langs = sorted(name for name in names if count[name])
    confound = None
    if u_langs and len(set(u_langs) & set(a_langs)) < len(a_langs):
        inside = ans & np.isin(lang, u_langs)
        rest = ans & ~np.isin(lang, u_langs)
        in_n, rest_n = int(inside.sum()), int(rest.sum())
        in_out, rest_out = int((inside & ~held).sum()), int((rest & ~held).sum())
        rise = rise_lower_bound(in_out, in_n, rest_out, rest_n) if in_n and rest_n else None
        auc = low = high = float("nan")
        if in_n and rest_n:
            quality = measure_auc(np.asarray(scores)[rest], np.asarray(scores)[inside],
                                  n_boot=n_boot)  # fmt: skip
            auc, low, high = float(quality.auc), float(quality.low), float(quality.high)
        confound = {
            "languages": u_langs, "others": [n for n in a_langs if n not in u_langs],
            "in_out": in_out, "in_n": in_n, "rest_out": rest_out, "rest_n": rest_n,
            "rise": rise, "auc": auc, "low": low, "high": high,
            "present": bool(low >= min_auc),  # NaN (no interval): False
        }  # fmt: skip
    return ScopeLanguages(names, count, kept_n, unans, confound)


def confound_text(languages: ScopeLanguages, min_auc: float = LANGUAGE_MIN_AUC) -> str | None:
    """What ``goldwatch config check`` and the reports say of the confound, or ``None`` when
    the unanswerable rows cover every answerable language.

    >>> langs = ScopeLanguages(("ar", "en"), {"ar": 40, "en": 8}, {"ar": 40, "en": 6},
    ...     {"ar": 0, "en": 10}, {"languages": ["en"], "others": ["ar"], "in_out": 2,
    ...     "in_n": 8, "rest_out": 0, "rest_n": 40, "rise": 0.0511, "auc": 0.978,
    ...     "low": 0.93, "high": 1.0, "present": True})
    >>> print(confound_text(langs))  # doctest: +NORMALIZE_WHITESPACE
    out-of-scope LANGUAGE CONFOUND: the unanswerable gold rows are in 1 of 2 languages (en);
    held out, the detector judged 2 of 8 (25.0%) answerable en rows out of scope against 0 of
    40 (0.0%) in the others, and its score tells en from the others among answerable rows
    (ROC AUC 0.978 [0.930, 1.000], at least 0.75 flags): it may read en as out of scope;
    the reports count its verdicts, under-refusals and harvest suggestions in en apart; add
    unanswerable gold rows in ar
    """
    c = languages.confound
    if c is None:
        return None
    answerable = [name for name in languages.names if languages.answerable[name]]
    which = ", ".join(c["languages"])
    head = (f"the unanswerable gold rows are in {len(c['languages'])} of {len(answerable)} "
            f"languages ({which})")  # fmt: skip
    rates = ""
    if c["in_n"] and c["rest_n"]:
        rates = (f"; held out, the detector judged {c['in_out']} of {c['in_n']} "
                 f"({c['in_out'] / c['in_n']:.1%}) answerable {which} rows out of scope against "
                 f"{c['rest_out']} of {c['rest_n']} ({c['rest_out'] / c['rest_n']:.1%}) in the "
                 "others")  # fmt: skip
    if np.isnan(c["auc"]):
        return f"out-of-scope language coverage: {head}{rates} (not measured: no answerable row)"
    sep = (f"ROC AUC {c['auc']:.3f} [{c['low']:.3f}, {c['high']:.3f}], at least {min_auc:g} "
           "flags")  # fmt: skip
    fix = f"add unanswerable gold rows in {', '.join(c['others'])}"
    if c["present"]:
        return (f"out-of-scope LANGUAGE CONFOUND: {head}{rates}, and its score tells {which} "
                f"from the others among answerable rows ({sep}): it may read {which} as out of "
                f"scope; the reports count its verdicts, under-refusals and harvest "
                f"suggestions in {which} apart; {fix}")  # fmt: skip
    return (f"out-of-scope language coverage: {head}{rates}; its score does not tell {which} "
            f"from the others among answerable rows ({sep}): no confound measured; {fix} to "
            "be sure")  # fmt: skip


def language_rows(
    counts: Mapping[str, Mapping[str, int]],
    languages: ScopeLanguages | None,
    min_events: int = 1,
) -> list[dict[str, Any]]:
    """One row per live language, most scored first (then by name): ``{"language", "scored",
    "out_of_scope", "share" (``None``: none scored), "low", "high" (Wilson 95 % interval of
    the share), "rise" (Newcombe lower end of its share minus the other languages', as
    :func:`~service.refusals.families.family_rows`; ``None`` when a side has no verdict),
    "under_refusals", "harvest_out_of_scope", "answerable_gold", "unanswerable_gold",
    "too_few" (fewer than ``min_events`` scored), "confounded" (bool: one of the
    unanswerable rows' languages with the confound present)}``.

    ``counts``: ``{kind: {language: n}}`` for ``scored``, ``out_of_scope``,
    ``under_refusals``, ``harvest_out_of_scope`` (missing: 0).

    Worked example: ``en`` 60 of 100, ``de`` 10 of 100: the rises of
    :func:`~service.refusals.families.family_rows`' example, 0.3770 and −0.6011; Wilson
    (95 %) of 60/100: [0.5020, 0.6906].

    >>> rows = language_rows({"scored": {"en": 100, "de": 100},
    ...                       "out_of_scope": {"en": 60, "de": 10}}, None)
    >>> [(r["language"], round(r["low"], 4), round(r["rise"], 4), r["confounded"])
    ...  for r in rows]
    [('de', 0.0552, -0.6011, False), ('en', 0.502, 0.377, False)]
    """
    scored, out = counts.get("scored", {}), counts.get("out_of_scope", {})
    under, harvest = counts.get("under_refusals", {}), counts.get("harvest_out_of_scope", {})
    names = sorted(name for name, n in scored.items() if n)
    total = sum(int(scored[name]) for name in names)
    total_out = sum(int(out.get(name, 0)) for name in names)
    confounded = languages.confounded if languages is not None else frozenset()
    rows = []
    for name in names:
        n, o = int(scored[name]), int(out.get(name, 0))
        rest, rest_out = total - n, total_out - o
        low, high = wilson_bounds(o, n)
        rows.append({
            "language": name, "scored": n, "out_of_scope": o, "share": o / n,
            "low": low, "high": high,
            "rise": rise_lower_bound(o, n, rest_out, rest) if rest else None,
            "under_refusals": int(under.get(name, 0)),
            "harvest_out_of_scope": int(harvest.get(name, 0)),
            "answerable_gold": languages.answerable.get(name, 0) if languages else None,
            "unanswerable_gold": languages.unanswerable.get(name, 0) if languages else None,
            "too_few": n < min_events, "confounded": name in confounded,
        })  # fmt: skip
    return sorted(rows, key=lambda row: (-row["scored"], row["language"]))


def _confounded_count(rows: Sequence[Mapping[str, Any]], key: str) -> tuple[int, str] | None:
    flagged = [row for row in rows if row.get("confounded") and row[key]]
    if not flagged:
        return None
    return sum(int(row[key]) for row in flagged), ", ".join(str(r["language"]) for r in flagged)


def under_refusal_language_text(rows: Sequence[Mapping[str, Any]]) -> str | None:
    """How many under-refusals fall in the confounded languages (:func:`language_rows`), or
    ``None``.

    >>> under_refusal_language_text([{"language": "en", "confounded": True,
    ...     "under_refusals": 290}, {"language": "de", "confounded": False, "under_refusals": 9}])
    '290 of them in en, where every unanswerable gold row lies (language confound)'
    """
    found = _confounded_count(rows, "under_refusals")
    if found is None:
        return None
    n, names = found
    return f"{n:,} of them in {names}, where every unanswerable gold row lies (language confound)"


def harvest_language_text(
    rows: Sequence[Mapping[str, Any]], events: int, suggestions: int
) -> str | None:
    """The events behind ``answered_out_of_scope`` suggestions in the confounded languages,
    or ``None`` (kept: a labeller decides). ``events``: the events behind that reason;
    ``suggestions``: the suggestions held with it.

    >>> print(harvest_language_text([{"language": "en", "confounded": True,
    ...     "harvest_out_of_scope": 250}], 280, 196))  # doctest: +NORMALIZE_WHITESPACE
    250 of the 280 events behind answered_out_of_scope (196 suggestions) are in en: the
    language confound (every unanswerable gold row lies there; kept: a labeller decides)
    """
    found = _confounded_count(rows, "harvest_out_of_scope")
    if found is None:
        return None
    n, names = found
    return (f"{n:,} of the {events:,} events behind answered_out_of_scope ({suggestions:,} "
            f"suggestions) are in {names}: the language confound (every unanswerable gold "
            "row lies there; kept: a labeller decides)")  # fmt: skip


def language_cell(row: Mapping[str, Any]) -> str:
    """One language's verdicts for the reports: ``"en 1,200/1,500 (80.0% [77.9, 82.0]);
    confounded"``.

    >>> language_cell({"language": "en", "scored": 1500, "out_of_scope": 1200, "share": 0.8,
    ...                "low": 0.7788, "high": 0.8196, "confounded": True})
    'en 1,200/1,500 (80.0% [77.9, 82.0]; CONFOUNDED: unanswerable gold rows only here)'
    """
    note = "; CONFOUNDED: unanswerable gold rows only here" if row.get("confounded") else ""
    return (f"{row['language']} {row['out_of_scope']:,}/{row['scored']:,} ({row['share']:.1%} "
            f"[{100 * row['low']:.1f}, {100 * row['high']:.1f}]{note})")  # fmt: skip


def scope_language_lines(block: Mapping[str, Any]) -> list[str]:
    """The out-of-scope block's language lines (``out_of_scope.verdicts_by_language``): the
    confound (when the unanswerable rows cover fewer languages), then the verdicts per
    language with the Wilson 95 % interval of each share.

    >>> for line in scope_language_lines({"text": None, "rows": [{"language": "de", "scored": 10,
    ...         "out_of_scope": 1, "share": 0.1, "low": 0.0179, "high": 0.4042}]}):
    ...     print(line)
      out of scope by language: de 1/10 (10.0% [1.8, 40.4])
    """
    lines = []
    if block.get("text"):
        flagged = "CONFOUND" in str(block["text"])
        lines.append(f"  {'WARNING: ' if flagged else ''}{block['text']}")
    cells = [language_cell(row) for row in block.get("rows") or []]
    if cells:
        lines.append(f"  out of scope by language: {', '.join(cells)}")
    return lines


def language_rows_html(block: Mapping[str, Any] | None, mark: str = "") -> list[list[Any]]:
    """The status page's out-of-scope table rows of ``out_of_scope.verdicts_by_language``:
    the confound (when measured), the under-refusals and harvest events in the confounded
    languages, then one row per language (:func:`language_cell`); ``[]`` without it.

    >>> for row in language_rows_html({"text": "W", "rows": [{"language": "de", "scored": 10,
    ...         "out_of_scope": 1, "share": 0.1, "low": 0.0179, "high": 0.4042}]}):
    ...     print(row)
    ['out-of-scope gold languages', 'W']
    ['out of scope, language de', '1/10 (10.0% [1.8, 40.4])']
    """
    if not block:
        return []
    rows: list[list[Any]] = []
    if block.get("text"):
        label = ("LANGUAGE CONFOUND" if "CONFOUND" in str(block["text"])
                 else "out-of-scope gold languages")  # fmt: skip
        rows.append([label, block["text"]])
    for key, label in (
        ("under_refusals_text", "under-refusals in confounded languages"),
        ("harvest_text", "answered_out_of_scope events in confounded languages"),
    ):
        if block.get(key):
            rows.append([label, block[key]])
    for row in block.get("rows") or []:
        cell = language_cell(row)
        rows.append([f"out of scope, language {row['language']}{mark}",
                     cell.removeprefix(f"{row['language']} ")])  # fmt: skip
    return rows
