"""The host DQN agent: determinism, resume through pickling, learning on CartPole (slow)."""

import pickle
from pathlib import Path

import numpy as np
import pytest

from rlrepro.agents.dqn.config import DQNConfig
from rlrepro.agents.dqn.loop import HostDQN
from rlrepro.specs.environments import GymEnvSpec

REPO = Path(__file__).resolve().parents[2]
CARTPOLE = GymEnvSpec(kind="gym", id="cartpole", name="CartPole-v0", return_range=(0.0, 200.0))
TINY = DQNConfig(loss="dqnreg", hidden_sizes=(16,), min_replay=50, batch_size=8)


def test_deterministic_and_resumable():
    dqn = HostDQN(TINY, CARTPOLE)
    a = dqn.init([0, 1], 400)
    a, m1 = dqn.run(a, 200)
    blob = pickle.dumps(a)
    a, m2 = dqn.run(a, 200)
    b = pickle.loads(blob)
    b, m2b = dqn.run(b, 200)
    np.testing.assert_allclose(m2.loss, m2b.loss, rtol=1e-6)
    assert a.host.episode_returns == b.host.episode_returns
    c = dqn.init([0, 1], 400)
    c, _ = dqn.run(c, 200)
    c, m2c = dqn.run(c, 200)
    assert c.host.episode_returns == a.host.episode_returns
    assert m1.frames.tolist() == [200, 200] and m2.episodes.sum() > 0


def test_minigrid_fully_observed():
    spec = GymEnvSpec(kind="gym", id="e", name="MiniGrid-Empty-5x5-v0", observation="minigrid_fully_observed",
                      max_episode_steps=100, return_range=(0.0, 1.0))
    dqn = HostDQN(DQNConfig(hidden_sizes=(8,), min_replay=20, batch_size=4), spec)
    assert dqn.obs_dim == 5 * 5 * 3
    state = dqn.init([0], 150)
    state, metrics = dqn.run(state, 150)
    assert state.host.obs.max() <= 1.0 and metrics.episodes[0] >= 1


@pytest.mark.slow
@pytest.mark.parametrize("loss", ["dqn", "dqnreg", "dqnclipped"])
def test_learns_cartpole(loss):
    dqn = HostDQN(DQNConfig(loss=loss), CARTPOLE)
    state = dqn.init([0], 15_000)
    state, metrics = dqn.run(state, 15_000)
    last = np.clip(state.host.episode_returns[0][-50:], 0, 200) / 200
    assert last.mean() >= 0.6  # the paper's hurdle


# --- per-environment epsilon schedules (App. B: 1e3 steps on classic control, 1e5 on MiniGrid) -------------------


def test_the_epsilon_decay_of_an_environment_comes_from_decay_steps_by_env():
    from rlrepro.agents.dqn.build import dqn_config
    from rlrepro.specs.agents.dqn import DQNAgentSpec

    agent = DQNAgentSpec(kind="dqn", loss={"name": "dqn"},
                         exploration={"decay_steps": 1000, "decay_steps_by_env": {"doorkey_5x5": 100_000}})
    assert dqn_config(agent, "doorkey_5x5").epsilon_decay_steps == 100_000
    assert dqn_config(agent, "cartpole").epsilon_decay_steps == 1000
    assert dqn_config(agent).epsilon_decay_steps == 1000


def test_every_decay_steps_by_env_key_of_the_repository_specs_is_an_environment_of_the_spec():
    from rlrepro.specs import load_specs

    specs = load_specs([REPO / "specs" / "evolving_rl"])
    checked = 0
    for path, spec in specs:
        agent = spec.agent.inner if spec.agent.kind == "loss_search" else spec.agent
        env_ids = {e.id for env in spec.environments for e in getattr(env, "environments", [env])}
        keys = set(agent.exploration.decay_steps_by_env)
        assert keys <= env_ids, (path, sorted(keys - env_ids))
        checked += len(keys)
    assert checked >= 12 + 2 + 3  # eval_classic_minigrid's MiniGrid tasks and the MiniGrid members of two searches


def test_a_search_trains_each_member_with_its_own_epsilon_schedule():
    from rlrepro.search.trainer import eval_task
    from rlrepro.specs import load_spec

    spec = load_spec(REPO / "specs/evolving_rl/search_dqnreg.yaml")
    task = eval_task(spec.agent, spec.environments[0], seed=0)
    decays = {env.id: config.epsilon_decay_steps for env, config in zip(task.environments, task.inner)}
    assert decays == {"cartpole": 1000, "keycorridor_s3r1": 100_000, "dynamic_obstacles_6x6": 100_000,
                      "doorkey_5x5": 100_000}


# --- DQNClipped's cases (Fig. 6) -----------------------------------------------------------------------------------


def test_dqnclipped_case_fractions_of_a_batch_by_hand():
    """Issue 11 item 9. L = max(Q, delta^2 + Y) + max(Q - Y, gamma_t M^2); the "network" returns the observation as
    the Q-values. Transitions (Q(s,.), a, r, gamma_t, Q'(s',.)):
      [1, 3], 0, 1, 0.5, [2, 4]: Y = 1 + 0.5 * 4 = 3, Q = 1: 1 > 4 + 3? no; -2 > 0.5 * 16? no   -> case 3
      [3.5, 0], 0, 1, 0.5, [2, 4]: Y = 3, Q = 3.5: 3.5 > 0.25 + 3 yes; 0.5 > 8? no               -> case 2
      [3.5, 0], 0, 3, 0, [2, 4]: Y = 3, gamma_t = 0: 3.5 > 3.25 yes; 0.5 > 0 yes                 -> case 1
      [4, 0], 0, 1, 0, [2, 4]: Y = 1: 4 > 9 + 1? no; 3 > 0 yes                                     -> case 4
      [0, 1], 1, 1, 0.5, [2, 4]: Y = 3, Q = 1 (action 1): as the first                              -> case 3
    so the fractions are (0.2, 0.2, 0.4, 0.2)."""
    import jax.numpy as jnp

    from rlrepro.agents.dqn.learner import Batch, make_clipped_cases

    obs_tm1 = jnp.array([[1, 3], [3.5, 0], [3.5, 0], [4, 0], [0, 1]], jnp.float32)
    obs_t = jnp.tile(jnp.array([[2.0, 4.0]]), (5, 1))
    batch = Batch(obs_tm1, jnp.array([0, 0, 0, 0, 1]), jnp.array([1.0, 1, 3, 1, 1]), jnp.array([0.5, 0.5, 0, 0, 0.5]), obs_t)
    cases = make_clipped_cases(DQNConfig(loss="dqnclipped"), lambda params, obs: obs)(None, None, batch)
    np.testing.assert_allclose(cases, [0.2, 0.2, 0.4, 0.2], rtol=1e-6)


def test_the_host_loop_logs_dqnclipped_cases():
    """Every chunk of a DQNClipped run reports the fraction of its updates' transitions in each case (they sum
    to 1); the other losses report NaN (no such cases)."""
    for loss in ("dqnclipped", "dqn"):
        dqn = HostDQN(DQNConfig(loss=loss, hidden_sizes=(8,), min_replay=20, batch_size=4), CARTPOLE)
        state, metrics = dqn.run(dqn.init([0, 1], 80), 80)
        cases = np.stack([getattr(metrics, f"dqnclipped_case_{c}") for c in range(1, 5)], axis=-1)  # [seeds, 4]
        if loss == "dqnclipped":
            np.testing.assert_allclose(cases.sum(-1), 1.0, rtol=1e-6)
        else:
            assert np.isnan(cases).all()
