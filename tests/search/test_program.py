"""Loss programs: the interpreter against the hand-written losses, typing, hashing, mutation, equations."""

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from rlrepro.agents.dqn.config import DQNConfig
from rlrepro.agents.dqn.learner import Batch, make_learner
from rlrepro.search.equations import equation
from rlrepro.search.hashing import functional_hash, td_likeness
from rlrepro.search.interpreter import make_program_loss
from rlrepro.search.ops import CONSTANTS, SEARCHABLE
from rlrepro.search.program import (
    Node, ddqn_program, dqn_program, dqnreg_program, encode, mutate, random_program, with_free_nodes,
)


def _batch(seed=0, n=16, obs=4, actions=2):
    rng = np.random.default_rng(seed)
    return Batch(
        jnp.asarray(rng.normal(size=(n, obs)), jnp.float32), jnp.asarray(rng.integers(0, actions, n), jnp.int32),
        jnp.asarray(rng.normal(size=n), jnp.float32), jnp.asarray(rng.choice([0.0, 0.99], n), jnp.float32),
        jnp.asarray(rng.normal(size=(n, obs)), jnp.float32),
    )


@pytest.mark.parametrize(
    "program, config",
    [
        (dqnreg_program(), DQNConfig(loss="dqnreg", td_scale=0.5, hidden_sizes=(16,))),
        pytest.param(dqn_program(), DQNConfig(loss="dqn", td_scale=0.5, hidden_sizes=(16,)), marks=pytest.mark.slow),
        pytest.param(ddqn_program(), DQNConfig(loss="ddqn", td_scale=0.5, hidden_sizes=(16,)), marks=pytest.mark.slow),
    ],
)
def test_interpreter_equals_hand_written(program, config):
    arrays, calls = encode(program)
    hand = make_learner(config, (4,), 2)
    interp = make_learner(config, (4,), 2, lambda apply: make_program_loss(apply, 4, 2, CONSTANTS, calls))
    state = hand.init(jax.random.key(0))
    # the online net differs from the target so that the DDQN selector matters
    state = state._replace(params=jax.tree.map(lambda p: p * 1.5, state.params))
    batch = _batch()
    s1, m1 = jax.jit(hand.update)(state, batch, None)
    s2, m2 = jax.jit(interp.update)(state, batch, arrays)
    assert float(m1.loss) == pytest.approx(float(m2.loss), rel=1e-5)
    for a, b in zip(jax.tree.leaves(s1.params), jax.tree.leaves(s2.params)):
        np.testing.assert_allclose(a, b, atol=1e-6)


def test_one_compiled_update_serves_new_programs():
    dqn_arrays, calls = encode(dqn_program())
    reg_arrays, reg_calls = encode(dqnreg_program())
    assert calls == reg_calls and dqn_arrays.op.shape == reg_arrays.op.shape
    learner = make_learner(DQNConfig(hidden_sizes=(8,)), (4,), 2, lambda apply: make_program_loss(apply, 4, 2, CONSTANTS, calls))
    update = jax.jit(learner.update)
    state = learner.init(jax.random.key(0))
    update(state, _batch(), dqn_arrays)
    update(state, _batch(), reg_arrays)
    assert update._cache_size() == 1


def test_validity():
    dqn = dqn_program()
    assert dqn.is_valid()
    n_in = dqn.num_inputs
    assert not dataclasses.replace(dqn, output=n_in + 0).is_valid()  # Q(s,.) is a list, not a float
    # a loss of the target network alone has no path to theta
    no_theta = dataclasses.replace(dqn, nodes=dqn.nodes + (Node("MultiplyTenth", (n_in + 3,)),), output=n_in + 7)
    assert not no_theta.is_valid()


def test_hash_collisions_and_differences():
    rng = np.random.default_rng(0)
    dqn, reg = dqn_program(), dqnreg_program()
    assert functional_hash(dqn) == functional_hash(with_free_nodes(rng, dqn, 10, SEARCHABLE))  # dead code
    assert functional_hash(dqn) != functional_hash(reg)
    n_in = dqn.num_inputs
    # Y + Q - ... : Add(a, b) and Add(b, a) are algebraically equal and must collide
    ab = dataclasses.replace(reg, nodes=reg.nodes[:-1] + (Node("Add", (n_in + 7, n_in + 6)),))
    assert functional_hash(ab) == functional_hash(reg)
    # delta^2 + 0.1 Q and delta^2 + 0.1 Q + Q_targ-ish term differ (notes §6)
    extra = dataclasses.replace(reg, nodes=reg.nodes + (Node("Add", (n_in + 8, n_in + 3)),), output=n_in + 9)
    assert functional_hash(extra) != functional_hash(reg)


def test_td_likeness():
    assert td_likeness(dqn_program()) > 0.99
    assert td_likeness(dqnreg_program()) > 0.99
    q_only = dataclasses.replace(dqn_program(), output=dqn_program().num_inputs + 1)  # L = Q(s, a)
    assert td_likeness(q_only) < 0.5


def test_mutation_and_sampling_stay_valid():
    rng = np.random.default_rng(1)
    program = with_free_nodes(rng, dqn_program(), 14, SEARCHABLE)
    for _ in range(50):
        program = mutate(rng, program, SEARCHABLE)
        assert program.is_valid()
    scratch = dataclasses.replace(dqn_program(), frozen=2)
    for _ in range(10):
        p = random_program(rng, scratch, 16, SEARCHABLE)
        assert p.is_valid() and p.nodes[:2] == scratch.nodes[:2]


def test_equations():
    assert equation(dqn_program()) == "(Q - Y)**2/2"
    assert equation(dqnreg_program()) == "Q/10 + (Q - Y)**2/2"
