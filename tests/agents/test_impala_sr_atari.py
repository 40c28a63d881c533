"""IMPALA+SR on real ALE games: the episodic memory as agent state through the actor-learner queue, its reset at
episode start, and the Atari specs' configuration (Raposo et al. 2021 §2, §3.4-3.5; notes §1.3)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

pytest.importorskip("ale_py", reason="ale-py is pinned in envs/ and installed by `make install`")

from rlrepro.agents.impala_sr.host_trainer import (  # noqa: E402
    HostImpalaSRTrainer,
    SRHostCore,
    reset_host_memory,
    sr_batch_from_unrolls,
    write_host_memory,
)
from rlrepro.agents.impala_sr.learner import sr_terms  # noqa: E402
from rlrepro.agents.impala_sr.networks import SRActorCritic, init_sr_params, make_sr_network  # noqa: E402
from rlrepro.agents.impala_sr.build import impala_sr_config  # noqa: E402
from rlrepro.agents.registry import resolve_config  # noqa: E402
from rlrepro.losses.synthetic_returns import EpisodicMemory  # noqa: E402
from rlrepro.specs import load_spec  # noqa: E402
from rlrepro.specs.agents import ImpalaSRAgentSpec  # noqa: E402
from rlrepro.specs.agents.impala import ActorSpec  # noqa: E402
from rlrepro.specs.environments import AtariEnvSpec  # noqa: E402
from rlrepro.specs.experiment import RunSpec  # noqa: E402
from rlrepro.specs.loading import resolve_agent, resolve_env  # noqa: E402

T, N, CAPACITY = 16, 2, 64

AGENT = {
    "kind": "impala_sr",
    "network": {"kind": "sr_conv", "channels": [8, 8], "fc_size": 16, "lstm_size": 16},
    "optimizer": {"learning_rate": 2e-4, "epsilon": 1e-4},
    "loss": {"entropy_cost": 0.01},
    "sr": {"alpha": 0.1, "memory_capacity": CAPACITY, "c_hidden": [8], "b_hidden": [8], "g_hidden": [8]},
    "unroll_length": T,
    "batch_size": N,
    "actor": {"mode": "threaded"},
}


def make_trainer(mode: str = "threaded") -> HostImpalaSRTrainer:
    agent = ImpalaSRAgentSpec.model_validate(AGENT)
    # 160 frames = 40 agent steps (4 repeats, no no-ops): every stream's episode ends inside the third unroll.
    env_spec = AtariEnvSpec(kind="atari", id="pong", game="pong", num_envs=N, noop_max=0, max_episode_frames=160,
                            evaluation={"episodes": 1})  # fmt: skip
    config = impala_sr_config(agent, total_updates=2)
    return HostImpalaSRTrainer(config, env_spec, ActorSpec(mode=mode), updates_per_chunk=1)


def test_the_learner_sees_the_memory_the_actor_had_across_unroll_boundaries_and_an_episode_end():
    """Unrolls taken from the actor threads' queue (no learner update in between, so the actor's parameters are the
    initial ones): each unroll's recorded memory holds exactly the torso outputs of the episode's earlier steps, and
    the learner's memory sums over the concatenated batches equal sum_{k<t} c(s_k) of the episode (reset at its
    start), across unroll boundaries and the episode end."""
    trainer = make_trainer()
    state = trainer.init(jax.random.key_data(jax.random.key(0)))
    params = state.learner.params
    trainer._start_actors(params, state.rng, 0)
    try:
        unrolls = [trainer._next_unroll() for _ in range(4)]
    finally:
        trainer.stop()
    assert [u.param_version for u in unrolls] == [0, 0, 0, 0]
    dones = np.concatenate([u.dones for u in unrolls])  # [4T, N]
    assert dones.any(axis=0).all(), "every stream's episode must end inside the four unrolls"
    observations = np.concatenate([u.observations[:-1] for u in unrolls])  # [4T, N, ...]: s_0 .. s_{4T-1}
    network = trainer.network
    embed = lambda obs: network.apply(params, jnp.asarray(obs), method=SRActorCritic.embed)  # noqa: E731
    contribution = lambda rep: network.apply(params, rep, method=SRActorCritic.contribution)  # noqa: E731
    torso = np.stack([np.asarray(embed(observations[:, i])) for i in range(N)], axis=1)  # [4T, N, d]

    for k, u in enumerate(unrolls):
        memory = u.initial_core_state.memory
        for i in range(N):
            # Steps of the running episode before this unroll: those after the last done (counted from step 0).
            before = dones[: k * T, i]
            start = 0 if not before.any() else int(np.nonzero(before)[0][-1]) + 1
            assert memory.counter[i] == k * T - start
            for j, step in enumerate(range(start, k * T)):
                np.testing.assert_allclose(memory.values[i, j], torso[step, i], rtol=1e-4, atol=1e-5)
            assert not memory.values[i, k * T - start:].any()  # the rest is empty (reset at the episode start)

    config = trainer.config
    c_all = np.asarray(contribution(jnp.asarray(torso)))  # [4T, N]
    for k in range(4):
        batch = sr_batch_from_unrolls([unrolls[k]])
        outputs = network.apply(
            params, batch.observations, jnp.concatenate([jnp.zeros_like(batch.dones[:1]), batch.dones]),
            batch.initial_core_state, method=SRActorCritic.unroll,
        )  # fmt: skip
        sums = np.asarray(sr_terms(network, params, outputs, batch, config).memory_sum_t)  # [T, N]
        for i in range(N):
            for t in range(T):
                step = k * T + t
                ended = np.nonzero(dones[:step, i])[0]
                start = 0 if len(ended) == 0 else int(ended[-1]) + 1
                assert sums[t, i] == pytest.approx(float(c_all[start:step, i].sum()), rel=1e-4, abs=1e-4)


def test_a_finished_episode_empties_its_memory_and_lstm_and_leaves_the_others():
    trainer = make_trainer("sync")
    core = trainer._initial_core(3)
    memory = core.memory
    for step in range(5):
        memory = write_host_memory(memory, np.full((3, 16), step + 1.0, np.float32))
    lstm = tuple(np.ones((3, 16), np.float32) for _ in range(2))
    reset = trainer._reset_core(SRHostCore(lstm, memory), np.array([False, True, False]))
    np.testing.assert_array_equal(reset.memory.counter, [5, 0, 5])
    assert not reset.memory.values[1].any()
    np.testing.assert_array_equal(reset.memory.values[0, :5, 0], [1, 2, 3, 4, 5])
    np.testing.assert_array_equal(reset.memory.values[2, :5, 0], [1, 2, 3, 4, 5])
    for part in reset.lstm:
        np.testing.assert_array_equal(part[:, 0], [1.0, 0.0, 1.0])


def test_the_host_memory_wraps_like_the_learner_memory():
    """Past capacity the oldest slot is overwritten (circular, as the released module): C = 3, writes 1..5."""
    memory = EpisodicMemory(np.zeros((1, 3, 1), np.float32), np.zeros((1,), np.int32))
    for value in (1.0, 2.0, 3.0, 4.0, 5.0):
        memory = write_host_memory(memory, np.array([[value]], np.float32))
    np.testing.assert_array_equal(memory.values[0, :, 0], [4.0, 5.0, 3.0])
    assert memory.counter[0] == 5
    memory = reset_host_memory(memory, np.array([True]))
    assert memory.counter[0] == 0 and not memory.values.any()


def test_training_chunks_run_and_the_episodic_memory_reaches_the_learner():
    trainer = make_trainer("threaded")
    state = trainer.init(jax.random.key_data(jax.random.key(1)))
    state, first = trainer.run_chunk(state)
    state, second = trainer.run_chunk(state)
    assert np.isfinite(first.sr_loss[0]) and first.sr_loss[0] > 0
    assert second.frames[0] == 2 * T * N * 4
    assert -21 <= second.eval_return[0] <= 21  # an evaluation game of real Pong after the last update


@pytest.mark.parametrize("experiment", ["pong", "skiing"])
def test_the_atari_specs_resolve_to_the_papers_settings(experiment):
    spec = load_spec(f"specs/synthetic_returns/{experiment}.yaml")
    env = resolve_env(spec, experiment, "paper")
    variants = {v.name: v for v in spec.variant_list()}
    setup = resolve_config(resolve_agent(spec, variants["sr"], "paper"), env, frames=spec.budget.frames, run=RunSpec())
    config = setup.config
    assert config.sr.memory_capacity == 2000 and config.lstm_size == 256
    assert config.conv.channels == (32, 64, 64) and config.conv.kernel_size == 3 and config.conv.stride == 2
    assert setup.actor.mode == "threaded"
    if experiment == "skiing":  # Supplement: two-stage loss, LSTM state for the current state, beta 0, Adam, T 80
        assert config.sr.two_stage and config.sr.current_repr == "core" and config.sr.beta == 0.0
        assert config.adam is not None and config.impala.unroll_length == 80 and config.impala.batch_size == 32
        assert env.sticky_action_prob == 0.0 and env.action_repeat == 4 and not env.life_loss_terminal
    else:
        assert config.sr.loss == "one_stage" and config.sr.current_repr == "torso" and config.adam is None
    baseline = resolve_config(resolve_agent(spec, variants["baseline"], "paper"), env, frames=spec.budget.frames, run=RunSpec())
    assert not baseline.config.sr.enabled and baseline.config.sr.alpha == 0.0 and baseline.config.sr.beta == 1.0


def test_the_pong_network_has_the_supplements_policy_network():
    """Supplement §6.6 on Atari: ConvNet 32/64/64 3x3 stride 2, LSTM 256, then FC 256 + ReLU and two linear heads."""
    spec = load_spec("specs/synthetic_returns/pong.yaml")
    env = resolve_env(spec, "pong", "paper")
    variants = {v.name: v for v in spec.variant_list()}
    config = resolve_config(resolve_agent(spec, variants["sr"], "paper"), env, frames=spec.budget.frames, run=RunSpec()).config
    network = make_sr_network(config, num_actions=6)
    params = jax.eval_shape(lambda: init_sr_params(network, jax.random.key(0), (4, 84, 84)))["params"]
    assert params["head_layers_0"]["kernel"].shape == (256, 256)
    assert params["policy"]["kernel"].shape == (256, 6) and params["value"]["kernel"].shape == (256, 1)
    assert [params["torso"][f"Conv_{i}"]["kernel"].shape for i in range(3)] == [(3, 3, 4, 32), (3, 3, 32, 64), (3, 3, 64, 64)]
