"""Agent kind -> its trainer builder, configuration and chunk plan (``AGENTS``).

A builder turns a resolved agent spec, an environment spec and a frame budget into a
``rlrepro.training.program.TrainerProgram``: batched (over seeds) ``init`` and ``run_chunk`` functions, and how many
chunks the budget takes (the kind's ``ChunkPlan``). The runner in ``rlrepro.jobs.runner`` is agent-agnostic. The
registry sits above the agents: it names their builders as strings, imported when a job builds, and imports only
their JAX-free chunk functions, so that planning loads no JAX; no agent imports it.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any, NamedTuple

from rlrepro.agents.frodo.config import frodo_chunks
from rlrepro.agents.impala.config import impala_chunks
from rlrepro.agents.td_lambda.config import td_lambda_chunks
from rlrepro.environments.errors import UnsupportedSetupError
from rlrepro.search.budget import loss_search_chunks
from rlrepro.specs.experiment import RunSpec
from rlrepro.training.program import ChunkPlan, TrainerProgram, host_step_chunks


class AgentEntry(NamedTuple):
    """Where an agent kind's trainer builder lives (imported only when used) and what it can train on."""

    builder: str  # "module:function", called as builder(agent_spec, env_spec, frames=..., run=...)
    env_kinds: tuple[str, ...]  # environment kinds it trains on; others are reported as not implemented
    # "module:function", called as config(agent_spec, env_spec, frames=..., run=...): the one place the spec
    # becomes the run's configuration (the builder uses it); every spec field changes its result or is
    # rejected by validation (tests/agents/test_spec_fields_reach_configs.py).
    config: str
    # chunks(agent_spec, env_spec, frames=..., run=...) -> ChunkPlan: how many chunks of how many frames the
    # budget takes; the builder sizes its program with it (imports no JAX: planning and tables call it too).
    chunks: Callable[..., ChunkPlan]
    # "module:function", called as multitask(agent_spec, env_specs, frames=..., run=...): one agent trained on every
    # environment of the scale at once (``agent.multitask``); None: the kind has no multi-task agent.
    multitask: str | None = None


AGENTS: dict[str, AgentEntry] = {
    "impala": AgentEntry("rlrepro.agents.impala.build:build_impala", ("jax", "atari"),
                         "rlrepro.agents.impala.build:resolve_impala", impala_chunks,
                         "rlrepro.agents.impala.build:build_impala_multitask"),
    "frodo": AgentEntry("rlrepro.agents.frodo.build:build_frodo", ("jax", "atari"),
                        "rlrepro.agents.frodo.build:resolve_frodo", frodo_chunks),
    "td_lambda": AgentEntry("rlrepro.agents.td_lambda.build:build_td_lambda", ("jax",),
                            "rlrepro.agents.td_lambda.build:resolve_td_lambda", td_lambda_chunks),
    "dqn": AgentEntry("rlrepro.agents.dqn.build:build_dqn", ("gym", "atari"), "rlrepro.agents.dqn.build:resolve_dqn",
                      host_step_chunks),
    "loss_search": AgentEntry("rlrepro.search.trainer:build_loss_search", ("gym_suite",),
                              "rlrepro.search.trainer:resolve_loss_search", loss_search_chunks),
    "vracer": AgentEntry("rlrepro.agents.vracer.build:build_vracer", ("mujoco",),
                         "rlrepro.agents.vracer.build:resolve_vracer", host_step_chunks),
    "ddpg": AgentEntry("rlrepro.agents.ddpg.build:build_ddpg", ("mujoco",), "rlrepro.agents.ddpg.build:resolve_ddpg",
                       host_step_chunks),
    "naf": AgentEntry("rlrepro.agents.naf.build:build_naf", ("mujoco",), "rlrepro.agents.naf.build:resolve_naf",
                      host_step_chunks),
    "impala_sr": AgentEntry("rlrepro.agents.impala_sr.build:build_impala_sr", ("jax", "atari"),
                            "rlrepro.agents.impala_sr.build:resolve_impala_sr", impala_chunks),
    "ppo": AgentEntry("rlrepro.agents.ppo.build:build_ppo", ("mujoco",), "rlrepro.agents.ppo.build:resolve_ppo",
                      host_step_chunks),
    "acer": AgentEntry("rlrepro.agents.acer.build:build_acer", ("mujoco",), "rlrepro.agents.acer.build:resolve_acer",
                       host_step_chunks),
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


def chunk_plan(agent: Any, env_spec: Any, *, frames: int, run: RunSpec) -> ChunkPlan:
    """The chunks ``agent.kind`` trains a budget of ``frames`` in (see ``ChunkPlan``); imports no JAX."""
    if reason := not_implemented(agent.kind, env_spec.kind):
        raise UnsupportedSetupError(reason)
    return AGENTS[agent.kind].chunks(agent, env_spec, frames=frames, run=run)


def build_trainer(agent: Any, env_spec: Any, *, frames: int, run: RunSpec) -> TrainerProgram:
    """Import and call the builder registered for ``agent.kind``."""
    if reason := not_implemented(agent.kind, env_spec.kind):
        raise UnsupportedSetupError(reason)
    program = _load(AGENTS[agent.kind].builder)(agent, env_spec, frames=frames, run=run)
    planned = chunk_plan(agent, env_spec, frames=frames, run=run)
    built = (program.num_chunks, program.updates_per_chunk, program.frames_per_chunk)
    if built != planned[:3]:  # what plans, tables and MLflow report must be what the runner trains
        raise AssertionError(f"{agent.kind}: the builder made (chunks, updates, frames per chunk) {built}; "
                             f"its ChunkPlan says {planned[:3]}")
    return program


def build_multitask_trainer(agent: Any, env_specs: list[Any], *, frames: int, run: RunSpec) -> TrainerProgram:
    """Import and call the multi-task builder registered for ``agent.kind``: one agent on every environment."""
    multitask = AGENTS[agent.kind].multitask if agent.kind in AGENTS else None
    if multitask is None:
        raise UnsupportedSetupError(f"agent.kind '{agent.kind}' has no multi-task trainer (agent.multitask)")
    return _load(multitask)(agent, env_specs, frames=frames, run=run)
