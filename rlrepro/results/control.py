"""The control arm's statistics: whether the runs did more than the same agents with their learning switched off.

A claim judged at a scale is judged twice (``rlrepro.results.claims.judge_claims``): on the runs, and on the frozen
arm in their place (``rlrepro.specs.control``). Two rules follow, both measured by
``python -m rlrepro.results.calibration --rl`` (its 'control' rows):

1. **The frozen arm passes it**: the claim reads *uninformative* ("a frozen agent also passes it"), whatever the
   runs show. (For 'matches' and 'matches or beats' this rule would read every pair of untrained agents as a
   match, so it is replaced by rule 2 alone, applied to each variant.)
2. **The runs are not shown beyond the frozen arm**: a claim the runs support is reproduced only when they also
   differ from the frozen arm in the claim's own direction at one-sided 0.025: for 'beats', the difference between
   the variants is larger in the runs than in the frozen arm (a difference-in-differences permutation test; where
   the variants' frozen arms are one agent, equal on every frozen seed, their difference is zero without error and
   the runs' own permutation test is that test: ``same_agent``); for a threshold on a mean, the variant's runs beat
   its frozen runs (the permutation test); for a share of seeds, more runs pass than frozen runs (Fisher's exact
   test); for 'matches' (and an aggregate), every variant's runs beat its frozen runs. A claim whose frozen arm
   passes it is rule 1's; one whose runs pass but are not shown beyond the frozen arm is *inconclusive* (matches:
   *uninformative*, as the trivial-level check reads it), saying what would decide. So a claim whose data a frozen
   agent would give as well reads reproduced at most 0.025 of the time, whatever the seeds' distribution (rule 2
   alone bounds it; rule 1 names the cause where it can).

Claims stated per run over the paper's own best runs (``best_of``) and a run's evaluation games against the trivial
policies (``above_trivial``) get rule 1 only: one run per game cannot be compared with one frozen run.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
from scipy.stats import fisher_exact

from rlrepro.results import stats

#: What rule 2 tests for each kind of claim (Verdict detail and method).
DID_METHOD = ("studentised difference-in-differences permutation test (the runs' difference between the variants "
              "against the frozen arm's; labels permuted within each variant, 4,000 random splits), one-sided 0.025")
BEYOND_METHOD = "permutation test of the runs against the frozen runs, one-sided 0.025"
SHARE_BEYOND_METHOD = "Fisher's exact test of the passing runs against the passing frozen runs, one-sided 0.025"


def did_p(better: npt.ArrayLike, worse: npt.ArrayLike, frozen_better: npt.ArrayLike, frozen_worse: npt.ArrayLike,
          *, seed: int = 0) -> float:
    """One-sided p of 'better - worse in the runs exceeds frozen_better - frozen_worse' (signed: positive = better).

    Under 'learning changed nothing' each variant's runs and frozen runs are exchangeable, so each variant's pooled
    values are split at random into runs and frozen runs (``stats.PERMUTATIONS`` splits, the observed one first):
    p = share of splits whose studentised difference-in-differences is at least the observed one. Exact under that
    null for any distribution; studentised so that it keeps its level when learning moves both variants alike
    (Chung & Romano 2013), where the raw difference, swamped by each variant's own shift, had almost no power at 4
    seeds (V-trace 0.9 v -0.2 against frozen -0.8 v -0.8: p 0.07).
    """
    (ra, fa), (rb, fb) = _split_moments(better, frozen_better, seed), _split_moments(worse, frozen_worse, seed + 1)
    did = (ra[0] - fa[0]) - (rb[0] - fb[0])  # column 0: the observed split
    se = np.sqrt(ra[1] + fa[1] + rb[1] + fb[1])
    t = did / np.maximum(se, 1e-12 * (np.abs(did).max() + 1.0))
    return float(np.mean(t >= t[0] - 1e-9 * (abs(t[0]) + 1.0)))


def _split_moments(runs: npt.ArrayLike, frozen: npt.ArrayLike, seed: int) -> tuple[tuple[np.ndarray, np.ndarray], ...]:
    """For random splits of the pooled values into runs and frozen runs (the observed split first): each side's
    mean and its squared standard error, ((mean, se^2) of runs, (mean, se^2) of frozen runs), arrays over splits."""
    a, b = np.asarray(runs, float), np.asarray(frozen, float)
    splits, _ = stats.permutation_splits(len(a), len(b), seed, exact_limit=0)
    pooled = np.concatenate([a, b])
    sums, squares = pooled @ splits, (pooled**2) @ splits
    sides = []
    for total, total_sq, n, pick in ((sums, squares, len(a), True), (pooled.sum() - sums, (pooled**2).sum() - squares,
                                                                      len(b), False)):
        mean = total / n
        var = np.maximum(total_sq / n - mean**2, 0.0) * n / max(n - 1, 1)
        sides.append((mean, var / n))
    return tuple(sides)


#: Rule 2 for 'beats' where the frozen arms are one agent (``same_agent``).
SAME_AGENT_TEXT = ("the runs' own permutation test where the variants' frozen arms are one agent (equal on every "
                   "frozen seed: they differ only in how they learn, so the design gives no difference)")


def same_agent(better: list[float], worse: list[float], better_seeds: list[int], worse_seeds: list[int]) -> bool:
    """Whether two variants' frozen arms are one agent: the same seeds (at least 2), every value equal. Variants that
    differ only in how they learn (a loss, a correction, a replay ratio) act alike with learning off, so their frozen
    difference is zero on every seed, known without error: rule 2's difference-in-differences would charge the
    runs with the frozen arm's spread between seeds (which cancels within a seed) and lose its power for nothing."""
    if better_seeds != worse_seeds or len(better_seeds) < 2:
        return False
    a, b = np.asarray(better, float), np.asarray(worse, float)
    return bool(np.all(np.isfinite(a)) and np.array_equal(a, b))


def beyond_p(runs: npt.ArrayLike, frozen: npt.ArrayLike) -> float:
    """One-sided p of 'the runs exceed the frozen runs' (signed values), by the exact permutation test."""
    return float(stats.permutation_p(np.asarray(runs, float), np.asarray(frozen, float)))


def share_beyond_p(passing: int, runs: int, frozen_passing: int, frozen_runs: int) -> float:
    """One-sided p of 'a larger share of the runs pass than of the frozen runs' (Fisher's exact test)."""
    table = [[passing, runs - passing], [frozen_passing, frozen_runs - frozen_passing]]
    return float(fisher_exact(table, alternative="greater").pvalue)


def smallest_beyond_p(runs: int, frozen_runs: int) -> float:
    """The smallest p rule 2 can give at these counts (every run above every frozen run; for a share, every run
    passing and no frozen run): the larger of the two tests' floors."""
    return max(stats.smallest_permutation_p(runs, frozen_runs), share_beyond_p(runs, runs, 0, frozen_runs))


def combine(real: int, frozen: int, beyond: float | None, *, matches: bool = False) -> str:
    """The verdict's outcome from the runs' decision, the frozen arm's and rule 2's p (None: not testable):
    'reproduced', 'uninformative', 'inconclusive' (the runs pass, not shown beyond the frozen arm) or 'runs' (the
    runs' own outcome stands: they do not support the claim)."""
    if not matches and frozen == stats.SUPPORTED:
        return "uninformative"
    if real != stats.SUPPORTED:
        return "runs"
    if beyond is None or beyond <= stats.ALPHA:
        return "reproduced"
    return "uninformative" if matches else "inconclusive"
