"""DQN on a pure-JAX environment as one compiled loop: no host round trip per step, programs side by side.

The same agent as the host loop (``trainer.HostDQN``; Evolving RL §3.1, App. B): per environment step, once
``min_replay`` transitions are stored and every ``update_period`` steps, one update on a uniform batch from
replay, then an epsilon-greedy action with the updated parameters; terminations get discount 0, time limits
keep gamma and bootstrap from the true last observation. Here the whole run is a ``lax.scan`` over steps
(replay, environment and episode bookkeeping are arrays), vmapped over a batch of K loss programs
(``ProgramArrays`` with a leading [K] axis) that share one compiled act+update call per step: "programs in
lockstep". Each program's run depends only on (program, seed): its network, replay draws, exploration and
environment keys come from the seed alone, so a program scores the same alone or in any batch.

The run returns, per program, the number of episodes ended and the normalized training return over all of
them (``mean_all``, the paper's fitness) and over the last 50 (``mean_last50``, the released code), returns
clipped to the environment's [R_min, R_max] first (as ``trainer.normalize``).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from rlrepro.agents.dqn.actor import epsilon, epsilon_greedy
from rlrepro.agents.dqn.config import DQNConfig
from rlrepro.agents.dqn.learner import Batch, LearnerState, make_learner

LAST = 50  # episodes in the released code's fitness (normalized_avg_return_last50)


class Replay(NamedTuple):
    """A ring of ``capacity`` transitions (one program's; ``capacity`` >= the run's steps keeps them all)."""

    obs_tm1: jax.Array
    a_tm1: jax.Array
    r_t: jax.Array
    discount_t: jax.Array
    obs_t: jax.Array


class Episodes(NamedTuple):
    """Running return of the current episode, episodes ended, the sum of their normalized returns and the last 50."""

    running: jax.Array
    count: jax.Array
    total: jax.Array
    last: jax.Array  # [LAST] ring of normalized returns, slot count % LAST


class RunState(NamedTuple):
    learner: LearnerState
    env_state: Any
    obs: jax.Array
    key: jax.Array
    replay: Replay
    episodes: Episodes


class Scores(NamedTuple):
    """Per program: episodes ended, mean normalized return over all of them and over the last 50 (0 if none)."""

    episodes: jax.Array
    mean_all: jax.Array
    mean_last50: jax.Array


def make_run(config: DQNConfig, env: Any, obs_dim: int, num_actions: int, bounds: tuple[float, float],
             steps: int, loss_factory: Callable | None = None) -> Callable[[jax.Array, Any], Scores]:
    """``run(key_data, programs) -> Scores``: ``steps`` environment steps of DQN for each of K programs in lockstep.

    ``env`` is a pure-JAX environment with ``reset(key)`` and ``step_observed(key, state, action)`` (the next
    state, the timestep and the true last observation before an automatic reset). ``programs`` is a
    ``ProgramArrays`` with a leading [K] axis (or None for the configured hand-written loss, K = 1).
    """
    learner = make_learner(config, (obs_dim,), num_actions, loss_factory)
    capacity = max(1, min(config.replay_capacity, steps))
    low, high = bounds

    def init(seed_key: jax.Array) -> RunState:
        net_key, key = jax.random.split(seed_key)
        env_key, key = jax.random.split(key)
        env_state, timestep = env.reset(env_key)
        zeros = lambda *shape: jnp.zeros(shape, jnp.float32)  # noqa: E731
        replay = Replay(zeros(capacity, obs_dim), jnp.zeros(capacity, jnp.int32), zeros(capacity), zeros(capacity),
                        zeros(capacity, obs_dim))
        episodes = Episodes(jnp.zeros((), jnp.float32), jnp.zeros((), jnp.int32), jnp.zeros((), jnp.float32), zeros(LAST))
        return RunState(learner.init(net_key), env_state, timestep.observation, key, replay, episodes)

    def step(state: RunState, t: jax.Array, program: Any, update: bool) -> RunState:
        """One environment step of one program (``update``: take a learner step first)."""
        key, sample_key, act_key, env_key = jax.random.split(state.key, 4)
        learner_state, replay = state.learner, state.replay
        if update:
            idx = jax.random.randint(sample_key, (config.batch_size,), 0, jnp.minimum(t, capacity))
            batch = Batch(*(x[idx] for x in replay))
            learner_state, _ = learner.update(learner_state, batch, program)
        q = learner.apply(learner_state.params, state.obs[None])
        action = epsilon_greedy(act_key, q, epsilon(t, config))[0]
        env_state, timestep, last_obs = env.step_observed(env_key, state.env_state, action)
        discount = jnp.where(timestep.terminated, 0.0, config.discount).astype(jnp.float32)
        i = t % capacity
        replay = Replay(replay.obs_tm1.at[i].set(state.obs), replay.a_tm1.at[i].set(action),
                        replay.r_t.at[i].set(timestep.reward), replay.discount_t.at[i].set(discount),
                        replay.obs_t.at[i].set(last_obs))
        ep = state.episodes
        running = ep.running + timestep.reward
        done = timestep.terminated | timestep.truncated
        normalized = (jnp.clip(running, low, high) - low) / (high - low)
        episodes = Episodes(
            running=jnp.where(done, 0.0, running),
            count=ep.count + done.astype(jnp.int32),
            total=ep.total + jnp.where(done, normalized, 0.0),
            last=jnp.where(done, ep.last.at[ep.count % LAST].set(normalized), ep.last),
        )
        return RunState(learner_state, env_state, timestep.observation, key, replay, episodes)

    def phase(states: RunState, programs: Any, start: int, stop: int, update: bool) -> RunState:
        """Steps [start, stop) of every program; the update schedule is decided outside the vmap (t is shared)."""
        lockstep = jax.vmap(functools.partial(step, update=update), in_axes=(0, None, 0))
        idle = jax.vmap(functools.partial(step, update=False), in_axes=(0, None, 0))

        def body(s, t):
            if not update or config.update_period == 1:
                return lockstep(s, t, programs), None
            return jax.lax.cond(t % config.update_period == 0, lockstep, idle, s, t, programs), None

        if stop <= start:
            return states
        return jax.lax.scan(body, states, jnp.arange(start, stop))[0]

    def run(key_data: jax.Array, programs: Any) -> Scores:
        k = jax.tree.leaves(programs)[0].shape[0] if programs is not None else 1
        keys = jnp.broadcast_to(key_data, (k, *key_data.shape))
        states = jax.vmap(lambda d: init(jax.random.wrap_key_data(d)))(keys)
        first_update = min(config.min_replay, steps)
        states = phase(states, programs, 0, first_update, update=False)
        states = phase(states, programs, first_update, steps, update=True)
        ep = states.episodes
        count = ep.count.astype(jnp.float32)
        kept = jnp.arange(LAST)[None] < ep.count[:, None]
        mean_last = jnp.sum(jnp.where(kept, ep.last, 0.0), -1) / jnp.maximum(jnp.minimum(count, LAST), 1.0)
        return Scores(ep.count, ep.total / jnp.maximum(count, 1.0), mean_last)

    return run


def seed_key(seed: int) -> jax.Array:
    """The run's key from its seed (raw key data, so it can be broadcast and vmapped)."""
    return jax.random.key_data(jax.random.key(seed))


def compiled_run(config: DQNConfig, env: Any, obs_dim: int, num_actions: int, bounds: tuple[float, float], steps: int,
                 loss_factory: Callable | None = None) -> Callable[[jax.Array, Any], Scores]:
    """``make_run`` jitted."""
    return jax.jit(make_run(config, env, obs_dim, num_actions, bounds, steps, loss_factory))


__all__ = ["LAST", "Scores", "compiled_run", "make_run", "seed_key"]
