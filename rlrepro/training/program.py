"""The contract between a training job and an agent: the ``TrainerProgram`` a builder returns and the ``ChunkPlan``
that sizes it. Standard library only: planning, ``rlrepro plan`` and the tables read chunk plans without JAX.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

from rlrepro.environments.errors import UnsupportedSetupError


class TrainerProgram(NamedTuple):
    """What the runner needs: state init over a batch of seed keys, one chunk of training, and sizes.

    ``run_chunk_batch`` returns (state, metrics) where metrics is a NamedTuple of [num_seeds] arrays
    with at least ``frames``, ``episodes`` and ``mean_return``.
    """

    init_batch: Callable[[Any], Any]
    run_chunk_batch: Callable[[Any], tuple[Any, Any]]
    num_chunks: int
    updates_per_chunk: int
    frames_per_chunk: int
    write_artifacts: Callable[[Any, list[Any]], None] | None = None  # (final state, run dirs): extra files per run


def num_chunks_for(frames: int, frames_per_update: int, updates_per_chunk: int) -> int:
    """Chunks of ``updates_per_chunk`` updates needed to reach ``frames`` (at least one)."""
    return max(1, math.ceil(frames / (frames_per_update * updates_per_chunk)))


class ChunkPlan(NamedTuple):
    """How a run of a frame budget is cut into chunks, and so what it actually trains: whole chunks only, so
    ``frames`` (``num_chunks * frames_per_chunk``) is the budget rounded up to a whole chunk.

    The builders size their ``TrainerProgram`` from it, and ``rlrepro plan``, summaries, tables and MLflow read
    the same numbers without building anything (it imports no JAX).
    """

    num_chunks: int
    updates_per_chunk: int  # what one chunk counts: updates, environment steps or proposals (``unit``)
    frames_per_chunk: int  # in ``unit``s
    unit: str = "frames"  # "frames" (environment frames), or "proposals" for a loss search
    per_unit: str = ""  # what one unit costs when it is not a frame (a search: each proposal's training)

    @property
    def frames(self) -> int:
        """What the run trains: every chunk whole."""
        return self.num_chunks * self.frames_per_chunk


def update_chunks(frames: int, frames_per_update: int, run: Any) -> ChunkPlan:
    """Chunks of ``run.updates_per_chunk`` learner updates of ``frames_per_update`` frames each."""
    return ChunkPlan(num_chunks_for(frames, frames_per_update, run.updates_per_chunk), run.updates_per_chunk,
                     frames_per_update * run.updates_per_chunk)


def step_chunks(frames: int, env_spec: Any, run: Any) -> ChunkPlan:
    """Host loops counting environment steps (DQN, the ReF-ER agents): ``run.updates_per_chunk`` steps per chunk
    (all of them when the budget is smaller), each of ``env_spec.frames_per_step`` frames."""
    total = max(1, math.ceil(frames / env_spec.frames_per_step))
    steps = min(run.updates_per_chunk, total)
    return ChunkPlan(math.ceil(total / steps), steps, steps * env_spec.frames_per_step)


def host_step_chunks(agent: Any, env_spec: Any, *, frames: int, run: Any) -> ChunkPlan:
    """DQN, V-RACER, DDPG, NAF: a chunk is ``run.updates_per_chunk`` environment steps of every seed."""
    return step_chunks(frames, env_spec, run)


ONE_SEED = "Atari jobs train one seed each: set run.seeds_per_job: 1 in the spec"


def one_seed_program(trainer: Any, chunks: ChunkPlan, refusal: str = ONE_SEED) -> TrainerProgram:
    """The program of a host trainer (``init(key)``, ``run_chunk(state)``) that trains one seed per job; a batch of
    more keys is refused with ``refusal``."""

    def init_batch(keys: Any) -> Any:
        if len(keys) != 1:
            raise UnsupportedSetupError(refusal)
        return trainer.init(keys[0])

    return TrainerProgram(init_batch, trainer.run_chunk, chunks.num_chunks, chunks.updates_per_chunk,
                          chunks.frames_per_chunk)


def seed_keys(seeds: list[int]) -> Any:
    """The runner's seed keys: the raw key data of ``jax.random.key(seed)`` for every seed, [num_seeds, 2] (JAX is
    imported here, not by planning); ``seeds_of`` reads the seeds back."""
    import jax

    return jax.numpy.stack([jax.random.key_data(jax.random.key(s)) for s in seeds])


def seeds_of(keys: Any) -> list[int]:
    """The run seeds back from the runner's seed keys (raw data of ``jax.random.key(seed)``: [0, seed])."""
    import numpy as np

    return [int(np.asarray(k).ravel()[-1]) for k in np.asarray(keys)]


def lockstep_program(host: Any, env_spec: Any, frames: int, run: Any) -> TrainerProgram:
    """The program of a lockstep host loop on MuJoCo (V-RACER, DDPG, NAF, PPO, ACER: ``host.init(seeds)``,
    ``host.run(state, steps)``): every seed in lockstep, a chunk of ``run.updates_per_chunk`` environment steps,
    R_random written beside every run."""
    chunks = step_chunks(frames, env_spec, run)
    return TrainerProgram(
        lambda keys: host.init(seeds_of(keys)), lambda state: host.run(state, chunks.updates_per_chunk),
        chunks.num_chunks, chunks.updates_per_chunk, chunks.frames_per_chunk,
        write_artifacts=lambda state, run_dirs: write_random_score(env_spec, run_dirs),
    )


def write_random_score(env_spec: Any, run_dirs: list[Path]) -> None:
    """R_random of the task (measured once per results folder, cached with provenance) beside every run.

    A run folder is ``<results>/<scale>/runs/<paper>/<experiment>/<variant>/<env>/seed<k>``: the cache is
    ``<results>/random_scores/`` (shared by the scales: the measurement does not depend on them).
    """
    from rlrepro.environments.mujoco import random_score

    record = random_score(env_spec, run_dirs[0].parents[6] / "random_scores")
    for run_dir in run_dirs:
        (run_dir / "random_score.json").write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
