"""Every claim judged beside its frozen arm (rlrepro.results.control): the cases three reviews found, on fabricated
runs shaped as they measured them, read uninformative; real effects still read reproduced.

Arithmetic, where a test relies on it: at 4 v 4 the permutation test's smallest p is 1 / C(8, 4) = 1/70 = 0.0143;
Fisher's exact test of 6 of 6 passing against 0 of 6 gives 1 / C(12, 6) = 1/924 = 0.00108.
"""

from __future__ import annotations

from typing import Any

import pytest

from rlrepro.results.claims import INCONCLUSIVE, NOT_REPRODUCED, REPRODUCED, UNINFORMATIVE, judge_claims
from rlrepro.results.collect import CellResult
from rlrepro.specs import ExperimentSpec, SpecError, validate_spec
from tests.factories import toy_spec_data

UNIT = {"kind": "jax", "id": "catch", "name": "catch", "random_score": -0.8, "return_range": [-1.0, 1.0]}


def spec_with(*claims: dict[str, Any], variants: tuple[str, ...] = ("a", "b"), seeds: int = 4) -> ExperimentSpec:
    return validate_spec(toy_spec_data(
        variants=[{"name": v} for v in variants], environments=[UNIT],
        scales={"smoke": {"frames": 100, "seeds": 1}, "cpu": {"frames": 200, "seeds": seeds}}, claims=list(claims)))


def claim(kind: str, **fields: Any) -> dict[str, Any]:
    return {"kind": kind, "id": "c", "statement": "s", "judged_at": ["cpu"], **fields}


def cells(runs: dict[str, list[float]], metric: str = "final_return") -> dict[tuple[str, str], CellResult]:
    """One cell per variant name (a control arm is '<variant>@frozen') on catch, ``metric`` per seed."""
    return {(name, "catch"): CellResult(name, "catch", seeds=list(range(len(v))), final=list(v), frames=[200] * len(v),
                                        finals=[{metric: x} for x in v], report_metric=metric)
            for name, v in runs.items()}


def judge(spec: ExperimentSpec, runs: dict[str, list[float]], metric: str = "final_return"):
    [verdict] = judge_claims(spec, "cpu", cells(runs, metric))
    return verdict


def test_exploration_noise_read_as_far_fraction_is_uninformative() -> None:
    """ReF-ER with DDPG (review 1): ER's memory stored mu as the OU step's density, so a policy that never moves reads
    far 0.895; frozen ReF-ER stays near 0. The runs (ER 0.957, ReF-ER 0.098) pass 'ReF-ER's far fraction is below
    ER's', and so does the frozen arm (every frozen ER above every frozen ReF-ER: p = 1/70): uninformative."""
    spec = spec_with(claim("ordering", metric="far_fraction", higher_is_better=False, better="a", worse=["b"]),
                     variants=("a", "b"))
    verdict = judge(spec, {"a": [0.098, 0.090, 0.105, 0.101], "b": [0.957, 0.95, 0.96, 0.962],
                           "a@frozen": [0.02, 0.03, 0.025, 0.021], "b@frozen": [0.895, 0.89, 0.9, 0.893]},
                    "far_fraction")
    assert verdict.verdict == UNINFORMATIVE
    assert verdict.detail.startswith("uninformative: a frozen agent also passes it; the runs alone would read reproduced")
    assert "Control: the frozen arm reads reproduced" in verdict.detail and "p = 0.0143" in verdict.detail


def test_pbt_that_explores_without_learning_is_uninformative() -> None:
    """PBT's 'explored at least once' (review 3): its explore step runs whether or not the members learn; the frozen
    population (PBT kept) counts perturbations too: the best 1 of the runs passes in both arms."""
    spec = spec_with(claim("threshold", metric="perturbations", variant="a", environment="catch", op=">=", value=1.0,
                           best_of=1), variants=("a",), seeds=1)
    verdict = judge(spec, {"a": [3.0], "a@frozen": [2.0]}, "perturbations")
    assert verdict.verdict == UNINFORMATIVE and "a frozen agent also passes it" in verdict.detail


def test_an_untrained_synthetic_return_flat_at_apples_is_uninformative() -> None:
    """Synthetic Returns' 'c is flat at apples' (review 2): an untrained c is flat everywhere, 8 of 8 seeds."""
    spec = spec_with(claim("threshold", metric="c_z_apples", variant="a", environment="catch", op="<=", value=0.5,
                           seeds_share=0.5), variants=("a",), seeds=8)
    verdict = judge(spec, {"a": [0.1, 0.2, -0.3, 0.0, 0.4, 0.1, 0.2, 0.0],
                           "a@frozen": [0.0, 0.05, -0.02, 0.01, 0.0, 0.03, -0.01, 0.02]}, "c_z_apples")
    assert verdict.verdict == UNINFORMATIVE and "the frozen arm reads reproduced: c_z_apples of a" in verdict.detail


def test_frodo_beating_td_lambda_is_a_real_effect_and_stays_reproduced() -> None:
    """FRODO's value error below TD(lambda)'s on the random walk: frozen, both agents predict from their initial
    weights (about 1.0, no order between them), so the frozen arm passes nothing and the difference of differences,
    (0.12 - 0.51) - (1.0 - 1.0) in the runs' favour, is significant: reproduced."""
    spec = spec_with(claim("ordering", metric="value_error", higher_is_better=False, better="a", worse=["b"]))
    verdict = judge(spec, {"a": [0.12, 0.10, 0.14, 0.11], "b": [0.51, 0.48, 0.55, 0.50],
                           "a@frozen": [1.02, 0.97, 1.01, 0.99], "b@frozen": [0.98, 1.03, 1.0, 1.01]}, "value_error")
    assert verdict.verdict == REPRODUCED, verdict.detail
    assert "Control: the frozen arm reads inconclusive" in verdict.detail
    assert "the runs beyond the frozen arm: p = " in verdict.detail and "difference-in-differences" in verdict.detail


def test_the_frozen_arms_evidence_gives_no_advice_about_seeds() -> None:
    """The frozen arm is the control's evidence, read after 'Control:'; what would decide an undecided verdict is
    the runs' question, not the frozen arm's (more frozen seeds decide nothing about learning). A share of 8 seeds
    with 6 passing ([0.35, 0.97] Clopper-Pearson) is undecided against 'more than half': alone it says how many seeds
    would decide it; as the frozen arm beside runs that pass 8 of 8 it says only what it measured."""
    spec = spec_with(claim("threshold", metric="c_z_key", variant="a", environment="catch", op=">=", value=1.0,
                           seeds_share=0.5), variants=("a",), seeds=8)
    alone = judge(spec, {"a": [2.0] * 6 + [0.0] * 2}, "c_z_key")
    assert alone.verdict == INCONCLUSIVE and "seeds would decide it" in alone.detail
    verdict = judge(spec, {"a": [2.0] * 8, "a@frozen": [2.0] * 6 + [0.0] * 2}, "c_z_key")
    control_text = verdict.detail.split("Control: ", 1)[1]
    assert control_text.startswith("the frozen arm reads inconclusive: c_z_key of a on catch: 6 of 8 seeds")
    assert "would decide" not in control_text, control_text


def test_vtrace_beating_no_correction_at_lag_32_stays_reproduced() -> None:
    """V-trace against no correction at policy lag 32 on Catch ([-1, 1]): the frozen agents both play at random
    (about -0.8), the runs 0.9 against -0.2."""
    spec = spec_with(claim("ordering", better="a", worse=["b"]))
    verdict = judge(spec, {"a": [0.9, 0.85, 0.95, 0.88], "b": [-0.2, -0.1, -0.3, -0.25],
                           "a@frozen": [-0.8, -0.75, -0.82, -0.79], "b@frozen": [-0.81, -0.78, -0.8, -0.77]})
    assert verdict.verdict == REPRODUCED, verdict.detail


def test_variants_whose_frozen_arms_are_one_agent_are_judged_by_the_runs_own_test() -> None:
    """DQNReg against DDQN on Empty-6x6 (the published cpu run): they differ only in their loss, so with learning off
    they are one agent, equal on every frozen seed (run_return 0.006, 0.25, 0.007, 0.002). The frozen difference is
    zero on each seed, known without error; the runs' 0.077 gap, every DQNReg run above its DDQN run, is then shown
    beyond it by the runs' own permutation test. The difference-in-differences, which treats the two frozen arms as
    independent samples, charged the gap with their spread between seeds (the 0.25) and read p = 0.2. Frozen arms
    with the same values on other seeds are two agents: the difference-in-differences applies."""
    spec = spec_with(claim("ordering", better="a", worse=["b"]), seeds=10)
    a = [0.80 + 0.01 * i for i in range(10)]
    runs = {"a": a, "b": [x - 0.0766 for x in a]}
    one = judge(spec, {**runs, "a@frozen": [0.006, 0.25, 0.007, 0.002], "b@frozen": [0.006, 0.25, 0.007, 0.002]})
    assert one.verdict == REPRODUCED, one.detail
    assert ("the runs beyond the frozen arm: p = 0.00025 (the runs' own permutation test where the variants' frozen "
            "arms are one agent (equal on every frozen seed") in one.detail and "a v b on catch" in one.detail
    assert "difference-in-differences" not in one.detail
    two = judge(spec, {**runs, "a@frozen": [0.006, 0.25, 0.007, 0.002], "b@frozen": [0.25, 0.006, 0.007, 0.002]})
    assert two.verdict == INCONCLUSIVE and "difference-in-differences" in two.detail and "one agent" not in two.detail
    # against two variants, one of them the same agent frozen: each comparison by its own test, both named
    spec = spec_with(claim("ordering", better="a", worse=["b", "c"]), variants=("a", "b", "c"), seeds=10)
    mixed = judge(spec, {**runs, "c": runs["b"], "a@frozen": [0.006, 0.25, 0.007, 0.002],
                         "b@frozen": [0.006, 0.25, 0.007, 0.002], "c@frozen": [0.25, 0.006, 0.007, 0.002]})
    assert mixed.verdict == INCONCLUSIVE  # the difference-in-differences against c decides it
    assert "difference-in-differences" in mixed.detail and "frozen arms are one agent" in mixed.detail
    assert "so the design gives no difference): a v b on catch" in mixed.detail


def test_two_frozen_agents_match_so_a_match_must_be_shown_beyond_the_frozen_arms() -> None:
    """'a matches b' within 0.4 on [-1, 1] with 64 seeds (the interval's half-width 0.364): runs that learned (0.9)
    match and beat their frozen arms (0.3: an untrained policy this task's design already rewards, above the random
    level -0.8 by more than the margin, so the trivial-level check passes them): reproduced; runs left where the frozen
    arm is (0.3) match too, but are not shown beyond it: uninformative (rule 1 is not applied to a match: two
    frozen agents always match)."""
    spec = spec_with(claim("ordering", better="a", worse=["b"], relation="matches", margin=0.4), seeds=64)
    still = {"a@frozen": [0.3] * 64, "b@frozen": [0.3] * 64}
    learned = judge(spec, {"a": [0.9] * 64, "b": [0.9] * 64, **still})
    assert learned.verdict == REPRODUCED, learned.detail
    nothing = judge(spec, {"a": [0.3] * 64, "b": [0.3] * 64, **still})
    assert nothing.verdict == UNINFORMATIVE
    assert "not shown beyond their frozen arms" in nothing.detail


def test_runs_that_pass_but_are_not_shown_beyond_the_frozen_arm_are_inconclusive() -> None:
    """A mean >= 0 on [-1, 1]: 7 seeds at 1 give Anderson's bound 1 - 2 * 0.4834 = 0.033 >= 0 (reproduced alone); the
    frozen arm, 6 seeds at 1 and one at -1, does not pass (one seed at the far end), yet the runs are not shown beyond
    it (the -1 falls on the frozen side in half of the splits: p = 0.5)."""
    spec = spec_with(claim("threshold", variant="a", environment="catch", op=">=", value=0.0), variants=("a",), seeds=7)
    verdict = judge(spec, {"a": [1.0] * 7, "a@frozen": [1.0] * 6 + [-1.0]})
    assert verdict.verdict == INCONCLUSIVE
    assert verdict.detail.startswith("the runs alone would read reproduced, but they are not shown beyond the frozen arm")
    assert "p = 0.5" in verdict.detail


def test_a_reproduced_claim_whose_frozen_arm_was_not_run_is_inconclusive() -> None:
    spec = spec_with(claim("ordering", better="a", worse=["b"]))
    verdict = judge(spec, {"a": [0.9, 0.85, 0.95, 0.88], "b": [-0.2, -0.1, -0.3, -0.25]})
    assert verdict.verdict == INCONCLUSIVE
    assert "the frozen arm (a@frozen, b@frozen) was not run" in verdict.detail
    refuted = judge(spec, {"a": [-0.2, -0.1, -0.3, -0.25], "b": [0.9, 0.85, 0.95, 0.88]})
    assert refuted.verdict == NOT_REPRODUCED and "Control: the frozen arm" in refuted.detail


def test_a_claim_about_the_system_says_control_none_and_why() -> None:
    beats = claim("ordering", metric="frames_per_second", better="a", worse=["b"])
    with pytest.raises(SpecError, match="control: none needs a control_reason"):
        spec_with({**beats, "control": "none"})
    with pytest.raises(SpecError, match="control_reason is only for control: none"):
        spec_with({**beats, "control_reason": "speed"})
    spec = spec_with({**beats, "control": "none", "control_reason": "frames per second: the machine, not learning"})
    verdict = judge(spec, {"a": [900.0, 950.0, 920.0, 910.0], "b": [500.0, 520.0, 480.0, 510.0]}, "frames_per_second")
    assert verdict.verdict == REPRODUCED and "frozen" not in verdict.detail, verdict.detail
    assert verdict.detail.endswith(". Control: none, frames per second: the machine, not learning"), verdict.detail
    assert "frozen arm" not in verdict.method


def test_a_frozen_arm_apart_by_rounding_alone_passes_nothing() -> None:
    """Measured on the cpu random walk: frozen FRODO and frozen TD(lambda) predict from the same zero table, and
    their float32 value errors differ by 1.8e-7 in every seed. A permutation test read that as 'FRODO below in every
    seed' (p = 1/70) and the claim as uninformative; differences within stats.TIE of the values' scale are ties."""
    spec = spec_with(claim("ordering", metric="value_error", higher_is_better=False, better="a", worse=["b"]))
    frozen = 0.2509
    verdict = judge(spec, {"a": [0.021, 0.022, 0.020, 0.023], "b": [0.045, 0.046, 0.044, 0.047],
                           "a@frozen": [frozen - 1.79e-7] * 4, "b@frozen": [frozen] * 4}, "value_error")
    assert verdict.verdict == REPRODUCED, verdict.detail
    assert "Control: the frozen arm reads inconclusive" in verdict.detail


def test_a_changed_verdict_leads_its_reason_with_the_control_or_why_it_is_not_judged(tmp_path) -> None:
    """Issue 49's before/after: a claim published reproduced before its frozen arm existed, now inconclusive because
    the runs are not shown beyond that arm, says so first, not only that the spec and the test changed; so does a
    claim not judged now because the machine cannot express it."""
    import dataclasses
    import json

    from rlrepro.results.publish import changed_verdicts

    spec = spec_with(claim("threshold", variant="a", environment="catch", op=">=", value=0.0), variants=("a",), seeds=7)
    now = judge(spec, {"a": [1.0] * 7, "a@frozen": [1.0] * 6 + [-1.0]})
    before = dataclasses.replace(now, verdict=REPRODUCED, detail="the runs alone", method="the test before the arm")
    assert now.verdict == INCONCLUSIVE
    for name, verdict, spec_hash in (("before", before, "aaa"), ("now", now, "bbb")):
        table = tmp_path / name / "tables" / "toy" / "mini.json"
        table.parent.mkdir(parents=True)
        table.write_text(json.dumps({"provenance": {"spec_hash": spec_hash, "seeds": 7}, "rows": [],
                                     "claims": [verdict.as_dict()]}), encoding="utf-8")
    [row], same, only_before, only_now = changed_verdicts(tmp_path / "before", tmp_path / "now")
    assert (row["before"], row["now"], same, only_before, only_now) == (REPRODUCED, INCONCLUSIVE, 0, 0, 0)
    assert row["reason"].startswith("the runs alone would read reproduced, but they are not shown beyond the frozen "
                                    "arm; spec changed (hash aaa -> bbb)")
    # a claim the machine cannot express now (Table 1's ordering on 2 cores) says so first, not "test now: none"
    untestable = dataclasses.replace(now, verdict="not judged", method="", detail=(
        "not testable on this machine: it needs 33 CPU cores; the runs had 2, so they neither show nor refute it"))
    table = tmp_path / "now" / "tables" / "toy" / "mini.json"
    table.write_text(json.dumps({"provenance": {"spec_hash": "bbb", "seeds": 7}, "rows": [],
                                 "claims": [untestable.as_dict()]}), encoding="utf-8")
    [row], *_ = changed_verdicts(tmp_path / "before", tmp_path / "now")
    assert row["reason"].startswith("not testable on this machine: it needs 33 CPU cores; spec changed")
    # the same runs and test, judged anew by another commit's rules beside a spec edit elsewhere: both are named
    for name, verdict, spec_hash, table_commit in (("before", now, "aaa", "c1"), ("now", before, "bbb", "c2")):
        table = tmp_path / name / "tables" / "toy" / "mini.json"
        table.write_text(json.dumps({"provenance": {"spec_hash": spec_hash, "seeds": 7, "run_commits": ["r"],
                                                    "table_commit": table_commit}, "rows": [],
                                     "claims": [dataclasses.replace(verdict, method="one test").as_dict()]}),
                         encoding="utf-8")
    [row], *_ = changed_verdicts(tmp_path / "before", tmp_path / "now")
    assert row["reason"] == ("spec changed (hash aaa -> bbb); the same runs judged by the rules of another commit "
                             "(tables at c1 -> c2)")


def test_a_frozen_agent_below_a_band_fails_it_so_the_runs_in_the_band_are_shown_beyond_it() -> None:
    """ReF-ER's far fraction (review 1's shape): a frozen V-RACER never moves, so its far fraction is 0 on every seed.
    Against 'at most D + 0.03' it passes (4 of 4: the runs, 6 of 6, cannot be shown beyond it: Fisher p = 1); against
    the band D +- 0.03 it fails (0 of 4), and the runs in the band are shown beyond it (Fisher 1 / C(10, 4) = 1/210)."""
    runs = {"a": [0.073, 0.081, 0.085, 0.088, 0.09, 0.094], "a@frozen": [0.0] * 4}
    common = {"variant": "a", "environment": "catch", "value": 0.1, "tolerance": 0.03, "seeds_share": 0.5,
              "metric": "far_fraction", "metric_range": [0.0, 1.0]}
    upper = judge(spec_with(claim("threshold", op="<=", **common), variants=("a",), seeds=6), runs, "far_fraction")
    assert upper.verdict == INCONCLUSIVE and "4 of 4 frozen runs" in upper.detail
    band = judge(spec_with(claim("threshold", op="within", **common), variants=("a",), seeds=6), runs, "far_fraction")
    assert band.verdict == REPRODUCED
    assert "p = 0.00476 (6 of 6 runs pass, 0 of 4 frozen runs" in band.detail
