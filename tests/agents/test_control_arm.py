"""The control arm (``learning: false``, ``rlrepro.specs.control``): every agent kind's real program, one chunk at smoke
size, leaves every learned parameter exactly at its initialisation, while the same agent learning moves them."""

from __future__ import annotations

import numpy as np
import pytest

from rlrepro.agents.registry import build_trainer
from rlrepro.training.program import seed_keys
from tests.agents.test_chunk_plan import SPEC_OF_KIND, _setup

# Parameters the learning step writes. Targets and running averages (DDPG's and NAF's targets, ACER's average
# policy) follow them by Polyak averaging, which rounds; they are not what the control arm must pin.
_FOLLOWERS = ("target", "average")


def _learned(state) -> dict[str, np.ndarray]:
    """Every float leaf under a flax ``params`` collection of a program's state, by its path (host copies)."""
    import jax

    leaves = {}
    for path, leaf in jax.tree_util.tree_flatten_with_path(state)[0]:
        names = [str(getattr(k, "key", getattr(k, "name", getattr(k, "idx", "")))) for k in path]
        if "params" in names and not any(f in n for n in names for f in _FOLLOWERS):
            value = np.asarray(leaf)
            if np.issubdtype(value.dtype, np.floating):
                leaves[jax.tree_util.keystr(path)] = value.copy()
    return leaves


def _one_chunk(agent, env, run, frames) -> tuple[dict, dict]:
    program = build_trainer(agent, env, frames=frames, run=run)
    state = program.init_batch(seed_keys([0]))
    before = _learned(state)
    state, _ = program.run_chunk_batch(state)
    return before, _learned(state)


# The loss search trains a DQN per program (its inner agent: the dqn case) and keeps no parameters of its own.
@pytest.mark.parametrize("kind", sorted(set(SPEC_OF_KIND) - {"loss_search"}))
def test_the_frozen_arm_leaves_every_parameter_at_its_initialisation(kind: str):
    agent, env, run, frames = _setup(kind)
    before, after = _one_chunk(agent.model_copy(update={"learning": False}), env, run, frames)
    assert before, f"{kind}: no parameters found in the program's state"
    assert before.keys() == after.keys()
    moved = [path for path in before if not np.array_equal(before[path], after[path])]
    assert not moved, f"{kind} with learning false moved {moved[:3]}"
    learned_before, learned_after = _one_chunk(agent, env, run, frames)
    assert any(not np.array_equal(learned_before[p], learned_after[p]) for p in learned_before), (
        f"{kind}: learning true moved nothing in one chunk: the check above would prove nothing")
