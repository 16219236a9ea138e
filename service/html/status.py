"""The service's built-in status page (``GET /``): what moved, the live analytics, then the
process internals.

It opens with ``moved``: one line each for drift (the dimensions in drift and what moved),
refusals (the rate, and its drift state), shadow candidates (agreement with production) and
suggested gold questions; the analytics sections follow, and the ``process`` section (version,
uptime, totals, source position) comes last.

Rendered on the server at each request and reloaded by the browser every ``refresh_s``
seconds through a ``<meta http-equiv="refresh">`` (no script). The analytics sections are
those of the replay report (:func:`service.html.replay_page.analytics_sections`); their charts
cost about a second of CPU, so a :class:`SectionCache` keeps the last rendering and redraws
only when the analytics changed (one rendering at a time, however many viewers).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping
from typing import Any

from markupsafe import Markup

from service.drift.stage import REFERENCE_GAP, ended_untested, restart_text, untested_text
from service.harvest.shed_note import not_compared_note
from service.html.drift_section import DIMENSIONS, category_moves, rate_move
from service.html.extras import find_extra, gold_run_text, suggestion_rows
from service.html.page import badge, document, esc, num, para, pct, section, table, when
from service.html.replay_page import analytics_sections, notices
from service.quality.by_group import lowest_group_text
from service.quality.by_language import flag_agreement_brief, rate_text
from service.quality.where import missing_rows_text, missing_window_text
from service.refusals.recall import recall_lines
from service.refusals.scope import windows_count
from service.shadow.trend import sustained_line

#: Same-origin endpoints linked from the page.
LINKS = (("/v1/status", "status JSON"), ("/v1/drift", "drift JSON"),
         ("/v1/refusals", "refusals JSON"), ("/metrics", "Prometheus metrics"),
         ("/docs", "API docs"))  # fmt: skip


class SectionCache:
    """The analytics sections of the last analytics report seen, keyed by its content."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._key: str | None = None
        self._html = ""
        self.renderings = 0  # how many times the sections were drawn

    def sections(
        self, analytics: Mapping[str, Any] | None, extras: Mapping[str, Any] | None = None
    ) -> str:
        """The sections' HTML for ``analytics`` and ``extras``, drawn again only when they
        differ from the previous call's (compared as canonical JSON)."""
        key = json.dumps([analytics, extras], sort_keys=True, default=str)
        with self._lock:
            if key != self._key:
                self._html = "".join(analytics_sections(analytics, extras))
                self._key = key
                self.renderings += 1
            return self._html


def render_status_page(
    status: Mapping[str, Any],
    analytics: Mapping[str, Any] | None,
    *,
    refresh_s: int = 15,
    busy: bool = False,
    extras: Mapping[str, Any] | None = None,
    cache: SectionCache | None = None,
) -> str:
    """Render the status page.

    Args:
        status: the body of ``GET /v1/status`` (:meth:`service.runtime.process.Runtime.status`).
        analytics: :meth:`~service.runtime.process.Runtime.analytics_report` (``None`` when
            analytics are disabled or ``busy``).
        refresh_s: seconds between reloads (≥ 1; 0 turns the reload off).
        busy: the pipeline held its lock too long to read the analytics this time.
        extras: ``{"shadow": ..., "gold_candidates": ...}`` when the service has them
            (``gold_candidates``: a list of suggestions, or a dict with the list under
            ``suggestions`` or ``top``, the undecided total ``n_suggestions``, the undecided
            ones left out as ``near_duplicates``, ``by_status`` counts, and ``shed`` with
            ``max_new_per_batch``).
        cache: reuse the analytics sections drawn for the same analytics (default: draw).

    Raises:
        ValueError: ``refresh_s`` < 0.
    """
    if refresh_s < 0:
        raise ValueError("refresh_s must be >= 0")
    head = f'<meta http-equiv="refresh" content="{int(refresh_s)}">' if refresh_s else ""
    links = " · ".join(f'<a href="{href}">{esc(label)}</a>' for href, label in LINKS)
    body: list[str] = [
        Markup("<h1>goldwatch — live status</h1>"),
        *notices(status.get("notices") or ()),
        Markup(f'<p class="meta">{links}'
               + (f" · reloads every {int(refresh_s)} s" if refresh_s else "") + "</p>"),
    ]  # fmt: skip
    if busy:
        body.append(
            section("analytics", "Analytics",
                    para("The pipeline is busy; the analytics show at the next reload.", "muted"))
        )  # fmt: skip
    else:
        sections = (cache.sections(analytics, extras) if cache
                    else "".join(analytics_sections(analytics, extras)))  # fmt: skip
        body += [moved_section(analytics, extras), sections]
    body.append(_process(status))
    return document("goldwatch status", body, head_extra=head)


def moved_section(
    analytics: Mapping[str, Any] | None, extras: Mapping[str, Any] | None = None
) -> Markup:
    """``What moved``: one row each for drift, refusals, production's retrieval on known
    questions (all time and the latest ``known_miss`` window), shadow and suggestions, each
    linking to its section below (rows without data are left out)."""
    rows: list[list[object]] = []
    if analytics is not None:
        drift = analytics.get("drift") or {}
        # as the drift table: an uncalibrated category (novel, while the novelty detector is)
        # or dimension (out_of_scope, while the scope detector is) is marked so right here;
        # a fourth trial's page listed "rising: novel 5%→24%" as fact
        muted = drift.get("suppressed_dimensions") or {}
        moving = [
            esc(
                f"{dim} ({name}): "
                f"{_what_moved(test, (drift.get(dim) or {}).get('suppressed_categories'))}"
                + ("" if "rate_current" not in test else windows_count(dim, drift.get(dim) or {}))
                + (f"; raises no alarm: {muted[dim]}" if muted.get(dim) else "")
                + (f" ({REFERENCE_GAP})" if name == "reference" else "")
            )
            for dim in DIMENSIONS
            for name, test in (drift.get(dim) or {}).get("comparisons", {}).items()
            if test.get("state") == "drift"
        ]
        # windows started afresh under a new labeller (trial 48 H1): said beside what moved
        restarted = [esc(restart_text(dim, (drift.get(dim) or {})["windows_restarted"]))
                     for dim in DIMENSIONS
                     if (drift.get(dim) or {}).get("windows_restarted")]  # fmt: skip
        # an alarm ended because too few events came, not because the drift ended (trial 51)
        untested = [esc(f"{a['dimension']} ({a['comparison']}): alarm ended at "
                        f"{when(a.get('timestamp'))} {untested_text(a).removeprefix('ended ')}")
                    for a in ended_untested(drift)]  # fmt: skip
        said = [*(moving or [esc("no dimension in drift")]), *untested, *restarted]
        moved = (Markup("<br>".join(said)) if moving or restarted or untested
                 else "no dimension in drift")  # fmt: skip
        rows.append([_link("drift", "drift"), moved])
        refusals = analytics.get("refusals") or {}
        state = ((drift.get("refusal") or {}).get("state")) or "–"
        recall = refusals.get("text_recall") or {}
        if recall.get("lower_bound"):  # four short lines: the sentences are in the section
            rows.append([_link("refusals", "refusals"),
                         lower_bound_lines(refusals, state)])  # fmt: skip
        else:
            rows.append([_link("refusals", "refusals"), refusal_cell(refusals, state)])
    quality = find_extra("quality", analytics, extras)
    production = ((quality or {}).get("known") or {}).get("production") or {}
    known_miss_open = (((analytics or {}).get("drift") or {}).get("known_miss") or {}).get(
        "state"
    ) == "drift"
    window = missing_window_text((quality or {}).get("known_miss_rows"))
    if production.get("n_scored"):  # production's retrieval: all time, then the latest window
        rows.append(
            [
                _link("quality", "retrieval"),
                f"production hit rate@{quality.get('k')} on known questions: all time "
                f"{num(production.get('hit_rate'))} of {production['n_scored']}"
                + (f"; {quality['recent_text']}" if quality.get("recent_text") else "")
                + (f"; {lowest}" if (lowest := lowest_group_text(quality)) else "")
                + (
                    f"; known_miss gold rows, misses/asks in its window vs before"
                    f"{f' ({window})' if window else ''}"
                    f": {where}"
                    if known_miss_open
                    and (where := missing_rows_text(quality.get("known_miss_rows")))
                    else ""
                ),  # fmt: skip
            ]
        )
    shadow = find_extra("shadow", analytics, extras)
    if shadow is not None:  # with the live sustained verdict on RBO (trial 45 H2)
        sustained = shadow.get("sustained") or {}
        agreement = [
            f"{name}: RBO {num((c.get('agreement') or {}).get('rbo'))}, same first passage "
            f"{pct((c.get('agreement') or {}).get('top1'))} of {c.get('completed', 0)} compared"
            + _span(c)
            + (f"; {line}" if (line := sustained_line(sustained.get(name))) else "")
            for name, c in (shadow.get("candidates") or {}).items()
        ]
        gold = gold_run_text(shadow, int((quality or {}).get("k") or 10))
        text = "; ".join(agreement) or "no candidate"
        rows.append([_link("shadow", "shadow"), text if gold is None else f"{text}; {gold}"])
    candidates = find_extra("gold_candidates", analytics, extras)
    if candidates is not None:
        shown = suggestion_rows(candidates)
        summary = candidates if isinstance(candidates, Mapping) else {}
        total = summary.get("n_suggestions")
        count = total if isinstance(total, int) else len(shown)
        decided = {s: n for s, n in (summary.get("by_status") or {}).items() if s != "suggested"}
        text = f"{count} suggested"
        # undecided ones left out of the listing as near-duplicates (by_status counts them)
        dupes = int(summary.get("near_duplicates") or 0)
        if dupes:
            text += f", {dupes} more held as near-duplicate{'s' if dupes != 1 else ''} of those"
        if decided:
            text += (f" ({count + dupes + sum(decided.values())} in all: "
                     + ", ".join(f"{n} {s}" for s, n in decided.items()) + ")")  # fmt: skip
        if summary.get("shed") is not None:
            bound = summary.get("max_new_per_batch")
            timing = ("; the count depends on how fast events arrived"
                      if bound is not None and summary.get("live") else "")  # fmt: skip
            text += (f"; shed {summary['shed']} since this process started ("
                     + (f"harvest.max_new_per_batch {bound}" if bound is not None
                        else "no harvest.max_new_per_batch") + f"{timing})")  # fmt: skip
        note = not_compared_note(summary)
        if note is not None:
            text += f"; {note}"
        top = f"; first: {shown[0].get('question', '')}" if shown else ""
        rows.append([_link("gold-candidates", "suggestions"), f"{text}{top}"])
    if not rows:  # analytics off and no extras: the analytics section says so
        return Markup("")
    return section("moved", "What moved", table(["what", "now"], rows, text_columns=(1,)))


def _what_moved(test: Mapping[str, Any], silenced: Mapping[str, str] | None = None) -> str:
    """A drift test's movement: shares for categories (``silenced`` ones apart, as in the
    drift table: :func:`category_moves`), ``a → b`` for a rate."""
    if "rate_current" in test:
        return rate_move(test)
    return category_moves(test, silenced)


#: The summary of the refusals row's collapsed details (:func:`refusal_cell`).
REFUSAL_DETAILS = "how counted, by language, against answer.refused, known questions"


def refusal_cell(refusals: Mapping[str, Any], state: str) -> Markup:
    """The status page's ``What moved`` refusals cell (when the count is no lower bound:
    :func:`lower_bound_lines` then): one line first — the rate of the answers, the refusal
    drift ``state`` and, where answers set ``answer.refused``, the text reader against it
    in brief (:func:`~service.quality.by_language.flag_agreement_brief`) — then, collapsed
    in a ``<details>`` (:data:`REFUSAL_DETAILS`), one line each: how the refusals were
    counted (``method``), the rates by language with their Wilson intervals, the reader
    against the flag per language (``against_flag_text``) and the over-refusal of known
    answerable gold questions. Trial 43 L3: all of it in one paragraph (~250 words, five
    sets of intervals) buried the answer. The same facts as before; ``/v1/refusals`` is
    unchanged.

    >>> print(refusal_cell({"rate": 0.25, "answers": 8, "method": "phrase patterns 8"}, "ok"))
    25.0% of 8 answers refused; refusal drift: ok<details><summary>how counted, by \
language, against answer.refused, known questions</summary>phrase patterns 8</details>
    """
    head = f"{pct(refusals.get('rate'))} of {refusals.get('answers', 0)} answers refused"
    head += f"; refusal drift: {state}"
    brief = flag_agreement_brief(refusals.get("against_flag") or [])
    if brief:
        head += f"; {brief}"
    details = [str(refusals.get("method", "no answers yet"))]
    if refusals.get("by_language"):
        details.append(f"by language: {rate_text(refusals['by_language'])}")
    if refusals.get("against_flag_text"):
        details.append(str(refusals["against_flag_text"]))
    known = (refusals.get("known_over_refusal") or {}).get("text")
    if known:
        details.append(str(known))
    return Markup("{}<details><summary>{}</summary>{}</details>").format(
        head, REFUSAL_DETAILS, Markup("<br>").join(esc(line) for line in details)
    )


def lower_bound_lines(refusals: Mapping[str, Any], state: str) -> Markup:
    """The status page's ``What moved`` refusals cell when the count is a lower bound: the
    four short lines of :func:`~service.refusals.recall.text_recall` (headline, with the
    refusal drift ``state``; the estimate with its interval; why; the fix), then the
    over-refusal of known questions in brief, which is counted from the same refusals. The
    method, the rates by language and the measurement against ``answer.refused`` are in the
    refusals section the row links to (session 40's row gave them all: ~2,200 characters).

    >>> print(lower_bound_lines({"text_recall": {"lines": ["at least 3 of 9 answers refused",
    ...     "ESTIMATE: 4", "why: …", "fix: …"]}}, "ok"))
    at least 3 of 9 answers refused; refusal drift: ok<br>ESTIMATE: 4<br>why: …<br>fix: …
    """
    head, *rest = recall_lines(refusals["text_recall"])
    said = [f"{head}; refusal drift: {state}", *rest]
    known = (refusals.get("known_over_refusal") or {}).get("brief")
    if known:
        said.append(f"{known} (counted from the same refusals: a lower bound too)")
    return Markup("<br>").join(esc(line) for line in said)


def _link(anchor: str, label: str) -> Markup:
    return Markup(f'<a href="#{esc(anchor)}">{esc(label)}</a>')


def _process(status: Mapping[str, Any]) -> Markup:
    ready = badge("ok" if status["ready"] else "fail")
    rows: list[list[object]] = [
        ["version", status["version"]],
        ["ready", Markup(f"{ready} {esc('; '.join(status.get('not_ready_reasons') or []))}")],
        ["uptime", f"{float(status['uptime_s']):.0f} s"],
        ["source", status["source_kind"]],
        ["input finished", "yes" if status.get("input_finished") else "no"],
        ["last error", status.get("last_error") or "–"],
    ]
    parts: list[str] = [table(["process", ""], rows, text_columns=(1,))]
    totals = status.get("totals") or {}
    if totals:
        parts.append(table(["totals (all time)", "n"], _flatten(totals)))
    source = status.get("source") or {}
    if source:
        parts.append(table(["source", ""], _flatten(source), text_columns=(1,)))
    return section("process", "Process", *parts)


def _flatten(doc: Mapping[str, Any]) -> list[list[object]]:
    """One row per key; a nested mapping of numbers becomes ``key: sub`` rows, any other
    structure is shown as compact JSON (escaped by the table).

    >>> _flatten({"consumed": 3, "dead_lettered": {"bad_json": 1}, "lag": [1, 2]})
    [['consumed', 3], ['dead_lettered: bad_json', 1], ['lag', '[1, 2]']]
    """
    rows: list[list[object]] = []
    for key, value in doc.items():
        if isinstance(value, Mapping) and all(isinstance(v, int | float) for v in value.values()):
            rows += [[f"{key}: {sub}", n] for sub, n in value.items()]
        elif isinstance(value, Mapping | list | tuple):
            rows.append([key, json.dumps(value, ensure_ascii=False, default=str)])
        elif isinstance(value, bool):
            rows.append([key, "yes" if value else "no"])
        else:
            rows.append([key, "–" if value is None else value])
    return rows


def _span(candidate: Mapping[str, Any]) -> str:
    """``" (events of 2026-11-30 09:00 to 2026-12-04 17:59 UTC)"``: the event-time span of the
    events a shadow candidate compared (``compared_from``/``compared_to``, ISO 8601), so a
    figure on a backlog's first hours does not read as the whole log's; ``""`` without it.

    >>> _span({"compared_from": "2026-11-30T09:00:12Z", "compared_to": "2026-12-04T17:59:01Z"})
    ' (events of 2026-11-30 09:00 to 2026-12-04 17:59 UTC)'
    """
    first, last = candidate.get("compared_from"), candidate.get("compared_to")
    if not first or not last:
        return ""
    start, end = (str(when)[:16].replace("T", " ") for when in (first, last))
    return f" (events of {start} to {end} UTC)"
