"""``scales.<scale>.variant_agent``: agent overrides of one variant at one scale (variants of different agent kinds,
e.g. V-RACER and its PPO baseline, each sized down with its own fields)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from rlrepro.specs import SpecError, load_spec, resolve_agent, validate_spec
from tests.factories import toy_spec_data


def _data(**cpu) -> dict:
    return toy_spec_data(
        variants=[{"name": "a"}, {"name": "b", "agent": {"loss.correction": "none"}}],
        budget={"frames": 1000, "seeds": 2},
        scales={"smoke": {"frames": 100, "seeds": 1}, "cpu": {"frames": 200, "seeds": 1, **cpu}},
    )


def _load(tmp_path: Path, data: dict):
    path = tmp_path / "mini.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return load_spec(path)


def test_variant_agent_overrides_only_its_variant_after_the_scale_agent(tmp_path: Path) -> None:
    spec = _load(tmp_path, _data(agent={"batch_size": 8}, variant_agent={"b": {"batch_size": 2}}))
    a, b = spec.variant_list()
    assert resolve_agent(spec, a, "cpu").batch_size == 8
    assert resolve_agent(spec, b, "cpu").batch_size == 2
    assert resolve_agent(spec, b, "smoke").batch_size == resolve_agent(spec, b, "paper").batch_size == 4


def test_variant_agent_names_a_variant() -> None:
    with pytest.raises(SpecError) as caught:
        validate_spec(_data(variant_agent={"c": {"batch_size": 2}}), source="specs/toy/mini.yaml")
    [line] = caught.value.problems
    assert "scales.cpu.variant_agent: unknown ['c']" in line


def test_a_bad_variant_agent_value_names_the_scale_and_variant(tmp_path: Path) -> None:
    with pytest.raises(SpecError) as caught:
        _load(tmp_path, _data(variant_agent={"b": {"batch_size": 0}}))
    [line] = caught.value.problems
    assert line.startswith("agent (variant 'b' at scale 'cpu').batch_size: expected greater than 0")


def test_the_baselines_spec_sizes_each_kind_with_its_own_fields() -> None:
    spec = load_spec("specs/refer/mujoco_baselines.yaml")
    variants = {v.name: v for v in spec.variant_list()}  # refer2 (V-RACER, paper scale only) sized as refer
    refer, ppo, acer_slow, acer_fast = (variants[n] for n in ("refer", "ppo", "acer_lr1e-5", "acer_lr1e-4"))
    smoke_refer, smoke_ppo = resolve_agent(spec, refer, "smoke"), resolve_agent(spec, ppo, "smoke")
    assert (smoke_refer.kind, smoke_refer.replay.n_start, smoke_ppo.kind, smoke_ppo.rollout_steps) == ("vracer", 500, "ppo", 256)
    assert resolve_agent(spec, refer, "cpu").replay.capacity == 32_768
    assert resolve_agent(spec, ppo, "cpu") == resolve_agent(spec, ppo, "paper")  # App. A's PPO at cpu scale
    for acer, rate in ((acer_slow, 1e-5), (acer_fast, 1e-4)):
        smoke, cpu, paper = (resolve_agent(spec, acer, scale) for scale in ("smoke", "cpu", "paper"))
        assert (smoke.kind, smoke.n_start, smoke.window, smoke.policy_learning_rate) == ("acer", 500, 8, rate)
        assert (cpu.n_start, cpu.batch_episodes, cpu.window, cpu.capacity) == (4096, 8, 8, 100_000)
        assert (paper.n_start, paper.batch_episodes, paper.window, paper.policy_learning_rate) == (100_000, 24, 200, rate)
