"""Agent kind -> trainer builder: the one place an agent is registered.

A builder turns a resolved agent spec, an environment spec and a frame budget into a
:class:`TrainerProgram`: batched (over seeds) ``init`` and ``run_chunk`` functions, and how many
chunks the budget takes. The runner in ``rlrepro.training.runner`` is agent-agnostic.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

from rlrepro.environments.errors import UnsupportedSetupError
from rlrepro.specs.experiment import RunSpec


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


def build_impala(agent: Any, env_spec: Any, *, frames: int, run: RunSpec) -> TrainerProgram:
    """IMPALA: the jitted loop on pure-JAX environments, the actor-learner on Atari."""
    from rlrepro.agents.impala.trainer import build_impala as build

    return build(agent, env_spec, frames=frames, run=run)


def build_dqn(agent: Any, env_spec: Any, *, frames: int, run: RunSpec) -> TrainerProgram:
    """DQN (Evolving RL) on a gymnasium environment; imported lazily."""
    from rlrepro.agents.dqn.build import build_dqn as build

    return build(agent, env_spec, frames=frames, run=run)


def build_loss_search(agent: Any, env_spec: Any, *, frames: int, run: RunSpec) -> TrainerProgram:
    """Regularized evolution over DQN loss programs; ``frames`` counts proposed programs. Imported lazily."""
    from rlrepro.search.trainer import build_loss_search as build

    return build(agent, env_spec, frames=frames, run=run)


def build_frodo(agent: Any, env_spec: Any, *, frames: int, run: RunSpec) -> TrainerProgram:
    """FRODO (meta-gradient target learning) on a pure-JAX environment; imported lazily."""
    from rlrepro.agents.frodo.trainer import build_frodo as build

    return build(agent, env_spec, frames=frames, run=run)


def build_td_lambda(agent: Any, env_spec: Any, *, frames: int, run: RunSpec) -> TrainerProgram:
    """TD(lambda) prediction (FRODO's random-walk baseline); imported lazily."""
    from rlrepro.agents.td_lambda.trainer import build_td_lambda as build

    return build(agent, env_spec, frames=frames, run=run)


BUILDERS: dict[str, Callable[..., TrainerProgram]] = {
    "frodo": build_frodo,
    "td_lambda": build_td_lambda,
    "impala": build_impala,
    "dqn": build_dqn,
    "loss_search": build_loss_search,
}


def build_trainer(agent: Any, env_spec: Any, *, frames: int, run: RunSpec) -> TrainerProgram:
    """Look up the builder of ``agent.kind``."""
    try:
        builder = BUILDERS[agent.kind]
    except KeyError:
        raise UnsupportedSetupError(f"agent.kind '{agent.kind}': no trainer registered; known {sorted(BUILDERS)}") from None
    return builder(agent, env_spec, frames=frames, run=run)
