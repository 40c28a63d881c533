"""The shell every all-in-JAX training loop shares: one seed's ``init(key)`` and ``run_chunk(state)`` (a chunk of
updates scanned inside one call), jitted, and the same two over a leading seed axis.

An agent writes its loop for ONE seed, deterministic given the key (IMPALA ``agents/impala/loop.py``, FRODO
``agents/frodo/loop.py``, IMPALA+SR ``agents/impala_sr/loop.py``, TD(lambda) ``agents/td_lambda/loop.py``);
``scanned_trainer`` gives it the four compiled entry points the runner's ``TrainerProgram`` calls. A train state
carries its PRNG key as raw ``uint32`` data (``raw_key``), so that it stays a pytree of plain arrays that a
checkpoint stores with numpy.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, NamedTuple

import jax


class ScannedTrainer(NamedTuple):
    """Jitted ``init(key)``, ``run_chunk(state) -> (state, metrics)`` for one seed, and their over-seeds versions
    (``init_batch`` takes the stacked raw keys of the job's seeds)."""

    init: Callable[[jax.Array], Any]
    run_chunk: Callable[[Any], tuple[Any, Any]]
    init_batch: Callable[[jax.Array], Any]
    run_chunk_batch: Callable[[Any], tuple[Any, Any]]


def scanned_trainer(init: Callable[[jax.Array], Any], run_chunk: Callable[[Any], tuple[Any, Any]], *,
                    init_seeds_one_by_one: bool = False) -> ScannedTrainer:
    """``init`` and ``run_chunk`` jitted, and jitted over a leading seed axis (``vmap``).

    ``init_seeds_one_by_one``: the batched init runs the seeds one after another (``lax.map``) instead of
    vmapped, for an init whose batched form misbehaves (FRODO's LSTM initialisers, ``make_frodo_trainer``).
    """
    over_seeds = functools.partial(jax.lax.map, init) if init_seeds_one_by_one else jax.vmap(init)
    return ScannedTrainer(
        init=jax.jit(init),
        run_chunk=jax.jit(run_chunk),
        init_batch=jax.jit(over_seeds),
        run_chunk_batch=jax.jit(jax.vmap(run_chunk)),
    )


def check_updates_per_chunk(updates_per_chunk: int) -> None:
    if updates_per_chunk < 1:
        raise ValueError(f"updates_per_chunk must be >= 1, got {updates_per_chunk}")


def raw_key(key: jax.Array) -> jax.Array:
    """Raw uint32 key data (a typed key's data; raw data as it is), so that a train state is plain arrays."""
    if jax.dtypes.issubdtype(key.dtype, jax.dtypes.prng_key):
        return jax.random.key_data(key)
    return key


def lag_slot(learner_step: jax.Array, policy_lag: int) -> jax.Array:
    """Ring-buffer slot holding the parameters ``policy_lag`` updates old when ``learner_step`` updates are done.

    Slot ``(k + 1) % (L + 1)`` holds the snapshot after update ``k - L`` (the initial parameters while
    ``k < L``); it is overwritten by the snapshot after update ``k + 1``, once the actor has used it.
    """
    return (learner_step + 1) % (policy_lag + 1)
