"""The frames (or proposals) the runs of an experiment train: whole chunks of each kind's ``ChunkPlan``, beside the
budget they were given. Imports no JAX (the registry's chunk functions are JAX-free)."""

from __future__ import annotations

from dataclasses import dataclass

from rlrepro.specs import ExperimentSpec, Scale, resolve_agent, resolve_env
from rlrepro.workflow.plan import MULTITASK_ENV, multitask_env_ids


def chunk_plan(spec: ExperimentSpec, variant_name: str, env_id: str, scale: Scale):
    """How the (variant, env) run at ``scale`` is cut into chunks, from the same resolved agent and environment the
    trainer builds from (``rlrepro.training.program.ChunkPlan``; imports no JAX); None when this agent cannot train
    on that environment kind (nothing is trained)."""
    from rlrepro.agents.registry import chunk_plan as plan_chunks
    from rlrepro.agents.registry import not_implemented

    variant, control = spec.variant_named(variant_name)
    if env_id == MULTITASK_ENV:  # every game of a multi-task member is cut alike (its builder checks they agree)
        env_id = multitask_env_ids(spec, scale)[0]
    agent, env = resolve_agent(spec, variant, scale, control=control), resolve_env(spec, env_id, scale)
    if not_implemented(agent.kind, env.kind):
        return None
    return plan_chunks(agent, env, frames=spec.scale(scale).frames, run=spec.run)


@dataclass(frozen=True)
class FrameCount:
    """What the runs of an experiment at a scale train, beside the budget they were given.

    ``trained`` are whole chunks (at least the budget); a loss search counts proposals, not frames (``unit``,
    ``per_unit``). ``low < high`` when the cells train different amounts (e.g. frames per step differ by env).
    """

    low: int
    high: int
    budget: int
    unit: str = "frames"
    per_unit: str = ""

    def text(self, *, per_run: bool = True) -> str:
        """"16,000 frames per run (budget 12,800; whole chunks)" -- the budget only where it differs."""
        count = f"{self.low:,}" if self.low == self.high else f"{self.low:,}-{self.high:,}"
        text = f"{count} {self.unit}" + (" per run" if per_run else "")
        notes = []
        if (self.low, self.high) != (self.budget, self.budget):
            notes.append(f"budget {self.budget:,}; training runs whole chunks")
        if self.per_unit:
            notes.append(self.per_unit)
        return text + (f" ({'; '.join(notes)})" if notes else "")


def frame_count(spec: ExperimentSpec, scale: Scale, cells: list[tuple[str, str]] | None = None) -> FrameCount:
    """The frames per run trained over ``cells`` ((variant, env); default every cell run at ``scale``); the budget
    when none of them can train here."""
    size = spec.scale(scale)
    if cells is None:
        envs = size.environments or [env.id for env in spec.environments]
        cells = [(v.name, env) for v in spec.variant_list() if size.variants is None or v.name in size.variants
                 for env in envs]
    plans = [p for p in (chunk_plan(spec, variant, env, scale) for variant, env in cells) if p is not None]
    if not plans:
        return FrameCount(size.frames, size.frames, size.frames)
    trained = [p.frames for p in plans]
    return FrameCount(min(trained), max(trained), size.frames, plans[0].unit, plans[0].per_unit)
