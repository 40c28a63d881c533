"""The job/agent contract (``rlrepro/training/program.py``) and the registry's multi-task entry."""

from pathlib import Path

import numpy as np
import pytest

from rlrepro.agents.registry import AGENTS, build_multitask_trainer
from rlrepro.environments.errors import UnsupportedSetupError
from rlrepro.specs import load_spec, resolve_agent, resolve_env
from rlrepro.training.program import ChunkPlan, one_seed_program

REPO = Path(__file__).resolve().parents[2]


class _Recorder:
    """A host trainer that records what the program hands it."""

    def __init__(self):
        self.keys = []

    def init(self, key):
        self.keys.append(key)
        return "state"

    def run_chunk(self, state):
        return state, "metrics"


def test_a_one_seed_program_passes_its_one_key_on_and_is_sized_by_the_chunk_plan():
    trainer = _Recorder()
    program = one_seed_program(trainer, ChunkPlan(num_chunks=3, updates_per_chunk=5, frames_per_chunk=80))
    keys = np.array([[0, 7]], np.uint32)
    assert program.init_batch(keys) == "state"
    np.testing.assert_array_equal(trainer.keys[0], keys[0])
    assert program.run_chunk_batch("state") == ("state", "metrics")
    assert (program.num_chunks, program.updates_per_chunk, program.frames_per_chunk) == (3, 5, 80)


def test_a_one_seed_program_refuses_two_seeds_saying_how_to_train_them():
    program = one_seed_program(_Recorder(), ChunkPlan(1, 1, 1))
    with pytest.raises(UnsupportedSetupError, match=r"set run\.seeds_per_job: 1"):
        program.init_batch(np.zeros((2, 2), np.uint32))
    custom = one_seed_program(_Recorder(), ChunkPlan(1, 1, 1), "one population per job")
    with pytest.raises(UnsupportedSetupError, match="one population per job"):
        custom.init_batch(np.zeros((2, 2), np.uint32))


def test_only_a_kind_with_a_multitask_builder_is_asked_for_a_multitask_trainer():
    assert [kind for kind, entry in AGENTS.items() if entry.multitask] == ["impala"]
    spec = load_spec(REPO / "specs" / "evolving_rl" / "eval_classic_minigrid.yaml")
    agent = resolve_agent(spec, spec.variant_list()[0], "smoke")
    env = resolve_env(spec, spec.environments[0].id, "smoke")
    with pytest.raises(UnsupportedSetupError, match="'dqn' has no multi-task trainer"):
        build_multitask_trainer(agent, [env], frames=100, run=spec.run)
