"""DQN on Atari (Evolving RL, App. B and Table 1): one seed per job, one game, the DQN protocol of the spec.

Per agent step: once ``min_replay`` transitions are stored, every ``update_period`` steps one update on a
uniform batch (target copied every ``target_period`` updates); then an epsilon-greedy action (epsilon
linear over ``epsilon_decay_steps`` agent steps) in the shared :class:`~rlrepro.environments.atari.AtariEnv`
(no-op starts, full action set, life loss as terminal in training, all from the spec). Observations are
stored as uint8 frames (:class:`~rlrepro.agents.dqn.frame_replay.FrameReplay`); rewards are stored raw and
clipped in the learner only if ``reward_clip`` says so.

Evaluation plays ``evaluation.episodes`` separate whole games (no life-loss ends, up to
``evaluation.noop_max`` no-ops) with ``evaluation.epsilon`` (0.001), every ``evaluation_period`` agent
steps and after the last chunk; ``eval_return`` is their mean raw score, ``best_eval_return`` (last chunk)
the best of all evaluations (the paper reports the best snapshot).

Checkpoints hold the learner, the counters, the exploration generator and the evaluation history; the
games and the replay are not checkpointed (a replay of 1e6 frames is 7 GB): after a resume the games
restart and the replay refills, acting without updates until ``min_replay`` transitions are stored again.
"""

from __future__ import annotations

import math
import time
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from rlrepro.agents.dqn.config import DQNConfig
from rlrepro.agents.dqn.frame_replay import FrameReplay
from rlrepro.agents.dqn.learner import Batch, LearnerState, make_learner
from rlrepro.environments.atari import AtariEnv


class AtariHost:
    """The host side of one seed's run: counters and histories (checkpointed), the game and replay (not)."""

    def __init__(self, seed: int):
        self.seed = seed
        self.steps = 0  # agent steps taken over the whole run
        self.restarts = 0
        self.rng = np.random.default_rng(seed)  # exploration
        self.evaluations: list[tuple[int, float]] = []  # (agent steps, mean score)
        self.env: AtariEnv | None = None
        self.replay: FrameReplay | None = None
        self.obs: np.ndarray | None = None
        self.first = True

    _KEPT = ("seed", "steps", "restarts", "rng", "evaluations")

    def __getstate__(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in self._KEPT}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["seed"])
        self.__dict__.update(state)


def evaluation_seed(run_seed: int, index: int) -> int:
    """The emulator and epsilon seed of a run's ``index``-th evaluation: each run seed plays its own games."""
    return int(np.random.SeedSequence([run_seed, 0x6576616C, index]).generate_state(1)[0] % (2**31))


class AtariDQNState(NamedTuple):
    """One seed's state: the learner (no seed axis) and the host part."""

    learner: LearnerState
    host: AtariHost


class AtariMetrics(NamedTuple):
    """One chunk, as [1] arrays (one seed per job)."""

    frames: np.ndarray
    episodes: np.ndarray
    mean_return: np.ndarray
    loss: np.ndarray
    mean_q: np.ndarray
    epsilon: np.ndarray
    fps: np.ndarray
    eval_return: np.ndarray
    best_eval_return: np.ndarray


def linear_epsilon(step: int, config: DQNConfig) -> float:
    """Linear decay from ``epsilon_start`` to ``epsilon_end`` over ``epsilon_decay_steps`` agent steps."""
    frac = min(step / max(config.epsilon_decay_steps, 1), 1.0)
    return config.epsilon_start + frac * (config.epsilon_end - config.epsilon_start)


class AtariDQN:
    """The compiled learner and the acting loop for one (DQN config, Atari game)."""

    def __init__(self, config: DQNConfig, env_spec: Any, *, total_steps: int, steps_per_chunk: int):
        if config.conv_network is None:
            raise ValueError("DQN on Atari needs a conv network (agent.network.kind impala_shallow or impala_deep)")
        if env_spec.num_envs != 1:
            raise ValueError(f"DQN on Atari steps one game per seed (environment num_envs: 1), got {env_spec.num_envs}")
        self.config, self.env_spec = config, env_spec
        self.total_steps, self.steps_per_chunk = total_steps, steps_per_chunk
        probe = AtariEnv(env_spec, num_envs=1, seed=0, num_threads=1)
        self.num_actions, self.observation_shape = probe.num_actions, probe.observation_shape
        probe.close()
        self.learner = make_learner(config, self.observation_shape, self.num_actions)
        self._init = jax.jit(self.learner.init)
        self._update = jax.jit(self.learner.update)
        self._q = jax.jit(self.learner.apply)

    # -- state -------------------------------------------------------------------------------------------
    def init(self, key_data: Any) -> AtariDQNState:
        key = jax.random.wrap_key_data(jnp.asarray(key_data, jnp.uint32))
        seed = int(np.asarray(key_data).ravel()[-1])
        return AtariDQNState(self._init(key), AtariHost(seed))

    def _start(self, host: AtariHost) -> None:
        """(Re)start the game and an empty replay (first chunk, or after a resume)."""
        seed = host.seed + 7919 * host.restarts
        host.env = AtariEnv(self.env_spec, num_envs=1, seed=seed, num_threads=1)
        capacity = max(self.env_spec.frame_stack + 1, min(self.config.replay_capacity, self.total_steps))
        host.replay = FrameReplay(capacity, self.observation_shape[1:], self.observation_shape[0], seed + 1_000_003)
        host.obs, host.first = host.env.reset(), True
        host.restarts += 1

    # -- one chunk ---------------------------------------------------------------------------------------
    def run_chunk(self, state: AtariDQNState) -> tuple[AtariDQNState, AtariMetrics]:
        learner, host = state
        if host.env is None:
            self._start(host)
        started, start_steps = time.monotonic(), host.steps
        returns, losses, qs = [], [], []
        for _ in range(self.steps_per_chunk):
            learner, loss = self._maybe_update(learner, host)
            if loss is not None:
                losses.append(loss)
            qs.append(self._act_and_step(learner.params, host, returns))
        jax.block_until_ready(learner)  # the chunk's updates are dispatched asynchronously: time them done
        fps = (host.steps - start_steps) * self.env_spec.action_repeat / (time.monotonic() - started)
        eval_return, best = self._maybe_evaluate(learner.params, host, start_steps)
        one = lambda x: np.asarray([x])  # noqa: E731  (one seed per job)
        metrics = AtariMetrics(
            frames=one(host.steps * self.env_spec.action_repeat),
            episodes=one(len(returns)),
            mean_return=one(float(np.mean(returns)) if returns else math.nan),
            loss=one(float(np.mean(jax.device_get(losses))) if losses else math.nan),
            mean_q=one(float(np.mean(qs))),
            epsilon=one(linear_epsilon(host.steps, self.config)),
            fps=one(fps),
            eval_return=one(eval_return),
            best_eval_return=one(best),
        )
        return AtariDQNState(learner, host), metrics

    def _maybe_update(self, learner: LearnerState, host: AtariHost) -> tuple[LearnerState, Any]:
        replay = host.replay
        ready = replay.num_transitions >= self.config.min_replay
        if not ready or host.steps % self.config.update_period:
            return learner, None
        batch = Batch(*(jnp.asarray(x) for x in replay.sample(self.config.batch_size)))
        learner, metrics = self._update(learner, batch, None)
        return learner, metrics.loss

    def _act_and_step(self, params: Any, host: AtariHost, returns: list[float]) -> float:
        """One epsilon-greedy step of the training game, stored in replay; returns max_a Q at the state."""
        q = np.asarray(self._q(params, host.obs))[0]
        if host.rng.random() < linear_epsilon(host.steps, self.config):
            action = int(host.rng.integers(self.num_actions))
        else:
            action = int(np.argmax(q))
        step = host.env.step(np.array([action], np.int32))
        discount = 0.0 if step.done[0] else self.config.discount
        host.replay.add(host.obs[0], host.first, action, float(step.reward[0]), discount)
        if step.game_over[0]:
            returns.append(float(step.episode_return[0]))
        host.obs, host.first = step.observation, bool(step.game_over[0])
        host.steps += 1
        return float(q.max())

    def _maybe_evaluate(self, params: Any, host: AtariHost, start_steps: int) -> tuple[float, float]:
        final = host.steps >= self.total_steps
        period = self.config.evaluation_period
        due = period is not None and host.steps // period > start_steps // period
        if not (final or due):
            return math.nan, math.nan
        score = self.evaluate(params, seed=evaluation_seed(host.seed, len(host.evaluations)))
        host.evaluations.append((host.steps, score))
        if final and host.env is not None:
            host.env.close()
            host.env = host.replay = None
        return score, (max(s for _, s in host.evaluations) if final else math.nan)

    def evaluate(self, params: Any, *, seed: int) -> float:
        """Mean raw score of ``evaluation.episodes`` whole games played with ``evaluation.epsilon``."""
        spec = self.env_spec.evaluation
        rng = np.random.default_rng(seed)
        scores: list[float] = []
        while len(scores) < spec.episodes:
            n = min(spec.episodes - len(scores), 8)
            env = AtariEnv(self.env_spec, num_envs=n, seed=seed + len(scores), training=False, noop_max=spec.noop_max)
            obs, finished, round_scores = env.reset(), np.zeros(n, bool), np.zeros(n)
            while not finished.all():
                greedy = np.argmax(np.asarray(self._q(params, obs)), axis=-1)
                explore = rng.random(n) < spec.epsilon
                actions = np.where(explore, rng.integers(self.num_actions, size=n), greedy).astype(np.int32)
                step = env.step(actions)
                newly = step.game_over & ~finished
                round_scores[newly] = step.episode_return[newly]
                finished |= step.game_over
                obs = step.observation
            env.close()
            scores.extend(round_scores.tolist())
        return float(np.mean(scores))
