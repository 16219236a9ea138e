"""The pipeline stage adapter: :class:`PiiScrubStage` scrubs each event of a batch in place."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from service.pii.event import scrub_events
from service.pii.pseudonym import UNKEYED, Pseudonymiser
from service.pii.scrub import _MEMO_SIZE, ScrubMemo

if TYPE_CHECKING:
    from service.pipeline import Batch

#: The key of ``batch.annotations[i]`` the stage writes: the event's counts by type.
ANNOTATION_KEY = "pii"


class PiiScrubStage:
    """Pipeline stage: scrub every event in place (:func:`scrub_event`: the question, the
    answer, the labels, ``user.id`` with ``pseudonymiser``), before any later stage sees it.

    Sets ``batch.annotations[i]["pii"]`` to the event's counts by type (``{}`` when clean),
    for telemetry. The batch goes through :func:`~service.pii.event.scrub_events` (an event
    whose look-ups find nothing to change costs no call). Never logs text. Other modules
    may call :func:`scrub_event`. Its only state is a cache: the scrubbed forms of up to
    ``memo_size`` recent texts (:class:`~service.pii.scrub.ScrubMemo`,
    ``analytics.pii_memo_size``), which changes the time a repeated question takes, never a
    result.

    Raises:
        ValueError: ``memo_size`` is negative.
    """

    name = "pii"

    def __init__(self, pseudonymiser: Pseudonymiser = UNKEYED, memo_size: int = _MEMO_SIZE
                 ) -> None:  # fmt: skip
        self.pseudonymiser = pseudonymiser
        self.memo = ScrubMemo(memo_size)

    def process(self, batch: Batch) -> None:
        counts = scrub_events(batch.events, self.pseudonymiser, self.memo)
        for notes, found in zip(batch.annotations, counts, strict=True):
            notes[ANNOTATION_KEY] = found

    def state_snapshot(self) -> Any:
        """Nothing to persist."""
        return None

    def restore(self, state: Any) -> None:
        """Nothing to restore."""
