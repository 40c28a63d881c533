"""Aggregates (rliable definitions) and the stratified bootstrap, on matrices worked out by hand."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from rlrepro.results.aggregation import (
    aggregate_iqm,
    aggregate_mean,
    aggregate_median,
    optimality_gap,
    stratified_bootstrap_ci,
    summarize,
)

# (num_runs, num_tasks) = (2, 4). Per-task means over runs: [2, 15, 1, 6].
_TWO_RUNS = np.array([[1.0, 10.0, 0.0, 4.0], [3.0, 20.0, 2.0, 8.0]])


def _random_scores(num_runs: int, num_tasks: int = 10, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    task_level = np.linspace(0.0, 2.0, num_tasks)
    return task_level + rng.normal(0.0, 0.5, size=(num_runs, num_tasks))


# --- point estimates ----------------------------------------------------------------------------


def test_mean_of_per_task_means():
    # (2 + 15 + 1 + 6) / 4 = 24 / 4 = 6
    assert aggregate_mean(_TWO_RUNS) == 6.0


def test_median_of_per_task_means():
    # per-task means [2, 15, 1, 6] sorted [1, 2, 6, 15] -> (2 + 6) / 2 = 4.
    # (The median of all 8 scores would be (3 + 4) / 2 = 3.5: rliable takes the per-task mean first.)
    assert aggregate_median(_TWO_RUNS) == 4.0


def test_iqm_of_a_small_matrix():
    scores = np.array([[10.0, 0.0, 3.0], [1.0, 100.0, 2.0], [5.0, 4.0, -50.0], [6.0, 7.0, 8.0]])
    # 12 scores sorted: -50 0 1 | 2 3 4 5 6 7 | 8 10 100; int(0.25 * 12) = 3 dropped at each end
    # -> (2 + 3 + 4 + 5 + 6 + 7) / 6 = 27 / 6 = 4.5 (pooled over runs x tasks, not per task)
    assert aggregate_iqm(scores) == pytest.approx(4.5)
    assert aggregate_iqm(scores) == pytest.approx(stats.trim_mean(scores, 0.25, axis=None))


def test_iqm_when_the_count_is_not_a_multiple_of_four():
    # 5 scores 1 2 3 4 100: int(0.25 * 5) = 1 dropped at each end -> (2 + 3 + 4) / 3 = 3
    assert aggregate_iqm([[1.0, 100.0, 3.0, 2.0, 4.0]]) == pytest.approx(3.0)
    # 3 scores: int(0.75) = 0 dropped -> plain mean (1 + 2 + 6) / 3 = 3
    assert aggregate_iqm([[6.0], [1.0], [2.0]]) == pytest.approx(3.0)


@pytest.mark.parametrize("shape", [(1, 1), (1, 7), (3, 5), (5, 57), (10, 10)])
def test_iqm_matches_scipy_trim_mean(shape):
    scores = np.random.default_rng(1).standard_cauchy(size=shape)
    assert aggregate_iqm(scores) == pytest.approx(stats.trim_mean(scores, 0.25, axis=None), rel=1e-12)


def test_optimality_gap():
    # min(score, 1) = [0.5, 1, 1, 0] -> mean 0.625 -> gap 1 - 0.625 = 0.375
    assert optimality_gap([[0.5, 1.5], [1.0, 0.0]]) == pytest.approx(0.375)
    # gamma = 2: min(score, 2) = [0.5, 1.5, 1, 0] -> mean 0.75 -> gap 1.25
    assert optimality_gap([[0.5, 1.5], [1.0, 0.0]], gamma=2.0) == pytest.approx(1.25)


@pytest.mark.parametrize("fn", [aggregate_mean, aggregate_median, aggregate_iqm, optimality_gap])
def test_nan_is_a_clear_error(fn):
    scores = _TWO_RUNS.copy()
    scores[1, 2] = np.nan
    with pytest.raises(ValueError, match=r"NaN.*\(run 1, task 2\)"):
        fn(scores)


@pytest.mark.parametrize("bad", [[1.0, 2.0], np.zeros((2, 3, 4)), np.zeros((0, 3))])
def test_scores_must_be_a_non_empty_matrix(bad):
    with pytest.raises(ValueError, match="num_runs, num_tasks"):
        aggregate_mean(bad)


# --- stratified bootstrap -----------------------------------------------------------------------


@pytest.mark.parametrize("fn", [aggregate_mean, aggregate_median, aggregate_iqm])
def test_ci_contains_the_point(fn):
    point, low, high = stratified_bootstrap_ci(_random_scores(8), fn, reps=500)
    assert point == fn(_random_scores(8))
    assert low < point < high


def test_ci_shrinks_with_more_runs():
    widths = []
    for num_runs in (3, 10, 50):
        _, low, high = stratified_bootstrap_ci(_random_scores(num_runs), aggregate_iqm, reps=500)
        widths.append(high - low)
    # the width scales roughly as 1 / sqrt(num_runs)
    assert widths[0] > widths[1] > widths[2]
    assert widths[2] < 0.5 * widths[0]


def test_ci_is_deterministic_given_the_seed():
    scores = _random_scores(5)
    first = stratified_bootstrap_ci(scores, aggregate_mean, reps=300, seed=7)
    assert stratified_bootstrap_ci(scores, aggregate_mean, reps=300, seed=7) == first
    assert stratified_bootstrap_ci(scores, aggregate_mean, reps=300, seed=8) != first


def test_ci_equals_the_point_for_identical_runs():
    # every run has the same score on each task, so every resample is the original matrix
    scores = np.tile([0.3, 1.2, 5.0, -1.0], (6, 1))
    for fn in (aggregate_mean, aggregate_median, aggregate_iqm):
        point, low, high = stratified_bootstrap_ci(scores, fn, reps=200)
        assert low == point == high


def test_single_run_collapses_the_ci():
    point, low, high = stratified_bootstrap_ci(_random_scores(1), aggregate_iqm)
    assert low == point == high == aggregate_iqm(_random_scores(1))


def test_percentile_interval_by_hand():
    # one task, runs [0, 1]: a resample's mean is 0, 0.5 or 1 with probability 1/4, 1/2, 1/4, so with
    # 2000 resamples ~500 are 0 and ~500 are 1 -> the 2.5th percentile is 0 and the 97.5th is 1;
    # at 40% confidence (30th / 70th percentiles) both ends are 0.5.
    assert stratified_bootstrap_ci([[0.0], [1.0]], aggregate_mean) == (0.5, 0.0, 1.0)
    assert stratified_bootstrap_ci([[0.0], [1.0]], aggregate_mean, confidence=0.4) == (0.5, 0.5, 0.5)


def test_resampling_is_stratified_by_task():
    # Both rows have mean 0.5: resampling whole runs would always give 0.5. Resampling each task's
    # runs independently gives task means in {0, 0.5, 1} and overall means in {0, 0.25, ..., 1}.
    point, low, high = stratified_bootstrap_ci([[0.0, 1.0], [1.0, 0.0]], aggregate_mean, reps=1000)
    assert point == 0.5
    assert low <= 0.25 and high >= 0.75


def test_nan_in_bootstrap_is_a_clear_error():
    with pytest.raises(ValueError, match="NaN"):
        stratified_bootstrap_ci([[0.0, np.nan], [1.0, 2.0]], aggregate_mean)


@pytest.mark.parametrize(("reps", "confidence"), [(0, 0.95), (100, 0.0), (100, 1.0), (100, 95.0)])
def test_bad_bootstrap_arguments(reps, confidence):
    with pytest.raises(ValueError, match="reps|confidence"):
        stratified_bootstrap_ci(_TWO_RUNS, aggregate_mean, reps=reps, confidence=confidence)


# --- summarize ----------------------------------------------------------------------------------


def test_summarize_equals_the_individual_cis():
    scores = _random_scores(6)
    summary = summarize(scores, reps=300, seed=3)
    assert set(summary) == {"mean", "median", "iqm"}
    for name, fn in (("mean", aggregate_mean), ("median", aggregate_median), ("iqm", aggregate_iqm)):
        point, low, high = stratified_bootstrap_ci(scores, fn, reps=300, seed=3)
        assert summary[name] == {"point": point, "low": low, "high": high}


def test_summarize_single_run():
    summary = summarize(_TWO_RUNS[:1])
    # run 0 = [1, 10, 0, 4]: mean 15 / 4 = 3.75; median (1 + 4) / 2 = 2.5; 4 scores, int(1.0) = 1 cut -> (1 + 4) / 2
    assert summary["mean"] == {"point": 3.75, "low": 3.75, "high": 3.75}
    assert summary["median"] == {"point": 2.5, "low": 2.5, "high": 2.5}
    assert summary["iqm"] == {"point": 2.5, "low": 2.5, "high": 2.5}


def test_default_summarize_is_fast():
    # 2000 resamples of a 10-run x 57-game matrix, three aggregates each
    import time

    start = time.perf_counter()
    summarize(_random_scores(10, num_tasks=57))
    assert time.perf_counter() - start < 5.0


# --- the vectorised aggregates and bootstrap the verdicts use ---------------------------------------------------


@pytest.mark.parametrize("shape", [(2, 5), (3, 1), (10, 8), (5, 57)])
def test_batched_aggregates_equal_rliables_definitions(shape):
    from rlrepro.results.aggregation import batched_aggregate

    stack = np.random.default_rng(2).standard_cauchy(size=(4, *shape))
    for name, fn in (("mean", aggregate_mean), ("median", aggregate_median), ("iqm", aggregate_iqm)):
        assert batched_aggregate(name, stack) == pytest.approx([fn(m) for m in stack], rel=1e-12)
    assert batched_aggregate("iqm", stack[0]) == pytest.approx(stats.trim_mean(stack[0], 0.25, axis=None))


def test_stratified_bootstrap_difference_point_and_small_sample_factor():
    from rlrepro.results.aggregation import _small_sample_factor, stratified_bootstrap_difference

    better, worse = _TWO_RUNS + 1.0, _TWO_RUNS
    point, low, high = stratified_bootstrap_difference(better, worse, "median", reps=500)
    assert point == pytest.approx(1.0)  # every task shifted by 1: the medians differ by 1
    assert low < point < high
    # sqrt(2 / 1) * t_{0.975, 2} / z_{0.975} = 1.41421 * 4.30265 / 1.95996 = 3.1046
    assert _small_sample_factor(2, 2, 0.95) == pytest.approx(3.1046, abs=1e-4)
    assert stratified_bootstrap_difference(better, worse, "mean", reps=300, seed=4) == stratified_bootstrap_difference(
        better, worse, "mean", reps=300, seed=4)
    # one run of better, [2, 11, 1, 5] (mean 4.75), against the mean 6 of worse: -1.25, and no interval
    assert stratified_bootstrap_difference(better[:1], worse, "mean") == (-1.25, -1.25, -1.25)
