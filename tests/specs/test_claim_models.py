"""The claim forms of the claims contract: relation and margin, holds_on, informative thresholds, env reference scores."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from rlrepro.specs import SpecError, load_spec, validate_spec
from tests.factories import toy_spec_data, write_spec


def spec_with(*claims: dict[str, Any], environments: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    extra = {"environments": environments} if environments else {}
    return toy_spec_data(claims=list(claims), **extra)


def ordering(**extra: Any) -> dict[str, Any]:
    return {"kind": "ordering", "id": "o", "statement": "a beats b", "better": "a", "worse": ["b"],
            "judged_at": ["cpu"], **extra}


def threshold(**extra: Any) -> dict[str, Any]:
    return {"kind": "threshold", "id": "t", "statement": "a reaches it", "variant": "a", "environment": "catch",
            "op": ">=", "value": 0.5, "judged_at": ["cpu"], **extra}


SCORED = [
    {"kind": "jax", "id": "catch", "name": "catch", "random_score": -0.8182, "return_range": [-1.0, 1.0]},
    {"kind": "jax", "id": "cartpole", "name": "cartpole", "random_score": 22.2, "return_range": [0.0, 500.0]},
]


def test_defaults_are_beats_on_each_environment() -> None:
    claim = validate_spec(spec_with(ordering())).claims[0]
    assert (claim.relation, claim.margin, claim.holds_on, claim.at_least, claim.aggregate) == ("beats", None, "each", None, None)


@pytest.mark.parametrize("relation", ["matches", "matches_or_beats"])
def test_matches_needs_a_positive_margin(relation: str) -> None:
    with pytest.raises(SpecError, match=f"relation {relation} needs a margin"):
        validate_spec(spec_with(ordering(relation=relation)))
    with pytest.raises(SpecError, match="greater than 0"):
        validate_spec(spec_with(ordering(relation=relation, margin=0.0)))
    assert validate_spec(spec_with(ordering(relation=relation, margin=0.1))).claims[0].margin == 0.1


def test_beats_rejects_a_margin() -> None:
    with pytest.raises(SpecError, match="margin is only for matches"):
        validate_spec(spec_with(ordering(margin=0.1)))


def test_at_least_needs_k_and_k_at_most_the_environments() -> None:
    with pytest.raises(SpecError, match="at_least .k. is required with holds_on: at_least"):
        validate_spec(spec_with(ordering(holds_on="at_least")))
    with pytest.raises(SpecError, match="at_least .k. is required with holds_on: at_least and only with it"):
        validate_spec(spec_with(ordering(at_least=1)))
    with pytest.raises(SpecError, match=r"at_least 3 exceeds the 2 environment\(s\)"):
        validate_spec(spec_with(ordering(holds_on="at_least", at_least=3)))
    with pytest.raises(SpecError, match=r"at_least 2 exceeds the 1 environment\(s\)"):
        validate_spec(spec_with(ordering(holds_on="at_least", at_least=2, environments=["catch"])))
    with pytest.raises(SpecError, match="holds_on: at_least counts Holm's rejections .* relation matches_or_beats"):
        validate_spec(spec_with(ordering(holds_on="at_least", at_least=1, relation="matches_or_beats", margin=0.1)))


def test_a_metric_range_must_be_low_then_high() -> None:
    with pytest.raises(SpecError, match=r"metric_range must be \[low, high\] with low < high; got \[1.0, 0.0\]"):
        validate_spec(spec_with(ordering(metric_range=[1.0, 0.0])))
    assert validate_spec(spec_with(threshold(metric_range=[0.0, 1.0], metric="success"))).claims[0].metric_range == (0.0, 1.0)
    assert validate_spec(spec_with(ordering(holds_on="at_least", at_least=2))).claims[0].at_least == 2


def test_aggregate_needs_its_name_and_scored_environments() -> None:
    with pytest.raises(SpecError, match="aggregate .median . iqm . mean. is required"):
        validate_spec(spec_with(ordering(holds_on="aggregate")))
    with pytest.raises(SpecError, match=r"environments \['catch', 'cartpole'\] need random_score and return_range"):
        validate_spec(spec_with(ordering(holds_on="aggregate", aggregate="iqm")))
    with pytest.raises(SpecError, match=r"claims\[0\].aggregate: expected 'median', 'iqm' or 'mean'; found 'max'"):
        validate_spec(spec_with(ordering(holds_on="aggregate", aggregate="max"), environments=SCORED))
    assert validate_spec(spec_with(ordering(holds_on="aggregate", aggregate="iqm"), environments=SCORED)).claims[0].aggregate == "iqm"


def test_environment_reference_scores_are_checked() -> None:
    with pytest.raises(SpecError, match=r"return_range must be \[low, high\] with low < high"):
        validate_spec(spec_with(environments=[{"kind": "jax", "id": "catch", "name": "catch", "return_range": [1.0, -1.0]}]))
    with pytest.raises(SpecError, match="random_score 2.0 lies outside return_range"):
        validate_spec(spec_with(environments=[
            {"kind": "jax", "id": "catch", "name": "catch", "random_score": 2.0, "return_range": [-1.0, 1.0]}]))


def test_a_threshold_a_random_policy_passes_is_an_error_naming_the_file_and_claim(tmp_path: Path) -> None:
    # random -0.8182 on catch already satisfies "<= 0.3": it says nothing about learning
    data = spec_with(threshold(op="<=", value=0.3), environments=SCORED)
    path = write_spec(tmp_path, data)
    with pytest.raises(SpecError, match="a trivial policy .* already satisfies") as error:
        load_spec(path)
    assert str(path) in str(error.value) and "claims[0] (t): uniform-random policy -0.8182 on catch satisfies <= 0.3" in str(error.value)
    # a tolerance reaching down to the random score makes ">=" uninformative too: 0.5 - 1.4 = -0.9 <= -0.8182
    with pytest.raises(SpecError, match="a trivial policy .* already satisfies"):
        validate_spec(spec_with(threshold(value=0.5, tolerance=1.4), environments=SCORED))
    assert validate_spec(spec_with(threshold(value=0.5, tolerance=1.0), environments=SCORED))  # bound -0.5 > -0.8182


def test_a_threshold_an_always_noop_policy_passes_is_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue #25: Tennis scores 0.0 with action 0 for 27,000 steps, above a bar the random policy misses."""
    from rlrepro.results import trivial

    def scores(env_spec: object, path: object = None) -> dict[str, trivial.TrivialScore]:
        noop = trivial.TrivialScore("noop", 0.0, 0.0, 3, 0.0, 0.0, "p", "c", "abc", "2026-11-26")
        rand = trivial.TrivialScore("uniform_random", -23.3, 0.6, 3, -24.8, -21.9, "p", "c", "abc", "2026-11-26")
        return {"noop": noop, "uniform_random": rand}

    monkeypatch.setattr(trivial, "trivial_scores", scores)
    atari = [{"kind": "atari", "id": "tennis", "game": "tennis"}]
    claim = {**threshold(environment="tennis", metric="eval_return", value=-8.12, tolerance=3.92), "variant": "a"}
    with pytest.raises(SpecError, match=r"noop policy 0 on tennis satisfies >= -8.12 \(tolerance 3.92\)"):
        validate_spec(spec_with(claim, environments=atari))
    marked = {**claim, "informative": False, "informative_reason": "NOOP scores 0.0"}
    assert not validate_spec(spec_with(marked, environments=atari)).claims[0].informative


def test_an_uninformative_claim_marked_with_a_reason_validates() -> None:
    marked = threshold(op="<=", value=0.3, informative=False, informative_reason="the control's upper bound")
    assert not validate_spec(spec_with(marked, environments=SCORED)).claims[0].informative
    with pytest.raises(SpecError, match="informative: false needs an informative_reason"):
        validate_spec(spec_with(threshold(op="<=", value=0.3, informative=False), environments=SCORED))


def test_atari_thresholds_use_the_shipped_random_table() -> None:
    atari = [{"kind": "atari", "id": "venture", "game": "venture"}]
    claim = {**threshold(environment="venture", metric="eval_return", value=0.0), "variant": "a"}
    with pytest.raises(SpecError, match="random policy 0 on venture satisfies >= 0"):
        validate_spec(spec_with(claim, environments=atari))


def test_non_return_metrics_are_not_compared_with_random_scores() -> None:
    assert validate_spec(spec_with(threshold(op="<=", value=0.3, metric="value_error"), environments=SCORED))


def test_reference_scores_do_not_change_a_runs_config_hash() -> None:
    from rlrepro.workflow import config_hash

    plain = validate_spec(spec_with())
    scored = validate_spec(spec_with(environments=SCORED))
    assert config_hash(plain, "a", "catch", "cpu") == config_hash(scored, "a", "catch", "cpu")
    gym = [{"kind": "gym", "id": "catch", "name": "CartPole-v0"}, {"kind": "gym", "id": "cartpole", "name": "CartPole-v0"}]
    with_range = [{**g, "return_range": [0.0, 200.0]} for g in gym]
    # a gym environment's return_range does change its numbers (normalized_return): it stays in the hash
    assert config_hash(validate_spec(spec_with(environments=gym)), "a", "catch", "cpu") != config_hash(
        validate_spec(spec_with(environments=with_range)), "a", "catch", "cpu")


def test_rests_on_is_a_list_of_short_distinct_phrases_on_claims_and_scales() -> None:
    """Issue 49: what a verdict rests on is the spec's, validated: a short phrase each, each once."""
    spec = validate_spec(spec_with(ordering(rests_on=["feed-forward agents (paper: LSTM 256)"])))
    assert spec.claims[0].rests_on == ["feed-forward agents (paper: LSTM 256)"]
    with pytest.raises(SpecError, match=r"claims\[0\] \(o\)\.rests_on: each item once"):
        validate_spec(spec_with(ordering(rests_on=["2 CPU cores", "2 CPU cores"])))
    with pytest.raises(SpecError, match=r"claims\[0\]\.rests_on\[0\]: expected string should have at most 90 characters"):
        validate_spec(spec_with(threshold(rests_on=["x" * 91])))
    data = spec_with(ordering())
    data["scales"]["cpu"]["rests_on"] = ["2 CPU cores (paper: 48 CPUs)"]
    assert validate_spec(data).scales["cpu"].rests_on == ["2 CPU cores (paper: 48 CPUs)"]
