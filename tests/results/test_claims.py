"""Claim verdicts from hand-made results: reproduced, not reproduced, or not judged at this scale (and why)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

from rlrepro.results.aggregation import difference_of_means_ci
from rlrepro.results.claims import NOT_JUDGED, NOT_REPRODUCED, REPRODUCED, judge_claims
from rlrepro.results.collect import CellResult
from rlrepro.specs import ExperimentSpec, validate_spec
from tests.factories import toy_spec_data


def make_spec(*claims: dict[str, Any]) -> ExperimentSpec:
    return validate_spec(
        toy_spec_data(
            variants=[{"name": "a"}, {"name": "b"}, {"name": "c"}],
            budget={"frames": 1000, "seeds": 4},
            scales={"smoke": {"frames": 100, "seeds": 2}, "cpu": {"frames": 200, "seeds": 4}},
            claims=list(claims),
        )
    )


def ordering(better: str = "a", worse: tuple[str, ...] = ("b",), **extra: Any) -> dict[str, Any]:
    return {"kind": "ordering", "id": "order", "statement": f"{better} beats {', '.join(worse)}", "better": better,
            "worse": list(worse), "judged_at": ["cpu", "paper"], "paper_evidence": "Table 2", **extra}


def threshold(op: str, value: float, tolerance: float, variant: str = "a") -> dict[str, Any]:
    return {"kind": "threshold", "id": "thresh", "statement": "a reaches the value", "variant": variant,
            "environment": "catch", "op": op, "value": value, "tolerance": tolerance, "judged_at": ["cpu"]}


def cells(finals: dict[tuple[str, str], list[float]]) -> dict[tuple[str, str], CellResult]:
    return {
        (variant, env): CellResult(
            variant, env, seeds=list(range(len(values))), final=list(values), frames=[200] * len(values)
        )
        for (variant, env), values in finals.items()
    }


HIGH = [10.0, 11.0, 12.0, 10.5]
LOW = [1.0, 2.0, 1.5, 2.5]


def test_ordering_that_clearly_holds_is_reproduced() -> None:
    spec = make_spec(ordering())
    [verdict] = judge_claims(spec, "cpu", cells({("a", "catch"): HIGH, ("b", "catch"): LOW, ("a", "cartpole"): HIGH,
                                                 ("b", "cartpole"): LOW}))
    assert verdict.verdict == REPRODUCED
    assert (verdict.claim, verdict.statement, verdict.paper_evidence) == ("order", "a beats b", "Table 2")
    # mean(HIGH) - mean(LOW) = 10.875 - 1.75 = 9.125, on both environments
    assert verdict.detail.count("a - b = +9.12") == 2
    assert "cartpole:" in verdict.detail and "catch:" in verdict.detail and "REVERSED" not in verdict.detail
    assert "inconclusive" not in verdict.detail


def test_ordering_that_is_clearly_reversed_is_not_reproduced() -> None:
    spec = make_spec(ordering())
    [verdict] = judge_claims(spec, "cpu", cells({("a", "catch"): LOW, ("b", "catch"): HIGH}))
    assert verdict.verdict == NOT_REPRODUCED
    assert "catch: a - b = -9.12" in verdict.detail and "REVERSED" in verdict.detail


def test_overlapping_noisy_results_are_not_reproduced() -> None:
    better, worse = [1.0, 7.0, 2.0, 6.0], [2.0, 4.0, 3.0, 4.5]  # means 4.0 and 3.375: a small lead, much noise
    diff, low, high = difference_of_means_ci(better, worse)
    assert diff == pytest.approx(0.625)
    assert low < 0 < high
    [verdict] = judge_claims(make_spec(ordering()), "cpu", cells({("a", "catch"): better, ("b", "catch"): worse}))
    assert verdict.verdict == NOT_REPRODUCED
    assert "catch: a - b = +0.625" in verdict.detail and "inconclusive (CI spans 0)" in verdict.detail


def test_ordering_must_beat_every_worse_variant_on_every_environment() -> None:
    spec = make_spec(ordering(worse=("b", "c")))
    results = {("a", "catch"): HIGH, ("b", "catch"): LOW, ("c", "catch"): LOW,
               ("a", "cartpole"): HIGH, ("b", "cartpole"): LOW, ("c", "cartpole"): [20.0, 21.0, 22.0, 23.0]}
    [verdict] = judge_claims(spec, "cpu", cells(results))
    assert verdict.verdict == NOT_REPRODUCED
    assert "cartpole: a - c" in verdict.detail and "REVERSED" in verdict.detail
    assert verdict.detail.count(" ok") == 3


def test_ordering_restricted_to_environments_ignores_the_others() -> None:
    spec = make_spec(ordering(environments=["catch"]))
    results = {("a", "catch"): HIGH, ("b", "catch"): LOW, ("a", "cartpole"): LOW, ("b", "cartpole"): HIGH}
    [verdict] = judge_claims(spec, "cpu", cells(results))
    assert verdict.verdict == REPRODUCED
    assert "cartpole" not in verdict.detail


def test_claim_not_judged_at_this_scale_says_why() -> None:
    spec = make_spec(ordering())
    [verdict] = judge_claims(spec, "smoke", cells({("a", "catch"): HIGH, ("b", "catch"): LOW}))
    assert verdict.verdict == NOT_JUDGED == "not judged at this scale"
    assert "judged at scale(s) cpu, paper" in verdict.detail
    assert "'smoke'" in verdict.detail and "100 frames, 2 seeds" in verdict.detail


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


@pytest.mark.parametrize(
    ("op", "values", "value", "tolerance", "expected"),
    [
        (">=", [9.0, 10.0], 10.0, 0.5, REPRODUCED),  # mean 9.5 >= 10 - 0.5
        (">=", [9.0, 10.0], 10.0, 0.4, NOT_REPRODUCED),  # mean 9.5 < 10 - 0.4
        (">=", [11.0, 12.0], 10.0, 0.0, REPRODUCED),
        ("<=", [10.0, 11.0], 10.0, 0.5, REPRODUCED),  # mean 10.5 <= 10 + 0.5
        ("<=", [10.0, 11.0], 10.0, 0.0, NOT_REPRODUCED),
        ("<=", [1.0, 2.0], 10.0, 0.0, REPRODUCED),
    ],
)
def test_threshold_claims_with_tolerance(
    op: str, values: list[float], value: float, tolerance: float, expected: str
) -> None:
    [verdict] = judge_claims(make_spec(threshold(op, value, tolerance)), "cpu", cells({("a", "catch"): values}))
    assert verdict.verdict == expected
    mean = sum(values) / len(values)
    assert f"a on catch: mean {mean:.4g} [95% CI" in verdict.detail
    assert f"over 2 seeds; needs {op} {value:g} (tolerance {tolerance:g})" in verdict.detail


def test_threshold_on_a_cell_that_was_not_run_is_not_judged() -> None:
    [verdict] = judge_claims(make_spec(threshold(">=", 1.0, 0.0)), "cpu", cells({("b", "catch"): HIGH}))
    assert verdict.verdict == NOT_JUDGED
    assert verdict.detail == "a on catch not run at this scale"


def test_threshold_not_judged_at_this_scale() -> None:
    [verdict] = judge_claims(make_spec(threshold(">=", 1.0, 0.0)), "paper", cells({("a", "catch"): HIGH}))
    assert verdict.verdict == NOT_JUDGED
    assert "1,000 frames, 4 seeds" in verdict.detail


def test_every_claim_gets_a_verdict_in_order() -> None:
    spec = make_spec(ordering(), threshold(">=", 5.0, 0.0))
    verdicts = judge_claims(spec, "cpu", cells({("a", "catch"): HIGH, ("b", "catch"): LOW}))
    assert [(v.claim, v.verdict) for v in verdicts] == [("order", REPRODUCED), ("thresh", REPRODUCED)]
    assert set(verdicts[0].as_dict()) == {"claim", "statement", "verdict", "detail", "paper_evidence"}


# --- difference of means ---------------------------------------------------------------------------------------


def test_difference_of_means_point_value_by_hand() -> None:
    # mean([3, 5]) - mean([1, 2, 3]) = 4 - 2 = 2
    point, low, high = difference_of_means_ci([3.0, 5.0], [1.0, 2.0, 3.0])
    assert point == 2.0
    # every resampled mean lies in [3, 5] and [1, 3]: the difference lies in [0, 4]
    assert 0.0 <= low <= point <= high <= 4.0
    assert low < high


def test_difference_of_means_collapses_with_one_run_each() -> None:
    assert difference_of_means_ci([5.0], [2.0]) == (3.0, 3.0, 3.0)
    assert difference_of_means_ci([2.0, 2.0], [2.0, 2.0, 2.0]) == (0.0, 0.0, 0.0)


def test_difference_of_means_is_deterministic_given_the_seed() -> None:
    rng = np.random.default_rng(1)
    a, b = rng.normal(1.0, 1.0, 8), rng.normal(0.0, 1.0, 8)
    assert difference_of_means_ci(a, b, seed=3) == difference_of_means_ci(a, b, seed=3)
    narrow = difference_of_means_ci(a, b, confidence=0.5)
    wide = difference_of_means_ci(a, b, confidence=0.99)
    assert wide[1] < narrow[1] < narrow[2] < wide[2]


def test_difference_of_means_rejects_nan_and_bad_arguments() -> None:
    with pytest.raises(ValueError, match="NaN"):
        difference_of_means_ci([1.0, math.nan], [1.0])
    with pytest.raises(ValueError, match="reps"):
        difference_of_means_ci([1.0], [1.0], reps=0)
    with pytest.raises(ValueError, match="confidence"):
        difference_of_means_ci([1.0], [1.0], confidence=1.0)


def test_matches_or_beats_holds_when_the_ci_spans_zero_and_fails_only_when_reversed() -> None:
    spec = make_spec(ordering(relation="matches_or_beats"))
    noisy_better, noisy_worse = [1.0, 7.0, 2.0, 6.0], [2.0, 4.0, 3.0, 4.5]  # +0.625, CI spans 0 (test above)
    [matches] = judge_claims(spec, "cpu", cells({("a", "catch"): noisy_better, ("b", "catch"): noisy_worse}))
    assert matches.verdict == REPRODUCED
    assert "a - b = +0.625" in matches.detail and "ok (CI spans 0: matches)" in matches.detail
    assert "may lie wholly below 0" in matches.detail
    [better] = judge_claims(spec, "cpu", cells({("a", "catch"): HIGH, ("b", "catch"): LOW}))
    assert better.verdict == REPRODUCED and "ok (better)" in better.detail
    [reversed_] = judge_claims(spec, "cpu", cells({("a", "catch"): LOW, ("b", "catch"): HIGH}))
    assert reversed_.verdict == NOT_REPRODUCED and "REVERSED" in reversed_.detail


def test_matches_or_beats_for_a_lower_is_better_metric() -> None:
    spec = make_spec(ordering(relation="matches_or_beats", higher_is_better=False))
    [verdict] = judge_claims(spec, "cpu", cells({("a", "catch"): HIGH, ("b", "catch"): LOW}))
    assert verdict.verdict == NOT_REPRODUCED and "REVERSED" in verdict.detail
    assert "may lie wholly above 0" in verdict.detail


def test_one_run_per_variant_gives_no_interval_and_is_not_judged() -> None:
    [verdict] = judge_claims(make_spec(ordering()), "cpu", cells({("a", "catch"): [10.0], ("b", "catch"): [1.0]}))
    assert verdict.verdict == NOT_JUDGED
    assert verdict.detail == "an interval needs at least 2 runs of each variant: a vs b on catch has 1 and 1 run(s)"
