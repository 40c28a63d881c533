"""Spec models: strict validation with errors that name the file, the field, what was expected and what was found."""

from __future__ import annotations

import json
import types
import typing
from pathlib import Path
from typing import Any

import pydantic
import pytest
import yaml

from rlrepro.specs import (
    ExperimentSpec,
    SpecError,
    apply_overrides,
    load_spec,
    load_specs,
    resolve_agent,
    spec_hash,
    validate_spec,
)
from rlrepro.specs.agents import AGENT_KINDS, ConvNetworkSpec, ImpalaAgentSpec, MLPNetworkSpec
from rlrepro.specs.environments import DmlabEnvSpec, JaxEnvSpec
from rlrepro.specs.experiment import OrderingClaim, ThresholdClaim, VariantGridSpec, VariantSpec
from tests.factories import toy_spec_data

REPO = Path(__file__).resolve().parents[2]
REAL_SPECS = sorted((REPO / "specs").rglob("*.yaml"))


def minimal() -> dict[str, Any]:
    return toy_spec_data(
        variants=[{"name": "a"}, {"name": "b", "agent": {"loss.correction": "none"}}],
        budget={"frames": 1000, "seeds": 2},
        scales={"smoke": {"frames": 100, "seeds": 1}, "cpu": {"frames": 200, "seeds": 1}},
        claims=[
            {"kind": "ordering", "id": "a_beats_b", "statement": "s", "better": "a", "worse": ["b"],
             "judged_at": ["cpu"]}
        ],
    )


def problems(data: dict[str, Any]) -> list[str]:
    with pytest.raises(SpecError) as caught:
        validate_spec(data, source="specs/toy/mini.yaml")
    assert caught.value.source == "specs/toy/mini.yaml"
    assert str(caught.value).startswith("specs/toy/mini.yaml: invalid spec")
    return caught.value.problems


def write(tmp_path: Path, data: dict[str, Any], stem: str = "mini") -> Path:
    path = tmp_path / f"{stem}.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return path


def test_minimal_spec_validates_with_defaults() -> None:
    spec = validate_spec(minimal())
    assert spec.agent.optimizer.decay == 0.99
    assert spec.agent.loss.correction == "vtrace"
    assert isinstance(spec.agent.network, MLPNetworkSpec)
    assert spec.run.seeds_per_job is None


# --- errors name the field, what was expected and what was found ------------------------------------------


def test_misspelt_key_is_an_error_naming_its_path() -> None:
    data = minimal()
    data["agent"]["optimizer"]["learnin_rate"] = 0.1
    assert problems(data) == [
        "agent.optimizer.learnin_rate: unknown key (not a field of this model; did you mean 'learning_rate'?)"
    ]


def test_misspelt_top_level_key_is_an_error() -> None:
    data = minimal()
    data["experimnt"] = "mini"
    assert problems(data) == ["experimnt: unknown key (not a field of this model; did you mean 'experiment'?)"]


def test_string_where_a_number_is_expected() -> None:
    data = minimal()
    data["agent"]["optimizer"]["learning_rate"] = "1e-3"
    assert problems(data) == ["agent.optimizer.learning_rate: expected a valid number; found '1e-3' (str)"]


@pytest.mark.parametrize(
    ("path", "value", "field"),
    [
        (("agent", "unroll_length"), 20.5, "agent.unroll_length"),
        (("agent", "policy_lag"), 3.0, "agent.policy_lag"),  # plain int: strict, no float accepted
        (("budget", "frames"), 1.5, "budget.frames"),
        (("agent", "batch_size"), True, "agent.batch_size"),
    ],
)
def test_non_integral_value_where_an_int_is_expected(path: tuple[str, str], value: Any, field: str) -> None:
    data = minimal()
    data[path[0]][path[1]] = value
    [line] = problems(data)
    assert line == f"{field}: expected a valid integer; found {value!r} ({type(value).__name__})"


def test_exponent_floats_are_accepted_for_frame_counts() -> None:
    data = minimal()
    data["budget"]["frames"] = 2e8
    data["scales"]["cpu"]["frames"] = 2.5e6
    data["agent"]["unroll_length"] = 20.0
    spec = validate_spec(data)
    assert spec.budget.frames == 200_000_000 and type(spec.budget.frames) is int
    assert spec.scale("paper").frames == 200_000_000
    assert spec.scales["cpu"].frames == 2_500_000 and type(spec.scales["cpu"].frames) is int
    assert spec.agent.unroll_length == 20 and type(spec.agent.unroll_length) is int


def test_frame_count_beyond_int32_stays_exact() -> None:
    data = minimal()
    data["budget"]["frames"] = 1e10
    assert validate_spec(data).budget.frames == 10_000_000_000


def test_missing_required_field() -> None:
    data = minimal()
    del data["agent"]["loss"]["entropy_cost"]
    assert problems(data) == ["agent.loss.entropy_cost: expected field required; found missing"]


def test_an_opt_in_set_is_for_the_cpu_scale_and_for_runs_that_decide_no_claim_there() -> None:
    """Issue 32: an experiment leaves the default job (scales.cpu.opt_in) only when no claim is judged at cpu, or
    (issue 44) when it says why its claims' hours leave it (opt_in_reason); the smoke scale (the path check) runs
    every spec."""
    data = minimal()
    data["scales"]["cpu"]["opt_in"] = "curves"
    [problem] = problems(data)
    assert problem.startswith("scales.cpu.opt_in: 'curves' would leave the default job without the claims judged at cpu")
    assert problem.endswith("say why in scales.cpu.opt_in_reason")
    data["scales"]["cpu"]["opt_in_reason"] = "4 populations and their frozen arms: 18 h"
    assert validate_spec(data).scales["cpu"].opt_in_reason
    del data["scales"]["cpu"]["opt_in"]
    [problem] = problems(data)
    assert problem.startswith("scales.cpu.opt_in_reason: only for an opt-in set that decides claims")
    data["scales"]["cpu"]["opt_in"] = "curves"
    del data["scales"]["cpu"]["opt_in_reason"]
    for claim in data["claims"]:
        claim["judged_at"] = ["paper"]
    assert validate_spec(data).scales["cpu"].opt_in == "curves"
    data["scales"]["smoke"]["opt_in"] = "curves"
    assert problems(data)[0].startswith("scales.smoke.opt_in: the smoke scale runs every spec")
    data["scales"]["smoke"]["opt_in"] = "Curves!"
    assert problems(data)[0].startswith("scales.smoke.opt_in: expected string should match pattern")


def test_out_of_range_value_names_the_bound() -> None:
    data = minimal()
    data["budget"]["seeds"] = 0
    assert problems(data) == ["budget.seeds: expected greater than 0; found 0 (int)"]


def test_yaml_11_boolean_word_is_rejected_for_a_bool_field() -> None:
    data = minimal()
    data["agent"]["optimizer"]["eps_in_sqrt"] = "yes"
    assert problems(data) == ["agent.optimizer.eps_in_sqrt: expected a valid boolean; found 'yes' (str)"]


@pytest.mark.parametrize(
    ("mutate", "field", "tags"),
    [
        (lambda d: d["agent"].update(kind="dqm"), "agent", ["'impala'"]),
        (lambda d: d["environments"][1].update(kind="mujoco_not_yet"), "environments[1]", ["'jax'", "'dmlab'"]),
        (lambda d: d["agent"].update(network={"kind": "cnn"}), "agent.network", ["'mlp'", "'impala_shallow'"]),
        (lambda d: d["claims"][0].update(kind="better"), "claims[0]", ["'ordering'", "'threshold'"]),
    ],
)
def test_unknown_kind_names_the_discriminator_the_value_and_the_known_kinds(
    mutate, field: str, tags: list[str]
) -> None:
    data = minimal()
    mutate(data)
    [line] = problems(data)
    assert line.startswith(f"{field}.kind: expected one of")
    for tag in tags:
        assert tag in line


def test_unknown_agent_kind_message_puts_the_bad_value_after_found() -> None:
    data = minimal()
    data["agent"]["kind"] = "dqm"
    [line] = problems(data)
    expected, _, found = line.partition("; found ")
    assert "'impala'" in expected and "dqm" not in expected
    assert "dqm" in found and "learning_rate" not in found  # the bad value, not the whole agent mapping


def test_variant_override_error_names_the_variant_and_the_scale(tmp_path: Path) -> None:
    data = minimal()
    data["variants"].append({"name": "lagged", "agent": {"policy_lag": -1}})
    path = write(tmp_path, data)
    validate_spec(data)  # the model alone cannot see it: overrides are checked when resolved
    with pytest.raises(SpecError) as caught:
        load_spec(path)
    assert caught.value.source == str(path)
    assert caught.value.problems == [
        "agent (variant 'lagged' at scale 'smoke').policy_lag: expected greater than or equal to 0; found -1 (int)"
    ]


def test_misspelt_variant_override_key_is_an_error(tmp_path: Path) -> None:
    data = minimal()
    data["variants"][1]["agent"] = {"loss": {"corection": "none"}}
    with pytest.raises(SpecError) as caught:
        load_spec(write(tmp_path, data))
    assert caught.value.problems == [
        "agent (variant 'b' at scale 'smoke').loss.corection: "
        "unknown key (not a field of this model; did you mean 'correction'?)"
    ]


def test_scale_override_error_names_the_scale(tmp_path: Path) -> None:
    data = minimal()
    data["scales"]["cpu"]["agent"] = {"batch_size": 0}
    with pytest.raises(SpecError) as caught:
        load_spec(write(tmp_path, data))
    [line] = caught.value.problems
    assert line.startswith("agent (variant 'a' at scale 'cpu').batch_size: expected greater than 0")


@pytest.mark.parametrize(
    ("mutate", "expected"),
    [
        (lambda d: d["scales"]["smoke"].update(variants=["a", "c"]), "scales.smoke.variants: unknown ['c']"),
        (lambda d: d["scales"]["cpu"].update(environments=["pong"]), "scales.cpu.environments: unknown ['pong']"),
        (lambda d: d["claims"][0].update(better="c"), "claims[0].better: unknown ['c']"),
        (lambda d: d["claims"][0].update(worse=["b", "z"]), "claims[0].worse: unknown ['z']"),
        (lambda d: d["claims"][0].update(environments=["pong"]), "claims[0].environments: unknown ['pong']"),
        (
            lambda d: d["claims"].append(
                {"kind": "threshold", "id": "t", "statement": "s", "variant": "a", "environment": "pong",
                 "op": ">=", "value": 1.0, "judged_at": ["cpu"]}
            ),
            "claims[1].environment: unknown ['pong']",
        ),
        (
            lambda d: d["claims"].append(
                {"kind": "threshold", "id": "t", "statement": "s", "variant": "c", "environment": "catch",
                 "op": ">=", "value": 1.0, "judged_at": ["cpu"]}
            ),
            "claims[1].variant: unknown ['c']",
        ),
    ],
)
def test_unknown_variant_or_environment_names_in_scales_and_claims(mutate, expected: str) -> None:
    data = minimal()
    mutate(data)
    [line] = problems(data)
    assert line.startswith(expected)
    assert "expected some of" in line


def test_experiment_name_must_match_the_file_stem(tmp_path: Path) -> None:
    path = write(tmp_path, minimal(), stem="other")
    with pytest.raises(SpecError) as caught:
        load_spec(path)
    assert caught.value.source == str(path)
    assert caught.value.problems == ["experiment: expected the file name 'other', found 'mini'"]


def test_duplicate_environment_ids() -> None:
    data = minimal()
    data["environments"][1]["id"] = "catch"
    [line] = problems(data)
    assert "environment ids must be unique" in line and "'catch', 'catch'" in line


def test_duplicate_variant_names() -> None:
    data = minimal()
    data["variants"][1]["name"] = "a"
    [line] = problems(data)
    assert "variant names must be unique" in line


def test_missing_smoke_scale() -> None:
    data = minimal()
    del data["scales"]["smoke"]
    assert problems(data) == ["scales.smoke is required (every spec runs at smoke and cpu scale)"]


def test_file_that_is_not_a_mapping(tmp_path: Path) -> None:
    path = tmp_path / "mini.yaml"
    path.write_text("- 1\n- 2\n", encoding="utf-8")
    with pytest.raises(SpecError, match="expected a mapping at the top level, found list"):
        load_spec(path)


def test_load_specs_reports_every_invalid_file(tmp_path: Path) -> None:
    good, bad1, bad2 = minimal(), minimal(), minimal()
    bad1["experiment"], bad2["experiment"] = "bad1", "bad2"
    bad1["agent"]["batch_size"] = "4"
    del bad2["budget"]
    write(tmp_path, good)
    write(tmp_path, bad1, stem="bad1")
    write(tmp_path, bad2, stem="bad2")
    with pytest.raises(SpecError) as caught:
        load_specs([tmp_path])
    assert caught.value.source == "2 invalid spec file(s)"
    assert any("bad1.yaml" in p and "agent.batch_size" in p for p in caught.value.problems)
    assert any("bad2.yaml" in p and "budget: expected field required" in p for p in caught.value.problems)


def test_load_specs_rejects_an_experiment_defined_twice(tmp_path: Path) -> None:
    write(tmp_path, minimal())
    (tmp_path / "copy").mkdir()
    write(tmp_path / "copy", minimal())
    with pytest.raises(SpecError, match="paper/experiment defined twice: toy/mini"):
        load_specs([tmp_path])


# --- the real specs ---------------------------------------------------------------------------------------


def test_there_are_real_specs() -> None:
    assert len(REAL_SPECS) >= 4


@pytest.mark.parametrize("path", REAL_SPECS, ids=lambda p: p.stem)
def test_every_real_spec_validates_and_resolves_at_every_scale(path: Path) -> None:
    spec = load_spec(path)
    assert spec.paper == path.parent.name
    for variant in spec.variant_list():
        for scale in ("smoke", "cpu", "paper"):
            assert resolve_agent(spec, variant, scale).kind in AGENT_KINDS


def test_load_specs_loads_every_real_spec() -> None:
    loaded = load_specs([REPO / "specs"])
    assert sorted(p for p, _ in loaded) == REAL_SPECS  # spec.schema.json is not picked up


# --- immutability and documentation ---------------------------------------------------------------------


def test_models_are_frozen() -> None:
    spec = validate_spec(minimal())
    with pytest.raises(pydantic.ValidationError, match="frozen"):
        spec.experiment = "other"  # type: ignore[misc]
    with pytest.raises(pydantic.ValidationError, match="frozen"):
        spec.agent.optimizer.learning_rate = 1.0  # type: ignore[misc]
    with pytest.raises(pydantic.ValidationError, match="frozen"):
        spec.environments[0].id = "x"  # type: ignore[misc]


def _models_in(annotation: Any) -> set[type[pydantic.BaseModel]]:
    if isinstance(annotation, type) and issubclass(annotation, pydantic.BaseModel):
        return {annotation}
    found: set[type[pydantic.BaseModel]] = set()
    for arg in typing.get_args(annotation):
        if isinstance(arg, (type, types.GenericAlias, types.UnionType)) or typing.get_origin(arg) is not None:
            found |= _models_in(arg)
    return found


def _reachable_models(root: type[pydantic.BaseModel]) -> set[type[pydantic.BaseModel]]:
    seen, todo = set(), [root]
    while todo:
        model = todo.pop()
        if model not in seen:
            seen.add(model)
            for info in model.model_fields.values():
                todo.extend(_models_in(info.annotation))
    return seen


def test_the_model_walk_reaches_every_union_member() -> None:
    models = _reachable_models(ExperimentSpec)
    expected = {
        ImpalaAgentSpec, MLPNetworkSpec, ConvNetworkSpec, JaxEnvSpec, DmlabEnvSpec,
        OrderingClaim, ThresholdClaim, VariantSpec, VariantGridSpec,
    }
    assert expected <= models
    assert len(models) >= 17


def test_every_field_of_every_model_has_a_description() -> None:
    undocumented = [
        f"{model.__name__}.{name}"
        for model in _reachable_models(ExperimentSpec)
        for name, info in model.model_fields.items()
        if not (info.description or "").strip()
    ]
    assert undocumented == []


# --- variants, overrides, hashes ---------------------------------------------------------------------------


def test_grid_expands_to_the_product_with_short_names() -> None:
    data = minimal()
    data["variants"] = {
        "grid": {"loss.correction": ["vtrace", "none"], "policy_lag": [0, 32], "optimizer.eps_in_sqrt": [True]},
        "names": {"loss.correction": "corr", "policy_lag": "lag"},
    }
    data["claims"][0].update(
        better="corr=vtrace__lag=32__eps_in_sqrt=true", worse=["corr=none__lag=32__eps_in_sqrt=true"]
    )
    spec = validate_spec(data)
    assert [v.name for v in spec.variant_list()] == [
        "corr=vtrace__lag=0__eps_in_sqrt=true",
        "corr=vtrace__lag=32__eps_in_sqrt=true",
        "corr=none__lag=0__eps_in_sqrt=true",
        "corr=none__lag=32__eps_in_sqrt=true",
    ]
    variant = spec.variant_list()[3]
    assert variant.agent == {"loss.correction": "none", "policy_lag": 32, "optimizer.eps_in_sqrt": True}
    agent = resolve_agent(spec, variant, "cpu")
    assert (agent.loss.correction, agent.policy_lag) == ("none", 32)


def test_real_toy_spec_grid_names() -> None:
    spec = load_spec(REPO / "specs" / "impala" / "offpolicy_correction_toy.yaml")
    names = [v.name for v in spec.variant_list()]
    # corrections x policy lags x without/with replay (Table 2's two halves) x batch 32 / 16 (the equal-updates control)
    assert len(names) == 4 * 3 * 2 * 2
    assert "corr=vtrace__lag=32__replay=0.0__B=32" in names and "corr=one_step_is__lag=8__replay=0.5__B=32" in names


def test_dotted_and_nested_overrides_resolve_to_the_same_agent() -> None:
    data = minimal()
    data["variants"] = [
        {"name": "dotted", "agent": {"loss.correction": "epsilon", "loss.rho_bar": 2.0, "optimizer.decay": 0.9}},
        {"name": "nested", "agent": {"loss": {"correction": "epsilon", "rho_bar": 2.0}, "optimizer": {"decay": 0.9}}},
    ]
    data["claims"] = []
    spec = validate_spec(data)
    dotted, nested = (resolve_agent(spec, v, "paper") for v in spec.variant_list())
    assert dotted == nested
    assert (dotted.loss.correction, dotted.loss.rho_bar, dotted.optimizer.decay) == ("epsilon", 2.0, 0.9)
    assert dotted.loss.entropy_cost == 0.01  # siblings of an overridden field are kept
    assert dotted.optimizer.learning_rate == 0.001


def test_scale_overrides_apply_after_variant_overrides() -> None:
    data = minimal()
    data["variants"] = [{"name": "big", "agent": {"batch_size": 16, "unroll_length": 7}}]
    data["scales"]["smoke"]["agent"] = {"batch_size": 2}
    data["claims"] = []
    spec = validate_spec(data)
    [variant] = spec.variant_list()
    smoke, cpu, paper = (resolve_agent(spec, variant, s) for s in ("smoke", "cpu", "paper"))
    assert (smoke.batch_size, smoke.unroll_length) == (2, 7)  # scale wins; the variant's other change stays
    assert (cpu.batch_size, paper.batch_size) == (16, 16)  # no scale override at cpu, none ever at paper


def test_apply_overrides_copies_and_merges() -> None:
    data = {"loss": {"a": 1, "b": {"c": 2}}, "x": [1]}
    result = apply_overrides(data, {"loss.b.c": 3, "loss": {"a": 5}, "y.z": 1})
    assert result == {"loss": {"a": 5, "b": {"c": 3}}, "x": [1], "y": {"z": 1}}
    assert data == {"loss": {"a": 1, "b": {"c": 2}}, "x": [1]}  # input untouched


def test_apply_overrides_below_a_non_mapping_is_an_error() -> None:
    with pytest.raises(SpecError, match=r"policy_lag.x: cannot set a field below 'policy_lag', which is 0 \(int\)"):
        apply_overrides({"policy_lag": 0}, {"policy_lag.x": 1})


@pytest.mark.parametrize(
    ("where", "field"),
    [("variant", "variants 'b' agent.batch_size.x"), ("scale", "scales.smoke.agent.batch_size.x")],
)
def test_a_dotted_override_below_a_number_names_the_file_and_the_field(tmp_path: Path, where: str, field: str) -> None:
    data = minimal()
    if where == "variant":
        data["variants"][1]["agent"] = {"batch_size.x": 8}
    else:
        data["scales"]["smoke"]["agent"] = {"batch_size.x": 8}
    path = write(tmp_path, data)
    with pytest.raises(SpecError) as error:
        load_spec(path)
    text = str(error.value)
    assert text.startswith(f"{path}: invalid spec")
    assert f"{field}: cannot set a field below 'batch_size', which is " in text and "(int), not a mapping" in text


def test_spec_hash_is_stable_across_loads(tmp_path: Path) -> None:
    path = write(tmp_path, minimal())
    first, second = spec_hash(load_spec(path)), spec_hash(load_spec(path))
    assert first == second
    assert len(first) == 12 and int(first, 16) >= 0
    # the same content written with other key order and number spellings hashes the same
    reordered = tmp_path / "b" / "mini.yaml"
    reordered.parent.mkdir()
    text = path.read_text().replace("learning_rate: 0.001", "learning_rate: 1e-3")
    assert "learning_rate: 1e-3" in text
    reordered.write_text(text + "\n# a comment\n", encoding="utf-8")
    assert spec_hash(load_spec(reordered)) == first


def test_spec_hash_changes_with_a_hyper_parameter() -> None:
    base = spec_hash(validate_spec(minimal()))
    data = minimal()
    data["agent"]["optimizer"]["learning_rate"] = 0.002
    assert spec_hash(validate_spec(data)) != base


def test_spec_hash_of_real_spec_is_stable() -> None:
    path = REPO / "specs" / "impala" / "offpolicy_correction_toy.yaml"
    spec = load_spec(path)
    assert spec_hash(spec) == spec_hash(load_spec(path))
    assert spec_hash(spec) == spec_hash(ExperimentSpec.model_validate_json(json.dumps(spec.model_dump(mode="json"))))


def test_an_agent_config_takes_its_defaults_from_the_spec_model_and_may_not_repeat_one():
    """``defaults_from``: a default lives in the spec model alone (PPO's learning rate and gamma were written twice)."""
    import dataclasses

    from rlrepro.agents.ppo.config import PPOConfig
    from rlrepro.specs.agents import PPOAgentSpec
    from rlrepro.specs.agents.common import defaults_from

    defaults = PPOConfig()
    assert defaults.policy_learning_rate == PPOAgentSpec.model_fields["policy_learning_rate"].default == 1e-4
    assert defaults.hidden_sizes == (64, 64)  # the spec's list, as the frozen config's tuple

    with pytest.raises(TypeError, match="Repeated.discount: its default belongs to PPOAgentSpec.discount alone"):

        @dataclasses.dataclass(frozen=True)
        @defaults_from(PPOAgentSpec)
        class Repeated:
            discount: float = 0.99


def test_a_nested_or_renamed_field_takes_its_default_from_its_place_in_the_spec_and_is_read_from_there():
    """Issue 29: ``defaults_from``'s path table ties ImpalaConfig's nested and renamed fields (``rmsprop_decay`` is
    ``optimizer.decay``, ``lambda_`` is ``loss.trace_lambda``) to the spec model's defaults; ``spec_values`` reads
    them from a spec, and refuses a spec that lacks one unless it is left out."""
    import dataclasses

    from rlrepro.agents.impala.config import ImpalaConfig
    from rlrepro.specs.agents import ImpalaSRAgentSpec
    from rlrepro.specs.agents.common import RMSPropSpec, defaults_from, spec_values
    from rlrepro.specs.agents.impala import ImpalaLossSpec, ReplaySpec

    defaults = ImpalaConfig()
    assert defaults.rmsprop_decay == RMSPropSpec.model_fields["decay"].default == 0.99
    assert defaults.lambda_ == ImpalaLossSpec.model_fields["trace_lambda"].default == 1.0
    assert defaults.replay_capacity == ReplaySpec.model_fields["capacity"].default
    assert ImpalaConfig.SPEC_PATHS["lambda_"] == "loss.trace_lambda" and "conv_network" not in ImpalaConfig.SPEC_PATHS

    spec = ImpalaAgentSpec.model_validate({
        "kind": "impala", "unroll_length": 7, "batch_size": 3,
        "optimizer": {"learning_rate": 1e-3, "epsilon": 0.1, "decay": 0.5},
        "loss": {"discount": 0.9, "entropy_cost": 0.02, "trace_lambda": 0.7}, "replay": {"fraction": 0.25},
    })
    values = spec_values(ImpalaConfig, spec)
    assert (values["rmsprop_decay"], values["lambda_"], values["replay_fraction"], values["unroll_length"]) == (
        0.5, 0.7, 0.25, 7)
    sr = ImpalaSRAgentSpec.model_validate({**spec.model_dump(exclude={"replay", "kind", "multitask"}), "kind": "impala_sr",
                                           "sr": {"enabled": False, "alpha": 0.0, "memory_capacity": 10}})
    with pytest.raises(AttributeError, match="ImpalaSRAgentSpec has no 'replay.fraction' for ImpalaConfig.replay_fraction"):
        spec_values(ImpalaConfig, sr)
    assert "replay_fraction" not in spec_values(ImpalaConfig, sr, omit=("replay_fraction", "replay_capacity"))

    with pytest.raises(TypeError, match="Misplaced.decay: ImpalaAgentSpec has no field 'optimiser.decay'"):

        @dataclasses.dataclass(frozen=True)
        @defaults_from(ImpalaAgentSpec, {"decay": "optimiser.decay"})
        class Misplaced:
            decay: float
