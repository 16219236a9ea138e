"""The wording a suggestion shows and an accept writes by default (trial 43 L2).

Trial 43's ``c-c33c0eb0cdc39cb1`` merged three askings: e-000749 "My email is
john.smith@example.com. What were the three parts of Kublai's government?" first, then
e-000946 and e-001092 asking the clean wording. It showed (and an accept wrote, with a
warning) the first wording with ``<EMAIL>``, and ``variants`` held only that one: variants
were told apart by the normalised *subject* (without placeholders and contact clauses), which
is the same for both wordings. Expectations below are worked out by hand from that rule:
wordings are told apart with their placeholders; the first wording without any is shown.
"""

from __future__ import annotations

import json
from pathlib import Path

from service.data.goldset import load_gold_set
from service.harvest.config import HarvestConfig
from service.harvest.labelling import Labelling
from service.harvest.stage import HarvestStage
from service.harvest.store import StateStoreCandidates, record, record_text
from service.harvest.suggestion import Occurrence, Suggestion
from service.state import StateStore
from tests.service.harvest.helpers import T0, batch, event

CLEAN = "What were the three parts of Kublai's government?"
ASKED = "My email is john.smith@example.com. " + CLEAN  # e-000749
SCRUBBED = "My email is <EMAIL>. " + CLEAN
NOTE = ("shown: wording 2 of 2, the first asked without personal-data placeholders "
        "(wording 1 holds <EMAIL>)")  # fmt: skip
REFUSED = {"refused": True, "language": "en"}


def _labelling(tmp_path: Path, questions: list[str]) -> tuple[Labelling, Path]:
    gold = tmp_path / "gold.jsonl"
    gold.write_text(json.dumps({"id": "q-001", "question": "Who was Genghis Khan?",
                                "gold": ["p-9"], "kind": "plain"}) + "\n",
                    encoding="utf-8")  # fmt: skip
    repo = StateStoreCandidates(StateStore.in_memory())
    events = [event(f"e{i}", q, minute=i) for i, q in enumerate(questions, start=1)]
    HarvestStage(HarvestConfig(flush_interval_s=0), sinks=[repo]).process(
        batch(events, [REFUSED] * len(events))
    )
    return Labelling(repo, gold, HarvestConfig()), gold


def test_three_askings_one_with_an_email_show_and_write_the_clean_wording(
    tmp_path: Path,
) -> None:
    labelling, gold = _labelling(tmp_path, [ASKED, CLEAN, CLEAN])
    [item] = labelling.list().items
    assert item["count"] == 3
    assert item["question"] == CLEAN
    assert item["variants"] == [SCRUBBED, CLEAN]  # both wordings asked, in the order asked
    assert item["wording_note"] == NOTE
    decision = labelling.accept(item["id"], ["p-1"], "plain")
    assert "warnings" not in decision  # the row written holds no placeholder
    assert [q.question for q in load_gold_set(gold)][-1] == CLEAN
    assert "john.smith" not in gold.read_text(encoding="utf-8")


def test_all_wordings_with_placeholders_keep_the_first_and_the_warning(tmp_path: Path) -> None:
    other = "My email is bo@example.org. " + CLEAN  # scrubbed: the same wording as ASKED's
    labelling, gold = _labelling(tmp_path, [ASKED, other])
    [item] = labelling.list().items
    assert item["question"] == SCRUBBED and item["variants"] == [SCRUBBED]
    assert "wording_note" not in item
    decision = labelling.accept(item["id"], ["p-1"], "plain")
    assert len(decision["warnings"]) == 1 and "<EMAIL>" in decision["warnings"][0]
    assert [q.question for q in load_gold_set(gold)][-1] == SCRUBBED


def test_a_clean_first_wording_stays_shown_without_a_note(tmp_path: Path) -> None:
    labelling, _ = _labelling(tmp_path, [CLEAN, ASKED])
    [item] = labelling.list().items
    assert item["question"] == CLEAN and item["variants"] == [CLEAN, SCRUBBED]
    assert "wording_note" not in item


def _occurrence(event_id: str, question: str, normalised: str) -> Occurrence:
    return Occurrence(event_id, T0, question, normalised, ("refused",))


def test_the_earliest_clean_wording_wins_and_the_note_names_each_earlier_one() -> None:
    # normalised forms as the stage gives them (the subject's comparison form): by hand
    s = Suggestion.first("c-1", _occurrence("e1", "My name is <NAME>. Who won?", "who won"))
    s.add(_occurrence("e2", "<NAME> here, mail <EMAIL>. Who won?", "who won"))
    s.add(_occurrence("e3", "who won", "who won"))
    s.add(_occurrence("e4", "Who won??", "who won"))  # the same comparison form: not kept
    assert s.variants == ("My name is <NAME>. Who won?", "<NAME> here, mail <EMAIL>. Who won?",
                          "who won")  # fmt: skip
    assert s.question == "who won"
    assert record(s, HarvestConfig())["wording_note"] == (
        "shown: wording 3 of 3, the first asked without personal-data placeholders "
        "(wording 1 holds <NAME>; wording 2 holds <EMAIL>, <NAME>)"
    )
    # the checkpoint's encoding says the same
    assert json.loads(record_text(s, HarvestConfig())) == record(s, HarvestConfig())
    # same askings in the same order: the same suggestion, field for field
    again = Suggestion.first("c-1", _occurrence("e1", "My name is <NAME>. Who won?", "who won"))
    for eid, text in (("e2", "<NAME> here, mail <EMAIL>. Who won?"), ("e3", "who won"),
                      ("e4", "Who won??")):  # fmt: skip
        again.add(_occurrence(eid, text, "who won"))
    assert again.to_json() == s.to_json()


def test_one_clean_wording_is_kept_past_a_full_bound_of_placeholder_ones() -> None:
    s = Suggestion.first("c-1", _occurrence("e1", "My name is <NAME>. Who won?", "who won"),
                         max_variants=1)  # fmt: skip
    s.add(_occurrence("e2", "Call <PHONE>. Who won?", "who won"), max_variants=1)  # full
    s.add(_occurrence("e3", "who won", "who won"), max_variants=1)  # clean: one past it
    s.add(_occurrence("e4", "who won the cup", "who won the cup"), max_variants=1)  # no room
    assert s.variants == ("My name is <NAME>. Who won?", "who won")
    assert s.question == "who won" and s.count == 4


def test_a_record_kept_before_the_rule_shows_its_clean_variant_once_rebuilt() -> None:
    old = {"id": "c-1", "question": SCRUBBED, "normalised": "what were the three parts",
           "variants": [SCRUBBED, CLEAN]}  # fmt: skip
    assert Suggestion.from_json(old).question == CLEAN
    only = {**old, "variants": [SCRUBBED]}
    assert Suggestion.from_json(only).question == SCRUBBED  # nothing clean: as kept


def test_start_then_another_wording_then_the_first_keeps_both_once() -> None:
    # start(A), add(B), add(A): A is the wording start() scrubbed; it must be kept as itself,
    # not as the first variant (B), which would lose A and list B twice (review of s45-l23).
    a = Occurrence("e1", T0, "Who won the cup?", "who won the cup", ("refused",))
    b = Occurrence("e2", T0, "Who won the cup final?", "who won the cup final", ("refused",))
    s = Suggestion.start("c", a)
    s.add(b)
    s.add(a)
    assert s.question == "Who won the cup?"
    assert s.variants == ("Who won the cup final?", "Who won the cup?")


def test_a_restored_record_of_the_old_rule_is_published_again_with_its_clean_wording() -> None:
    # A snapshot written before the rule: the suggestion's question holds <EMAIL> although
    # its variants hold the clean wording. Restored, it is published again at the next
    # flush, so the list and an accept read the clean wording (review of s45-l23).
    first = HarvestStage(HarvestConfig(flush_interval_s=0))
    first.process(batch([event("e1", ASKED, minute=1), event("e2", CLEAN, minute=2)],
                        [REFUSED] * 2))  # fmt: skip
    snapshot = json.loads(json.dumps(first.state_snapshot()))
    [row] = snapshot["suggestions"]
    assert row["question"] == CLEAN and row["variants"] == [SCRUBBED, CLEAN]
    row["question"] = SCRUBBED  # as the version before the rule kept it
    snapshot["dirty"] = []
    repo = StateStoreCandidates(StateStore.in_memory())
    again = HarvestStage(HarvestConfig(flush_interval_s=0), sinks=[repo])
    again.restore(snapshot)
    again.flush(force=True)
    [record_row] = repo.all()
    assert record_row["question"] == CLEAN
