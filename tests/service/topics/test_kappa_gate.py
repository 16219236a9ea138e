"""A topic model near chance stays quiet and says why (trial 37 HIGH 1: on a 44-row en/hi
gold set 12 of 44 topic labels held out agreed, chance ~21 %, and still the topic shares,
the "topic vs reference" alarm, the coverage gap and harvest's ``coverage_gap`` reason were
stated as facts).

Cohen's kappa is checked by hand on a small confusion matrix and against scikit-learn; the
gate through the real CLI (``goldwatch replay``, ``goldwatch config check``) on a 30-row gold
set of three clearly separate topics (weather, banking, cooking), labelled by topic (kappa
0.90: the alarms as before) and with the labels rotated within each topic (kappa -0.25:
near chance, quiet, the reason printed); the same near-chance model with the floor off
(``min_kappa: -1``) alarms, so it is the gate that silences it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from prometheus_client import CollectorRegistry
from sklearn.metrics import cohen_kappa_score

from service.cli import main
from service.runtime.analytics import Analytics
from service.telemetry import build_analytics_metrics
from service.topics.quality import (
    cohen_kappa,
    kappa_interval,
    kappa_of,
    kappa_text,
    kappa_uncalibrated,
    topic_agreement,
)

# 10 rows, 3 labels: a 4 (3 kept, 1 read b), b 4 (2 kept, 1 read a, 1 read c), c 2 (1 kept,
# 1 read a)
LABELS = ["a"] * 4 + ["b"] * 4 + ["c"] * 2
PREDICTED = ["a", "a", "a", "b", "b", "b", "a", "c", "c", "a"]


def test_kappa_by_hand_and_as_scikit_learn_has_it() -> None:
    # p_o = (3 + 2 + 1) / 10 = 0.6; marginals labelled a 4, b 4, c 2; predicted a 5, b 3,
    # c 2: p_e = (4·5 + 4·3 + 2·2) / 100 = 0.36; kappa = (0.6 − 0.36) / 0.64 = 0.375
    kappa, chance = cohen_kappa(LABELS, PREDICTED) or (None, None)
    assert chance == pytest.approx(0.36) and kappa == pytest.approx(0.375)
    assert kappa == pytest.approx(cohen_kappa_score(LABELS, PREDICTED))
    # from the agreement's counts alone (what a saved model holds), the same
    assert kappa_of(topic_agreement(LABELS, PREDICTED, ["en"] * 10)) == pytest.approx((0.375, 0.36))
    # worse than chance is negative; perfect is 1; one category on both sides is undefined
    assert cohen_kappa(["a", "b"], ["b", "a"]) == pytest.approx((-1.0, 0.5))
    assert cohen_kappa(LABELS, LABELS) == pytest.approx((1.0, 0.4 * 0.4 * 2 + 0.2 * 0.2))
    assert cohen_kappa(["a"] * 3, ["a"] * 3) is None and cohen_kappa([], []) is None


def test_kappa_says_its_sampling_error_and_whether_the_floor_is_inside_it() -> None:
    # The demo's gold set as its folds were cut by file position before the fiftieth
    # session (its topic_quality then): 31 of 59 held out agree,
    # chance 0.12927. By hand, Cohen's (1960) large-sample error: p_o = 31/59 = 0.52542,
    # sigma = sqrt(0.52542 * 0.47458 / 59) / (1 - 0.12927) = 0.06501 / 0.87073 = 0.07466,
    # kappa 0.45497 +- 1.95996 * 0.07466 = 0.14633 -> [0.30864, 0.60130] (a bootstrap of the
    # 59 rows, 4,000 resamples: [0.31, 0.59]). The floor 0.4 is inside: one or two gold rows
    # decide the verdict, and the reports say so.
    demo = (0.45496535796766746, 0.1292731973570813)
    assert kappa_interval(*demo, 59) == pytest.approx((0.30864, 0.60130), abs=5e-5)
    assert kappa_text(*demo, 0.4, 59) == (
        "Cohen's kappa 0.45 [0.31, 0.60] (95 % interval on 59 rows; chance agreement 12.9%; "
        "floor 0.4, analytics.topics.min_kappa, inside the interval: the gate reads the point "
        "estimate, and a few labelled gold questions more or less could move it across)"
    )
    # Trial 37: 12 of 44, chance 404/1936 = 0.20868, kappa (0.27273 - 0.20868) / 0.79132 =
    # 0.08094; sigma = sqrt(0.27273 * 0.72727 / 44) / 0.79132 = 0.08485 -> [-0.0854, 0.2472]:
    # the floor lies above the whole interval, nothing to add
    trial = ((12 / 44 - 404 / 1936) / (1 - 404 / 1936), 404 / 1936)
    assert kappa_interval(*trial, 44) == pytest.approx((-0.0854, 0.2472), abs=5e-5)
    assert kappa_text(*trial, 0.4, 44) == (
        "Cohen's kappa 0.08 [-0.09, 0.25] (95 % interval on 44 rows; chance agreement 20.9%; "
        "floor 0.4, analytics.topics.min_kappa)"
    )
    # the interval stays in [-1, 1]
    assert kappa_interval(1.0, 0.5, 4) == (1.0, 1.0)
    assert kappa_interval(-1.0, 0.5, 4)[0] == -1.0


def test_the_floor_and_its_reason() -> None:
    q = topic_agreement(LABELS, PREDICTED, ["en"] * 10)
    assert kappa_uncalibrated(q, 0.3) is None
    assert kappa_uncalibrated(q, 0.4) == (
        "topic labels held out agree with 6 of 10 (60.0%), chance 36.0%, Cohen's kappa 0.38 "
        "< 0.4 (analytics.topics.min_kappa): too low to act on"
    )
    # unsupervised topics (no agreement) and a model saved before by_topic: never gated
    assert kappa_uncalibrated(None) is None
    assert kappa_uncalibrated({k: v for k, v in q.items() if k != "by_topic"}) is None


def test_the_trusted_gauge_is_0_below_the_floor_1_above_and_absent_without_a_kappa() -> None:
    registry = CollectorRegistry()
    metrics = build_analytics_metrics(registry)
    q = topic_agreement(LABELS, PREDICTED, ["en"] * 10)

    def trusted() -> float | None:
        return registry.get_sample_value("goldwatch_detector_trusted", {"detector": "topic"})

    for floor, expected in ((0.4, 0.0), (0.3, 1.0)):
        analytics = Analytics(stages=[], topic_quality=q, topic_min_kappa=floor)
        metrics.set_topic_trusted(analytics.topic_trusted())
        assert trusted() == expected
    metrics.set_topic_trusted(Analytics(stages=[]).topic_trusted())  # unsupervised: no kappa
    assert trusted() is None


WEATHER = ("Will it rain in Pune tomorrow afternoon?",
           "What is the temperature in Delhi right now?",
           "Is there a thunderstorm warning for Mumbai tonight?",
           "How humid will it be in Chennai this weekend?", "Will it snow in Shimla next week?",
           "What is the weather forecast for Bangalore on Friday?",
           "How strong is the wind in Kolkata today?", "Should I carry an umbrella in Goa today?",
           "When does the monsoon reach Kerala this year?",
           "Is it going to be sunny in Jaipur on Sunday?")  # fmt: skip
BANKING = ("How do I block my lost debit card?", "What is the interest rate on a fixed deposit?",
           "How can I transfer money to another bank account?",
           "Why was my card payment declined?", "How do I open a savings account online?",
           "What is the minimum balance for my account?", "How long does a cheque take to clear?",
           "Can I increase my credit card limit?", "How do I reset my net banking password?",
           "Where can I see my account statement?")  # fmt: skip
COOKING = ("How long should I boil an egg for a soft yolk?",
           "What can I use instead of butter in a cake?", "How do I make paneer at home?",
           "What temperature do I bake bread at?",
           "How much salt goes into a litre of pasta water?", "How do I stop rice from sticking?",
           "What spices go into garam masala?", "How do I thicken a curry sauce?",
           "Can I freeze cooked dal?", "How do I make a fluffy omelette?")  # fmt: skip
NAMES = ("weather", "banking", "cooking")


def _write(folder: Path, rotated: bool, min_kappa: float | None = None,
           min_balanced_accuracy: float | None = 0.6, weather_from: int = 300) -> Path:  # fmt: skip
    """Gold set (30 rows; ``rotated``: row i of topic t labelled NAMES[(i + t) % 3], so each
    label holds rows of all three topics), corpus, a 10 h log (1 event a minute: the three
    topics in turn for 5 h, then 4 weather questions only; ``weather_from``: the first event
    of weather only) and the config; returns it.

    ``min_balanced_accuracy`` (``analytics.scope_min_balanced_accuracy``; ``None``: the
    default 0.68): 0.6 by default here, so the kappa gate is tested alone — this gold set's
    novelty detector, 17 of 30 held out at 2 of 30 kept (balanced accuracy 0.750), reads
    0.677 with its false-positive rate at its Wilson bound, under the default floor, which
    makes the topics nearest topics (``test_novelty_gate``); out-of-scope is off (no
    unanswerable row), so the setting moves nothing else."""
    rows = [{"id": f"g-{t}{i}", "question": q, "gold": [f"p-{t}"],
             "topic": NAMES[(i + t) % 3] if rotated else NAMES[t]}
            for t, questions in enumerate((WEATHER, BANKING, COOKING))
            for i, q in enumerate(questions)]  # fmt: skip
    (folder / "gold.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    corpus = ["Weather forecasts: rain, temperature, humidity, wind and storms in Indian cities.",
              "Banking help: cards, accounts, transfers, deposits, cheques and net banking.",
              "Cooking tips: eggs, baking, rice, curries, spices and Indian dishes."]  # fmt: skip
    (folder / "corpus.jsonl").write_text(
        "".join(json.dumps({"id": f"p-{t}", "text": x}) + "\n" for t, x in enumerate(corpus))
    )
    events = []
    for i in range(600):
        q = (WEATHER[3 * ((i // 3) % 4)] if i >= weather_from
             else (WEATHER, BANKING, COOKING)[i % 3][(i // 3) % 10])  # fmt: skip
        events.append({"event_id": f"e-{i:04d}", "question": q, "answer": {"text": "Here."},
                       "timestamp": f"2026-11-20T{i // 60:02d}:{i % 60:02d}:00Z"})  # fmt: skip
    (folder / "log.jsonl").write_text("".join(json.dumps(e) + "\n" for e in events))
    floor = "" if min_kappa is None else f"  topics:\n    min_kappa: {min_kappa}\n"
    if min_balanced_accuracy is not None:
        floor += f"  scope_min_balanced_accuracy: {min_balanced_accuracy}\n"
    config = folder / "goldwatch.yaml"
    config.write_text(f"gold_set: {folder / 'gold.jsonl'}\ncorpus: {folder / 'corpus.jsonl'}\n"
                      f"analytics:\n{floor}  drift:\n    window_s: 3600\n"
                      "    reference_window_s: 7200\n    warmup_s: 7200\n    test_every_s: 600\n"
                      "    min_count: 50\n")  # fmt: skip
    return config


def _replay(tmp_path: Path, rotated: bool, min_kappa: float | None = None,
            min_balanced_accuracy: float | None = 0.6,
            weather_from: int = 300) -> tuple[str, dict]:  # fmt: skip
    """The replay of :func:`_write`'s log, as text and as the JSON report."""
    config = _write(tmp_path, rotated, min_kappa, min_balanced_accuracy, weather_from)
    log = str(tmp_path / "log.jsonl")
    runner = CliRunner()
    text = runner.invoke(main, ["replay", log, "--config", str(config)], catch_exceptions=False)
    doc = runner.invoke(main, ["replay", log, "--config", str(config), "--format", "json"],
                        catch_exceptions=False)  # fmt: skip
    assert text.exit_code == 0 and doc.exit_code == 0, text.output
    return text.stdout, json.loads(doc.stdout)


def test_a_model_above_the_floor_alarms_as_before(tmp_path: Path) -> None:
    text, doc = _replay(tmp_path, rotated=False)
    quality = doc["analytics"]["topic_quality"]
    assert quality["kappa"] == pytest.approx(0.9) and quality["uncalibrated"] is None
    assert "topics: weather 67%; banking 17%; cooking 17%" in text.splitlines()
    # 28 of 30 agree, chance 1/3: sigma sqrt(0.9333 * 0.0667 / 30) / 0.6667 = 0.0683,
    # 0.90 +- 0.134, its top clipped at 1
    assert ("Cohen's kappa 0.90 [0.77, 1.00] (95 % interval on 30 rows; chance agreement "
            "33.3%; floor 0.4, analytics.topics.min_kappa)") in text  # fmt: skip
    assert "  DRIFT  topic vs reference at 2026-11-20 06:20 UTC" in text
    assert "  DRIFT  topic vs baseline at 2026-11-20 05:40 UTC" in text
    assert "topic weather 66.7% live / 30.0% gold" in text


def test_a_model_near_chance_raises_no_topic_alarm_and_says_why(tmp_path: Path) -> None:
    # 9 of 30 held out agree (centroid similarities averaged over 20 fold draws in canonical
    # order, fifty-first session; one draw gave 5): every label 10 rows, so chance is 1/3
    # whatever is predicted, kappa (3/10 - 1/3) / (2/3) = -0.05
    why = ("topic labels held out agree with 9 of 30 (30.0%), chance 33.3%, Cohen's kappa "
           "-0.05 < 0.4 (analytics.topics.min_kappa): too low to act on")  # fmt: skip
    text, doc = _replay(tmp_path, rotated=True)
    analytics = doc["analytics"]
    assert analytics["topic_quality"]["uncalibrated"] == why
    # the shares still shown, as the model's reading; its novelty detector, uncalibrated as
    # well, labels no question novel and says why (trial 49 L4)
    novelty = analytics["novelty"]["uncalibrated"]
    assert novelty is not None
    assert (f"topics (UNCALIBRATED, the model's reading, not facts: {why}; no alarm): weather "
            f"67%; banking 17%; cooking 17%; no question is labelled novel: {novelty}"
            ) in text.splitlines()  # fmt: skip
    assert f"  topic raises no alarm: uncalibrated: {why}" in text.splitlines()
    assert "DRIFT  topic" not in text
    assert [a for a in analytics["drift"]["alarms"] if a["dimension"] == "topic"] == []
    topic = analytics["drift"]["topic"]
    assert topic["state"] == "uncalibrated" and topic["suppressed"] == f"uncalibrated: {why}"
    # 400 of 600 live weather questions (66.7%) are no gap against the held-out gold share
    # of 11 of 30 (2 x 36.7% = 73.3%): the test below makes one
    assert topic["coverage_gaps"] == [] and "coverage_gaps_left_out" not in topic
    check = CliRunner().invoke(
        main, ["config", "check", "--config", str(tmp_path / "goldwatch.yaml")]
    )
    assert check.exit_code == 0, check.output
    assert (f"topic assignment UNCALIBRATED (its shares are the model's reading, not facts; "
            f"topic drift and coverage gaps raise no alarm): {why}") in check.output  # fmt: skip
    # the same near-chance model with the floor off alarms: the gate is what silences it
    off, _ = _replay(tmp_path, rotated=True, min_kappa=-1)
    assert "  DRIFT  topic vs reference at 2026-11-20 06:20 UTC" in off


def test_a_model_near_chance_leaves_its_coverage_gap_out(tmp_path: Path) -> None:
    """Weather only from event 200: 467 of 600 live weather questions (77.8%, Wilson lower
    bound above 38.7%) against the near-chance model's held-out gold share of 11 of 30
    (36.7%; 2 x 36.7% = 73.3%) is a coverage gap, left out with the gate's reason."""
    why = ("topic labels held out agree with 9 of 30 (30.0%), chance 33.3%, Cohen's kappa "
           "-0.05 < 0.4 (analytics.topics.min_kappa): too low to act on")  # fmt: skip
    text, doc = _replay(tmp_path, rotated=True, weather_from=200)
    topic = doc["analytics"]["drift"]["topic"]
    assert topic["gold_counts"]["weather"] == 11
    assert topic["coverage_gaps"] == []
    assert topic["coverage_gaps_left_out"] == {"weather": f"uncalibrated: {why}"}
    assert "topic weather left out (its share is not a fact: above)" in text
    # with the floor off it is a gap too, left out as a nearest topic's (this gold set's
    # novelty detector is uncalibrated as well: test_novelty_gate), not for the kappa
    _, off = _replay(tmp_path, rotated=True, min_kappa=-1, weather_from=200)
    left = off["analytics"]["drift"]["topic"]["coverage_gaps_left_out"]
    assert list(left) == ["weather"] and not left["weather"].startswith("uncalibrated")
