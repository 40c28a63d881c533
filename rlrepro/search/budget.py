"""A loss search's budget: proposals, not frames (no JAX: planning reads it)."""

from __future__ import annotations

import math
from typing import Any

from rlrepro.training.program import ChunkPlan


def loss_search_chunks(agent: Any, env_spec: Any, *, frames: int, run: Any) -> ChunkPlan:
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
