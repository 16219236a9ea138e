"""Paired comparison: wins/losses/ties, exact randomization p-values worked out by hand."""

from __future__ import annotations

import pytest

from service.evaluation.compare import paired_comparison


def _scores(values: list[float]) -> dict[str, dict[str, float]]:
    return {f"q{i}": {"recall@10": v} for i, v in enumerate(values)}


def test_five_wins_exact_p_value() -> None:
    # d = [1,1,1,1,1]: of the 2**5 = 32 sign flips only all-plus and all-minus reach
    # |mean| >= 1, so the exact two-sided p-value is 2/32 = 0.0625.
    result = paired_comparison("a", _scores([0] * 5), "b", _scores([1] * 5), "recall@10")
    assert (result.wins, result.losses, result.ties) == (5, 0, 0)
    assert result.mean_diff == pytest.approx(1.0)
    assert result.p_value == pytest.approx(0.0625)
    assert result.ci_low == result.ci_high == pytest.approx(1.0)


def test_mixed_differences_exact_p_value() -> None:
    # d = [0.5, 0.5, -0.5, 0, 0.5, 0.5]: sum 1.5, mean 0.25. Flipping the signs of the 5
    # non-zero halves gives sum = 0.5 * (#plus - #minus); |sum| >= 1.5 needs all five alike
    # (2 ways) or exactly one different (2 * 5 = 10): 12 of 32 patterns. The zero term
    # doubles both counts, so the exact p = 24/64 = 0.375.
    a = _scores([0.5, 0.0, 1.0, 1.0, 0.0, 0.5])
    b = _scores([1.0, 0.5, 0.5, 1.0, 0.5, 1.0])
    result = paired_comparison("a", a, "b", b, "recall@10")
    assert (result.wins, result.losses, result.ties) == (4, 1, 1)
    assert result.mean_diff == pytest.approx(0.25)
    assert result.p_value == pytest.approx(0.375)
    assert result.ci_low <= result.mean_diff <= result.ci_high
    assert result.deltas["q2"] == pytest.approx(-0.5)


def test_ties_do_not_make_the_p_value_approximate() -> None:
    # 60 questions, 3 of them d = +1 and 57 ties. Only the 3 non-zero signs matter: sums
    # over the 8 flips are {3, 1, 1, 1, -1, -1, -1, -3}; |sum| >= 3 in 2 of 8, so the exact
    # p = 0.25 (2**60 flips could never be enumerated; a Monte-Carlo estimate would wobble).
    result = paired_comparison(
        "a", _scores([0.0] * 60), "b", _scores([1.0] * 3 + [0.0] * 57), "recall@10"
    )
    assert (result.wins, result.ties) == (3, 57)
    assert result.p_value == 0.25


def test_one_differing_question_gives_p_one() -> None:
    # One non-zero d: its two signs both reach |sum| = |d|, so p = 2/2 = 1 exactly.
    result = paired_comparison(
        "a", _scores([0.0] * 40), "b", _scores([0.5] + [0.0] * 39), "recall@10"
    )
    assert result.p_value == 1.0


def test_identical_systems() -> None:
    result = paired_comparison("a", _scores([0.2, 1.0]), "b", _scores([0.2, 1.0]), "recall@10")
    assert result.p_value == 1.0
    assert (result.ties, result.ci_low, result.ci_high) == (2, 0.0, 0.0)


def test_only_shared_questions_are_paired() -> None:
    a = {"q1": {"m": 0.0}, "q2": {"m": 1.0}}
    b = {"q2": {"m": 1.0}, "q3": {"m": 0.0}}
    assert paired_comparison("a", a, "b", b, "m").n == 1


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [({"confidence": 1.0}, "confidence"), ({"n_resamples": 5}, "n_resamples")],
)
def test_bad_arguments(kwargs: dict[str, float], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        paired_comparison("a", _scores([1]), "b", _scores([0]), "recall@10", **kwargs)  # type: ignore[arg-type]


def test_no_shared_questions_or_metric() -> None:
    with pytest.raises(ValueError, match="share no"):
        paired_comparison("a", {"x": {"m": 1.0}}, "b", {"y": {"m": 1.0}}, "m")
    with pytest.raises(ValueError, match="not in both"):
        paired_comparison("a", {"x": {"m": 1.0}}, "b", {"x": {"n": 1.0}}, "m")


def test_a_bootstrap_interval_that_contradicts_the_exact_test_is_named() -> None:
    # Trial 13: 32 questions, 4 lose by 0.25 and 28 tie. Exact two-sided p over the 4 signs:
    # only all-minus and all-plus reach |sum| = 1, so 2/16 = 0.125. A bootstrap resample has
    # none of the 4 with probability (28/32)^32 = 0.0139 < 0.025, so the 95 % percentile
    # interval lies wholly below 0: it says "significant" where the test does not.
    a = _scores([0.5] * 32)
    b = _scores([0.25] * 4 + [0.5] * 28)
    result = paired_comparison("a", a, "b", b, "recall@10")
    assert (result.wins, result.losses, result.ties) == (0, 4, 28)
    assert result.p_value == pytest.approx(0.125)
    assert result.ci_high < 0  # the bootstrap's verdict
    assert result.disagreement.startswith(
        "recall@10: the 95% bootstrap interval excludes 0 but the randomization test gives "
        "p = 0.125 (≥ 0.05): only 4 of 32 questions differ"
    )
    assert result.to_json()["disagreement"] == result.disagreement


def test_agreeing_interval_and_test_say_nothing() -> None:
    # 12 wins of 12: exact p = 2/4096 < 0.05, interval [1, 1] excludes 0: they agree.
    result = paired_comparison("a", _scores([0] * 12), "b", _scores([1] * 12), "recall@10")
    assert result.p_value == pytest.approx(2 / 4096)
    assert result.disagreement == ""
    # 5 wins of 5: exact p = 2/32 = 0.0625 is not below 0.05, yet the interval is [1, 1]
    five = paired_comparison("a", _scores([0] * 5), "b", _scores([1] * 5), "recall@10")
    assert "p = 0.0625" in five.disagreement and "only 5 of 5 questions differ" in five.disagreement
