"""rlrepro.training.actor_learner with a scripted host environment: unroll layout, lag, threads, errors."""

from __future__ import annotations

from typing import NamedTuple

import jax
import numpy as np
import pytest

from rlrepro.training.actor_learner import LaggedActor, ParameterStore, ThreadedActors, play_unroll, start_actor


class Step(NamedTuple):
    observation: np.ndarray
    reward: np.ndarray
    done: np.ndarray
    game_over: np.ndarray
    truncated: np.ndarray
    episode_return: np.ndarray


class CountingEnv:
    """Observation = step counter; reward 1 per step; a game lasts ``length`` steps (ends reset in the same step)."""

    num_actions = 3

    def __init__(self, num_envs: int = 2, length: int = 3, fail_after: int | None = None):
        self.num_envs, self.length, self.fail_after = num_envs, length, fail_after
        self.t = np.zeros(num_envs, np.int64)
        self.calls = 0

    def reset(self) -> np.ndarray:
        self.t[:] = 0
        return self.t.astype(np.float32)[:, None]

    def step(self, actions: np.ndarray) -> Step:
        self.calls += 1
        if self.fail_after is not None and self.calls > self.fail_after:
            raise RuntimeError("emulator crashed")
        self.t += 1
        over = self.t >= self.length
        episode_return = np.where(over, self.t.astype(np.float32), 0.0).astype(np.float32)
        self.t[over] = 0
        obs = self.t.astype(np.float32)[:, None]
        return Step(obs, np.ones(self.num_envs, np.float32), over.copy(), over.copy(), np.zeros_like(over), episode_return)


def policy_step(params, observation, prev_action, prev_reward, core, key):
    """Acts with action = params (an int) everywhere; logits encode params so tests can see which were used."""
    n = observation.shape[0]
    logits = np.full((n, 3), float(params), np.float32)
    return np.full(n, int(params) % 3, np.int32), logits, core


def no_core(core, done):
    return core


def test_an_unroll_has_t_plus_one_observations_and_carries_over():
    env = CountingEnv(num_envs=2, length=3)
    state = start_actor(env, (), jax.random.key(0))
    state, first = play_unroll(env, policy_step, no_core, 1, 7, state, unroll_length=4)
    assert first.observations.shape == (5, 2, 1) and first.actions.shape == (4, 2)
    assert first.behaviour_logits.shape == (4, 2, 3) and first.param_version == 7
    np.testing.assert_array_equal(first.observations[:, 0, 0], [0, 1, 2, 0, 1])  # same-step reset after 3 steps
    np.testing.assert_array_equal(first.dones[:, 0], [False, False, True, False])
    assert first.episode_returns == (3.0, 3.0)
    # previous action/reward: zero before the very first step only; after a done they are the last step's
    # (released code and our learner; the core state alone is reset)
    np.testing.assert_array_equal(first.prev_actions[:, 0], [0, 1, 1, 1, 1])
    np.testing.assert_array_equal(first.prev_rewards[:, 0], [0, 1, 1, 1, 1])
    _, second = play_unroll(env, policy_step, no_core, 1, 8, state, unroll_length=4)
    np.testing.assert_array_equal(second.observations[0], first.observations[-1])  # first = last of the previous


def test_lagged_actor_uses_parameters_exactly_lag_updates_old():
    env = CountingEnv()
    actor = LaggedActor(env, policy_step, no_core, lambda n: (), lag=2, unroll_length=2, key=jax.random.key(0))
    actor.record(0, 0)
    versions = []
    for version in range(1, 7):  # learner: take an unroll, update, record the new parameters
        unroll = actor.get()
        versions.append(unroll.param_version)
        assert float(unroll.behaviour_logits[0, 0, 0]) == unroll.param_version
        actor.record(version, version)
    # before the first update: version 0; then always 2 behind once two updates exist
    assert versions == [0, 0, 0, 1, 2, 3]


def test_threaded_actors_follow_the_published_parameters():
    store = ParameterStore(0, 0)
    actors = ThreadedActors([CountingEnv(), CountingEnv()], policy_step, no_core, lambda n: (), store,
                            unroll_length=3, key=jax.random.key(0), queue_size=1)  # fmt: skip
    try:
        seen = {actors.get().param_version for _ in range(4)}
        assert seen == {0}
        store.publish(5, 5)
        # Unrolls queued or in flight before the publish drain (at most queue + threads, but thread timing
        # varies under load), then the new version shows and stays.
        versions = [actors.get().param_version for _ in range(8)]
        while versions[-1] != 5 and len(versions) < 64:
            versions.append(actors.get().param_version)
        assert versions[-1] == 5
    finally:
        actors.stop()


def test_an_actor_error_reaches_the_learner():
    store = ParameterStore(0, 0)
    actors = ThreadedActors([CountingEnv(fail_after=5)], policy_step, no_core, lambda n: (), store,
                            unroll_length=2, key=jax.random.key(0))  # fmt: skip
    try:
        with pytest.raises(RuntimeError, match="an actor thread failed") as error:
            for _ in range(10):
                actors.get(timeout=10)
        assert "emulator crashed" in str(error.value.__cause__)
    finally:
        actors.stop()
