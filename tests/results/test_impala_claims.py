"""Issue 46: verdicts decided by the paper's mechanism: a claim needing a machine the runs lacked is not testable
(never refuted), and a replay comparison prints the off-policy gap it was decided at."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from rlrepro.results.claims import NOT_JUDGED, NOT_REPRODUCED, REPRODUCED, cannot_show_at, judge_claims, untestable_here
from rlrepro.results.collect import CellResult
from rlrepro.specs import SpecError, load_spec, validate_spec
from rlrepro.workflow import plan_experiment
from tests.factories import toy_spec_data

HIGH = [10.0, 11.0, 12.0, 10.5]
LOW = [1.0, 2.0, 1.5, 2.5]
NEEDS = {"cpu_cores": 33, "why": "32 actor threads and the learner"}
# the runs' statistics alone (the frozen arm beside every claim: tests/results/test_control.py)
RUNS_ALONE = {"control": "none", "control_reason": "frames per second / the trivial level alone"}


def _spec(**claim_extra: Any):
    claim = {"kind": "ordering", "id": "fastest", "statement": "a beats b", "better": "a", "worse": ["b"],
             "environments": ["catch"], "judged_at": ["cpu"], **RUNS_ALONE, **claim_extra}
    return validate_spec(toy_spec_data(budget={"frames": 1000, "seeds": 4}, claims=[claim],
                                       scales={"smoke": {"frames": 100, "seeds": 1}, "cpu": {"frames": 200, "seeds": 4}}))


def _cells(a: list[float], b: list[float], cores: int | None, finals: dict[str, list[dict]] | None = None):
    finals = finals or {}
    return {(v, "catch"): CellResult(v, "catch", seeds=list(range(4)), final=list(values), frames=[200] * 4,
                                     finals=finals.get(v, [{}] * 4), cpu_cores=[cores] * 4)
            for v, values in (("a", a), ("b", b))}  # fmt: skip


def test_a_claim_needing_more_cores_than_the_runs_had_is_not_testable_never_refuted():
    spec = _spec(machine=NEEDS)
    # a clearly behind b: on a machine with the cores it would read "not reproduced"; on 2 cores it is not judged.
    [small] = judge_claims(spec, "cpu", _cells(LOW, HIGH, cores=2))
    assert small.verdict == NOT_JUDGED
    assert small.detail.startswith("not testable on this machine:")
    assert "33 CPU cores (32 actor threads and the learner)" in small.detail and "had 2" in small.detail
    [big] = judge_claims(spec, "cpu", _cells(LOW, HIGH, cores=48))
    assert big.verdict == NOT_REPRODUCED
    [unknown] = judge_claims(spec, "cpu", _cells(HIGH, LOW, cores=None))
    assert unknown.verdict == NOT_JUDGED and "did not record" in unknown.detail
    # Without a requirement the core count plays no part.
    [plain] = judge_claims(_spec(), "cpu", _cells(HIGH, LOW, cores=2))
    assert plain.verdict == REPRODUCED


def test_the_plan_lists_a_claim_this_machine_cannot_test_apart():
    cores = os.cpu_count() or 1
    spec = _spec(machine={"cpu_cores": cores + 1, "why": "one more than here"})
    # a limit of this machine, not of the claim's design: apart from what its seeds can show
    assert untestable_here(spec.claims[0]).startswith("not testable on this machine:")
    assert cannot_show_at(spec, spec.claims[0], "cpu") == ""
    assert plan_experiment(Path("x.yaml"), spec, "cpu").claims_out_of_reach["fastest"].startswith("not testable")
    enough = _spec(machine={"cpu_cores": cores, "why": "as many as here"})
    assert untestable_here(enough.claims[0]) == "" and not plan_experiment(Path("x.yaml"), enough, "cpu").claims_out_of_reach


def test_a_machine_requirement_is_validated():
    for bad in ({"cpu_cores": 0, "why": "x"}, {"cpu_cores": 4}, {"cpu_cores": 4, "why": "x", "gpus": 1}):
        with pytest.raises(SpecError):
            _spec(machine=bad)


def test_table_1s_ordering_needs_a_core_per_thread_and_decoupled_acting_needs_none():
    claims = {c.id: c for c in load_spec("specs/impala/throughput.yaml").claims}
    assert claims["impala_fastest_single_machine"].machine.cpu_cores == 33
    assert claims["decoupled_acting_is_faster"].machine is None


def test_a_replay_comparison_prints_the_replayed_rows_age_and_kl():
    finals = {"a": [{"replay_age": 312.0, "replay_kl": 0.4}, {"replay_age": 313.0, "replay_kl": 0.6}] * 2}
    [verdict] = judge_claims(_spec(), "cpu", _cells(HIGH, LOW, cores=2, finals=finals))
    # a: mean age (312 + 313 + 312 + 313) / 4 = 312.5 updates, KL (0.4 + 0.6 + 0.4 + 0.6) / 4 = 0.5; b replays nothing.
    assert "Replayed rows' mean age and KL(mu || pi) in nats, final values: a on catch 312.5 updates, KL 0.5" in verdict.detail
    assert "b on catch" not in verdict.detail
    [plain] = judge_claims(_spec(), "cpu", _cells(HIGH, LOW, cores=2))
    assert "Replayed" not in plain.detail


def test_a_bar_inside_a_trivial_policys_interval_is_flagged_against_its_upper_end(tmp_path, monkeypatch):
    # Catch under this spec's protocol: random play mean -0.8 from 30 episodes, 95% interval [-0.9, -0.7]. A bar of
    # -0.75 is above the mean (old rule: 0.05 / 2 = 2.5% of the [-1, 1] span above it) but inside the interval.
    from rlrepro.results import trivial
    from rlrepro.results.trivial import TrivialScore, score_row, write_rows

    envs = [{"kind": "jax", "id": "catch", "name": "catch", "random_score": -0.8, "return_range": [-1.0, 1.0]}]
    claim = {"kind": "threshold", "id": "bar", "statement": "s", "variant": "a", "environment": "catch", "op": ">=",
             "value": -0.75, "tolerance": 0.0, "judged_at": ["cpu"], **RUNS_ALONE}
    spec = validate_spec(toy_spec_data(environments=envs, claims=[claim], budget={"frames": 1000, "seeds": 4},
                                       scales={"smoke": {"frames": 100, "seeds": 1}, "cpu": {"frames": 200, "seeds": 4}}))
    csv = tmp_path / "scores.csv"
    for policy, mean, high in (("uniform_random", -0.8, -0.7), ("noop", -0.85, -0.84)):
        score = TrivialScore(policy=policy, mean=mean, sd=0.1, episodes=30, low=2 * mean - high, high=high,
                             protocol="p", command="c", commit="x", date="d")
        write_rows([*trivial.read_rows(csv), score_row(spec.environments[0], score)], csv)
    monkeypatch.setattr(trivial, "CSV_PATH", csv)
    cell = {("a", "catch"): CellResult("a", "catch", seeds=list(range(4)), final=[0.9, 0.95, 0.92, 0.97], frames=[200] * 4)}
    [verdict] = judge_claims(spec, "cpu", cell)
    assert verdict.detail.startswith("weak bar: >= -0.75 is inside the trivial level -0.7 (uniform_random, upper end "
                                     "of the 95% interval of its mean -0.8 over 30 episodes)"), verdict.detail


def test_pbts_claims_are_its_mechanism_and_its_effect_not_that_it_ran():
    spec = load_spec("specs/impala/atari57_multitask.yaml")
    claims = {c.id: c for c in spec.claims}
    # "PBT ran" (perturbations happened, hyper-parameters moved) is logged, not claimed: one fact counted twice before.
    assert not {"pbt_explored_cpu", "pbt_moved_hyperparameters_cpu", "pbt_exploited_cpu"} & set(claims)
    mechanism = claims["pbt_copied_better_members"]
    assert (mechanism.metric, mechanism.op, mechanism.value) == ("pbt_copies_beyond_noise", ">=", 1)
    effect = claims["pbt_beats_fixed_hyperparameters_cpu"]
    assert (effect.better, effect.worse, effect.metric, effect.holds_on) == ("pbt", ["no_pbt"], "eval_return", "aggregate")
    # 4 populations against 4 single agents: the permutation test can reach 0.025 (1/70), which 3 v 3 cannot (1/20).
    at = {seeds: spec.model_copy(update={"scales": {**spec.scales, "cpu": spec.scale("cpu").model_copy(
        update={"seeds": seeds})}}) for seeds in (3, 4)}
    assert cannot_show_at(at[4], effect, "cpu") == "" and cannot_show_at(at[3], effect, "cpu") != ""


def test_the_multitask_cpu_run_judges_nothing_its_budget_decides():
    """After 128,000 frames per member the multi-task agents play at the uniform-random level, learning or frozen:
    every claim on what they learned would be decided by the budget. The cpu scale judges none (one seed, a path
    check, no frozen arm), and each claim kept for the record says why in its report row; PBT's exploit is judged
    where members differ, at the paper scale."""
    path = Path("specs/impala/atari57_multitask.yaml")
    spec = load_spec(path)
    assert [c.id for c in spec.claims if "cpu" in c.judged_at] == []
    assert spec.scale("cpu").seeds == 1 and spec.scale("cpu").opt_in == "curves"
    jobs = plan_experiment(path, spec, "cpu").jobs
    assert sorted(job.variant for job in jobs) == ["no_pbt", "pbt"]  # no frozen arm: no claim reads one
    claims = {c.id: c for c in spec.claims}
    assert claims["pbt_copied_better_members"].judged_at == ["paper"]
    verdicts = {v.claim: v for v in judge_claims(spec, "cpu", {})}
    for claim_id in ("pbt_beats_fixed_hyperparameters_cpu", "above_trivial_pong_cpu", "above_trivial_breakout_cpu",
                     "above_trivial_boxing_cpu"):
        assert claims[claim_id].judged_at == [] and "uniform-random level" in claims[claim_id].not_judged_because
        assert verdicts[claim_id].verdict == NOT_JUDGED
        assert verdicts[claim_id].detail.startswith("judged at no scale: ")
        assert "-20.17, 1.2" in verdicts[claim_id].detail  # the measured returns it rests on


def test_a_claim_judged_at_no_scale_says_why():
    claim = {"kind": "ordering", "id": "fastest", "statement": "a beats b", "better": "a", "worse": ["b"],
             "environments": ["catch"], "judged_at": [], **RUNS_ALONE}
    scales = {"smoke": {"frames": 100, "seeds": 1}, "cpu": {"frames": 200, "seeds": 4}}
    silent = validate_spec(toy_spec_data(claims=[claim], scales=scales))
    [bare] = judge_claims(silent, "cpu", {})
    assert (bare.verdict, bare.detail) == (NOT_JUDGED, "judged at no scale")  # 4 seeds could: the spec must say why
    with pytest.raises(SpecError, match="not_judged_because is only for a claim judged at no scale"):
        validate_spec(toy_spec_data(claims=[{**claim, "judged_at": ["cpu"], "not_judged_because": "x"}], scales=scales))
    spec = validate_spec(toy_spec_data(claims=[{**claim, "not_judged_because": "a budget no machine here has."}],
                                       scales=scales))
    [verdict] = judge_claims(spec, "cpu", {})
    assert (verdict.verdict, verdict.detail) == (NOT_JUDGED, "judged at no scale: a budget no machine here has")
    # empty, the field stays out of the canonical form: the specs' hashes (and their published tables) are unchanged
    assert "not_judged_because" in spec.claims[0].model_dump()
    assert "not_judged_because" not in silent.claims[0].model_dump()
