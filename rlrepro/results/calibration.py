"""Error rates of the claim verdicts, measured by simulation (no training): the calibration suite's engine.

Each function simulates ``sims`` experiments at once (vectorised numpy, seeded) and passes them through the
decision functions the verdicts use (``rlrepro.results.stats``, ``rlrepro.results.aggregation``), returning
the fraction of experiments that come out *reproduced*. Under a null (the claim false, at its least
favourable point) that fraction is the false-"reproduced" rate, which must stay at or below 0.025 (one
side of a 95% interval) up to Monte-Carlo error; under an alternative it is the power.

Data shapes (all with mean 0 and scale 1, so effects are in units of the spread): ``normal``; ``lognormal``
and ``exponential`` (skewed), centred and scaled to SD 1; ``t3`` (heavy tails, scaled to SD 1) and ``t2``
(infinite variance, unit scale).

Run ``python -m rlrepro.results.calibration`` to print the tables of the issue (#10).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from rlrepro.results import stats
from rlrepro.results.aggregation import (
    bootstrap_difference_intervals,
    difference_of_means_ci,
)

SHAPES = ("normal", "lognormal", "exponential", "t3", "t2")
SEED_COUNTS = (2, 3, 5, 10)


def draw(rng: np.random.Generator, shape: str, size: tuple[int, ...]) -> np.ndarray:
    """Samples of mean 0 and SD 1 (``t2``: scale 1, infinite variance) of a named shape."""
    if shape == "normal":
        return rng.standard_normal(size)
    if shape == "lognormal":  # lognormal(0, 1): mean e^0.5, variance (e - 1) e
        return (rng.lognormal(0.0, 1.0, size) - np.exp(0.5)) / np.sqrt((np.e - 1.0) * np.e)
    if shape == "exponential":
        return rng.exponential(1.0, size) - 1.0
    if shape == "t3":
        return rng.standard_t(3, size) / np.sqrt(3.0)
    if shape == "t2":
        return rng.standard_t(2, size)
    raise ValueError(f"unknown shape {shape!r}; expected one of {SHAPES}")


def _pair(rng: np.random.Generator, shape: str, n: int, sims: int, difference: float) -> tuple[np.ndarray, np.ndarray]:
    """(sims, n) runs of `better` and of `worse`, true mean(better) - mean(worse) = difference."""
    return draw(rng, shape, (sims, n)) + difference, draw(rng, shape, (sims, n))


def ordering_rate(
    relation: str, n: int, shape: str, difference: float, *, margin: float = 0.0, sims: int = 4000, seed: int = 0
) -> float:
    """P(reproduced) of one comparison (one environment, one worse variant) with Welch's interval."""
    a, b = _pair(np.random.default_rng(seed), shape, n, sims, difference)
    interval = stats.welch_interval(a, b)
    if relation == "beats":
        outcome = stats.decide_beats(interval.low, interval.high)
    elif relation == "matches":
        outcome = stats.decide_matches(interval.low, interval.high, margin)
    elif relation == "matches_or_beats":
        outcome = stats.decide_non_inferior(interval.low, interval.high, margin)
    else:
        raise ValueError(f"unknown relation {relation!r}")
    return float(np.mean(outcome == stats.SUPPORTED))


def each_rate(n: int, shape: str, differences: list[float], *, sims: int = 4000, seed: int = 0) -> float:
    """P(reproduced) of 'beats on each' over several comparisons with the given true differences (IUT)."""
    rng = np.random.default_rng(seed)
    outcomes = []
    for difference in differences:
        a, b = _pair(rng, shape, n, sims, difference)
        interval = stats.welch_interval(a, b)
        outcomes.append(stats.decide_beats(interval.low, interval.high))
    return float(np.mean(stats.combine_each(np.stack(outcomes, axis=-1)) == stats.SUPPORTED))


def at_least_rate(n: int, shape: str, differences: list[float], k: int, *, sims: int = 4000, seed: int = 0) -> float:
    """P(reproduced) of 'beats on at least k of the environments' (one difference per environment, Holm)."""
    rng = np.random.default_rng(seed)
    p_values, contradicted = [], []
    for difference in differences:
        a, b = _pair(rng, shape, n, sims, difference)
        interval = stats.welch_interval(a, b)
        p_values.append(stats.one_sided_p(interval, 0.0))
        contradicted.append(stats.decide_beats(interval.low, interval.high) == stats.CONTRADICTED)
    outcome = stats.decide_at_least(np.stack(p_values, -1), np.stack(contradicted, -1), k)
    return float(np.mean(outcome == stats.SUPPORTED))


def threshold_rate(n: int, shape: str, op: str, offset: float, *, sims: int = 4000, seed: int = 0) -> float:
    """P(reproduced) of a threshold claim 'mean op 0' when the true mean is ``offset`` (one-sample t interval)."""
    x = draw(np.random.default_rng(seed), shape, (sims, n)) + offset
    interval = stats.one_sample_interval(x)
    return float(np.mean(stats.decide_threshold(interval.low, interval.high, op, 0.0) == stats.SUPPORTED))


def aggregate_rate(
    n: int, shape: str, aggregate: str, difference: float, *, tasks: int = 5, sims: int = 1000, reps: int = 500, seed: int = 0
) -> float:
    """P(reproduced) of 'beats on the aggregate over tasks' (stratified bootstrap, small-sample corrected).

    Each task has its own level (0, 1, ..., tasks - 1, both variants alike) and better's scores are shifted
    by ``difference`` on every task, so the aggregates differ by exactly ``difference``.
    """
    rng = np.random.default_rng(seed)
    levels = np.arange(tasks, dtype=np.float64)
    a = draw(rng, shape, (sims, n, tasks)) + levels + difference
    b = draw(rng, shape, (sims, n, tasks)) + levels
    _, low, high = bootstrap_difference_intervals(a, b, aggregate, reps, stats.CONFIDENCE, rng)
    return float(np.mean(stats.decide_beats(low, high) == stats.SUPPORTED))


def old_bootstrap_rates(n: int, *, sims: int = 400, seed: int = 0) -> tuple[float, float]:
    """The issue's table before the change: percentile-bootstrap 'beats' at difference 0, and the old
    'matches_or_beats' (no interval wholly below 0) when better is truly 1 SD worse; normal data."""
    rng = np.random.default_rng(seed)
    beats = mob = 0
    for sim in range(sims):
        a, b = rng.standard_normal(n), rng.standard_normal(n)
        _, low, _ = difference_of_means_ci(a, b, seed=sim)
        beats += low > 0
        _, _, high = difference_of_means_ci(a - 1.0, b, seed=sim)
        mob += not high < 0
    return beats / sims, mob / sims


def monte_carlo_bound(rate: float, sims: int, z: float = 3.0) -> float:
    """rate + z Monte-Carlo standard errors: the largest measured rate consistent with a true ``rate``."""
    return rate + z * np.sqrt(rate * (1.0 - rate) / sims)


def table(rows: list[tuple[str, Callable[[int], float]]], seed_counts: tuple[int, ...] = SEED_COUNTS) -> str:
    """A markdown table: one row per (label, rate(n)) and one column per seed count."""
    lines = ["| case | " + " | ".join(f"n = {n}" for n in seed_counts) + " |", "|---" * (len(seed_counts) + 1) + "|"]
    for label, rate in rows:
        lines.append(f"| {label} | " + " | ".join(f"{rate(n):.3f}" for n in seed_counts) + " |")
    return "\n".join(lines)


def issue_table() -> str:
    """The issue's two columns, before (percentile bootstrap) and after (Welch; margin 0.5 SD), normal data."""
    lines = [
        "| seeds per side | P(beats reproduced, true diff 0): before | after | "
        "P(matches_or_beats reproduced, better 1 SD worse): before | after (margin 0.5 SD) |",
        "|---|---|---|---|---|",
    ]
    for n in SEED_COUNTS:
        old_beats, old_mob = old_bootstrap_rates(n)
        new_beats = ordering_rate("beats", n, "normal", 0.0)
        new_mob = ordering_rate("matches_or_beats", n, "normal", -1.0, margin=0.5)
        lines.append(f"| {n} | {old_beats:.3f} | {new_beats:.3f} | {old_mob:.3f} | {new_mob:.3f} |")
    return "\n".join(lines)


def _main() -> None:
    print("False 'reproduced' rates (nominal 0.025) and power; 4000 simulated experiments per cell unless noted.\n")
    print(issue_table(), "\n")
    for shape in SHAPES:
        rows: list[tuple[str, Callable[[int], float]]] = [
            ("beats, diff 0", lambda n, s=shape: ordering_rate("beats", n, s, 0.0)),
            ("matches (margin 1), diff 1", lambda n, s=shape: ordering_rate("matches", n, s, 1.0, margin=1.0)),
            ("matches_or_beats (margin 0.5), diff -0.5", lambda n, s=shape: ordering_rate("matches_or_beats", n, s, -0.5, margin=0.5)),
            ("each of 3, one diff 0 (others +10)", lambda n, s=shape: each_rate(n, s, [0.0, 10.0, 10.0])),
            ("at least 3 of 5, two +10, three 0", lambda n, s=shape: at_least_rate(n, s, [10.0, 10.0, 0.0, 0.0, 0.0], 3)),
            ("threshold >=, mean at bound", lambda n, s=shape: threshold_rate(n, s, ">=", 0.0)),
            ("threshold <=, mean at bound", lambda n, s=shape: threshold_rate(n, s, "<=", 0.0)),
            ("aggregate median of 5, diff 0 (1000 sims)", lambda n, s=shape: aggregate_rate(n, s, "median", 0.0)),
            ("aggregate IQM of 5, diff 0 (1000 sims)", lambda n, s=shape: aggregate_rate(n, s, "iqm", 0.0)),
            ("aggregate mean of 5, diff 0 (1000 sims)", lambda n, s=shape: aggregate_rate(n, s, "mean", 0.0)),
            ("power: beats, diff 1.5 SD", lambda n, s=shape: ordering_rate("beats", n, s, 1.5)),
        ]
        print(f"### {shape}\n\n{table(rows)}\n")


if __name__ == "__main__":
    _main()
