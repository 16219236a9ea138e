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
