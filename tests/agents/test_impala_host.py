"""IMPALA's actor-learner on real ALE games: determinism of the synchronous mode, threads, evaluation, episode ends."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

pytest.importorskip("ale_py", reason="ale-py is pinned in envs/ and installed by `make install`")

from rlrepro.agents.impala.host_trainer import HostImpalaTrainer  # noqa: E402
from rlrepro.training.actor_learner import batch_from_unrolls  # noqa: E402
from rlrepro.agents.impala.learner import corrected_targets  # noqa: E402
from rlrepro.agents.impala.build import impala_config  # noqa: E402
from rlrepro.environments.atari import AtariEnv  # noqa: E402
from rlrepro.specs import ImpalaAgentSpec  # noqa: E402
from rlrepro.specs.agents.impala import ActorSpec  # noqa: E402
from rlrepro.specs.environments import AtariEnvSpec  # noqa: E402
from rlrepro.training.actor_learner import play_unroll, start_actor  # noqa: E402

AGENT = {
    "kind": "impala",
    "network": {"kind": "impala_shallow", "fc_size": 32},
    "optimizer": {"learning_rate": 6e-4, "epsilon": 0.01, "max_grad_norm": 40.0},
    "loss": {"entropy_cost": 0.01},
    "unroll_length": 5,
    "batch_size": 4,
}


def make_trainer(mode: str, *, total_updates: int = 4, lag: int = 1, num_actors: int = 1, **env) -> HostImpalaTrainer:
    agent = ImpalaAgentSpec.model_validate({**AGENT, "policy_lag": lag})
    env_spec = AtariEnvSpec(kind="atari", id="pong", game="pong", num_envs=4, evaluation={"episodes": 2}, **env)
    config = impala_config(agent, total_updates=total_updates)
    return HostImpalaTrainer(config, env_spec, ActorSpec(mode=mode, num_actors=num_actors), updates_per_chunk=2)


def row(metrics) -> dict[str, float]:
    """One chunk's metrics as numbers; ``eval_scores`` ([1, games]: each evaluation game's score, none before the
    last chunk) as ``eval_score_<i>``."""
    out = {k: float(v[0]) for k, v in metrics._asdict().items() if k != "eval_scores"}
    return {**out, **{f"eval_score_{i}": float(x) for i, x in enumerate(metrics.eval_scores[0])}}


def run(trainer: HostImpalaTrainer, chunks: int) -> list[dict]:
    state = trainer.init(jax.random.key_data(jax.random.key(0)))
    out = []
    for _ in range(chunks):
        state, metrics = trainer.run_chunk(state)
        out.append({k: v for k, v in row(metrics).items() if k != "fps"})
    trainer.stop()
    return out


def test_the_synchronous_mode_is_deterministic_and_evaluates_at_the_end():
    first = run(make_trainer("sync", max_episode_frames=2000), chunks=2)
    second = run(make_trainer("sync", max_episode_frames=2000), chunks=2)
    for a, b in zip(first, second):
        assert a == pytest.approx(b, nan_ok=True)
    assert first[-1]["frames"] == 4 * 5 * 4 * 4  # updates x T x B x action repeat
    assert np.isnan(first[0]["eval_return"]) and -21 <= first[-1]["eval_return"] <= 21
    # each evaluation game's score, kept for the tests against a trivial policy's games (kind above_trivial)
    games = [first[-1][f"eval_score_{i}"] for i in range(2)]
    assert "eval_score_0" not in first[0] and "eval_score_2" not in first[-1]
    assert np.mean(games) == pytest.approx(first[-1]["eval_return"])
    assert first[0]["policy_lag"] == 0.5  # updates 1, 2 act with version 0: lags 0 and 1
    assert first[-1]["policy_lag"] == 1.0  # then always exactly 1


def test_threaded_actors_train_and_measure_the_policy_lag():
    metrics = run(make_trainer("threaded", max_episode_frames=2000), chunks=2)
    assert all(np.isfinite(m["total_loss"]) for m in metrics)
    assert all(0 <= m["policy_lag"] <= 4 for m in metrics)  # bounded by the queue (2) and the unroll in hand


def test_a_truncated_game_never_bootstraps_from_the_next_game():
    """At the frame cap the discount is 0: the V-trace target there ignores the next game's value."""
    trainer = make_trainer("sync", max_episode_frames=40, noop_max=0)  # 10 agent steps per game
    env = AtariEnv(trainer.env_spec, num_envs=4, seed=0, num_threads=1)
    state = trainer.init(jax.random.key_data(jax.random.key(0)))
    actor = start_actor(env, (), jax.random.key(1))
    _, unroll = play_unroll(env, trainer.policy_step, trainer._reset_core, state.learner.params, 0, actor, 12)
    batch = batch_from_unrolls([unroll])
    t = int(np.flatnonzero(np.asarray(batch.dones[:, 0]))[0])
    assert t == 9  # the 10th step hits the cap
    discount = 0.99 * (1.0 - np.asarray(batch.dones, np.float32))
    v = np.random.default_rng(0).normal(size=(13, 4)).astype(np.float32)
    rho = np.ones((12, 4), np.float32)
    errors, _ = corrected_targets(trainer.config, v[:-1], v[1:], np.asarray(batch.rewards), discount, rho)
    v_changed = v.copy()
    v_changed[t + 1 :] += 100.0  # every value of the next game changes
    errors_changed, _ = corrected_targets(trainer.config, v_changed[:-1], v_changed[1:], np.asarray(batch.rewards), discount, rho)
    np.testing.assert_allclose(np.asarray(errors)[: t + 1, 0], np.asarray(errors_changed)[: t + 1, 0], rtol=1e-6)
    env.close()


def test_the_actor_and_the_learner_compute_the_same_logits_across_an_episode_end():
    """The real actor path (``play_unroll``) and the learner (``apply_to_batch``) agree at every step.

    An LSTM core with last action/reward inputs, two consecutive unrolls of 12 steps over games capped at 10
    agent steps: both unrolls contain an episode end, and the second starts from the first's last step. The
    released code (``scalable_agent`` ``Agent._torso``/``unroll``) feeds the real last action and reward after a
    ``done`` and resets only the core; the actor and the learner must feed the same, or pi != mu at zero lag.
    """
    from rlrepro.agents.impala.learner import apply_to_batch

    agent = {**AGENT, "network": {"kind": "impala_shallow", "fc_size": 32, "lstm_size": 16, "last_action_reward_inputs": True}}
    env_spec = AtariEnvSpec(kind="atari", id="pong", game="pong", num_envs=4, max_episode_frames=40, noop_max=0)
    config = impala_config(ImpalaAgentSpec.model_validate(agent), total_updates=4)
    trainer = HostImpalaTrainer(config, env_spec, ActorSpec(mode="sync"), updates_per_chunk=2)
    params = trainer.init(jax.random.key_data(jax.random.key(0))).learner.params
    env = AtariEnv(env_spec, num_envs=4, seed=0, num_threads=1)
    actor = start_actor(env, trainer._initial_core(4), jax.random.key(1))
    for version in range(2):
        actor, unroll = play_unroll(env, trainer.policy_step, trainer._reset_core, params, version, actor, 12)
        assert np.asarray(unroll.dones).any(axis=0).all()  # every stream crosses an episode end
        logits, _ = apply_to_batch(trainer.network, params, batch_from_unrolls([unroll]))
        np.testing.assert_allclose(np.asarray(logits[:12]), unroll.behaviour_logits, rtol=1e-5, atol=1e-5)
    env.close()


def test_an_unroll_samples_the_actions_the_host_side_key_split_gave():
    """One jitted acting step that splits the key inside (``PolicyStep``) picks, for a fixed seed, the very actions
    of the sequence the actors ran before: ``key, step_key = jax.random.split(key)`` on the host, then the network's
    logits and ``categorical(step_key, logits)``. Two consecutive unrolls of 8 steps on Pong (the key carried)."""
    from rlrepro.agents.impala.networks import ActorCritic

    trainer = make_trainer("sync")
    params = trainer.init(jax.random.key_data(jax.random.key(0))).learner.params
    env = AtariEnv(trainer.env_spec, num_envs=4, seed=3, num_threads=1)
    actor = start_actor(env, (), jax.random.key(7))

    @jax.jit
    def host_split_step(obs, prev_action, prev_reward, step_key):  # the released sequence's step, key already split
        logits, _, _ = trainer.network.apply(params, obs[None], prev_action[None], prev_reward[None],
                                             jnp.zeros((1, 4), bool), (), method=ActorCritic.unroll)  # fmt: skip
        return jax.random.categorical(step_key, logits[0]).astype(jnp.int32), logits[0]

    key = jax.random.key(7)
    for version in range(2):
        actor, unroll = play_unroll(env, trainer.policy_step, trainer._reset_core, params, version, actor, 8)
        for t in range(8):
            key, step_key = jax.random.split(key)
            action, logits = host_split_step(unroll.observations[t], unroll.prev_actions[t], unroll.prev_rewards[t],
                                             step_key)  # fmt: skip
            np.testing.assert_array_equal(unroll.actions[t], np.asarray(action))
            np.testing.assert_allclose(unroll.behaviour_logits[t], np.asarray(logits), rtol=1e-6, atol=1e-6)
    np.testing.assert_array_equal(jax.random.key_data(actor.key), jax.random.key_data(key))
    assert len(np.unique(unroll.actions)) > 1  # sampled, not one action everywhere
    env.close()


def test_the_actors_policy_runs_on_the_device_the_placement_setting_names(monkeypatch: pytest.MonkeyPatch):
    """``$RLREPRO_ACTOR_DEVICE``: ``cpu`` puts the actors' parameters and keys on the host CPU at every publish
    (A3C's workers stay with the shared parameters); a bad value names the variable and the allowed values. On this
    CPU-only machine both settings are the same device, so a run gives the same numbers under either."""
    cpu = jax.devices("cpu")[0]
    monkeypatch.setenv("RLREPRO_ACTOR_DEVICE", "cpu")
    trainer = make_trainer("sync", total_updates=2, lag=0, max_episode_frames=400)
    assert trainer.actor_device == cpu
    params = trainer._actor_params(trainer.init(jax.random.key_data(jax.random.key(0))).learner.params)
    assert {d for leaf in jax.tree.leaves(params) for d in leaf.devices()} == {cpu}
    on_cpu = run(trainer, chunks=1)
    assert make_trainer("a3c", num_actors=4).actor_device == jax.local_devices()[0]
    monkeypatch.setenv("RLREPRO_ACTOR_DEVICE", "learner")
    learner = make_trainer("sync", total_updates=2, lag=0, max_episode_frames=400)
    assert learner.actor_device == jax.local_devices()[0]
    assert run(learner, chunks=1)[0] == pytest.approx(on_cpu[0], nan_ok=True)
    monkeypatch.setenv("RLREPRO_ACTOR_DEVICE", "gpu")
    with pytest.raises(ValueError, match=r"RLREPRO_ACTOR_DEVICE='gpu'.*learner, cpu"):
        make_trainer("sync")


def _slow_learner(trainer: HostImpalaTrainer, matmuls: int = 60) -> None:
    """Give ``trainer`` a learner whose every update also runs ``matmuls`` dependent 384 x 384 matmuls.

    Only the workload changes (the updates' results are the real ones): it makes the learner, not the
    emulators, the slowest part by a wide margin on a shared 2-core machine, so an fps that counts updates
    JAX has dispatched but not yet run shows up as a rate the learner cannot reach.
    """

    @jax.jit
    def burn(learner):
        x = jnp.full((384, 384), 1e-3, jnp.float32) * learner.step.astype(jnp.float32)
        x = jax.lax.fori_loop(0, matmuls, lambda _, y: jnp.tanh(y @ y + 1e-3), x)
        zero = (jnp.sum(x) < -1e30).astype(jnp.float32)  # 0, but only known once the loop ran
        return learner._replace(params=jax.tree.map(lambda p: p + zero.astype(p.dtype), learner.params))

    update = trainer.update
    trainer.update = lambda learner, batch: (lambda out: (burn(out[0]), out[1]))(update(learner, batch))


def test_a_chunks_fps_never_exceeds_the_learner_only_rate():
    """A chunk's ``fps`` counts an update only once it ran: at most the learner-only rate of this process.

    The learner-only rate is the benchmark's (``rlrepro.bench.impala_atari.learner_only``: updates on one
    fixed batch, blocked on). The actors act with the initial parameters (policy lag above the run's
    updates), so acting never waits for the learner and only the chunk's own clock can make it wait. The
    best learner-only rate of 4 measurements interleaved with the chunks, plus 50%, covers the noise of a
    shared machine; counting dispatched updates gave 2-3 times the rate (several chunks above 2x).
    """
    from rlrepro.bench.impala_atari import learner_only

    agent = ImpalaAgentSpec.model_validate({**AGENT, "policy_lag": 100})
    env_spec = AtariEnvSpec(kind="atari", id="pong", game="pong", num_envs=4, max_episode_frames=2000)
    config = impala_config(agent, total_updates=12)
    # One update per chunk: counting dispatched updates then times the acting alone (several times the rate).
    trainer = HostImpalaTrainer(config, env_spec, ActorSpec(mode="sync"), updates_per_chunk=1)
    _slow_learner(trainer, matmuls=120)
    state = trainer.init(jax.random.key_data(jax.random.key(0)))
    state, _ = trainer.run_chunk(state)  # compiles
    chunk_fps, learner_fps = [], []
    for _ in range(4):  # interleaved, so that a change of the machine's load hits both measurements
        learner_fps.append(learner_only(trainer, repeats=2))
        state, metrics = trainer.run_chunk(state)
        chunk_fps.append(float(metrics.fps[0]))
    trainer.stop()
    assert max(chunk_fps) <= 1.5 * max(learner_fps), (chunk_fps, learner_fps)


def _evaluation_draws(monkeypatch: pytest.MonkeyPatch, run_seed: int) -> tuple[list[int], list[bytes]]:
    """Train a run of 2 updates from ``run_seed`` to its final evaluation; record the evaluation games'
    emulator seeds and the policy keys of the evaluation steps (2 games: batches of 2, training has 4)."""
    import rlrepro.training.actor_learner as actor_learner

    seeds: list[int] = []

    class RecordingEnv(AtariEnv):
        def __post_init__(self) -> None:
            if not self.training:
                seeds.append(self.seed)
            super().__post_init__()

    monkeypatch.setattr(actor_learner, "AtariEnv", RecordingEnv)
    trainer = make_trainer("sync", total_updates=2, lag=0, max_episode_frames=400)
    keys: list[bytes] = []
    policy_step = trainer.policy_step

    def recording_step(params, obs, action, reward, core, key):
        if obs.shape[0] == 2:
            keys.append(np.asarray(jax.random.key_data(key)).tobytes())
        return policy_step(params, obs, action, reward, core, key)

    trainer.policy_step = recording_step
    state = trainer.init(jax.random.key_data(jax.random.key(run_seed)))
    _, metrics = trainer.run_chunk(state)
    assert np.isfinite(metrics.eval_return[0])
    return seeds, keys


def test_evaluation_games_and_policy_keys_derive_from_the_run_seed(monkeypatch: pytest.MonkeyPatch):
    seeds_a, keys_a = _evaluation_draws(monkeypatch, 0)
    seeds_a2, keys_a2 = _evaluation_draws(monkeypatch, 0)
    seeds_b, keys_b = _evaluation_draws(monkeypatch, 1)
    assert seeds_a and keys_a
    assert (seeds_a, keys_a) == (seeds_a2, keys_a2)  # reproducible within a run seed
    assert not set(seeds_a) & set(seeds_b)  # other emulator seeds for another run seed
    assert not set(keys_a) & set(keys_b)  # and other action samples


# --- Table 1's single-machine organisations on real games ------------------------------------------------


def test_a2c_sync_traj_trains_on_policy():
    # 4 actor threads x 1 game (Fig. 2(b)); each update waits for all four whole unrolls: every batch is acted with
    # the current parameters (lag 0), B = 4 trajectories of T = 5 steps; each actor passed the barrier once per round.
    trainer = make_trainer("a2c_sync_traj", num_actors=4, max_episode_frames=2000)
    state = trainer.init(jax.random.key_data(jax.random.key(0)))
    before = state.learner.params
    state, m = trainer.run_chunk(state)
    actors = trainer._source  # the last chunk stops the actors (and lets them go)
    metrics = [row(m)]
    state, m = trainer.run_chunk(state)
    metrics.append(row(m))
    waits = dict(actors.barrier_waits)
    assert [m["policy_lag"] for m in metrics] == [0.0, 0.0]
    assert metrics[-1]["frames"] == 4 * 5 * 4 * 4 and all(np.isfinite(m["total_loss"]) for m in metrics)
    assert len(waits) == 4 and all(n in (4, 5) for n in waits.values())  # 4 updates: 4 rounds (+ the next one's)
    assert -21 <= metrics[-1]["eval_return"] <= 21
    assert not np.allclose(jax.tree.leaves(before)[0], jax.tree.leaves(state.learner.params)[0])


def test_a3c_workers_train_the_shared_parameters():
    # 4 workers x 1 game: one gradient per worker unroll (T = 5 steps of its game); a chunk of 2 "updates" is
    # 2 x 4 gradients, so the run's frames match the other modes' (4 updates x T x B x repeat). The lr schedule
    # runs over the gradients (total_updates = updates x workers, as resolve_impala sets it).
    trainer = make_trainer("a3c", num_actors=4, total_updates=16, max_episode_frames=2000)
    state = trainer.init(jax.random.key_data(jax.random.key(0)))
    before = state.learner.params
    metrics = []
    for _ in range(2):
        state, m = trainer.run_chunk(state)
        metrics.append(row(m))
    trainer.stop()
    assert int(state.version) == 16 and int(state.learner.step) == 16
    assert metrics[-1]["frames"] == 4 * 5 * 4 * 4
    assert all(np.isfinite(m["total_loss"]) and m["policy_lag"] >= 0 for m in metrics)
    assert -21 <= metrics[-1]["eval_return"] <= 21
    assert not np.allclose(jax.tree.leaves(before)[0], jax.tree.leaves(state.learner.params)[0])


def test_a3c_and_sync_traj_need_one_round_of_unrolls_per_batch():
    from rlrepro.agents.impala.build import resolve_impala
    from rlrepro.specs.experiment import RunSpec

    env_spec = AtariEnvSpec(kind="atari", id="pong", game="pong", num_envs=8)
    run = RunSpec(updates_per_chunk=5)
    for mode in ("a3c", "a2c_sync_traj"):
        agent = ImpalaAgentSpec.model_validate({**AGENT, "actor": {"mode": mode, "num_actors": 2}})
        with pytest.raises(ValueError, match="batch_size \\(4\\) must equal the environment's num_envs \\(8\\)"):
            resolve_impala(agent, env_spec, frames=10_000, run=run)
    agent = ImpalaAgentSpec.model_validate({**AGENT, "batch_size": 8, "actor": {"mode": "a3c", "num_actors": 8}})
    plain = ImpalaAgentSpec.model_validate({**AGENT, "batch_size": 8})
    # 40,000 frames / (T 5 x B 8 x repeat 4) = 250 updates; A3C: 8 workers' gradients per update -> 2,000 lr steps.
    assert resolve_impala(plain, env_spec, frames=40_000, run=run).config.total_updates == 250
    assert resolve_impala(agent, env_spec, frames=40_000, run=run).config.total_updates == 2_000


def test_a3c_and_sync_traj_give_every_worker_one_environment():
    # Table 1's A3C (32 workers, one environment each) and Fig. 2(b)'s actors: several environments per thread would
    # be stepped in lockstep with a batched forward pass (batched A2C, sync step, inside every thread): rejected,
    # by the spec's resolution and by the trainer.
    from rlrepro.agents.impala.build import resolve_impala
    from rlrepro.specs.experiment import RunSpec

    env_spec = AtariEnvSpec(kind="atari", id="pong", game="pong", num_envs=4)
    for mode in ("a3c", "a2c_sync_traj"):
        agent = ImpalaAgentSpec.model_validate({**AGENT, "actor": {"mode": mode, "num_actors": 2}})
        with pytest.raises(ValueError, match="actor.num_actors \\(2\\) must equal the environment's num_envs \\(4\\)"):
            resolve_impala(agent, env_spec, frames=10_000, run=RunSpec(updates_per_chunk=5))
        with pytest.raises(ValueError, match="one environment per"):
            make_trainer(mode, num_actors=2)


def test_a3c_workers_act_and_learn_with_batch_one_passes_on_real_games():
    # The A3C trainer's workers: every acting forward pass has batch 1 and every gradient is one worker's own
    # unroll of T = 5 steps of its one game (a [T, 1] batch: a batch-1 backward pass).
    trainer = make_trainer("a3c", num_actors=4, total_updates=16, max_episode_frames=2000)  # no evaluation yet
    forward, backward = [], []
    policy_step, gradient = trainer.policy_step, trainer._gradient

    def counting_policy(params, observation, *rest):
        forward.append(observation.shape[0])
        return policy_step(params, observation, *rest)

    def counting_gradient(params, batch):
        backward.append(batch.actions.shape)
        return gradient(params, batch)

    trainer.policy_step, trainer._gradient = counting_policy, counting_gradient
    state, _ = trainer.run_chunk(trainer.init(jax.random.key_data(jax.random.key(0))))
    trainer.stop()
    assert int(state.version) == 8 and set(backward[:8]) == {(5, 1)}
    assert set(forward) == {1} and len(forward) >= 8 * 5
