"""PPO (the ReF-ER paper's baseline, Fig. 4): the spec -> config path, the learner on a tiny task, and the host
loop's rollout bookkeeping (terminals vs truncations) on a real MuJoCo task."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from rlrepro.agents.ppo import learner as plearner
from rlrepro.agents.ppo.actor import act
from rlrepro.agents.ppo.build import resolve_ppo
from rlrepro.agents.ppo.config import PPOConfig
from rlrepro.agents.ppo.loop import HostPPO, RunningStats
from rlrepro.specs import load_spec, resolve_agent
from rlrepro.specs.agents.baselines import PPOAgentSpec
from rlrepro.specs.environments import MujocoEnvSpec


def _pendulum(**kw) -> MujocoEnvSpec:
    base = dict(kind="mujoco", id="inverted_pendulum", name="InvertedPendulum-v5", paper_name="InvertedPendulum-v2",
                changes_from_paper="no alive reward on the terminating step", comparable_to_paper=False)
    return MujocoEnvSpec(**{**base, **kw})


def test_the_spec_gives_app_a_settings_and_rejects_partial_minibatches():
    agent = resolve_agent(load_spec("specs/refer/mujoco_baselines.yaml"), _variant("ppo"), "paper")
    config = resolve_ppo(agent, None, frames=1, run=None)
    assert (config.discount, config.gae_lambda, config.clip_epsilon) == (0.995, 0.97, 0.2)
    assert (config.rollout_steps, config.epochs, config.minibatch_size, config.minibatches) == (2048, 10, 64, 32)
    assert (config.policy_learning_rate, config.value_learning_rate, config.hidden_sizes) == (1e-4, 3e-4, (64, 64))
    with pytest.raises(ValueError, match="minibatch_size 48 must divide rollout_steps 2048"):
        PPOAgentSpec(kind="ppo", minibatch_size=48)


def _variant(name: str):
    spec = load_spec("specs/refer/mujoco_baselines.yaml")
    return next(v for v in spec.variant_list() if v.name == name)


def test_running_stats_by_hand():
    stats = RunningStats(1)  # count 1e-4 at mean 0, variance 1
    for x in (1.0, 3.0):
        stats.add(np.array([x]))
    # n = 2.0001: mean = (0 * 1e-4 + 1 + 3) / 2.0001; the variance is the pooled second moment about it.
    n = 2.0001
    mean = 4.0 / n
    var = (1e-4 * (1.0 + mean**2) + (1 - mean) ** 2 + (3 - mean) ** 2) / n
    np.testing.assert_allclose(stats.mean, [mean], rtol=1e-9)
    np.testing.assert_allclose(stats.var, [var], rtol=1e-9)


def test_ppo_learns_a_one_dimensional_target_task():
    """Each step is a one-step episode: s ~ U[-1, 1], r = -(a - s)^2 (a true terminal, nothing to bootstrap).
    The expected reward is -((m(s) - s)^2 + std^2): about -1.33 for the initial policy (m ~ 0, std 1); the
    clipped-surrogate updates must bring it above -0.25 within 40 rollouts of 256 steps."""
    config = PPOConfig(hidden_sizes=(16,), rollout_steps=256, minibatch_size=64, epochs=4, policy_learning_rate=3e-3,
                       value_learning_rate=3e-3, anneal_a=0.0)
    state = plearner.init(config, jax.random.key(0), 1, 1)
    act_batch = jax.jit(jax.vmap(lambda p, v, s, k: act(config, 1, p, v, s, k), in_axes=(None, None, 0, 0)))
    update = jax.jit(lambda st, traj, k: plearner.update(config, 1, st, traj, k, 3e-3, 3e-3))
    key, rewards = jax.random.key(1), []
    for _ in range(40):
        key, obs_key, act_key, update_key = jax.random.split(key, 4)
        obs = jax.random.uniform(obs_key, (256, 1), minval=-1.0, maxval=1.0)
        a = act_batch(state.policy_params, state.value_params, obs, jax.random.split(act_key, 256))
        r = -((a.action[:, 0] - obs[:, 0]) ** 2)
        zeros = jnp.zeros(256)
        traj = plearner.Trajectory(obs, a.action, a.log_prob, a.mean, a.std, a.v, r, zeros, zeros, zeros)
        state, metrics = update(state, traj, update_key)
        rewards.append(float(jnp.mean(r)))
        assert np.isfinite(float(metrics.kl)) and float(metrics.kl) >= 0
    assert np.mean(rewards[:2]) < -1.0
    assert np.mean(rewards[-5:]) > -0.25


def test_host_loop_records_terminals_and_truncations_on_inverted_pendulum():
    """A 4-step time limit makes most episodes truncated: there the step keeps gamma and bootstraps from V of the
    final observation (nonzero); at a terminal the discount is 0; inside an episode v_t is the next step's v_tm1."""
    config = PPOConfig(hidden_sizes=(8,), rollout_steps=32, minibatch_size=8, epochs=1)
    host = HostPPO(config, _pendulum(max_episode_steps=4))
    state = host.init([0, 1])
    state, metrics = host.run(state, 32)  # exactly one rollout: one update, the buffer still holds it
    b = state.host.buffer
    assert b.pos == 0 and state.host.steps == 32
    ended = b.continue_t == 0
    terminal = b.discount_t == 0
    assert np.all(ended[terminal]) and ended.sum(axis=1).tolist() == metrics.episodes.tolist()
    truncated = ended & ~terminal
    assert truncated.sum() > 0
    assert np.all(b.discount_t[truncated] == np.float32(0.995)) and np.all(b.v_t[truncated] != 0.0)
    inside = ~ended[:, :-1]
    np.testing.assert_array_equal(b.v_t[:, :-1][inside], b.v_tm1[:, 1:][inside])
    assert np.all(np.isfinite([metrics.policy_loss, metrics.value_loss, metrics.kl])) and np.all(metrics.kl >= 0)


def test_host_loop_carries_the_last_update_into_chunks_without_one():
    config = PPOConfig(hidden_sizes=(8,), rollout_steps=16, minibatch_size=8, epochs=1)
    host = HostPPO(config, _pendulum())
    state = host.init([3])
    state, before = host.run(state, 8)
    assert np.isnan(before.kl).all()
    state, with_update = host.run(state, 8)
    state, after = host.run(state, 8)
    np.testing.assert_array_equal(after.kl, with_update.kl)


def test_seeds_in_lockstep_match_seeds_alone():
    config = PPOConfig(hidden_sizes=(8,), rollout_steps=16, minibatch_size=8, epochs=2)
    host = HostPPO(config, _pendulum())
    together = host.run(host.init([0, 5]), 40)[0]
    alone = host.run(host.init([5]), 40)[0]
    for a, b in zip(jax.tree.leaves(together.learner.policy_params), jax.tree.leaves(alone.learner.policy_params)):
        np.testing.assert_allclose(np.asarray(a)[1], np.asarray(b)[0], rtol=1e-4, atol=1e-6)


def test_a_checkpoint_taken_mid_rollout_resumes_exactly(tmp_path):
    """The partial rollout, the observation statistics and the environments are part of the checkpointed state:
    24 + 24 steps through a checkpoint equal 48 steps straight (an update at step 32 in between)."""
    from rlrepro.jobs import checkpoint

    config = PPOConfig(hidden_sizes=(8,), rollout_steps=32, minibatch_size=8, epochs=1)
    host = HostPPO(config, _pendulum())
    half, _ = host.run(host.init([0, 1]), 24)
    straight, _ = host.run(half, 24)
    state, _ = host.run(host.init([0, 1]), 24)
    checkpoint.save(tmp_path / "ppo.ckpt", state, {"chunk": 1})
    restored = checkpoint.restore(tmp_path / "ppo.ckpt", host.init([0, 1]))
    resumed, _ = host.run(restored, 24)
    for a, b in zip(jax.tree.leaves(straight.learner), jax.tree.leaves(resumed.learner)):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    np.testing.assert_array_equal(straight.host.buffer.obs, resumed.host.buffer.obs)
    assert straight.host.episode_returns == resumed.host.episode_returns


@pytest.mark.slow
def test_ppo_improves_on_inverted_pendulum_at_app_a_settings():
    """App. A's PPO (2048-step rollouts, 10 epochs of 64, learning rates 1e-4 / 3e-4) on InvertedPendulum-v5: a
    uniform-random policy scores about 5; after 30K steps (14 updates) the training return must have risen well
    above where it started."""
    config = PPOConfig()  # App. A (the spec's paper values)
    host = HostPPO(config, _pendulum())
    state = host.init([0])
    state, first = host.run(state, 2048)
    for _ in range(13):
        state, last = host.run(state, 2048)
    early, late = float(first.mean_return[0]), float(last.mean_return[0])
    assert late > max(3 * early, 50.0), (early, late)
