"""The out-of-scope detector's fit hides the gold rows asking about one document from each
other (trial 12, finding F1: 96 of 400 answerable XQuAD-en questions on corpus articles no gold
row asks about were "out of scope", while the detector's cross-validated AUC read 1.000 —
every answerable gold row had other gold rows on its own article to be near).

The values are worked out by hand on unit vectors in the plane (cosine = cos of the angle
between them), the gold rows' angles chosen so that hiding a row's own document decides its
nearest gold question, the off-corpus cutoff and the folds."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest

from service.data.corpus import Corpus
from service.data.goldset import GoldSet
from service.records import GoldQuestion, Passage
from service.refusals.scope import (
    EmbeddingScope,
    GoldGroups,
    coverage_groups,
    describe_hiding,
    grouped_folds,
    hidden_pairs,
)
from tests.service.test_scope_embedding import TableEmbedder, _unit


def c(deg: float) -> float:
    return float(np.cos(np.radians(deg)))


def test_coverage_groups_join_rows_by_document_then_passage() -> None:
    q = [GoldQuestion("a", "qa", ("p1",)), GoldQuestion("b", "qb", ("p2",)),
         GoldQuestion("c", "qc", ("p3",)), GoldQuestion("d", "qd", ("p3", "p4")),
         GoldQuestion("e", "qe", ("p5",)), GoldQuestion("u", "qu", ()),
         GoldQuestion("v", "qv", ())]  # fmt: skip
    docs = {"p1": "A", "p2": "A", "p3": "B", "p4": "C", "p5": None}
    # a, b on document A; c, d on B (d also on C); e's passage has no document: its own;
    # each unanswerable row alone
    got = coverage_groups(q, docs, ["p1", "p4", "p5", "p9"])
    # the passages' groups: p1 A's, p4 (document C, joined to B by d) B's, p5 e's; p9 none
    assert got == GoldGroups((0, 0, 1, 1, 2, 3, 4), "document", 3, passages=(0, 1, 2, -1))
    # a row on B and C joins B's and C's rows: f (on C alone) lands with c and d
    f = GoldQuestion("f", "qf", ("p4",))
    assert coverage_groups([*q, f], docs) == GoldGroups((0, 0, 1, 1, 2, 3, 4, 1), "document",
                                                        3)  # fmt: skip
    # every passage in one document: by passage (p1, p2, p3+p4 joined by d, p5)
    one = dict.fromkeys(docs, "manual.pdf")
    assert coverage_groups(q, one) == GoldGroups(
        (0, 1, 2, 2, 3, 4, 5), "passage", 4,
        why="not by document: all 5 answerable rows ask about one")  # fmt: skip
    # no document known: by passage, and said so
    assert coverage_groups(q, {}) == GoldGroups(
        (0, 1, 2, 2, 3, 4, 5), "passage", 4,
        why="the corpus names no document (`doc`) of the gold passages")  # fmt: skip
    # every answerable row on one passage: nothing to hold out
    assert coverage_groups([q[0], q[5], q[6]], docs) is None


def _two_documents() -> tuple[list[GoldQuestion], dict[str, list[float]], GoldGroups]:
    """Answerable rows at 0° and 1° (document A) and 40° and 41° (document B), unanswerable
    rows at 80°, 85° and 90°, the one passage at 120°."""
    table = {
        "a0": _unit(0),
        "a1": _unit(1),
        "b0": _unit(40),
        "b1": _unit(41),
        "u0": _unit(80),
        "u1": _unit(85),
        "u2": _unit(90),
        "passage": _unit(120),
    }
    gold = [GoldQuestion("a0", "a0", ("pA",)), GoldQuestion("a1", "a1", ("pA",)),
            GoldQuestion("b0", "b0", ("pB",)), GoldQuestion("b1", "b1", ("pB",)),
            GoldQuestion("u0", "u0", ()), GoldQuestion("u1", "u1", ()),
            GoldQuestion("u2", "u2", ())]  # fmt: skip
    groups = coverage_groups(gold, {"pA": "A", "pB": "B"})
    assert groups == GoldGroups((0, 0, 1, 1, 2, 3, 4), "document", 2)
    return gold, table, groups


def test_a_gold_row_does_not_see_the_rows_on_its_own_document() -> None:
    gold, table, groups = _two_documents()
    det = EmbeddingScope(TableEmbedder(table), gold, ["passage"], n_boot=0, groups=groups)
    # The fitted model's scaler holds the mean of each feature over the 7 gold rows as fitted.
    # Nearest answerable gold question, its own document hidden: a0 → b0 (40°), a1 → b0 (39°),
    # b0 → a1 (39°), b1 → a1 (40°); u0 (80°) → b1 (39°), u1 → b1 (44°), u2 → b1 (49°).
    answerable = [c(40), c(39), c(39), c(40), c(39), c(44), c(49)]
    # Nearest unanswerable: a0 → u0 (80°), a1 → 79°, b0 → 40°, b1 → 39°; u0 → u1 (5°),
    # u1 → 5°, u2 → u1 (5°). Passage (120°): 120°, 119°, 80°, 79°, 40°, 35°, 30°.
    unanswerable = [c(80), c(79), c(40), c(39), c(5), c(5), c(5)]
    passage = [c(120), c(119), c(80), c(79), c(40), c(35), c(30)]
    scaler = det.model.steps[0][1]
    want = [np.mean(answerable), np.mean(unanswerable), np.mean(passage)]
    assert scaler.mean_.tolist() == pytest.approx(want, abs=1e-6)
    # (leave-one-out, the fit before: a0 → a1 (1°) — the mean would be far higher)
    assert scaler.mean_[0] < c(38)


def test_an_unanswerable_row_is_fitted_on_the_document_of_its_nearest_passage() -> None:
    # Answerable a0 0°, a1 1° on passage pA (0.5°, document A); b0 40°, b1 41° on pB (40.5°,
    # document B). Unanswerable u0 at 2° ("in-domain": its nearest passage is pA), u1 85° and
    # u2 90° (nearest passage pB, 44.5° and 49.5° away). So A = {a0, a1, u0} and B = {b0, b1,
    # u1, u2}: no row sees the rows of its own group.
    table = {
        "a0": _unit(0),
        "a1": _unit(1),
        "b0": _unit(40),
        "b1": _unit(41),
        "u0": _unit(2),
        "u1": _unit(85),
        "u2": _unit(90),
        "pA": _unit(0.5),
        "pB": _unit(40.5),
    }
    gold = [GoldQuestion(n, n, (f"p{n[0].upper()}",) if n[0] != "u" else ())
            for n in ("a0", "a1", "b0", "b1", "u0", "u1", "u2")]  # fmt: skip
    groups = coverage_groups(gold, {"pA": "A", "pB": "B"}, ["pA", "pB"])
    assert groups == GoldGroups((0, 0, 1, 1, 2, 3, 4), "document", 2, passages=(0, 1))
    det = EmbeddingScope(TableEmbedder(table), gold, ["pA", "pB"], n_boot=0, groups=groups)
    # nearest answerable outside the own group: a0 → b0 40°, a1 → b0 39°, b0 → a1 39°,
    # b1 → a1 40°, u0 → b0 38°, u1 → a1 84°, u2 → a1 89°
    answerable = [c(40), c(39), c(39), c(40), c(38), c(84), c(89)]
    # nearest unanswerable outside the own group: a0 → u1 85°, a1 → u1 84°, b0 → u0 38°,
    # b1 → u0 39°, u0 → u1 83°, u1 → u0 83°, u2 → u0 88°
    unanswerable = [c(85), c(84), c(38), c(39), c(83), c(83), c(88)]
    # nearest passage (none hidden): 0.5° for the answerable rows, u0 1.5°, u1 44.5°, u2 49.5°
    passage = [c(0.5)] * 4 + [c(1.5), c(44.5), c(49.5)]
    scaler = det.model.steps[0][1]
    want = [np.mean(answerable), np.mean(unanswerable), np.mean(passage)]
    assert scaler.mean_.tolist() == pytest.approx(want, abs=1e-6)
    # (u0 seen by a0 and a1, as when the unanswerable rows are not grouped, their nearest
    # unanswerable question would be 2° and 1° away: a mean above cos 30°)
    assert scaler.mean_[1] < c(30)


def test_the_off_corpus_cutoff_is_the_least_support_without_the_own_document() -> None:
    gold, table, groups = _two_documents()
    det = EmbeddingScope(TableEmbedder(table), gold, ["passage"], n_boot=0, groups=groups)
    # Support (largest of nearest gold row, own document hidden, and the passage) of the
    # answerable rows: a0 max(cos 40°, cos 80°, cos 120°) = cos 40°; a1 cos 39°; b0 max(cos 39°
    # (a1), cos 40° (u0), cos 80°) = cos 39°; b1 max(cos 40° (a1), cos 39° (u0)) = cos 39°.
    # 4 rows: ⌊0.05 · 4⌋ = 0 left out, the cutoff is the least: cos 40°, set by a0.
    assert det.support.cutoff == pytest.approx(c(40), abs=1e-6)
    assert det.support.set_by == "a0"
    # (leave-one-out: a0's support would be a1's cos 1°)
    ungrouped = EmbeddingScope(TableEmbedder(table), gold, ["passage"], n_boot=0)
    assert ungrouped.support.cutoff == pytest.approx(c(1), abs=1e-6)


def test_grouping_decides_the_folds() -> None:
    gold, table, groups = _two_documents()
    labels = np.array([q.answerable for q in gold])
    split, grouped = grouped_folds(labels, groups, seed=0)
    # min(5, 3 unanswerable, 2 documents) = 2 folds, each holding out one document's two
    # rows together and the other in training
    assert grouped and len(split) == 2
    held = sorted(sorted(int(i) for i in test if labels[i]) for _, test in split)
    assert held == [[0, 1], [2, 3]]
    # the detector's quality says so
    det = EmbeddingScope(TableEmbedder(table), gold, ["passage"], n_boot=0, groups=groups)
    assert det.quality.method.startswith("2-fold cross-validated")
    assert "gold similarities and folds by document: the answerable rows ask about 2" in (
        det.quality.method
    )


def test_without_a_split_holding_both_classes_the_folds_are_not_grouped() -> None:
    # groups whose answerable rows are one group (coverage_groups gives None for these, but
    # grouped_folds is given them): holding that group out would leave a training fold
    # without an answerable row, so the stratified folds are used, both classes in each
    labels = np.array([True, True, False, False])
    groups = GoldGroups((0, 0, 1, 2), "document", 1)
    split, grouped = grouped_folds(labels, groups, seed=0)
    assert not grouped and len(split) == 2
    assert all(labels[train].any() and not labels[train].all() for train, _ in split)


def test_hidden_pairs_by_hand() -> None:
    assert hidden_pairs([0, 1, 0, 2]).astype(int).tolist() == [
        [1, 0, 1, 0], [0, 1, 0, 0], [1, 0, 1, 0], [0, 0, 0, 1]]  # fmt: skip


def test_the_service_groups_the_gold_rows_by_the_corpus_documents() -> None:
    """``_scope_stage`` (what ``serve`` and ``replay`` build) reads each passage's ``doc``."""
    from service.runtime.analytics import _scope_stage
    from service.settings import AnalyticsConfig

    gold, table, _ = _two_documents()
    gold = [dataclasses.replace(q, language="en") for q in gold]
    corpus = Corpus((Passage("pA", "passage", doc="A.html"),
                     Passage("pB", "passage b", doc="B.html")))  # fmt: skip
    table["passage b"] = _unit(121)
    _, _, quality = _scope_stage(AnalyticsConfig(quality_min_class=2), GoldSet(tuple(gold)),
                                 corpus, embedder=TableEmbedder(table))  # fmt: skip
    assert quality is not None
    assert "folds by document: the answerable rows ask about 2" in quality.method


def test_a_lopsided_gold_set_is_grouped_by_passage_not_by_its_two_documents() -> None:
    """Five answerable rows on document A (passages p1, p1, p2, p3, p4) and one on B (p5): by
    document, A holds 5 of the 6 (more than :data:`MAX_GROUP_SHARE`, half), so the fit would
    train on B's one row when A is held out. By passage the largest group is p1's 2 of 6:
    used, and the declined unit said. Each unanswerable row alone; labels by hand."""
    q = [GoldQuestion("a1", "q1", ("p1",)), GoldQuestion("a2", "q2", ("p1",)),
         GoldQuestion("a3", "q3", ("p2",)), GoldQuestion("a4", "q4", ("p3",)),
         GoldQuestion("a5", "q5", ("p4",)), GoldQuestion("b1", "q6", ("p5",)),
         GoldQuestion("u1", "q7", ()), GoldQuestion("u2", "q8", ())]  # fmt: skip
    docs = {"p1": "A", "p2": "A", "p3": "A", "p4": "A", "p5": "B"}
    got = coverage_groups(q, docs, ["p1", "p5", "p9"])
    assert got == GoldGroups(
        (0, 0, 1, 2, 3, 4, 5, 6), "passage", 5, passages=(0, 4, -1),
        why="not by document: 5 of the 6 answerable rows ask about one (more than 50%)",
    )  # fmt: skip
    # p1 asked about by 4 of the 6 (a1, a2, and now a3 and a4): no unit splits the rows
    # usably, so each row alone (the fit as without groups), both units declined said
    q3 = [*q[:2], *(dataclasses.replace(r, gold=("p1",)) for r in q[2:4]), *q[4:]]
    got = coverage_groups(q3, docs)
    assert got == GoldGroups(
        (0, 1, 2, 3, 4, 5, 6, 7), "row", 6,
        why="not by document: 5 of the 6 answerable rows ask about one (more than 50%); "
        "not by passage: 4 of the 6 answerable rows ask about one (more than 50%)",
    )  # fmt: skip
    assert got is not None
    assert grouped_folds(np.array([True] * 6 + [False] * 2), got, 0)[1] is False
    assert describe_hiding(got, False).startswith(
        "gold similarities leave-one-out, folds not grouped: not by document: 5 of the 6"
    )


def test_a_lopsided_real_gold_set_keeps_a_trusted_detector(shared_data: Path) -> None:
    """Trial 12's reviewer's case on real data: 30 XQuAD-en rows on its largest article and 2
    on the next, 12 CLINC150 ``oos_val`` rows, the 240 English paragraphs as the corpus (the
    service's own ``_scope_stage``). Grouped by its two documents the fit held the 30 out
    with 2 answerable rows to train on: cross-validated AUC 0.763, TPR 0.625 at a threshold
    meant to keep 0.95; by passage (7 groups) it reads 0.980 (every row seeing the others:
    0.961). Asserted: the unit and the reason in the quality line, an AUC of at least 0.90
    (which the fit by document, 0.763, does not reach) and a trusted detector."""
    import json
    import random

    from benchmarks.datasets import load_xquad
    from service.runtime.analytics import _scope_stage
    from service.settings import AnalyticsConfig

    passages, questions = load_xquad("en", shared_data)
    corpus = Corpus(tuple(Passage(p.id, p.text, doc=p.doc) for p in passages))
    article = {p.id: p.doc for p in passages}
    counts: dict[str | None, int] = {}
    for _, _, pid in questions:
        counts[article[pid]] = counts.get(article[pid], 0) + 1
    arts = sorted((a for a in counts if a), key=lambda a: (-counts[a], a))
    rng = random.Random(1)
    picked = rng.sample([q for q in questions if article[q[2]] == arts[0]], 30)
    picked += rng.sample([q for q in questions if article[q[2]] == arts[1]], 2)
    clinc = json.loads((shared_data / "clinc150" / "data_full.json").read_text("utf-8"))
    gold = [GoldQuestion(f"x-{qid}", text, (pid,), language="en") for qid, text, pid in picked]
    gold += [GoldQuestion(f"oos-{k}", clinc["oos_val"][k][0], (), kind="unanswerable",
                          language="en") for k in range(12)]  # fmt: skip
    config = AnalyticsConfig()
    _, cal, quality = _scope_stage(config, GoldSet(tuple(gold)), corpus)
    assert quality is not None and cal is not None
    assert "by passage: the answerable rows ask about 7; not by document: 30 of the 32" in (
        quality.method
    )
    assert quality.auc >= 0.90
    assert quality.trusted(config.quality_floor, config.scope_min_balanced_accuracy,
                           config.quality_min_class)  # fmt: skip
