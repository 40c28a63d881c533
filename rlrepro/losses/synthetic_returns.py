"""Synthetic returns (Raposo et al. 2021, "Synthetic Returns for Long-Term Credit Assignment", §2, eqs. 1-3).

State-associative credit assignment: a contribution c(s_k) of every earlier state of the episode, gated by
g(s_t) in [0, 1] and added to a bias b(s_t), regresses the reward r_t received after acting in s_t (eq. 1);
c(s_t) is then the synthetic return that augments the reward of the base agent (eq. 2).

Single-stream, time-major functions in the style of rlax (shapes [T], memory [C]); the learner vmaps them
over the batch and reduces. Conventions follow the released memory module (``google-deepmind/
deepmind-research/synthetic_returns``; notes §1.3):
- the prediction at step t sums the states written at steps 0..t-1 of the episode (the current state is
  written after the prediction); past capacity C the buffer is circular and every slot counts;
- a FIRST step (``reset_t``) empties the memory before its prediction;
- the memory holds stop-gradiented representations (no SR gradient reaches the encoder through past
  states); c is trained only through the memory sum; the augmented reward is stop-gradiented.
"""

from __future__ import annotations

from typing import NamedTuple

import chex
import jax
import jax.numpy as jnp
from jax.typing import ArrayLike


class EpisodicMemory(NamedTuple):
    """One stream's (or, with leading axes, a batch's) episodic memory: part of the agent state.

    Attributes:
      values: [..., C, d] stop-gradiented state representations, one per step of the current episode.
      counter: [...] int32, steps written since the episode started (may exceed C: circular buffer).
    """

    values: jax.Array
    counter: jax.Array


def init_memory(capacity: int, dim: int, batch_shape: tuple[int, ...] = ()) -> EpisodicMemory:
    """An empty memory of ``capacity`` slots of width ``dim`` (capacity = the longest episode, paper §2)."""
    if capacity < 1 or dim < 1:
        raise ValueError(f"memory capacity and dim must be >= 1, got {capacity}, {dim}")
    return EpisodicMemory(
        values=jnp.zeros((*batch_shape, capacity, dim), jnp.float32),
        counter=jnp.zeros(batch_shape, jnp.int32),
    )


def valid_slots(counter: ArrayLike, capacity: int) -> jax.Array:
    """[C] bool: the slots summed at the next prediction (released code: k < counter, or all once counter >= C)."""
    counter = jnp.asarray(counter)
    return (jnp.arange(capacity) < counter) | (counter >= capacity)


def reset_memory(memory: EpisodicMemory, reset: ArrayLike) -> EpisodicMemory:
    """Empty the memory of the streams where ``reset`` is set (``step_type == FIRST`` in the released code)."""
    reset = jnp.asarray(reset, bool)
    values = jnp.where(reset[..., None, None], 0.0, memory.values)
    return EpisodicMemory(values, jnp.where(reset, 0, memory.counter).astype(jnp.int32))


def write_memory(memory: EpisodicMemory, representation: ArrayLike) -> EpisodicMemory:
    """Write one stream's ``representation`` [d] to slot ``counter mod C`` (stop-gradient) and count it."""
    capacity = memory.values.shape[-2]
    # A one-hot select rather than a scatter: exact, and elementwise under vmap over streams and seeds. It
    # touches all C slots per write (fine for the toy tasks' C <= 240; for Atari's C = 2000 a
    # dynamic_update_slice per stream would be cheaper).
    target = (jnp.arange(capacity) == memory.counter % capacity)[:, None]
    value = jax.lax.stop_gradient(jnp.asarray(representation, jnp.float32))
    return EpisodicMemory(jnp.where(target, value[None, :], memory.values), memory.counter + 1)


def memory_sums(
    c_memory: ArrayLike, counter: ArrayLike, c_t: ArrayLike, reset_t: ArrayLike
) -> tuple[jax.Array, jax.Array]:
    """The memory term sum_{k<t} c(s_k) of eq. 1 at every step of one unroll, step by step as the buffer does.

    Args:
      c_memory: [C] contributions c(.) of the memory slots at the start of the unroll (states of the
        running episode written before this unroll; only the ``valid_slots`` count).
      counter: int scalar, the memory counter at the start of the unroll.
      c_t: [T] contributions c(s_t) of the unroll's states, each written after the prediction at t.
      reset_t: [T] bool, step t starts an episode (the memory is emptied before its prediction).

    Returns:
      ``(sum_t [T], c_memory_after [C])``: the sum over the valid slots before each step's write, and the
      slots' contributions after the last write (its counter is ``counter`` advanced as the buffer does).
    """
    c_memory, c_t, reset_t = jnp.asarray(c_memory), jnp.asarray(c_t), jnp.asarray(reset_t, bool)
    chex.assert_rank([c_memory, c_t, reset_t], 1)
    chex.assert_equal_shape([c_t, reset_t])
    capacity = c_memory.shape[0]

    def step(carry: tuple[jax.Array, jax.Array], xs: tuple[jax.Array, jax.Array]):
        slots, count = carry
        c, reset = xs
        count = jnp.where(reset, 0, count)
        total = jnp.sum(jnp.where(valid_slots(count, capacity), slots, 0.0))
        slots = jnp.where(jnp.arange(capacity) == count % capacity, c, slots)  # one-hot select, as write_memory
        return (slots, count + 1), total

    (slots, _), sums = jax.lax.scan(step, (c_memory, jnp.asarray(counter, jnp.int32)), (c_t, reset_t))
    return sums, slots


def episode_memory_sums(c_t: ArrayLike) -> jax.Array:
    """The memory term of eq. 1 when the unroll is one whole episode: the exclusive cumulative sum of c.

    ``sum_t = c_0 + ... + c_{t-1}`` (0 at t = 0); equal to ``memory_sums`` from an empty memory when the
    episode fits in the buffer (notes §1.3, "when the unroll is the whole episode").
    """
    c_t = jnp.asarray(c_t)
    chex.assert_rank(c_t, 1)
    return jnp.cumsum(c_t) - c_t


def synthetic_return_loss(
    r_t: ArrayLike, gate_t: ArrayLike, memory_sum_t: ArrayLike, bias_t: ArrayLike, *, two_stage: bool = False
) -> jax.Array:
    """Per-step synthetic-return regression loss [T] (released code: 0.5 * squared error).

    One stage (eq. 1): ``0.5 (r_t - g(s_t) sum_{k<t} c(s_k) - b(s_t))^2``.
    Two stages (eq. 3, Skiing): ``0.5 (r_t - b(s_t))^2 + 0.5 (r_t - sg(b(s_t)) - g(s_t) sum_{k<t} c(s_k))^2``:
    b explains as much of the reward as it can first and gets no gradient from the second term.

    Args:
      r_t: [T] the reward received after acting in s_t (the target at step t; notes §1.3 alignment).
      gate_t: [T] g(s_t), already through the sigmoid.
      memory_sum_t: [T] sum_{k<t} c(s_k) (``memory_sums`` or ``episode_memory_sums``).
      bias_t: [T] b(s_t).
      two_stage: eq. 3 instead of eq. 1.
    """
    r_t, gate_t, memory_sum_t, bias_t = (jnp.asarray(x, jnp.float32) for x in (r_t, gate_t, memory_sum_t, bias_t))
    chex.assert_equal_shape([r_t, gate_t, memory_sum_t, bias_t])
    memory_term = gate_t * memory_sum_t
    if not two_stage:
        return 0.5 * jnp.square(r_t - memory_term - bias_t)
    residual = r_t - jax.lax.stop_gradient(bias_t) - memory_term
    return 0.5 * jnp.square(r_t - bias_t) + 0.5 * jnp.square(residual)


def augmented_reward(c_t: ArrayLike, r_t: ArrayLike, *, alpha: float, beta: float) -> jax.Array:
    """Eq. 2: ``r~_t = alpha c(s_t) + beta r_t``, stop-gradiented (the RL loss never trains c; released code).

    ``r_t`` is the reward after acting in s_t, so the transition s_t -> s_{t+1} is credited with the
    synthetic return of s_t (notes §1.3: ``alpha c(s_t) + beta r_{t+1}`` in dm_env indexing).
    """
    return jax.lax.stop_gradient(alpha * jnp.asarray(c_t, jnp.float32) + beta * jnp.asarray(r_t, jnp.float32))
