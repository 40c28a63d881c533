"""IMPALA's multi-task Atari agent (§5.3.2) with PBT (App. F) on real ALE games: actors on every game feed
each member's learner in turn, the population takes exploit/explore steps, and a population checkpoint
resumes to the same state in a new trainer (as after an interrupted job)."""

from __future__ import annotations

import jax
import numpy as np
import pytest

from rlrepro.agents.impala.config import ImpalaConfig
from rlrepro.networks.config import ConvNetworkConfig
from rlrepro.agents.impala.multitask import MultiTaskTrainer
from rlrepro.agents.impala.population import hyper_dict
from rlrepro.specs.agents.impala import ActorSpec
from rlrepro.specs.environments import AtariEnvSpec
from rlrepro.jobs import checkpoint
from rlrepro.agents.impala.pbt import PBTConfig

GAMES = ("pong", "breakout")


def _games(**overrides: object) -> list[AtariEnvSpec]:
    # Short games (a 20-frame cap: every unroll of 5 steps ends one) so that PBT has episodes to score; 42x42 frames keep it cheap.
    base = dict(kind="atari", action_set="full", num_envs=2, max_episode_frames=20, resolution=42,
                evaluation={"episodes": 2})  # fmt: skip
    return [AtariEnvSpec(id=g, game=g, **{**base, **overrides}) for g in GAMES]


def _trainer(pbt: PBTConfig | None, updates_per_chunk: int = 4) -> MultiTaskTrainer:
    config = ImpalaConfig(
        unroll_length=5, batch_size=2, total_updates=8, max_grad_norm=40.0,
        conv_network=ConvNetworkConfig(kind="impala_shallow", fc_size=32),
    )  # fmt: skip
    return MultiTaskTrainer(config, _games(), ActorSpec(mode="sync"), updates_per_chunk=updates_per_chunk, pbt=pbt)


PBT = PBTConfig(population_size=2, burn_in_frames=0, ready_episodes=1, seed=3)


def _leaves_equal(a, b) -> bool:
    return all(np.array_equal(np.asarray(x), np.asarray(y)) for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b)))


@pytest.mark.slow
def test_population_trains_on_every_game_steps_pbt_and_resumes_from_its_checkpoint(tmp_path):
    trainer = _trainer(PBT)
    assert trainer.num_actions == 18  # the full action set: one policy layer for every game (App. G)
    state = trainer.init(jax.random.key_data(jax.random.key(0)))
    initial = {k: np.asarray(v) for k, v in hyper_dict(state.learner).items()}
    # Table D.1 starting values, different per member; the clip threshold starts at Table G.1's 40.
    assert initial["learning_rate"][0] != initial["learning_rate"][1] and (initial["max_grad_norm"] == 40.0).all()

    state, metrics = trainer.run_chunk(state)
    assert metrics.episodes.shape == (2,) and (metrics.episodes > 0).all()  # both games fed the learners
    assert int(state.version) == 4 and int(state.pbt_round) > 0  # ready after one episode: PBT stepped
    assert np.isfinite(state.fitness).all()
    after = {k: np.asarray(v) for k, v in hyper_dict(state.learner).items()}
    changed = [k for k in initial if not np.allclose(initial[k], after[k])] + list(np.flatnonzero(state.copies))
    assert changed, "a PBT step over 2 ready members (copy or x1.2 / x1/1.2 perturbation) left everything unchanged"
    for name in after:  # every change is a copy of a member's value times a power of 1.2
        ratios = after[name][:, None] / initial[name][None, :]
        powers = np.log(ratios) / np.log(1.2)
        assert np.isclose(powers, np.round(powers), atol=1e-4).any(axis=1).all(), (name, ratios)
    # PBT's events as run metrics (issue 28): copies, perturbations, member hyper-parameters moved from their draws,
    # and each member's hyper-parameters as curves (Fig. F.1).
    moved = sum(int(np.sum(~np.isclose(after[k], initial[k], rtol=1e-6))) for k in PBT.adapted)
    assert metrics.pbt_copies[0] == state.copies.sum() and metrics.pbt_perturbations[0] == state.perturbations.sum()
    assert metrics.pbt_hyper_moved[0] == moved and (moved > 0) == bool(changed)
    assert metrics.pbt_perturbations[0] > 0 or metrics.pbt_copies[0] > 0
    for m in range(2):
        assert metrics._asdict()[f"member{m}_learning_rate"][0] == np.float32(after["learning_rate"][m])
        assert metrics._asdict()[f"member{m}_max_grad_norm"][1] == np.float32(after["max_grad_norm"][m])
    np.testing.assert_array_equal(state.initial_hyper[0], initial[next(iter(initial))])

    path = tmp_path / "population.ckpt"
    checkpoint.save(path, state, {"chunk": 1})
    trainer.stop()

    # "A new process": a fresh trainer, a fresh state of the same structure, restored from the checkpoint.
    resumed_trainer = _trainer(PBT)
    fresh = resumed_trainer.init(jax.random.key_data(jax.random.key(0)))
    found = checkpoint.load_latest(path)
    restored = checkpoint.restore_leaves(found.path, found.leaves, fresh)
    assert _leaves_equal(restored, state)  # weights, RMSProp state, hyper-parameters, fitness windows, PBT round
    assert not _leaves_equal(fresh.learner.params, state.learner.params)

    restored, metrics = resumed_trainer.run_chunk(restored)  # the last chunk: evaluation of the best member
    assert int(restored.version) == 8 and int(restored.pbt_round) >= int(state.pbt_round)
    assert np.isfinite(metrics.eval_return).all() and metrics.eval_return.shape == (2,)
    # each game's evaluation scores (a claim tests them against a trivial policy's games): evaluation.episodes per game
    assert metrics.eval_scores.shape == (2, 2) and np.allclose(metrics.eval_scores.mean(axis=1), metrics.eval_return)
    assert metrics.best_member[0] == resumed_trainer.best_member(restored)


@pytest.mark.slow
def test_without_pbt_one_member_keeps_the_configs_values():
    trainer = _trainer(None, updates_per_chunk=2)
    state = trainer.init(jax.random.key_data(jax.random.key(1)))
    state, metrics = trainer.run_chunk(state)
    trainer.stop()
    hyper = {k: np.asarray(v).tolist() for k, v in hyper_dict(state.learner).items()}
    assert hyper["learning_rate"] == pytest.approx([6e-4]) and hyper["entropy_cost"] == pytest.approx([0.01])
    assert hyper["rmsprop_epsilon"] == pytest.approx([0.01]) and hyper["max_grad_norm"] == [40.0]
    assert int(state.pbt_round) == 0 and np.isnan(metrics.best_fitness).all()


def test_multitask_needs_the_full_action_set():
    from rlrepro.agents.impala.build import resolve_impala
    from rlrepro.environments.errors import UnsupportedSetupError
    from rlrepro.specs import load_spec
    from rlrepro.specs.loading import resolve_agent, resolve_env

    spec = load_spec("specs/impala/atari57_multitask.yaml")
    agent = resolve_agent(spec, spec.variant_list()[0], "paper")
    env = resolve_env(spec, "pong", "paper")
    setup = resolve_impala(agent, env, frames=1_000_000, run=spec.run)
    assert setup.multitask.pbt.population_size == 24 and setup.multitask.pbt.perturb_probability == 0.33
    with pytest.raises(UnsupportedSetupError, match="full 18-action set"):
        resolve_impala(agent, env.model_copy(update={"action_set": "minimal"}), frames=1_000_000, run=spec.run)


def test_member_curves_name_every_member_and_hyper_parameter():
    from rlrepro.agents.impala.multitask import member_curves, multitask_metrics_type
    from rlrepro.agents.impala.population import Hyper

    learner = type("Learner", (), {})()
    hyper = Hyper(**{name: np.array([0.5, 2.0]) for name in Hyper._fields})
    learner.opt_state = type("Opt", (), {"hyper": hyper})()
    curves = member_curves(learner)
    assert curves["member0_learning_rate"] == 0.5 and curves["member1_max_grad_norm"] == 2.0
    assert len(curves) == 2 * len(Hyper._fields)
    assert set(curves) <= set(multitask_metrics_type(2, Hyper._fields)._fields)


@pytest.mark.filterwarnings("ignore:Mean of empty slice", "ignore:invalid value encountered")  # no learner update here
@pytest.mark.parametrize(("pong_scores", "beyond"), [((-10.0, -10.0), 1), ((-21.0, 1.0), 0)])
def test_each_copy_is_logged_with_its_fitness_gap_and_the_windows_spread(pong_scores, beyond):
    # Pong random -20.7 / human 14.6 (span 35.3), Breakout 1.7 / 30.5. Member 0 scores mean -10 on Pong (hns 10.7 /
    # 35.3 = 0.303116) and random on Breakout (0): fitness 0.151558; member 1 random on both: 0. Member 1 copies member
    # 0 (gap 0.151558 > 0.05). Equal Pong scores: spread 0, beyond noise. Pong -21 and 1: s^2 = 242, se = sqrt(242 /
    # (2 x 35.3^2)) / 2 = sqrt(0.097104) / 2 = 0.155808: the gap is 0.97 standard errors, a copy noise could cause.
    trainer = _trainer(PBTConfig(population_size=2, burn_in_frames=0, ready_episodes=4, seed=3))
    state = trainer.init(jax.random.key_data(jax.random.key(0)))
    scores = np.array([[pong_scores, (1.7, 1.7)], [(-20.7, -20.7), (1.7, 1.7)]])  # [member, game, episode]
    state = state._replace(window_sum=scores.sum(axis=2), window_sq=(scores**2).sum(axis=2),
                           window_count=np.full((2, 2), 2))
    trainer._chunk_copies = []
    state = trainer._maybe_step(state, version=1)
    assert state.copies.tolist() == [0, 1] and state.copies_beyond_noise.tolist() == [0, beyond]
    [(gap, spread)] = trainer._chunk_copies
    assert gap == pytest.approx(0.151558, abs=1e-6)
    assert spread == pytest.approx(0.0 if beyond else 0.155808, abs=1e-6)
    # The copier takes over its source's fitness and spread until its own next window is scored.
    assert state.fitness_se[1] == state.fitness_se[0] and (state.window_sq == 0).all()
    metrics = trainer._metrics(state, 1, 0.0, [[], []], [0], [])
    assert metrics.pbt_copy_gaps.shape == (2, 1) and metrics.pbt_copy_gaps[1, 0] == pytest.approx(0.151558, abs=1e-6)
    assert metrics.pbt_copies_beyond_noise.tolist() == [beyond, beyond]
