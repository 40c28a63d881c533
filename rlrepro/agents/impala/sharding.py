"""The IMPALA learner update data-parallel over local devices (``jax.sharding``).

The batch's B axis is split over a 1-D device mesh; parameters, optimiser state and metrics are
replicated. The loss is a sum over the batch, so XLA's SPMD partitioner turns the gradient into a
per-device partial sum plus one all-reduce: one jitted update, the same code on 1 CPU, several
GPUs, or (tests) several fake CPU devices (``XLA_FLAGS=--xla_force_host_platform_device_count=2``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import NamedTuple

import jax
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec

from rlrepro.agents.impala.learner import Batch, Learner, LearnerMetrics, LearnerState

BATCH_AXIS = "batch"


class ShardedLearner(NamedTuple):
    """A learner whose ``update`` splits the batch over ``mesh``.

    Attributes:
      init: ``init(key) -> LearnerState``, replicated on every device of the mesh.
      update: jitted ``update(state, batch) -> (state, metrics)`` (``jax.jit`` with in/out shardings);
        host (numpy) batches are split on the way in, device batches must already carry
        ``batch_sharding`` (use ``shard_batch``).
      shard_batch: ``shard_batch(batch) -> Batch`` placed on the devices, split along B (call it on
        the next batch while the current update runs to overlap the transfer).
      mesh: the 1-D device mesh, axis ``"batch"``.
    """

    init: Callable[[jax.Array], LearnerState]
    update: Callable[[LearnerState, Batch], tuple[LearnerState, LearnerMetrics]]
    shard_batch: Callable[[Batch], Batch]
    mesh: Mesh


def batch_sharding(mesh: Mesh) -> Batch:
    """Per-field shardings of a ``Batch`` (a pytree prefix): time-major fields split on axis 1, the rest on 0."""
    time_major = NamedSharding(mesh, PartitionSpec(None, BATCH_AXIS))
    batch_major = NamedSharding(mesh, PartitionSpec(BATCH_AXIS))
    return Batch(
        observations=time_major,
        actions=time_major,
        rewards=time_major,
        dones=time_major,
        behaviour_logits=time_major,
        initial_core_state=batch_major,
        prev_action=batch_major,
        prev_reward=batch_major,
        mask=time_major,
    )


def make_sharded_update(learner: Learner, devices: Sequence[jax.Device] | None = None) -> ShardedLearner:
    """Data-parallel ``learner`` over ``devices`` (default ``jax.local_devices()``); B must divide evenly."""
    devices = list(jax.local_devices() if devices is None else devices)
    mesh = Mesh(np.asarray(devices), (BATCH_AXIS,))
    replicated = NamedSharding(mesh, PartitionSpec())
    shardings = batch_sharding(mesh)
    update = jax.jit(learner.update, in_shardings=(replicated, shardings), out_shardings=replicated)
    init = jax.jit(learner.init, out_shardings=replicated)

    def shard_batch(batch: Batch) -> Batch:
        batch_size = batch.actions.shape[1]
        if batch_size % len(devices):
            raise ValueError(f"batch size {batch_size} is not divisible by the {len(devices)} devices of the mesh")
        return jax.device_put(batch, shardings)

    return ShardedLearner(init=init, update=update, shard_batch=shard_batch, mesh=mesh)
