"""Topic model: fitting, naming, novelty, artefacts, the pipeline stage, and CLINC150 quality."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from service.events import QueryLogEvent
from service.pipeline import Pipeline, Stage
from service.topics import (
    NOVEL,
    ArtefactError,
    TopicConfig,
    TopicModel,
    TopicStage,
    save_artefact,
)

FEES = [
    "what is the hostel fee",
    "hostel fee per semester",
    "when is the tuition fee due",
    "late fee for tuition payment",
    "can I pay the fee in instalments",
    "fee refund after withdrawal",
]
EXAMS = [
    "when is the exam timetable published",
    "exam hall ticket download",
    "re-evaluation of exam answer sheet",
    "supplementary exam dates",
    "exam results announcement",
    "how many marks to pass the exam",
]
CONFIG = TopicConfig(n_topics=2, svd_components=8, novelty_percentile=10)


@pytest.fixture(scope="module")
def model() -> TopicModel:
    return TopicModel.fit(FEES + EXAMS, CONFIG)


def test_two_topics_separate_fees_from_exams(model: TopicModel) -> None:
    found = model.assign_many(["hostel fee refund", "exam results date"])
    assert found[0].nearest != found[1].nearest
    assert all(-1.0 <= a.similarity <= 1.0 for a in found)
    assert {t.name for t in model.topics} == {"topic-0", "topic-1"}
    fee_topic = next(t for t in model.topics if t.name == found[0].nearest)
    assert "fee" in fee_topic.top_terms
    assert sum(t.size for t in model.topics) == 12


def test_default_topic_count_rule() -> None:
    texts = [f"{w} question number {i}" for i, w in enumerate(["fee", "exam", "bus"] * 10)]
    fitted = TopicModel.fit(texts, TopicConfig(max_topics=4, svd_components=5))
    assert len(fitted.topics) == 4  # min(max_topics=4, round(sqrt(30)) = 5)


def test_names_from_config() -> None:
    named = TopicModel.fit(FEES + EXAMS, CONFIG.model_copy(update={"names": {0: "fees"}}))
    assert named.names[0] == "fees" and named.names[1] == "topic-1"


def test_unrelated_question_is_novel_and_batch_equals_single(model: TopicModel) -> None:
    odd = "zebra xylophone quantum"
    assert model.assign(odd).topic == NOVEL and model.assign(odd).novel
    assert model.assign(odd).nearest in model.names
    batch = model.assign_many([odd, FEES[0]])
    assert batch[0] == model.assign(odd)
    assert not batch[1].novel  # a training text is never novel at the 10th percentile
    assert model.assign_many([]) == []


def test_supervised_topics_use_the_gold_labels() -> None:
    labels = ["fees"] * len(FEES) + ["exams"] * len(EXAMS)
    fitted = TopicModel.fit(FEES + EXAMS, CONFIG, labels=labels)
    assert fitted.supervised and set(fitted.names) == {"fees", "exams"}
    assert [a.nearest for a in fitted.assign_many(["fee refund", "exam results"])] == [
        "fees",
        "exams",
    ]


@pytest.mark.parametrize(
    ("texts", "labels", "message"),
    [
        (["a b", "c d"], None, "at least 3 texts"),
        (FEES, ["x"] * 5, "5 labels for 6 texts"),
        (FEES, ["x"] * 6, "at least 2 distinct labels"),
        (FEES, ["novel", "x"] * 3, "reserved"),
    ],
)
def test_fit_rejects_bad_input(texts: list[str], labels: list[str] | None, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        TopicModel.fit(texts, CONFIG, labels=labels)


def test_save_load_round_trip_and_version(model: TopicModel, tmp_path: Path) -> None:
    path = tmp_path / "topics.joblib"
    model.save(path)
    loaded = TopicModel.load(path)
    assert loaded.version == model.version and len(model.version) == 12
    texts = ["hostel fee refund", "zebra xylophone"]
    assert loaded.assign_many(texts) == model.assign_many(texts)
    other = TopicModel.fit(FEES + EXAMS[:-1], CONFIG)
    assert other.version != model.version
    again = TopicModel.fit(FEES + EXAMS, CONFIG)
    assert again.version == model.version


def test_load_refuses_other_sklearn_major_and_other_files(tmp_path: Path) -> None:
    path = tmp_path / "old.joblib"
    save_artefact(path, "topics", "abc", {"x": 1})
    lines = path.read_bytes().split(b"\n", 1)
    header = json.loads(lines[0]) | {"sklearn": "0.24.2"}
    path.write_bytes(json.dumps(header).encode() + b"\n" + lines[1])
    with pytest.raises(ArtefactError, match=r"scikit-learn 0\.24\.2.*different major"):
        TopicModel.load(path)
    save_artefact(path, "refusal", "abc", {"x": 1})
    with pytest.raises(ArtefactError, match="'refusal' model, not 'topics'"):
        TopicModel.load(path)
    path.write_bytes(b"\x80\x04junk")
    with pytest.raises(ArtefactError, match="not a goldwatch model artefact"):
        TopicModel.load(path)


def test_stage_annotates_each_event(model: TopicModel) -> None:
    at = datetime(2026, 11, 29, tzinfo=UTC)
    questions = ["hostel fee refund", "zebra xylophone quantum"]
    events = [
        QueryLogEvent(event_id=f"e-{i}", timestamp=at, question=q) for i, q in enumerate(questions)
    ]
    stage = TopicStage(model)
    assert isinstance(stage, Stage)
    batch = Pipeline([stage]).process(events, source="file")
    assert batch.annotations[1]["topic"] == NOVEL
    assert batch.annotations[0]["topic"] in model.names
    assert isinstance(batch.annotations[0]["topic_similarity"], float)


@pytest.mark.slow
def test_clinc150_topic_quality(shared_data: Path) -> None:
    """Measured (seed 0): unsupervised NMI 0.36 domains / 0.60 intents, purity 0.57 / 0.27;
    novel 29 % of oos vs 5.8 % of in-scope; supervised by intent: NMI 0.82, purity 0.71."""
    from benchmarks.bench_topics import load_clinc, measure

    clinc = load_clinc(shared_data)
    texts = [text for text, _ in clinc["train"]]
    unsupervised = measure(TopicModel.fit(texts), clinc)
    assert unsupervised["topics"] == 50
    assert unsupervised["nmi_domains"] >= 0.30
    assert unsupervised["nmi_intents"] >= 0.52
    assert unsupervised["purity_domains"] >= 0.48
    assert unsupervised["purity_intents"] >= 0.22
    assert unsupervised["novel_oos"] >= 0.22
    assert unsupervised["novel_in_scope"] <= 0.09
    intents = [intent for _, intent in clinc["train"]]
    supervised = measure(TopicModel.fit(texts, labels=intents), clinc)
    assert supervised["nmi_intents"] >= 0.78
    assert supervised["purity_intents"] >= 0.65


def test_fast_transform_equals_the_sklearn_pipeline(model: TopicModel) -> None:
    """The numpy transform (char n-grams per distinct word, inline word analyzer, hash-table
    lookup) gives scikit-learn's own ``pipeline.transform`` vectors: short words, stop words
    only, repeated words and bigrams, mixed white space, accents, other scripts, empty text."""
    import numpy as np

    texts = [
        *FEES, *EXAMS,
        "fee fee fee hostel hostel", "a I x", "the of and", "", "   ", "exam\thall\n\nticket",
        "Exam  HALL   ticket", "café naïve fee", "परीक्षा कब है exam", "考试 exam 时间",
        "fee-refund / exam_hall!!", "hostel fee hostel fee hostel",
        "\u212aelvin fee", "İstanbul exam", "exam 2026 fee_2 x1y2", "é\u0301 fee",
    ]  # fmt: skip
    fast = model._fast
    assert fast is not None
    expected = model._state.pipeline.transform(texts)
    np.testing.assert_allclose(fast.transform(texts), expected, rtol=0, atol=1e-12)
    # a batch holding one text gives the same vector as in a larger batch
    np.testing.assert_allclose(fast.transform([texts[-1]])[0], expected[-1], rtol=0, atol=1e-12)
