"""Aggregate scores over runs and tasks, with stratified-bootstrap confidence intervals.

Implements the definitions of rliable (Agarwal et al. 2021, "Deep Reinforcement Learning at the
Edge of the Statistical Precipice", §4 and ``rliable/metrics.py``, ``rliable/library.py``) without
depending on it. Every function takes a score matrix of shape (num_runs, num_tasks), typically
human-normalised scores: row = one run (seed), column = one task (game).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import numpy as np
import numpy.typing as npt

AggregateFn = Callable[[np.ndarray], float]


def _as_score_matrix(scores: npt.ArrayLike) -> np.ndarray:
    """Validates and returns ``scores`` as a float64 (num_runs, num_tasks) array."""
    matrix = np.asarray(scores, dtype=np.float64)
    if matrix.ndim != 2 or matrix.size == 0:
        raise ValueError(
            f"scores must be a non-empty (num_runs, num_tasks) matrix; got shape {matrix.shape} "
            "(for a single run use scores[None, :])"
        )
    if not np.all(np.isfinite(matrix)):
        bad = np.argwhere(~np.isfinite(matrix))
        where = ", ".join(f"(run {r}, task {t})" for r, t in bad[:5])
        more = f" and {len(bad) - 5} more" if len(bad) > 5 else ""
        raise ValueError(
            f"scores contain {len(bad)} NaN/inf value(s) at {where}{more}; drop the task column or the run "
            "(e.g. an unknown game has NaN HNS) before aggregating"
        )
    return matrix


def aggregate_mean(scores: npt.ArrayLike) -> float:
    """Mean over tasks of the per-task mean over runs."""
    return float(np.mean(np.mean(_as_score_matrix(scores), axis=0)))


def aggregate_median(scores: npt.ArrayLike) -> float:
    """Median over tasks of the per-task mean over runs (rliable ``aggregate_median``)."""
    return float(np.median(np.mean(_as_score_matrix(scores), axis=0)))


def aggregate_iqm(scores: npt.ArrayLike) -> float:
    """Interquartile mean of all runs x tasks scores: the mean of the middle 50%.

    Same as ``scipy.stats.trim_mean(scores, 0.25, axis=None)`` (what rliable calls): of the n sorted
    scores, drop int(0.25 * n) from each end. Implemented here so this module does not import scipy.
    """
    flat = _as_score_matrix(scores).ravel()
    cut = int(0.25 * flat.size)
    middle = np.partition(flat, (cut, flat.size - cut - 1))[cut : flat.size - cut]
    return float(np.mean(middle))


def optimality_gap(scores: npt.ArrayLike, gamma: float = 1.0) -> float:
    """Amount by which scores fall short of ``gamma``: gamma - mean(min(score, gamma)) over all runs x tasks."""
    return float(gamma - np.mean(np.minimum(_as_score_matrix(scores), gamma)))


def _bootstrap_statistics(
    scores: np.ndarray, aggregate_fns: Mapping[str, AggregateFn], reps: int, seed: int
) -> dict[str, np.ndarray]:
    """Each aggregate on ``reps`` stratified resamples (the same resamples for every aggregate).

    Stratified by task: each task's column is resampled with replacement from its own runs, so every
    resample keeps the (num_runs, num_tasks) shape (rliable's ``StratifiedBootstrap``, tasks fixed).
    """
    num_runs, num_tasks = scores.shape
    rng = np.random.default_rng(seed)
    columns = np.arange(num_tasks)
    values = {name: np.empty(reps) for name in aggregate_fns}
    for rep in range(reps):
        resample = scores[rng.integers(0, num_runs, size=(num_runs, num_tasks)), columns]
        for name, fn in aggregate_fns.items():
            values[name][rep] = fn(resample)
    return values


def _check_bootstrap_args(reps: int, confidence: float) -> None:
    if reps < 1:
        raise ValueError(f"reps must be >= 1; got {reps}")
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1); got {confidence}")


def _percentile_interval(values: np.ndarray, confidence: float) -> tuple[float, float]:
    tail = 100.0 * (1.0 - confidence) / 2.0
    low, high = np.percentile(values, [tail, 100.0 - tail])
    return float(low), float(high)


def stratified_bootstrap_ci(
    scores: npt.ArrayLike,
    aggregate_fn: AggregateFn,
    reps: int = 2000,
    confidence: float = 0.95,
    seed: int = 0,
) -> tuple[float, float, float]:
    """Point estimate and percentile stratified-bootstrap confidence interval of an aggregate.

    Args:
      scores: (num_runs, num_tasks) matrix without NaN.
      aggregate_fn: maps a (num_runs, num_tasks) matrix to a float, e.g. ``aggregate_iqm``.
      reps: number of bootstrap resamples.
      confidence: coverage of the two-sided percentile interval (0.95 -> 2.5th and 97.5th percentiles).
      seed: seed of ``numpy.random.default_rng``; the result is deterministic given it.

    Returns:
      (point, low, high). With a single run the interval collapses to the point.
    """
    matrix = _as_score_matrix(scores)
    _check_bootstrap_args(reps, confidence)
    point = float(aggregate_fn(matrix))
    if matrix.shape[0] == 1:
        return point, point, point
    values = _bootstrap_statistics(matrix, {"value": aggregate_fn}, reps, seed)["value"]
    return (point, *_percentile_interval(values, confidence))


def summarize(
    scores: npt.ArrayLike, reps: int = 2000, confidence: float = 0.95, seed: int = 0
) -> dict[str, dict[str, float]]:
    """Mean, median and IQM with stratified-bootstrap CIs, all from the same resamples.

    Returns ``{"mean" | "median" | "iqm": {"point": ..., "low": ..., "high": ...}}``; each entry equals
    ``stratified_bootstrap_ci(scores, aggregate_<name>, reps, confidence, seed)``.
    """
    matrix = _as_score_matrix(scores)
    _check_bootstrap_args(reps, confidence)
    fns: dict[str, AggregateFn] = {"mean": aggregate_mean, "median": aggregate_median, "iqm": aggregate_iqm}
    points = {name: float(fn(matrix)) for name, fn in fns.items()}
    if matrix.shape[0] == 1:
        return {name: {"point": p, "low": p, "high": p} for name, p in points.items()}
    values = _bootstrap_statistics(matrix, fns, reps, seed)
    summary = {}
    for name, point in points.items():
        low, high = _percentile_interval(values[name], confidence)
        summary[name] = {"point": point, "low": low, "high": high}
    return summary


def difference_of_means_ci(
    better: npt.ArrayLike, worse: npt.ArrayLike, reps: int = 2000, confidence: float = 0.95, seed: int = 0
) -> tuple[float, float, float]:
    """mean(better) - mean(worse) with a bootstrap CI, resampling each group's runs independently.

    Returns (point, low, high). With one run in each group the interval collapses to the point.
    """
    _check_bootstrap_args(reps, confidence)
    a = _as_score_matrix(np.asarray(better, dtype=np.float64).reshape(-1, 1))[:, 0]
    b = _as_score_matrix(np.asarray(worse, dtype=np.float64).reshape(-1, 1))[:, 0]
    rng = np.random.default_rng(seed)
    resampled_a = a[rng.integers(0, len(a), size=(reps, len(a)))].mean(axis=1)
    resampled_b = b[rng.integers(0, len(b), size=(reps, len(b)))].mean(axis=1)
    low, high = _percentile_interval(resampled_a - resampled_b, confidence)
    return float(a.mean() - b.mean()), low, high
