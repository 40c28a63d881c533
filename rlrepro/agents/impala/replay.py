"""IMPALA's learner-side experience replay of the off-policy comparison (Espeholt et al. 2018, §5.2.2, Table D.3).

"We also add an experience replay buffer on the learner to increase the off-policy gap between pi and mu. In the
experience replay experiments we draw 50% of the items in each batch uniformly at random from the replay buffer."
Table D.3: capacity 10,000 trajectories, uniform sampling, first-in-first-out removal.

A buffer of whole unrolls (observations, actions, rewards, dones and the behaviour logits mu(.|x_t) the actor
acted with, so that every correction sees the replayed trajectory's true behaviour policy). Pure functions on a
fixed-size pytree, so the buffer lives in the jitted training state and is ``vmap``-ped over seeds.

Resolutions of what the paper leaves open (notes §2.5; recorded in the spec): the batch keeps its size B and
``round(fraction * B)`` of its rows are replayed (the other rows are the fresh unrolls of this update, so a run
of F frames takes ``F / (T * fresh rows)`` updates); this update's fresh unrolls are stored first (FIFO
removal of the oldest when full), then the replayed rows are drawn uniformly with replacement from the stored
trajectories other than these fresh ones (so a replayed row is never this update's own data); on the very first
update nothing is eligible and the replayed rows are masked out of the loss.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp

from rlrepro.agents.impala.learner import Batch


class Trajectories(NamedTuple):
    """Stored unrolls, batch-major: leaves [N, T + 1, *obs] (observations) and [N, T, ...] (the rest)."""

    observations: jax.Array
    actions: jax.Array
    rewards: jax.Array
    dones: jax.Array
    behaviour_logits: jax.Array


class ReplayState(NamedTuple):
    """A FIFO ring of ``capacity`` trajectories.

    Attributes:
      storage: ``Trajectories`` with leading axis ``capacity``.
      inserted: int32, trajectories added so far; the next one goes to slot ``inserted % capacity``, which holds
        the oldest trajectory once the buffer is full (first-in-first-out removal).
      size: int32, trajectories held, ``min(inserted, capacity)``.
      stored_at: int32 [capacity], the learner's update count when each slot's trajectory was stored (a replayed
        row's age in updates is the current count minus this: the off-policy gap replay adds, §5.2.2).
    """

    storage: Trajectories
    inserted: jax.Array
    size: jax.Array
    stored_at: jax.Array


def _to_trajectories(batch: Batch) -> Trajectories:
    """The time-major [T(+1), B, ...] arrays of a learner batch as B batch-major trajectories."""
    return Trajectories(
        *(jnp.swapaxes(x, 0, 1) for x in (batch.observations, batch.actions, batch.rewards, batch.dones,
                                          batch.behaviour_logits))
    )


def init_replay(capacity: int, example: Batch) -> ReplayState:
    """An empty buffer for ``capacity`` trajectories shaped like the rows of ``example`` (a time-major batch)."""
    if capacity < 1:
        raise ValueError(f"replay capacity must be >= 1, got {capacity}")
    rows = _to_trajectories(example)
    storage = jax.tree.map(lambda x: jnp.zeros((capacity, *x.shape[1:]), x.dtype), rows)
    return ReplayState(storage=storage, inserted=jnp.zeros((), jnp.int32), size=jnp.zeros((), jnp.int32),
                       stored_at=jnp.zeros((capacity,), jnp.int32))


def add(state: ReplayState, batch: Batch, *, update: jax.typing.ArrayLike) -> ReplayState:
    """Append the B unrolls of ``batch`` in order, overwriting the oldest ones when full (FIFO; Table D.3).

    ``update``: the learner's update count when these unrolls are stored (their age is counted from it).
    """
    rows = _to_trajectories(batch)
    count = rows.actions.shape[0]
    capacity = state.storage.actions.shape[0]
    if count > capacity:
        raise ValueError(f"cannot add {count} trajectories to a replay buffer of capacity {capacity}")
    slots = (state.inserted + jnp.arange(count, dtype=jnp.int32)) % capacity
    storage = jax.tree.map(lambda s, x: s.at[slots].set(x), state.storage, rows)
    inserted = state.inserted + count
    stored_at = state.stored_at.at[slots].set(jnp.asarray(update, jnp.int32))
    return ReplayState(storage=storage, inserted=inserted, size=jnp.minimum(inserted, capacity), stored_at=stored_at)


def draw(state: ReplayState, key: jax.Array, count: int, *, skip_newest: int = 0) -> tuple[jax.Array, jax.Array]:
    """The slots of ``count`` uniform draws (with replacement) from those held, and whether any was eligible.

    ``skip_newest`` as in ``sample``; ``sample`` gathers the draws' trajectories, ``stored_at[slots]`` their ages.
    """
    capacity = state.storage.actions.shape[0]
    eligible = state.size - skip_newest
    # Age 0 is the newest trajectory, in slot (inserted - 1) % capacity; ages skip_newest.. are eligible.
    age = skip_newest + jax.random.randint(key, (count,), 0, jnp.maximum(eligible, 1))
    return (state.inserted - 1 - age) % capacity, eligible > 0


def gather(state: ReplayState, slots: jax.Array) -> Batch:
    """The time-major ``Batch`` of the trajectories in ``slots`` (behaviour logits as stored)."""
    rows = jax.tree.map(lambda s: jnp.swapaxes(s[slots], 0, 1), state.storage)
    return Batch(
        observations=rows.observations,
        actions=rows.actions,
        rewards=rows.rewards,
        dones=rows.dones,
        behaviour_logits=rows.behaviour_logits,
    )


def sample(state: ReplayState, key: jax.Array, count: int, *, skip_newest: int = 0) -> tuple[Batch, jax.Array]:
    """``count`` trajectories drawn uniformly (with replacement) from those held (§5.2.2, Table D.3).

    Args:
      state: the buffer.
      key: PRNG key of the draws.
      count: trajectories to draw.
      skip_newest: leave out the ``skip_newest`` most recently added trajectories (this update's own unrolls, added
        just before: adding first and then drawing lets XLA update the buffer in place instead of copying it).

    Returns:
      the time-major ``Batch`` of the draws (behaviour logits as stored) and ``valid``, a bool scalar that is
      False when nothing is eligible (the draws are then arbitrary and must not enter the loss).
    """
    slots, valid = draw(state, key, count, skip_newest=skip_newest)
    return gather(state, slots), valid


def mix(fresh: Batch, replayed: Batch, replayed_valid: jax.Array) -> Batch:
    """One learner batch: the fresh rows then the replayed rows, with a loss mask dropping invalid replayed rows.

    Only feed-forward batches (no core state, no previous action/reward inputs) are mixed: the toy-task
    networks of the off-policy comparison.
    """
    if jax.tree.leaves(fresh.initial_core_state) or fresh.prev_action is not None or fresh.prev_reward is not None:
        raise ValueError("replay mixing supports feed-forward batches without core state or last action/reward inputs")
    fields = ("observations", "actions", "rewards", "dones", "behaviour_logits")
    joined = {f: jnp.concatenate([getattr(fresh, f), getattr(replayed, f)], axis=1) for f in fields}
    fresh_mask = jnp.ones(fresh.actions.shape, jnp.float32) if fresh.mask is None else fresh.mask.astype(jnp.float32)
    replay_mask = jnp.broadcast_to(replayed_valid.astype(jnp.float32), replayed.actions.shape)
    return Batch(**joined, mask=jnp.concatenate([fresh_mask, replay_mask], axis=1))


def behaviour_kl(behaviour_logits: jax.typing.ArrayLike, target_logits: jax.typing.ArrayLike) -> jax.Array:
    """KL(mu || pi) per step, in nats: ``sum_a mu(a) (log mu(a) - log pi(a))`` over the last (action) axis.

    How far the policy that acted on a replayed row (mu, its stored logits) is from the learner's (pi): replay's
    off-policy gap (§5.2.2, "to increase the off-policy gap between pi and mu").
    """
    log_mu = jax.nn.log_softmax(jnp.asarray(behaviour_logits, jnp.float32), axis=-1)
    log_pi = jax.nn.log_softmax(jnp.asarray(target_logits, jnp.float32), axis=-1)
    return jnp.sum(jnp.exp(log_mu) * (log_mu - log_pi), axis=-1)


def mean_replay_age(capacity: int, fresh_rows: int, updates: int) -> float:
    """Mean age, in learner updates, of the rows ``sample`` replays over a run of ``updates`` updates.

    Follows ``add`` then ``sample(..., skip_newest=fresh_rows)`` exactly: after update u has stored its
    ``fresh_rows`` unrolls, the buffer holds ``min(u * fresh_rows, capacity)`` trajectories, the eligible ones are
    those at trajectory ages ``fresh_rows .. size - 1`` (0 = newest), drawn uniformly, and a trajectory at age ``a``
    was stored ``a // fresh_rows`` updates ago. Updates with nothing eligible (the first) replay nothing and are
    left out; every other update replays the same number of rows, so the run's mean is the mean over them.
    Divided by ``updates`` it is the run's staleness ratio (issue 28: the paper's ~0.2%).
    """
    means = []
    for u in range(1, updates + 1):
        size = min(u * fresh_rows, capacity)
        if size <= fresh_rows:
            continue
        # sum of a // fresh_rows over a = 0 .. size - 1 (ages below fresh_rows add 0): whole blocks of fresh_rows
        # ages at 0, 1, .., whole - 1 updates, then the partial block's `part` ages at `whole` updates.
        whole, part = divmod(size, fresh_rows)
        means.append((fresh_rows * whole * (whole - 1) // 2 + whole * part) / (size - fresh_rows))
    return sum(means) / len(means) if means else 0.0
