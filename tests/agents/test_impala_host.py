"""IMPALA's actor-learner on real ALE games: determinism of the synchronous mode, threads, evaluation, episode ends."""

from __future__ import annotations

import jax
import numpy as np
import pytest

pytest.importorskip("ale_py", reason="ale-py is pinned in envs/ and installed by `make install`")

from rlrepro.agents.impala.host_trainer import HostImpalaTrainer, batch_from_unrolls  # noqa: E402
from rlrepro.agents.impala.learner import corrected_targets  # noqa: E402
from rlrepro.agents.impala.trainer import impala_config  # noqa: E402
from rlrepro.environments.atari import AtariEnv  # noqa: E402
from rlrepro.specs import ImpalaAgentSpec  # noqa: E402
from rlrepro.specs.agents.impala import ActorSpec  # noqa: E402
from rlrepro.specs.environments import AtariEnvSpec  # noqa: E402
from rlrepro.training.actor_learner import play_unroll, start_actor  # noqa: E402

AGENT = {
    "kind": "impala",
    "network": {"kind": "impala_shallow", "fc_size": 32},
    "optimizer": {"learning_rate": 6e-4, "epsilon": 0.01, "max_grad_norm": 40.0},
    "loss": {"entropy_cost": 0.01},
    "unroll_length": 5,
    "batch_size": 4,
}


def make_trainer(mode: str, *, total_updates: int = 4, lag: int = 1, **env) -> HostImpalaTrainer:
    agent = ImpalaAgentSpec.model_validate({**AGENT, "policy_lag": lag})
    env_spec = AtariEnvSpec(kind="atari", id="pong", game="pong", num_envs=4, evaluation={"episodes": 2}, **env)
    config = impala_config(agent, total_updates=total_updates)
    return HostImpalaTrainer(config, env_spec, ActorSpec(mode=mode), updates_per_chunk=2)


def run(trainer: HostImpalaTrainer, chunks: int) -> list[dict]:
    state = trainer.init(jax.random.key_data(jax.random.key(0)))
    out = []
    for _ in range(chunks):
        state, metrics = trainer.run_chunk(state)
        out.append({k: float(v[0]) for k, v in metrics._asdict().items() if k != "fps"})
    trainer.stop()
    return out


def test_the_synchronous_mode_is_deterministic_and_evaluates_at_the_end():
    first = run(make_trainer("sync", max_episode_frames=2000), chunks=2)
    second = run(make_trainer("sync", max_episode_frames=2000), chunks=2)
    for a, b in zip(first, second):
        assert a == pytest.approx(b, nan_ok=True)
    assert first[-1]["frames"] == 4 * 5 * 4 * 4  # updates x T x B x action repeat
    assert np.isnan(first[0]["eval_return"]) and -21 <= first[-1]["eval_return"] <= 21
    assert first[0]["policy_lag"] == 0.5  # updates 1, 2 act with version 0: lags 0 and 1
    assert first[-1]["policy_lag"] == 1.0  # then always exactly 1


def test_threaded_actors_train_and_measure_the_policy_lag():
    metrics = run(make_trainer("threaded", max_episode_frames=2000), chunks=2)
    assert all(np.isfinite(m["total_loss"]) for m in metrics)
    assert all(0 <= m["policy_lag"] <= 4 for m in metrics)  # bounded by the queue (2) and the unroll in hand


def test_a_truncated_game_never_bootstraps_from_the_next_game():
    """At the frame cap the discount is 0: the V-trace target there ignores the next game's value."""
    trainer = make_trainer("sync", max_episode_frames=40, noop_max=0)  # 10 agent steps per game
    env = AtariEnv(trainer.env_spec, num_envs=4, seed=0, num_threads=1)
    state = trainer.init(jax.random.key_data(jax.random.key(0)))
    actor = start_actor(env, (), jax.random.key(1))
    _, unroll = play_unroll(env, trainer.policy_step, trainer._reset_core, state.learner.params, 0, actor, 12)
    batch = batch_from_unrolls([unroll])
    t = int(np.flatnonzero(np.asarray(batch.dones[:, 0]))[0])
    assert t == 9  # the 10th step hits the cap
    discount = 0.99 * (1.0 - np.asarray(batch.dones, np.float32))
    v = np.random.default_rng(0).normal(size=(13, 4)).astype(np.float32)
    rho = np.ones((12, 4), np.float32)
    errors, _ = corrected_targets(trainer.config, v[:-1], v[1:], np.asarray(batch.rewards), discount, rho)
    v_changed = v.copy()
    v_changed[t + 1 :] += 100.0  # every value of the next game changes
    errors_changed, _ = corrected_targets(trainer.config, v_changed[:-1], v_changed[1:], np.asarray(batch.rewards), discount, rho)
    np.testing.assert_allclose(np.asarray(errors)[: t + 1, 0], np.asarray(errors_changed)[: t + 1, 0], rtol=1e-6)
    env.close()
