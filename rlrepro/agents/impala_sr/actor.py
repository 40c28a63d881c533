"""The synchronous IMPALA+SR actor: B vmapped pure-JAX environments, T steps in a ``lax.scan``.

Besides IMPALA's actor state it carries the LSTM core state and the episodic memory of every stream
(paper §2: the memory is part of the agent state and persists across unroll boundaries). After acting
in s_t the actor writes the torso representation of s_t to the memory (stop-gradient, released code
order: write after the prediction); where the episode ends both the memory and the core are reset, so the
next unroll's learner starts from exactly the state the actor recorded.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from rlrepro.agents.impala_sr.config import ImpalaSRConfig
from rlrepro.agents.impala_sr.learner import Params, SRBatch
from rlrepro.agents.impala_sr.networks import SRActorCritic, initial_core_state, representation_dim
from rlrepro.networks.lstm import reset_core_state
from rlrepro.environments.base import JaxEnv
from rlrepro.losses.synthetic_returns import EpisodicMemory, init_memory, reset_memory, write_memory


class SRActorState(NamedTuple):
    """What carries over between unrolls: environments, last observation, returns (and the environment's episode
    tallies), core state and memory."""

    env_state: Any
    observation: jax.Array  # [B, *obs]
    episode_return: jax.Array  # [B]
    core_state: Any  # () or (c, h) [B, lstm_size], before ``observation``
    memory: EpisodicMemory  # values [B, C, d], counter [B], before ``observation``
    episode_tallies: dict[str, jax.Array]  # name -> [B]: the sums so far of the environment's ``tallies``


class SREpisodeStats(NamedTuple):
    """IMPALA's per-step episode bookkeeping [T, B] plus ``tallies``: each environment tally's episode sum where an
    episode ended (0 elsewhere), e.g. Key-to-Door's door opened and phase-3 reward (paper Fig. 5b), and
    ``step_tallies``: each tally's amount on each step (where the key was picked up: Fig. 5c)."""

    ended: jax.Array
    returns: jax.Array
    tallies: dict[str, jax.Array]
    step_tallies: dict[str, jax.Array]


class _Step(NamedTuple):
    observation: jax.Array
    action: jax.Array
    reward: jax.Array
    done: jax.Array
    env_discount: jax.Array
    behaviour_logits: jax.Array
    episode_return: jax.Array
    episode_tallies: dict[str, jax.Array]
    step_tallies: dict[str, jax.Array]


def init_actor(
    key: jax.Array, env: JaxEnv, network: SRActorCritic, config: ImpalaSRConfig
) -> SRActorState:
    """Reset B environments; empty core states and memories."""
    batch = config.impala.batch_size
    env_state, timestep = jax.vmap(env.reset)(jax.random.split(key, batch))
    return SRActorState(
        env_state=env_state,
        observation=timestep.observation,
        episode_return=jnp.zeros((batch,), jnp.float32),
        core_state=initial_core_state(network, batch),
        memory=init_memory(config.sr.memory_capacity, representation_dim(config), (batch,)),
        episode_tallies=jax.tree.map(jnp.zeros_like, step_tallies(timestep)),
    )


def step_tallies(timestep: Any) -> dict[str, jax.Array]:
    """The environment's per-step tallies to sum over each episode (``{}`` for environments that report none)."""
    return {name: value.astype(jnp.float32) for name, value in getattr(timestep, "tallies", {}).items()}


def step_discount(timestep: Any) -> jax.Array:
    """The environment's per-step discount (1 for environments that do not set one)."""
    discount = getattr(timestep, "discount", None)
    return jnp.ones_like(timestep.reward, jnp.float32) if discount is None else discount.astype(jnp.float32)


def _act_and_step(
    key: jax.Array, params: Params, state: SRActorState, env: JaxEnv, network: SRActorCritic
) -> tuple[SRActorState, _Step]:
    """Sample a_t ~ pi(.|x_t), write s_t to memory, step the environments, reset what ended."""
    action_key, env_key = jax.random.split(key)
    batch = state.observation.shape[0]
    out = network.apply(
        params, state.observation[None], jnp.zeros((1, batch), bool), state.core_state, method=SRActorCritic.unroll
    )
    logits = out.logits[0]
    action = jax.random.categorical(action_key, logits).astype(jnp.int32)
    env_state, timestep = jax.vmap(env.step)(jax.random.split(env_key, batch), state.env_state, action)
    reward = timestep.reward.astype(jnp.float32)
    done = jnp.logical_or(timestep.terminated, timestep.truncated)
    episode_return = state.episode_return + reward
    amounts = step_tallies(timestep)
    tallies = jax.tree.map(jnp.add, state.episode_tallies, amounts)
    memory = reset_memory(jax.vmap(write_memory)(state.memory, out.torso[0]), done)
    core_state = reset_core_state(out.core_state, done)
    step = _Step(state.observation, action, reward, done, step_discount(timestep), logits, episode_return, tallies,
                 amounts)
    next_state = SRActorState(
        env_state, timestep.observation, jnp.where(done, 0.0, episode_return), core_state, memory,
        jax.tree.map(lambda total: jnp.where(done, 0.0, total), tallies),
    )
    return next_state, step


def unroll(
    key: jax.Array, params: Params, state: SRActorState, *, env: JaxEnv, network: SRActorCritic, unroll_length: int
) -> tuple[SRActorState, SRBatch, SREpisodeStats]:
    """Run T steps in the B environments; the batch records the core state and memory at the unroll's start."""

    def scan_step(carry: SRActorState, step_key: jax.Array) -> tuple[SRActorState, _Step]:
        return _act_and_step(step_key, params, carry, env, network)

    final, steps = jax.lax.scan(scan_step, state, jax.random.split(key, unroll_length))
    batch = SRBatch(
        observations=jnp.concatenate([steps.observation, final.observation[None]], axis=0),
        actions=steps.action,
        rewards=steps.reward,
        dones=steps.done,
        env_discounts=steps.env_discount,
        behaviour_logits=steps.behaviour_logits,
        initial_core_state=state.core_state,
        initial_memory=state.memory,
    )
    stats = SREpisodeStats(
        ended=steps.done,
        returns=jnp.where(steps.done, steps.episode_return, 0.0),
        tallies=jax.tree.map(lambda total: jnp.where(steps.done, total, 0.0), steps.episode_tallies),
        step_tallies=steps.step_tallies,
    )
    return final, batch, stats
