"""Population-based training (IMPALA App. F, Table G.1): the exploit/explore rule on hand-made populations,
a PBT member's learner against the plain learner, a tiny population on Catch whose bad learning rate is
replaced, and a population checkpoint that resumes to the same state."""

from __future__ import annotations

import numpy as np
import pytest

import jax
import jax.numpy as jnp

from rlrepro.agents.impala.config import ImpalaConfig
from rlrepro.agents.impala.learner import Batch, make_learner
from rlrepro.agents.impala.population import apply_step, hyper_dict, make_member_learner, with_hyper
from rlrepro.environments.jax_envs import make_jax_env
from rlrepro.jobs import checkpoint
from rlrepro.agents.impala.loop import make_jax_trainer
from rlrepro.agents.impala.pbt import (
    PBTConfig,
    capped_hns_fitness,
    copy_members,
    exploit_explore,
    rng_for,
    sample_initial,
)

NAMES = ("learning_rate", "entropy_cost", "rmsprop_epsilon", "max_grad_norm")


def _hyper(*rows: tuple[float, float, float, float]) -> dict[str, np.ndarray]:
    return {name: np.array([row[k] for row in rows]) for k, name in enumerate(NAMES)}


# --- the exploit/explore step -------------------------------------------------------------------


def test_a_worse_member_copies_the_better_ones_weights_and_hyperparameters_exactly_without_perturbation():
    # Two members: the only other member of 0 is 1 (fitness 0.50 > 0.10 + 0.05), so 0 copies 1; 1 sees 0
    # (0.10 is not > 0.55) and keeps its own. No perturbation (p = 0): the copy is exact.
    hyper = _hyper((1e-3, 1e-2, 0.1, 40.0), (5e-4, 3e-3, 1e-5, 30.0))
    step = exploit_explore(hyper, np.array([0.10, 0.50]), np.array([True, True]), rng_for(PBTConfig(), 0),
                           PBTConfig(perturb_probability=0.0))  # fmt: skip
    assert step.source.tolist() == [1, 1] and step.copied.tolist() == [True, False]
    for name in NAMES:
        assert step.hyper[name].tolist() == [hyper[name][1], hyper[name][1]]
        assert step.factors[name].tolist() == [1.0, 1.0]


@pytest.mark.parametrize("better, copies", [(0.54, False), (0.5501, True), (0.56, True)])
def test_copy_only_when_more_than_five_points_better(better, copies):
    # Member 0 at 0.50; member 1 copies nobody (it is the better one or within 5 points).
    step = exploit_explore(_hyper((1.0, 1.0, 1.0, 1.0), (2.0, 2.0, 2.0, 2.0)), np.array([0.50, better]),
                           np.array([True, False]), rng_for(PBTConfig(), 3), PBTConfig(perturb_probability=0.0))  # fmt: skip
    assert step.copied.tolist() == [copies, False]
    assert step.hyper["learning_rate"][0] == (2.0 if copies else 1.0)


def test_members_not_ready_are_neither_copied_nor_perturbed():
    hyper = _hyper((1.0, 1.0, 1.0, 1.0), (2.0, 2.0, 2.0, 2.0), (3.0, 3.0, 3.0, 3.0))
    step = exploit_explore(hyper, np.array([0.0, 0.9, 0.9]), np.array([False, True, False]), rng_for(PBTConfig(), 0),
                           PBTConfig(perturb_probability=1.0))  # fmt: skip
    assert step.source.tolist() == [0, 1, 2]
    for name in NAMES:
        assert step.hyper[name][0] == 1.0 and step.hyper[name][2] == 3.0
        assert step.factors[name][1] in (1.2, 1 / 1.2)  # p = 1: the ready member is perturbed


def test_a_copy_takes_the_sources_values_from_before_the_step():
    # 0 copies 1, and 1 (ready too) is perturbed in the same step: 0 gets 1's old values (times its own factor).
    hyper = _hyper((1.0, 1.0, 1.0, 1.0), (2.0, 4.0, 8.0, 16.0))
    step = exploit_explore(hyper, np.array([0.0, 1.0]), np.array([True, True]), rng_for(PBTConfig(), 5),
                           PBTConfig(perturb_probability=1.0))  # fmt: skip
    for name in NAMES:
        assert step.hyper[name][0] == pytest.approx(hyper[name][1] * step.factors[name][0])
        assert step.hyper[name][1] == pytest.approx(hyper[name][1] * step.factors[name][1])


def test_perturbation_is_x1_2_or_x1_over_1_2_with_probability_0_33_each_parameter_apart():
    # 20,000 ready members whose random partner is never better: only the explore half acts.
    n = 20_000
    hyper = {name: np.full(n, 1.0) for name in NAMES}
    step = exploit_explore(hyper, np.zeros(n), np.ones(n, bool), np.random.default_rng(0), PBTConfig())
    assert not step.copied.any()
    for name in NAMES:
        f = step.factors[name]
        assert set(np.round(f, 12)) == {1.0, 1.2, round(1 / 1.2, 12)}
        perturbed = f != 1.0
        assert abs(perturbed.mean() - 0.33) < 0.015  # binomial sd: sqrt(.33 * .67 / 20000) = 0.0033
        assert abs((f[perturbed] > 1).mean() - 0.5) < 0.03  # up and down equally likely (unbiased)
        assert np.allclose(step.hyper[name], f)  # new value = old (1.0) x factor
    # The four parameters are perturbed independently: both perturbed ~ 0.33^2 = 0.109.
    both = (step.factors["learning_rate"] != 1) & (step.factors["entropy_cost"] != 1)
    assert abs(both.mean() - 0.1089) < 0.012


def test_only_the_adapted_parameters_change():
    n = 2_000
    hyper = {name: np.full(n, 1.0) for name in NAMES}
    config = PBTConfig(adapted=("learning_rate", "entropy_cost", "rmsprop_epsilon"))  # DMLab-30: no clip threshold
    step = exploit_explore(hyper, np.zeros(n), np.ones(n, bool), np.random.default_rng(1), config)
    assert (step.hyper["max_grad_norm"] == 1.0).all()
    assert (step.factors["learning_rate"] != 1).any()


def test_the_partner_is_uniform_over_the_other_members_and_the_step_is_fixed_by_the_key():
    # Member 0 is the worst; each other member is more than 5 points better, so 0 copies whoever it draws.
    size, draws = 4, []
    fitness = np.array([0.0, 0.5, 0.6, 0.7])
    hyper = _hyper(*[(float(i),) * 4 for i in range(size)])
    ready = np.array([True, False, False, False])
    for round_index in range(3_000):
        step = exploit_explore(hyper, fitness, ready, rng_for(PBTConfig(seed=7), round_index), PBTConfig())
        draws.append(int(step.source[0]))
    counts = np.bincount(draws, minlength=size)
    assert counts[0] == 0 and all(abs(c / 3_000 - 1 / 3) < 0.03 for c in counts[1:])
    again = [int(exploit_explore(hyper, fitness, ready, rng_for(PBTConfig(seed=7), r), PBTConfig()).source[0])
             for r in range(3_000)]  # fmt: skip
    assert again == draws


def test_copy_members_gathers_every_leaf_along_the_member_axis():
    tree = {"w": jnp.arange(6.0).reshape(3, 2), "step": jnp.array([10, 20, 30])}
    copied = copy_members(tree, np.array([2, 1, 2]))
    assert copied["w"].tolist() == [[4.0, 5.0], [2.0, 3.0], [4.0, 5.0]] and copied["step"].tolist() == [30, 20, 30]


def test_fitness_is_the_mean_capped_human_normalised_score():
    # Two games, random 0 / human 100 and random -20 / human 10:
    # member 0: scores 50 and 40 -> hns 0.5 and 2.0 -> capped 0.5 and 1.0 -> mean 0.75;
    # member 1: scores 0 and -50 -> hns 0.0 and -1.0 -> (uncapped below) mean -0.5.
    fitness = capped_hns_fitness(np.array([[50.0, 40.0], [0.0, -50.0]]), np.array([0.0, -20.0]), np.array([100.0, 10.0]))
    assert fitness.tolist() == pytest.approx([0.75, -0.5])


def test_initial_values_come_from_table_d1():
    init = sample_initial(np.random.default_rng(0), 4000, learning_rate=(5e-6, 5e-3), entropy_cost=(5e-5, 1e-2),
                          rmsprop_epsilon=(1e-1, 1e-3, 1e-5, 1e-7), max_grad_norm=40.0)  # fmt: skip
    assert 5e-6 <= init["learning_rate"].min() and init["learning_rate"].max() <= 5e-3
    # log-uniform: log10(lr) uniform on [log10 5e-6, log10 5e-3] = [-5.30, -2.30], so each of its three
    # decades holds a third of the draws (sd of a third over 4000 draws: 0.0075).
    decades = np.histogram(np.log10(init["learning_rate"]), bins=[-5.301, -4.301, -3.301, -2.301])[0] / 4000
    assert np.allclose(decades, 1 / 3, atol=0.03), decades
    assert set(init["rmsprop_epsilon"]) == {1e-1, 1e-3, 1e-5, 1e-7}
    assert (init["max_grad_norm"] == 40.0).all()


# --- a PBT member's learner ---------------------------------------------------------------------

T, B = 5, 4


def _config(**overrides: object) -> ImpalaConfig:
    base = dict(unroll_length=T, batch_size=B, hidden_sizes=(16,), total_updates=100, max_grad_norm=0.5)
    return ImpalaConfig(**{**base, **overrides})


def _batch(seed: int) -> Batch:
    key = jax.random.PRNGKey(seed)
    k1, k2, k3, k4 = jax.random.split(key, 4)
    return Batch(
        observations=jax.random.uniform(k1, (T + 1, B, 6, 11)),
        actions=jax.random.randint(k2, (T, B), 0, 3),
        rewards=jax.random.normal(k3, (T, B)),
        dones=jnp.zeros((T, B), bool),
        behaviour_logits=jax.random.normal(k4, (T, B, 3)),
    )


@pytest.mark.parametrize("schedule", ["linear_to_zero", "constant"])
def test_a_member_with_the_configs_values_updates_exactly_like_the_plain_learner(schedule):
    config = _config(lr_schedule=schedule)
    plain, member = make_learner(config, (6, 11), 3), make_member_learner(config, (6, 11), 3)
    a, b = plain.init(jax.random.PRNGKey(0)), member.init(jax.random.PRNGKey(0))
    for seed in range(3):  # three steps: the schedule and the clip (threshold 0.5) both act
        a, ma = plain.update(a, _batch(seed))
        b, mb = member.update(b, _batch(seed))
    assert float(ma.grad_norm) > 0.5
    assert jax.tree.all(jax.tree.map(lambda x, y: jnp.allclose(x, y, atol=1e-6), a.params, b.params))
    assert float(ma.learning_rate) == pytest.approx(float(mb.learning_rate))


def test_vmapped_members_use_their_own_hyperparameters():
    config = _config()
    member = make_member_learner(config, (6, 11), 3)
    states = jax.jit(jax.vmap(member.init))(jnp.stack([jax.random.PRNGKey(0)] * 2))
    states = with_hyper(states, {"learning_rate": [6e-4, 0.0], "entropy_cost": [0.01, 0.5]})
    batches = jax.tree.map(lambda x: jnp.stack([x, x]), _batch(0))
    new, metrics = jax.jit(jax.vmap(member.update))(states, batches)
    same = jax.tree.map(lambda x, y: bool(jnp.allclose(x[1], y[1])), new.params, states.params)
    assert all(jax.tree.leaves(same))  # learning rate 0: member 1 did not move
    assert not all(jax.tree.leaves(jax.tree.map(lambda x, y: bool(jnp.allclose(x[0], y[0])), new.params, states.params)))
    # entropy_loss = -cost * sum H: same policy, so the ratio of the two members' terms is 0.01 / 0.5.
    assert float(metrics.entropy_loss[0] / metrics.entropy_loss[1]) == pytest.approx(0.02, rel=1e-5)
    assert hyper_dict(new)["entropy_cost"].tolist() == pytest.approx([0.01, 0.5])


# --- a tiny population on Catch: the bad learning rate is replaced -----------------------------------


def _catch_population(size: int, learning_rates: list[float], seed: int = 0):
    env = make_jax_env("catch", rows=5, columns=5)  # a small Catch: a paddle blind to the ball scores -3/5
    config = _config(unroll_length=10, batch_size=32, hidden_sizes=(32,), lr_schedule="constant", max_grad_norm=40.0,
                     learning_rate=1e-2)  # fmt: skip
    learner = make_member_learner(config, env.observation_shape, env.num_actions)
    trainer = make_jax_trainer(env, config, updates_per_chunk=25, learner=learner)
    state = trainer.init_batch(jnp.stack([jax.random.key_data(jax.random.key(seed + i)) for i in range(size)]))
    state = state._replace(learner=with_hyper(state.learner, {"learning_rate": learning_rates}))
    return trainer, state


def _train(trainer, state, chunks: int):
    returns = []
    for _ in range(chunks):
        state, metrics = trainer.run_chunk_batch(state)
        returns.append(np.asarray(metrics.mean_return))
    return state, np.nanmean(np.stack(returns[-2:]), axis=0)


@pytest.mark.slow  # trains a population on Catch; exploit/explore's rules are checked one by one above
def test_a_tiny_population_on_catch_replaces_a_deliberately_bad_learning_rate():
    # Three members: two at a working lr (1e-2), member 0 at 1e-7 (it cannot learn Catch in this budget).
    # After training, one exploit/explore step with fitness = the mean Catch return of the last chunks
    # (in [-1, 1], so the 0.05 threshold is on the same scale as a normalised score): member 0 copies a good
    # member, takes its lr (times 1.2, 1/1.2 or 1) and then learns; the good members keep their lr's order.
    trainer, state = _catch_population(3, [1e-7, 1e-2, 1e-2])
    state, fitness = _train(trainer, state, 10)
    assert fitness[0] < 0.0 and fitness[1] > 0.5 and fitness[2] > 0.5, fitness
    hyper = {k: np.asarray(v) for k, v in hyper_dict(state.learner).items()}
    step = exploit_explore(hyper, fitness, np.ones(3, bool), rng_for(PBTConfig(seed=0), 0), PBTConfig())
    assert step.source[0] in (1, 2) and not step.copied[1:].any()
    lr0 = step.hyper["learning_rate"][0]
    assert any(lr0 / 1e-2 == pytest.approx(f, rel=1e-5) for f in (1 / 1.2, 1.0, 1.2)), lr0
    # The copy: weights, RMSProp accumulators and step from the source; the actor's parameter snapshots too
    # (each member keeps its own environments).
    source = int(step.source[0])
    state = state._replace(
        learner=apply_step(state.learner, step), params_history=copy_members(state.params_history, step.source)
    )
    same = jax.tree.map(lambda x: bool(jnp.array_equal(x[0], x[source])), state.learner.params)
    assert all(jax.tree.leaves(same))
    assert float(hyper_dict(state.learner)["learning_rate"][0]) == pytest.approx(lr0, rel=1e-6)
    state, fitness = _train(trainer, state, 4)
    assert fitness[0] > 0.5, fitness  # it keeps learning with the copied lr


def test_the_fitness_spread_by_hand():
    # Two games, random 0 / human 100 and random -20 / human 10 (spans 100 and 30). Member 0: game 1 scores 40, 60
    # (mean 50, s^2 = (10^2 + 10^2) / 1 = 200, sum of squares 1,600 + 3,600 = 5,200), game 2 scores -5, -5, -5 (s^2 0).
    # se = sqrt(200 / (2 x 100^2) + 0) / 2 = sqrt(0.01) / 2 = 0.05. Member 1: one game-2 episode only -> inf.
    from rlrepro.agents.impala.pbt import fitness_spread

    se = fitness_spread(np.array([[100.0, -15.0], [50.0, -5.0]]), np.array([[5200.0, 75.0], [2500.0, 25.0]]),
                        np.array([[2, 3], [1, 1]]), np.array([0.0, -20.0]), np.array([100.0, 10.0]))
    assert se[0] == pytest.approx(0.05) and se[1] == np.inf


def test_a_copy_counts_as_caused_by_a_better_member_only_beyond_the_windows_noise():
    from rlrepro.agents.impala.pbt import NOISE_Z, beyond_noise

    config = PBTConfig(population_size=2)
    assert NOISE_Z == 1.96
    assert beyond_noise(0.2, 0.1, config)  # 0.2 >= 1.96 x 0.1 and above the 0.05 threshold
    assert not beyond_noise(0.19, 0.1, config)  # within 1.96 standard errors: the windows' noise could make it
    assert not beyond_noise(0.04, 0.0, config)  # exact, but not App. F's 5 points
    assert not beyond_noise(0.5, float("inf"), config)  # a game with fewer than 2 episodes: noise unmeasured
