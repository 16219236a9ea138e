"""Shadow never compares a candidate's ranking of a scrubbed question with production's ranking
of the raw one (trial 15, MEDIUM 4: the same retriever as production scored RBO 0.51-0.96 on
events with personal data, and those events were the listed disagreements and added
``shadow_disagreement`` reasons to harvest suggestions).

The PII stage replaces the question in place before the shadow stage, so the raw text is not
there to give a candidate; such events are left out, counted as skipped ``scrubbed``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

from service.pii.stage import PiiScrubStage
from service.pipeline import Pipeline
from service.records import ScoredDoc
from service.shadow.runner import CandidateConfig, ShadowConfig, ShadowResult, ShadowRunner
from service.shadow.stage import ShadowStage
from tests.service.shadow.shadow_fakes import PRODUCTION, docs, make_event


class TextRanker:
    """A retriever whose ranking depends on the whole question text: production's
    passages rotated by BLAKE2b of the text mod 5 (so "Call me on <PHONE>" and the raw
    "Call me on +44 …" are ranked differently)."""

    name = "text"

    def search(self, question: str, k: int) -> list[ScoredDoc]:
        shift = hashlib.blake2b(question.encode(), digest_size=4).digest()[0] % 5
        return docs((PRODUCTION[shift:] + PRODUCTION[:shift])[:k])

    def search_batch(self, questions: Sequence[str], k: int) -> list[list[ScoredDoc]]:
        return [self.search(q, k) for q in questions]


RAW = {
    # event number -> raw question (production ranked these texts)
    1: "What is the refund policy for late orders?",
    2: "Call me on +44 20 7946 0958 if needed. What is the refund policy?",
    3: "How do I reset my password?",
    4: "My email is j.smith@example.org, how do I close my account?",
    5: "Is 3 < 4 in the pricing table?",
}
WITH_PII = {2, 4}


def _events() -> list:  # type: ignore[type-arg]
    ranker = TextRanker()
    return [
        make_event(i, question=text, results=[d.doc_id for d in ranker.search(text, 5)])
        for i, text in RAW.items()
    ]


def test_the_fake_ranks_the_scrubbed_text_differently() -> None:
    """The test below can fail: scrubbing changes this retriever's ranking of both PII
    events (worked out: with the scrubbed text given, RBO < 1 on each)."""
    ranker, stage = TextRanker(), PiiScrubStage()
    batch = Pipeline([stage]).process(_events(), source="test")
    for event in batch.events:
        i = int(event.event_id.split("-")[1])
        changed = event.question != RAW[i]
        assert changed == (i in WITH_PII)
        if changed:
            assert ranker.search(event.question, 5) != ranker.search(RAW[i], 5)


def test_scrubbed_events_are_skipped_not_compared() -> None:
    config = ShadowConfig(max_cpu_share=None, candidates=(CandidateConfig(name="mine", k=5),))
    seen: list[ShadowResult] = []
    runner = ShadowRunner(config, {"mine": TextRanker()}, backpressure=True)
    try:
        shadow = ShadowStage(runner, listeners=[seen.append], synchronous=True)
        batch = Pipeline([PiiScrubStage(), shadow]).process(_events(), source="test")
        report = shadow.report()["candidates"]["mine"]
    finally:
        runner.close()
    outcomes = [notes["shadow"]["mine"] for notes in batch.annotations]
    assert outcomes == ["queued", "scrubbed", "queued", "scrubbed", "queued"]
    assert report["offered"] == 5 and report["skipped"] == {"scrubbed": 2}
    assert report["completed"] == 3 and report["counts"]["rbo"] == 3
    # the same retriever on the text production saw agrees fully: nothing lost to scrubbing
    assert report["agreement"]["rbo"] == 1.0 and report["agreement"]["overlap"] == 1.0
    assert all(row["rbo"] == 1.0 for row in report["disagreements"])
    # no listener (harvest's shadow_disagreement, live quality) hears of a scrubbed event
    assert sorted(r.event_id for r in seen) == ["e-1", "e-3", "e-5"]


def test_a_placeholder_in_a_question_from_upstream_is_skipped_too() -> None:
    """A log scrubbed before goldwatch read it: production ranked a text no longer held."""
    config = ShadowConfig(max_cpu_share=None, candidates=(CandidateConfig(name="mine"),))
    with ShadowRunner(config, {"mine": TextRanker()}) as runner:
        upstream = make_event(1, question="I am <NAME>, where is my parcel?")
        assert runner.offer(upstream, {}) == {"mine": "scrubbed"}
        assert runner.offer(make_event(2, question="Is 3 < 4?"), {}) == {"mine": "queued"}
