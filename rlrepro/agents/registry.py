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


def update_chunks(frames: int, frames_per_update: int, run: RunSpec) -> ChunkPlan:
    """Chunks of ``run.updates_per_chunk`` learner updates of ``frames_per_update`` frames each."""
    return ChunkPlan(num_chunks_for(frames, frames_per_update, run.updates_per_chunk), run.updates_per_chunk,
                     frames_per_update * run.updates_per_chunk)


def step_chunks(frames: int, env_spec: Any, run: RunSpec) -> ChunkPlan:
    """Host loops counting environment steps (DQN, the ReF-ER agents): ``run.updates_per_chunk`` steps per chunk
    (all of them when the budget is smaller), each of ``env_spec.frames_per_step`` frames."""
    total = max(1, math.ceil(frames / env_spec.frames_per_step))
    steps = min(run.updates_per_chunk, total)
    return ChunkPlan(math.ceil(total / steps), steps, steps * env_spec.frames_per_step)


def impala_chunks(agent: Any, env_spec: Any, *, frames: int, run: RunSpec) -> ChunkPlan:
    """IMPALA (and IMPALA+SR): one update learns from ``batch_size`` unrolls of ``unroll_length`` steps; with
    IMPALA's replay (§5.2.2) only the new rows are charged frames (the replayed ones were charged when collected)."""
    from rlrepro.agents.impala.config import replay_rows  # dataclasses only: no JAX

    replay = getattr(agent, "replay", None)
    fresh = agent.batch_size - (replay_rows(agent.batch_size, replay.fraction) if replay is not None else 0)
    return update_chunks(frames, agent.unroll_length * fresh * env_spec.frames_per_step, run)


def td_lambda_chunks(agent: Any, env_spec: Any, *, frames: int, run: RunSpec) -> ChunkPlan:
    """TD(lambda): one counted update is ``trajectories_per_update`` trajectories of ``unroll_length`` steps."""
    return update_chunks(frames, agent.unroll_length * agent.trajectories_per_update * env_spec.frames_per_step, run)


def frodo_chunks(agent: Any, env_spec: Any, *, frames: int, run: RunSpec) -> ChunkPlan:
    """FRODO: one meta-update consumes M inner batches and the validation batch (FrodoConfig.frames_per_meta_update,
    which ``resolve_frodo`` checks against this)."""
    validation = agent.outer.unroll_length or agent.unroll_length
    if agent.outer.kind == "monte_carlo" and agent.outer.unroll_length is None and env_spec.kind == "jax":
        # Derived from the environment (Catch's rows), which only its JAX module knows: a spec that leaves it null
        # costs planning that import (elsewhere ``frodo_config`` refuses a Monte Carlo outer loss).
        from rlrepro.agents.frodo.trainer import monte_carlo_episode_length
        from rlrepro.environments.jax_envs import make_jax_env

        validation = monte_carlo_episode_length(agent, make_jax_env(env_spec.name, **env_spec.kwargs), env_spec.id)
    steps = (agent.inner_steps * agent.unroll_length + validation) * agent.batch_size
    return update_chunks(frames, steps * env_spec.frames_per_step, run)


def host_step_chunks(agent: Any, env_spec: Any, *, frames: int, run: RunSpec) -> ChunkPlan:
    """DQN, V-RACER, DDPG, NAF: a chunk is ``run.updates_per_chunk`` environment steps of every seed."""
    return step_chunks(frames, env_spec, run)


def loss_search_chunks(agent: Any, env_spec: Any, *, frames: int, run: RunSpec) -> ChunkPlan:
    """A loss search's budget counts proposals (programs), ``agent.trials_per_chunk`` per chunk; each proposal
    trains DQN for up to ``agent.env_steps`` environment steps per suite member (the hurdle can stop it first)."""
    per_chunk = min(agent.trials_per_chunk, frames)
    return ChunkPlan(math.ceil(frames / per_chunk), per_chunk, per_chunk, "proposals", search_cost_text(agent, env_spec))


def search_cost_text(agent: Any, env_spec: Any) -> str:
    """What one proposal trains: the suite members the run scores (a scale's ``env_steps`` is merged over the base
    dict, so members of other suites keep entries the run never trains) and their step budgets."""
    members = [env.id for env in env_spec.environments if env.id in agent.env_steps]
    steps = {member: agent.env_steps[member] for member in members}
    total = sum(steps.values())
    if len(steps) == 1:
        return f"each trains DQN for up to {total:,} environment steps on {members[0]}"
    each = ", ".join(f"{member} {n:,}" for member, n in steps.items())
    return f"each trains DQN for up to {total:,} environment steps: {each}"


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


AGENTS: dict[str, AgentEntry] = {
    "impala": AgentEntry("rlrepro.agents.impala.trainer:build_impala", ("jax", "atari"),
                         "rlrepro.agents.impala.trainer:resolve_impala", impala_chunks),
    "frodo": AgentEntry("rlrepro.agents.frodo.trainer:build_frodo", ("jax", "atari"),
                        "rlrepro.agents.frodo.trainer:resolve_frodo", frodo_chunks),
    "td_lambda": AgentEntry("rlrepro.agents.td_lambda.trainer:build_td_lambda", ("jax",),
                            "rlrepro.agents.td_lambda.trainer:resolve_td_lambda", td_lambda_chunks),
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
    "impala_sr": AgentEntry("rlrepro.agents.impala_sr.trainer:build_impala_sr", ("jax", "atari"),
                            "rlrepro.agents.impala_sr.trainer:resolve_impala_sr", impala_chunks),
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
