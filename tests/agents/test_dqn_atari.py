"""DQN on Atari on real ALE games: the conv Q-network, the uint8 frame replay, a short run, resume, the runner."""

from __future__ import annotations

import json
import math
import pickle
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from rlrepro.agents.dqn.config import DQNConfig
from rlrepro.agents.dqn.frame_replay import FrameReplay
from rlrepro.agents.dqn.networks import ConvQNetwork
from rlrepro.networks.config import ConvNetworkConfig
from rlrepro.specs.environments import AtariEnvSpec

pytest.importorskip("ale_py", reason="ale-py is pinned in envs/ and installed by `make install`")

from rlrepro.agents.dqn.atari import AtariDQN, AtariDQNState  # noqa: E402
from rlrepro.environments.atari import AtariEnv  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
# Boxing with games cut at 400 frames (100 agent steps): many game ends in a few hundred steps.
SHORT_BOXING = AtariEnvSpec(
    kind="atari", id="boxing", game="boxing", action_set="full", num_envs=1, noop_max=30, max_episode_frames=400,
    evaluation={"episodes": 2, "noop_max": 30, "epsilon": 0.001},
)  # fmt: skip
TINY = DQNConfig(
    loss="dqnreg", conv_network=ConvNetworkConfig(fc_size=32), hidden_sizes=(), batch_size=8, min_replay=64,
    update_period=4, target_period=10, epsilon_end=0.1, epsilon_decay_steps=300,
)  # fmt: skip


def test_the_dqn_conv_net_maps_uint8_frame_stacks_to_one_q_value_per_action():
    # ale-py's layout: [N, 4 stacked frames, 84, 84] uint8; 18 actions in the full set.
    net = ConvQNetwork(num_actions=18, conv=ConvNetworkConfig(kind="impala_shallow", shallow_torso="a3c_2conv"))
    obs = jnp.full((3, 4, 84, 84), 255, jnp.uint8)
    params = net.init(jax.random.key(0), obs)
    q = net.apply(params, obs)
    assert q.shape == (3, 18) and q.dtype == jnp.float32 and bool(jnp.all(jnp.isfinite(q)))
    # Mnih et al. 2013: conv 16 8x8/4 -> 20x20, conv 32 4x4/2 -> 9x9, FC 256, linear 18.
    sizes = [int(np.prod(p.shape)) for p in jax.tree.leaves(params)]
    assert sum(sizes) == (8 * 8 * 4 * 16 + 16) + (4 * 4 * 16 * 32 + 32) + (9 * 9 * 32 * 256 + 256) + (256 * 18 + 18)


def play(env_spec: AtariEnvSpec, steps: int, seed: int = 0):
    """Random play with life-loss ends: (observations [steps + 1], firsts, actions, rewards, dones, game overs)."""
    env = AtariEnv(env_spec, num_envs=1, seed=seed, num_threads=1)
    rng = np.random.default_rng(seed)
    obs, first = env.reset(), True
    record = {"obs": [obs[0]], "first": [True], "action": [], "reward": [], "done": [], "game_over": []}
    for _ in range(steps):
        action = int(rng.integers(env.num_actions))
        step = env.step(np.array([action], np.int32))
        record["action"].append(action)
        record["reward"].append(float(step.reward[0]))
        record["done"].append(bool(step.done[0]))
        record["game_over"].append(bool(step.game_over[0]))
        obs, first = step.observation, bool(step.game_over[0])
        record["obs"].append(obs[0])
        record["first"].append(first)
    env.close()
    return {k: np.asarray(v) for k, v in record.items()}


@pytest.fixture(scope="module")
def game() -> dict[str, np.ndarray]:
    return play(SHORT_BOXING, 260)


def fill(replay: FrameReplay, game: dict[str, np.ndarray], n: int) -> None:
    for t in range(n):
        discount = 0.0 if game["done"][t] else 0.99
        replay.add(game["obs"][t], game["first"][t], game["action"][t], game["reward"][t], discount)


def test_the_frame_replay_stores_one_uint8_frame_per_step_and_rebuilds_every_stack(game):
    assert game["game_over"].sum() >= 2  # the steps cross at least two game ends
    replay = FrameReplay(1000, (84, 84), 4, seed=0)
    fill(replay, game, 260)
    assert replay.frames.dtype == np.uint8 and replay.frames.nbytes == 1000 * 84 * 84
    j = np.arange(260)
    np.testing.assert_array_equal(replay.observations(j), game["obs"][:260])  # zeros before each game start
    assert replay.num_transitions == 259  # the newest step waits for its next observation


def test_a_lost_life_ends_the_transition_but_not_the_frame_stack():
    breakout = SHORT_BOXING.model_copy(update={"id": "breakout", "game": "breakout", "max_episode_frames": 108_000})
    game = play(breakout, 400, seed=4)
    lost_life = np.flatnonzero(game["done"] & ~game["game_over"])
    assert len(lost_life) >= 1  # random play loses Breakout lives within 400 steps
    replay = FrameReplay(1000, (84, 84), 4, seed=0)
    fill(replay, game, 400)
    np.testing.assert_array_equal(replay.observations(np.arange(400)), game["obs"][:400])
    assert np.all(replay.discounts[lost_life] == 0) and not replay.first[lost_life + 1].any()  # same game goes on
    assert replay.observations(lost_life + 1)[:, :3].any()  # the next observation keeps its older frames


def test_sampled_transitions_are_real_transitions_across_game_ends(game):
    replay = FrameReplay(1000, (84, 84), 4, seed=1)
    fill(replay, game, 260)
    obs_tm1, a, r, d, obs_t = replay.sample(512)
    assert obs_tm1.dtype == np.uint8 and obs_t.dtype == np.uint8
    for k in range(len(a)):
        t = int(np.flatnonzero((game["obs"][:259] == obs_tm1[k]).all(axis=(1, 2, 3)))[0])
        np.testing.assert_array_equal(obs_t[k], game["obs"][t + 1])
        assert a[k] == game["action"][t] and r[k] == game["reward"][t]
        assert d[k] == (0.0 if game["done"][t] else np.float32(0.99))
    # A game over: discount 0, and the next observation is the next game's first (zeros but its newest frame).
    ends = np.flatnonzero(game["game_over"][:259])
    assert len(ends) >= 2 and np.all(replay.discounts[ends] == 0)
    np.testing.assert_array_equal(replay.observations(ends + 1)[:, :3], 0)


def test_a_wrapped_replay_samples_only_steps_whose_frames_are_still_stored(game):
    replay = FrameReplay(50, (84, 84), 4, seed=2)
    fill(replay, game, 260)
    low, high = 260 - 50 + 3, 259
    assert replay.num_transitions == high - low
    j = np.arange(low, high + 1)
    np.testing.assert_array_equal(replay.observations(j), game["obs"][low : high + 1])
    obs_tm1, *_ = replay.sample(200)
    kept = game["obs"][low:high]
    assert all((kept == o).all(axis=(1, 2, 3)).any() for o in obs_tm1)


def short_run(total_steps: int = 400, steps_per_chunk: int = 200) -> tuple[AtariDQN, AtariDQNState]:
    dqn = AtariDQN(TINY, SHORT_BOXING, total_steps=total_steps, steps_per_chunk=steps_per_chunk)
    return dqn, dqn.init(np.asarray(jax.random.key_data(jax.random.key(3))))


def test_a_short_dqn_run_on_boxing_learns_from_replay_and_evaluates_at_the_end():
    dqn, state = short_run()
    state, first = dqn.run_chunk(state)
    assert first.frames.tolist() == [800] and first.episodes[0] >= 1 and np.isfinite(first.mean_return[0])
    assert np.isfinite(first.loss[0]) and math.isnan(first.eval_return[0]) and math.isnan(first.best_eval_return[0])
    assert first.epsilon[0] == pytest.approx(1.0 - 0.9 * 200 / 300)
    state, last = dqn.run_chunk(state)
    assert last.frames.tolist() == [1600] and last.epsilon[0] == pytest.approx(0.1)
    assert np.isfinite(last.eval_return[0]) and last.best_eval_return[0] == last.eval_return[0]
    assert state.learner.step > 0 and state.host.env is None  # the games are closed after the last chunk


def test_a_checkpointed_state_resumes_with_new_games_and_a_refilled_replay():
    dqn, state = short_run(total_steps=600)
    state, _ = dqn.run_chunk(state)
    restored = pickle.loads(pickle.dumps(state))
    assert restored.host.env is None and restored.host.replay is None and restored.host.steps == 200
    updates = int(restored.learner.step)
    restored, metrics = dqn.run_chunk(restored)
    assert restored.host.restarts == 2 and metrics.frames.tolist() == [1600]
    # 64 transitions refill the replay before the next update: fewer updates than in a chunk without a resume.
    assert 0 < int(restored.learner.step) - updates < 200 // 4


def test_the_runner_trains_the_atari_spec_at_smoke_scale(tmp_path: Path):
    from rlrepro.jobs.runner import train_job

    [run_dir] = train_job(
        spec_path=REPO / "specs/evolving_rl/eval_atari.yaml", scale="smoke", variant="dqnreg", env="boxing",
        seeds=None, results=tmp_path, progress="lines", track=False,
    )  # fmt: skip
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["frames"] >= 4000 and math.isfinite(summary["final"]["eval_return"])
    assert summary["final"]["best_eval_return"] == summary["final"]["eval_return"]
    records = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    assert {"loss", "mean_q", "epsilon", "eval_return", "best_eval_return"} <= set(records[-1])


@pytest.mark.parametrize(
    ("network", "env", "message"),
    [
        ({"kind": "mlp"}, {}, "cannot read Atari frames"),
        ({"kind": "impala_shallow"}, {"num_envs": 4}, "num_envs: 1"),
    ],
)
def test_atari_setups_dqn_cannot_train_say_what_to_change(network, env, message):
    from rlrepro.agents.dqn.build import build_dqn
    from rlrepro.environments.errors import UnsupportedSetupError
    from rlrepro.specs.agents.dqn import DQNAgentSpec
    from rlrepro.specs.experiment import RunSpec

    agent = DQNAgentSpec(kind="dqn", loss={"name": "dqn"}, network=network)
    with pytest.raises(UnsupportedSetupError, match=message):
        build_dqn(agent, SHORT_BOXING.model_copy(update=env), frames=4000, run=RunSpec())


def test_a_recurrent_q_network_is_rejected_by_the_spec():
    from pydantic import ValidationError

    from rlrepro.specs.agents.dqn import DQNAgentSpec

    for network in ({"kind": "impala_shallow", "lstm_size": 256}, {"kind": "impala_shallow", "last_action_reward_inputs": True}):
        with pytest.raises(ValidationError, match="feed-forward"):
            DQNAgentSpec(kind="dqn", loss={"name": "dqn"}, network=network)


def test_evaluation_seeds_derive_from_the_run_seed(monkeypatch):
    """Each run seed evaluates on its own games (emulator and epsilon seeds), reproducibly."""
    seen: list[int] = []
    monkeypatch.setattr(AtariDQN, "evaluate", lambda self, params, *, seed: seen.append(seed) or 0.0)
    dqn = AtariDQN(TINY, SHORT_BOXING, total_steps=10, steps_per_chunk=10)
    for key in (3, 3, 4):
        learner, host = dqn.init(np.asarray(jax.random.key_data(jax.random.key(key))))
        host.steps = 10  # the final evaluation is due
        dqn._maybe_evaluate(learner.params, host, start_steps=0)
    assert seen[0] == seen[1] and seen[0] != seen[2]
