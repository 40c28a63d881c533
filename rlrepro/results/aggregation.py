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
    """mean(better) - mean(worse) with a percentile bootstrap CI, resampling each group's runs independently.

    Not for verdicts: at 2 to 5 runs per side this interval under-covers badly (a true difference of 0 lies
    outside it 18% of the time at 2 v 2); the verdicts use Welch's interval (``rlrepro.results.stats``).
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


AGGREGATE_NAMES = ("median", "iqm", "mean")


def batched_aggregate(name: str, scores: np.ndarray) -> np.ndarray:
    """rliable's aggregate of each (num_runs, num_tasks) matrix of a (..., num_runs, num_tasks) stack.

    Same definitions as ``aggregate_median`` / ``aggregate_iqm`` / ``aggregate_mean`` (tested equal), vectorised
    over the leading axes (resamples, simulated experiments).
    """
    if name == "mean":
        return scores.mean(axis=-2).mean(axis=-1)
    if name == "median":
        return np.median(scores.mean(axis=-2), axis=-1)
    if name == "iqm":
        flat = np.sort(scores.reshape(*scores.shape[:-2], -1), axis=-1)
        cut = int(0.25 * flat.shape[-1])
        return flat[..., cut : flat.shape[-1] - cut].mean(axis=-1)
    raise ValueError(f"unknown aggregate {name!r}; expected one of {AGGREGATE_NAMES}")


def _stratified_resamples(scores: np.ndarray, reps: int, rng: np.random.Generator) -> np.ndarray:
    """(..., reps, num_runs, num_tasks): each task's runs resampled with replacement from its own runs."""
    *batch, num_runs, num_tasks = scores.shape
    index = rng.integers(0, num_runs, size=(*batch, reps, num_runs, num_tasks))
    return np.take_along_axis(scores[..., None, :, :], index, axis=-2)


def _small_sample_factor(n: int, df: int, confidence: float) -> float:
    """sqrt(n / (n - 1)) * t_df(q) / z(q), q = (1 + confidence) / 2: widens a bootstrap interval at few runs."""
    from scipy import stats  # noqa: PLC0415 -- scipy only where the verdicts need it

    q = 0.5 + confidence / 2.0
    return float(np.sqrt(n / (n - 1.0)) * stats.t.ppf(q, df) / stats.norm.ppf(q))


def bootstrap_difference_intervals(
    better: np.ndarray, worse: np.ndarray, aggregate: str, reps: int, confidence: float, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Vectorised core of ``stratified_bootstrap_difference`` over leading axes: (point, low, high) arrays.

    ``better`` (..., n_a, tasks) and ``worse`` (..., n_b, tasks), n_a and n_b >= 2.
    """
    point = batched_aggregate(aggregate, better) - batched_aggregate(aggregate, worse)
    diffs = batched_aggregate(aggregate, _stratified_resamples(better, reps, rng)) - batched_aggregate(
        aggregate, _stratified_resamples(worse, reps, rng)
    )
    tail = 100.0 * (1.0 - confidence) / 2.0
    low, high = np.percentile(diffs, [tail, 100.0 - tail], axis=-1)
    n_a, n_b = better.shape[-2], worse.shape[-2]
    factor = _small_sample_factor(min(n_a, n_b), n_a + n_b - 2, confidence)
    return point, point - factor * (point - low), point + factor * (high - point)


def stratified_bootstrap_difference(
    better: npt.ArrayLike,
    worse: npt.ArrayLike,
    aggregate: str,
    reps: int = 2000,
    confidence: float = 0.95,
    seed: int = 0,
) -> tuple[float, float, float]:
    """aggregate(better) - aggregate(worse) over tasks with a small-sample-corrected stratified bootstrap CI.

    Each variant's runs are resampled within each task (rliable's stratified bootstrap), independently for
    the two variants. The percentile interval of a bootstrap under-covers at a few runs per task (the
    resampled spread is (n-1)/n of the sample's, and its tails are normal where a t with n_a + n_b - 2
    degrees of freedom is due), so its half-widths about the point are scaled by
    sqrt(n/(n-1)) * t_{df}(q) / z(q), n the fewest runs per side, df = n_a + n_b - 2 (conservative for
    a mean over many tasks, right for a median decided by one task); the calibration suite measures it.

    Args:
      better, worse: (num_runs, num_tasks) matrices of normalised scores over the same tasks (run counts may differ).
      aggregate: "median", "iqm" or "mean" (``batched_aggregate``).
    Returns:
      (point, low, high); with a single run on either side the interval is the point.
    """
    a, b = _as_score_matrix(better), _as_score_matrix(worse)
    if a.shape[1] != b.shape[1]:
        raise ValueError(f"better and worse must cover the same tasks; got {a.shape[1]} and {b.shape[1]} columns")
    _check_bootstrap_args(reps, confidence)
    if min(a.shape[0], b.shape[0]) < 2:
        point = float(batched_aggregate(aggregate, a) - batched_aggregate(aggregate, b))
        return point, point, point
    point, low, high = bootstrap_difference_intervals(a, b, aggregate, reps, confidence, np.random.default_rng(seed))
    return float(point), float(low), float(high)


def corrected_bootstrap_ci(
    scores: npt.ArrayLike, aggregate: str, reps: int = 2000, confidence: float = 0.95, seed: int = 0
) -> tuple[float, float, float]:
    """An aggregate of one (num_runs, num_tasks) matrix with the small-sample-corrected stratified bootstrap CI.

    As ``stratified_bootstrap_ci`` (same resampling), with half-widths scaled by sqrt(n/(n-1)) * t_{n-1}(q) / z(q)
    (see ``stratified_bootstrap_difference``); the verdicts of threshold claims on aggregates use it.
    """
    matrix = _as_score_matrix(scores)
    _check_bootstrap_args(reps, confidence)
    point = float(batched_aggregate(aggregate, matrix))
    n = matrix.shape[0]
    if n < 2:
        return point, point, point
    values = batched_aggregate(aggregate, _stratified_resamples(matrix, reps, np.random.default_rng(seed)))
    low, high = _percentile_interval(values, confidence)
    factor = _small_sample_factor(n, n - 1, confidence)
    return point, point - factor * (point - low), point + factor * (high - point)
