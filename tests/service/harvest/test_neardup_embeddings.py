"""Harvest near-duplicates by trigram Jaccard OR embedding cosine (service.harvest.neardup).

The real-data cases take question pairs from BANKING77 and CLINC150 (test splits, by row
number in ../shared/data): a pair is a paraphrase when the data set labels both questions
with the same intent, unrelated when it labels them differently; the expected outcome comes
from those labels, not from the code.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from service.embeddings.model import EmbeddingConfig, shared_embedder
from service.harvest import HarvestStage
from service.harvest.config import HarvestConfig
from service.harvest.neardup import NearDupIndex
from service.harvest.text import comparison_form as normalise
from service.harvest.text import jaccard, trigrams
from service.records import GoldQuestion
from tests.service.harvest.helpers import batch, event

#: (data set, row, row): same intent, trigram Jaccard < 0.6 (MinHash's rule leaves them apart).
PARAPHRASES = [
    ("banking77", 456, 463),  # lost_or_stolen_card
    ("banking77", 544, 553),  # pin_blocked
    ("banking77", 684, 703),  # cancel_transfer
    ("clinc150", 192, 206),  # find_phone
    ("clinc150", 962, 964),  # timezone
    ("clinc150", 996, 1014),  # next_song
]
#: Different intents on a shared subject (the hard negatives: pay_bill vs bill_due,
#: nutrition_info vs calories, oil_change_how vs oil_change_when, translate vs
#: change_language) and one pair across the two data sets.
UNRELATED = [
    (("clinc150", 1112), ("clinc150", 2338)),
    (("clinc150", 1658), ("clinc150", 2359)),
    (("clinc150", 702), ("clinc150", 1375)),
    (("clinc150", 10), ("clinc150", 333)),
    (("banking77", 456), ("clinc150", 192)),
]


def _rows(shared_data: Path, name: str) -> list[tuple[str, str]]:
    if name == "banking77":
        path = shared_data / "banking77" / "test.csv"
        with path.open(encoding="utf-8", newline="") as handle:
            return [(row["text"], row["category"]) for row in csv.DictReader(handle)]
    data = json.loads((shared_data / "clinc150" / "data_full.json").read_text(encoding="utf-8"))
    return [(text, intent) for text, intent in data["test"]]


@pytest.fixture(scope="module")
def rows(shared_data: Path) -> dict[str, list[tuple[str, str]]]:
    return {name: _rows(shared_data, name) for name in ("banking77", "clinc150")}


@pytest.fixture(scope="module")
def embedder() -> object:
    return shared_embedder(EmbeddingConfig())


def _index(embedder: object | None) -> NearDupIndex:
    return NearDupIndex(0.6, embedder=embedder, cosine=0.8)  # type: ignore[arg-type]


@pytest.mark.parametrize(("name", "i", "j"), PARAPHRASES)
def test_or_rule_merges_paraphrases_that_trigrams_miss(
    rows: dict[str, list[tuple[str, str]]], embedder: object, name: str, i: int, j: int
) -> None:
    (a, intent_a), (b, intent_b) = rows[name][i], rows[name][j]
    assert intent_a == intent_b
    a, b = normalise(a), normalise(b)
    assert jaccard(trigrams(a), trigrams(b)) < 0.6  # below harvest.similarity
    trigram_only = _index(None)
    trigram_only.add("a", a)
    assert trigram_only.find(b) is None
    both = _index(embedder)
    both.add("a", a)
    found = both.find(b)
    assert found is not None and found[0] == "a"
    assert 0.8 <= found[1] <= 1.0  # the cosine: no trigram match


@pytest.mark.parametrize(("first", "second"), UNRELATED)
def test_or_rule_leaves_different_intents_apart(
    rows: dict[str, list[tuple[str, str]]],
    embedder: object,
    first: tuple[str, int],
    second: tuple[str, int],
) -> None:
    (a, intent_a), (b, intent_b) = rows[first[0]][first[1]], rows[second[0]][second[1]]
    assert intent_a != intent_b
    index = _index(embedder)
    index.add("a", normalise(a))
    assert index.find(normalise(b)) is None


class _Table:
    """A fake embedder for one module's mechanics: fixed unit vectors by text."""

    name = "table"
    dim = 2

    def __init__(self, vectors: dict[str, Sequence[float]]) -> None:
        self.vectors = {t: np.asarray(v, dtype=np.float32) for t, v in vectors.items()}
        self.calls: list[list[str]] = []

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.calls.append(list(texts))
        return np.stack([self.vectors[t] for t in texts]) if texts else np.zeros((0, 2), "f4")


# cos(0°, 30°) = 0.866 >= 0.8; cos(0°, 60°) = 0.5; cos(30°, 60°) = 0.866
_DEG = {d: (np.cos(np.radians(d)), np.sin(np.radians(d))) for d in (0, 30, 60, 90)}
_TABLE = {"alpha one": _DEG[0], "beta two": _DEG[30], "gamma three": _DEG[60],
          "delta four": _DEG[90]}  # fmt: skip


def test_cosine_matches_ranked_after_trigram_matches() -> None:
    table = _Table({**_TABLE, "alpha ones": _DEG[60]})
    index = NearDupIndex(0.6, embedder=table, cosine=0.8)
    index.add("a", "alpha one")
    index.add("b", "beta two")
    index.add("c", "gamma three")
    # "alpha ones": trigram Jaccard with "alpha one" 8/11 (" alpha one " has 9 trigrams,
    # " alpha ones " 10; all but "ne " of the first are shared); vector at 60°: cosine
    # 0.866 with "beta two" (30°), 1 with "gamma three" (60°), 0.5 with "alpha one" (0°)
    (probe,) = index.probes(["alpha ones"])
    found = index.matches(probe)
    assert [key for key, _ in found] == ["a", "c", "b"]
    assert found[0][1] == pytest.approx(8 / 11)
    assert found[1][1] == pytest.approx(1.0, abs=1e-6)
    assert found[2][1] == pytest.approx(np.cos(np.radians(30)), abs=1e-6)


def test_keys_stored_after_a_probe_and_removed_keys() -> None:
    table = _Table(_TABLE)
    index = NearDupIndex(0.6, embedder=table, cosine=0.8)
    index.add("a", "alpha one")
    beta, delta = index.probes(["beta two", "delta four"])  # one embedding call
    assert table.calls[-1] == ["beta two", "delta four"]
    assert [k for k, _ in index.matches(beta)] == ["a"]  # 30°: cosine 0.866
    index.add("c", "gamma three")  # stored after the probes were made
    assert [k for k, _ in index.matches(beta)] == ["a", "c"]  # both 0.866; ties by key
    assert [k for k, _ in index.matches(delta)] == ["c"]  # 90° vs 60°: 0.866
    index.remove("c")
    assert index.matches(delta) == []
    index.add("d", "alpha one")  # reuses the freed row
    assert [k for k, _ in index.matches(beta)] == ["a", "d"]
    index.remove("a")
    index.add("a", "delta four")  # replaced after the probe: its new vector counts
    assert [k for k, _ in index.matches(beta)] == ["d"]
    assert [k for k, _ in index.matches(delta)] == ["a"]


def test_matrix_grows_past_its_first_block() -> None:
    angles = {f"q{n:03d}": (np.cos(n * 0.05), np.sin(n * 0.05)) for n in range(100)}
    index = NearDupIndex(0.99, embedder=_Table(angles), cosine=0.999)
    for text in angles:
        index.add(text, text)
    # neighbours 0.05 rad apart: cos 0.99875 >= 0.999? no (0.99875 < 0.999): only itself
    found = index.find("q050")
    assert found is not None and found[0] == "q050"
    assert [k for k, _ in index.matches(index.probes(["q050"])[0])] == ["q050"]
    assert len(index) == 100


def test_cosine_out_of_range_is_refused() -> None:
    with pytest.raises(ValueError, match="cosine"):
        NearDupIndex(0.6, cosine=0)
    with pytest.raises(ValueError, match="embedding_similarity"):
        HarvestConfig(embedding_similarity=1.5)


def test_stage_merges_paraphrases_and_skips_gold_paraphrases(
    rows: dict[str, list[tuple[str, str]]], embedder: object
) -> None:
    bank, clinc = rows["banking77"], rows["clinc150"]
    config = HarvestConfig(flush_interval_s=0, embedding_similarity=0.8)
    events = [
        event("e1", bank[456][0]), event("e2", bank[463][0]),  # lost_or_stolen_card
        event("e3", clinc[962][0]),  # timezone: a paraphrase of the gold question
        event("e4", clinc[1112][0]),  # pay_bill: new, apart from the others
    ]  # fmt: skip
    gold = [GoldQuestion(id="g1", question=clinc[964][0], gold=("p-1",))]
    notes = [{"topic": "novel"} for _ in events]
    on = HarvestStage(config, known_questions=gold, embedder=embedder)  # type: ignore[arg-type]
    off = HarvestStage(config, known_questions=gold)  # no embedder: trigrams only
    for stage in (on, off):
        stage.process(batch(events, notes))
    assert sorted(sorted(s.events) for s in on.suggestions.values()) == [["e1", "e2"], ["e4"]]
    assert on.pending_observations()["known"] == {"gold_set": 1}
    assert sorted(sorted(s.events) for s in off.suggestions.values()) == [
        ["e1"], ["e2"], ["e3"], ["e4"]]  # fmt: skip
    assert off.pending_observations()["known"] == {}


def test_stage_without_embedding_similarity_uses_trigrams_only(embedder: object) -> None:
    stage = HarvestStage(HarvestConfig(embedding_similarity=None), embedder=embedder)  # type: ignore[arg-type]
    assert stage.index.embedder is None
    # opt-in: the default is trigrams only (its cost on the default path, harvest config)
    assert HarvestStage(HarvestConfig(), embedder=embedder).index.embedder is None  # type: ignore[arg-type]
    on = HarvestStage(HarvestConfig(embedding_similarity=0.8), embedder=embedder)  # type: ignore[arg-type]
    assert on.index.cosine == 0.8


def test_restored_stage_merges_paraphrases_into_restored_suggestions(
    rows: dict[str, list[tuple[str, str]]], embedder: object
) -> None:
    bank = rows["banking77"]
    config = HarvestConfig(flush_interval_s=0, embedding_similarity=0.8)
    first = HarvestStage(config, embedder=embedder)  # type: ignore[arg-type]
    first.process(batch([event("e1", bank[544][0])], [{"topic": "novel"}]))  # pin_blocked
    state = json.loads(json.dumps(first.state_snapshot()))
    second = HarvestStage(config, embedder=embedder)  # type: ignore[arg-type]
    second.restore(state)
    second.process(batch([event("e2", bank[553][0])], [{"topic": "novel"}]))  # pin_blocked
    assert [sorted(s.events) for s in second.suggestions.values()] == [["e1", "e2"]]
