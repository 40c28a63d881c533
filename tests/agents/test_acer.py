"""Continuous ACER (the ReF-ER paper's baseline, Fig. 4, App. A): the spec -> config path, the window sampling of
the episode memory (terminals vs truncations), the learner (the average policy's soft update, learning on a tiny
task) and the host loop on a real MuJoCo task."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from rlrepro.agents.acer import learner as alearner
from rlrepro.agents.acer.actor import act
from rlrepro.agents.acer.build import resolve_acer
from rlrepro.agents.acer.config import ACERConfig
from rlrepro.agents.acer.memory import sample_windows
from rlrepro.agents.acer.loop import HostACER
from rlrepro.replay.episodes import EpisodeReplay
from rlrepro.specs import load_spec, resolve_agent
from rlrepro.specs.agents.baselines import ACERAgentSpec
from rlrepro.specs.environments import MujocoEnvSpec


def _pendulum(**kw) -> MujocoEnvSpec:
    base = dict(kind="mujoco", id="inverted_pendulum", name="InvertedPendulum-v5", paper_name="InvertedPendulum-v2",
                changes_from_paper="no alive reward on the terminating step", comparable_to_paper=False)
    return MujocoEnvSpec(**{**base, **kw})


def _variant(name: str):
    spec = load_spec("specs/refer/mujoco_baselines.yaml")
    return resolve_agent(spec, next(v for v in spec.variant_list() if v.name == name), "paper")


def test_the_spec_gives_app_a_settings_and_rejects_a_start_beyond_the_memory():
    slow, fast = (resolve_acer(_variant(n), None, frames=1, run=None) for n in ("acer_lr1e-5", "acer_lr1e-4"))
    assert (slow.importance_clip, slow.trust_region_delta, slow.advantage_samples) == (5.0, 1.0, 5)
    assert (slow.capacity, slow.batch_episodes, slow.average_rate, slow.hidden_sizes) == (100_000, 24, 0.001, (128, 128))
    assert (slow.value_learning_rate, slow.advantage_learning_rate, slow.discount) == (1e-4, 1e-4, 0.995)
    assert (slow.policy_learning_rate, fast.policy_learning_rate) == (1e-5, 1e-4)
    assert fast == ACERConfig(**{**slow.__dict__, "policy_learning_rate": 1e-4})  # the only difference
    with pytest.raises(ValueError, match="n_start 2000 must not exceed capacity 1000"):
        ACERAgentSpec(kind="acer", capacity=1000, n_start=2000)


def _memory() -> EpisodeReplay:
    """Episode A: s = 0, 1, 2, terminated at s_3 = 3; episode B: s = 10..14, truncated at s_5 = 99. r_t = s_t."""
    replay = EpisodeReplay(100, 10, 1, 1, 0.9, seed=0)
    for s in (0.0, 1.0, 2.0):
        replay.add(np.array([s]), np.array([s]), s, np.zeros(1), np.ones(1), 0.0)
    replay.end_episode(np.array([3.0]), True, 0.0)
    for s in (10.0, 11.0, 12.0, 13.0, 14.0):
        replay.add(np.array([s]), np.array([s]), s, np.zeros(1), np.ones(1), 0.0)
    replay.end_episode(np.array([99.0]), False, 0.0)
    replay.reward_scale = 2.0
    return replay


def test_windows_by_hand_terminal_truncation_and_a_cut_inside_an_episode():
    w = sample_windows(_memory(), 64, 4)
    seen = set()
    for b in range(64):
        obs = w["obs"][b, :, 0].tolist()
        if obs[0] < 10:  # episode A (3 steps < window 4): the whole episode, one padded step repeating the last
            assert obs == [0, 1, 2, 2] and w["mask"][b].tolist() == [1, 1, 1, 0]
            assert w["next_obs"][b, :3, 0].tolist() == [1, 2, 3]  # s_3 = the final observation
            assert w["discount"][b, :3].tolist() == pytest.approx([0.9, 0.9, 0.0])  # terminal: nothing follows
            assert w["continue_"][b].tolist() == [1, 1, 0, 0]
            assert w["reward"][b].tolist() == [0, 2, 4, 0]  # r * scale 2, padding 0
            seen.add("A")
        elif obs[0] == 10:  # B from its start: the window ends inside the episode, bootstrapping from V(s = 14)
            assert obs == [10, 11, 12, 13] and w["next_obs"][b, :, 0].tolist() == [11, 12, 13, 14]
            assert w["discount"][b].tolist() == pytest.approx([0.9] * 4) and w["continue_"][b].tolist() == [1, 1, 1, 0]
            seen.add("B0")
        else:  # B's last 4 steps: truncated at the end, bootstrapping from V(final observation 99)
            assert obs == [11, 12, 13, 14] and w["next_obs"][b, :, 0].tolist() == [12, 13, 14, 99]
            assert w["discount"][b].tolist() == pytest.approx([0.9] * 4) and w["mask"][b].tolist() == [1, 1, 1, 1]
            seen.add("B1")
    assert seen == {"A", "B0", "B1"}  # episodes and starts drawn uniformly: all three appear in 64 draws


def _batch(key, b=4, l=3, obs_dim=2, action_dim=2):
    k = jax.random.split(key, 4)
    ones = jnp.ones((b, l))
    return alearner.Batch(
        obs=jax.random.normal(k[0], (b, l, obs_dim)), next_obs=jax.random.normal(k[1], (b, l, obs_dim)),
        action=jax.random.normal(k[2], (b, l, action_dim)) * 0.4, mu_mean=jnp.zeros((b, l, action_dim)),
        mu_std=jnp.full((b, l, action_dim), 0.45), reward=jax.random.normal(k[3], (b, l)), discount=0.9 * ones,
        continue_=ones.at[:, -1].set(0.0), mask=ones,
    )


@pytest.mark.slow
def test_one_update_moves_the_average_policy_by_alpha_and_reports_finite_metrics():
    config = ACERConfig(hidden_sizes=(8,), average_rate=0.25, policy_learning_rate=1e-2)
    state = jax.jit(lambda key: alearner.init(config, key, 2, 2))(jax.random.key(0))
    update = jax.jit(lambda st, batch, key: alearner.update(config, 2, st, batch, key, 1e-2, 1e-3, 1e-3))
    new, metrics = update(state, _batch(jax.random.key(1)), jax.random.key(2))
    for avg, old, cur in zip(*(jax.tree.leaves(p) for p in (new.average_policy_params, state.policy_params, new.policy_params))):
        np.testing.assert_allclose(avg, 0.25 * cur + 0.75 * old, rtol=1e-5, atol=1e-7)  # phi_avg <- a phi + (1-a) phi_avg
    changed = [not np.allclose(a, b) for a, b in zip(jax.tree.leaves(new), jax.tree.leaves(state))]
    assert any(changed)
    assert all(np.isfinite(np.asarray(m)).all() for m in metrics) and float(metrics.kl) >= 0


@pytest.mark.slow
def test_acer_learns_a_one_dimensional_target_task():
    """One-step episodes (windows of length 1, a true terminal): s ~ U[-1, 1], r = -(a - s)^2, the behaviour the
    policy of the moment. The expected reward is -((m(s) - s)^2 + std^2): about -0.53 at the start (m ~ 0, std
    0.447); the critic and the trust-region-projected policy gradient must bring it above -0.2."""
    config = ACERConfig(hidden_sizes=(32,), average_rate=0.05, policy_learning_rate=3e-3, value_learning_rate=3e-3,
                        advantage_learning_rate=3e-3)
    state = alearner.init(config, jax.random.key(0), 1, 1)
    act_batch = jax.jit(jax.vmap(lambda p, s, k: act(config, 1, p, s, k), in_axes=(None, 0, 0)))
    update = jax.jit(lambda st, batch, k: alearner.update(config, 1, st, batch, k, 3e-3, 3e-3, 3e-3))
    key, rewards = jax.random.key(1), []
    zeros, ones = jnp.zeros((128, 1)), jnp.ones((128, 1))
    for _ in range(150):
        key, obs_key, act_key, update_key = jax.random.split(key, 4)
        obs = jax.random.uniform(obs_key, (128, 1, 1), minval=-1.0, maxval=1.0)
        a = act_batch(state.policy_params, obs[:, 0], jax.random.split(act_key, 128))
        r = -((a.action - obs[:, 0]) ** 2)
        batch = alearner.Batch(obs, obs, a.action[:, None], a.mean[:, None], jnp.broadcast_to(a.std, a.mean.shape)[:, None],
                               r, zeros, zeros, ones)
        state, metrics = update(state, batch, update_key)
        rewards.append(float(jnp.mean(r)))
    assert np.mean(rewards[:3]) < -0.4
    assert np.mean(rewards[-10:]) > -0.2, rewards[-10:]


@pytest.mark.slow
def test_host_loop_on_inverted_pendulum_stores_episode_ends_and_learns_after_n_start():
    """A 4-step time limit makes most episodes truncated; the memory records which ended in a terminal, the first
    gradient comes at N_start, the learning rate is eq. 13's eta(t)."""
    config = ACERConfig(hidden_sizes=(8,), n_start=20, capacity=64, batch_episodes=3, window=4, anneal_a=1e-3)
    host = HostACER(config, _pendulum(max_episode_steps=4))
    state = host.init([0, 1])
    state, before = host.run(state, 19)
    assert np.isnan(before.kl).all() and state.host.updates == 0
    state, after = host.run(state, 11)  # steps 20..30: 11 gradient steps
    assert state.host.updates == 11
    for replay in state.host.replays:
        lengths = [length for _, length, _, _ in replay.episodes]
        truncated = [not terminated for _, length, _, terminated in replay.episodes]
        assert all(n <= 4 for n in lengths) and any(truncated)
        assert all(length == 4 for length, t in zip(lengths, truncated) if t)  # truncations at the time limit only
    np.testing.assert_allclose(after.learning_rate, 1e-5 / (1 + 1e-3 * 30), rtol=1e-6)
    assert np.all(np.isfinite([after.critic_loss, after.kl, after.std])) and np.all(after.kl >= 0)


@pytest.mark.slow
def test_seeds_in_lockstep_match_seeds_alone():
    config = ACERConfig(hidden_sizes=(8,), n_start=20, capacity=64, batch_episodes=3, window=4)
    host = HostACER(config, _pendulum())
    together = host.run(host.init([0, 5]), 30)[0]
    alone = host.run(host.init([5]), 30)[0]
    for a, b in zip(jax.tree.leaves(together.learner), jax.tree.leaves(alone.learner)):
        np.testing.assert_allclose(np.asarray(a)[1], np.asarray(b)[0], rtol=1e-4, atol=1e-6)


@pytest.mark.slow
def test_a_checkpoint_resumes_exactly(tmp_path):
    """The memories (with their generators), the state statistics and the environments are in the checkpointed
    state: 25 + 10 steps through a checkpoint equal 35 steps straight (N_start = 20 in the first part)."""
    from rlrepro.jobs import checkpoint

    config = ACERConfig(hidden_sizes=(8,), n_start=20, capacity=64, batch_episodes=3, window=4)
    host = HostACER(config, _pendulum())
    first, _ = host.run(host.init([0, 1]), 25)
    checkpoint.save(tmp_path / "acer.ckpt", first, {"chunk": 1})
    straight, _ = host.run(first, 10)
    restored = checkpoint.restore(tmp_path / "acer.ckpt", host.init([0, 1]))
    resumed, _ = host.run(restored, 10)
    for a, b in zip(jax.tree.leaves(straight.learner), jax.tree.leaves(resumed.learner)):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    assert straight.host.episode_returns == resumed.host.episode_returns
