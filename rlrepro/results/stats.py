"""Calibrated small-sample statistics behind the claim verdicts (2 to 16 seeds per side).

Every function is vectorised over leading axes (the last axis holds the seeds), so the calibration suite
(``rlrepro.results.calibration``) runs the same code on thousands of simulated experiments at once.

Choices, each measured by simulation (``tests/results/test_calibration.py``):
- a difference of means gets Welch's t interval (Welch 1947; Satterthwaite degrees of freedom): a
  percentile bootstrap under-covers at these n (its variance estimate is (n-1)/n too small and it uses
  normal quantiles), which made "beats" come out reproduced 18% of the time at 2 v 2 under the null;
- one-sided tests are at ``alpha = 0.025`` per side, i.e. the two-sided 95% interval's bound against 0
  (or against a margin: two one-sided tests, Schuirmann 1987, for equivalence and non-inferiority);
- "on at least k of n environments" counts Holm's rejections (Holm 1979): Holm controls the family-wise
  error, so its count of rejections is a valid lower bound on the number of true effects;
- a threshold on one cell gets a one-sample t interval over seeds. Known limit (measured): with strongly skewed
  seeds (lognormal, exponential) a threshold on the side of the long tail ('<=' when a few seeds are far above
  the rest) comes out reproduced 8-17% of the time at the bound instead of 2.5%. No interval for a mean is valid
  for every skewed shape at n <= 10 (Bahadur & Savage 1956; at n = 2 a sample shows no skew at all); differences
  of two like-shaped groups are symmetric and stay calibrated.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
from scipy import stats as _scipy_stats

ALPHA = 0.025  # per side: a two-sided 95% interval
CONFIDENCE = 1.0 - 2.0 * ALPHA
POWER = 0.8

# Outcome codes of the vectorised decisions (claims.py maps them to the verdict strings).
SUPPORTED, CONTRADICTED, UNDECIDED = 1, -1, 0


@dataclass(frozen=True)
class Interval:
    """A point estimate with its two-sided interval, standard error and degrees of freedom (arrays or floats)."""

    point: np.ndarray
    low: np.ndarray
    high: np.ndarray
    se: np.ndarray
    df: np.ndarray


def _t_quantile(q: float, df: npt.ArrayLike) -> np.ndarray:
    return np.asarray(_scipy_stats.t.ppf(q, df))


def welch_interval(better: npt.ArrayLike, worse: npt.ArrayLike, confidence: float = CONFIDENCE) -> Interval:
    """mean(better) - mean(worse) with Welch's t interval; seeds on the last axis, at least 2 per side.

    se^2 = s_a^2 / n_a + s_b^2 / n_b (sample variances with ddof 1); Welch-Satterthwaite
    df = se^4 / ((s_a^2/n_a)^2 / (n_a-1) + (s_b^2/n_b)^2 / (n_b-1)). With no spread on either side
    (se = 0) the interval is the point (and df is set to 1, unused).
    """
    a, b = np.asarray(better, dtype=np.float64), np.asarray(worse, dtype=np.float64)
    n_a, n_b = a.shape[-1], b.shape[-1]
    if n_a < 2 or n_b < 2:
        raise ValueError(f"Welch's interval needs at least 2 runs per side; got {n_a} and {n_b}")
    va, vb = a.var(axis=-1, ddof=1) / n_a, b.var(axis=-1, ddof=1) / n_b
    se2 = va + vb
    denominator = va**2 / (n_a - 1) + vb**2 / (n_b - 1)
    with np.errstate(divide="ignore", invalid="ignore"):
        df = np.where(denominator > 0, se2**2 / np.where(denominator > 0, denominator, 1.0), 1.0)
    se = np.sqrt(se2)
    half = _t_quantile(0.5 + confidence / 2.0, df) * se
    point = a.mean(axis=-1) - b.mean(axis=-1)
    return Interval(point, point - half, point + half, se, df)


def one_sample_interval(values: npt.ArrayLike, confidence: float = CONFIDENCE) -> Interval:
    """mean(values) with the one-sample t interval (df = n - 1); seeds on the last axis, at least 2."""
    x = np.asarray(values, dtype=np.float64)
    n = x.shape[-1]
    if n < 2:
        raise ValueError(f"a t interval needs at least 2 runs; got {n}")
    se = x.std(axis=-1, ddof=1) / np.sqrt(n)
    df = np.full(np.shape(se), n - 1.0)
    half = _t_quantile(0.5 + confidence / 2.0, df) * se
    point = x.mean(axis=-1)
    return Interval(point, point - half, point + half, se, df)


def one_sided_p(interval: Interval, bound: npt.ArrayLike = 0.0) -> np.ndarray:
    """p-value of H0: difference <= bound against H1: difference > bound (Welch/one-sample t statistic).

    Consistent with the interval: p < alpha exactly when the (1 - 2 alpha) interval's low end is above bound.
    With se = 0 the p-value is 0 when the point is above the bound and 1 otherwise.
    """
    excess = np.asarray(interval.point) - np.asarray(bound)
    se = np.asarray(interval.se)
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.where(se > 0, excess / np.where(se > 0, se, 1.0), np.where(excess > 0, np.inf, -np.inf))
    return np.asarray(_scipy_stats.t.sf(t, interval.df))


# --- decisions: +1 supported (reproduced), -1 contradicted (not reproduced), 0 undecided (inconclusive) ---------


def decide_beats(low: npt.ArrayLike, high: npt.ArrayLike) -> np.ndarray:
    """'better beats worse' on a signed difference (positive = better): low > 0 supports, high <= 0 contradicts."""
    low, high = np.asarray(low), np.asarray(high)
    return np.where(low > 0, SUPPORTED, np.where(high <= 0, CONTRADICTED, UNDECIDED))


def decide_matches(low: npt.ArrayLike, high: npt.ArrayLike, margin: float) -> np.ndarray:
    """Equivalence by two one-sided tests: the interval inside (-margin, +margin) supports; wholly outside contradicts."""
    low, high = np.asarray(low), np.asarray(high)
    inside = (low > -margin) & (high < margin)
    outside = (low >= margin) | (high <= -margin)
    return np.where(inside, SUPPORTED, np.where(outside, CONTRADICTED, UNDECIDED))


def decide_non_inferior(low: npt.ArrayLike, high: npt.ArrayLike, margin: float) -> np.ndarray:
    """'matches or beats' (non-inferiority): low > -margin supports; high < -margin contradicts."""
    low, high = np.asarray(low), np.asarray(high)
    return np.where(low > -margin, SUPPORTED, np.where(high < -margin, CONTRADICTED, UNDECIDED))


def decide_threshold(low: npt.ArrayLike, high: npt.ArrayLike, op: str, bound: float) -> np.ndarray:
    """'value >= bound' (or <=): the whole interval on the claimed side supports; wholly on the other contradicts."""
    low, high = np.asarray(low), np.asarray(high)
    if op == ">=":
        return np.where(low >= bound, SUPPORTED, np.where(high < bound, CONTRADICTED, UNDECIDED))
    if op == "<=":
        return np.where(high <= bound, SUPPORTED, np.where(low > bound, CONTRADICTED, UNDECIDED))
    raise ValueError(f"op must be '>=' or '<='; got {op!r}")


def combine_each(outcomes: npt.ArrayLike) -> np.ndarray:
    """Intersection-union over comparisons (last axis): all supported -> supported; any contradicted -> contradicted.

    Each comparison is tested at level alpha; the intersection-union test of "every one holds" then has
    level alpha without correction (Berger 1982).
    """
    o = np.asarray(outcomes)
    return np.where((o == SUPPORTED).all(axis=-1), SUPPORTED, np.where((o == CONTRADICTED).any(axis=-1), CONTRADICTED, UNDECIDED))


def holm_rejections(p_values: npt.ArrayLike, alpha: float = ALPHA) -> np.ndarray:
    """Number of hypotheses Holm's step-down procedure rejects at family-wise level alpha (last axis).

    Sorted p_(1) <= ... <= p_(m): reject while p_(i) <= alpha / (m - i + 1), stop at the first that fails.
    """
    p = np.sort(np.asarray(p_values, dtype=np.float64), axis=-1)
    m = p.shape[-1]
    passes = p <= alpha / (m - np.arange(m))
    return np.cumprod(passes, axis=-1).sum(axis=-1)


def decide_at_least(
    p_values: npt.ArrayLike, contradicted: npt.ArrayLike, k: int, alpha: float = ALPHA
) -> np.ndarray:
    """'holds on at least k of the n environments' (environments on the last axis).

    Supported when Holm rejects at least k per-environment nulls; contradicted when fewer than k
    environments remain whose interval does not lie wholly on the wrong side; undecided otherwise.
    """
    rejections = holm_rejections(p_values, alpha)
    n = np.asarray(contradicted).shape[-1]
    possible = n - np.asarray(contradicted, dtype=bool).sum(axis=-1)
    return np.where(rejections >= k, SUPPORTED, np.where(possible < k, CONTRADICTED, UNDECIDED))


def binomial_interval(successes: int, trials: int, confidence: float = CONFIDENCE) -> tuple[float, float]:
    """Clopper-Pearson (exact) interval of a success probability from ``successes`` of ``trials``.

    The beta-quantile form (Clopper & Pearson 1934): low = Beta(alpha; x, n - x + 1), high =
    Beta(1 - alpha; x + 1, n - x), with low = 0 at x = 0 and high = 1 at x = n. Its coverage is at least
    ``confidence`` for every true probability (conservative), which the seed counts here need.
    """
    if not 0 <= successes <= trials or trials < 1:
        raise ValueError(f"need 0 <= successes <= trials and trials >= 1; got {successes} of {trials}")
    tail = (1.0 - confidence) / 2.0
    low = 0.0 if successes == 0 else float(_scipy_stats.beta.ppf(tail, successes, trials - successes + 1))
    high = 1.0 if successes == trials else float(_scipy_stats.beta.ppf(1.0 - tail, successes + 1, trials - successes))
    return low, high


# --- power -----------------------------------------------------------------------------------------------------


def seeds_to_detect(sd: float, difference: float, *, equivalence: bool = False) -> int:
    """Seeds per side for 80% power at one-sided alpha = 0.025 (normal approximation), at least 2.

    Difference test: n = 2 (z_{1-alpha} + z_{power})^2 sd^2 / difference^2. Equivalence with a margin
    (``difference`` = margin, true difference 0): n = 2 (z_{1-alpha} + z_{1-(1-power)/2})^2 sd^2 / margin^2.
    """
    if not (np.isfinite(sd) and np.isfinite(difference)) or difference <= 0:
        raise ValueError(f"need a finite spread and a positive difference; got sd={sd}, difference={difference}")
    z_alpha = _scipy_stats.norm.ppf(1.0 - ALPHA)
    z_beta = _scipy_stats.norm.ppf(1.0 - (1.0 - POWER) / 2.0) if equivalence else _scipy_stats.norm.ppf(POWER)
    return max(2, int(np.ceil(2.0 * (z_alpha + z_beta) ** 2 * sd**2 / difference**2)))


def detectable_difference(sd: float, seeds: int) -> float:
    """Smallest true difference that ``seeds`` runs per side detect with 80% power (one-sided alpha = 0.025).

    t-based: (t_{1-alpha, df} + t_{power, df}) * sd * sqrt(2 / n) with df = 2n - 2, the pooled-variance
    degrees of freedom (at n = 2 this is 2.2 times the normal-approximation value, as it should be).
    """
    if seeds < 2:
        return float("inf")
    df = 2 * seeds - 2
    factor = _t_quantile(1.0 - ALPHA, df) + _t_quantile(POWER, df)
    return float(factor * sd * np.sqrt(2.0 / seeds))


def pooled_sd(groups: list[npt.ArrayLike]) -> float:
    """Pooled standard deviation over groups of runs (ddof 1 within each group); NaN if no group has 2 runs."""
    sums, dfs = 0.0, 0
    for group in groups:
        x = np.asarray(group, dtype=np.float64)
        if x.size >= 2:
            sums += float(((x - x.mean()) ** 2).sum())
            dfs += x.size - 1
    return float(np.sqrt(sums / dfs)) if dfs else float("nan")
