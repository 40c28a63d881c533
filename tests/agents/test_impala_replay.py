"""IMPALA's learner replay of the off-policy comparison (§5.2.2, Table D.3): FIFO buffer, uniform draws, batch share,
replayed rows off-policy with their stored behaviour logits, and learning with half of each batch replayed."""

from __future__ import annotations

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from rlrepro.agents.impala import Batch, ImpalaConfig
from rlrepro.agents.impala.learner import loss_fn
from rlrepro.agents.impala.networks import make_network
from rlrepro.agents.impala.replay import add, behaviour_kl, init_replay, mean_replay_age, mix, sample
from rlrepro.agents.registry import resolve_config
from rlrepro.environments.jax_envs import make_jax_env
from rlrepro.specs import load_spec
from rlrepro.specs.experiment import RunSpec
from rlrepro.specs.loading import resolve_agent, resolve_env
from rlrepro.agents.impala.loop import actor_params, make_jax_trainer

T = 2


def _marked(ids: list[int]) -> Batch:
    """A time-major batch of len(ids) unrolls whose every reward (and observation) is the unroll's id."""
    marks = jnp.asarray(ids, jnp.float32)
    return Batch(
        observations=jnp.broadcast_to(marks[None, :, None], (T + 1, len(ids), 1)),
        actions=jnp.zeros((T, len(ids)), jnp.int32),
        rewards=jnp.broadcast_to(marks[None, :], (T, len(ids))),
        dones=jnp.zeros((T, len(ids)), bool),
        behaviour_logits=jnp.broadcast_to(marks[None, :, None], (T, len(ids), 3)),
    )


def _stored_ids(state) -> list[int]:
    return [int(r) for r in state.storage.rewards[:, 0]]


def test_buffer_is_first_in_first_out_of_whole_trajectories():
    # Capacity 3. Add ids 1, 2 (slots 0, 1), then 3, 4: 3 goes to slot 2 and 4 overwrites slot 0, the oldest (id 1).
    state = init_replay(3, _marked([0]))
    assert int(state.size) == 0
    state = add(state, _marked([1, 2]), update=0)
    assert _stored_ids(state)[:2] == [1, 2] and int(state.size) == 2
    state = add(state, _marked([3, 4]), update=1)
    assert _stored_ids(state) == [4, 2, 3] and int(state.size) == 3 and int(state.inserted) == 4
    state = add(state, _marked([5]), update=2)  # next oldest is id 2 (slot 1)
    assert _stored_ids(state) == [4, 5, 3]
    # A trajectory is stored whole: its observations, rewards and behaviour logits stay together.
    np.testing.assert_array_equal(state.storage.observations[1, :, 0], [5, 5, 5])
    np.testing.assert_array_equal(state.storage.behaviour_logits[1], np.full((T, 3), 5.0))
    with pytest.raises(ValueError, match="capacity 3"):
        add(state, _marked([6, 7, 8, 9]), update=3)


def test_draws_are_uniform_over_stored_trajectories_and_skip_this_updates_own():
    state = add(init_replay(4, _marked([0])), _marked([1, 2, 3, 4]), update=0)
    batch, valid = jax.jit(sample, static_argnums=2)(state, jax.random.PRNGKey(0), 40_000)
    assert bool(valid)
    ids, counts = np.unique(np.asarray(batch.rewards[0]), return_counts=True)
    # Uniform over 4: each id 1/4 of 40,000 draws (binomial sd = sqrt(40000 * 1/4 * 3/4) ~ 87, i.e. 0.0022).
    assert list(ids) == [1, 2, 3, 4]
    np.testing.assert_allclose(counts / 40_000, 0.25, atol=0.01)
    # Time-major layout restored: [T, count] rewards, [T + 1, count, 1] observations of the same draw.
    assert batch.rewards.shape == (T, 40_000) and batch.observations.shape == (T + 1, 40_000, 1)
    np.testing.assert_array_equal(batch.observations[:, :5, 0], np.broadcast_to(batch.rewards[0, :5], (T + 1, 5)))
    # skip_newest=2 leaves out the two most recently added (ids 3, 4): 1 and 2 each 1/2.
    batch, valid = sample(state, jax.random.PRNGKey(1), 40_000, skip_newest=2)
    ids, counts = np.unique(np.asarray(batch.rewards[0]), return_counts=True)
    assert bool(valid) and list(ids) == [1, 2]
    np.testing.assert_allclose(counts / 40_000, 0.5, atol=0.01)
    # After wrapping (ids 5, 6 overwrite 1, 2), skipping the newest 2 leaves ids 3 and 4.
    state = add(state, _marked([5, 6]), update=1)
    batch, _ = sample(state, jax.random.PRNGKey(2), 1000, skip_newest=2)
    assert set(np.unique(np.asarray(batch.rewards[0]))) == {3.0, 4.0}


def test_nothing_eligible_is_reported_invalid_and_masked_out_of_the_batch():
    empty = init_replay(4, _marked([0]))
    _, valid = sample(empty, jax.random.PRNGKey(0), 2)
    assert not bool(valid)
    only_fresh = add(empty, _marked([1, 2]), update=0)
    replayed, valid = sample(only_fresh, jax.random.PRNGKey(0), 2, skip_newest=2)
    assert not bool(valid)
    mixed = mix(_marked([7, 8]), replayed, valid)
    # Fresh rows first (mask 1), then the replayed rows (mask 0: nothing eligible yet).
    np.testing.assert_array_equal(mixed.rewards[0, :2], [7, 8])
    np.testing.assert_array_equal(mixed.mask, [[1, 1, 0, 0]] * T)
    replayed, valid = sample(add(only_fresh, _marked([3, 4]), update=1), jax.random.PRNGKey(0), 2, skip_newest=2)
    np.testing.assert_array_equal(mix(_marked([7, 8]), replayed, valid).mask, np.ones((T, 4)))
    assert set(np.asarray(replayed.rewards[0])) <= {1.0, 2.0}


def test_batch_share_and_frames_follow_the_replay_fraction():
    # Paper: 50% of each batch replayed. B = 32 -> 16 replayed rows and 16 fresh unrolls of T = 20 steps.
    config = ImpalaConfig(batch_size=32, unroll_length=20, replay_fraction=0.5)
    assert (config.replay_batch_size, config.fresh_batch_size, config.frames_per_update) == (16, 16, 320)
    assert ImpalaConfig(batch_size=8, replay_fraction=0.25).replay_batch_size == 2
    no_replay = ImpalaConfig(batch_size=32, unroll_length=20)
    assert (no_replay.replay_batch_size, no_replay.frames_per_update) == (0, 640)
    for bad in (dict(replay_fraction=1.0), dict(replay_fraction=-0.1), dict(batch_size=1, replay_fraction=0.5),
                dict(batch_size=32, replay_fraction=0.5, replay_capacity=8)):
        with pytest.raises(ValueError, match="replay"):
            ImpalaConfig(**bad)


def test_spec_replay_reaches_the_config_and_the_update_count():
    spec = load_spec("specs/impala/offpolicy_correction_toy.yaml")
    variants = {v.name: v for v in spec.variant_list()}
    env = resolve_env(spec, "catch", "paper")
    run = RunSpec(updates_per_chunk=25)
    plain = resolve_config(resolve_agent(spec, variants["corr=vtrace__lag=0__replay=0.0__B=32"], "paper"), env,
                           frames=640_000, run=run).config
    replay = resolve_config(resolve_agent(spec, variants["corr=vtrace__lag=0__replay=0.5__B=32"], "paper"), env,
                            frames=640_000, run=run).config
    assert (plain.replay_fraction, replay.replay_fraction, replay.replay_capacity) == (0.0, 0.5, 10_000)
    # Frames count new experience: 640,000 / (20 x 32) = 1,000 updates without replay, / (20 x 16) = 2,000 with.
    assert (plain.total_updates, replay.total_updates) == (1_000, 2_000)


@pytest.fixture(scope="module")
def replay_run():
    """Catch, B = 4 (2 fresh + 2 replayed), T = 2, on-policy actor (lag 0): the replay is the only lag."""
    config = ImpalaConfig(unroll_length=T, batch_size=4, hidden_sizes=(16,), learning_rate=0.05,
                          lr_schedule="constant", replay_fraction=0.5, replay_capacity=64)
    env = make_jax_env("catch")
    trainer = make_jax_trainer(env, config, updates_per_chunk=1)
    state = trainer.init(jax.random.PRNGKey(0))
    params, rhos = [], []
    for _ in range(12):
        params.append(actor_params(state, config))
        state, metrics = trainer.run_chunk(state)
        rhos.append(float(metrics.mean_rho))
    return config, env, state, params, rhos


def test_replayed_rows_carry_the_logits_of_the_policy_that_acted(replay_run):
    config, env, state, params, _ = replay_run
    network = make_network(config, env.num_actions)
    assert state.actor.observation.shape[0] == 2  # the actor steps the fresh rows only
    assert int(state.replay.size) == 12 * 2
    for update in (0, 5, 11):
        for row in range(2):
            slot = update * 2 + row
            observations = state.replay.storage.observations[slot, :-1]
            logits, _ = network.apply(params[update], observations)
            np.testing.assert_allclose(state.replay.storage.behaviour_logits[slot], logits, rtol=1e-5, atol=1e-5)
    # ... and not the logits of the current policy: the learner has moved on since update 0.
    current, _ = network.apply(state.learner.params, state.replay.storage.observations[0, :-1])
    assert float(jnp.max(jnp.abs(current - state.replay.storage.behaviour_logits[0]))) > 1e-3


def test_replay_makes_an_on_policy_actor_off_policy(replay_run):
    _, _, _, _, rhos = replay_run
    # Update 0: nothing to replay, all rows fresh and on-policy -> mean rho exactly 1. Later updates replay rows
    # generated by older parameters: rho departs from 1 (without replay at lag 0 it stays 1; test_impala_loop).
    assert abs(rhos[0] - 1.0) < 1e-5
    assert min(abs(r - 1.0) for r in rhos[2:]) > 1e-4, rhos


def test_the_correction_reads_the_replayed_behaviour_logits(replay_run):
    config, env, state, _, _ = replay_run
    network = make_network(config, env.num_actions)
    replayed, valid = sample(state.replay, jax.random.PRNGKey(3), 4)
    assert bool(valid)
    current = jax.vmap(lambda obs: network.apply(state.learner.params, obs)[0])(replayed.observations[:-1])
    as_if_on_policy = replayed._replace(behaviour_logits=current)
    for correction in ("vtrace", "one_step_is"):
        cfg = ImpalaConfig(**{**config.__dict__, "correction": correction})
        loss_stored, m_stored = loss_fn(state.learner.params, replayed, cfg, network)
        loss_on, m_on = loss_fn(state.learner.params, as_if_on_policy, cfg, network)
        assert abs(float(m_on.mean_rho) - 1.0) < 1e-5 and abs(float(m_stored.mean_rho) - 1.0) > 1e-3
        assert abs(float(loss_stored) - float(loss_on)) > 1e-4
    # "none" ignores mu: the same loss whatever behaviour logits are stored.
    cfg = ImpalaConfig(**{**config.__dict__, "correction": "none"})
    chex.assert_trees_all_close(loss_fn(state.learner.params, replayed, cfg, network)[0],
                                loss_fn(state.learner.params, as_if_on_policy, cfg, network)[0], rtol=1e-6)


def test_learns_catch_with_half_of_each_batch_replayed():
    # 10 x 50 updates x (20 x 16 fresh) = 160K env steps, V-trace, 50% replay from a 10,000-trajectory buffer; a
    # policy blind to the ball scores -9/11.
    config = ImpalaConfig(learning_rate=1e-2, lr_schedule="constant", replay_fraction=0.5)
    trainer = make_jax_trainer(make_jax_env("catch"), config, updates_per_chunk=50)
    state = trainer.init(jax.random.PRNGKey(0))
    returns = []
    for _ in range(10):
        state, metrics = trainer.run_chunk(state)
        returns.append(float(metrics.mean_return))
    assert returns[0] < -0.4
    assert returns[-1] > 0.5, returns
    assert int(state.replay.size) == 500 * 16


def test_mean_replay_age_by_hand():
    # capacity 8, 4 new unrolls per update, 3 updates. Update 1: 4 stored, none eligible (skipped). Update 2: 8
    # stored, eligible ages 4..7 trajectories = 1 update old. Update 3: 12 inserted, 8 held (the first 4 evicted),
    # eligible ages 4..7 again = 1 update. Mean 1.
    assert mean_replay_age(8, 4, 3) == 1.0
    # capacity 12, 4 new per update, 3 updates: update 2 -> ages 4..7 (1 update); update 3 -> ages 4..11:
    # 4 rows 1 update old and 4 rows 2 updates old, mean 1.5. Run mean (1 + 1.5) / 2 = 1.25.
    assert mean_replay_age(12, 4, 3) == 1.25
    assert mean_replay_age(8, 4, 1) == 0.0  # nothing ever replayed


def test_mean_replay_age_matches_what_sample_draws():
    # The real add/sample on a small buffer: each stored trajectory's reward carries the update that stored it, so
    # a replayed row's age in updates is (this update - its reward); the mean over the run's draws matches.
    capacity, fresh, updates, draws = 10, 3, 12, 400
    state = init_replay(capacity, _marked([0] * fresh))
    key = jax.random.key(0)
    ages = []
    for u in range(1, updates + 1):
        state = add(state, _marked([u] * fresh), update=u)
        key, draw = jax.random.split(key)
        rows, valid = sample(state, draw, draws, skip_newest=fresh)
        if bool(valid):
            ages.append(float(jnp.mean(u - rows.rewards[0])))
    assert np.mean(ages) == pytest.approx(mean_replay_age(capacity, fresh, updates), rel=0.05)


def _toy_config(variant: str, scale: str):
    spec = load_spec("specs/impala/offpolicy_correction_toy.yaml")
    chosen = next(v for v in spec.variant_list() if v.name == variant)
    return resolve_config(resolve_agent(spec, chosen, scale), resolve_env(spec, "catch", scale),
                          frames=spec.scale(scale).frames, run=spec.run).config  # fmt: skip


def test_the_equal_updates_control_isolates_replay():
    # Issue 28: at equal frames the replay run makes twice the updates; the control (batch 16, no replay) makes the
    # same updates on the same new unrolls per update: 500,000 frames / (20 x 16) -> 1,575 updates in chunks of 25.
    for scale in ("cpu", "smoke"):
        replay = _toy_config("corr=vtrace__lag=0__replay=0.5__B=32", scale)
        control = _toy_config("corr=vtrace__lag=0__replay=0.0__B=16", scale)
        plain = _toy_config("corr=vtrace__lag=0__replay=0.0__B=32", scale)
        assert control.replay_fraction == 0.0 and control.batch_size == replay.fresh_batch_size
        assert control.total_updates == replay.total_updates > plain.total_updates
    assert _toy_config("corr=vtrace__lag=0__replay=0.5__B=32", "cpu").total_updates == 1_575  # against 800


def test_every_reduced_scale_keeps_table_d3_capacity_and_the_papers_replay_age():
    # Issue 46: what replay must match is the off-policy gap in updates, not the share of the run. 16 new unrolls per
    # update into 10,000 trajectories: a full buffer spans 625 updates, so a replayed row is (1 + 624) / 2 = 312.5
    # updates old on average; the paper's ~156,250-update run is full nearly throughout (311.9).
    assert mean_replay_age(10_000, 16, 156_250) == pytest.approx(311.9, abs=0.05)
    cpu = _toy_config("corr=vtrace__lag=0__replay=0.5__B=32", "cpu")
    smoke = _toy_config("corr=vtrace__lag=0__replay=0.5__B=32", "smoke")
    assert cpu.replay_capacity == smoke.replay_capacity == 10_000
    # cpu: 1,575 updates, full from update 625 on: run mean 251 updates (was 3.1 with the old 100-trajectory buffer).
    assert mean_replay_age(cpu.replay_capacity, cpu.fresh_batch_size, cpu.total_updates) == pytest.approx(250.75, abs=0.01)
    assert mean_replay_age(100, 16, 1_575) < 4


def test_behaviour_kl_by_hand():
    # mu uniform over 2 actions (logits 0, 0); pi = (3/4, 1/4) (logits ln 3, 0).
    # KL(mu || pi) = 0.5 ln(0.5 / 0.75) + 0.5 ln(0.5 / 0.25) = 0.5 (-0.405465) + 0.5 (0.693147) = 0.143841.
    kl = behaviour_kl(jnp.array([[0.0, 0.0]]), jnp.array([[np.log(3.0), 0.0]]))
    np.testing.assert_allclose(kl, [0.143841], rtol=1e-5)
    assert float(behaviour_kl(jnp.array([1.0, -2.0, 0.5]), jnp.array([1.0, -2.0, 0.5]))) == pytest.approx(0.0, abs=1e-7)


def test_the_loop_logs_the_replayed_rows_age_and_kl():
    # B = 2: one new unroll and one replayed row per update. Update 0 has nothing to replay (NaN); at update 1 the only
    # eligible trajectory is update 0's: age exactly 1, and KL(mu || pi) of its stored logits against the learner's
    # policy after one update, worked out here from the stored trajectory itself.
    config = ImpalaConfig(unroll_length=T, batch_size=2, hidden_sizes=(16,), learning_rate=0.05,
                          lr_schedule="constant", replay_fraction=0.5, replay_capacity=64)
    env = make_jax_env("catch")
    network = make_network(config, env.num_actions)
    trainer = make_jax_trainer(env, config, updates_per_chunk=1)
    state = trainer.init(jax.random.PRNGKey(0))
    state, first = trainer.run_chunk(state)
    assert np.isnan(float(first.replay_age)) and np.isnan(float(first.replay_kl))
    after_one = state.learner.params
    state, second = trainer.run_chunk(state)
    assert float(second.replay_age) == 1.0
    stored_logits = state.replay.storage.behaviour_logits[0]
    current, _ = network.apply(after_one, state.replay.storage.observations[0, :-1])
    expected = float(jnp.mean(behaviour_kl(stored_logits, current)))
    assert expected > 1e-4
    assert float(second.replay_kl) == pytest.approx(expected, rel=1e-4)
    # A run without replay logs neither.
    plain = make_jax_trainer(env, ImpalaConfig(unroll_length=T, batch_size=2, hidden_sizes=(16,)), updates_per_chunk=1)
    _, metrics = plain.run_chunk(plain.init(jax.random.PRNGKey(0)))
    assert "replay_age" not in metrics._fields


def test_the_loops_replay_age_matches_the_buffers_rule():
    # B = 8 (4 new + 4 replayed), capacity 40 (10 updates' unrolls), 100 updates: the logged ages follow
    # mean_replay_age (1,596 draws over 99 updates; the age sd is ~2.9 updates once full, so a standard error ~0.1).
    config = ImpalaConfig(unroll_length=T, batch_size=8, hidden_sizes=(16,), replay_fraction=0.5, replay_capacity=40)
    trainer = make_jax_trainer(make_jax_env("catch"), config, updates_per_chunk=100)
    _, metrics = trainer.run_chunk(trainer.init(jax.random.PRNGKey(0)))
    assert float(metrics.replay_age) == pytest.approx(mean_replay_age(40, 4, 100), abs=0.3)
