"""The one-line explanation of harvest load shedding in the replay and demo reports.

Shared by the text report (:func:`service.jobs.replay.render_text`) and the HTML one
(:func:`service.html.extras.candidates_section`), so both say the same thing. It reads the
``gold_candidates`` block of the replay report: ``shed`` (picked events whose new question
was shed, from the counter ``goldwatch_gold_candidates_shed_total``) and
``max_new_per_batch`` (the bound in effect for that run, ``None``: no bound) and, from the
status page, ``live`` (``True``: the count is ``serve``'s, since its start).

``serve``'s count depends on how fast the events arrived: a batch holds what came while the
last one ran (up to ``pipeline.max_batch_size``), so a file read faster than the pipeline
fills its batches and more is shed than when the same events trickle in; trial 41 read 588
and 701 shed on two runs of one file. A replay's batches are always full and the same, and it
sheds none unless ``harvest.max_new_per_batch`` is set in its configuration (:data:`LIVE_CAVEAT`).

:func:`not_compared_note` says, next to it and in the same words everywhere (status page,
``GET /v1/gold-candidates``, ``goldwatch candidates export``, replay reports), how many events
offered to each shadow candidate had no completed comparison (``shadow_not_compared``, by
cause: :mod:`service.shadow.not_compared`), so could get no ``shadow_disagreement`` reason
from that candidate (those still ``in_flight`` may yet): under load serve skips comparisons,
which "shed" does not count (trial 45, L3). The load causes are said apart from
``interrupted`` (lost at a stop or a crash) and ``in_flight`` (not compared yet). "Shed" counts
since this process started; ``shadow_not_compared`` over the state's whole history
(checkpointed, restarts included, like the suggestions), and the note says so.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from service.shadow.not_compared import IN_FLIGHT, INTERRUPTED, LOAD_CAUSES, NOT_COMPARED

#: The setting that bounds new questions per batch, and its environment variable.
SETTING = "harvest.max_new_per_batch"
ENV = "GOLDWATCH_HARVEST__MAX_NEW_PER_BATCH"
#: What a live (``serve``) shed count is said to depend on, wherever it is shown.
LIVE_CAVEAT = (
    f"the count depends on how fast events arrived (a batch holds what came while the last one "
    f"ran); a replay of the same file sheds none unless {SETTING} is set in its configuration"
)


def shed_note(summary: Mapping[str, Any]) -> str | None:
    """Say how many picked events the harvest stage shed, why, and what to raise.

    Args:
        summary: the replay report's ``gold_candidates`` block, or the status page's
            suggestions panel (``live`` true: the :data:`LIVE_CAVEAT` is said after a
            bound's count).

    Returns:
        One sentence, or ``None`` when ``summary`` carries no ``shed`` count (a report from
        before the count was added, or the status page's plain suggestion list).

    >>> shed_note({"shed": 0, "max_new_per_batch": None})[:64]
    'shed: 0 (no bound on new questions per batch in this run; a repl'
    >>> shed_note({"shed": 7, "max_new_per_batch": 48})[:71]
    'shed: 7 picked events whose new question was over harvest.max_new_per_b'
    >>> shed_note({"shed": 7, "max_new_per_batch": 48, "live": True})[-60:]
    'unless harvest.max_new_per_batch is set in its configuration'
    """
    shed = summary.get("shed")
    if shed is None:
        return None
    bound = summary.get("max_new_per_batch")
    if bound is None:
        return (
            f"shed: {shed} (no bound on new questions per batch in this run; a replay applies "
            f"{SETTING} only when it is set explicitly)"
        )
    note = (
        f"shed: {shed} picked events whose new question was over {SETTING} ({bound} new "
        f"questions per batch) were not kept as suggestions; raise it ({ENV}) or unset it "
        "(the replay default) to keep them"
    )
    return f"{note}; {LIVE_CAVEAT}" if summary.get("live") else note


def not_compared_note(summary: Mapping[str, Any]) -> str | None:
    """Say how many events offered to each shadow candidate had no completed comparison,
    by cause, and what that does to the ``shadow_disagreement`` suggestions: the load causes
    (:data:`~service.shadow.not_compared.LOAD_CAUSES`), ``interrupted`` (lost at a stop or a
    crash) and ``in_flight`` (not compared yet, may still add the reason) each said apart.

    Args:
        summary: a block holding ``shadow_not_compared``: ``{candidate:``
            :class:`~service.shadow.not_compared.NotCompared` ``}``.

    Returns:
        One sentence, or ``None`` when ``summary`` has no such block or it names no candidate
        (no shadow candidates).

    >>> not_compared_note({"shadow_not_compared": {"t": {"offered": 10, "compared": 4,
    ...     "not_compared": 6, "by_cause": {"scrubbed": 1, "cpu_budget": 5}}}})[:89]
    'shadow_not_compared: t 6 of 10 offered events (scrubbed 1, cpu_budget 5) had no completed'
    """
    counts = summary.get(NOT_COMPARED)
    if not counts:
        return None
    parts: list[str] = []
    load: dict[str, int] = {}
    interrupted = in_flight = 0
    for name, row in counts.items():
        causes = ", ".join(f"{cause} {n}" for cause, n in row["by_cause"].items())
        parts.append(f"{name} {row['not_compared']} of {row['offered']} offered events"
                     + (f" ({causes})" if causes else ""))  # fmt: skip
        for cause, n in row["by_cause"].items():
            if cause in LOAD_CAUSES:
                load[cause] = load.get(cause, 0) + n
        interrupted += row["by_cause"].get(INTERRUPTED, 0)
        in_flight += row["by_cause"].get(IN_FLIGHT, 0)
    which = f"all but the {IN_FLIGHT} ones" if in_flight else "they"
    note = (f"{NOT_COMPARED}: {'; '.join(parts)} had no completed comparison by that candidate "
            "(over the state's whole history, restarts included), so "
            f"{which} could get no shadow_disagreement reason from it")  # fmt: skip
    if len(counts) > 1:
        note += " (another candidate's comparison still could give it)"
    if load:
        named = ", ".join(load)
        note += (f"; {sum(load.values())} for load ({named}): that count, and the "
                 "suggestions with shadow_disagreement, depend on how fast events arrived "
                 "(a replay waits for every comparison)")  # fmt: skip
    if interrupted:
        note += (f"; {INTERRUPTED} {interrupted}: lost at a stop or crash (calls not finished "
                 "when the process stopped), not for load")  # fmt: skip
    if in_flight:
        note += f"; {IN_FLIGHT} {in_flight}: not compared yet, may still add the reason"
    return note
