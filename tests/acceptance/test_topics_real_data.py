"""Issue 17's topic acceptance on real data, through :mod:`benchmarks.topic_acceptance` (its
docstring describes every stream; all seeded). Figures measured on the dev machine are in each
test's docstring; ``python -m benchmarks.topic_acceptance`` prints them all."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks.topic_acceptance import mixed_stream, nmi, novelty, replay_topic_alarms, stable_ids


@pytest.mark.slow
def test_unsupervised_topics_nmi_against_clinc150_intents(shared_data: Path) -> None:
    """Measured: 150 topics NMI 0.826 vs intents (LSA 0.739), 0.535 vs domains (LSA 0.447);
    the default 50 topics 0.717 / 0.512 (LSA 0.608 / 0.384)."""
    rows = {(r["method"], r["topics"]): r for r in nmi()}
    assert rows[("embedding", 150)]["nmi_intents"] >= 0.80
    assert rows[("embedding", 150)]["nmi_intents"] > rows[("lsa", 150)]["nmi_intents"]
    assert rows[("embedding", 50)]["nmi_domains"] > rows[("lsa", 50)]["nmi_domains"]


@pytest.mark.slow
def test_accepting_a_gold_question_changes_no_topic_id(shared_data: Path) -> None:
    """1,000 gold questions, 32 topics. Accepted questions (flagged) join the topics fitted
    on the written ones, so one or 100 keep every id and live question's topic, and a fit
    without the previous model (a fresh replica) names them alike (before content ids, s48:
    one accepted 100 %, 100 accepted 95.2 % with 1 new topic, a fresh fit 12.8 %).
    Artefact 1.07 MB (was 112 MB for ~1,100 texts)."""
    found = stable_ids()
    assert found["accept_one_ids_kept"] == 1.0
    assert found["accept_one_agreement"] >= 0.99
    assert found["restart_ids_kept"] == 1.0 and found["restart_agreement"] >= 0.99
    assert found["accept_100_ids_kept"] == 1.0
    assert found["accept_100_agreement"] == 1.0 and found["accept_100_new_topics"] == 0
    assert found["cold_refit_agreement"] == 1.0  # a fresh replica names every topic alike
    assert found["artefact_mb"] <= 5.0


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["gold", "unseen"])
def test_traffic_of_the_gold_sets_own_topics_never_alarms(
    kind: str, tmp_path: Path, shared_data: Path
) -> None:
    """3,000 labelled gold rows (10 CLINC150 domains + NQ-open/XQuAD general knowledge), 6,000
    events of its own questions / of unseen questions of its topics, the full replay. Measured:
    0 topic alarms each (novel share live 0.000 / 0.050 vs gold 0.050); with the gold rows'
    own labels as the reference (today's method) 1 alarm each, after 800 / 500 events."""
    found = replay_topic_alarms(mixed_stream(kind), tmp_path)
    assert found["events"] == 6000
    assert found["topic_alarms"] == 0


@pytest.mark.slow
def test_novelty_roc_auc_on_clinc150(shared_data: Path) -> None:
    """3 domains' gold questions vs the other 7 domains + out-of-scope. Measured (scenario
    domains; mean/min/max over 10 seeded triples), the issue's plain setup (WordLlama-256,
    nearest gold question): 60 gold questions 0.863 (0.879/0.851/0.918), LSA 0.692; 300:
    0.892 (0.918/0.889/0.954), LSA 0.801. The service (char n-gram mix 0.35, nearest gold
    question, the default): 0.852 (0.876/0.832/0.913) and 0.903 (0.926/0.903/0.954); with the
    opt-in hubness correction h = 20 (``product_hubness20``): 0.861 and 0.915; the opt-in
    centred mean of the 3 nearest (``product_centred_knn3``): 0.862 (0.882/0.840/0.918) and
    0.918 (0.938/0.916/0.963). Issue 17's targets (0.90 / 0.94) are NOT met on the scenario
    triple; over all 120 triples the figure spans ~0.77-0.97 (see docs/topics.md). This test
    holds the measured levels, the two opt-ins' gains and the gain over LSA."""
    small = novelty(20, n_triples=3)
    assert small["embedding_scenario"] >= 0.85
    assert small["covered_intents_scenario"] >= 0.90
    assert small["product_scenario"] >= 0.84
    assert small["product_hubness20_scenario"] >= small["product_scenario"] + 0.005
    assert small["product_centred_knn3_scenario"] >= small["product_scenario"] + 0.005
    assert small["embedding_scenario"] - small["lsa_scenario"] >= 0.10
    large = novelty(100, n_triples=0)
    assert large["embedding_scenario"] >= 0.88
    assert large["product_scenario"] >= 0.89
    assert large["product_hubness20_scenario"] >= large["product_scenario"] + 0.01
    assert large["product_centred_knn3_scenario"] >= large["product_scenario"] + 0.01
    assert large["embedding_scenario"] > large["lsa_scenario"]
