"""rlrepro.training.actor_learner with a scripted host environment: unroll layout, lag, threads, errors."""

from __future__ import annotations

from typing import NamedTuple

import jax
import numpy as np
import pytest

import threading
import time

from rlrepro.training.actor_learner import (
    AsyncGradientWorkers,
    LaggedActor,
    ParameterStore,
    SharedLearner,
    SyncTrajectoryActors,
    ThreadedActors,
    VersionedStore,
    play_unroll,
    start_actor,
)


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
    return np.full(n, int(params) % 3, np.int32), logits, core, key


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


def test_each_step_acts_with_the_key_the_previous_step_returned():
    """The policy step splits the key inside its jit and hands back the next one (``PolicyStep``): ``play_unroll``
    passes exactly that key to the next step, across unrolls too (the actor state carries it), and fetches
    ``(action, logits)`` from the device once per step."""
    env = CountingEnv(num_envs=2, length=3)
    seen: list[int] = []

    def chained_step(params, observation, prev_action, prev_reward, core, key):
        seen.append(int(jax.random.key_data(key)[-1]))
        action, logits, core, _ = policy_step(params, observation, prev_action, prev_reward, core, key)
        next_key = jax.random.wrap_key_data(jax.random.key_data(key).at[-1].add(1))  # a key the test can follow
        return jax.numpy.asarray(action), jax.numpy.asarray(logits), core, next_key

    fetches = []
    real_get = jax.device_get
    state = start_actor(env, (), jax.random.wrap_key_data(jax.numpy.array([0, 100], jax.numpy.uint32)))
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(jax, "device_get", lambda tree: fetches.append(tree) or real_get(tree))
        state, first = play_unroll(env, chained_step, no_core, 1, 0, state, unroll_length=3)
        state, _ = play_unroll(env, chained_step, no_core, 1, 1, state, unroll_length=3)
    assert seen == [100, 101, 102, 103, 104, 105]
    assert int(jax.random.key_data(state.key)[-1]) == 106
    assert len(fetches) == 6 and all(len(tree) == 2 for tree in fetches)  # (action, logits), once a step
    assert first.actions.dtype == np.int32 and isinstance(first.behaviour_logits, np.ndarray)


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


# --- Table 1's single-machine organisations --------------------------------------------------------------


def test_a2c_sync_step_acts_once_for_all_environments_then_steps_them_all():
    # Batched A2C, sync step (Fig. 2(a)): the synchronous actor (lag 0) makes ONE batched forward pass for all 4
    # environments per step and ONE vector step of all 4; T = 3 steps -> 3 forward passes and 3 env steps.
    env = CountingEnv(num_envs=4, length=10)
    calls = []

    def counting_policy(params, observation, *rest):
        calls.append(observation.shape[0])
        return policy_step(params, observation, *rest)

    actor = LaggedActor(env, counting_policy, no_core, lambda n: (), lag=0, unroll_length=3, key=jax.random.key(0))
    actor.record(0, 0)
    unroll = actor.get()
    assert calls == [4, 4, 4] and env.calls == 3
    assert unroll.actions.shape == (3, 4)
    actor.record(1, 1)  # after the update the next unroll acts with the new parameters: no lag
    assert actor.get().param_version == 1


def test_a2c_sync_traj_collects_whole_unrolls_then_waits_for_the_update():
    # Batched A2C, sync traj (Fig. 2(b)): each actor plays a whole unroll with the current parameters; nobody
    # starts the next unroll before the learner has published the update of this round.
    envs = [CountingEnv(length=10), CountingEnv(length=10)]
    store = VersionedStore(0, 0)
    actors = SyncTrajectoryActors(envs, policy_step, no_core, lambda n: (), store, unroll_length=3,
                                  key=jax.random.key(0))  # fmt: skip
    try:
        first = [actors.get(timeout=30) for _ in range(2)]
        assert [u.param_version for u in first] == [0, 0]
        time.sleep(0.3)  # no update yet: the actors wait (3 steps each, one unroll each, nothing queued)
        assert actors.queue.qsize() == 0 and [e.calls for e in envs] == [3, 3]
        with pytest.raises(TimeoutError):
            actors.get(timeout=0.3)
        store.publish(1, 1)
        second = [actors.get(timeout=30) for _ in range(2)]
        assert [u.param_version for u in second] == [1, 1]
        np.testing.assert_array_equal(second[0].behaviour_logits, np.ones((3, 2, 3)))  # acted with the new ones
    finally:
        actors.stop()


class Shared(NamedTuple):
    params: int


def test_a3c_workers_apply_one_gradient_per_unroll_from_their_own_snapshot():
    # A3C: a worker snapshots the shared parameters, plays one unroll with them, computes the gradient at that
    # snapshot on its own unroll, and applies it to the shared parameters. Here a gradient is 1, so the shared
    # parameters count the gradients applied, and the logits of an unroll encode the parameters it acted with.
    seen = []

    def gradient(params, unroll):
        seen.append((params, float(unroll.behaviour_logits[0, 0, 0]), unroll.param_version, unroll.actions.shape))
        return 1, {"loss": float(params)}

    shared = SharedLearner(Shared(0), lambda state, grads, metrics: (Shared(state.params + grads), metrics))
    envs = [CountingEnv(num_envs=2, length=10), CountingEnv(num_envs=2, length=10)]
    workers = AsyncGradientWorkers(envs, policy_step, no_core, lambda n: (), shared, gradient, unroll_length=3,
                                   key=jax.random.key(0))  # fmt: skip
    try:
        shared.allow(6)
        results = [workers.get(timeout=30) for _ in range(6)]
        shared.wait_until(6)
        time.sleep(0.3)  # the limit holds: no seventh gradient
        assert shared.version == 6 and shared.state.params == 6
        # Each unroll is the worker's own 2 environments, acted with the snapshot its gradient is taken at.
        for params, logit, version, shape in seen[:6]:
            assert logit == params == version and shape == (3, 2)
        # The gradient count equals the unrolls played: 3 env steps per unroll, at most one unroll in flight
        # per worker beyond the 6 applied.
        assert 6 * 3 <= sum(e.calls for e in envs) <= 8 * 3
        assert all(r.policy_lag >= 0 for r in results)
        shared.allow(4)
        shared.wait_until(10)
        assert shared.state.params == 10
    finally:
        workers.stop()


class SlowEnv(CountingEnv):
    """A ``CountingEnv`` whose steps take ``delay`` seconds (DMLab's slow renders, in miniature)."""

    def __init__(self, delay: float, **kwargs):
        super().__init__(**kwargs)
        self.delay = delay

    def step(self, actions: np.ndarray) -> Step:
        time.sleep(self.delay)
        return super().step(actions)


def test_a2c_sync_traj_actors_wait_only_at_trajectory_boundaries():
    # Fig. 2(b): actors synchronise after every n steps, not after every step. With n = 5, one actor's steps take
    # 0.1 s and the other's none: the fast actor plays its whole unroll while the slow one is still at its first
    # steps (no per-step barrier), and each actor passes the barrier once per n steps (once per unroll).
    fast, slow = CountingEnv(num_envs=1, length=100), SlowEnv(0.1, num_envs=1, length=100)
    store = VersionedStore(0, 0)
    actors = SyncTrajectoryActors([fast, slow], policy_step, no_core, lambda n: (), store, unroll_length=5,
                                  key=jax.random.key(0))  # fmt: skip
    try:
        first = actors.get(timeout=30)
        assert first.actions.shape == (5, 1) and fast.calls == 5 and slow.calls < 5
        actors.get(timeout=30)  # the slow actor's unroll: the round is complete
        for version in range(1, 3):  # two more rounds
            store.publish(version, version)
            [actors.get(timeout=30) for _ in range(2)]
        time.sleep(0.2)  # both are at the barrier of round 4, waiting for update 3
        assert fast.calls == slow.calls == 3 * 5
        assert actors.barrier_waits == {"actor-0": 3, "actor-1": 3}  # rounds 1-3 passed; one wait per n steps
    finally:
        actors.stop()


def test_a3c_workers_act_and_learn_on_one_environment_with_batch_one_passes():
    # Table 1's A3C: 3 workers, each with ONE environment: every forward pass while acting has batch 1, every
    # gradient is over one worker's own unroll of T = 4 steps of its one environment (a batch-1 backward pass),
    # and a worker only ever steps its own environment.
    forward, stepped_by = [], {}

    def batch_one_policy(params, observation, *rest):
        forward.append(observation.shape[0])
        return policy_step(params, observation, *rest)

    class OwnEnv(CountingEnv):
        def step(self, actions):
            stepped_by.setdefault(id(self), set()).add(threading.current_thread().name)
            return super().step(actions)

    backward = []

    def gradient(params, unroll):
        backward.append(unroll.actions.shape)
        return 1, {}

    envs = [OwnEnv(num_envs=1, length=10) for _ in range(3)]
    shared = SharedLearner(Shared(0), lambda state, grads, metrics: (Shared(state.params + grads), metrics))
    workers = AsyncGradientWorkers(envs, batch_one_policy, no_core, lambda n: (), shared, gradient, unroll_length=4,
                                   key=jax.random.key(0))  # fmt: skip
    try:
        shared.allow(9)
        [workers.get(timeout=30) for _ in range(9)]
        shared.wait_until(9)
    finally:
        workers.stop()
    assert set(forward) == {1} and len(forward) >= 9 * 4
    assert backward[:9] == [(4, 1)] * 9 and shared.state.params == 9
    assert sorted(map(len, stepped_by.values())) == [1, 1, 1]  # each environment stepped by one worker only
    assert len(set().union(*stepped_by.values())) == 3  # and each worker has its own
