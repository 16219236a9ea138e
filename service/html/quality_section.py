"""The "Live quality" section of the replay report and the status page.

Reads :meth:`service.quality.stage.LiveQualityStage.report`'s dict: known questions (live
questions matching a gold question at cosine similarity ≥ ``threshold``) scored per
retriever (recall@k, hit rate@k, MRR@k: trec_eval's semantics,
:func:`service.quality.known.live_scores`), refusals of known questions both ways, and the
access-control findings: leaks (an answer citing a passage its asker's role may not read),
retrieval violations, and the newest events to review (questions already scrubbed of
personal data upstream). What the known-question figures cover is said first: the gold-set
version, the first event they count and each gold-set change (measurements of unchanged gold
rows carried over, of changed or removed rows dropped); the ACL counts are cumulative over
every gold-set version since their first event.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from markupsafe import Markup

from service.html.over_time import quality_over_time
from service.html.page import dated_minute, ids, minute, para, pct, section, table
from service.quality.by_group import LIVE_VS_GOLD, REPORTED_FIELDS, window_text
from service.quality.stage import rejected_note
from service.quality.where import missing_window_text

__all__ = ["quality_section"]

#: Review rows shown; the rest stay in the JSON report.
REVIEW_ROWS = 20
#: Columns of the gold-set changes table.
_CHANGE_COLUMNS = ["change", "from", "to", "last event before", "after events",
                   "rows carried over", "events carried over", "rows dropped",
                   "events dropped"]  # fmt: skip


def _by_language(quality: Mapping[str, Any], k: Any) -> list[Markup]:
    """Production's live quality and the refusals of known answerable questions per language
    (``by_language``: the question's language label, most known questions first, Wilson 95 %
    intervals of the hit rate and the refusal rate; a row under ``by_language_min_n`` scored
    or answerable is marked few), when there are rows."""
    rows = quality.get("by_language") or []
    if not rows:
        return []
    min_n = quality.get("by_language_min_n", 10)

    def interval(low: float | None, high: float | None, percent: bool = False) -> str:
        if low is None or high is None:
            return "–"
        return f"{pct(low)} … {pct(high)}" if percent else f"{low:.3f} … {high:.3f}"

    parts = [para(f"Production by language (the question's language; 95 % Wilson intervals; "
                  f"few: fewer than {min_n} scored or answerable known questions)"
                  + (": the known questions counted before they were counted per language "
                     "are in none." if quality.get("by_language_partial") else "."),
                  "muted"),  # fmt: skip
             table(["language", "known", "scored", "hit rate", "interval", f"recall@{k}",
                    "MRR", "answerable", "refused", "refusal rate", "interval", "note"],
                   [[r["language"], r["n_known"], r["n_scored"], r["hit_rate"],
                     interval(r["hit_low"], r["hit_high"]), r["recall"], r["mrr"],
                     r["known_answerable"], r["refused_answerable"], pct(r["refused_rate"]),
                     interval(r["refused_low"], r["refused_high"], percent=True),
                     "few" if r["few"] or r["refused_few"] else ""] for r in rows])]  # fmt: skip
    return parts


def _by_question(test: Mapping[str, Any] | None) -> list[Markup]:
    """The paired comparison of production and a candidate by distinct known question
    (:func:`service.quality.by_group.paired_by_question`): a table of the difference, its
    bootstrap interval and the randomization test's p per metric, and what it measures
    against the gold-set run; ``[]`` without one."""
    if not test or not test.get("comparisons"):
        return []
    first = test["comparisons"][0]
    rows = [[c["metric"], c["mean_a"], c["mean_b"], f"{c['mean_diff']:+.3f}",
             f"{c['ci_low']:.3f} … {c['ci_high']:.3f}", f"{c['p_value']:.3g}",
             f"{c['wins']}/{c['losses']}/{c['ties']}"] for c in test["comparisons"]]  # fmt: skip
    notes = [para(c["disagreement"], "muted") for c in test["comparisons"] if c["disagreement"]]
    return [
        para(
            f"{first['b']} against {first['a']} by distinct question: {test['questions']} gold "
            f"questions ({test['events']} events both were scored on), each question's mean "
            f"once; {first['confidence']:.0%} bootstrap interval and randomization test. "
            f"{LIVE_VS_GOLD[0].upper()}{LIVE_VS_GOLD[1:]}.",
            "muted",
        ),  # fmt: skip
        table(
            [
                "metric",
                first["a"],
                first["b"],
                "difference",
                "95 % interval",
                "p",
                "wins/losses/ties",
            ],
            rows,
        ),  # fmt: skip
        *notes,
    ]


def _by_group(quality: Mapping[str, Any], k: Any) -> list[Markup]:
    """Production's known-question quality per gold-row ``kind`` and ``topic``, all time and
    over the latest window (``by_group``, ``by_group_recent``:
    :func:`service.quality.by_group.group_rows`), one table per field with scored rows."""
    min_n = quality.get("by_group_min_n", 10)
    blocks = [("all time", quality.get("by_group") or {})]
    recent = quality.get("by_group_recent")
    if recent:
        blocks.append((f"latest {window_text(recent['window_s'])} of event time (from "
                       f"{dated_minute(recent['since'])} UTC)", recent))  # fmt: skip
    parts: list[Markup] = []
    for when, groups in blocks:
        for field in REPORTED_FIELDS:
            rows = groups.get(field) or []
            if not any(r["n_scored"] for r in rows):
                continue
            parts.append(para(f"Production by gold {field}, {when} (Wilson 95 % intervals over "
                              f"events; too few: under {min_n} distinct questions scored).",
                              "muted"))  # fmt: skip
            parts.append(table(
                [field, "known", "scored", "questions", "hit rate", "interval",
                 f"recall@{k}", "MRR", "note"],
                [[r["group"] if r["groups"] == 1 else f"rest ({r['groups']} groups)",
                  r["n_known"], r["n_scored"], r["questions"], r["hit_rate"],
                  "–" if r["hit_low"] is None else f"{r['hit_low']:.3f} … {r['hit_high']:.3f}",
                  r["recall"], r["mrr"],
                  "none scored" if not r["n_scored"] else "too few" if r["few"] else ""]
                 for r in rows],
            ))  # fmt: skip
    return parts


def quality_section(quality: Mapping[str, Any], over: Mapping[str, Any] | None = None,
                    known_miss: Mapping[str, Any] | None = None) -> Markup:  # fmt: skip
    """The section (anchor ``quality``); every cell escaped.

    Args:
        quality: the live-quality report (``k``, ``threshold``, ``known``, ``refusals``,
            ``acl``, ``review``, ``coverage``); ``threshold`` ``None`` means no gold set.
        over: the replay series' ``over_time`` (production's quality per point, drawn under
            the retrievers' table: :func:`service.html.over_time.quality_over_time`), or
            ``None``.
        known_miss: the drift report's ``known_miss`` dimension, cited by the over-time
            verdict while it alarms; while it is in drift the gold rows that missed in its
            window are listed (``known_miss_rows``: :func:`_missing_rows`).
    """
    if quality.get("threshold") is None:
        return section("quality", "Live quality", para("No gold set: nothing to match.", "muted"))
    k, known = quality.get("k"), quality.get("known") or {}
    coverage = _coverage(quality.get("coverage"))
    parts: list[str] = [
        para(
            f"Known questions: live questions matching a gold question at cosine similarity "
            f"≥ {quality['threshold']:g}, scored on each retriever's first {k} passages "
            "against the gold question's passages (means over the scored events). A known "
            "question with no gold passage, or none its asker's role may read, is unanswerable "
            "for that asker: not scored, and a refusal is the right answer.",
            "muted",
        ),
        *coverage,
        table(
            ["retriever", "known", "scored", f"recall@{k}", "hit rate", "MRR"],
            [
                [
                    name,
                    c.get("n_known"),
                    c.get("n_scored"),
                    c.get("recall"),
                    c.get("hit_rate"),
                    c.get("mrr"),
                ]
                for name, c in known.items()
            ],
        ),  # fmt: skip
        *_candidate_coverage(known, k),
        *quality_over_time(over, k, known_miss),
    ]
    if quality.get("recent_text"):  # the service's latest window beside the all-time table
        parts.append(para(str(quality["recent_text"])))
    # which gold rows drive the open known_miss alarm (trial 51 M3)
    if (known_miss or {}).get("state") == "drift":
        at = 2 + len(coverage)  # right under the retrievers' table
        parts[at:at] = _missing_rows(quality.get("known_miss_rows"))
    refusals = quality.get("refusals") or {}
    if refusals:
        parts.append(
            table(
                ["known questions", "events", "wrong answer", "count"],
                [
                    [
                        "answerable",
                        refusals.get("known_answerable"),
                        "refused",
                        refusals.get("refused_answerable"),
                    ],
                    [
                        "unanswerable for the asker",
                        refusals.get("known_unanswerable"),
                        "answered",
                        refusals.get("answered_unanswerable"),
                    ],
                ],
            )  # fmt: skip
        )
    parts += _by_language(quality, k)
    parts += _by_group(quality, k)
    note = rejected_note(quality.get("near_matches_rejected"))
    if note:
        parts.append(para(note[0].upper() + note[1:] + ".", "muted"))
    acl = quality.get("acl") or {}
    if acl.get("passages_with_acl"):
        since = (f" Counted over every event since {dated_minute(acl['since'])} UTC, whatever the "
                 "gold-set version." if acl.get("since") else "")  # fmt: skip
        if "since" in acl and not acl["since"] and (acl.get("leaks") or acl.get("violations")):
            since = (" Counted over every event since an unknown time (counts from a state "
                     "from before version 2), whatever the gold-set version.")  # fmt: skip
        parts.append(
            para(
                f"Access control: {acl['passages_with_acl']} passages carry an ACL (readable "
                f"only by the roles it lists), {acl.get('restricted_passages', 0)} of them "
                "closed to a role some ACL names. A leak is an answer citing one to a role "
                "that may not read it (its text reached the user); a violation is a retrieval "
                "that ranked one for such a role. Role other: roles no ACL names (e.g. a "
                f"guest), which may read none of them; unknown: events without a role.{since}",
                "muted",
            )
        )
        rows = [
            [kind, row["retriever"], row["role"], row["events"], row["passages"]]
            for kind in ("leaks", "violations")
            for row in acl.get(kind) or []
        ]
        parts.append(
            table(["finding", "retriever", "role", "events", "passages"], rows)
            if rows
            else para("No leak and no violation.", "muted")
        )
        review = quality.get("review") or []
        if review:
            parts.append(
                table(
                    ["event", "time", "retriever", "role", "leaked", "passages", "question"],
                    [
                        [
                            r.get("event_id"),
                            minute(r.get("timestamp")),
                            r.get("retriever"),
                            r.get("role"),
                            ids(r.get("leaked") or ()),  # each id whole (page.ids)
                            ids(r.get("passage_ids") or ()),
                            r.get("question"),
                        ]
                        for r in review[:REVIEW_ROWS]
                    ],
                    text_columns=(6,),
                    nowrap_columns=(0, 1),
                )  # fmt: skip
            )
            if len(review) > REVIEW_ROWS:
                parts.append(para(f"{len(review) - REVIEW_ROWS} more in the JSON report.", "muted"))
    return section("quality", "Live quality", *parts)


def _missing_rows(block: Mapping[str, Any] | None) -> list[Markup]:
    """The gold rows behind an open ``known_miss`` alarm (:func:`service.quality.where.
    missing_rows`): a sentence and a table (gold row, its gold documents, misses/asks in the
    alarm's window and before), ``"and K more"`` under it; a muted sentence when none missed."""
    rows = (block or {}).get("rows") or []
    if not rows:
        return [para("known_miss is in drift, but no gold row missed in its window.",
                     "muted")]  # fmt: skip
    out = [
        para(
            f"known_miss is in drift: the gold rows that missed in its window, against before it "
            f"(misses / scored asks; {block['window_misses']} misses in "  # type: ignore[index]
            f"{block['window_asks']} asks in the window), most misses first."  # type: ignore[index]
            + (f" The {window}." if (window := missing_window_text(block)) else "")
        ),
        table(
            ["gold row", "gold documents", "window misses / asks", "before misses / asks"],
            [
                [
                    row["gold_id"],
                    ", ".join(row.get("documents") or []) or "–",
                    f"{row['window']['misses']} / {row['window']['asks']}",
                    f"{row['before']['misses']} / {row['before']['asks']}",
                ]
                for row in rows
            ],
        ),
    ]
    if more := int(block.get("more") or 0):  # type: ignore[union-attr]
        out.append(para(f"and {more} more", "muted"))
    return out


def _coverage(coverage: Mapping[str, Any] | None) -> list[Markup]:
    """What the known-question figures cover, and the gold-set changes as a table."""
    if not coverage:
        return []
    since, rows = coverage.get("since"), coverage.get("rows")
    start = (f"{f'{dated_minute(since)} UTC' if since else '-'} on gold-set version "
             f"{coverage.get('gold_set_version')} ({rows} gold rows measured)")  # fmt: skip
    if rows is None:  # a version-1 state's figures: no first event, not per row
        start = (f"an unknown time (state from before version 2, whose figures are not per "
                 f"gold row) on gold-set version {coverage.get('gold_set_version')}")  # fmt: skip
    parts: list[Markup] = [
        para(
            f"These figures cover known questions asked since {start}. A measurement is per "
            "gold row: when the gold set changes, those of unchanged rows are carried over and "
            "those of changed or removed rows dropped. A change of k drops the recall, hit "
            "rate and MRR and keeps the refusal counts; a change of the threshold drops all.",
            "muted",
        )
    ]
    changes = coverage.get("changes") or []
    if changes:
        rows = [[c.get("reason"), c.get("from"), c.get("to"), minute(c.get("at")),
                 c.get("after_events"), c.get("kept_rows"), c.get("kept_events"),
                 c.get("dropped_rows"), c.get("dropped_events")] for c in changes]  # fmt: skip
        parts.append(table(_CHANGE_COLUMNS, rows))
    return parts


def _candidate_coverage(known: Mapping[str, Any], k: Any) -> list[str]:
    """Per candidate scored on fewer known questions than production: why (its
    ``coverage_note``) and, when the report has it, the paired comparison (production and the
    candidate on the questions both were scored on)."""
    parts: list[str] = []
    for name, cell in known.items():
        note, paired = cell.get("coverage_note"), cell.get("paired") or {}
        parts += _by_question(paired.get("by_question"))
        if not note:
            continue
        parts.append(para(f"{name}: {note}, so its row is not over the questions "
                          "production's is.", "warn"))  # fmt: skip
        if paired.get("n_scored"):
            parts.append(table(
                [f"on the {paired['n_scored']} known questions both were scored on",
                 f"recall@{k}", "hit rate", "MRR"],
                [[who, means.get("recall"), means.get("hit_rate"), means.get("mrr")]
                 for who, means in (("production", paired["production"]),
                                    (name, paired["candidate"]))],
            ))  # fmt: skip
    return parts
