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
from rlrepro.results.claims import INCONCLUSIVE, NOT_REPRODUCED, REPRODUCED, UNINFORMATIVE, judge_claims
from rlrepro.results.collect import CellResult
from rlrepro.specs import validate_spec
from tests.factories import toy_spec_data

NOMINAL = stats.ALPHA
SIMS = 4000
BOUND = cal.monte_carlo_bound(NOMINAL, SIMS)  # 0.025 + 3 * sqrt(0.025 * 0.975 / 4000) = 0.0324
AGGREGATE_SIMS = 300
AGGREGATE_BOUND = cal.monte_carlo_bound(NOMINAL, AGGREGATE_SIMS)  # 0.025 + 3 * 0.0090 = 0.052
NS = cal.SEED_COUNTS
RL_SIMS = 1000
RL_BOUND = cal.monte_carlo_bound(NOMINAL, RL_SIMS)  # 0.025 + 3 * sqrt(0.025 * 0.975 / 1000) = 0.0398
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
        assert cal.ordering_rate("beats", n, shape, 0.0, sims=2000, seed=n) <= cal.monte_carlo_bound(NOMINAL, 2000), (shape, n)


@pytest.mark.parametrize("shape", cal.SHAPES)
def test_matches_with_no_range_is_never_decided(shape: str) -> None:
    """Unbounded seeds (no range): not even an exact tie at 16 seeds, where Welch's interval had power >= 0.75,
    nor a true gap of twice the margin (Welch's 'not reproduced') is decided: RL's collapse shapes broke it."""
    for relation in ("matches", "matches_or_beats"):
        for n in (2, 16):
            a, b = cal._pair(np.random.default_rng(n), shape, n, 400, 0.0)
            for shift in (0.0, -2.0):
                codes = stats.decide_ordering(relation, a + shift, b, 1.0, None)
                assert np.all(codes == stats.UNDECIDED), (relation, shape, n, shift)


@pytest.mark.parametrize("shape", cal.SHAPES)
def test_each_over_comparisons_needs_no_correction(shape: str) -> None:
    # least favourable: one comparison null, the others certain
    for n in NS:
        assert cal.each_rate(n, shape, [0.0, 10.0, 10.0], sims=SIMS, seed=n) <= BOUND, (shape, n)


@pytest.mark.parametrize("shape", cal.SHAPES)
def test_at_least_k_of_n_with_holm(shape: str) -> None:
    # 3 of 5 claimed, only 2 true (and certain): a third rejection is a false one, which Holm keeps below alpha
    for n in NS:
        assert cal.at_least_rate(n, shape, [10.0, 10.0, 0.0, 0.0, 0.0], 3, sims=1000, seed=n) <= RL_BOUND, (shape, n)
        assert cal.at_least_rate(n, shape, [0.0] * 5, 1, sims=1000, seed=n) <= RL_BOUND, (shape, n)


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
    """'beats' on an aggregate: whole runs permuted between the variants (the verdict's test)."""
    for n in NS:
        rate = cal.aggregate_permutation_rate(n, shape, aggregate, 0.0, sims=200, seed=n)
        assert rate <= cal.monte_carlo_bound(NOMINAL, 200), (aggregate, shape, n, rate)


@pytest.mark.parametrize("aggregate", ["median", "mean"])
def test_the_bootstrap_kept_for_matches_on_aggregates_stays_calibrated(aggregate: str) -> None:
    for n in NS:
        rate = cal.aggregate_rate(n, "normal", aggregate, 0.0, sims=AGGREGATE_SIMS, reps=300, seed=n)
        assert rate <= AGGREGATE_BOUND, (aggregate, n, rate)


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
    # above 5 seeds: Welch's noncentral t; at 10 v 10 with equal SDs, df = 18 and (t_{0.975,18} + t_{0.8,18})
    # sqrt(2/10) = (2.1009 + 0.8621) 0.4472 = 1.325 is the textbook approximation of the 80%-power gap
    d = stats.detectable_difference(1.0, 10)
    assert d == pytest.approx((2.1009 + 0.8621) * np.sqrt(0.2), abs=0.01)
    assert cal.ordering_rate("beats", 10, "normal", d, sims=2000, seed=2) == pytest.approx(0.8, abs=0.035)
    assert stats.seeds_to_detect(1.0, 1.0) == 17  # the normal approximation said 16; Welch's df needs one more


def test_power_at_two_to_five_seeds_is_the_permutation_tests() -> None:
    """Power is stated for the test used, checked at n = 2..5 (issue #25 found the old statements optimistic)."""
    from scipy import integrate
    from scipy.stats import norm

    assert stats.beats_power(5.0, 2) == stats.beats_power(5.0, 3) == 0.0  # 1/6 and 1/20 never reach 0.025
    # at 4 v 4 only the most extreme split has p = 1/70 <= 0.025 (2/70 = 0.029 does not): power = P(min a > max b)
    # = integral of (1 - Phi(x - d))^4 * 4 phi(x) Phi(x)^3 dx
    for effect in (1.5, 2.85):
        exact, _ = integrate.quad(lambda x: (1 - norm.cdf(x - effect)) ** 4 * 4 * norm.pdf(x) * norm.cdf(x) ** 3, -10, 15)
        assert stats.beats_power(effect, 4) == pytest.approx(exact, abs=0.03)
    assert stats.beats_power(1.5, 5) == pytest.approx(cal.ordering_rate("beats", 5, "normal", 1.5, sims=4000, seed=9), abs=0.035)
    # Welch's noncentral t against a simulation of Welch's test (unequal spreads): n = 2..5
    rng = np.random.default_rng(4)
    for n in (2, 3, 4, 5):
        a, b = rng.normal(2.0, 1.0, (SIMS, n)), rng.normal(0.0, 0.5, (SIMS, n))
        simulated = np.mean(stats.welch_interval(a, b).low > 0)
        assert stats.welch_power(2.0, 1.0, 0.5, n, n) == pytest.approx(simulated, abs=0.04), n


def test_matches_and_non_inferiority_have_power_when_the_truth_is_a_tie() -> None:
    """With a range: two agents that both learn (U[0.9, 1] on [0, 1]) match within half the range at 16 seeds and
    within 0.3 at 32; the distribution-free interval is wide at fewer (none decided at 8 within 0.3)."""
    rng = np.random.default_rng(6)
    for n, margin, power in ((16, 0.5, 0.99), (32, 0.3, 0.99), (8, 0.3, 0.0)):
        a, b = rng.uniform(0.9, 1.0, (SIMS, n)), rng.uniform(0.9, 1.0, (SIMS, n))
        for relation in ("matches", "matches_or_beats"):
            rate = np.mean(stats.decide_ordering(relation, a, b, margin, cal.RL_BOUNDS) == stats.SUPPORTED)
            assert rate >= power if power else rate == 0.0, (n, margin, relation, rate)


# --- the simulation runs the verdicts' own decisions -------------------------------------------------------


def test_judge_claims_agrees_with_the_vectorised_decisions() -> None:
    spec = validate_spec(toy_spec_data(
        variants=[{"name": "a"}, {"name": "b"}],
        scales={"smoke": {"frames": 100, "seeds": 5}, "cpu": {"frames": 200, "seeds": 5}},
        claims=[{"kind": "ordering", "id": "o", "statement": "a beats b", "better": "a", "worse": ["b"],
                 "environments": ["catch"], "judged_at": ["cpu"], "control": "none",
                 "control_reason": "the runs' test alone (the control rules' rows: test_control_rows_hold)"}],
    ))
    rng = np.random.default_rng(5)
    shift = np.repeat([1.2, -1.2], 60)[:, None]  # half better, half worse: every outcome occurs
    a, b = rng.standard_normal((120, 5)) + shift, rng.standard_normal((120, 5))
    expected, _ = stats.decide_beats_permutation(a, b)
    names = {stats.SUPPORTED: REPRODUCED, stats.CONTRADICTED: NOT_REPRODUCED, stats.UNDECIDED: INCONCLUSIVE}
    seeds = list(range(5))
    for i in range(120):
        cells = {("a", "catch"): CellResult("a", "catch", seeds=seeds, final=list(a[i]), frames=[200] * 5),
                 ("b", "catch"): CellResult("b", "catch", seeds=seeds, final=list(b[i]), frames=[200] * 5)}
        [verdict] = judge_claims(spec, "cpu", cells)
        assert verdict.verdict == names[int(expected[i])]
    assert {int(x) for x in expected} == {stats.SUPPORTED, stats.UNDECIDED, stats.CONTRADICTED}


def test_welch_interval_covers_at_its_nominal_rate() -> None:
    """Two-sided coverage of the true difference 0 is 95% (normal data, unequal n and spreads)."""
    rng = np.random.default_rng(3)
    interval = stats.welch_interval(rng.normal(0, 1, (SIMS, 3)), rng.normal(0, 3, (SIMS, 5)))
    coverage = np.mean((interval.low < 0) & (interval.high > 0))
    assert coverage == pytest.approx(0.95, abs=0.012)


# --- RL's shapes (issue #25): collapse, learn/fail, no spread, agents at the random level -----------------------

CHEAP_KINDS = ("matches", "matches_or_beats", "threshold >=", "threshold <=", "best_of", "share of seeds")


@pytest.mark.parametrize("kind", CHEAP_KINDS)
def test_rl_shapes_every_seed_count(kind: str) -> None:
    for shape in cal.RL_SHAPES:
        for n in cal.RL_SEED_COUNTS:
            rate = cal.rl_rate(kind, shape, n, sims=RL_SIMS, seed=n)
            assert rate <= RL_BOUND, (kind, shape, n, rate)


@pytest.mark.parametrize("shape", cal.RL_SHAPES)
def test_rl_shapes_beats(shape: str) -> None:
    for n in cal.RL_SEED_COUNTS:
        rate = cal.rl_rate("beats", shape, n, sims=400, seed=n)
        assert rate <= cal.monte_carlo_bound(NOMINAL, 400), (shape, n, rate)


@pytest.mark.parametrize("kind", ["at least 1 of 5", "at least 3 of 5", "aggregate median of 5"])
def test_rl_shapes_over_environments_at_small_n(kind: str) -> None:
    for shape in ("bimodal_0.5", "collapse_0.2", "at_random"):
        for n in (2, 3, 4, 5):
            rate = cal.rl_rate(kind, shape, n, sims=200, seed=n)
            assert rate <= cal.monte_carlo_bound(NOMINAL, 200), (kind, shape, n, rate)


@pytest.mark.slow
@pytest.mark.parametrize("kind", cal.RL_KINDS)
def test_rl_shapes_full_grid(kind: str) -> None:
    """The whole grid of the closing note (minutes): every kind, shape and seed count."""
    sims = 300 if kind.startswith("aggregate") else 2000
    for shape in cal.RL_SHAPES:
        for n in cal.RL_SEED_COUNTS:
            rate = cal.rl_rate(kind, shape, n, sims=sims, seed=n)
            assert rate <= cal.monte_carlo_bound(NOMINAL, sims), (kind, shape, n, rate)


def test_the_old_rules_fail_on_rl_shapes() -> None:
    """Issue #25's table, with the old decisions (Welch / one-sample t): far above 0.025."""
    rng = np.random.default_rng(0)
    x = cal.rl_draw(rng, "collapse_0.1", (4000, 2))
    old = stats.one_sample_interval(x)
    assert np.mean(stats.decide_threshold(old.low, old.high, ">=", cal.rl_mean("collapse_0.1")) == stats.SUPPORTED) > 0.15
    a, b = (rng.random((8000, 2)) < 0.5).astype(float), (rng.random((8000, 2)) < 0.5).astype(float)
    welch = stats.welch_interval(a, b)
    assert np.mean(stats.decide_beats(welch.low, welch.high) == stats.SUPPORTED) > 0.05  # 1/16: [1, 1] v [0, 0]
    assert cal.rl_rate("threshold >=", "collapse_0.1", 2, sims=4000) <= BOUND
    assert cal.rl_rate("beats", "bimodal_0.5", 2, sims=4000) == 0.0


def _judge(spec_claims: list[dict], environments: list[dict], finals: dict[tuple[str, str], list[float]]) -> object:
    n = len(next(iter(finals.values())))
    spec = validate_spec(toy_spec_data(
        variants=[{"name": "a"}, {"name": "b"}], environments=environments,
        scales={"smoke": {"frames": 100, "seeds": n}, "cpu": {"frames": 200, "seeds": n}}, claims=spec_claims,
    ))
    cells = {key: CellResult(key[0], key[1], seeds=list(range(n)), final=list(v), frames=[200] * n)
             for key, v in finals.items()}
    [verdict] = judge_claims(spec, "cpu", cells)
    return verdict


UNIT = [{"kind": "jax", "id": "catch", "name": "catch", "random_score": 0.0, "return_range": [0.0, 1.0]}]
BEATS = {"kind": "ordering", "id": "o", "statement": "a beats b", "better": "a", "worse": ["b"], "judged_at": ["cpu"]}


def test_no_spread_is_never_certainty() -> None:
    """0.9, 0.9 v 0.5, 0.5 was 'reproduced' (a zero-width Welch interval); the permutation test's p is 1/6."""
    verdict = _judge([BEATS], UNIT, {("a", "catch"): [0.9, 0.9], ("b", "catch"): [0.5, 0.5]})
    assert verdict.verdict == INCONCLUSIVE
    assert "permutation p = 0.167 (the smallest possible at 2 v 2 is 0.167)" in verdict.detail
    assert "at least 4 seeds per side are needed to decide" in verdict.detail
    # a threshold on four seeds all at 1: 20% collapsed seeds (mean 0.8) would show this 0.8^4 = 41% of the time
    verdict = _judge([{"kind": "threshold", "id": "t", "statement": "s", "variant": "a", "environment": "catch",
                       "op": ">=", "value": 0.9, "judged_at": ["cpu"]}], UNIT,
                     {("a", "catch"): [1.0] * 4, ("b", "catch"): [0.0] * 4})
    # Anderson: d = ksone.isf(0.025, 4) = 0.6239, lower bound 1 - 0.6239 = 0.376 < 0.9
    assert verdict.verdict == INCONCLUSIVE and "[95% distribution-free interval 0.3761, 1]" in verdict.detail
    assert "Anderson" in verdict.method


def test_two_agents_at_the_random_level_do_not_match() -> None:
    """Both at Catch's random level: 'matches' holds numerically and reads uninformative (20 seeds on Catch's
    declared range [-1, 1] put the difference's distribution-free interval inside +-0.7); with no range declared it
    is not decided at all."""
    catch = [{"kind": "jax", "id": "catch", "name": "catch", "random_score": -0.8, "return_range": [-1.0, 1.0]}]
    rng = np.random.default_rng(1)
    finals = {(v, "catch"): list(-0.82 + 0.01 * rng.standard_normal(20)) for v in "ab"}
    verdict = _judge([{**BEATS, "relation": "matches", "margin": 0.7}], catch, finals)
    assert verdict.verdict == UNINFORMATIVE
    assert "not shown above the trivial level by the claim's margin 0.7" in verdict.detail
    assert "Anderson" in verdict.method
    del catch[0]["return_range"]
    verdict = _judge([{**BEATS, "relation": "matches", "margin": 0.7}], catch, finals)
    assert verdict.verdict == INCONCLUSIVE and "undecided (no declared range)" in verdict.detail
    assert "a metric_range (judged by a bound valid for any distribution on it) would" in verdict.detail
    assert verdict.method.startswith("none: the metric has no declared range")


@pytest.mark.parametrize("shape", cal.GAME_SHAPES)
def test_a_runs_games_against_a_trivial_policys_games_false_reproduced_rate(shape: str) -> None:
    """Kind above_trivial (3 evaluation games of one run v 30 of a trivial policy): a run that plays like the trivial
    policy reads reproduced at most 0.025 of the time on every shape of game scores (the floor with a few points,
    small counts, heavy tails, a rare big score, no spread); a run shifted up by 3 units is found on the shapes whose
    spread is about 1, and one big score in 5 games is the case 3 games cannot find."""
    assert cal.games_rate(shape, sims=SIMS) <= BOUND
    if shape in ("pong_like", "normal", "no_spread"):
        assert cal.games_rate(shape, shift=3.0, sims=1000) >= 0.95
    assert cal.games_rate(shape, shift=3.0, learned_share=0.2, sims=1000) < 0.3


def test_the_reverse_test_would_read_a_gain_in_some_games_as_none() -> None:
    """Why above_trivial is never 'not reproduced': a policy that gains 5 points in 1 game of 5 (mean gain 1) is shown
    'below the trivial level + 1' by the reverse permutation test far above 0.025 of the time at 3 games."""
    assert cal.games_rate("pong_like", shift=1.0, learned_share=0.2, reverse_gain=1.0, sims=1000) > 0.2


@pytest.mark.parametrize("shape", cal.SHAPES)
def test_beats_by_a_factor_is_calibrated_when_the_log_values_differ_by_a_shift(shape: str) -> None:
    """At exactly the factor (log10 gap 1 for 10x) with equal spreads the shifted permutation test is exact; with the
    worse variant's log10 values 3x as spread it is not (measured up to 0.15 on skewed shapes: stated in the method)."""
    for n in (4, 6, 10):
        assert cal.factor_rate(n, shape, 1.0, sims=2000, seed=n) <= cal.monte_carlo_bound(NOMINAL, 2000), (shape, n)
    assert cal.factor_rate(6, "normal", 1.0 + 2.5) >= 0.8  # power: 10x beyond the factor by 2.5 SD (n = 6)


def test_control_rows_hold() -> None:
    """Issue 44: a claim that a frozen agent passes as well (the frozen arm drawn like the runs) reads reproduced at
    most 0.025 of the time (rule 2 bounds it: rlrepro.results.control), and mostly uninformative where the runs' own
    test passes; runs that learned against a frozen arm at random keep their power. 400 simulated experiments per
    cell: 0.025 + 3 * sqrt(0.025 * 0.975 / 400) = 0.048."""
    bound = cal.monte_carlo_bound(NOMINAL, 400)
    for pair in (("bimodal_0.8", "bimodal_0.2"), ("collapse_0.1", "at_random")):
        for n in (4, 8):
            reproduced, uninformative = cal.control_rates("beats", pair, n, sims=400, seed=n)
            assert reproduced <= bound and uninformative >= 0.2, (pair, n, reproduced, uninformative)
    assert cal.control_rates("beats", ("collapse_0.1", "at_random"), 8, learned=True, sims=400)[0] >= 0.6


def test_seeds_added_after_an_inconclusive_look_raise_the_false_reproduced_rate() -> None:
    """Why the report's "about N seeds would decide it" means an experiment run anew at N: at no difference, one
    experiment of 20 bimodal seeds reads reproduced about 0.025 of the time; 10 seeds judged, then 10 more added
    when undecided, 0.044 (2,000 simulations: above 0.025 by more than 3 Monte-Carlo errors)."""
    whole, two_looks = cal.added_seeds_rate(10, 10, "bimodal_0.5", sims=2000)
    assert whole <= cal.monte_carlo_bound(stats.ALPHA, 2000)
    assert two_looks > cal.monte_carlo_bound(stats.ALPHA, 2000) and two_looks > whole
