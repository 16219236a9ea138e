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
from service.refusals.families import flagged_count, since_text, with_since

__all__ = [
    "LANGUAGES_SHOWN",
    "LANGUAGE_MIN_AUC",
    "LANGUAGE_MIN_ROWS",
    "ScopeLanguages",
    "build_languages",
    "confound_text",
    "block_since",
    "harvest_language_text",
    "language_cell",
    "language_rows",
    "language_rows_html",
    "scope_language_lines",
    "shown_languages",
    "under_refusal_language_text",
]

#: The lower end of the 95 % interval of the AUC by which the held-out score ranks the other
#: languages' answerable rows above those of the unanswerable rows' languages that flags the
#: confound. Trial 43: 0.978 (its lower end above this); the benchmark: 0.439.
LANGUAGE_MIN_AUC = 0.75

#: The answerable gold rows each side needs before the confound is measured (flagged or
#: cleared): with 1 row the interval of the AUC is a point (1 row ranked below 40 others:
#: [1.000, 1.000]); on a null simulation (no language effect, 10 unanswerable rows in the
#: language, 40 answerable rows in another, 200 draws) 1 row flagged 17.5 % of draws, 2 rows
#: 6.5 %, 3 rows 1.5 % (the interval's nominal 2.5 %). Trial 43 has 8.
LANGUAGE_MIN_ROWS = 3

#: The languages the text and HTML reports list besides the confounded ones (most scored
#: first), as :data:`~service.refusals.families.FAMILIES_SHOWN`.
LANGUAGES_SHOWN = 10


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
            (``None``: not measured, fewer than :data:`LANGUAGE_MIN_ROWS` answerable rows on
            a side), "present": bool (flagged either way: ``direction``)}``.
        direction: ``"languages"`` when the score ranks ``languages``' answerable rows below
            the others' (interval's lower end at least the floor: it may read them as out of
            scope), ``"others"`` when it ranks them above (upper end at most 1 − the floor:
            it may read the other languages as out of scope), ``None`` when not flagged.
    """

    names: tuple[str, ...]
    answerable: dict[str, int]
    kept: dict[str, int]
    unanswerable: dict[str, int]
    confound: dict[str, Any] | None
    direction: str | None = None

    @property
    def confounded(self) -> frozenset[str]:
        """The languages whose live verdicts are confounded (empty when none is): the
        unanswerable rows' languages, or the others when the score ranks those below."""
        if self.confound is None or self.direction is None:
            return frozenset()
        return frozenset(self.confound[self.direction])


def build_languages(
    languages: Sequence[str],
    answerable: np.ndarray,
    kept: np.ndarray,
    scores: np.ndarray,
    min_auc: float = LANGUAGE_MIN_AUC,
    n_boot: int = 1000,
    min_rows: int = LANGUAGE_MIN_ROWS,
) -> ScopeLanguages:
    """The gold rows by language (``languages``: a key per row; ``answerable``, ``kept``
    (held out in scope): bool per row; ``scores``: the held-out probability in scope per row)
    and the confound check (module docstring), two-sided: flagged when the AUC's interval lies
    at or above ``min_auc`` or at or below ``1 - min_auc``, and only on at least ``min_rows``
    answerable rows on each side.

    >>> langs = ["en"] * 6 + ["de"] * 4
    >>> ans = np.array([True] * 4 + [False] * 2 + [True] * 4)
    >>> scores = np.array([0.2, 0.3, 0.5, 0.6, 0.1, 0.1, 0.7, 0.8, 0.9, 0.95])
    >>> out = build_languages(langs, ans, scores >= 0.4, scores, n_boot=0)
    >>> out.answerable, out.unanswerable, out.kept
    ({'de': 4, 'en': 4}, {'de': 0, 'en': 2}, {'de': 4, 'en': 2})
    >>> c = out.confound
    >>> c["languages"], c["others"], c["in_out"], c["in_n"], c["rest_out"], c["auc"]
    (['en'], ['de'], 2, 4, 0, 1.0)
    >>> out.direction  # n_boot=0: no interval, so not flagged
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
    confound, direction = None, None
    if u_langs and len(set(u_langs) & set(a_langs)) < len(a_langs):
        inside = ans & np.isin(lang, u_langs)
        rest = ans & ~np.isin(lang, u_langs)
        in_n, rest_n = int(inside.sum()), int(rest.sum())
        in_out, rest_out = int((inside & ~held).sum()), int((rest & ~held).sum())
        rise = rise_lower_bound(in_out, in_n, rest_out, rest_n) if in_n and rest_n else None
        auc: float | None = None
        low: float | None = None
        high: float | None = None
        if in_n >= min_rows and rest_n >= min_rows:
            quality = measure_auc(np.asarray(scores)[rest], np.asarray(scores)[inside],
                                  n_boot=n_boot)  # fmt: skip
            auc, low, high = float(quality.auc), float(quality.low), float(quality.high)
            if low >= min_auc:  # NaN (no interval): False
                direction = "languages"
            elif high <= 1 - min_auc:
                direction = "others"
        confound = {
            "languages": u_langs, "others": [n for n in a_langs if n not in u_langs],
            "in_out": in_out, "in_n": in_n, "rest_out": rest_out, "rest_n": rest_n,
            "rise": rise, "auc": auc, "low": low, "high": high,
            "present": direction is not None,
        }  # fmt: skip
    return ScopeLanguages(names, count, kept_n, unans, confound, direction)


def confound_text(languages: ScopeLanguages, min_auc: float = LANGUAGE_MIN_AUC) -> str | None:
    """What ``goldwatch config check`` and the reports say of the confound, or ``None`` when
    the unanswerable rows cover every answerable language.

    >>> c = {"languages": ["en"], "others": ["ar"], "in_out": 2, "in_n": 8, "rest_out": 0,
    ...      "rest_n": 40, "rise": 0.0511, "auc": 0.978, "low": 0.93, "high": 1.0,
    ...      "present": True}
    >>> langs = ScopeLanguages(("ar", "en"), {"ar": 40, "en": 8}, {"ar": 40, "en": 6},
    ...     {"ar": 0, "en": 10}, c, "languages")
    >>> print(confound_text(langs))  # doctest: +NORMALIZE_WHITESPACE
    out-of-scope LANGUAGE CONFOUND: the unanswerable gold rows are in 1 of 2 languages (en);
    held out, the detector judged 2 of 8 (25.0%) answerable en rows out of scope against 0 of
    40 (0.0%) in the others, and its score ranks en below the others among answerable rows
    (ROC AUC 0.978 [0.930, 1.000], at least 0.75 flags): it may read en as out of scope;
    the reports count its verdicts, under-refusals and the events behind harvest suggestions
    in en apart; add unanswerable gold rows in ar
    >>> print(confound_text(langs._replace(confound={**c, "in_n": 2, "auc": None, "low": None,
    ...     "high": None, "present": False}, direction=None)))
    ... # doctest: +NORMALIZE_WHITESPACE
    out-of-scope language coverage: the unanswerable gold rows are in 1 of 2 languages (en);
    held out, the detector judged 2 of 2 (100.0%) answerable en rows out of scope against 0 of
    40 (0.0%) in the others (not measured: 2 answerable en rows and 40 in the others, 3
    needed on each side); add unanswerable gold rows in ar to be sure
    """
    c = languages.confound
    if c is None:
        return None
    answerable = [name for name in languages.names if languages.answerable[name]]
    which = ", ".join(c["languages"])
    others = ", ".join(c["others"])
    head = (f"the unanswerable gold rows are in {len(c['languages'])} of {len(answerable)} "
            f"languages ({which})")  # fmt: skip
    rates = ""
    if c["in_n"] and c["rest_n"]:
        rates = (f"; held out, the detector judged {c['in_out']} of {c['in_n']} "
                 f"({c['in_out'] / c['in_n']:.1%}) answerable {which} rows out of scope against "
                 f"{c['rest_out']} of {c['rest_n']} ({c['rest_out'] / c['rest_n']:.1%}) in the "
                 "others")  # fmt: skip
    fix = f"add unanswerable gold rows in {others}"
    if c["auc"] is None:
        return (f"out-of-scope language coverage: {head}{rates} (not measured: {c['in_n']} "
                f"answerable {which} rows and {c['rest_n']} in the others, {LANGUAGE_MIN_ROWS} "
                f"needed on each side); {fix} to be sure")  # fmt: skip
    sep = (f"ROC AUC {c['auc']:.3f} [{c['low']:.3f}, {c['high']:.3f}], at least {min_auc:g} "
           "flags")  # fmt: skip
    apart = "the reports count its verdicts, under-refusals and the events behind harvest "
    if languages.direction == "languages":
        return (f"out-of-scope LANGUAGE CONFOUND: {head}{rates}, and its score ranks {which} "
                f"below the others among answerable rows ({sep}): it may read {which} as out "
                f"of scope; {apart}suggestions in {which} apart; {fix}")  # fmt: skip
    if languages.direction == "others":
        sep = (f"ROC AUC {c['auc']:.3f} [{c['low']:.3f}, {c['high']:.3f}], at most "
               f"{1 - min_auc:g} flags")  # fmt: skip
        return (f"out-of-scope LANGUAGE CONFOUND: {head}{rates}, and its score ranks the "
                f"others ({others}) below {which} among answerable rows ({sep}): it may read "
                f"{others} as out of scope; {apart}suggestions in {others} apart; "
                f"{fix}")  # fmt: skip
    return (f"out-of-scope language coverage: {head}{rates}; its score does not rank {which} "
            f"below the others among answerable rows (ROC AUC {c['auc']:.3f} [{c['low']:.3f}, "
            f"{c['high']:.3f}]; lower end < {min_auc:g}) nor above them (upper end > "
            f"{1 - min_auc:g}): no confound measured; {fix} to be sure")  # fmt: skip


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
    found = flagged_count(rows, "confounded", key, "language")
    return None if found is None else (found[0], ", ".join(found[1]))


def _gold_where(gold_languages: Sequence[str]) -> str:
    """``"every unanswerable gold row is in en"``: a fact whichever side the confound flags
    and whichever confounded languages hold events."""
    return f"every unanswerable gold row is in {', '.join(gold_languages)}"


def under_refusal_language_text(
    rows: Sequence[Mapping[str, Any]], gold_languages: Sequence[str], since: str | None = None
) -> str | None:
    """How many under-refusals fall in the confounded languages (:func:`language_rows`), or
    ``None``. ``gold_languages``: the unanswerable rows' languages (``confound["languages"]``);
    ``since``: :func:`~service.refusals.families.since_text`, said with the number.

    >>> under_refusal_language_text([{"language": "en", "confounded": True,
    ...     "under_refusals": 290}, {"language": "fr", "confounded": True, "under_refusals": 0},
    ...     {"language": "de", "confounded": False, "under_refusals": 9}], ["en", "fr"])
    '290 of them in en (language confound: every unanswerable gold row is in en, fr)'
    """
    found = _confounded_count(rows, "under_refusals")
    if found is None:
        return None
    n, names = found
    return with_since(
        f"{n:,} of them in {names} (language confound: {_gold_where(gold_languages)})", since
    )


def harvest_language_text(
    rows: Sequence[Mapping[str, Any]],
    events: int,
    suggestions: int,
    gold_languages: Sequence[str],
    since: str | None = None,
) -> str | None:
    """The events behind ``answered_out_of_scope`` suggestions in the confounded languages,
    or ``None`` (kept: a labeller decides). ``events``: the events behind that reason;
    ``suggestions``: the suggestions held with it; ``gold_languages``, ``since``: as
    :func:`under_refusal_language_text`.

    >>> print(harvest_language_text([{"language": "en", "confounded": True,
    ...     "harvest_out_of_scope": 250}], 280, 196, ["en"]))  # doctest: +NORMALIZE_WHITESPACE
    250 of the 280 events behind answered_out_of_scope (196 suggestions) are in en: the
    language confound (every unanswerable gold row is in en; kept: a labeller decides)
    """
    found = _confounded_count(rows, "harvest_out_of_scope")
    if found is None:
        return None
    n, names = found
    return with_since(
        f"{n:,} of the {events:,} events behind answered_out_of_scope ({suggestions:,} "
        f"suggestions) are in {names}: the language confound ({_gold_where(gold_languages)}; "
        "kept: a labeller decides)",
        since,
    )


def language_cell(row: Mapping[str, Any]) -> str:
    """One language's verdicts for the reports: ``"en 1,200/1,500 (80.0% [77.9, 82.0]);
    confounded"``; a confounded language with unanswerable gold rows is one of theirs, one
    without is one the score ranks below them.

    >>> language_cell({"language": "en", "scored": 1500, "out_of_scope": 1200, "share": 0.8,
    ...                "low": 0.7788, "high": 0.8196, "confounded": True,
    ...                "unanswerable_gold": 10})
    'en 1,200/1,500 (80.0% [77.9, 82.0]; CONFOUNDED: unanswerable gold rows only here)'
    """
    note = ""
    if row.get("confounded"):
        note = ("; CONFOUNDED: unanswerable gold rows only here" if row.get("unanswerable_gold")
                else "; CONFOUNDED: no unanswerable gold row here")  # fmt: skip
    return (f"{row['language']} {row['out_of_scope']:,}/{row['scored']:,} ({row['share']:.1%} "
            f"[{100 * row['low']:.1f}, {100 * row['high']:.1f}]{note})")  # fmt: skip


def shown_languages(
    rows: Sequence[Mapping[str, Any]], top: int = LANGUAGES_SHOWN
) -> tuple[list[Mapping[str, Any]], int]:
    """The language rows a report lists (most scored first): the ``top`` largest and every
    confounded one, in their order, and how many are left out.

    >>> rows = [{"language": str(i), "confounded": i == 3} for i in range(5)]
    >>> [r["language"] for r in shown_languages(rows, 2)[0]], shown_languages(rows, 2)[1]
    (['0', '1', '3'], 2)
    """
    shown = [row for i, row in enumerate(rows) if i < top or row.get("confounded")]
    return shown, len(rows) - len(shown)


def block_since(block: Mapping[str, Any]) -> str | None:
    """What the block's language counts cover (:func:`~service.refusals.families.since_text`
    of its ``from_scored`` and ``scored``), or ``None`` when they cover every verdict.

    >>> print(block_since({"from_scored": 4000, "scored": 4005}))
    ... # doctest: +NORMALIZE_WHITESPACE
    counted over the last 5 of 4,005 verdicts (language counts began after a restore of a
    state kept without them)
    """
    return since_text(int(block.get("from_scored") or 0), int(block.get("scored") or 0),
                      "language")  # fmt: skip


def scope_language_lines(block: Mapping[str, Any]) -> list[str]:
    """The out-of-scope block's language lines (``out_of_scope.verdicts_by_language``): the
    confound (when the unanswerable rows cover fewer languages), then the verdicts of the
    :data:`LANGUAGES_SHOWN` most scored and the confounded languages with the Wilson 95 %
    interval of each share (``and N more``), and what the counts cover.

    >>> for line in scope_language_lines({"text": None, "rows": [{"language": "de", "scored": 10,
    ...         "out_of_scope": 1, "share": 0.1, "low": 0.0179, "high": 0.4042}]}):
    ...     print(line)
      out of scope by language: de 1/10 (10.0% [1.8, 40.4])
    """
    lines = []
    if block.get("text"):
        flagged = "CONFOUND" in str(block["text"])
        lines.append(f"  {'WARNING: ' if flagged else ''}{block['text']}")
    shown, more = shown_languages(block.get("rows") or [])
    cells = [language_cell(row) for row in shown]
    if cells:
        since = f"; {said}" if (said := block_since(block)) else ""
        lines.append(f"  out of scope by language: {', '.join(cells)}"
                     + (f" and {more} more" if more else "") + since)  # fmt: skip
    return lines


def language_rows_html(block: Mapping[str, Any] | None, mark: str = "") -> list[list[Any]]:
    """The status page's out-of-scope table rows of ``out_of_scope.verdicts_by_language``:
    the confound (when measured), the under-refusals and harvest events in the confounded
    languages, then one row per shown language (:func:`language_cell`,
    :func:`shown_languages`) and what the counts cover; ``[]`` without it.

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
    shown, more = shown_languages(block.get("rows") or [])
    for row in shown:
        cell = language_cell(row)
        rows.append([f"out of scope, language {row['language']}{mark}",
                     cell.removeprefix(f"{row['language']} ")])  # fmt: skip
    if more:
        rows.append(["out of scope, other languages",
                     f"{more} more (JSON out_of_scope.verdicts_by_language)"])  # fmt: skip
    if (since := block_since(block)) is not None:
        rows.append(["out-of-scope language counts", since])
    return rows
