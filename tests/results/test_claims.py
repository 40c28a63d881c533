"""Claim verdicts from hand-made results: reproduced, not reproduced, inconclusive, not judged (and uninformative).

Interval arithmetic is written out in the tests: Welch's interval is mean(a) - mean(b) +- t_{0.975, df} * se with
se^2 = s_a^2/n_a + s_b^2/n_b and df = se^4 / ((s_a^2/n_a)^2/(n_a-1) + (s_b^2/n_b)^2/(n_b-1)).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

from rlrepro.results.claims import (
    INCONCLUSIVE,
    NOT_JUDGED,
    NOT_REPRODUCED,
    OUTCOMES,
    REPRODUCED,
    UNINFORMATIVE,
    judge_claims,
)
from rlrepro.results.collect import CellResult
from rlrepro.specs import ExperimentSpec, SpecError, validate_spec
from tests.factories import toy_spec_data

SCORED_ENVS = [
    {"kind": "jax", "id": "catch", "name": "catch", "random_score": -0.8, "return_range": [-1.0, 1.0]},
    {"kind": "jax", "id": "cartpole", "name": "cartpole", "random_score": 20.0, "return_range": [0.0, 500.0]},
]


# These tests judge the runs' statistics alone; the frozen arm beside every claim is tests/results/test_control.py's.
RUNS_ALONE = {"control": "none", "control_reason": "the runs' statistics alone (the frozen arm: test_control.py)"}


def runs_evidence(verdict: Verdict) -> str:
    """A verdict's evidence before its control's (these tests' claims end with "Control: none, <reason>")."""
    return verdict.detail.split(". Control: ")[0]


def make_spec(*claims: dict[str, Any], environments: list[dict[str, Any]] | None = None) -> ExperimentSpec:
    extra = {"environments": environments} if environments else {}
    return validate_spec(
        toy_spec_data(
            variants=[{"name": "a"}, {"name": "b"}, {"name": "c"}],
            budget={"frames": 1000, "seeds": 4},
            scales={"smoke": {"frames": 100, "seeds": 2}, "cpu": {"frames": 200, "seeds": 4}},
            claims=list(claims),
            **extra,
        )
    )


def ordering(better: str = "a", worse: tuple[str, ...] = ("b",), **extra: Any) -> dict[str, Any]:
    return {"kind": "ordering", "id": "order", "statement": f"{better} beats {', '.join(worse)}", "better": better,
            "worse": list(worse), "judged_at": ["cpu", "paper"], "paper_evidence": "Table 2", **RUNS_ALONE, **extra}


def threshold(op: str, value: float, tolerance: float, variant: str = "a", **extra: Any) -> dict[str, Any]:
    return {"kind": "threshold", "id": "thresh", "statement": "a reaches the value", "variant": variant,
            "environment": "catch", "op": op, "value": value, "tolerance": tolerance, "judged_at": ["cpu"],
            **RUNS_ALONE, **extra}


def cells(finals: dict[tuple[str, str], list[float]]) -> dict[tuple[str, str], CellResult]:
    return {
        (variant, env): CellResult(
            variant, env, seeds=list(range(len(values))), final=list(values), frames=[200] * len(values)
        )
        for (variant, env), values in finals.items()
    }


HIGH = [10.0, 11.0, 12.0, 10.5]
LOW = [1.0, 2.0, 1.5, 2.5]
# HIGH: mean 10.875, s^2 = (0.875^2 + 0.125^2 + 1.125^2 + 0.375^2) / 3 = 2.1875 / 3 = 0.72917
# LOW:  mean 1.75,   s^2 = (0.75^2 + 0.25^2 + 0.25^2 + 0.75^2) / 3 = 1.25 / 3 = 0.41667
# se^2 = (0.72917 + 0.41667) / 4 = 0.28646, se = 0.53522; df = 0.28646^2 / (0.18229^2/3 + 0.10417^2/3) = 5.584
# t_{0.975, 5.584} = 2.4918 -> half-width 1.3337: HIGH - LOW = 9.125 [7.79, 10.46]


def test_ordering_that_clearly_holds_is_reproduced_with_welchs_interval() -> None:
    spec = make_spec(ordering())
    [verdict] = judge_claims(spec, "cpu", cells({("a", "catch"): HIGH, ("b", "catch"): LOW, ("a", "cartpole"): HIGH,
                                                 ("b", "cartpole"): LOW}))
    assert verdict.verdict == REPRODUCED
    assert (verdict.claim, verdict.statement, verdict.paper_evidence) == ("order", "a beats b", "Table 2")
    # 4 v 4 with every HIGH above every LOW: the observed split is the most extreme of C(8, 4) = 70, p = 1/70
    assert verdict.detail.count("a - b = +9.12 [Welch 95% CI +7.79, +10.5], permutation p = 0.0143 supports") == 2
    assert "intersection-union" in verdict.detail
    assert verdict.method.startswith("two-sample permutation test")
    assert "exact: all 70 splits of 4 v 4 runs, smallest p 0.0143" in verdict.method  # C(8, 4) = 70, 1/70


def test_a_permutation_test_over_random_splits_says_monte_carlo_and_its_floor() -> None:
    """16 v 16 runs: C(32, 16) = 601,080,390 splits, above EXACT_SPLITS, so p counts 4,000 random splits and the
    observed one: every clear gap reads 1/4,001 = 0.00025, and the method says so rather than 'exact'."""
    high = [10.0 + 0.1 * i for i in range(16)]
    low = [1.0 + 0.1 * i for i in range(16)]
    [verdict] = judge_claims(make_spec(ordering()), "cpu", cells({("a", "catch"): high, ("b", "catch"): low}))
    assert "permutation p = 0.00025 supports" in verdict.detail
    assert "exact" not in verdict.method.split(";")[0]
    assert ("Monte Carlo: 4,000 random splits of 16 v 16 runs and the observed one, p-value floor 1/4,001 = 0.00025 "
            "(valid at its level; not exact)") in verdict.method


def test_ordering_that_is_clearly_reversed_is_not_reproduced() -> None:
    [verdict] = judge_claims(make_spec(ordering()), "cpu", cells({("a", "catch"): LOW, ("b", "catch"): HIGH}))
    assert verdict.verdict == NOT_REPRODUCED
    # the claim's p is 1 (every split is at least as extreme); the reverse test's p = 1/70 contradicts it
    assert "catch: a - b = -9.12 [Welch 95% CI -10.5, -7.79], permutation p = 1 CONTRADICTS" in verdict.detail


def test_overlapping_noisy_results_are_inconclusive_and_say_how_many_seeds_would_decide() -> None:
    better, worse = [1.0, 7.0, 2.0, 6.0], [2.0, 4.0, 3.0, 4.5]  # means 4.0 and 3.375: a small lead, much noise
    [verdict] = judge_claims(make_spec(ordering()), "cpu", cells({("a", "catch"): better, ("b", "catch"): worse}))
    assert verdict.verdict == INCONCLUSIVE
    assert "catch: a - b = +0.625" in verdict.detail and "undecided" in verdict.detail
    # pooled SD^2 = (26 + 3.6875) / 6 = 4.948; the normal approximation 2 (1.95996 + 0.84162)^2 * 4.948 / 0.625^2
    # = 198.8 seeds; Welch's noncentral t (df ~ 2n - 2) needs one more: 200
    assert "If the observed gap and spread were the truth, about 200 seeds per side would show the observed gap " \
        "0.625 with 80% power" in verdict.detail


def test_each_needs_every_comparison_and_one_contradiction_decides_against() -> None:
    spec = make_spec(ordering(worse=("b", "c")))
    noisy = [10.0, 3.0, 12.0, 1.0]  # against LOW: mean 6.5 - 1.75, but s^2 = 32.33: undecided
    undecided = {("a", "catch"): HIGH, ("b", "catch"): LOW, ("c", "catch"): LOW,
                 ("a", "cartpole"): noisy, ("b", "cartpole"): LOW, ("c", "cartpole"): LOW}
    [verdict] = judge_claims(spec, "cpu", cells(undecided))
    assert verdict.verdict == INCONCLUSIVE
    assert verdict.detail.count("supports") == 2 and verdict.detail.count("undecided") == 2
    contradicted = {**undecided, ("c", "cartpole"): [20.0, 21.0, 22.0, 23.0]}
    [verdict] = judge_claims(spec, "cpu", cells(contradicted))
    assert verdict.verdict == NOT_REPRODUCED
    assert "cartpole: a - c" in verdict.detail and "CONTRADICTS" in verdict.detail


def test_ordering_restricted_to_environments_ignores_the_others() -> None:
    spec = make_spec(ordering(environments=["catch"]))
    results = {("a", "catch"): HIGH, ("b", "catch"): LOW, ("a", "cartpole"): LOW, ("b", "cartpole"): HIGH}
    [verdict] = judge_claims(spec, "cpu", cells(results))
    assert verdict.verdict == REPRODUCED
    assert "cartpole" not in verdict.detail


def test_at_least_k_of_n_counts_holms_rejections() -> None:
    # catch: a clearly beats b (5 v 5 all above: permutation p = 1/C(10, 5) = 1/252 < 0.025 / 2); cartpole: reversed
    high, low = [*HIGH, 11.5], [*LOW, 2.2]
    results = cells({("a", "catch"): high, ("b", "catch"): low, ("a", "cartpole"): low, ("b", "cartpole"): high})
    [one] = judge_claims(make_spec(ordering(holds_on="at_least", at_least=1)), "cpu", results)
    assert one.verdict == REPRODUCED
    assert "on at least 1 of 2 environments: 1 significant after Holm's correction over the 2, 1 contradicted" in one.detail
    [two] = judge_claims(make_spec(ordering(holds_on="at_least", at_least=2)), "cpu", results)
    assert two.verdict == NOT_REPRODUCED  # cartpole is contradicted: 2 of 2 is impossible
    noisy = cells({("a", "catch"): high, ("b", "catch"): low,
                   ("a", "cartpole"): [10.0, 3.0, 12.0, 1.0, 2.0], ("b", "cartpole"): low})
    [undecided] = judge_claims(make_spec(ordering(holds_on="at_least", at_least=2)), "cpu", noisy)
    assert undecided.verdict == INCONCLUSIVE


def test_holm_needs_the_smallest_p_below_alpha_over_n() -> None:
    # 2 v 2, a - b = 1.0 with s^2 = 0.02 on both sides: se = sqrt(0.02) = 0.1414, df = 2, t = 7.07,
    # one-sided p = 0.0097: below 0.025 alone, but above 0.025 / 3 = 0.0083 once Holm spreads it over 3 envs
    spec_data = toy_spec_data(
        variants=[{"name": "a"}, {"name": "b"}],
        environments=[{"kind": "jax", "id": e, "name": "catch"} for e in ("e1", "e2", "e3")],
        scales={"smoke": {"frames": 100, "seeds": 2}, "cpu": {"frames": 200, "seeds": 2}},
        claims=[ordering(holds_on="at_least", at_least=1)],
    )
    spec = validate_spec(spec_data)
    results = {("a", "e1"): [1.9, 2.1], ("b", "e1"): [0.9, 1.1]}
    results |= {(v, e): [0.0, 1.0] for v in ("a", "b") for e in ("e2", "e3")}
    [verdict] = judge_claims(spec, "cpu", cells(results))
    assert verdict.verdict == INCONCLUSIVE
    assert "0 significant after Holm's correction over the 3" in verdict.detail
    # Welch would call this reproduced (1 +- 4.303 * 0.1414 = [0.392, 1.61]); the permutation test cannot at 2 v 2
    [each] = judge_claims(make_spec(ordering(environments=["catch"])), "cpu",
                          cells({("a", "catch"): [1.9, 2.1], ("b", "catch"): [0.9, 1.1]}))
    assert each.verdict == INCONCLUSIVE and "+1 [Welch 95% CI +0.392, +1.61], permutation p = 0.167" in each.detail
    assert "(the smallest possible at 2 v 2 is 0.167)" in each.detail  # 1 / C(4, 2)
    assert "at least 4 seeds per side are needed to decide" in each.detail  # 1 / C(8, 4) = 0.0143


UNIT_RANGE = {"metric_range": [0.0, 1.0]}
# Anderson's bounds on [0, 1] for n seeds all at v, at alpha / 2 = 0.0125 each (Bonferroni over the two variants):
# lower v (1 - d), upper v + d (1 - v), d = ksone.isf(0.0125, n): d_16 = 0.35678, d_64 = 0.18206.


def test_matches_is_an_equivalence_test_against_the_margin() -> None:
    spec = make_spec(ordering(relation="matches", margin=0.4, **UNIT_RANGE))
    # 16 v 16 seeds at 0.9: [0.9 (1 - d) - (0.9 + 0.1 d), ...] = [-d_16, +d_16] = [-0.357, +0.357], inside +-0.4
    [same] = judge_claims(spec, "cpu", cells({("a", "catch"): [0.9] * 16, ("b", "catch"): [0.9] * 16}))
    assert same.verdict == REPRODUCED and "inside +-0.4" in same.detail
    assert "a - b = +0 [distribution-free 95% CI -0.357, +0.357]" in same.detail
    # 64 at 0.05 v 64 at 0.95: high end (0.05 + 0.95 d) - 0.95 (1 - d) = -0.9 + 1.9 d_64 = -0.554, below -0.4
    [far] = judge_claims(spec, "cpu", cells({("a", "catch"): [0.05] * 64, ("b", "catch"): [0.95] * 64}))
    assert far.verdict == NOT_REPRODUCED and "[distribution-free 95% CI -0.918, -0.554]" in far.detail
    # the example, scaled to [0, 1]: DQNReg [0.2, 0.95, 0.3] vs DQN [0.9, 1, 0.85] "matched" because the
    # interval spanned 0; 3 seeds bound nothing near a margin of 0.4
    [wide] = judge_claims(spec, "cpu", cells({("a", "catch"): [0.2, 0.95, 0.3], ("b", "catch"): [0.9, 1.0, 0.85]}))
    assert wide.verdict == INCONCLUSIVE and "a - b = -0.433" in wide.detail
    assert ("The observed difference is beyond the margin (catch, a vs b: -0.433, margin 0.4): more seeds would more "
            "likely contradict it") in wide.detail


def test_an_undecided_match_says_how_many_seeds_would_decide_it() -> None:
    """Both variants' seeds all at 0.9: the interval is [-d_n, +d_n] (above), inside +-0.4 once d_n < 0.4, first at
    n = 13 (d_12 = 0.409, d_13 = 0.394); inside +-0.05 only past 800 seeds (d_n about sqrt(ln(80) / 2n))."""
    spec = make_spec(ordering(relation="matches", margin=0.4, **UNIT_RANGE))
    [few] = judge_claims(spec, "cpu", cells({("a", "catch"): [0.9] * 3, ("b", "catch"): [0.9] * 3}))
    assert few.verdict == INCONCLUSIVE
    assert ("If each side's seeds were spread as observed, about 13 seeds per side would decide it (catch, a vs b;"
            in few.detail)
    narrow = make_spec(ordering(relation="matches", margin=0.05, **UNIT_RANGE))
    [never] = judge_claims(narrow, "cpu", cells({("a", "catch"): [0.9] * 16, ("b", "catch"): [0.9] * 16}))
    assert never.verdict == INCONCLUSIVE
    assert ("Even 256 seeds per side spread like these would not decide it (catch, a vs b: observed difference +0, "
            "margin 0.05, on a range 1 wide") in never.detail
    lower = make_spec(ordering(relation="matches_or_beats", margin=0.4, higher_is_better=False, **UNIT_RANGE))
    [error] = judge_claims(lower, "cpu", cells({("a", "catch"): [0.1] * 3, ("b", "catch"): [0.1] * 3}))
    assert "about 13 seeds per side would decide it" in error.detail  # the low end -d_n, on the signed values


def test_matches_or_beats_is_non_inferiority_against_the_margin() -> None:
    spec = make_spec(ordering(relation="matches_or_beats", margin=0.4, **UNIT_RANGE))
    # 16 at 0.95 v 16 at 0.9: low end 0.95 (1 - d) - (0.9 + 0.1 d) = 0.05 - 1.05 d_16 = -0.325, above -0.4
    [better] = judge_claims(spec, "cpu", cells({("a", "catch"): [0.95] * 16, ("b", "catch"): [0.9] * 16}))
    assert better.verdict == REPRODUCED and "above -0.4 on the better side (non-inferiority)" in better.detail
    assert "[distribution-free 95% CI -0.325," in better.detail
    [reversed_] = judge_claims(spec, "cpu", cells({("a", "catch"): [0.05] * 64, ("b", "catch"): [0.95] * 64}))
    assert reversed_.verdict == NOT_REPRODUCED
    [unclear] = judge_claims(spec, "cpu", cells({("a", "catch"): [0.2, 0.95, 0.3], ("b", "catch"): [0.9, 1.0, 0.85]}))
    assert unclear.verdict == INCONCLUSIVE  # the old rule called this "reproduced"


def test_matches_or_beats_for_a_lower_is_better_metric() -> None:
    spec = make_spec(ordering(relation="matches_or_beats", margin=0.4, higher_is_better=False, **UNIT_RANGE))
    [verdict] = judge_claims(spec, "cpu", cells({("a", "catch"): [0.95] * 64, ("b", "catch"): [0.05] * 64}))
    assert verdict.verdict == NOT_REPRODUCED and "CONTRADICTS" in verdict.detail
    # shown in the metric's own direction: a's error is higher by 0.9, at least by 0.9 - 1.9 d_64 = 0.554
    assert "a - b = +0.9 [distribution-free 95% CI +0.554, +0.918]" in verdict.detail
    assert "Anderson's bounds" in verdict.method
    [lower] = judge_claims(spec, "cpu", cells({("a", "catch"): [0.05] * 64, ("b", "catch"): [0.3] * 64}))
    assert lower.verdict == REPRODUCED and "a - b = -0.25 [distribution-free 95% CI -0.387, -0.0224]" in lower.detail
    # b at 0.95, 0.05 from the range's worse end, is not shown better than that end by the margin: no claim
    [trivial] = judge_claims(spec, "cpu", cells({("a", "catch"): [0.05] * 64, ("b", "catch"): [0.95] * 64}))
    assert trivial.verdict == UNINFORMATIVE and "trivial level catch 1 (the range's worse end)" in trivial.detail


def test_matches_with_no_declared_range_is_never_decided() -> None:
    """Welch's interval read RL's collapse shapes at the margin as reproduced up to 0.47 of the time: without a
    range the verdict shows it for reference and says what would decide the claim."""
    spec = make_spec(ordering(relation="matches_or_beats", margin=1.0))  # the toy environment declares no range
    [verdict] = judge_claims(spec, "cpu", cells({("a", "catch"): HIGH, ("b", "catch"): LOW}))
    assert verdict.verdict == INCONCLUSIVE
    assert "a - b = +9.12 [Welch, for reference 95% CI +7.79, +10.5] undecided (no declared range)" in verdict.detail
    assert "a metric_range (judged by a bound valid for any distribution on it) would" in verdict.detail
    assert verdict.method.startswith("none: the metric has no declared range")


def test_both_sides_at_the_floor_never_match() -> None:
    spec = make_spec(ordering(relation="matches", margin=0.1), environments=SCORED_ENVS)
    floor = [-1.0, -1.0, -1.0]
    [verdict] = judge_claims(spec, "cpu", cells({("a", "catch"): floor, ("b", "catch"): floor}))
    assert verdict.verdict == INCONCLUSIVE
    assert "every seed of both at the floor -1" in verdict.detail
    [beats] = judge_claims(make_spec(ordering(), environments=SCORED_ENVS), "cpu",
                           cells({("a", "cartpole"): [500.0] * 3, ("b", "cartpole"): [500.0] * 3}))
    assert beats.verdict == INCONCLUSIVE and "ceiling 500" in beats.detail


def test_ordering_on_an_aggregate_of_normalised_scores() -> None:
    claim = ordering(holds_on="aggregate", aggregate="mean")
    spec = make_spec(claim, environments=SCORED_ENVS)
    # normalised: catch (x + 0.8) / 1.8, cartpole (x - 20) / 480
    results = {("a", "catch"): [1.0, 0.9, 1.0, 0.95], ("b", "catch"): [-0.8, -0.7, -0.9, -0.8],
               ("a", "cartpole"): [500.0, 480.0, 490.0, 495.0], ("b", "cartpole"): [20.0, 30.0, 25.0, 22.0]}
    [verdict] = judge_claims(spec, "cpu", cells(results), reps=500)
    assert verdict.verdict == REPRODUCED
    # a: catch (0.9625 + 0.8) / 1.8 = 0.97917, cartpole (491.25 - 20) / 480 = 0.98177 -> mean 0.98047
    # b: catch (-0.8 + 0.8) / 1.8 = 0, cartpole (24.25 - 20) / 480 = 0.00885 -> mean 0.00443; difference 0.976
    assert "mean(a) - mean(b) = +0.976" in verdict.detail
    # every run of a above every run of b in both environments: the most extreme of C(8, 4) = 70 splits
    assert "permutation p = 0.0143 supports" in verdict.detail and "whole runs permuted" in verdict.method


def test_aggregate_ordering_needs_scored_environments() -> None:
    with pytest.raises(Exception, match="need random_score and return_range"):
        make_spec(ordering(holds_on="aggregate", aggregate="median"))


def test_claim_not_judged_at_this_scale_says_why() -> None:
    spec = make_spec(ordering())
    [verdict] = judge_claims(spec, "smoke", cells({("a", "catch"): HIGH, ("b", "catch"): LOW}))
    assert verdict.verdict == NOT_JUDGED == "not judged"
    assert "judged at scale(s) cpu, paper" in verdict.detail
    # What the runs train is one whole chunk: unroll 5 x batch 4 x 50 updates = 1,000 frames, beside the budget of 100.
    assert "at 'smoke' 2 seeds of 1,000 frames per run (budget 100; training runs whole chunks) are too small" in verdict.detail


def test_missing_variant_is_not_judged() -> None:
    spec = make_spec(ordering(worse=("b", "c")))
    [verdict] = judge_claims(spec, "cpu", cells({("a", "catch"): HIGH, ("b", "catch"): LOW}))
    assert verdict.verdict == NOT_JUDGED
    assert verdict.detail == "not run at this scale: c on catch"


def test_missing_better_variant_is_not_judged() -> None:
    [verdict] = judge_claims(make_spec(ordering()), "cpu", cells({("b", "catch"): LOW}))
    assert verdict.verdict == NOT_JUDGED
    assert "a on catch" in verdict.detail


def test_ordering_with_no_results_at_all_is_not_judged() -> None:
    [verdict] = judge_claims(make_spec(ordering()), "cpu", {})
    assert verdict.verdict == NOT_JUDGED


def test_non_finite_final_returns_are_not_judged() -> None:
    [verdict] = judge_claims(make_spec(ordering()), "cpu", cells({("a", "catch"): [math.nan], ("b", "catch"): LOW}))
    assert verdict.verdict == NOT_JUDGED
    assert "finite final_return for a vs b on catch" in verdict.detail


def test_nan_seeds_are_dropped_before_comparing() -> None:
    results = cells({("a", "catch"): [*HIGH, math.nan], ("b", "catch"): LOW})
    [verdict] = judge_claims(make_spec(ordering()), "cpu", results)
    assert verdict.verdict == REPRODUCED
    assert "a - b = +9.12" in verdict.detail


def test_one_run_per_variant_gives_no_interval_and_is_inconclusive() -> None:
    [verdict] = judge_claims(make_spec(ordering()), "cpu", cells({("a", "catch"): [10.0], ("b", "catch"): [1.0]}))
    assert verdict.verdict == INCONCLUSIVE
    assert "one run per side gives no interval; at least 2 seeds per variant are needed" in verdict.detail


@pytest.mark.parametrize(
    ("op", "values", "value", "tolerance"),
    [
        # mean 11.75, s = 0.6455, se = 0.3227, t_{0.975,3} = 3.1824 -> [10.72, 12.78]: the t interval says
        # "reproduced" for the first, "not reproduced" for the second; with no declared range neither is decided
        (">=", [11.0, 12.0, 11.5, 12.5], 10.0, 0.0),
        (">=", [11.0, 12.0, 11.5, 12.5], 13.0, 0.0),
        ("<=", [11.0, 12.0, 11.5, 12.5], 13.0, 0.0),
        (">=", [11.0, 11.0, 11.0, 11.0], 10.0, 0.0),  # no spread
    ],
)
def test_a_threshold_on_a_metric_with_no_declared_range_is_not_decided(
    op: str, values: list[float], value: float, tolerance: float
) -> None:
    """A mean over a few seeds has no bound without a range (seeds that partly collapse break the t interval's
    normality: calibration's '(no range)' rows); the t interval is shown for reference and the detail says what would
    decide the claim."""
    [verdict] = judge_claims(make_spec(threshold(op, value, tolerance)), "cpu", cells({("a", "catch"): values}))
    assert verdict.verdict == INCONCLUSIVE
    mean = sum(values) / len(values)
    assert f"a on catch: mean {mean:.4g} [95% t (for reference) interval" in verdict.detail
    assert f"over {len(values)} seeds; needs {op} {value:g} (tolerance {tolerance:g})" in verdict.detail
    assert "a metric_range (judged by a bound valid for any distribution on it) or the claim stated per seed " \
        "(seeds_share) would" in verdict.detail
    assert verdict.method.startswith("none: the metric has no declared range")


def test_threshold_interval_by_hand() -> None:
    [verdict] = judge_claims(make_spec(threshold(">=", 10.0, 0.0)), "cpu", cells({("a", "catch"): [11.0, 12.0, 11.5, 12.5]}))
    assert "mean 11.75 [95% t (for reference) interval 10.72, 12.78] over 4 seeds" in verdict.detail


def test_threshold_with_one_seed_is_inconclusive() -> None:
    [verdict] = judge_claims(make_spec(threshold(">=", 1.0, 0.0)), "cpu", cells({("a", "catch"): [5.0]}))
    assert verdict.verdict == INCONCLUSIVE
    assert "One seed gives no interval" in verdict.detail


def test_uninformative_threshold_is_reported_apart_never_reproduced() -> None:
    # on [-1, 1] Anderson's upper bound of 4 seeds near -0.8 is about 0.42: below 0.5, the data alone would reproduce
    claim = threshold("<=", 0.5, 0.0, informative=False, informative_reason="a random policy scores -0.8",
                      metric_range=[-1.0, 1.0])
    [verdict] = judge_claims(make_spec(claim), "cpu", cells({("a", "catch"): [-0.8, -0.82, -0.79, -0.81]}))
    assert verdict.verdict == UNINFORMATIVE and verdict.verdict not in OUTCOMES
    assert "a random policy scores -0.8" in verdict.detail and "would read reproduced" in verdict.detail


def test_threshold_on_a_cell_that_was_not_run_is_not_judged() -> None:
    [verdict] = judge_claims(make_spec(threshold(">=", 1.0, 0.0)), "cpu", cells({("b", "catch"): HIGH}))
    assert verdict.verdict == NOT_JUDGED
    assert verdict.detail == "a on catch not run at this scale"


def test_threshold_not_judged_at_this_scale() -> None:
    [verdict] = judge_claims(make_spec(threshold(">=", 1.0, 0.0)), "paper", cells({("a", "catch"): HIGH}))
    assert verdict.verdict == NOT_JUDGED
    assert "4 seeds of 1,000 frames per run are too small" in verdict.detail  # the paper budget is one whole chunk


def test_every_claim_gets_a_verdict_in_order_with_its_power() -> None:
    # HIGH on [4, 12]: Anderson's lower bound of the mean at 4 seeds is 5.96, above 5
    spec = make_spec(ordering(), threshold(">=", 5.0, 0.0, metric_range=[4.0, 12.0]))
    verdicts = judge_claims(spec, "cpu", cells({("a", "catch"): HIGH, ("b", "catch"): LOW}))
    assert [(v.claim, v.verdict) for v in verdicts] == [("order", REPRODUCED), ("thresh", REPRODUCED)]
    assert set(verdicts[0].as_dict()) == {"claim", "statement", "verdict", "detail", "paper_evidence", "power", "method"}
    # pooled SD = sqrt((2.1875 + 1.25) / 6) = 0.7569; at 4 v 4 the permutation test rejects only when every run of
    # one side is above every run of the other (p = 1/70), which needs a gap of 2.85 SD for 80% power
    # (test_calibration checks that power against the integral): 2.85 * 0.7569 = 2.16
    assert verdicts[0].power.startswith("if the spread seen were the truth (pooled SD 0.757, normal seeds): 4 seeds "
                                        "per side detect a difference of 2.16 with 80% power")


def test_claim_power_before_any_run_from_expected_sd(tmp_path) -> None:
    from rlrepro.results.claims import POWER_UNKNOWN, claim_power

    spec = make_spec(ordering(expected_sd=2.0), threshold(">=", 1.0, 0.0))
    # cpu: 4 seeds; the permutation test at 4 v 4 needs 2.85 SD for 80% power: 2.85 * 2 = 5.7
    assert claim_power(spec, "cpu") == [
        ("order", "5.7 in final_return if the expected SD 2 were the truth (normal seeds, permutation test)")]
    two = make_spec(ordering(expected_sd=2.0))
    assert claim_power(two, "cpu")[0][1].startswith("5.7")
    assert "cannot reach 0.025" in claim_power(spec.model_copy(update={"scales": {**spec.scales, "cpu": spec.scales["cpu"].model_copy(update={"seeds": 3})}}), "cpu")[0][1]
    assert claim_power(spec, "smoke") == []  # not judged at smoke
    table = tmp_path / "mini.json"
    table.write_text('{"claims": [{"claim": "order", "power": "4 seeds per side detect a difference of 1.79"}]}')
    seen = claim_power(make_spec(ordering()), "cpu", table)
    assert seen == [("order", "from the last table: 4 seeds per side detect a difference of 1.79")]
    assert claim_power(make_spec(ordering()), "cpu", tmp_path / "missing.json") == [("order", POWER_UNKNOWN)]


def test_a_missing_better_variant_is_named_once() -> None:
    spec = make_spec(ordering(worse=("b", "c")))
    [verdict] = judge_claims(spec, "cpu", cells({("b", "catch"): LOW, ("c", "catch"): LOW}))
    assert verdict.detail == "not run at this scale: a on catch"


# --- 'more than a share of the seeds pass' (a per-seed property) ---------------------------------------------------


def test_a_share_of_seeds_is_judged_by_clopper_pearson_and_a_sample_with_no_spread_is_decided() -> None:
    """8 of 8 seeds at 0 (no spread) against <= 1: the one-sided 0.025 lower bound of the share is 0.025 ** (1 / 8) =
    0.631 > 0.5, reproduced, where the mean's interval would be [0, 0] and read inconclusive. 2 of 8 pass: the upper
    bound Beta(0.975; 3, 6) = 0.651 is above 0.5, inconclusive; 0 of 8: upper 1 - 0.631 = 0.369 < 0.5, not
    reproduced; 6 of 8: lower Beta(0.025; 6, 3) = 0.349, inconclusive."""
    claim = threshold("<=", 1.0, 0.0, seeds_share=0.5)
    [verdict] = judge_claims(make_spec(claim), "cpu", cells({("a", "catch"): [0.0] * 8}))
    assert verdict.verdict == REPRODUCED and verdict.method.startswith("share of seeds that pass: exact Clopper-Pearson")
    assert "8 of 8 seeds reach <= 1 (tolerance 0), the seeds all 0, share 1.00 [95% Clopper-Pearson 0.63, 1.00]" in (
        verdict.detail)
    [by_mean] = judge_claims(make_spec(threshold("<=", 1.0, 0.0)), "cpu", cells({("a", "catch"): [0.0] * 8}))
    assert by_mean.verdict == INCONCLUSIVE and "no declared range" in by_mean.detail
    [two] = judge_claims(make_spec(claim), "cpu", cells({("a", "catch"): [0.0, 1.0] + [3.0] * 6}))
    assert two.verdict == INCONCLUSIVE and "The observed share does not exceed it" in two.detail
    assert "2 of 8 seeds reach <= 1 (tolerance 0), the seeds 0 to 3, share 0.25" in two.detail
    [none] = judge_claims(make_spec(claim), "cpu", cells({("a", "catch"): [3.0] * 8}))
    assert none.verdict == NOT_REPRODUCED
    [six] = judge_claims(make_spec(claim), "cpu", cells({("a", "catch"): [0.0] * 6 + [3.0] * 2}))
    assert six.verdict == INCONCLUSIVE and "If the observed share were the truth, about" in six.detail


def test_a_band_is_judged_per_seed_and_a_seed_on_either_side_of_it_fails() -> None:
    """op 'within' (value +- tolerance): ReF-ER's far fraction held near D = 0.1. 8 seeds in [0.07, 0.13] pass
    (lower Clopper-Pearson bound 0.631 > 0.5); 8 seeds at 0 (a policy that never moves) and 8 at 0.4 (plain ER's
    level) each fail on their side: 0 of 8, upper bound 0.369 < 0.5, not reproduced."""
    band = threshold("within", 0.1, 0.03, seeds_share=0.5, metric_range=[0.0, 1.0])
    inside = [0.07, 0.08, 0.09, 0.1, 0.11, 0.12, 0.13, 0.095]
    [held] = judge_claims(make_spec(band), "cpu", cells({("a", "catch"): inside}))
    assert held.verdict == REPRODUCED
    assert "8 of 8 seeds lie within 0.1 +- 0.03, the seeds 0.07 to 0.13, share 1.00" in held.detail
    for outside in ([0.0] * 8, [0.4] * 8):
        [missed] = judge_claims(make_spec(band), "cpu", cells({("a", "catch"): outside}))
        assert missed.verdict == NOT_REPRODUCED, outside


@pytest.mark.parametrize("extra", [{"tolerance": 0.03}, {"seeds_share": 0.5, "tolerance": 0.0}])
def test_a_band_without_a_share_of_seeds_or_a_width_is_rejected(extra: dict[str, Any]) -> None:
    """A band has no one-sided bound for a mean's interval: it is judged per seed, and a band of width 0 is a point."""
    claim = {**threshold("within", 0.1, 0.0, metric_range=[0.0, 1.0]), **extra}
    with pytest.raises(SpecError, match="op 'within' .* is judged per seed: give seeds_share and a tolerance above 0"):
        make_spec(claim)


# --- 'the best k of n runs' (the paper's seed selection) ---------------------------------------------------------


def best_of(k: int, value: float = 4.0, op: str = ">=") -> dict[str, Any]:
    return threshold(op, value, 0.0, best_of=k)


def test_best_k_of_n_counts_runs_that_pass_on_their_own() -> None:
    # 3 of the 4 runs reach 4 (5, 6, 7; not 0.5): the best 2 are 7 and 6. The mean 4.625 is not what is judged.
    [verdict] = judge_claims(make_spec(best_of(2)), "cpu", cells({("a", "catch"): [5.0, 6.0, 0.5, 7.0]}))
    assert verdict.verdict == REPRODUCED
    assert "final_return of a on catch: 3 of 4 finished runs (of 4) reach >= 4 (tolerance 0); the best 2: 7, 6;" in verdict.detail
    assert "All 4 runs: median 5.5; share of runs that reach it 0.75" in verdict.detail


def test_best_k_of_n_is_not_a_mean() -> None:
    # Two runs at 10 and two at 0: the mean 5 with s = 5.77 gives the t interval 5 +- 3.182 * 2.887 = [-4.19, 14.2]
    # (inconclusive against >= 5), while 'the best 2 of 4 reach 5' holds: 10 and 10 both pass.
    values = [10.0, 0.0, 10.0, 0.0]
    [by_mean] = judge_claims(make_spec(threshold(">=", 5.0, 0.0)), "cpu", cells({("a", "catch"): values}))
    [best] = judge_claims(make_spec(best_of(2, value=5.0)), "cpu", cells({("a", "catch"): values}))
    assert (by_mean.verdict, best.verdict) == (INCONCLUSIVE, REPRODUCED)
    [three] = judge_claims(make_spec(best_of(3, value=5.0)), "cpu", cells({("a", "catch"): values}))
    assert three.verdict == NOT_REPRODUCED and "fewer than 3 can reach it" in three.detail


def test_best_k_of_n_below_the_bound_on_the_other_side() -> None:
    # op <=: the best runs are the lowest; 1 of 4 is at or below 1 (0.5), so 2 of 4 cannot be.
    [verdict] = judge_claims(make_spec(best_of(2, value=1.0, op="<=")), "cpu", cells({("a", "catch"): [5.0, 6.0, 0.5, 7.0]}))
    assert verdict.verdict == NOT_REPRODUCED
    assert "1 of 4 finished runs (of 4) reach <= 1 (tolerance 0); the best 2: 0.5, 5;" in verdict.detail


def test_best_k_of_n_waits_for_the_runs_that_could_still_make_the_count() -> None:
    # 4 seeds at cpu scale, 3 finished, 1 passes: the missing run could be the second -> not judged yet.
    [verdict] = judge_claims(make_spec(best_of(2)), "cpu", cells({("a", "catch"): [5.0, 0.5, 0.2]}))
    assert verdict.verdict == NOT_JUDGED
    assert "1 of 3 finished runs (of 4)" in verdict.detail and "1 run(s) missing" in verdict.detail
    # ... but with none passing, one missing run cannot make two.
    [verdict] = judge_claims(make_spec(best_of(2)), "cpu", cells({("a", "catch"): [0.1, 0.5, 0.2]}))
    assert verdict.verdict == NOT_REPRODUCED


def test_best_1_of_n_is_a_program_a_search_found_not_its_seed() -> None:
    """'The search found a TD loss' (best_of: 1 on best_td_like): a search whose best program is its unchanged
    DQN seed is TD by construction and counts as finding nothing."""
    claim = threshold(">=", 1.0, 0.0, metric="best_td_like", best_of=1)

    def searches(*pairs: tuple[float, float]) -> dict[tuple[str, str], CellResult]:
        finals = [{"best_td_like": td, "best_is_seed": seed} for td, seed in pairs]
        return {("a", "catch"): CellResult("a", "catch", seeds=list(range(len(pairs))), final=[0.0] * len(pairs),
                                           finals=finals, frames=[200] * len(pairs))}

    [found] = judge_claims(make_spec(claim), "cpu", searches((0.0, 0.0), (1.0, 0.0), (1.0, 1.0), (0.0, 0.0)))
    assert found.verdict == REPRODUCED
    assert "1 of 4 finished runs (of 4) reach >= 1 (tolerance 0) (the best program is the unchanged bootstrap seed " \
        "in 1 of 4 search(es): not a finding, not counted); the best 1: 1;" in found.detail
    # no search found a TD-like program of its own, but two returned their seed: nothing to judge, not a refutation
    [seed_only] = judge_claims(make_spec(claim), "cpu", searches((1.0, 1.0), (0.0, 0.0), (1.0, 1.0), (0.0, 0.0)))
    assert seed_only.verdict == INCONCLUSIVE and "0 of 4 finished runs" in seed_only.detail
    assert "the best 1: 0;" in seed_only.detail  # of the searches that found a program of their own
    assert runs_evidence(seed_only).endswith("a longer search (more proposals) would decide")
    [refuted] = judge_claims(make_spec(claim), "cpu", searches((0.0, 0.0), (0.0, 0.0), (0.0, 0.0), (0.0, 0.0)))
    assert refuted.verdict == NOT_REPRODUCED and runs_evidence(refuted).endswith("fewer than 1 can reach it")


def test_a_search_in_which_no_program_cleared_the_hurdle_found_nothing() -> None:
    """The cpu from-scratch search of 2026-11-28: 105 programs trained, every one rejected by the hurdle; its best
    (fitness 0.34, not TD-like) is the least bad of losses that do not train. It counts as finding nothing, like a
    search that returned its seed: inconclusive, never a refutation of 'the search finds TD'."""
    claim = threshold(">=", 1.0, 0.0, metric="best_td_like", best_of=1)

    def searches(*rows: tuple[float, float]) -> dict[tuple[str, str], CellResult]:
        finals = [{"best_td_like": td, "best_is_seed": 0.0, "hurdle_reject_fraction": rejects} for td, rejects in rows]
        return {("a", "catch"): CellResult("a", "catch", seeds=list(range(len(rows))), final=[0.0] * len(rows),
                                           finals=finals, frames=[200] * len(rows))}

    [nothing] = judge_claims(make_spec(claim), "cpu", searches((0.0, 1.0), (0.0, 1.0), (0.0, 1.0), (0.0, 1.0)))
    assert nothing.verdict == INCONCLUSIVE
    assert "(no program cleared the hurdle in 4 of 4 search(es): not a finding, not counted); the best 1: none;" \
        in nothing.detail
    assert runs_evidence(nothing).endswith("only searches that found nothing could make up the count: a longer "
                                           "search (more proposals) would decide")
    # one search got programs past the hurdle (60% rejected) and its best is not TD-like; the other three could
    # still have made the count: inconclusive. Four such findings refute it.
    [open_] = judge_claims(make_spec(claim), "cpu", searches((0.0, 1.0), (0.0, 0.6), (0.0, 1.0), (0.0, 1.0)))
    assert open_.verdict == INCONCLUSIVE and "no program cleared the hurdle in 3 of 4 search(es)" in open_.detail
    [refuted] = judge_claims(make_spec(claim), "cpu", searches(*[(0.0, 0.6)] * 4))
    assert refuted.verdict == NOT_REPRODUCED and "0 of 4 finished runs" in refuted.detail
    [found] = judge_claims(make_spec(claim), "cpu", searches((0.0, 1.0), (1.0, 0.4), (0.0, 1.0), (0.0, 1.0)))
    assert found.verdict == REPRODUCED
    # a mean claim on the found program (no best_of) with every search finding nothing: no finding to average
    [mean] = judge_claims(make_spec(threshold(">=", 0.5, 0.0, metric="best_td_like")), "cpu",
                          searches((0.0, 1.0), (0.0, 1.0), (0.0, 1.0), (0.0, 1.0)))
    assert mean.verdict == INCONCLUSIVE and "no search found a program of its own" in mean.detail


def test_best_k_of_n_needs_k_seeds_at_every_judged_scale() -> None:
    with pytest.raises(ValueError, match=r"best_of 5 needs at least 5 seeds at every scale in judged_at; cpu runs 4"):
        make_spec(best_of(5))


def test_clopper_pearson_at_the_closed_form_ends() -> None:
    from rlrepro.results.stats import binomial_interval

    # x = 0: the upper end solves (1 - p)^n = 0.025, p = 1 - 0.025^(1/n); x = n: the lower end is 0.025^(1/n).
    assert np.allclose(binomial_interval(0, 4), (0.0, 1.0 - 0.025**0.25))  # (0, 0.6024)
    assert np.allclose(binomial_interval(4, 4), (0.025**0.25, 1.0))  # (0.3976, 1)
    assert np.allclose(binomial_interval(0, 40)[1], 1.0 - 0.025 ** (1 / 40))  # 0.0881
    # x = 1 of 2: the lower end solves 1 - (1 - p)^2 = 0.025, p = 1 - sqrt(0.975); the upper end by symmetry.
    low, high = binomial_interval(1, 2)
    assert np.isclose(low, 1.0 - math.sqrt(0.975)) and np.isclose(high, math.sqrt(0.975))
    with pytest.raises(ValueError, match="0 <= successes <= trials"):
        binomial_interval(5, 4)


def test_a_bar_within_five_percent_of_the_trivial_level_is_reported_as_weak() -> None:
    # cartpole: random 20 on [0, 500] (no measured trivial scores for this toy's protocol): a bar of 30 is
    # (30 - 20) / 500 = 2.0% of the span above the random level; a bar of 60 is 8%, not weak
    spec = make_spec(threshold(">=", 30.0, 0.0, environment="cartpole"), environments=SCORED_ENVS)
    [weak] = judge_claims(spec, "cpu", cells({("a", "cartpole"): [400.0, 420.0, 410.0, 405.0]}))
    assert weak.detail.startswith("weak bar: >= 30 is 2.0% of the span (500) from the trivial level 20 (random score")
    strong = make_spec(threshold(">=", 60.0, 0.0, environment="cartpole"), environments=SCORED_ENVS)
    [fine] = judge_claims(strong, "cpu", cells({("a", "cartpole"): [400.0, 420.0, 410.0, 405.0]}))
    assert "weak bar" not in fine.detail
    # bounded returns: Anderson's bound over 4 seeds on [0, 500], not a t interval
    assert "Anderson's distribution-free bound" in fine.method and fine.verdict == REPRODUCED


# --- claims no data at a scale's seeds can show reproduced (`rlrepro plan` lists them apart) ---------------------


def _spec_at(seeds: int, *claims: dict[str, Any]) -> ExperimentSpec:
    return validate_spec(toy_spec_data(
        variants=[{"name": "a"}, {"name": "b"}], environments=SCORED_ENVS[:1],
        scales={"smoke": {"frames": 100, "seeds": 1}, "cpu": {"frames": 200, "seeds": seeds}}, claims=list(claims),
    ))


def test_a_claim_the_seeds_cannot_show_is_named_and_its_best_data_stay_inconclusive() -> None:
    """Each reason, with the data most in the claim's favour: not reproduced, and reproduced one step past it."""
    from rlrepro.results.claims import cannot_show_at, fewest_seeds_to_show

    def verdict(spec: ExperimentSpec, a: list[float], b: list[float]) -> str:
        [v] = judge_claims(spec, "cpu", cells({("a", "catch"): a, ("b", "catch"): b}))
        return v.verdict

    beats = ordering(environments=["catch"])
    spec = _spec_at(3, beats)
    assert cannot_show_at(spec, spec.claims[0], "cpu") == "3 seeds per side: the permutation test's smallest p is 0.05"
    assert verdict(spec, [0.9] * 3, [-0.9] * 3) == INCONCLUSIVE
    spec = _spec_at(4, beats)
    assert cannot_show_at(spec, spec.claims[0], "cpu") == "" and verdict(spec, [0.9] * 4, [-0.9] * 4) == REPRODUCED
    # a mean on Catch's range [-1, 1]: 4 seeds at 1 give Anderson's 1 - 2 d_4 = -0.248 (d = 0.6239), below 0;
    # 5 seeds 1 - 2 * 0.5633 = -0.127 < 0 too; 6 seeds 1 - 2 * 0.5193 = -0.039; 7 seeds 1 - 2 * 0.4834 = 0.033 >= 0
    mean = threshold(">=", 0.0, 0.0)
    for n, why in ((6, "6 seeds' distribution-free bound on [-1, 1] cannot reach >= 0 even with every seed at the "
                       "range's end"), (7, "")):
        spec = _spec_at(n, mean)
        assert cannot_show_at(spec, spec.claims[0], "cpu") == why
        assert verdict(spec, [1.0] * n, [0.0] * n) == (INCONCLUSIVE if why else REPRODUCED)
    # no range (metric_range absent, not a return): never decided
    spec = _spec_at(8, threshold(">=", 0.0, 0.0, metric="loss"))
    assert cannot_show_at(spec, spec.claims[0], "cpu") == "a mean over seeds of a metric with no declared range (metric_range)"
    # a share: all of 4 passing bound it from 0.025^(1/4) = 0.398, not above 0.5; of 6, from 0.541
    share = threshold(">=", 0.0, 0.0, seeds_share=0.5)
    spec = _spec_at(4, share)
    assert cannot_show_at(spec, spec.claims[0], "cpu").startswith("4 seed(s) cannot show a share above 0.5")
    assert verdict(spec, [1.0] * 4, [0.0] * 4) == INCONCLUSIVE
    spec = _spec_at(6, share)
    assert cannot_show_at(spec, spec.claims[0], "cpu") == "" and verdict(spec, [1.0] * 6, [0.0] * 6) == REPRODUCED
    # an equivalence within 0.4 on [-1, 1]: shown when the half-width 2 d < 0.4 (64 seeds, d = 0.182), refuted when
    # seeds at the two ends give -2 + 4 d < -0.4, d < 0.4 (16 seeds: d = 0.357); at 4 seeds (d = 0.733) neither
    match = ordering(environments=["catch"], relation="matches", margin=0.4)
    spec = _spec_at(4, match)
    assert cannot_show_at(spec, spec.claims[0], "cpu") == (
        "4 seeds' distribution-free interval on [-1, 1] cannot show the margin 0.4 even with every seed at an end of "
        "the range (catch)")
    assert verdict(spec, [0.9] * 4, [0.9] * 4) == verdict(spec, [-1.0] * 4, [1.0] * 4) == INCONCLUSIVE
    spec = _spec_at(16, match)  # refutable, never shown
    assert cannot_show_at(spec, spec.claims[0], "cpu").endswith("(catch) (at most refuted)")
    assert verdict(spec, [-1.0] * 16, [1.0] * 16) == NOT_REPRODUCED and verdict(spec, [0.9] * 16, [0.9] * 16) == INCONCLUSIVE
    spec = _spec_at(64, match)  # both at 0.9: 0.9 - 1.9 d - (0.9 + 0.1 d) = -2 d = -0.364, inside -0.4
    assert cannot_show_at(spec, spec.claims[0], "cpu") == "" and verdict(spec, [0.9] * 64, [0.9] * 64) == REPRODUCED
    # matches or beats within 0.4 on [-1, 1]: a clear win (1 v 0) gives 1 - 2 d - d, above -0.4 once d < 0.4667,
    # from 10 seeds (d_9 = 0.4681, d_10 = 0.4456; d_16 = 0.357: +0.071), but the match it names, both variants
    # alike, gives -2 d: shown only once d < 0.2, from 53 seeds (d_52 = 0.2016, d_53 = 0.1997). Below that a
    # verdict is decided by the seed count.
    either = ordering(environments=["catch"], relation="matches_or_beats", margin=0.4)
    spec = _spec_at(16, either)
    assert cannot_show_at(spec, spec.claims[0], "cpu") == (
        "16 seeds' distribution-free interval on [-1, 1] cannot show a match within the margin 0.4 even with both "
        "variants' seeds all alike (catch): only a clear win could show it reproduced")
    assert verdict(spec, [1.0] * 16, [0.0] * 16) == REPRODUCED and verdict(spec, [0.9] * 16, [0.9] * 16) == INCONCLUSIVE
    assert fewest_seeds_to_show(spec, spec.claims[0], "cpu") == 53
    spec = _spec_at(53, either)
    assert cannot_show_at(spec, spec.claims[0], "cpu") == "" and verdict(spec, [0.9] * 53, [0.9] * 53) == REPRODUCED
    # stated for the record and judged at no scale: not judged anywhere, with the spec's reason, then the verdicts'
    # rules' own reason and the seeds that could
    record = {**either, "judged_at": [], "not_judged_because": "the paper's 16 seeds could only show a clear win."}
    [record] = judge_claims(_spec_at(16, record), "cpu",
                            cells({("a", "catch"): [0.9] * 16, ("b", "catch"): [0.9] * 16}))
    assert record.verdict == NOT_JUDGED and record.detail == (
        "judged at no scale: the paper's 16 seeds could only show a clear win (by the verdicts' rules at 'cpu': 16 "
        "seeds' distribution-free interval on [-1, 1] cannot show a match within the margin 0.4 even with both "
        "variants' seeds all alike (catch): only a clear win could show it reproduced; the fewest seeds per variant "
        "that could: 53)")
    # the best k of the runs: a count, always decidable
    spec = _spec_at(1, threshold(">=", 0.5, 0.0, best_of=1))
    assert cannot_show_at(spec, spec.claims[0], "cpu") == "" and verdict(spec, [0.9], [0.0]) == REPRODUCED


def test_beats_on_at_least_k_environments_needs_holms_first_step_within_reach() -> None:
    """Holm over m environments rejects first only when the smallest p <= 0.025 / m. Over 3 environments: 4 v 4
    seeds give at best 1 / C(8, 4) = 0.0143 > 0.025 / 3 = 0.00833, so even every 'a' seed above every 'b' seed on
    every environment stays inconclusive; 5 v 5 give 1 / C(10, 5) = 0.00397 <= 0.00833, reproduced."""
    from rlrepro.results.claims import cannot_show_at, fewest_seeds_to_show

    envs = [{"kind": "jax", "id": name, "name": "catch", "random_score": -0.8, "return_range": [-1.0, 1.0]}
            for name in ("catch", "catch_b", "catch_c")]
    for n, outcome in ((4, INCONCLUSIVE), (5, REPRODUCED)):
        spec = validate_spec(toy_spec_data(
            variants=[{"name": "a"}, {"name": "b"}], environments=envs,
            scales={"smoke": {"frames": 100, "seeds": 1}, "cpu": {"frames": 200, "seeds": n}},
            claims=[ordering(holds_on="at_least", at_least=2)]))
        why = cannot_show_at(spec, spec.claims[0], "cpu")
        assert why == ("" if n == 5 else "4 seeds per side: the permutation test's smallest p 0.0143 is above Holm's "
                       "first step over 3 environments (0.025 / 3)")
        finals = {(variant, env["id"]): [0.9 - 0.01 * i if variant == "a" else -0.9 + 0.01 * i for i in range(n)]
                  for variant in ("a", "b") for env in envs}
        [verdict] = judge_claims(spec, "cpu", cells(finals))
        assert verdict.verdict == outcome, verdict.detail
        assert fewest_seeds_to_show(spec, spec.claims[0], "cpu") == 5


def test_the_fewest_seeds_that_can_show_a_claim_is_its_designs_floor() -> None:
    """What `rlrepro plan` prints beside the seeds a claim has: 4 for 'beats' (1 / C(8, 4) = 0.014 <= 0.025, where
    1 / C(6, 3) = 0.05 is not); 6 for 'a share above 0.5' (all of 5 passing bound it from 0.025^(1/5) = 0.478, of 6
    from 0.541); 7 for a mean >= 0 on [-1, 1] (Anderson: 1 - 2 d_n, d_6 = 0.5193 -> -0.039, d_7 = 0.4834 -> 0.033);
    k for the best k of the runs; none for a mean with no declared range, whatever the count."""
    from rlrepro.results.claims import fewest_seeds_to_show

    for claim, fewest in ((ordering(environments=["catch"]), 4), (threshold(">=", 0.0, 0.0, seeds_share=0.5), 6),
                          (threshold(">=", 0.0, 0.0), 7), (threshold(">=", 0.5, 0.0, best_of=2), 2),
                          (threshold(">=", 0.0, 0.0, metric="loss"), None)):
        spec = _spec_at(4, claim)
        assert fewest_seeds_to_show(spec, spec.claims[0], "cpu") == fewest, claim


def test_an_aggregate_over_one_run_per_game_is_judged_per_run_with_best_of() -> None:
    """IMPALA's Table 4 medians come from one run per game (Table C.1). A bootstrap over runs has no interval at one
    run (cannot_show_at names it; inconclusive whatever the scores); best_of 1 reads the run's own median. HNS =
    100 (x - random) / (human - random): Pong -20.7 -> 0%, Breakout 59.3 -> 100 * 57.6 / 28.8 = 200%, Boxing 10.9 ->
    100 * 10.8 / 12 = 90% (median 90: reaches 100 - 10) or 10.78 -> 89% (median 89: does not)."""
    from rlrepro.results.claims import cannot_show_at

    envs = [{"kind": "atari", "id": game, "game": game} for game in ("pong", "breakout", "boxing")]
    median = {"kind": "aggregate", "id": "median", "statement": "the median reaches 100%", "aggregate": "median_hns",
              "metric": "final_return", "variant": "a", "op": ">=", "value": 100.0, "tolerance": 10.0,
              "min_environments": 3, "judged_at": ["cpu"], **RUNS_ALONE}

    def spec_at(seeds: int, **extra: Any) -> ExperimentSpec:
        return validate_spec(toy_spec_data(environments=envs, variants=[{"name": "a"}], claims=[{**median, **extra}],
                                           scales={"smoke": {"frames": 100, "seeds": 1},
                                                   "cpu": {"frames": 200, "seeds": seeds}}))

    def verdict(spec: ExperimentSpec, boxing: list[float]) -> Any:
        runs = len(boxing)
        [v] = judge_claims(spec, "cpu", cells({("a", "pong"): [-20.7] * runs, ("a", "breakout"): [59.3] * runs,
                                               ("a", "boxing"): boxing}), reps=200)
        return v

    mean = spec_at(1)
    assert cannot_show_at(mean, mean.claims[0], "cpu").startswith("one run per game: the aggregate's bootstrap")
    assert verdict(mean, [10.9]).verdict == INCONCLUSIVE
    per_run = spec_at(1, best_of=1)
    assert cannot_show_at(per_run, per_run.claims[0], "cpu") == ""
    passed, failed = verdict(per_run, [10.9]), verdict(per_run, [10.78])
    assert (passed.verdict, failed.verdict) == (REPRODUCED, NOT_REPRODUCED)
    assert "90.0%; 1 of 1 run(s) reach >= 100% (tolerance 10)" in passed.detail and "89.0%; 0 of 1" in failed.detail
    # two runs planned, one finished below the bar: the missing run decides
    two = spec_at(2, best_of=1)
    cut = cells({("a", "pong"): [-20.7], ("a", "breakout"): [59.3], ("a", "boxing"): [10.78]})
    [v] = judge_claims(two, "cpu", cut)
    assert v.verdict == NOT_JUDGED and "1 run(s) missing" in v.detail
    with pytest.raises(SpecError, match="best_of 3 needs at least 3 seeds"):
        spec_at(2, best_of=3)


@pytest.mark.parametrize("experiment", ["atari57_deep", "atari57_shallow", "atari57_multitask"])
def test_the_paper_scale_atari_game_scores_are_counted_per_run_and_decided(experiment: str) -> None:
    """Table C.1 gives one run per game: each game's claim counts that run (best_of 1), so the paper scale decides it,
    where a mean over one seed of an unbounded score never could. Alien's bar: 15962.1 - 3933.58 = 12028.52 (deep)."""
    from rlrepro.results.claims import cannot_show_at
    from rlrepro.specs.loading import load_spec

    spec = load_spec(f"specs/impala/{experiment}.yaml")
    games = [c for c in spec.claims if c.id.startswith("score_")]
    assert len(games) == 57 and spec.scale("paper").seeds == 1
    assert all(c.best_of == 1 and cannot_show_at(spec, c, "paper") == "" for c in games)
    alien = next(c for c in games if c.id == "score_alien")
    bar = alien.value - alien.tolerance
    for score, expected in ((bar, REPRODUCED), (bar - 1.0, NOT_REPRODUCED)):
        # beside it the frozen arm: the untrained agent's game at about random play's 227.8 (best_of: rule 1 only)
        finals = cells({(alien.variant, "alien"): [score], (f"{alien.variant}@frozen", "alien"): [227.8]})
        for cell in finals.values():
            cell.report_metric = alien.metric
        [verdict] = [v for v in judge_claims(spec, "paper", finals) if v.claim == "score_alien"]
        assert verdict.verdict == expected, verdict.detail


def test_the_multitask_agents_games_are_tested_against_the_trivial_policies_games() -> None:
    """Kind above_trivial (issue 28): the run's evaluation games against 30 stored games of uniform random and of
    always-NOOP under the cpu protocol. Three games each above every trivial game: p = 1 / C(33, 3) = 1/5,456 =
    0.000183 against each policy, reproduced with one seed; three games at Pong's floor (NOOP's -21 in every game):
    inconclusive, never reproduced and never 'not reproduced'."""
    from rlrepro.results.claims import cannot_show_at
    from rlrepro.specs.loading import load_spec

    spec = load_spec("specs/impala/atari57_multitask.yaml")
    claim = next(c for c in spec.claims if c.id == "above_trivial_pong_cpu")  # judged at no scale: judged here at cpu
    claim = claim.model_copy(update={"judged_at": ["cpu"], "not_judged_because": ""})
    spec = spec.model_copy(update={"claims": [claim]})
    assert cannot_show_at(spec, claim, "cpu") == ""  # one seed decides it

    def verdict(games: list[float]):
        cell = CellResult("pbt", "pong", seeds=[0], final=[float(np.mean(games)) if games else math.nan],
                          frames=[128_000], eval_scores=[games])
        frozen = CellResult("pbt@frozen", "pong", seeds=[0], final=[-21.0], frames=[128_000], eval_scores=[[-21.0] * 3])
        return next(v for v in judge_claims(spec, "cpu", {("pbt", "pong"): cell, ("pbt@frozen", "pong"): frozen})
                    if v.claim == claim.id)

    good = verdict([-15.0, -12.0, -17.0])
    assert good.verdict == REPRODUCED and good.detail.count("p 0.000183, supports") == 2, good.detail
    assert "v noop (30 games, mean -21)" in good.detail and "v uniform_random (30 games" in good.detail
    floor = verdict([-21.0, -21.0, -21.0])
    assert floor.verdict == INCONCLUSIVE and "more evaluation games" in floor.detail and "p 1, undecided" in floor.detail
    assert verdict([]).verdict == NOT_JUDGED  # a run finished before the games were kept
    assert "keep no evaluation games" in verdict([]).detail


def test_a_claim_on_a_runs_games_needs_an_agent_that_keeps_them() -> None:
    """above_trivial reads summary.json's eval_scores, which the Atari host trainers keep: a JAX environment is
    rejected at validation, naming the claim."""
    data = toy_spec_data(claims=[{"kind": "above_trivial", "id": "learned", "statement": "s", "variant": "a",
                                  "environment": "catch", "judged_at": ["cpu"]}])
    with pytest.raises(SpecError, match=r"claims\[0\] \(learned\): kind above_trivial tests a run's evaluation games"):
        validate_spec(data)


def kl_ordering(**extra: Any) -> dict[str, Any]:
    return ordering(metric="kl", higher_is_better=False, environments=["catch"], **extra)


def kl_cells(finals: dict[tuple[str, str], list[float]]) -> dict[tuple[str, str], CellResult]:
    """Cells whose runs report ``kl`` (summary.json 'final')."""
    return {key: CellResult(*key, seeds=list(range(len(v))), finals=[{"kl": x} for x in v], frames=[200] * len(v))
            for key, v in finals.items()}


def test_beats_by_a_factor_is_judged_on_the_log_scale() -> None:
    # 'reduced by multiple orders of magnitude', read as at least 10x: better = worse / 100 seed by seed.
    # Signed log10 values (lower is better): a: 2 - log10(1, 1.1, 0.9, 1.2), b: -log10(1, 1.1, 0.9, 1.2); moved by
    # log10 10 = 1, every a - 1 (about 0.92-1.05) still lies above every b (about -0.08-0.05): p = 1/C(8, 4) = 1/70
    worse = [1.0, 1.1, 0.9, 1.2]
    better = [w / 100 for w in worse]
    spec = make_spec(kl_ordering(by_factor=10.0))
    [verdict] = judge_claims(spec, "cpu", kl_cells({("a", "catch"): better, ("b", "catch"): worse}))
    assert verdict.verdict == REPRODUCED
    # the log ratio is exactly 2 in every seed: the factor 10^2 = 100 (Welch's interval on the log10 values around it)
    assert "catch: a better than b by a factor 100 [Welch 95% CI on log10" in verdict.detail
    assert "needed 10, permutation p = 0.0143 supports" in verdict.detail
    assert verdict.method.startswith("two-sample permutation test of the difference of mean log10 values")


def test_a_factor_of_about_1_6_reads_reproduced_as_beats_but_not_as_orders_of_magnitude() -> None:
    # the cpu ACER figures' kind: 1e-5 about 1.6 times lower than 1e-4. Plain 'beats': every a below every b, p = 1/70
    # (reproduced). By a factor of 10: a's signed log10 values moved by 1 (about -1.1 to -1.13) lie below every b's
    # (about -0.28 to -0.32): the reverse test's p = 1/70 contradicts it
    better, worse = [1.25, 1.3, 1.2, 1.35], [2.0, 2.1, 1.9, 2.05]
    results = kl_cells({("a", "catch"): better, ("b", "catch"): worse})
    assert judge_claims(make_spec(kl_ordering()), "cpu", results)[0].verdict == REPRODUCED
    [verdict] = judge_claims(make_spec(kl_ordering(by_factor=10.0)), "cpu", results)
    assert verdict.verdict == NOT_REPRODUCED
    # mean log10 ratio (0.2041 + 0.2083 + 0.1996 + 0.1814) / 4 = 0.1983: a factor 10^0.1983 = 1.58
    assert "by a factor 1.58" in verdict.detail and "CONTRADICTS" in verdict.detail


def test_a_by_factor_line_says_when_the_log10_spreads_are_far_apart() -> None:
    # log10 values: a = -2 + (0, 0.1, -0.1, 0) (SD sqrt(0.02 / 3) = 0.0816), b = (0, 0.3, -0.3, 0) (SD 0.245): 3x apart,
    # where the shifted permutation test is no longer exact (measured up to 0.15 on skewed shapes: in the method)
    a = [10 ** (-2 + x) for x in (0.0, 0.1, -0.1, 0.0)]
    b = [10 ** y for y in (0.0, 0.3, -0.3, 0.0)]
    [verdict] = judge_claims(make_spec(kl_ordering(by_factor=10.0)), "cpu", kl_cells({("a", "catch"): a, ("b", "catch"): b}))
    assert "(log10 spreads 3x apart: the test is exact only for a shift; see the method)" in verdict.detail
    assert "up to 0.15 on skewed ones" in verdict.method
    # equal spreads (the first test's data): no note
    [verdict] = judge_claims(make_spec(kl_ordering(by_factor=10.0)), "cpu",
                             kl_cells({("a", "catch"): [x / 100 for x in b], ("b", "catch"): b}))
    assert "spreads" not in verdict.detail


def test_beats_by_a_factor_needs_positive_values_and_relation_beats() -> None:
    [verdict] = judge_claims(make_spec(kl_ordering(by_factor=10.0)), "cpu",
                             kl_cells({("a", "catch"): [0.0, -1.0], ("b", "catch"): [1.0, 2.0]}))
    assert verdict.verdict == NOT_JUDGED and "finite positive kl" in verdict.detail
    with pytest.raises(SpecError, match="by_factor"):
        make_spec(kl_ordering(by_factor=10.0, relation="matches", margin=0.1))
