"""The embedding out-of-scope detector's quality figures (AUC, and TPR/FPR at its threshold)
are those of the detector as applied live: a held-out gold row below its fold's off-corpus
cutoff counts out of scope (probability 0), so an answerable row that sets the cutoff by
itself shows in them (trial 11, finding F3: the AUC and FPR shown did not move while one
odd answerable row moved the cutoff 0.352 → 0.208)."""

from __future__ import annotations

import numpy as np
import pytest

from service.records import GoldQuestion
from service.refusals.scope import EmbeddingScope
from tests.service.test_scope_embedding import TableEmbedder
from tests.service.test_scope_support import DIM, NEWS, _news_and_banking, _unit

ODD = "what did ESPN report? ask Tom Baker at <EMAIL> or <PHONE>"


def test_the_quality_shown_counts_the_row_that_sets_the_cutoff() -> None:
    table, passages, gold = _news_and_banking()
    base = EmbeddingScope(TableEmbedder(table), gold, passages, n_boot=0)
    # by construction the 12 answerable and 12 unanswerable rows separate (the NULL
    # direction), and no held-out row is off-corpus
    assert (base.calibration.tpr, base.calibration.fpr, base.quality.auc) == (1.0, 0.0, 1.0)
    # an odd answerable row, about the news and two dimensions nothing else uses (a banking
    # question's): far from every passage and gold row
    table[ODD] = _unit(2.0 * NEWS + np.eye(DIM)[17] + np.eye(DIM)[18])
    det = EmbeddingScope(TableEmbedder(table), [*gold, GoldQuestion("odd", ODD, ("p0",))],
                         passages, n_boot=0)  # fmt: skip
    # 13 answerable rows: ⌊0.05 · 13⌋ = 0, the cutoff is the least: the odd row's own
    assert det.support.set_by == "odd" and det.support.cutoff == det.support.least
    odd = len(gold)
    # held out, its fold's cutoff is the least of the other answerable rows, far above it:
    # off-corpus, probability 0, out of scope whatever the regression says
    assert det.cv_scores[odd] == 0.0
    # the other 12 in scope, the 12 unanswerable out: TPR 12/13, FPR 0; the odd row's 0 ranks
    # below every unanswerable row's (> 0), the 12 others above them: AUC (12·12)/(13·12)
    assert det.calibration.tpr == pytest.approx(12 / 13)
    assert det.calibration.fpr == 0.0
    assert det.quality.auc == pytest.approx(12 / 13)
    assert det.calibration.auc == det.quality.auc
    assert "off-corpus rule applied per fold" in det.quality.method
