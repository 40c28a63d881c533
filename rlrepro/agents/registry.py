"""Agent kind -> trainer builder: the one place an agent is registered.

A builder turns a resolved agent spec, an environment spec and a frame budget into a
:class:`TrainerProgram`: batched (over seeds) ``init`` and ``run_chunk`` functions, and how many
chunks the budget takes. The runner in ``rlrepro.training.runner`` is agent-agnostic.
"""

from __future__ import annotations

import importlib
import math
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


def num_chunks_for(frames: int, frames_per_update: int, updates_per_chunk: int) -> int:
    """Chunks of ``updates_per_chunk`` updates needed to reach ``frames`` (at least one)."""
    return max(1, math.ceil(frames / (frames_per_update * updates_per_chunk)))


class AgentEntry(NamedTuple):
    """Where an agent kind's trainer builder lives (imported only when used) and what it can train on."""

    builder: str  # "module:function", called as builder(agent_spec, env_spec, frames=..., run=...)
    env_kinds: tuple[str, ...]  # environment kinds it trains on; others are reported as not implemented
    # "module:function", called as config(agent_spec, env_spec, frames=..., run=...): the one place the spec
    # becomes the run's configuration (the builder uses it); every spec field changes its result or is
    # rejected by validation (tests/agents/test_spec_fields_reach_configs.py).
    config: str


AGENTS: dict[str, AgentEntry] = {
    "impala": AgentEntry(
        "rlrepro.agents.impala.trainer:build_impala", ("jax", "atari"), "rlrepro.agents.impala.trainer:resolve_impala"
    ),
    "frodo": AgentEntry(
        "rlrepro.agents.frodo.trainer:build_frodo", ("jax", "atari"), "rlrepro.agents.frodo.trainer:resolve_frodo"
    ),
    "td_lambda": AgentEntry(
        "rlrepro.agents.td_lambda.trainer:build_td_lambda", ("jax",), "rlrepro.agents.td_lambda.trainer:resolve_td_lambda"
    ),
    "dqn": AgentEntry("rlrepro.agents.dqn.build:build_dqn", ("gym", "atari"), "rlrepro.agents.dqn.build:resolve_dqn"),
    "loss_search": AgentEntry(
        "rlrepro.search.trainer:build_loss_search", ("gym_suite",), "rlrepro.search.trainer:resolve_loss_search"
    ),
    "vracer": AgentEntry("rlrepro.agents.vracer.build:build_vracer", ("mujoco",), "rlrepro.agents.vracer.build:resolve_vracer"),
    "ddpg": AgentEntry("rlrepro.agents.ddpg.build:build_ddpg", ("mujoco",), "rlrepro.agents.ddpg.build:resolve_ddpg"),
    "naf": AgentEntry("rlrepro.agents.naf.build:build_naf", ("mujoco",), "rlrepro.agents.naf.build:resolve_naf"),
    "impala_sr": AgentEntry(
        "rlrepro.agents.impala_sr.trainer:build_impala_sr", ("jax",), "rlrepro.agents.impala_sr.trainer:resolve_impala_sr"
    ),
}


def _load(target: str) -> Callable[..., Any]:
    module, _, function = target.partition(":")
    return getattr(importlib.import_module(module), function)


def resolve_config(agent: Any, env_spec: Any, *, frames: int, run: RunSpec) -> Any:
    """The run configuration ``agent.kind``'s builder derives from the spec (see ``AgentEntry.config``)."""
    if reason := not_implemented(agent.kind, env_spec.kind):
        raise UnsupportedSetupError(reason)
    return _load(AGENTS[agent.kind].config)(agent, env_spec, frames=frames, run=run)


def not_implemented(agent_kind: str, env_kind: str) -> str | None:
    """Why this agent cannot train on this kind of environment yet, or None (cheap: imports nothing)."""
    entry = AGENTS.get(agent_kind)
    if entry is None:
        return f"agent.kind '{agent_kind}': no trainer registered; known {sorted(AGENTS)}"
    if env_kind not in entry.env_kinds:
        return f"{agent_kind} on '{env_kind}' environments is not implemented yet (it trains on {', '.join(entry.env_kinds)})"
    return None


def build_trainer(agent: Any, env_spec: Any, *, frames: int, run: RunSpec) -> TrainerProgram:
    """Import and call the builder registered for ``agent.kind``."""
    if reason := not_implemented(agent.kind, env_spec.kind):
        raise UnsupportedSetupError(reason)
    return _load(AGENTS[agent.kind].builder)(agent, env_spec, frames=frames, run=run)
