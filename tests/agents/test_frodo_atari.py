"""FRODO on real ALE games: the meta-gradient moves eta through IMPALA's actors, and the smoke spec runs end to end."""

from __future__ import annotations

import json
import math
from pathlib import Path

import jax
import numpy as np
import pytest

pytest.importorskip("ale_py", reason="ale-py is pinned in envs/ and installed by `make install`")

from rlrepro.agents.frodo.host_trainer import HostFrodoTrainer  # noqa: E402
from rlrepro.agents.frodo.build import frodo_config  # noqa: E402
from rlrepro.specs.agents.frodo import FrodoAgentSpec  # noqa: E402
from rlrepro.specs.agents.impala import ActorSpec  # noqa: E402
from rlrepro.specs.environments import AtariEnvSpec  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
RMSPROP = {"learning_rate": 1e-3, "decay": 0.99, "epsilon": 0.1, "max_grad_norm": 1e4}
AGENT = {
    "kind": "frodo",
    "task": "actor_critic",
    "network": {"kind": "frodo_conv"},
    "optimizer": RMSPROP,
    "meta_optimizer": {**RMSPROP, "learning_rate": 5e-4},
    "meta_network": {"hidden_size": 8, "inputs": ["reward", "discount", "v_next", "pi_a", "mu_a", "torso"]},
    "inner_steps": 2,
    "unroll_length": 4,
    "batch_size": 2,
    "discount": 0.99,
    "reward_clip": 1.0,
    "outer": {"kind": "vtrace"},
    "consistency": {"weight": 0.1},
    "actor": {"mode": "sync"},
}


def _one_meta_update(**changes: object) -> tuple[object, object, object]:
    agent = FrodoAgentSpec.model_validate({**AGENT, **changes})
    env_spec = AtariEnvSpec(kind="atari", id="pong", game="pong", num_envs=2, evaluation={"episodes": 1})
    config = frodo_config(agent, total_updates=10, meta_unroll=1)
    trainer = HostFrodoTrainer(config, env_spec, ActorSpec(mode="sync"), updates_per_chunk=1, total_updates=10)
    before = trainer.init(jax.random.key_data(jax.random.key(0)))
    after, metrics = trainer.run_chunk(before)
    trainer.stop()
    return before, after, metrics


def _moved(a: object, b: object) -> bool:
    flat = lambda tree: np.concatenate([np.ravel(x) for x in jax.tree.leaves(tree)])  # noqa: E731
    return not np.allclose(flat(a), flat(b))


def test_one_meta_update_on_pong_moves_eta_and_the_agent():
    before, after, metrics = _one_meta_update()
    assert int(after.version) == 1
    assert float(metrics.frames[0]) == (2 * 4 + 4) * 2 * 4  # (M T + T) B steps, action repeat 4
    assert _moved(before.learner.meta_params, after.learner.meta_params)  # the meta-gradient reached eta
    assert _moved(before.learner.params, after.learner.params)
    assert 0 < float(metrics.meta_grad_norm[0]) < math.inf
    for name in ("outer_loss", "inner_loss", "consistency_loss", "vtrace_g_mse"):
        assert math.isfinite(float(getattr(metrics, name)[0])), name
    assert float(metrics.policy_lag[0]) == 0.0  # sync mode: acted with the latest parameters


def test_the_impala_baseline_variant_leaves_eta_alone():
    before, after, metrics = _one_meta_update(target="vtrace", consistency={"weight": 0.0})
    assert not _moved(before.learner.meta_params, after.learner.meta_params)
    assert _moved(before.learner.params, after.learner.params)
    assert float(metrics.meta_grad_norm[0]) == 0.0


@pytest.mark.slow  # a second host program to compile; the meta-update on Pong is checked above
def test_the_loss_parameterisation_meta_learns_on_pong():
    meta = {**AGENT["meta_network"], "parameterises": "loss"}
    before, after, metrics = _one_meta_update(meta_network=meta, consistency={"weight": 0.0})
    assert _moved(before.learner.meta_params, after.learner.meta_params)
    assert 0 < float(metrics.meta_grad_norm[0]) < math.inf
    assert math.isnan(float(metrics.vtrace_g_mse[0]))  # no learned target to compare with V-trace


@pytest.mark.slow
def test_atari57_smoke_scale_trains_pong_end_to_end(tmp_path: Path):
    from rlrepro.cli import main

    args = ["train", "--spec", str(REPO / "specs/frodo/atari57.yaml"), "--scale", "smoke", "--variant", "frodo",
            "--env", "pong", "--results", str(tmp_path), "--no-mlflow", "--progress", "lines"]
    assert main(args) == 0
    run_dir = tmp_path / "smoke/runs/frodo/atari57/frodo/pong/seed0"
    records = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    assert len(records) == 3 and records[-1]["frames"] >= 21_600
    assert all(0 < r["meta_grad_norm"] < math.inf and math.isfinite(r["vtrace_g_mse"]) for r in records)
    assert sum(r["episodes"] for r in records) > 0 and math.isfinite(records[-1]["eval_return"])
    assert (run_dir / "summary.json").exists()


def test_the_impala_baseline_learns_from_every_batch_it_is_charged_for():
    """Frames charged per update equal the frames the IMPALA baseline learns from (all M + 1 batches).

    The baseline's parameters after one update must depend on each batch it collected: changing the rewards
    of any one batch (real Pong unrolls from the actors) changes them.
    """
    from rlrepro.agents.frodo.host_trainer import host_meta_update

    agent = FrodoAgentSpec.model_validate({**AGENT, "target": "vtrace", "consistency": {"weight": 0.0}})
    env_spec = AtariEnvSpec(kind="atari", id="pong", game="pong", num_envs=2, evaluation={"episodes": 1})
    config = frodo_config(agent, total_updates=10, meta_unroll=1)
    trainer = HostFrodoTrainer(config, env_spec, ActorSpec(mode="sync"), updates_per_chunk=1, total_updates=10)
    state = trainer.init(jax.random.key_data(jax.random.key(0)))
    trainer._start_actors(state.learner.params, state.rng, 0)
    batches, _, _ = trainer.next_batches()
    trainer.stop()
    update = jax.jit(lambda s, b: host_meta_update(s, b, jax.random.key(2), config=config, nets=trainer.nets)[0])
    reference = update(state.learner, batches).params
    learned_from = 0
    for i, batch in enumerate(batches):
        changed = batches[:i] + (batch._replace(rewards=batch.rewards + 1.0),) + batches[i + 1 :]
        learned_from += _moved(reference, update(state.learner, changed).params)
    frames_learned = learned_from * config.unroll_length * config.batch_size * env_spec.action_repeat
    charged = config.frames_per_meta_update * env_spec.action_repeat
    assert len(batches) == config.inner_steps + 1
    assert frames_learned == charged == (2 * 4 + 4) * 2 * 4
