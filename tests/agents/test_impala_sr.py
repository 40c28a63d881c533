"""Tests for the IMPALA+SR agent (Raposo et al. 2021 on IMPALA): memory as agent state, gradient masks, alignment."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from rlrepro.agents.impala.config import ImpalaConfig
from rlrepro.agents.impala_sr.actor import init_actor, unroll
from rlrepro.agents.impala_sr.config import ImpalaSRConfig, SRConfig
from rlrepro.agents.impala_sr.learner import init, loss_fn, sr_terms
from rlrepro.agents.impala_sr.loop import EVENT_STATES, event_metrics, event_sums, make_sr_trainer
from rlrepro.agents.registry import resolve_config
from rlrepro.agents.impala_sr.networks import SRActorCritic, init_sr_params, make_sr_network
from rlrepro.environments.jax_envs import CatchRuns, Chain, KeyToDoor
from rlrepro.losses.synthetic_returns import episode_memory_sums
from rlrepro.specs import load_spec
from rlrepro.specs.experiment import RunSpec
from rlrepro.specs.loading import resolve_agent

ENV = Chain()  # 12-step episodes


def _config(unroll_length: int = 7, batch_size: int = 3, **sr: object) -> ImpalaSRConfig:
    sr_fields = {"alpha": 0.3, "memory_capacity": 12, "c_hidden": (8,), "b_hidden": (8,), "g_hidden": (8,), **sr}
    return ImpalaSRConfig(
        impala=ImpalaConfig(unroll_length=unroll_length, batch_size=batch_size, hidden_sizes=(16,), reward_clip=None),
        sr=SRConfig(**sr_fields),
        lstm_size=8,
    )


def _initial(config: ImpalaSRConfig, env, network: SRActorCritic, seed: int) -> tuple:
    """The learner's parameters and the actor's state, each made by one compiled call (run eagerly, flax's init and
    the LSTM's scan compile op by op: 20 s of a test's 28 on 2 cores)."""
    params = jax.jit(init, static_argnums=(0, 2, 3))(config, jax.random.key(seed), env.observation_shape, env.num_actions)
    return params.params, jax.jit(init_actor, static_argnums=(1, 2, 3))(jax.random.key(seed + 1), env, network, config)


def _batches(config: ImpalaSRConfig, count: int, seed: int = 0) -> tuple:
    """``count`` consecutive actor batches with fixed initial parameters (and the parameters)."""
    network = make_sr_network(config, ENV.num_actions)
    params, state = _initial(config, ENV, network, seed)
    run = jax.jit(functools.partial(unroll, env=ENV, network=network, unroll_length=config.impala.unroll_length))
    batches = []
    for k in range(count):
        state, batch, _ = run(jax.random.key(100 + k), params, state)
        batches.append(batch)
    return network, params, batches


def _outputs(network: SRActorCritic, params, batch):
    resets = jnp.concatenate([jnp.zeros_like(batch.dones[:1]), batch.dones]).astype(bool)
    return network.apply(params, batch.observations, resets, batch.initial_core_state, method=SRActorCritic.unroll)


@functools.partial(jax.jit, static_argnums=(0, 1))
def _terms(config, network, params, batch):
    return sr_terms(network, params, _outputs(network, params, batch), batch, config)


def test_memory_is_carried_across_unrolls_and_equals_the_whole_episode_cumsum() -> None:
    # Unrolls of 7 steps cut the 12-step episodes at different places; the learner continues each stream's
    # memory from the actor's state, so its memory sums equal the exclusive cumulative sum of c over each episode.
    config = _config()
    network, params, batches = _batches(config, 6)
    sums = jnp.concatenate([_terms(config, network, params, b).memory_sum_t for b in batches])  # [42, B]
    observations = jnp.concatenate([b.observations[:-1] for b in batches])  # [42, B, obs]
    c = network.apply(params, network.apply(params, observations.reshape(-1, 18), method=SRActorCritic.embed),
                      method=SRActorCritic.contribution).reshape(observations.shape[:2])
    for start in range(0, 36, 12):  # three whole episodes, every stream (episodes are exactly 12 steps)
        expected = jax.vmap(episode_memory_sums, in_axes=1, out_axes=1)(c[start:start + 12])
        np.testing.assert_allclose(sums[start:start + 12], expected, rtol=1e-5, atol=1e-6)
    # the memory really was reset at every episode start and carried across the cut at step 7
    np.testing.assert_allclose(sums[jnp.array([0, 12, 24])], 0.0, atol=1e-7)
    assert np.all(np.abs(np.asarray(sums[7])) > 0)


def test_prediction_at_t_uses_only_earlier_states_of_the_unroll() -> None:
    config = _config(unroll_length=10)
    network, params, (batch,) = _batches(config, 1)
    base = _terms(config, network, params, batch)
    t = 5
    noise = jax.random.normal(jax.random.key(9), batch.observations.shape[2:])
    changed_t = _terms(config, network, params, batch._replace(observations=batch.observations.at[t].add(noise)))
    np.testing.assert_allclose(changed_t.memory_sum_t[: t + 1], base.memory_sum_t[: t + 1], rtol=1e-6)
    assert not np.allclose(changed_t.memory_sum_t[t + 1], base.memory_sum_t[t + 1])
    assert not np.allclose(changed_t.gate_t[t], base.gate_t[t])  # the current state feeds g (and b)
    changed_before = _terms(config, network, params, batch._replace(observations=batch.observations.at[t - 1].add(noise)))
    assert not np.allclose(changed_before.memory_sum_t[t], base.memory_sum_t[t])


def _grad_norms(fn, params) -> dict[str, float]:
    grads = jax.jit(jax.grad(fn))(params)["params"]  # one compile (eagerly, the LSTM's scan compiles piece by piece)
    return {name: float(sum(jnp.sum(jnp.abs(g)) for g in jax.tree.leaves(tree))) for name, tree in grads.items()}


def test_gradient_masks() -> None:
    config = _config()
    network, params, batches = _batches(config, 2)
    batch = batches[1]  # its memory holds states from the previous unroll

    def memory_term(p):
        return jnp.sum(_terms(config, network, p, batch).memory_sum_t)

    def gate_and_bias(p):
        out = _outputs(network, p, batch)
        return jnp.sum(network.apply(p, out.torso, method=SRActorCritic.gate)) + jnp.sum(
            network.apply(p, out.torso, method=SRActorCritic.bias))

    def rl_part(p):
        total, metrics = loss_fn(p, batch, config, network)
        return total - config.sr.loss_weight * metrics.sr_loss

    memory = _grad_norms(memory_term, params)
    assert memory["torso"] == 0.0  # no gradient into the encoder through the memory
    assert memory["contribution_mlp"] > 0.0  # c is trained through the memory term
    current = _grad_norms(gate_and_bias, params)
    assert current["torso"] > 0.0  # the current state's path through g and b trains the encoder
    rl = _grad_norms(rl_part, params)
    assert rl["contribution_mlp"] == 0.0  # the augmented reward is detached: the RL loss never trains c
    assert rl["torso"] > 0.0 and rl["policy"] > 0.0


def test_two_stage_bias_gets_no_gradient_from_the_second_term() -> None:
    config = _config(loss="two_stage")
    network, params, batches = _batches(config, 1)
    batch = batches[0]._replace(rewards=jax.random.normal(jax.random.key(4), batches[0].rewards.shape))

    def second_term(p):
        terms = _terms(config, network, p, batch)
        bias = network.apply(p, _outputs(network, p, batch).torso[:-1], method=SRActorCritic.bias)
        return jnp.sum(terms.loss - 0.5 * jnp.square(batch.rewards - bias))

    grads = _grad_norms(second_term, params)
    assert grads["bias_mlp"] < 1e-5  # zero up to float rounding of the subtracted first term
    assert grads["gate_mlp"] > 1e-3 and grads["contribution_mlp"] > 1e-3


def test_reward_alignment_target_at_t_is_the_reward_after_acting_in_s_t() -> None:
    # On the Chain the only reward is paid on leaving the outcome state: batch.rewards[t] is non-zero only
    # where observations[t] is the outcome observation (index 17), i.e. r_t follows s_t.
    config = _config(unroll_length=12)
    _, _, batches = _batches(config, 4)
    for batch in batches:
        paid = np.asarray(batch.rewards) != 0
        at_outcome = np.asarray(jnp.argmax(batch.observations[:-1], -1)) == 17
        assert np.all(at_outcome[paid])
    # and the per-step SR loss at t reads exactly rewards[t]
    network, params, (batch,) = _batches(config, 1)
    base = _terms(config, network, params, batch).loss
    moved = _terms(config, network, params, batch._replace(rewards=batch.rewards.at[4].add(1.0))).loss
    changed = np.any(np.asarray(moved != base), axis=1)
    assert changed.tolist() == [t == 4 for t in range(12)]


def test_augmented_reward_enters_vtrace_and_baseline_matches_plain_rewards() -> None:
    # alpha = 0, beta = 1 without the SR loss (the baseline) and alpha = 0 with it give the same RL losses;
    # alpha > 0 changes them (c(s_t) is part of the reward of transition t).
    base_config = _config(enabled=False, alpha=0.0)
    network, params, (batch,) = _batches(base_config, 1)
    baseline = loss_fn(params, batch, base_config, network)[1]
    zero_alpha = loss_fn(params, batch, _config(alpha=0.0), network)[1]
    with_alpha = loss_fn(params, batch, _config(alpha=0.5), network)[1]
    assert float(baseline.sr_loss) == 0.0
    np.testing.assert_allclose(zero_alpha.baseline_loss, baseline.baseline_loss, rtol=1e-6)
    np.testing.assert_allclose(zero_alpha.pg_loss, baseline.pg_loss, rtol=1e-5, atol=1e-6)
    assert not np.isclose(float(with_alpha.baseline_loss), float(baseline.baseline_loss))


def test_baseline_config_rejects_a_synthetic_reward() -> None:
    with pytest.raises(ValueError, match="alpha 0"):
        SRConfig(enabled=False, alpha=0.3)


def _train_tiny_chain(enabled: bool, chunks: int) -> np.ndarray:
    """Mean success over the last chunk, per seed, on a 7-state chain (3 moves, trigger 3 right: random 1/8)."""
    from rlrepro.agents.impala_sr.loop import EVENT_STATES, event_metrics, event_sums, make_sr_trainer

    env = Chain(num_states=7, moves=3, trigger_offset=3)
    config = ImpalaSRConfig(
        impala=ImpalaConfig(discount=0.9, unroll_length=5, batch_size=32, learning_rate=1e-3, rmsprop_epsilon=1e-4,
                            lr_schedule="constant", entropy_cost=0.01, hidden_sizes=(32,), max_grad_norm=None),
        sr=SRConfig(enabled=enabled, alpha=0.3 if enabled else 0.0, memory_capacity=5, c_hidden=(32, 32),
                    b_hidden=(32, 32), g_hidden=(32,)),
        lstm_size=None,
    )
    trainer = make_sr_trainer(env, config, updates_per_chunk=100)
    state = trainer.init_batch(jnp.stack([jax.random.key_data(jax.random.key(s)) for s in range(2)]))
    for _ in range(chunks):
        state, metrics = trainer.run_chunk_batch(state)
    return np.asarray(metrics.mean_return), np.asarray(metrics.sr_peak_position)


@pytest.mark.slow
def test_sr_solves_a_tiny_chain_and_the_baseline_does_not() -> None:
    success, peak = _train_tiny_chain(enabled=True, chunks=6)
    baseline, _ = _train_tiny_chain(enabled=False, chunks=6)
    assert np.all(success >= 0.8), success
    assert np.all(baseline <= 0.35), baseline  # chance is 1/8; no TD signal crosses the discount-0 step
    assert np.all(np.abs(peak - 6) <= 1), peak  # c peaks at (or next to) the trigger, position 3 + 3


def test_profile_table_and_plot(tmp_path) -> None:
    import json

    from rlrepro.agents.impala_sr.profile import load_profiles, plot_profile, profile_table

    for seed, peak in ((0, 15), (1, 16)):
        contribution = [0.0] * 17
        contribution[peak] = 1.0
        (tmp_path / f"seed{seed}").mkdir()
        (tmp_path / f"seed{seed}" / "sr_profile.json").write_text(
            json.dumps({"contribution": contribution, "start": 8, "trigger": 15}))
    profiles, meta = load_profiles(tmp_path)
    table = profile_table(profiles, meta).splitlines()
    # position 15: mean (1 + 0) / 2 = 0.5, sd 0.5, one seed peaks there
    assert table[16].split()[:4] == ["15", "0.500", "0.500", "1"] and table[16].endswith("<- trigger")
    plot_profile(profiles, meta, tmp_path / "p.png")
    assert (tmp_path / "p.png").stat().st_size > 1000


def test_an_lstm_with_several_seeds_in_one_cpu_job_initialises() -> None:
    """The vmapped init of a whole train state with an LSTM 256 never returned on XLA's CPU runtime (jax 0.10.2,
    2 seeds); the seeds' inits now run one after another (``init_seeds_one_by_one``), each seed its own."""
    from pathlib import Path

    from rlrepro.agents.impala_sr.build import build_impala_sr
    from rlrepro.specs import load_spec

    spec = load_spec(Path(__file__).parents[2] / "specs/synthetic_returns/chain.yaml")
    agent = spec.agent.model_copy(update={"network": spec.agent.network.model_copy(update={"lstm_size": 256})})
    program = build_impala_sr(agent, spec.environments[0], frames=1_000, run=spec.run)
    state = jax.block_until_ready(program.init_batch(jax.random.split(jax.random.key(0), 2)))
    kernels = [leaf for path, leaf in jax.tree_util.tree_leaves_with_path(state.learner.params)
               if "'hf'" in jax.tree_util.keystr(path) and "kernel" in jax.tree_util.keystr(path)]
    assert kernels and all(k.shape[0] == 2 for k in kernels)
    assert not np.allclose(kernels[0][0], kernels[0][1])  # each seed drew its own parameters


def _shapes(tree) -> dict[str, tuple[int, ...]]:
    return {"/".join(str(k.key) for k in path): tuple(leaf.shape) for path, leaf in jax.tree_util.tree_leaves_with_path(tree)}


def test_parameter_shapes_follow_the_supplement() -> None:
    """Supplement §6.6: LSTM 256, then "a 256-unit layer followed by a ReLU and two separate linear layers to produce
    policy logits and a baseline"; c and b 2x256 ReLU MLPs with a scalar output; g 256 then one unit (sigmoid)."""
    config = ImpalaSRConfig(
        impala=ImpalaConfig(hidden_sizes=(256,)), sr=SRConfig(memory_capacity=85), lstm_size=256
    )
    network = make_sr_network(config, num_actions=4)
    params = jax.eval_shape(lambda: init_sr_params(network, jax.random.key(0), (5, 5, 5)))
    shapes = _shapes(params["params"])
    d = 256  # the torso's FC256 (the memory's width)
    assert shapes["head_layers_0/kernel"] == (256, 256) and shapes["head_layers_0/bias"] == (256,)  # LSTM 256 -> FC 256
    assert shapes["policy/kernel"] == (256, 4) and shapes["value/kernel"] == (256, 1)  # two linear heads on it
    for mlp in ("contribution_mlp", "bias_mlp"):
        assert [shapes[f"{mlp}/Dense_{i}/kernel"] for i in range(3)] == [(d, 256), (256, 256), (256, 1)]
    assert [shapes[f"gate_mlp/Dense_{i}/kernel"] for i in range(2)] == [(d, 256), (256, 1)]
    assert not any(name.startswith("head_layers_1") for name in shapes)  # exactly one hidden layer in the head


@pytest.mark.parametrize(("experiment", "baseline_discount"), [("catch", 0.90), ("catch_delayed", 0.99)])
def test_the_catch_discounts_are_the_papers(experiment: str, baseline_discount: float) -> None:
    """§3.2: both agents solve standard Catch with discount 0.90; on delayed Catch the baseline's best run needed
    0.99 while the SR agent kept 0.90."""
    spec = load_spec(f"specs/synthetic_returns/{experiment}.yaml")
    env = spec.environments[0]
    discounts = {}
    for variant in spec.variant_list():
        agent = resolve_agent(spec, variant, "paper")
        discounts[variant.name] = resolve_config(agent, env, frames=spec.budget.frames, run=RunSpec()).config.impala.discount
    assert discounts == {"sr": pytest.approx(0.90), "baseline": pytest.approx(baseline_discount)}


@pytest.mark.slow  # compiles an unroll and a whole training chunk on Key-to-Door
def test_key_to_door_tallies_are_summed_per_episode_and_reach_the_chunk_metrics() -> None:
    """Fig. 5b plots apples (left) and the door (right) apart: every ended episode's apple and phase-3 sums add up to
    its return, the door opened at most once, and phase 3 pays +5 exactly when it did (standard task)."""
    env = KeyToDoor(phase_lengths=(3, 4, 6), apples=10)  # 13-step episodes: several end in one unroll
    config = ImpalaSRConfig(
        impala=ImpalaConfig(unroll_length=40, batch_size=8, hidden_sizes=(16,), reward_clip=None),
        sr=SRConfig(alpha=0.3, memory_capacity=13, c_hidden=(8,), b_hidden=(8,), g_hidden=(8,)),
        lstm_size=None, head_hidden=(8,),
    )
    network = make_sr_network(config, env.num_actions)
    params, state = _initial(config, env, network, 0)
    _, _, stats = jax.jit(functools.partial(unroll, env=env, network=network, unroll_length=40))(
        jax.random.key(2), params, state)
    ended = np.asarray(stats.ended)
    tallies = {name: np.asarray(value)[ended] for name, value in stats.tallies.items()}
    returns = np.asarray(stats.returns)[ended]
    assert ended.sum() >= 16
    np.testing.assert_allclose(tallies["apple_return"] + tallies["phase3_return"], returns, atol=1e-5)
    assert set(tallies["door_opened"]) <= {0.0, 1.0} and set(tallies["phase3_return"]) <= {0.0, 5.0}
    np.testing.assert_array_equal(tallies["phase3_return"] == 5.0, tallies["door_opened"] == 1.0)
    assert np.all(tallies["door_opened"] <= tallies["first_key_taken"])  # no door without the key
    trainer = make_sr_trainer(env, config, updates_per_chunk=2)
    _, metrics = trainer.run_chunk(trainer.init(jax.random.key(3)))
    assert {"door_opened", "phase3_return", "apple_return", "first_key_taken"} <= set(metrics._fields)
    # the per-run contrasts of c at the key against the apples (Fig. 5c), beside each event's own reading
    assert {"sr_c_zr_first_key_taken", "sr_c_dz_first_key_taken_vs_apple_return",
            "sr_c_dz_first_key_taken_vs_abs_apple_return"} <= set(metrics._fields)
    assert 0.0 <= float(metrics.door_opened) <= 1.0


def test_event_metrics_are_the_mean_c_at_the_events_in_standard_deviations_of_c_by_hand() -> None:
    """Fig. 4c / 5c: c over all states [0, 0, 0, 4] has mean 1 and sd sqrt(16/4 - 1) = sqrt(3); an event at the state
    with c = 4 stands (4 - 1) / sqrt(3) = 1.732 sd above, one at c = 0 sits 1 / sqrt(3) = 0.577 below; no event: NaN."""
    sums = {"c": 4.0, "c2": 16.0, "n": 4.0, "key_before": 4.0, "key_before_n": 1.0, "key_after": 0.0,
            "key_after_n": 2.0}
    sums |= {"apple_before": 0.0, "apple_before_n": 0.0, "apple_after": 0.0, "apple_after_n": 0.0}
    found = {k: float(v) for k, v in event_metrics(jax.tree.map(jnp.asarray, sums), ("key", "apple")).items()}
    assert found["sr_c_z_key_before"] == pytest.approx(1.7320508, rel=1e-6)
    assert found["sr_c_z_key_after"] == pytest.approx(-0.5773503, rel=1e-6)
    assert np.isnan(found["sr_c_z_apple_before"]) and np.isnan(found["sr_c_z_apple_after"])


def test_event_contrasts_read_each_event_against_its_own_room_by_hand() -> None:
    """c over all states [0, 0, 0, 4, 2, 2] (rooms 0, 0, 0, 0, 1, 1): mean 8/6 = 1.3333, mean of squares 24/6 = 4,
    sd sqrt(4 - 1.7778) = 1.4907. Room means: room 0 4/4 = 1, room 1 4/2 = 2. After the key (room 0) c = 4:
    zr = (4 - 1) / 1.4907 = 2.0125. After the apples (room 1) c = 2: zr = (2 - 2) / 1.4907 = 0, though c there
    stands (2 - 1.3333) / 1.4907 = 0.4472 sd above c's mean over all states: the room, not the apple.
    Key vs apples 2.0125 - 0 = 2.0125; vs |apples| the same. No key pick-up in the chunk: NaN."""
    sums = {"c": 8.0, "c2": 24.0, "n": 6.0, "c_room": [4.0, 4.0], "n_room": [4.0, 2.0],
            "key_before": 0.0, "key_before_n": 1.0, "key_after": 4.0, "key_after_n": 1.0, "key_after_room_n": [1.0, 0.0],
            "apple_before": 0.0, "apple_before_n": 2.0, "apple_after": 4.0, "apple_after_n": 2.0,
            "apple_after_room_n": [0.0, 2.0]}
    found = {k: float(v) for k, v in event_metrics({k: jnp.asarray(v) for k, v in sums.items()}, ("key", "apple"),
                                                   (("key", "apple"),)).items()}
    assert found["sr_c_z_apple_after"] == pytest.approx(0.4472136, rel=1e-6)
    assert found["sr_c_zr_key"] == pytest.approx(2.0124612, rel=1e-6)
    assert found["sr_c_dz_key_vs_apple"] == pytest.approx(2.0124612, rel=1e-6)
    assert found["sr_c_dz_key_vs_abs_apple"] == pytest.approx(2.0124612, rel=1e-6)
    none = dict(sums, key_after_n=0.0, key_after=0.0, key_after_room_n=[0.0, 0.0])
    found = event_metrics({k: jnp.asarray(v) for k, v in none.items()}, ("key", "apple"), (("key", "apple"),))
    assert np.isnan(float(found["sr_c_dz_key_vs_apple"])) and np.isnan(float(found["sr_c_dz_key_vs_abs_apple"]))


def test_event_sums_read_c_at_the_event_state_and_at_the_next_one_within_the_episode() -> None:
    """An event on step t is read at s_t (before) and s_{t+1} (after), the latter only where step t did not end the
    episode (its next observation is a new episode's first)."""
    env = KeyToDoor(phase_lengths=(3, 4, 6), apples=10)
    config = _config(unroll_length=4, batch_size=2)
    network = make_sr_network(config, env.num_actions)
    params, state = _initial(config, env, network, 0)
    _, batch, _ = jax.jit(functools.partial(unroll, env=env, network=network, unroll_length=4))(
        jax.random.key(2), params, state)
    c = np.asarray(network.apply(params, network.apply(params, batch.observations.reshape((10, *env.observation_shape)),
                                                       method=SRActorCritic.embed), method=SRActorCritic.contribution))
    c = c.reshape((5, 2))
    marked = np.zeros((4, 2), np.float32)
    marked[1, 0] = marked[2, 1] = 1.0  # step 1 of stream 0, step 2 of stream 1 (which ends its episode there)
    dones = np.zeros((4, 2), bool)
    dones[2, 1] = True
    sums = event_sums(network, params, batch.observations, jnp.asarray(dones), {"key": jnp.asarray(marked)}, ("key",))
    assert float(sums["n"]) == 10 and float(sums["c"]) == pytest.approx(c.sum(), rel=1e-5)
    assert float(sums["key_before"]) == pytest.approx(c[1, 0] + c[2, 1], rel=1e-5) and float(sums["key_before_n"]) == 2
    assert float(sums["key_after"]) == pytest.approx(c[2, 0], rel=1e-5) and float(sums["key_after_n"]) == 1
    # per room: c's sum and count over the batch's states, and where the event's after-states are
    rooms = np.asarray(env.rooms_of(batch.observations))
    sums = event_sums(network, params, batch.observations, jnp.asarray(dones), {"key": jnp.asarray(marked)}, ("key",),
                      jnp.asarray(rooms), env.num_rooms)
    for room in range(env.num_rooms):
        assert float(sums["c_room"][room]) == pytest.approx(c[rooms == room].sum(), rel=1e-5, abs=1e-6)
        assert float(sums["n_room"][room]) == (rooms == room).sum()
    np.testing.assert_array_equal(np.asarray(sums["key_after_room_n"]), np.eye(env.num_rooms)[rooms[2, 0]])


def test_the_sr_agent_reports_c_at_catches_and_misses_and_the_baseline_does_not() -> None:
    """On Catch's runs the SR agent's chunk metrics carry sr_c_z_<caught|missed>_<before|after>; the baseline has no c."""
    env = CatchRuns(size=5, runs=3, delayed=True)  # 12-step episodes
    for alpha, expected in ((0.3, True), (None, False)):
        sr = dict(alpha=alpha, memory_capacity=12, c_hidden=(8,), b_hidden=(8,), g_hidden=(8,))
        config = ImpalaSRConfig(
            impala=ImpalaConfig(unroll_length=12, batch_size=8, hidden_sizes=(16,)),
            sr=SRConfig(**sr) if alpha else SRConfig(enabled=False, alpha=0.0, memory_capacity=12),
            lstm_size=None, head_hidden=(8,),
        )
        trainer = make_sr_trainer(env, config, updates_per_chunk=2)
        _, metrics = trainer.run_chunk(trainer.init(jax.random.key(3)))
        names = {f"sr_c_z_{e}_{w}" for e in ("caught", "missed") for w in EVENT_STATES}
        assert (names <= set(metrics._fields)) is expected
        assert {"caught", "missed"} <= set(metrics._fields)  # catches and misses per episode, either way
        if expected:
            assert all(np.isfinite(float(getattr(metrics, name))) for name in names)
