"""The calibration suite: error rates of every claim kind by simulation (seeded, vectorised, no training).

Under a null at its least favourable point the false-"reproduced" rate must stay at or below the nominal 0.025
plus three Monte-Carlo standard errors; under an effect of the size the cpu scale must detect, the power must be
at least 0.8. Seed counts 2, 3, 5, 10 (the issue's table) and the cpu scale's 10 and 16 seeds.
"""

from __future__ import annotations

import numpy as np
import pytest

from rlrepro.results import calibration as cal
from rlrepro.results import stats
from rlrepro.results.claims import INCONCLUSIVE, NOT_REPRODUCED, REPRODUCED, judge_claims
from rlrepro.results.collect import CellResult
from rlrepro.specs import validate_spec
from tests.factories import toy_spec_data

NOMINAL = stats.ALPHA
SIMS = 4000
BOUND = cal.monte_carlo_bound(NOMINAL, SIMS)  # 0.025 + 3 * sqrt(0.025 * 0.975 / 4000) = 0.0324
AGGREGATE_SIMS = 300
AGGREGATE_BOUND = cal.monte_carlo_bound(NOMINAL, AGGREGATE_SIMS)  # 0.025 + 3 * 0.0090 = 0.052
NS = cal.SEED_COUNTS
SYMMETRIC = ("normal", "t3", "t2")
SKEWED = ("lognormal", "exponential")


def test_monte_carlo_bound_by_hand() -> None:
    assert BOUND == pytest.approx(0.025 + 3 * np.sqrt(0.025 * 0.975 / 4000))
    assert BOUND == pytest.approx(0.03241, abs=1e-5)


def test_the_issues_table_comes_out_right() -> None:
    """Before: the percentile bootstrap said 'beats' 18/11/7/3% of the time under the null; after: <= 0.025."""
    for n in (2, 3):  # the bug the issue measured, reproduced here with the old function
        old_beats, old_mob = cal.old_bootstrap_rates(n)
        assert old_beats > 0.08 and old_mob > 0.4
    for n in NS:
        assert cal.ordering_rate("beats", n, "normal", 0.0) <= BOUND
        # matches_or_beats now needs a margin; better truly 1 SD worse (beyond a 0.5 SD margin) is never a match
        assert cal.ordering_rate("matches_or_beats", n, "normal", -1.0, margin=0.5) <= BOUND


@pytest.mark.parametrize("shape", cal.SHAPES)
def test_beats_false_reproduced_rate(shape: str) -> None:
    for n in NS:
        assert cal.ordering_rate("beats", n, shape, 0.0, sims=SIMS, seed=n) <= BOUND, (shape, n)


@pytest.mark.parametrize("shape", cal.SHAPES)
def test_matches_false_reproduced_rate_at_the_margin(shape: str) -> None:
    for n in NS:
        for margin in (0.5, 1.0, 2.0):
            rate = cal.ordering_rate("matches", n, shape, margin, margin=margin, sims=SIMS, seed=n)
            assert rate <= BOUND, (shape, n, margin, rate)


@pytest.mark.parametrize("shape", cal.SHAPES)
def test_matches_or_beats_false_reproduced_rate_at_minus_the_margin(shape: str) -> None:
    for n in NS:
        for margin in (0.5, 1.0):
            rate = cal.ordering_rate("matches_or_beats", n, shape, -margin, margin=margin, sims=SIMS, seed=n)
            assert rate <= BOUND, (shape, n, margin, rate)


@pytest.mark.parametrize("shape", cal.SHAPES)
def test_each_over_comparisons_needs_no_correction(shape: str) -> None:
    # least favourable: one comparison null, the others certain
    for n in NS:
        assert cal.each_rate(n, shape, [0.0, 10.0, 10.0], sims=SIMS, seed=n) <= BOUND, (shape, n)


@pytest.mark.parametrize("shape", cal.SHAPES)
def test_at_least_k_of_n_with_holm(shape: str) -> None:
    # 3 of 5 claimed, only 2 true (and certain): a third rejection is a false one, which Holm keeps below alpha
    for n in NS:
        assert cal.at_least_rate(n, shape, [10.0, 10.0, 0.0, 0.0, 0.0], 3, sims=SIMS, seed=n) <= BOUND, (shape, n)
        assert cal.at_least_rate(n, shape, [0.0] * 5, 1, sims=SIMS, seed=n) <= BOUND, (shape, n)


@pytest.mark.parametrize("shape", SYMMETRIC)
@pytest.mark.parametrize("op", [">=", "<="])
def test_threshold_false_reproduced_rate_for_symmetric_spreads(shape: str, op: str) -> None:
    for n in NS:
        assert cal.threshold_rate(n, shape, op, 0.0, sims=SIMS, seed=n) <= BOUND, (shape, op, n)


@pytest.mark.parametrize("shape", SKEWED)
def test_threshold_with_a_skewed_spread_is_calibrated_against_the_short_tail_only(shape: str) -> None:
    """A mean from 2-10 skewed runs: no interval is valid for every skewed shape (Bahadur & Savage 1956).

    Right-skewed runs (a few seeds far above the rest): '>=' stays conservative; '<=' is not (measured 0.08-0.17,
    reported in the closing note), which the verdict's interval cannot fix at n = 2 where the sample has no skew.
    """
    for n in NS:
        assert cal.threshold_rate(n, shape, ">=", 0.0, sims=SIMS, seed=n) <= BOUND, (shape, n)
        assert cal.threshold_rate(n, shape, "<=", 0.0, sims=SIMS, seed=n) <= 0.2, (shape, n)


@pytest.mark.parametrize("aggregate", ["median", "iqm", "mean"])
@pytest.mark.parametrize("shape", ["normal", "lognormal", "t3"])
def test_aggregate_over_environments_false_reproduced_rate(aggregate: str, shape: str) -> None:
    for n in NS:
        rate = cal.aggregate_rate(n, shape, aggregate, 0.0, sims=AGGREGATE_SIMS, reps=300, seed=n)
        assert rate <= AGGREGATE_BOUND, (aggregate, shape, n, rate)


def test_the_uncorrected_bootstrap_would_fail_the_aggregate_suite() -> None:
    """Without the small-sample correction the stratified bootstrap says 'beats' too often at 2-3 runs."""
    from rlrepro.results.aggregation import _percentile_interval, _stratified_resamples, batched_aggregate

    rng = np.random.default_rng(0)
    hits, sims = 0, 300
    for _ in range(sims):
        a, b = rng.standard_normal((2, 5)), rng.standard_normal((2, 5))
        diffs = batched_aggregate("mean", _stratified_resamples(a, 300, rng)) - batched_aggregate(
            "mean", _stratified_resamples(b, 300, rng))
        hits += _percentile_interval(diffs, 0.95)[0] > 0
    assert hits / sims > AGGREGATE_BOUND
    assert cal.aggregate_rate(2, "normal", "mean", 0.0, sims=sims, reps=300) <= AGGREGATE_BOUND


# --- power at the cpu scale's seed counts ------------------------------------------------------------------


@pytest.mark.parametrize(("n", "effect"), [(10, 1.5), (16, 1.5), (16, 1.2)])
def test_power_for_an_effect_the_cpu_scale_must_detect(n: int, effect: float) -> None:
    """frodo/random_walk runs 10 seeds, impala/offpolicy_correction_toy 16: a 1.5 SD gap is found >= 80% of the time."""
    assert cal.ordering_rate("beats", n, "normal", effect, sims=SIMS, seed=1) >= 0.8
    assert stats.detectable_difference(1.0, n) <= effect


def test_power_formula_matches_simulation() -> None:
    # detectable_difference(1, 10) = (t_{0.975,18} + t_{0.8,18}) sqrt(2/10) = (2.1009 + 0.8621) 0.4472 = 1.325
    d = stats.detectable_difference(1.0, 10)
    assert d == pytest.approx((2.1009 + 0.8621) * np.sqrt(0.2), abs=1e-3)
    assert cal.ordering_rate("beats", 10, "normal", d, sims=SIMS, seed=2) == pytest.approx(0.8, abs=0.03)
    # seeds_to_detect(1, 1) = ceil(2 (1.95996 + 0.84162)^2) = ceil(15.70) = 16
    assert stats.seeds_to_detect(1.0, 1.0) == 16


def test_matches_and_non_inferiority_have_power_when_the_truth_is_a_tie() -> None:
    assert cal.ordering_rate("matches_or_beats", 16, "normal", 0.0, margin=1.0, sims=SIMS) >= 0.75
    assert cal.ordering_rate("matches", 16, "normal", 0.0, margin=1.5, sims=SIMS) >= 0.8


# --- the simulation runs the verdicts' own decisions -------------------------------------------------------


def test_judge_claims_agrees_with_the_vectorised_decisions() -> None:
    spec = validate_spec(toy_spec_data(
        variants=[{"name": "a"}, {"name": "b"}],
        scales={"smoke": {"frames": 100, "seeds": 3}, "cpu": {"frames": 200, "seeds": 3}},
        claims=[{"kind": "ordering", "id": "o", "statement": "a beats b", "better": "a", "worse": ["b"],
                 "environments": ["catch"], "judged_at": ["cpu"]}],
    ))
    rng = np.random.default_rng(5)
    a, b = rng.standard_normal((300, 3)), rng.standard_normal((300, 3))  # the null: every outcome occurs
    interval = stats.welch_interval(a, b)
    expected = stats.decide_beats(interval.low, interval.high)
    names = {stats.SUPPORTED: REPRODUCED, stats.CONTRADICTED: NOT_REPRODUCED, stats.UNDECIDED: INCONCLUSIVE}
    for i in range(300):
        cells = {("a", "catch"): CellResult("a", "catch", seeds=[0, 1, 2], final=list(a[i]), frames=[200] * 3),
                 ("b", "catch"): CellResult("b", "catch", seeds=[0, 1, 2], final=list(b[i]), frames=[200] * 3)}
        [verdict] = judge_claims(spec, "cpu", cells)
        assert verdict.verdict == names[int(expected[i])]
    assert {int(x) for x in expected} == {stats.SUPPORTED, stats.UNDECIDED, stats.CONTRADICTED}


def test_welch_interval_covers_at_its_nominal_rate() -> None:
    """Two-sided coverage of the true difference 0 is 95% (normal data, unequal n and spreads)."""
    rng = np.random.default_rng(3)
    interval = stats.welch_interval(rng.normal(0, 1, (SIMS, 3)), rng.normal(0, 3, (SIMS, 5)))
    coverage = np.mean((interval.low < 0) & (interval.high > 0))
    assert coverage == pytest.approx(0.95, abs=0.012)
