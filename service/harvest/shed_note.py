"""The one-line explanation of harvest load shedding in the replay and demo reports.

Shared by the text report (:func:`service.jobs.replay.render_text`) and the HTML one
(:func:`service.html.extras.candidates_section`), so both say the same thing. It reads the
``gold_candidates`` block of the replay report: ``shed`` (picked events whose new question
was shed, from the counter ``goldwatch_gold_candidates_shed_total``) and
``max_new_per_batch`` (the bound in effect for that run, ``None``: no bound).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

#: The setting that bounds new questions per batch, and its environment variable.
SETTING = "harvest.max_new_per_batch"
ENV = "GOLDWATCH_HARVEST__MAX_NEW_PER_BATCH"


def shed_note(summary: Mapping[str, Any]) -> str | None:
    """Say how many picked events the harvest stage shed, why, and what to raise.

    Args:
        summary: the replay report's ``gold_candidates`` block.

    Returns:
        One sentence, or ``None`` when ``summary`` carries no ``shed`` count (a report from
        before the count was added, or the status page's plain suggestion list).

    >>> shed_note({"shed": 0, "max_new_per_batch": None})[:64]
    'shed: 0 (no bound on new questions per batch in this run; a repl'
    >>> shed_note({"shed": 7, "max_new_per_batch": 48})[:71]
    'shed: 7 picked events whose new question was over harvest.max_new_per_b'
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
    return (
        f"shed: {shed} picked events whose new question was over {SETTING} ({bound} new "
        f"questions per batch) were not kept as suggestions; raise it ({ENV}) or unset it "
        "(the replay default) to keep them"
    )
