"""Small-sample statistics behind the claim verdicts (2 to 16 seeds per side), valid on the data RL produces.

Every function is vectorised over leading axes (the last axis holds the seeds), so the calibration suite
(``rlrepro.results.calibration``) runs the same code on thousands of simulated experiments at once.

RL's seeds are not normal: some collapse to the floor, some learn and some do not (bimodal), agents that learn
nothing sit together at the random level, and a small sample often has no spread at all. Welch's t interval,
the bootstrap and rank tests all over-state certainty on such data at n <= 16 (Colas, Sigaud & Oudeyer 2019,
"A Hitchhiker's Guide to Statistical Comparisons of RL Algorithms"; issue #25 measured 0.79 false "reproduced"
for a threshold at n = 2 with 10% collapsed seeds). The choices, each measured by simulation over those shapes
(``tests/results/test_calibration.py``):

- **beats** (a difference of two variants; also per environment for "at least k of m" and on an aggregate):
  the exact two-sample permutation test of the difference of means (Fisher 1935; Pitman 1937), one-sided at
  ``alpha = 0.025``. Under "the variant changes nothing" (both samples from one distribution) its p-value is
  exact for ANY distribution, bounded or not, with or without spread; it needs no range. Every split is
  enumerated up to ``EXACT_SPLITS`` splits (8 v 8), above that ``PERMUTATIONS`` random splits plus the observed
  one give a valid p-value (p = (1 + #{as extreme}) / (1 + B)). Its smallest p-value is 1 / C(n_a + n_b, n_a):
  1/6 at 2 v 2 and 1/20 at 3 v 3, above 0.025, so "beats" refuses n < 4 per side (inconclusive, saying that
  4 seeds per side is the least that can decide it). Not reproduced needs the reverse test at 0.025.
- **a bounded mean against a threshold** (the metric has a declared range: ``return_range`` for returns, a
  claim's ``metric_range`` for e.g. success rates): Anderson's (1969) bound. The one-sided Kolmogorov-Smirnov
  band F <= F_n + d (d the exact one-sided KS quantile, ``scipy.stats.ksone``; conservative for discrete data)
  gives mean >= low + sum_i (x_(i+1) - x_(i)) max(0, 1 - i/n - d): valid for every distribution on the range,
  and never of zero width (all seeds at c gives [low + (c - low)(1 - d), c + (high - c) d]). It is wide at
  small n (d = 0.84 at n = 2, 0.33 at n = 16): honest, because a mass of collapsed seeds that a small sample
  missed can hold the mean below the bound (all 16 seeds at 1 leave a 10% collapse at 0 possible: 0.9^16 = 0.19).
- **matches / matches_or_beats on a bounded metric**: the difference of two Anderson bounds, each side at
  alpha / 2 (Bonferroni), so each end of the interval holds at 0.025 for any distributions on the range;
  equivalence by two one-sided tests (Schuirmann 1987). With a trivial level (``rlrepro.results.trivial``)
  both variants must also be shown above it by the claim's margin, else the claim is uninformative.
- **no range** (an unbounded metric): a threshold on a mean and a matches / matches_or_beats are never decided.
  Welch's t interval (Satterthwaite df) and the one-sample t interval are shown for reference; under seeds that
  partly collapse they read such claims as reproduced up to 0.47 and 0.66 of the time (``calibration --rl``, rows
  '(no range)'). A sample whose interval has zero width (no spread) is never read as certain: it is inconclusive.
- **at least k of m** counts Holm's rejections (Holm 1979) of the per-environment permutation p-values:
  Holm controls the family-wise error, so its count is a valid lower bound on the number of true effects.
- **each**: intersection-union over comparisons, each at 0.025 (Berger 1982).
- **a run's policy above a trivial policy** (``above_trivial``: one run, a handful of evaluation games): the same
  permutation test on games instead of seeds, the run's games against the trivial policy's games under the same
  protocol (e.g. 3 v 30: smallest p 1/5,456). Every (run, trivial policy) pair must hold (intersection-union).
  Never "not reproduced": a handful of games cannot rule out a policy that plays some of its games well.
- **an aggregate over environments** (beats): the permutation test of the aggregate's difference, permuting
  whole runs (a run's row of scores over the environments) between the variants: exact for any aggregate and
  any distribution under "the variant changes nothing". Matches / matches_or_beats on an aggregate keep the
  stratified bootstrap and say that it is asymptotic.
- **shared seeds** (variants run seeds 0..n-1 alike): not paired. A paired sign-flip test is exact only under
  the sharp null (the pair exchangeable), its smallest p-value is 1 / 2^n (1/16 at n = 4, against 1/70 for
  the two-sample test), and runs of different losses share only the first environment states and initial
  weights: their correlation after training is small, so pairing costs resolution at the n used here and gains
  little. The two-sample test treats the variants' runs as independent; a shared seed can only correlate them
  positively if at all (same initial states and weights), which makes it conservative, never anti-conservative.
- **power** is stated for the test used: "if the observed gap and spread were the truth" (normal seeds), by a
  seeded simulation of the permutation test (``permutation_power``), or from the noncentral t with Welch's
  df for Welch's interval (``welch_power``); before a run from a claim's ``expected_sd``. Both are checked by
  simulation at n = 2..5.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache

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
    low, high = _clopper_pearson(np.asarray(successes), trials, (1.0 - confidence) / 2.0)
    return float(low), float(high)


def _clopper_pearson(successes: np.ndarray, trials: int, tail: float) -> tuple[np.ndarray, np.ndarray]:
    """``binomial_interval``'s ends for an array of success counts, each end at one-sided level ``tail``."""
    x = successes
    low = np.where(x == 0, 0.0, _scipy_stats.beta.ppf(tail, np.maximum(x, 1), trials - x + 1))
    high = np.where(x == trials, 1.0, _scipy_stats.beta.ppf(1.0 - tail, x + 1, np.maximum(trials - x, 1)))
    return low, high


def decide_share(passing: npt.ArrayLike, trials: int, share: float) -> np.ndarray:
    """'More than ``share`` of the seeds pass': supported when the one-sided 0.025 Clopper-Pearson lower bound of
    the passing share exceeds ``share``, contradicted when the upper bound is below it (exact: P(supported) <=
    0.025 whenever the true share is at most ``share``, for any distribution of the metric)."""
    low, high = _clopper_pearson(np.asarray(passing), trials, ALPHA)
    return np.where(low > share, SUPPORTED, np.where(high < share, CONTRADICTED, UNDECIDED))


# --- distribution-free tests and bounds (issue #25) --------------------------------------------------------------

#: Differences of means within this share of the values' scale are ties: runs log float32 metrics, and two agents that
#: compute the same quantity by another path (a frozen FRODO's and a frozen TD(lambda)'s value error from the same zero
#: table: 1.8e-7 apart in every seed) differ by rounding alone, which a permutation test would read as an ordering.
TIE = 1e-5
EXACT_SPLITS = 13_000  # enumerate every split up to C(16, 8) = 12,870 (8 v 8); random splits above
PERMUTATIONS = 4000  # random splits (plus the observed one) above EXACT_SPLITS
AGGREGATE_SPLITS = 1000  # an aggregate is recomputed per split: exact up to C(12, 6) = 924, else 999 random
_CHUNK = 4_000_000  # floats per block of the vectorised permutation sums (memory)


def permutation_splits(
    n_a: int, n_b: int, seed: int = 0, *, exact_limit: int = EXACT_SPLITS, draws: int = PERMUTATIONS
) -> tuple[np.ndarray, bool]:
    """(n_a + n_b, splits) 0/1 matrix of which pooled runs go to the first group, and whether it is exact.

    Exact: every split (the observed one among them). Random: the observed split first, then ``PERMUTATIONS``
    uniformly random splits (seeded, so a verdict is reproducible).
    """
    from itertools import combinations  # noqa: PLC0415 -- only here
    from math import comb  # noqa: PLC0415

    total = n_a + n_b
    if comb(total, n_a) <= exact_limit:
        columns = list(combinations(range(total), n_a))
        matrix = np.zeros((total, len(columns)))
        for j, chosen in enumerate(columns):
            matrix[list(chosen), j] = 1.0
        return matrix, True
    rng = np.random.default_rng(seed)
    order = np.argsort(rng.random((draws, total)), axis=1)[:, :n_a]
    matrix = np.zeros((total, draws + 1))
    matrix[:n_a, 0] = 1.0
    np.put_along_axis(matrix[:, 1:].T, order, 1.0, axis=1)
    return matrix, False


def smallest_permutation_p(n_a: int, n_b: int) -> float:
    """The smallest one-sided p-value the permutation test can give at n_a v n_b runs: 1 / C(n_a + n_b, n_a)."""
    from math import comb  # noqa: PLC0415

    return max(1.0 / comb(n_a + n_b, n_a), 1.0 / (PERMUTATIONS + 1) if comb(n_a + n_b, n_a) > EXACT_SPLITS else 0.0)


def permutation_text(n_a: int, n_b: int, *, exact_limit: int = EXACT_SPLITS, draws: int = PERMUTATIONS) -> str:
    """How the permutation test computes its p at n_a v n_b runs, for a verdict's method: "exact: all 70 splits,
    smallest p 0.0143" when it enumerates every split (``permutation_splits``), else "Monte Carlo: 4,000 random
    splits and the observed one, p-value floor 1/4,001 = 0.00025" (valid at its level, not exact)."""
    from math import comb  # noqa: PLC0415

    splits = comb(n_a + n_b, n_a)
    if splits <= exact_limit:
        return f"exact: all {splits:,} splits of {n_a} v {n_b} runs, smallest p {1 / splits:.3g}"
    return (f"Monte Carlo: {draws:,} random splits of {n_a} v {n_b} runs and the observed one, p-value floor "
            f"1/{draws + 1:,} = {1 / (draws + 1):.2g} (valid at its level; not exact)")


def fewest_seeds_for_permutation(alpha: float = ALPHA) -> int:
    """The fewest runs per side (equal sides) at which the permutation test can reach ``alpha``: 4 at 0.025."""
    n = 1
    while smallest_permutation_p(n, n) > alpha:
        n += 1
    return n


def permutation_p(better: npt.ArrayLike, worse: npt.ArrayLike) -> np.ndarray:
    """One-sided p-value of 'mean(better) > mean(worse)' by the two-sample permutation test (seeds on the last axis).

    p = share of splits of the pooled runs whose difference of means is at least the observed one (exact over
    every split up to 8 v 8; else (1 + #) / (1 + B) over B random splits). Exact under "both samples from one
    distribution", for any distribution (Fisher 1935, Pitman 1937).
    """
    a, b = np.asarray(better, dtype=np.float64), np.asarray(worse, dtype=np.float64)
    n_a, n_b = a.shape[-1], b.shape[-1]
    batch = np.broadcast_shapes(a.shape[:-1], b.shape[:-1])
    pooled = np.concatenate([np.broadcast_to(a, (*batch, n_a)), np.broadcast_to(b, (*batch, n_b))], axis=-1)
    flat = pooled.reshape(-1, n_a + n_b)
    matrix, exact = permutation_splits(n_a, n_b)
    observed = a.mean(axis=-1) - b.mean(axis=-1)
    observed = np.broadcast_to(observed, batch).reshape(-1)
    totals = flat.sum(axis=-1)
    scale = np.abs(flat).max(axis=-1) + 1.0
    p = np.empty(flat.shape[0])
    step = max(1, _CHUNK // matrix.shape[1])
    for start in range(0, flat.shape[0], step):
        block = slice(start, start + step)
        sums = flat[block] @ matrix
        diffs = sums / n_a - (totals[block, None] - sums) / n_b
        extreme = diffs >= observed[block, None] - TIE * scale[block, None]  # ties count as extreme
        p[block] = extreme.mean(axis=-1) if exact else extreme.sum(axis=-1) / matrix.shape[1]
    return p.reshape(batch)


def anderson_lower(values: npt.ArrayLike, low: float, high: float, alpha: float = ALPHA) -> np.ndarray:
    """Lower confidence bound (level 1 - alpha) of the mean of a variable within [low, high] (seeds on the last axis).

    Anderson (1969): with d the exact one-sided Kolmogorov-Smirnov quantile, F(t) <= F_n(t) + d for all t with
    probability >= 1 - alpha, so mean = low + integral (1 - F) >= low + sum_{i=0}^{n-1} (x_(i+1) - x_(i))
    max(0, 1 - i/n - d), x_(0) = low. Valid for every distribution on [low, high].
    """
    x = np.clip(np.sort(np.asarray(values, dtype=np.float64), axis=-1), low, high)
    n = x.shape[-1]
    d = float(_scipy_stats.ksone.isf(alpha, n))
    steps = np.diff(np.concatenate([np.full((*x.shape[:-1], 1), low), x], axis=-1), axis=-1)
    weights = np.maximum(0.0, 1.0 - np.arange(n) / n - d)
    return low + (steps * weights).sum(axis=-1)


def anderson_upper(values: npt.ArrayLike, low: float, high: float, alpha: float = ALPHA) -> np.ndarray:
    """Upper confidence bound (level 1 - alpha) of the mean of a variable within [low, high]: Anderson on -x."""
    return -anderson_lower(-np.asarray(values, dtype=np.float64), -high, -low, alpha)


def bounded_difference_interval(
    better: npt.ArrayLike, worse: npt.ArrayLike, low: float, high: float, alpha: float = ALPHA
) -> Interval:
    """mean(better) - mean(worse) with ends each valid at ``alpha`` for any distributions on [low, high].

    low end = L_better(alpha/2) - U_worse(alpha/2), high end = U_better(alpha/2) - L_worse(alpha/2) (Anderson
    bounds, Bonferroni over the two sides). ``se`` and ``df`` are NaN (no t statistic).
    """
    a, b = np.asarray(better, dtype=np.float64), np.asarray(worse, dtype=np.float64)
    point = a.mean(axis=-1) - b.mean(axis=-1)
    lo = anderson_lower(a, low, high, alpha / 2) - anderson_upper(b, low, high, alpha / 2)
    hi = anderson_upper(a, low, high, alpha / 2) - anderson_lower(b, low, high, alpha / 2)
    nan = np.full(np.shape(point), np.nan)
    return Interval(point, lo, hi, nan, nan)


def bounded_mean_interval(values: npt.ArrayLike, low: float, high: float, alpha: float = ALPHA) -> Interval:
    """mean(values) with Anderson's lower and upper bounds, each at ``alpha`` (a two-sided 1 - 2 alpha interval)."""
    x = np.asarray(values, dtype=np.float64)
    point = x.mean(axis=-1)
    nan = np.full(np.shape(point), np.nan)
    return Interval(point, anderson_lower(x, low, high, alpha), anderson_upper(x, low, high, alpha), nan, nan)


def spread_like(values: npt.ArrayLike, n: int) -> np.ndarray:
    """``n`` seeds spread like ``values``: their empirical distribution's quantiles at (i + 0.5) / n."""
    return np.quantile(np.sort(np.asarray(values, dtype=np.float64)), (np.arange(n) + 0.5) / n, method="inverted_cdf")


def _fewest_seeds(decides: Callable[[int], bool], start: int, most: int) -> int | None:
    """Fewest n in (start, most] with ``decides(n)`` (which only becomes true as n grows, up to the grid's rounding);
    None when even ``most`` does not."""
    if not decides(most):
        return None
    small, large = start, most
    while large - small > 1:
        middle = (small + large) // 2
        small, large = (small, middle) if decides(middle) else (middle, large)
    return large


def seeds_for_bounded_threshold(values: npt.ArrayLike, low: float, high: float, op: str, bound: float, most: int = 256) -> int | None:
    """Fewest seeds whose sample, spread like ``values`` (its empirical distribution), would put Anderson's bound on
    the claimed side of ``bound``; None when even ``most`` would not (the observed mean is on the wrong side)."""

    def decides(n: int) -> bool:
        grid = spread_like(values, n)
        if op == ">=":
            return bool(anderson_lower(grid, low, high) >= bound)
        return bool(anderson_upper(grid, low, high) <= bound)

    return _fewest_seeds(decides, np.size(values) - 1, most)


def seeds_for_bounded_ordering(
    relation: str, better: npt.ArrayLike, worse: npt.ArrayLike, margin: float, bounds: tuple[float, float],
    most: int = 256,
) -> int | None:
    """Fewest seeds per side whose samples, each spread like the observed one, would show a matches /
    matches_or_beats comparison (signed: positive = better is better) by its distribution-free interval
    (``decide_ordering``); None when even ``most`` would not (the observed difference too near the margin, or
    beyond it)."""

    def decides(n: int) -> bool:
        code = decide_ordering(relation, spread_like(better, n), spread_like(worse, n), margin, bounds)
        return bool(code == SUPPORTED)

    return _fewest_seeds(decides, max(np.size(better), np.size(worse)) - 1, most)


def zero_width(interval: Interval) -> np.ndarray:
    """True where an interval has no width (a sample with no spread): never read as certainty."""
    return np.asarray(interval.high) - np.asarray(interval.low) <= 0


# --- decisions shared by the verdicts and the calibration suite ---------------------------------------------------


def decide_beats_permutation(better: npt.ArrayLike, worse: npt.ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    """'better beats worse' by the permutation test: (outcome code, one-sided p of the claim).

    Supported when p <= alpha; contradicted when the reverse test (worse beats better) has p <= alpha.
    """
    p = permutation_p(better, worse)
    reverse = permutation_p(worse, better)
    return np.where(p <= ALPHA, SUPPORTED, np.where(reverse <= ALPHA, CONTRADICTED, UNDECIDED)), p


#: The ratio of two variants' log10 SDs from which a by-factor verdict says its test is not exact there.
SPREAD_WARNING = 2.0


def decide_beats_by_factor(better: npt.ArrayLike, worse: npt.ArrayLike, factor: float) -> tuple[np.ndarray, np.ndarray]:
    """'better beats worse by at least ``factor``' from signed log10 values (positive = better is better): (outcome
    code, one-sided p of the claim).

    The permutation test of better - log10(factor) against worse: supported when p <= alpha, contradicted when the
    reverse test (the advantage is below the factor) has p <= alpha. Exact when the log10 values of the two differ by
    a shift: measured at exactly the factor (``calibration.factor_rate``, 2000 experiments per cell, n = 4-10 per
    side) 0.012-0.030 over the five shapes. Not when the spreads differ: with the worse variant's log10 values three
    times as spread, 0.02-0.04 on symmetric shapes but up to 0.15 on skewed ones (lognormal; exponential 0.11).
    Studentising the statistic (Welch's t per split) does not help: measured, the same rates to three decimals at
    4, 6 and 10 seeds a side on all five shapes (with equal seed counts it orders the splits almost as the difference
    does); Welch's t-test and the bootstrap-t read 0.12 (lognormal) and 0.06-0.09 (exponential) alike. No test of a
    difference of means holds its level over every skewed shape at a fixed seed count (Bahadur and Savage 1956), so
    a verdict shows the two spreads where they differ (``SPREAD_WARNING``) and its method states the limit.
    """
    return decide_beats_permutation(np.asarray(better, np.float64) - np.log10(factor), worse)


def decide_games_above_trivial(games: npt.ArrayLike, trivial: npt.ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    """'A trained policy plays better than a trivial one' from the games each played (games on the last axis):
    (outcome code, one-sided p).

    Supported when the permutation test of the policy's games against the trivial policy's has p <= alpha: exact for
    any distribution of scores under "the policy plays like the trivial one". Never contradicted: a policy that plays
    a share of its games well passes a handful of games unseen (one game in five: a reverse test against the trivial
    level plus a gain reads "no gain" 0.07 to 0.49 of the time at 3 games; ``calibration.games_table``).
    """
    p = permutation_p(np.asarray(games, dtype=np.float64), np.asarray(trivial, dtype=np.float64))
    return np.where(p <= ALPHA, SUPPORTED, UNDECIDED), p


def ordering_interval(better: npt.ArrayLike, worse: npt.ArrayLike, bounds: tuple[float, float] | None) -> Interval:
    """The interval of a matches / matches_or_beats claim: distribution-free with a range, else Welch's (which is
    shown for reference and decides nothing: ``decide_ordering``)."""
    if bounds is not None:
        return bounded_difference_interval(better, worse, *bounds)
    return welch_interval(better, worse)


def decide_ordering(
    relation: str, better: npt.ArrayLike, worse: npt.ArrayLike, margin: float | None, bounds: tuple[float, float] | None
) -> np.ndarray:
    """Outcome codes of one comparison (signed: positive = better is better), as the verdicts decide it.

    matches / matches_or_beats on a metric with no declared range are undecided whatever the seeds show (Welch's
    interval, returned by ``ordering_interval`` for reference, read RL's collapse shapes at the margin as reproduced
    up to 0.47 of the time, and a shifted permutation test up to 0.40: ``python -m rlrepro.results.calibration
    --rl``, rows '(no range)').
    """
    if relation == "beats":
        return decide_beats_permutation(better, worse)[0]
    if relation not in ("matches", "matches_or_beats"):
        raise ValueError(f"unknown relation {relation!r}")
    interval = ordering_interval(better, worse, bounds)
    if bounds is None:
        return np.full(np.shape(interval.point), UNDECIDED)
    if relation == "matches":
        code = decide_matches(interval.low, interval.high, margin)
    else:
        code = decide_non_inferior(interval.low, interval.high, margin)
    return np.where(zero_width(interval), UNDECIDED, code)


def above_trivial(values: npt.ArrayLike, level: float, margin: float, bounds: tuple[float, float] | None) -> np.ndarray:
    """Whether a variant's mean is shown above a trivial policy's level by ``margin`` (one-sided at alpha).

    Anderson's lower bound with a range; else the one-sample t bound (zero width never counts).
    """
    x = np.asarray(values, dtype=np.float64)
    if bounds is not None:
        return anderson_lower(x, *bounds) > level + margin
    interval = one_sample_interval(x)
    return (np.asarray(interval.low) > level + margin) & ~zero_width(interval)


def decide_threshold_values(values: npt.ArrayLike, op: str, bound: float, bounds: tuple[float, float] | None) -> tuple[np.ndarray, Interval]:
    """A threshold on a mean over seeds, decided by Anderson's bounds on the metric's range ``bounds``.

    With no range it is undecided whatever the seeds show; the t interval returned is descriptive only. A mean over
    a few seeds has no bound without a range: seeds that partly collapse (a tail no sample of 2-16 need show) break
    the t interval's normality, which read such a claim at its bound as reproduced up to 0.66 of the time
    (``python -m rlrepro.results.calibration --rl``, rows '(no range)'; before this rule: collapse 0.1, n = 4).
    """
    x = np.asarray(values, dtype=np.float64)
    if bounds is None:
        interval = one_sample_interval(x)
        return np.full(np.shape(interval.point), UNDECIDED), interval
    interval = bounded_mean_interval(x, *bounds)
    return decide_threshold(interval.low, interval.high, op, bound), interval


def aggregate_permutation_p(better: np.ndarray, worse: np.ndarray, aggregate: str) -> np.ndarray:
    """One-sided p of 'aggregate(better) > aggregate(worse)', permuting whole runs (rows) between the variants.

    better, worse: (..., runs, envs) normalised scores. Exact over every split up to EXACT_SPLITS, else random.
    """
    from rlrepro.results.aggregation import batched_aggregate  # noqa: PLC0415 -- aggregation imports stats

    a, b = np.asarray(better, dtype=np.float64), np.asarray(worse, dtype=np.float64)
    n_a, n_b = a.shape[-2], b.shape[-2]
    pooled = np.concatenate([a, b], axis=-2)
    matrix, exact = permutation_splits(n_a, n_b, exact_limit=AGGREGATE_SPLITS, draws=AGGREGATE_SPLITS - 1)
    masks = matrix.T.astype(bool)  # (splits, runs)
    order = np.argsort(~masks, axis=1, kind="stable")  # first n_a: the first group's runs
    observed = batched_aggregate(aggregate, a) - batched_aggregate(aggregate, b)
    count = np.zeros(np.shape(observed))
    for split in order:
        x = pooled[..., split, :]
        diff = batched_aggregate(aggregate, x[..., :n_a, :]) - batched_aggregate(aggregate, x[..., n_a:, :])
        count += diff >= observed - TIE * (np.abs(observed) + 1.0)
    return count / len(order)


# --- power -----------------------------------------------------------------------------------------------------


def welch_power(gap: float, sd_better: float, sd_worse: float, n_better: int, n_worse: int) -> float:
    """Power of Welch's one-sided test at alpha if the gap and spreads were the truth (normal seeds).

    Noncentral t: se = sqrt(s_a^2/n_a + s_b^2/n_b), Welch-Satterthwaite df, ncp = gap / se, power =
    P(T_{df, ncp} > t_{1-alpha, df}). At 5 runs or fewer a side the df the test uses varies so much from sample to
    sample that this is optimistic (0.23 against 0.18 simulated at 2 v 2, a 2 SD gap, SDs 1 and 0.5): there the
    power is a seeded simulation of Welch's test itself (4000 experiments).
    """
    if min(n_better, n_worse) <= 5:
        rng = np.random.default_rng(0)
        a = rng.normal(gap, sd_better, (4000, n_better))
        b = rng.normal(0.0, sd_worse, (4000, n_worse))
        return float(np.mean(welch_interval(a, b).low > 0))
    va, vb = sd_better**2 / n_better, sd_worse**2 / n_worse
    se = float(np.sqrt(va + vb))
    if se == 0:
        return float("nan")
    df = (va + vb) ** 2 / (va**2 / (n_better - 1) + vb**2 / (n_worse - 1))
    return float(_scipy_stats.nct.sf(_t_quantile(1.0 - ALPHA, df), df, gap / se))


@lru_cache(maxsize=4096)
def beats_power(effect: float, seeds: int, *, sims: int = 2000, seed: int = 0) -> float:
    """Power of the 'beats' verdict (the permutation test) for normal seeds, ``effect`` = gap / SD, n per side.

    0 where the test cannot reach alpha (n < 4); a seeded simulation of the exact test up to 5 per side; above,
    Welch's noncentral t (the permutation test of normal data has the t-test's power there).
    """
    if smallest_permutation_p(seeds, seeds) > ALPHA:
        return 0.0
    if seeds > 5:
        return welch_power(effect, 1.0, 1.0, seeds, seeds)
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((sims, seeds)) + effect
    b = rng.standard_normal((sims, seeds))
    return float(np.mean(permutation_p(a, b) <= ALPHA))


def seeds_to_detect(sd: float, difference: float, *, most: int = 200) -> int:
    """Seeds per side for 80% power of 'beats' if ``difference`` and ``sd`` were the truth (normal seeds): the
    permutation test's power (``beats_power``), so never below 4. Returns ``most`` + 1 when even ``most`` is not
    enough."""
    if not (np.isfinite(sd) and np.isfinite(difference)) or difference <= 0 or sd <= 0:
        raise ValueError(f"need a finite positive spread and difference; got sd={sd}, difference={difference}")

    def power(n: int) -> float:
        if n <= 5:  # simulated: cached, effects to 0.01 SD
            return beats_power(round(difference / sd, 2), n, sims=1000)
        return beats_power(difference / sd, n)

    for n in range(2, 6):  # the simulated, discrete range: power need not grow smoothly
        if power(n) >= POWER:
            return n
    if power(most) < POWER:
        return most + 1
    small, large = 5, most  # above 5 the power grows with n: bisection
    while large - small > 1:
        middle = (small + large) // 2
        small, large = (small, middle) if power(middle) >= POWER else (middle, large)
    return large


def one_sample_seeds(sd: float, gap: float, most: int = 200) -> int:
    """Seeds for 80% power of the one-sample t bound against a threshold ``gap`` away (noncentral t, df n - 1)."""
    for n in range(2, most + 1):
        ncp = gap / (sd / np.sqrt(n))
        if float(_scipy_stats.nct.sf(_t_quantile(1.0 - ALPHA, n - 1), n - 1, ncp)) >= POWER:
            return n
    return most + 1


def detectable_difference(sd: float, seeds: int) -> float:
    """Smallest true difference the 'beats' test detects with 80% power at ``seeds`` per side (normal seeds).

    inf where the permutation test cannot reach alpha (fewer than 4 seeds per side); else sd times the effect
    found by bisection on ``beats_power`` (seeded, so monotone in the effect).
    """
    if smallest_permutation_p(seeds, seeds) > ALPHA:
        return float("inf")
    return float(sd * _detectable_effect(seeds))


def _detectable_effect(seeds: int) -> float:
    if seeds not in _EFFECTS:
        low, high = 0.0, 20.0
        for _ in range(18):
            middle = (low + high) / 2.0
            low, high = (low, middle) if beats_power(middle, seeds, sims=1000) >= POWER else (middle, high)
        _EFFECTS[seeds] = high
    return _EFFECTS[seeds]


_EFFECTS: dict[int, float] = {}


def pooled_sd(groups: list[npt.ArrayLike]) -> float:
    """Pooled standard deviation over groups of runs (ddof 1 within each group); NaN if no group has 2 runs."""
    sums, dfs = 0.0, 0
    for group in groups:
        x = np.asarray(group, dtype=np.float64)
        if x.size >= 2:
            sums += float(((x - x.mean()) ** 2).sum())
            dfs += x.size - 1
    return float(np.sqrt(sums / dfs)) if dfs else float("nan")
