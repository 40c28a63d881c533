"""``ChunkPlan`` (rlrepro/training/program.py): what a run of a budget trains (whole chunks), per agent kind, without JAX (issue 17).

The builders size their programs with it and ``build_trainer`` refuses a program that differs, so plans, summaries,
tables and MLflow (which read the ChunkPlan) state what the runner trains. Checked here: every repository spec's
program at smoke scale; per kind, over several budgets, the whole-chunk property and the built program; and, on
real runs, that the agent's own frame counter after the last chunk equals ``ChunkPlan.frames``.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from rlrepro.agents.registry import AGENTS, build_trainer, chunk_plan, not_implemented
from rlrepro.training.program import ChunkPlan
from rlrepro.environments.availability import missing_backend
from rlrepro.specs import load_spec, load_specs, resolve_agent, resolve_env

REPO = Path(__file__).resolve().parents[2]

# One repository spec per agent kind (its first variant and environment at smoke scale).
SPEC_OF_KIND = {
    "impala": "impala/offpolicy_correction_toy.yaml",
    "frodo": "frodo/random_walk.yaml",
    "td_lambda": "frodo/random_walk.yaml",
    "dqn": "evolving_rl/eval_classic_minigrid.yaml",
    "loss_search": "evolving_rl/search_scratch_cartpole.yaml",
    "vracer": "refer/mujoco_vracer.yaml",
    "ddpg": "refer/mujoco_ddpg.yaml",
    "naf": "refer/mujoco_naf.yaml",
    "impala_sr": "synthetic_returns/chain.yaml",
    "ppo": "refer/mujoco_baselines.yaml",
    "acer": "refer/mujoco_baselines.yaml",
}


def _cells(spec, scale: str = "smoke"):
    size = spec.scale(scale)
    envs = size.environments or [env.id for env in spec.environments]
    for variant in spec.variant_list():
        if size.variants is None or variant.name in size.variants:
            for env_id in envs:
                yield resolve_agent(spec, variant, scale), resolve_env(spec, env_id, scale)


def _setup(kind: str):
    """(agent spec, env spec, run spec, smoke budget) of ``kind`` from its repository spec, or skip."""
    spec = load_spec(REPO / "specs" / SPEC_OF_KIND[kind])
    for agent, env in _cells(spec):
        if agent.kind == kind:
            if reason := missing_backend(env) or not_implemented(agent.kind, env.kind):
                pytest.skip(reason)
            return agent, env, spec.run, spec.scale("smoke").frames
    raise AssertionError(f"{SPEC_OF_KIND[kind]} has no {kind} cell")


def test_every_agent_kind_is_covered():
    assert set(SPEC_OF_KIND) == set(AGENTS)


def test_every_repository_spec_builds_the_program_its_chunk_plan_describes():
    """All specs, all variants and environments at smoke scale that can train here (building compiles nothing)."""
    checked = 0
    for _, spec in load_specs([REPO / "specs"]):
        for agent, env in _cells(spec):
            if missing_backend(env) or not_implemented(agent.kind, env.kind):
                continue
            program = build_trainer(agent, env, frames=spec.scale("smoke").frames, run=spec.run)
            planned = chunk_plan(agent, env, frames=spec.scale("smoke").frames, run=spec.run)
            assert (program.num_chunks, program.updates_per_chunk, program.frames_per_chunk) == planned[:3]
            checked += 1
    assert checked > 20


@pytest.mark.parametrize("kind", sorted(SPEC_OF_KIND))
def test_a_budget_trains_the_fewest_whole_chunks_that_cover_it(kind: str):
    """For budgets around one and a few chunks: whole chunks only, at least the budget, less than a chunk more
    (a host loop rounds the budget up to whole environment steps first); the built program agrees."""
    agent, env, run, smoke = _setup(kind)
    per_chunk = chunk_plan(agent, env, frames=smoke, run=run).frames_per_chunk
    for budget in sorted({1, per_chunk - 1, per_chunk, per_chunk + 1, 3 * per_chunk + 7, smoke} - {0}):
        planned = chunk_plan(agent, env, frames=budget, run=run)
        assert planned.frames == planned.num_chunks * planned.frames_per_chunk
        step = 1 if planned.unit == "proposals" else env.frames_per_step
        assert budget <= planned.frames < budget + planned.frames_per_chunk + step - 1, (budget, planned)
        program = build_trainer(agent, env, frames=budget, run=run)
        assert (program.num_chunks, program.updates_per_chunk, program.frames_per_chunk) == planned[:3]


def test_a_loss_search_counts_proposals_and_says_what_one_costs():
    agent, env, run, smoke = _setup("loss_search")
    planned = chunk_plan(agent, env, frames=smoke, run=run)
    assert planned.unit == "proposals" and planned.frames == smoke  # proposals: a chunk is never more than the budget
    members = [e.id for e in env.environments]
    steps = sum(agent.env_steps[m] for m in members)
    assert planned.per_unit.startswith(f"each trains DQN for up to {steps:,} environment steps")


def _run_to_the_end(kind: str, budget_chunks: float) -> tuple[int, ChunkPlan]:
    """Build ``kind``'s program for a budget of ``budget_chunks`` chunks (rounded down to a frame), run every chunk
    for one seed and return the agent's own frame counter after the last one, with the plan."""
    import jax

    agent, env, run, smoke = _setup(kind)
    per_chunk = chunk_plan(agent, env, frames=smoke, run=run).frames_per_chunk
    budget = max(1, int(budget_chunks * per_chunk))
    planned = chunk_plan(agent, env, frames=budget, run=run)
    program = build_trainer(agent, env, frames=budget, run=run)
    state = program.init_batch(jax.numpy.stack([jax.random.key_data(jax.random.key(0))]))
    for _ in range(program.num_chunks):
        state, metrics = program.run_chunk_batch(state)
    return int(np.asarray(jax.device_get(metrics.frames)).ravel()[0]), planned


@pytest.mark.parametrize("kind", ["impala", "td_lambda", "dqn", "ppo"])
def test_a_real_run_trains_what_its_chunk_plan_counts(kind: str):
    """1.5 chunks of budget: the agent itself counts 2 whole chunks of frames."""
    counted, planned = _run_to_the_end(kind, 1.5)
    assert planned.num_chunks == 2
    assert counted == planned.frames


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["frodo", "impala_sr", "vracer", "ddpg", "naf", "loss_search", "acer"])
def test_a_real_run_trains_what_its_chunk_plan_counts_slow(kind: str):
    counted, planned = _run_to_the_end(kind, 1.5)
    assert counted == planned.frames
